-- Importing a run archive (pg-chronicle import, client/pg_chronicle/archive.py;
-- the format: docs/runs.md, "Run archives").  The client checks the
-- archive (format, version, checksums), copies its members into temporary
-- tables of its session, pg_temp.import_<member>, with the columns of this
-- database's tables and views, and calls this function in the same
-- transaction: the run, its origin (05_origin.sql), its snapshots and
-- history packed with this database's key ids, its pgbench rows, metrics,
-- marks and statement texts.  All or nothing: the caller's transaction.
--
-- Who may import: whoever may write runs (pg_monitor, as run_begin), so
-- SECURITY DEFINER, reading only the caller's own temporary tables.
-- Idempotent: an archive already imported (its id, in run.meta ->
-- 'archive') gives its run back with a NOTICE.  A label taken by another
-- run is refused (the client renames only when asked).
CREATE FUNCTION chronicle._import_run(manifest jsonb, label text)
RETURNS chronicle.run
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	r chronicle.run;
	m jsonb := manifest -> 'run';
	srv jsonb := manifest -> 'server';
	v_origin integer;
	v_with text;
	v_cols text;
	v_vals text;
	v_joins text;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles u WHERE u.rolname = session_user
	                AND (u.rolsuper OR pg_has_role(u.oid, 'pg_monitor', 'MEMBER'))) THEN
		RAISE EXCEPTION 'chronicle._import_run: role % may not write runs', session_user
			USING ERRCODE = 'insufficient_privilege',
			      HINT = 'Importing a run needs the rights to record one: membership in pg_monitor.';
	END IF;
	IF manifest ->> 'archive_id' IS NULL OR m IS NULL OR srv IS NULL THEN
		RAISE EXCEPTION 'chronicle._import_run: the manifest has no archive_id, run or server'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- The caller's tables are read with this function's rights: they must
	-- be plain tables of its own temporary schema with columns of built-in
	-- types (a view, a rule or a cast of its own would run its code here).
	IF EXISTS (SELECT FROM pg_class c
	            WHERE c.relnamespace = pg_my_temp_schema() AND c.relname LIKE 'import\_%'
	              AND (c.relkind NOT IN ('r', 'S') OR c.relhasrules OR c.relrowsecurity
	                   OR EXISTS (SELECT FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
	                               WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
	                                 AND t.typnamespace <> 'pg_catalog'::regnamespace))) THEN
		RAISE EXCEPTION 'chronicle._import_run: the import tables must be plain tables of built-in types'
			USING ERRCODE = 'wrong_object_type';
	END IF;
	-- the same archive again: its run, once
	SELECT * INTO r FROM chronicle.run o WHERE o.meta -> 'archive' ->> 'id' = manifest ->> 'archive_id';
	IF FOUND THEN
		RAISE NOTICE 'archive % is imported already, as run "%"', manifest ->> 'archive_id', r.label
			USING DETAIL = 'Nothing was imported again.';
		RETURN r;
	END IF;
	PERFORM chronicle._check_label('chronicle._import_run', label, coalesce(m -> 'meta', '{}'));

	-- the origin: one per archive imported (05_origin.sql says why), with
	-- the server that recorded it
	INSERT INTO chronicle.origin (system_identifier, server_name, server_version, extension_version)
	VALUES ((srv ->> 'system_identifier')::bigint, srv ->> 'server_name',
	        srv ->> 'server_version', srv ->> 'extension_version')
	RETURNING origin_id INTO v_origin;

	INSERT INTO chronicle.run (label, started, ended, meta, settings, server_version, environment,
	                           owner, warmup, origin)
	VALUES (label, (m ->> 'started')::timestamptz, (m ->> 'ended')::timestamptz,
	        coalesce(m -> 'meta', '{}') || jsonb_build_object('archive', jsonb_build_object(
	            'id', manifest ->> 'archive_id', 'label', m ->> 'label', 'imported', now())),
	        coalesce(m -> 'settings', '{}'), m ->> 'server_version', coalesce(m -> 'environment', '{}'),
	        session_user, coalesce((m ->> 'warmup')::interval, '0'), v_origin)
	RETURNING * INTO r;

	-- Snapshots and history, the origin's own
	INSERT INTO chronicle.archive_snapshot
	SELECT v_origin, s.ts, s.segment, s.keyframe, s.collector, s.duration_ms, s.rows_written,
	       s.wal_bytes, s.errors, s.system_identifier, s.server_name
	  FROM pg_temp.import_snapshot s;
	-- One statement: each source's rows packed per snapshot as the
	-- collector packs them (a keyframe's complete), joined by ts.  (An
	-- UPDATE per source read the new rows without statistics: a nested
	-- loop over the table.)
	SELECT string_agg(format('p_%s AS (SELECT x.ts, chronicle._pack(%L, x.ts, array_agg(x), bool_or(s.keyframe)) AS v'
	                         ' FROM pg_temp.%I x JOIN pg_temp.import_snapshot s ON s.ts = x.ts GROUP BY x.ts)',
	                         src, src, 'import_' || src), ', '),
	       string_agg(format('%I', src), ', '),
	       string_agg(format('p_%s.v', src), ', '),
	       string_agg(format('LEFT JOIN p_%s ON p_%s.ts = s.ts', src, src), ' ')
	  INTO v_with, v_cols, v_vals, v_joins
	  FROM (SELECT DISTINCT c.source AS src FROM chronicle._source_columns() c) c
	 WHERE to_regclass('pg_temp.import_' || c.src) IS NOT NULL;
	EXECUTE format($q$
		%s INSERT INTO chronicle.archive_history (origin, ts, system_identifier, server_name%s)
		SELECT $1, s.ts, s.system_identifier, s.server_name%s FROM pg_temp.import_snapshot s %s$q$,
		CASE WHEN v_with IS NOT NULL THEN 'WITH ' || v_with ELSE '' END,
		coalesce(', ' || v_cols, ''), coalesce(', ' || v_vals, ''), coalesce(v_joins, '')) USING v_origin;

	IF manifest -> 'members' -> 'app_transaction' ? 'encoding' THEN
		-- format 2: ts and tx_no are differences to the row before (n
		-- orders the rows), ts in microseconds since 1970; status NULL: ok
		INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us, lag_us,
		                                       retries, status, source)
		SELECT r.run_id, 'epoch'::timestamptz + (x.us / 1000000) * interval '1 s'
		                 + (x.us % 1000000) * interval '1 microsecond',
		       x.client_id, x.tx_no, x.script_no, x.latency_us, x.lag_us, x.retries, x.status, x.source
		  FROM (SELECT (sum(t.ts) OVER w)::bigint AS us, t.client_id, (sum(t.tx_no) OVER w)::bigint AS tx_no,
		               t.script_no, t.latency_us, t.lag_us, t.retries, coalesce(t.status, 'ok') AS status,
		               t.source
		          FROM pg_temp.import_app_transaction t
		        WINDOW w AS (ORDER BY t.n ROWS UNBOUNDED PRECEDING)) x;
	ELSE
		INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us, lag_us,
		                                       retries, status, source)
		SELECT r.run_id, t.ts, t.client_id, t.tx_no, t.script_no, t.latency_us, t.lag_us, t.retries,
		       t.status, t.source
		  FROM pg_temp.import_app_transaction t;
	END IF;
	INSERT INTO chronicle.app_interval
	SELECT r.run_id, a.interval_start, a.num_transactions, a.sum_latency_us, a.sum_latency_2,
	       a.min_latency_us, a.max_latency_us, a.sum_lag_us, a.sum_lag_2, a.min_lag_us, a.max_lag_us,
	       a.skipped, a.retried, a.retries, a.serialization_failures, a.deadlock_failures, a.interval_secs
	  FROM pg_temp.import_app_interval a;
	INSERT INTO chronicle.app_metric (ts, name, value, run_id)
	SELECT a.ts, a.name, a.value, r.run_id FROM pg_temp.import_app_metric a;
	INSERT INTO chronicle.mark (ts, event, owner, origin)
	SELECT k.ts, k.event, k.owner, v_origin FROM pg_temp.import_mark k
	 WHERE NOT EXISTS (SELECT FROM chronicle.mark o
	                    WHERE o.origin = v_origin AND o.ts = k.ts AND o.event = k.event);
	INSERT INTO chronicle.archive_statements_text (origin, dbid, queryid, query)
	SELECT v_origin, t.dbid, t.queryid, t.query FROM pg_temp.import_statements_text t
	ON CONFLICT DO NOTHING;
	RETURN r;
END;
$fn$;
COMMENT ON FUNCTION chronicle._import_run(jsonb, text) IS
	'Imports a run archive that the client copied into temporary tables (pg-chronicle import): its run, origin, snapshots, history, pgbench rows, metrics, marks and statement texts';
REVOKE ALL ON FUNCTION chronicle._import_run(jsonb, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._import_run(jsonb, text) TO pg_monitor;
