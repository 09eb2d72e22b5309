-- Analysis API, part 6: benchmark runs, labelled windows of the history
-- stored in chronicle.run (15_runs.sql), their headline numbers and their
-- side-by-side comparison.
--
-- Writing runs: run_end/run_label/run_delete are SECURITY DEFINER and
-- granted to pg_monitor (whoever runs benchmarks watches the server; they
-- only write chronicle.run, never anything else), not to PUBLIC.  A run
-- belongs to the role that opened it: only that role (or a member, or a
-- superuser) ends or deletes it (_check_owner).  run_begin
-- is granted the same way but written in C (src/runs.c): it reads the
-- settings with its caller's rights and writes the run with its owner's.
-- One run is open at a time: run_begin while a run is open is an error, so
-- that "the open run" (run_end() without a label) is never ambiguous.

-- The settings a run remembers (read by run_begin, src/runs.c): everything
-- pg_settings shows its caller (so no GUC_SUPERUSER_ONLY setting without
-- pg_read_all_settings, no GUC_NO_SHOW_ALL one), those at their built-in
-- default too (data_checksums, debug_assertions, io_method, block_size),
-- except what only the calling session set or is (sources client, session
-- and override; is_superuser, role), which says nothing about the server
-- being measured.  Runs opened by 0.1.0 kept only the non-default ones.
-- With them, the environment (src/environment.c): build, kernel, CPU,
-- memory, cpufreq, transparent huge pages, the devices and filesystems of
-- the data directory and pg_wal.
--
-- A setting's value as a run may keep it, readable by every monitoring
-- role for as long as the run is kept: never a password.  Settings whose
-- name says they hold a secret are replaced whole.  In any other value,
-- by libpq's rules for a connection string: a keyword ending in
-- "password" (password, sslpassword, PGPASSWORD in a command) at the start
-- or after a blank, with its value quoted ('...' with \' and \\ inside;
-- a quote left open hides the rest of the value) or bare (up to a blank
-- not escaped by a backslash: password=a\ b is "a b"); in a URI, the
-- password of scheme://user:password@host and a password=... parameter.
-- What cannot be told apart is hidden too: more, never less.
CREATE FUNCTION chronicle._redact_setting(name text, value text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE
		WHEN name ~* '(password|passphrase|secret)' THEN '********'
		ELSE regexp_replace(
		       regexp_replace(
		         regexp_replace(value,
		                        '(^|[^\w?&])(\w*password\s*=\s*)(''(\\.|[^''\\])*''?\S*|(\\.|[^\s\\])*\\?)',
		                        '\1\2********', 'gi'),
		         '([?&]\w*password=)[^&\s#]*', '\1********', 'gi'),
		       '(://[^/:@\s]*:)[^@\s]*@', '\1********@', 'g')
	END
$$;

COMMENT ON FUNCTION chronicle._redact_setting(text, text) IS
	'A setting''s value with its passwords replaced by ********, as runs keep it';

CREATE FUNCTION chronicle._check_label(caller text, label text, meta jsonb)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF label IS NULL OR label = '' THEN
		RAISE EXCEPTION '%: the run label must not be NULL or empty', caller
			USING ERRCODE = 'null_value_not_allowed',
			      HINT = 'Name the run, for example ''wal_compression=lz4''.';
	END IF;
	IF meta IS NULL OR jsonb_typeof(meta) <> 'object' THEN
		RAISE EXCEPTION '%: meta must be a JSON object, got %', caller, coalesce(meta::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Pass ''{}'' or an object such as ''{"clients": 8}''.';
	END IF;
	IF EXISTS (SELECT FROM chronicle.run r WHERE r.label = _check_label.label AND r.server = 0) THEN
		RAISE EXCEPTION '%: a run labelled "%" exists already', caller, label
			USING ERRCODE = 'unique_violation',
			      HINT = 'Choose another label, or remove the old run with chronicle.run_delete().';
	END IF;
END;
$$;

-- The writing half of run_begin, run by its owner only (src/runs.c): the
-- settings (names and values) were read from pg_settings with the caller's
-- rights; their passwords are redacted here.  The environment too was read
-- as the caller (src/environment.c).
CREATE FUNCTION chronicle._run_open(label text, meta jsonb, names text[], vals text[],
                                    environment jsonb)
RETURNS chronicle.run
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r chronicle.run;
BEGIN
	PERFORM chronicle._check_label('chronicle.run_begin', label, meta);
	-- Serialise run_begin calls, so that two sessions cannot both open one.
	LOCK TABLE chronicle.run IN SHARE ROW EXCLUSIVE MODE;
	SELECT * INTO r FROM chronicle.run o WHERE o.ended IS NULL AND o.server = 0;
	IF FOUND THEN
		RAISE EXCEPTION 'chronicle.run_begin: run "%" is still open', r.label
			USING ERRCODE = 'object_in_use',
			      HINT = 'End it first with SELECT chronicle.run_end();';
	END IF;
	INSERT INTO chronicle.run (label, started, meta, settings, server_version, environment, owner)
	VALUES (label, clock_timestamp(), meta,
	        (SELECT coalesce(jsonb_object_agg(u.n, chronicle._redact_setting(u.n, u.v) ORDER BY u.n), '{}')
	           FROM unnest(names, vals) AS u(n, v)),
	        current_setting('server_version'), coalesce(environment, '{}'), session_user)
	RETURNING * INTO r;
	RETURN r;
END;
$$;

CREATE FUNCTION chronicle.run_begin(label text, meta jsonb DEFAULT '{}')
RETURNS chronicle.run
LANGUAGE C
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_run_begin';

COMMENT ON FUNCTION chronicle.run_begin(text, jsonb) IS
	'Opens a labelled benchmark run now, remembering the server version, the settings the caller may read (passwords redacted) and the environment (build, OS, CPU, devices)';

-- Who may change a run (end it, delete it) or a mark (38_marks.sql): the
-- role that made it (the session's login role: the functions that change
-- them are SECURITY DEFINER, and inside them only session_user still names
-- the caller), a member of that role, or a superuser.  A run opened before
-- 0.3.0 has no owner: only a superuser may change it.  Reading is not
-- affected.  what: the thing, as the error names it ('run "x"', 'mark 3').
CREATE FUNCTION chronicle._check_owner(caller text, what text, owner text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF EXISTS (SELECT FROM pg_roles u
	            WHERE u.rolname = session_user
	              AND (u.rolsuper
	                   OR EXISTS (SELECT FROM pg_roles o
	                               WHERE o.rolname = owner
	                                 AND pg_has_role(u.oid, o.oid, 'MEMBER')))) THEN
		RETURN;
	END IF;
	RAISE EXCEPTION '%: % belongs to %', caller, what,
		coalesce('role ' || quote_ident(owner), 'no role (it was recorded before 0.3.0)')
		USING ERRCODE = 'insufficient_privilege',
		      HINT = 'Only the role that made it, a member of that role or a superuser may change or delete it.';
END;
$$;

-- run_end(run, after): the run ends at the first snapshot after `after`
-- rather than now, so that what the caller did between `after` and this
-- call (pg-chronicle bench loading the pgbench log, its own statements)
-- is not part of the run: the intervals that count are those ending in
-- (started, ended], and the first snapshot after the benchmark's end
-- closes the interval that holds its last moments.  The caller must not have
-- run anything between `after` and that snapshot.  With no snapshot after
-- `after` (the collector is stopped or behind) the run ends now, with a
-- WARNING.
CREATE FUNCTION chronicle.run_end(run text DEFAULT NULL, after timestamptz DEFAULT NULL)
RETURNS chronicle.run
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r chronicle.run;
	v_run integer;
	v_ended timestamptz;
	v_now timestamptz := clock_timestamp();
BEGIN
	IF after IS NOT NULL THEN
		PERFORM chronicle._check_finite('chronicle.run_end', 'after', after);
	END IF;
	IF run IS NULL THEN
		SELECT * INTO r FROM chronicle.run o WHERE o.ended IS NULL AND o.server = 0 FOR UPDATE;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'chronicle.run_end: no run is open'
				USING ERRCODE = 'object_not_in_prerequisite_state',
				      HINT = 'Open one with chronicle.run_begin(label).';
		END IF;
	ELSE
		-- (the id first, in a statement of its own: a STABLE function in
		-- the WHERE below would not see a run begun in the same statement
		-- as this call)
		v_run := chronicle._run_id(run, 'chronicle.run_end');
		SELECT * INTO r FROM chronicle.run o WHERE o.run_id = v_run FOR UPDATE;
		IF r.ended IS NOT NULL THEN
			RAISE EXCEPTION 'chronicle.run_end: run "%" has ended already', run
				USING ERRCODE = 'object_not_in_prerequisite_state',
				      HINT = 'Only an open run can be ended.';
		END IF;
	END IF;
	PERFORM chronicle._check_owner('chronicle.run_end', format('run "%s"', r.label), r.owner);
	IF after IS NOT NULL THEN
		IF after < r.started THEN
			RAISE EXCEPTION 'chronicle.run_end: after (%) is before the start of run "%"', after, r.label
				USING ERRCODE = 'invalid_parameter_value',
				      DETAIL = format('The run started at %s.', r.started),
				      HINT = 'Pass the time the benchmark ended: the run ends at the first snapshot after it.';
		END IF;
		IF after > v_now THEN
			RAISE EXCEPTION 'chronicle.run_end: after is in the future'
				USING ERRCODE = 'invalid_parameter_value',
				      DETAIL = format('after is %s, the server''s clock says %s.', after, v_now),
				      HINT = 'Pass the time the benchmark ended, in the server''s clock: the run ends at the first snapshot after it.';
		END IF;
		SELECT min(s.ts) INTO v_ended FROM chronicle.snapshot s WHERE s.ts > run_end.after;
		IF v_ended IS NULL THEN
			RAISE WARNING 'chronicle.run_end: no snapshot was recorded after the time given; run "%" ends now', r.label
				USING DETAIL = format('after is %s, the latest snapshot is %s.', after,
				                      coalesce((SELECT max(s.ts)::text FROM chronicle.snapshot s), 'none')),
				      HINT = 'Is the collector recording? See chronicle.status().';
		END IF;
	END IF;
	UPDATE chronicle.run o SET ended = greatest(coalesce(v_ended, v_now), o.started)
	 WHERE o.run_id = r.run_id
	RETURNING * INTO r;
	RETURN r;
END;
$$;

COMMENT ON FUNCTION chronicle.run_end(text, timestamptz) IS
	'Ends the open run (or the one named) now, or at the first snapshot after the time given';

-- A run for a range already recorded.  Its settings and server version are
-- not known after the fact: settings is '{}' and server_version NULL unless
-- given in meta by the caller.
CREATE FUNCTION chronicle.run_label(label text, from_ts timestamptz, to_ts timestamptz,
                                    meta jsonb DEFAULT '{}')
RETURNS chronicle.run
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r chronicle.run;
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.run_label');
	PERFORM chronicle._check_finite('chronicle.run_label', 'from_ts', from_ts);
	PERFORM chronicle._check_finite('chronicle.run_label', 'to_ts', to_ts);
	PERFORM chronicle._check_label('chronicle.run_label', label, meta);
	INSERT INTO chronicle.run (label, started, ended, meta, settings, server_version, owner)
	VALUES (label, from_ts, to_ts, meta, '{}', NULL, session_user)
	RETURNING * INTO r;
	RETURN r;
END;
$$;

COMMENT ON FUNCTION chronicle.run_label(text, timestamptz, timestamptz, jsonb) IS
	'Labels a past time range as a run (settings unknown: stored as {})';

-- Forgets a run.  This server's history stays (retention drops it), so
-- does a subscribed server's (its origin holds all its runs); an imported
-- run's goes with it: each archive imported is an origin of its own, with
-- this one run (05_origin.sql), so its snapshots, history, marks,
-- statement texts and the origin itself are the run's alone.
CREATE FUNCTION chronicle.run_delete(run text)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r chronicle.run;
	v_run integer;
BEGIN
	v_run := chronicle._run_id(run, 'chronicle.run_delete');	-- (as in run_end())
	SELECT * INTO r FROM chronicle.run o WHERE o.run_id = v_run FOR UPDATE;
	PERFORM chronicle._check_owner('chronicle.run_delete', format('run "%s"', r.label), r.owner);
	DELETE FROM chronicle.run o WHERE o.run_id = r.run_id;
	IF EXISTS (SELECT FROM chronicle.origin x WHERE x.origin_id = r.origin AND x.kind = 'archive') THEN
		DELETE FROM chronicle.archive_history h WHERE h.origin = r.origin;
		DELETE FROM chronicle.archive_snapshot s WHERE s.origin = r.origin;
		DELETE FROM chronicle.mark m WHERE m.origin = r.origin;
		DELETE FROM chronicle.archive_statements_text t WHERE t.origin = r.origin;
		DELETE FROM chronicle.origin o WHERE o.origin_id = r.origin;
	END IF;
END;
$$;

COMMENT ON FUNCTION chronicle.run_delete(text) IS
	'Forgets a run (and its application metrics); the history of this server and of a subscribed one stays, an imported run''s goes with it';

-- A run's warm-up: how much of its start every analysis leaves out
-- (run_window() starts after it; the pgbench numbers count the
-- transactions that end after it).  The run's owner sets it, at any time:
-- it is how the run is read, not what was recorded.  0 takes it away.
CREATE FUNCTION chronicle.run_set_warmup(run text, warmup interval)
RETURNS chronicle.run
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r chronicle.run;
	v_run integer;
BEGIN
	v_run := chronicle._run_id(run, 'chronicle.run_set_warmup');
	IF warmup IS NULL OR warmup < interval '0' OR isfinite(warmup) IS NOT TRUE THEN
		RAISE EXCEPTION 'chronicle.run_set_warmup: a warm-up is a finite interval of 0 or more, not %',
			coalesce(warmup::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'For example interval ''30 seconds''; 0 leaves nothing out.';
	END IF;
	SELECT * INTO r FROM chronicle.run o WHERE o.run_id = v_run FOR UPDATE;
	PERFORM chronicle._check_owner('chronicle.run_set_warmup', format('run "%s"', r.label), r.owner);
	IF r.ended IS NOT NULL AND r.started + warmup >= r.ended THEN
		RAISE EXCEPTION 'chronicle.run_set_warmup: a warm-up of % leaves nothing of run "%"', warmup, r.label
			USING ERRCODE = 'invalid_parameter_value',
			      DETAIL = format('The run lasted %s.', r.ended - r.started),
			      HINT = 'A warm-up is the start of the run that is left out: shorter than the run.';
	END IF;
	UPDATE chronicle.run o SET warmup = run_set_warmup.warmup WHERE o.run_id = r.run_id
	RETURNING * INTO r;
	RETURN r;
END;
$$;

COMMENT ON FUNCTION chronicle.run_set_warmup(text, interval) IS
	'Sets how much of a run''s start every analysis leaves out (the run''s owner, a member of that role or a superuser)';

-- The headline numbers of a window, one row per metric.
CREATE FUNCTION chronicle.summary(from_ts timestamptz, to_ts timestamptz, run_id integer DEFAULT NULL)
RETURNS TABLE (metric text, value float8, unit text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
	secs    float8;
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.summary');
	SELECT w.seconds INTO secs FROM chronicle._window(from_ts, to_ts) w;
	RETURN QUERY
	WITH db AS (
		SELECT sum(d.xact_commit)::float8 AS c, sum(d.xact_rollback)::float8 AS r,
		       sum(d.blks_hit)::float8 AS h, sum(d.blks_read)::float8 AS rd,
		       sum(d.temp_bytes)::float8 AS tb
		  FROM chronicle.database_totals(from_ts, to_ts) d
	), io AS (
		SELECT sum(d.read_bytes)::float8 AS rb, sum(d.write_bytes)::float8 AS wb,
		       sum(d.extend_bytes)::float8 AS eb, sum(d.fsyncs)::float8 AS fs,
		       sum(d.write_bytes) FILTER (WHERE d.backend_type = 'client backend')::float8 AS wb_client,
		       sum(d.write_bytes) FILTER (WHERE d.backend_type = 'checkpointer')::float8 AS wb_ckpt,
		       sum(d.write_bytes) FILTER (WHERE d.backend_type = 'background writer')::float8 AS wb_bgw,
		       sum(d.evictions)::float8 AS ev
		  FROM chronicle.io_totals(from_ts, to_ts) d
		 WHERE d.object <> 'wal'
	), wal AS (
		-- aggregates: one row even when the source recorded nothing
		SELECT sum(w.wal_bytes)::float8 AS b, sum(w.wal_fpi)::float8 AS f, sum(w.wal_records)::float8 AS r
		  FROM chronicle.wal_totals(from_ts, to_ts) w
	), ck AS (
		SELECT sum(coalesce(c.num_done, c.num_timed + c.num_requested))::float8 AS n,
		       sum(c.buffers_written)::float8 AS bw
		  FROM chronicle.checkpointer_totals(from_ts, to_ts) c
	), bu AS (
		SELECT avg(b.buffers_dirty)::float8 AS dirty, max(b.buffers_dirty)::float8 AS dirty_max
		  FROM chronicle.buffers_values(from_ts, to_ts) b
	), wt AS (
		-- the sampler's per-class counts of active sessions (database
		-- time), over the intervals recorded by 0.2.0+ (before, they
		-- counted background processes too: background_active NULL)
		SELECT sum(w.active_cpu + w.active_io + w.active_lwlock + w.active_lock + w.active_ipc
		           + w.active_client + w.active_timeout + w.active_other)
		           FILTER (WHERE w.background_active IS NOT NULL)::float8 AS n,
		       sum(w.ticks_taken) FILTER (WHERE w.background_active IS NOT NULL)::float8 AS ticks,
		       sum(w.ticks_taken)::float8 / nullif(sum(w.ticks_due), 0) AS coverage
		  FROM chronicle.wait_sampler_deltas(from_ts, to_ts) w
	), app AS (
		-- pgbench's numbers of the run, as app_summary() gives them (one row)
		SELECT a.tps, a.latency_mean_ms AS lat_avg, a.latency_p50_ms AS p50, a.latency_p99_ms AS p99
		  FROM chronicle._app_summary(summary.run_id) a
	)
	SELECT v.metric, v.value, v.unit
	  FROM db, io, wal, ck, bu, wt, app,
	       LATERAL (VALUES
		(1, 'seconds', secs, 's'),
		(2, 'commits_per_s', db.c / secs, '1/s'),
		(3, 'rollbacks_per_s', db.r / secs, '1/s'),
		(4, 'hit_ratio', db.h / nullif(db.h + db.rd, 0), 'fraction'),
		(5, 'temp_bytes_per_s', db.tb / secs, 'bytes/s'),
		(10, 'wal_bytes_per_s', wal.b / secs, 'bytes/s'),
		(11, 'wal_fpi_per_s', wal.f / secs, '1/s'),
		(12, 'wal_records_per_s', wal.r / secs, '1/s'),
		(13, 'wal_bytes_per_commit', wal.b / nullif(db.c, 0), 'bytes'),
		(14, 'wal_fpi_per_commit', wal.f / nullif(db.c, 0), '1'),
		(15, 'wal_records_per_commit', wal.r / nullif(db.c, 0), '1'),
		(20, 'read_bytes_per_s', io.rb / secs, 'bytes/s'),
		(21, 'write_bytes_per_s', io.wb / secs, 'bytes/s'),
		(22, 'extend_bytes_per_s', io.eb / secs, 'bytes/s'),
		(23, 'client_write_bytes_per_s', io.wb_client / secs, 'bytes/s'),
		(24, 'checkpointer_write_bytes_per_s', io.wb_ckpt / secs, 'bytes/s'),
		(25, 'bgwriter_write_bytes_per_s', io.wb_bgw / secs, 'bytes/s'),
		(26, 'fsyncs_per_s', io.fs / secs, '1/s'),
		(27, 'evictions_per_s', io.ev / secs, '1/s'),
		(30, 'checkpoints', ck.n, '1'),
		(31, 'checkpoint_buffers_written', ck.bw, 'buffers'),
		(32, 'buffers_dirty_avg', bu.dirty, 'buffers'),
		(33, 'buffers_dirty_max', bu.dirty_max, 'buffers'),
		(40, 'active_processes', wt.n / nullif(wt.ticks, 0), 'processes'),
		(41, 'wait_coverage', wt.coverage, 'fraction'),
		(50, 'tps', app.tps, '1/s'),
		(51, 'latency_avg_ms', app.lat_avg, 'ms'),
		(52, 'latency_p50_ms', app.p50, 'ms'),
		(53, 'latency_p99_ms', app.p99, 'ms')
	       ) AS v(ord, metric, value, unit)
	 ORDER BY v.ord;
END;
$$;

COMMENT ON FUNCTION chronicle.summary(timestamptz, timestamptz, integer) IS
	'Headline numbers of a window, one row per metric (pgbench numbers of the run when a run_id is given, as app_summary() gives them)';

CREATE FUNCTION chronicle.run_summary(run text)
RETURNS TABLE (metric text, value float8, unit text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
-- the run's origin, set by run_window(), for this call only (05_origin.sql)
SET chronicle.origin = 0
AS $$
	SELECT s.* FROM chronicle.run_window(run) w,
	       chronicle.summary(w.run_from, w.run_to,
	                         chronicle._find_run(run)) s
$$;

COMMENT ON FUNCTION chronicle.run_summary(text) IS 'chronicle.summary() of a run';

-- Two runs side by side: ratio = b / a (NULL when a is 0 or either is
-- unknown).
CREATE FUNCTION chronicle.compare_runs(a text, b text)
RETURNS TABLE (metric text, unit text, value_a float8, value_b float8, ratio float8)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT sa.metric, sa.unit, sa.value, sb.value, sb.value / nullif(sa.value, 0)
	  FROM (SELECT s.*, row_number() OVER () AS ord FROM chronicle.run_summary(a) s) sa
	  JOIN chronicle.run_summary(b) sb ON sb.metric = sa.metric
	 ORDER BY sa.ord
$$;

COMMENT ON FUNCTION chronicle.compare_runs(text, text) IS
	'Headline numbers of two runs side by side, with the ratio b / a';

-- The leaves of two jsonb objects that differ, by name: nested keys as
-- dotted names ('device.pg_wal.scheduler'), a leaf one side has and the
-- other has not with NULL on that side (a NULL object has none).
CREATE FUNCTION chronicle._jsonb_diff(a jsonb, b jsonb)
RETURNS TABLE (name text, value_a text, value_b text)
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH RECURSIVE flat(side, key, value) AS (
		SELECT 'a', e.key, e.value FROM jsonb_each(a) e
		UNION ALL
		SELECT 'b', e.key, e.value FROM jsonb_each(b) e
		UNION ALL
		SELECT f.side, f.key || '.' || e.key, e.value
		  FROM flat f, jsonb_each(f.value) e
		 WHERE jsonb_typeof(f.value) = 'object'
	), leaf AS (
		SELECT f.side, f.key, f.value #>> '{}' AS value
		  FROM flat f WHERE jsonb_typeof(f.value) <> 'object'
	)
	SELECT coalesce(la.key, lb.key), la.value, lb.value
	  FROM (SELECT * FROM leaf WHERE side = 'a') la
	  FULL JOIN (SELECT * FROM leaf WHERE side = 'b') lb ON la.key = lb.key
	 WHERE la.value IS DISTINCT FROM lb.value
	 ORDER BY 1
$$;

-- The settings that differ between two runs (and the server version).
CREATE FUNCTION chronicle.compare_settings(a text, b text)
RETURNS TABLE (name text, value_a text, value_b text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH ra AS (SELECT r.* FROM chronicle.run r WHERE r.run_id = chronicle._run_id(a, 'chronicle.compare_settings')),
	     rb AS (SELECT r.* FROM chronicle.run r WHERE r.run_id = chronicle._run_id(b, 'chronicle.compare_settings'))
	SELECT 'server_version', ra.server_version, rb.server_version
	  FROM ra, rb WHERE ra.server_version IS DISTINCT FROM rb.server_version
	UNION ALL
	(SELECT d.*
	   FROM ra, rb,
	        chronicle._jsonb_diff(
	            (SELECT jsonb_object_agg(e.key, chronicle._redact_setting(e.key, e.value))
	               FROM jsonb_each_text(ra.settings) e),
	            (SELECT jsonb_object_agg(e.key, chronicle._redact_setting(e.key, e.value))
	               FROM jsonb_each_text(rb.settings) e)) d
	  ORDER BY 1)
$$;

COMMENT ON FUNCTION chronicle.compare_settings(text, text) IS
	'Settings (at the start of each run) that differ between two runs, and the server version if it differs';

-- The environment (chronicle.run.environment) that differs between two
-- runs, as _jsonb_diff() gives it.  A run without an environment (labelled
-- after the fact, or opened by 0.1.0) has '{}': every key of the other is
-- listed.
CREATE FUNCTION chronicle.compare_environment(a text, b text)
RETURNS TABLE (name text, value_a text, value_b text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
	RETURN QUERY
	SELECT d.* FROM chronicle._jsonb_diff(
		(SELECT r.environment FROM chronicle.run r WHERE r.run_id = chronicle._run_id(a, 'chronicle.compare_environment')),
		(SELECT r.environment FROM chronicle.run r WHERE r.run_id = chronicle._run_id(b, 'chronicle.compare_environment'))) d;
END;
$$;

COMMENT ON FUNCTION chronicle.compare_environment(text, text) IS
	'The environment (build, kernel, CPU, memory, cpufreq, huge pages, devices of the data directory and pg_wal) that differs between two runs, by dotted name';

REVOKE ALL ON FUNCTION chronicle._redact_setting(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._redact_setting(text, text) TO pg_monitor, pg_read_all_stats;
REVOKE ALL ON FUNCTION chronicle._jsonb_diff(jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._jsonb_diff(jsonb, jsonb) TO pg_monitor, pg_read_all_stats;
REVOKE ALL ON FUNCTION chronicle._run_open(text, jsonb, text[], text[], jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._check_label(text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._check_owner(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.run_begin(text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.run_end(text, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.run_label(text, timestamptz, timestamptz, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.run_delete(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.summary(timestamptz, timestamptz, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.run_summary(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.compare_runs(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.compare_settings(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.compare_environment(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._check_label(text, text, jsonb) TO pg_monitor;
GRANT EXECUTE ON FUNCTION chronicle.run_begin(text, jsonb) TO pg_monitor;
GRANT EXECUTE ON FUNCTION chronicle.run_end(text, timestamptz) TO pg_monitor;
GRANT EXECUTE ON FUNCTION chronicle.run_label(text, timestamptz, timestamptz, jsonb) TO pg_monitor;
GRANT EXECUTE ON FUNCTION chronicle.run_delete(text) TO pg_monitor;
REVOKE ALL ON FUNCTION chronicle.run_set_warmup(text, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.run_set_warmup(text, interval) TO pg_monitor;
GRANT EXECUTE ON FUNCTION chronicle.summary(timestamptz, timestamptz, integer) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.run_summary(text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.compare_runs(text, text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.compare_settings(text, text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.compare_environment(text, text) TO pg_monitor, pg_read_all_stats;
