-- pg_chronicle 0.1.0 -> 0.2.0
--
-- Every change to the SQL of src/sql/ since 0.1.0 is repeated here, in the
-- order it was made, so that ALTER EXTENSION pg_chronicle UPDATE on an
-- installed 0.1.0 reaches the same catalog as CREATE EXTENSION of 0.2.0
-- (test/t/040_upgrade.pl compares the two).

\echo Use "ALTER EXTENSION pg_chronicle UPDATE TO '0.2.0'" to load this file. \quit

-- ----------------------------------------------------------------------
-- Trust: chronicle._deltas() (issue 11)
--
-- The engine takes a table description from its caller: it is no longer
-- granted to pg_monitor and pg_read_all_stats.  The generated functions that
-- call it become SECURITY DEFINER; the _<source>_sums() helpers also check
-- their "by" and "exclude_cols" against the source's keys.
REVOKE EXECUTE ON FUNCTION chronicle._deltas(regclass, timestamptz, timestamptz, text[], text[], text, text[], text, text[], text, text[], text[], text[], boolean, text[], text[], text[]) FROM pg_monitor, pg_read_all_stats;

CREATE OR REPLACE FUNCTION chronicle._io_sums(from_ts timestamptz, to_ts timestamptz, for_backend_type text DEFAULT NULL, for_object text DEFAULT NULL, for_context text DEFAULT NULL, by text DEFAULT NULL, exclude_cols text[] DEFAULT '{}', exclude_vals text[] DEFAULT '{}')
RETURNS TABLE (interval_start timestamptz, interval_end timestamptz, seconds float8, grp text, reset boolean, reads bigint, reads_per_s float8, read_bytes bigint, read_bytes_per_s float8, read_time float8, read_time_per_s float8, writes bigint, writes_per_s float8, write_bytes bigint, write_bytes_per_s float8, write_time float8, write_time_per_s float8, writebacks bigint, writebacks_per_s float8, writeback_time float8, writeback_time_per_s float8, extends bigint, extends_per_s float8, extend_bytes bigint, extend_bytes_per_s float8, extend_time float8, extend_time_per_s float8, hits bigint, hits_per_s float8, evictions bigint, evictions_per_s float8, reuses bigint, reuses_per_s float8, fsyncs bigint, fsyncs_per_s float8, fsync_time float8, fsync_time_per_s float8, ms_per_read float8, ms_per_write float8, ms_per_writeback float8, ms_per_extend float8, ms_per_fsync float8)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
SET work_mem = '256MB'
AS $fn$
#variable_conflict use_column
BEGIN
	IF NOT coalesce($6 = ANY (ARRAY['backend_type', 'object', 'context']::text[]), true)
	   OR NOT coalesce($7 <@ ARRAY['backend_type', 'object', 'context']::text[] AND cardinality($7) = cardinality($8), false) THEN
		RAISE EXCEPTION 'chronicle._io_sums: by (%) and exclude_cols (%) must name key columns', $6, $7
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'The keys are backend_type, object, context; exclude_vals has a value per exclude_cols.';
	END IF;
	IF $6 IS NOT NULL THEN
		RETURN QUERY
		SELECT * FROM chronicle._deltas('chronicle.io_history'::regclass, $1, $2,
			keys => ARRAY['backend_type', 'object', 'context']::text[],
			vals => ARRAY['reads', 'read_bytes', 'read_time', 'writes', 'write_bytes', 'write_time', 'writebacks', 'writeback_time', 'extends', 'extend_bytes', 'extend_time', 'hits', 'evictions', 'reuses', 'fsyncs', 'fsync_time']::text[],
			kinds => 'cctcctctcctcccct',
			attrs => ARRAY['op_bytes']::text[],
			reset_col => 'stats_reset',
			bytes_ops => ARRAY[NULL, 'reads', NULL, NULL, 'writes', NULL, NULL, NULL, NULL, 'extends', NULL, NULL, NULL, NULL, NULL, NULL]::text[],
			bytes_unit => 'op_bytes',
			per_op => ARRAY['read_time', 'reads', 'write_time', 'writes', 'writeback_time', 'writebacks', 'extend_time', 'extends', 'fsync_time', 'fsyncs']::text[],
			filter_cols => ARRAY['backend_type', 'object', 'context']::text[],
			filter_vals => ARRAY[$3, $4, $5]::text[],
			changed_only => true,
			group_by => ARRAY[$6],
			exclude_cols => $7, exclude_vals => $8)
		  AS d(interval_start timestamptz, interval_end timestamptz, seconds float8, grp text, reset boolean, reads bigint, reads_per_s float8, read_bytes bigint, read_bytes_per_s float8, read_time float8, read_time_per_s float8, writes bigint, writes_per_s float8, write_bytes bigint, write_bytes_per_s float8, write_time float8, write_time_per_s float8, writebacks bigint, writebacks_per_s float8, writeback_time float8, writeback_time_per_s float8, extends bigint, extends_per_s float8, extend_bytes bigint, extend_bytes_per_s float8, extend_time float8, extend_time_per_s float8, hits bigint, hits_per_s float8, evictions bigint, evictions_per_s float8, reuses bigint, reuses_per_s float8, fsyncs bigint, fsyncs_per_s float8, fsync_time float8, fsync_time_per_s float8, ms_per_read float8, ms_per_write float8, ms_per_writeback float8, ms_per_extend float8, ms_per_fsync float8);
		RETURN;
	END IF;
	RETURN QUERY
	SELECT d.interval_start, d.interval_end, d.seconds, NULL::text, d.reset, d.reads, d.reads_per_s, d.read_bytes, d.read_bytes_per_s, d.read_time, d.read_time_per_s, d.writes, d.writes_per_s, d.write_bytes, d.write_bytes_per_s, d.write_time, d.write_time_per_s, d.writebacks, d.writebacks_per_s, d.writeback_time, d.writeback_time_per_s, d.extends, d.extends_per_s, d.extend_bytes, d.extend_bytes_per_s, d.extend_time, d.extend_time_per_s, d.hits, d.hits_per_s, d.evictions, d.evictions_per_s, d.reuses, d.reuses_per_s, d.fsyncs, d.fsyncs_per_s, d.fsync_time, d.fsync_time_per_s, d.ms_per_read, d.ms_per_write, d.ms_per_writeback, d.ms_per_extend, d.ms_per_fsync
	  FROM chronicle._deltas('chronicle.io_history'::regclass, $1, $2,
		keys => ARRAY['backend_type', 'object', 'context']::text[],
		vals => ARRAY['reads', 'read_bytes', 'read_time', 'writes', 'write_bytes', 'write_time', 'writebacks', 'writeback_time', 'extends', 'extend_bytes', 'extend_time', 'hits', 'evictions', 'reuses', 'fsyncs', 'fsync_time']::text[],
		kinds => 'cctcctctcctcccct',
		attrs => ARRAY['op_bytes']::text[],
		reset_col => 'stats_reset',
		bytes_ops => ARRAY[NULL, 'reads', NULL, NULL, 'writes', NULL, NULL, NULL, NULL, 'extends', NULL, NULL, NULL, NULL, NULL, NULL]::text[],
		bytes_unit => 'op_bytes',
		per_op => ARRAY['read_time', 'reads', 'write_time', 'writes', 'writeback_time', 'writebacks', 'extend_time', 'extends', 'fsync_time', 'fsyncs']::text[],
		filter_cols => ARRAY['backend_type', 'object', 'context']::text[],
		filter_vals => ARRAY[$3, $4, $5]::text[],
		changed_only => true,
		group_by => ARRAY[]::text[],
		exclude_cols => $7, exclude_vals => $8)
	  AS d(interval_start timestamptz, interval_end timestamptz, seconds float8, reset boolean, reads bigint, reads_per_s float8, read_bytes bigint, read_bytes_per_s float8, read_time float8, read_time_per_s float8, writes bigint, writes_per_s float8, write_bytes bigint, write_bytes_per_s float8, write_time float8, write_time_per_s float8, writebacks bigint, writebacks_per_s float8, writeback_time float8, writeback_time_per_s float8, extends bigint, extends_per_s float8, extend_bytes bigint, extend_bytes_per_s float8, extend_time float8, extend_time_per_s float8, hits bigint, hits_per_s float8, evictions bigint, evictions_per_s float8, reuses bigint, reuses_per_s float8, fsyncs bigint, fsyncs_per_s float8, fsync_time float8, fsync_time_per_s float8, ms_per_read float8, ms_per_write float8, ms_per_writeback float8, ms_per_extend float8, ms_per_fsync float8);
END;
$fn$;

ALTER FUNCTION chronicle.io_deltas(timestamptz, timestamptz, text, text, text, boolean) SECURITY DEFINER;
ALTER FUNCTION chronicle._database_sums(timestamptz, timestamptz, text) SECURITY DEFINER;
ALTER FUNCTION chronicle.database_deltas(timestamptz, timestamptz, text, boolean) SECURITY DEFINER;
ALTER FUNCTION chronicle._wait_sums(timestamptz, timestamptz, text, text, text) SECURITY DEFINER;
ALTER FUNCTION chronicle.wait_deltas(timestamptz, timestamptz, text, text, text, boolean) SECURITY DEFINER;
CREATE OR REPLACE FUNCTION chronicle._os_disk_sums(from_ts timestamptz, to_ts timestamptz, for_device text DEFAULT NULL, by text DEFAULT NULL, exclude_cols text[] DEFAULT '{}', exclude_vals text[] DEFAULT '{}')
RETURNS TABLE (interval_start timestamptz, interval_end timestamptz, seconds float8, grp text, reset boolean, reads_completed bigint, reads_completed_per_s float8, reads_merged bigint, reads_merged_per_s float8, sectors_read bigint, sectors_read_per_s float8, read_time_ms bigint, read_time_ms_per_s float8, writes_completed bigint, writes_completed_per_s float8, writes_merged bigint, writes_merged_per_s float8, sectors_written bigint, sectors_written_per_s float8, write_time_ms bigint, write_time_ms_per_s float8, io_time_ms bigint, io_time_ms_per_s float8, weighted_io_time_ms bigint, weighted_io_time_ms_per_s float8, discards_completed bigint, discards_completed_per_s float8, discards_merged bigint, discards_merged_per_s float8, sectors_discarded bigint, sectors_discarded_per_s float8, discard_time_ms bigint, discard_time_ms_per_s float8, flushes_completed bigint, flushes_completed_per_s float8, flush_time_ms bigint, flush_time_ms_per_s float8, ms_per_read float8, ms_per_write float8)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
SET work_mem = '256MB'
AS $fn$
#variable_conflict use_column
BEGIN
	IF NOT coalesce($4 = ANY (ARRAY['device', 'role']::text[]), true)
	   OR NOT coalesce($5 <@ ARRAY['device', 'role']::text[] AND cardinality($5) = cardinality($6), false) THEN
		RAISE EXCEPTION 'chronicle._os_disk_sums: by (%) and exclude_cols (%) must name key columns', $4, $5
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'The keys are device, role; exclude_vals has a value per exclude_cols.';
	END IF;
	IF $4 IS NOT NULL THEN
		RETURN QUERY
		SELECT * FROM chronicle._deltas('chronicle.os_disk_history'::regclass, $1, $2,
			keys => ARRAY['device', 'role']::text[],
			vals => ARRAY['reads_completed', 'reads_merged', 'sectors_read', 'read_time_ms', 'writes_completed', 'writes_merged', 'sectors_written', 'write_time_ms', 'io_time_ms', 'weighted_io_time_ms', 'discards_completed', 'discards_merged', 'sectors_discarded', 'discard_time_ms', 'flushes_completed', 'flush_time_ms']::text[],
			kinds => 'cccccccccccccccc',
			attrs => ARRAY[]::text[],
			reset_col => NULL,
			bytes_ops => ARRAY[NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL]::text[],
			bytes_unit => NULL,
			per_op => ARRAY['read_time_ms', 'reads_completed', 'write_time_ms', 'writes_completed']::text[],
			filter_cols => ARRAY['device']::text[],
			filter_vals => ARRAY[$3]::text[],
			changed_only => true,
			group_by => ARRAY[$4],
			exclude_cols => $5, exclude_vals => $6)
		  AS d(interval_start timestamptz, interval_end timestamptz, seconds float8, grp text, reset boolean, reads_completed bigint, reads_completed_per_s float8, reads_merged bigint, reads_merged_per_s float8, sectors_read bigint, sectors_read_per_s float8, read_time_ms bigint, read_time_ms_per_s float8, writes_completed bigint, writes_completed_per_s float8, writes_merged bigint, writes_merged_per_s float8, sectors_written bigint, sectors_written_per_s float8, write_time_ms bigint, write_time_ms_per_s float8, io_time_ms bigint, io_time_ms_per_s float8, weighted_io_time_ms bigint, weighted_io_time_ms_per_s float8, discards_completed bigint, discards_completed_per_s float8, discards_merged bigint, discards_merged_per_s float8, sectors_discarded bigint, sectors_discarded_per_s float8, discard_time_ms bigint, discard_time_ms_per_s float8, flushes_completed bigint, flushes_completed_per_s float8, flush_time_ms bigint, flush_time_ms_per_s float8, ms_per_read float8, ms_per_write float8);
		RETURN;
	END IF;
	RETURN QUERY
	SELECT d.interval_start, d.interval_end, d.seconds, NULL::text, d.reset, d.reads_completed, d.reads_completed_per_s, d.reads_merged, d.reads_merged_per_s, d.sectors_read, d.sectors_read_per_s, d.read_time_ms, d.read_time_ms_per_s, d.writes_completed, d.writes_completed_per_s, d.writes_merged, d.writes_merged_per_s, d.sectors_written, d.sectors_written_per_s, d.write_time_ms, d.write_time_ms_per_s, d.io_time_ms, d.io_time_ms_per_s, d.weighted_io_time_ms, d.weighted_io_time_ms_per_s, d.discards_completed, d.discards_completed_per_s, d.discards_merged, d.discards_merged_per_s, d.sectors_discarded, d.sectors_discarded_per_s, d.discard_time_ms, d.discard_time_ms_per_s, d.flushes_completed, d.flushes_completed_per_s, d.flush_time_ms, d.flush_time_ms_per_s, d.ms_per_read, d.ms_per_write
	  FROM chronicle._deltas('chronicle.os_disk_history'::regclass, $1, $2,
		keys => ARRAY['device', 'role']::text[],
		vals => ARRAY['reads_completed', 'reads_merged', 'sectors_read', 'read_time_ms', 'writes_completed', 'writes_merged', 'sectors_written', 'write_time_ms', 'io_time_ms', 'weighted_io_time_ms', 'discards_completed', 'discards_merged', 'sectors_discarded', 'discard_time_ms', 'flushes_completed', 'flush_time_ms']::text[],
		kinds => 'cccccccccccccccc',
		attrs => ARRAY[]::text[],
		reset_col => NULL,
		bytes_ops => ARRAY[NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL]::text[],
		bytes_unit => NULL,
		per_op => ARRAY['read_time_ms', 'reads_completed', 'write_time_ms', 'writes_completed']::text[],
		filter_cols => ARRAY['device']::text[],
		filter_vals => ARRAY[$3]::text[],
		changed_only => true,
		group_by => ARRAY[]::text[],
		exclude_cols => $5, exclude_vals => $6)
	  AS d(interval_start timestamptz, interval_end timestamptz, seconds float8, reset boolean, reads_completed bigint, reads_completed_per_s float8, reads_merged bigint, reads_merged_per_s float8, sectors_read bigint, sectors_read_per_s float8, read_time_ms bigint, read_time_ms_per_s float8, writes_completed bigint, writes_completed_per_s float8, writes_merged bigint, writes_merged_per_s float8, sectors_written bigint, sectors_written_per_s float8, write_time_ms bigint, write_time_ms_per_s float8, io_time_ms bigint, io_time_ms_per_s float8, weighted_io_time_ms bigint, weighted_io_time_ms_per_s float8, discards_completed bigint, discards_completed_per_s float8, discards_merged bigint, discards_merged_per_s float8, sectors_discarded bigint, sectors_discarded_per_s float8, discard_time_ms bigint, discard_time_ms_per_s float8, flushes_completed bigint, flushes_completed_per_s float8, flush_time_ms bigint, flush_time_ms_per_s float8, ms_per_read float8, ms_per_write float8);
END;
$fn$;

ALTER FUNCTION chronicle.os_disk_deltas(timestamptz, timestamptz, text, boolean) SECURITY DEFINER;
CREATE OR REPLACE FUNCTION chronicle._os_pressure_sums(from_ts timestamptz, to_ts timestamptz, for_resource text DEFAULT NULL, by text DEFAULT NULL, exclude_cols text[] DEFAULT '{}', exclude_vals text[] DEFAULT '{}')
RETURNS TABLE (interval_start timestamptz, interval_end timestamptz, seconds float8, grp text, reset boolean, some_total bigint, some_total_per_s float8, full_total bigint, full_total_per_s float8)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
SET work_mem = '256MB'
AS $fn$
#variable_conflict use_column
BEGIN
	IF NOT coalesce($4 = ANY (ARRAY['resource']::text[]), true)
	   OR NOT coalesce($5 <@ ARRAY['resource']::text[] AND cardinality($5) = cardinality($6), false) THEN
		RAISE EXCEPTION 'chronicle._os_pressure_sums: by (%) and exclude_cols (%) must name key columns', $4, $5
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'The keys are resource; exclude_vals has a value per exclude_cols.';
	END IF;
	IF $4 IS NOT NULL THEN
		RETURN QUERY
		SELECT * FROM chronicle._deltas('chronicle.os_pressure_history'::regclass, $1, $2,
			keys => ARRAY['resource']::text[],
			vals => ARRAY['some_total', 'full_total']::text[],
			kinds => 'cc',
			attrs => ARRAY[]::text[],
			reset_col => NULL,
			bytes_ops => ARRAY[NULL, NULL]::text[],
			bytes_unit => NULL,
			per_op => ARRAY[]::text[],
			filter_cols => ARRAY['resource']::text[],
			filter_vals => ARRAY[$3]::text[],
			changed_only => true,
			group_by => ARRAY[$4],
			exclude_cols => $5, exclude_vals => $6)
		  AS d(interval_start timestamptz, interval_end timestamptz, seconds float8, grp text, reset boolean, some_total bigint, some_total_per_s float8, full_total bigint, full_total_per_s float8);
		RETURN;
	END IF;
	RETURN QUERY
	SELECT d.interval_start, d.interval_end, d.seconds, NULL::text, d.reset, d.some_total, d.some_total_per_s, d.full_total, d.full_total_per_s
	  FROM chronicle._deltas('chronicle.os_pressure_history'::regclass, $1, $2,
		keys => ARRAY['resource']::text[],
		vals => ARRAY['some_total', 'full_total']::text[],
		kinds => 'cc',
		attrs => ARRAY[]::text[],
		reset_col => NULL,
		bytes_ops => ARRAY[NULL, NULL]::text[],
		bytes_unit => NULL,
		per_op => ARRAY[]::text[],
		filter_cols => ARRAY['resource']::text[],
		filter_vals => ARRAY[$3]::text[],
		changed_only => true,
		group_by => ARRAY[]::text[],
		exclude_cols => $5, exclude_vals => $6)
	  AS d(interval_start timestamptz, interval_end timestamptz, seconds float8, reset boolean, some_total bigint, some_total_per_s float8, full_total bigint, full_total_per_s float8);
END;
$fn$;

ALTER FUNCTION chronicle.os_pressure_deltas(timestamptz, timestamptz, text, boolean) SECURITY DEFINER;
ALTER FUNCTION chronicle.wal_deltas(timestamptz, timestamptz) SECURITY DEFINER;
ALTER FUNCTION chronicle.checkpointer_deltas(timestamptz, timestamptz) SECURITY DEFINER;
ALTER FUNCTION chronicle.bgwriter_deltas(timestamptz, timestamptz) SECURITY DEFINER;
ALTER FUNCTION chronicle.wait_sampler_deltas(timestamptz, timestamptz) SECURITY DEFINER;
ALTER FUNCTION chronicle.os_memory_deltas(timestamptz, timestamptz) SECURITY DEFINER;
ALTER FUNCTION chronicle.buffers_values(timestamptz, timestamptz) SECURITY DEFINER;

-- ---------------------------------------------------------------------------
-- Trust (issue 11): run settings read with the caller's rights, passwords
-- redacted (src/sql/36_runs.sql, src/runs.c).
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION chronicle._redact_setting(name text, value text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE
		WHEN name ~* '(password|passphrase|secret)' THEN '********'
		ELSE regexp_replace(
		         regexp_replace(value,
		                        '(password\s*=\s*)(''(\\.|[^''\\])*''\S*|''[^'']*$|\S*)', '\1********', 'gi'),
		         '(://[^/:@\s]*:)[^@\s]*@', '\1********@', 'g')
	END
$$;

COMMENT ON FUNCTION chronicle._redact_setting(text, text) IS
	'A setting''s value with its passwords replaced by ********, as runs keep it';

-- run_begin reads the settings itself now, with its caller's rights.
DROP FUNCTION chronicle._settings();

CREATE OR REPLACE FUNCTION chronicle._run_open(label text, meta jsonb, names text[], vals text[])
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
	SELECT * INTO r FROM chronicle.run o WHERE o.ended IS NULL;
	IF FOUND THEN
		RAISE EXCEPTION 'chronicle.run_begin: run "%" is still open', r.label
			USING ERRCODE = 'object_in_use',
			      HINT = 'End it first with SELECT chronicle.run_end();';
	END IF;
	INSERT INTO chronicle.run (label, started, meta, settings, server_version)
	VALUES (label, clock_timestamp(), meta,
	        (SELECT coalesce(jsonb_object_agg(u.n, chronicle._redact_setting(u.n, u.v) ORDER BY u.n), '{}')
	           FROM unnest(names, vals) AS u(n, v)),
	        current_setting('server_version'))
	RETURNING * INTO r;
	RETURN r;
END;
$$;

-- Was SECURITY DEFINER plpgsql: now C, running as its caller to read the
-- settings (the grants to pg_monitor stay).
CREATE OR REPLACE FUNCTION chronicle.run_begin(label text, meta jsonb DEFAULT '{}')
RETURNS chronicle.run
LANGUAGE C
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_run_begin';

COMMENT ON FUNCTION chronicle.run_begin(text, jsonb) IS
	'Opens a labelled benchmark run now, remembering the server version and the non-default settings the caller may read (passwords redacted)';

CREATE OR REPLACE FUNCTION chronicle.compare_settings(a text, b text)
RETURNS TABLE (name text, value_a text, value_b text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH ra AS (SELECT r.* FROM chronicle.run_window(a) w, chronicle.run r WHERE r.label = a),
	     rb AS (SELECT r.* FROM chronicle.run_window(b) w, chronicle.run r WHERE r.label = b)
	SELECT 'server_version', ra.server_version, rb.server_version
	  FROM ra, rb WHERE ra.server_version IS DISTINCT FROM rb.server_version
	UNION ALL
	(SELECT coalesce(sa.key, sb.key), sa.value, sb.value
	   FROM (SELECT e.key, chronicle._redact_setting(e.key, e.value) AS value
	           FROM ra, jsonb_each_text(ra.settings) e) sa
	   FULL JOIN (SELECT e.key, chronicle._redact_setting(e.key, e.value) AS value
	                FROM rb, jsonb_each_text(rb.settings) e) sb ON sa.key = sb.key
	  WHERE sa.value IS DISTINCT FROM sb.value
	  ORDER BY 1)
$$;

REVOKE ALL ON FUNCTION chronicle._redact_setting(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._redact_setting(text, text) TO pg_monitor, pg_read_all_stats;
REVOKE ALL ON FUNCTION chronicle._run_open(text, jsonb, text[], text[]) FROM PUBLIC;

-- Runs 0.1.0 opened kept passwords in their settings: redact them.
UPDATE chronicle.run r
   SET settings = (SELECT jsonb_object_agg(e.key, chronicle._redact_setting(e.key, e.value))
                     FROM jsonb_each_text(r.settings) e)
 WHERE r.settings <> '{}'
   AND r.settings IS DISTINCT FROM
       (SELECT jsonb_object_agg(e.key, chronicle._redact_setting(e.key, e.value))
          FROM jsonb_each_text(r.settings) e);

-- ---------------------------------------------------------------------
-- Right numbers (issue 12): pgbench's numbers from the aggregate log where
-- a run has no per-transaction rows; time counted from the first
-- transaction's start and not across gaps; per-interval tps over the
-- seconds the run was active; nearest-rank latency percentiles everywhere.
-- app_intervals() and app_summary() gain columns (active_seconds,
-- latency_min_ms, basis): dropped and created again.
-- ---------------------------------------------------------------------
DROP FUNCTION chronicle.app_intervals(text);
DROP FUNCTION chronicle.app_intervals(timestamptz, timestamptz, text);
DROP FUNCTION chronicle.app_summary(text);
CREATE FUNCTION chronicle.app_intervals(
	from_ts timestamptz,
	to_ts timestamptz,
	run_label text DEFAULT NULL)
RETURNS TABLE (
	interval_start  timestamptz,
	interval_end    timestamptz,
	segment         timestamptz,
	transactions    bigint,
	tps             float8,
	latency_mean_ms float8,
	latency_p50_ms  float8,
	latency_p90_ms  float8,
	latency_p99_ms  float8,
	latency_max_ms  float8,
	lag_mean_ms     float8,
	skipped         bigint,
	failures        bigint,
	retries         bigint,
	active_seconds  float8,
	latency_min_ms  float8,
	basis           text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
	v_run integer;
	v_bounds timestamptz[];
	v_lo timestamptz;
	v_hi timestamptz;
BEGIN
	IF from_ts IS NULL OR to_ts IS NULL THEN
		RAISE EXCEPTION 'time range bounds must not be NULL'
			USING ERRCODE = '22004', HINT = 'Give from_ts and to_ts, or use chronicle.app_intervals(run_label).';
	END IF;
	IF to_ts < from_ts THEN
		RAISE EXCEPTION 'time range ends (%) before it starts (%)', to_ts, from_ts
			USING ERRCODE = '22023', HINT = 'Swap the bounds.';
	END IF;
	IF run_label IS NOT NULL THEN
		v_run := chronicle.app_run_id(run_label);
	END IF;

	-- The snapshots bounding the intervals whose end lies in (from, to].
	SELECT array_agg(s.ts ORDER BY s.ts) INTO v_bounds
	  FROM chronicle.snapshot s
	 WHERE s.ts >= coalesce((SELECT max(s2.ts) FROM chronicle.snapshot s2 WHERE s2.ts <= from_ts), from_ts)
	   AND s.ts <= to_ts;
	IF coalesce(cardinality(v_bounds), 0) < 2 THEN
		RETURN;
	END IF;
	v_lo := v_bounds[1];
	v_hi := v_bounds[cardinality(v_bounds)];

	-- An event at time t belongs to interval i = (b[i], b[i+1]]:
	-- width_bucket(t - 1 us, b), timestamps being whole microseconds.
	RETURN QUERY
	WITH iv AS MATERIALIZED (
		SELECT x.i, x.s_ts, x.e_ts, x.seg
		  FROM (SELECT b.i, b.ts AS s_ts, lead(b.ts) OVER (ORDER BY b.i) AS e_ts,
		               sn.segment AS seg, lead(sn.segment) OVER (ORDER BY b.i) AS next_seg
		          FROM unnest(v_bounds) WITH ORDINALITY AS b(ts, i)
		          JOIN chronicle.snapshot sn ON sn.ts = b.ts) x
		 WHERE x.next_seg = x.seg		-- never across two recordings
	), txi AS (
		SELECT width_bucket(t.ts - interval '1 microsecond', v_bounds) AS i,
		       count(*) FILTER (WHERE t.status = 'ok') AS n,
		       sum(t.latency_us) FILTER (WHERE t.status = 'ok')::float8 AS lat_sum,
		       min(t.latency_us) FILTER (WHERE t.status = 'ok')::float8 AS lat_min,
		       max(t.latency_us) FILTER (WHERE t.status = 'ok')::float8 AS lat_max,
		       percentile_disc(ARRAY[0.5, 0.9, 0.99]::float8[]) WITHIN GROUP (ORDER BY t.latency_us)
		           FILTER (WHERE t.status = 'ok') AS lat_p,
		       sum(t.lag_us) FILTER (WHERE t.status = 'ok')::float8 AS lag_sum,
		       count(t.lag_us) FILTER (WHERE t.status = 'ok') AS lag_n,
		       count(*) FILTER (WHERE t.status = 'skipped') AS n_skipped,
		       count(*) FILTER (WHERE t.status NOT IN ('ok', 'skipped')) AS n_failed,
		       sum(t.retries) AS n_retries,
		       min(t.ts - coalesce(t.latency_us, 0) * interval '1 microsecond') AS s,
		       max(t.ts) AS e
		  FROM chronicle.app_transaction t
		 WHERE t.ts > v_lo AND t.ts <= v_hi
		   AND (v_run IS NULL OR t.run_id = v_run)
		 GROUP BY 1
	), txr AS (
		-- per run and interval: the first start and the last end (one
		-- run: those of txi; every run: a second pass)
		SELECT v_run AS run_id, txi.i, txi.s, txi.e FROM txi WHERE v_run IS NOT NULL
		UNION ALL
		SELECT t.run_id, width_bucket(t.ts - interval '1 microsecond', v_bounds),
		       min(t.ts - coalesce(t.latency_us, 0) * interval '1 microsecond'), max(t.ts)
		  FROM chronicle.app_transaction t
		 WHERE v_run IS NULL AND t.ts > v_lo AND t.ts <= v_hi
		 GROUP BY 1, 2
	), seg AS (
		SELECT iv.seg, min(iv.s_ts) AS first_s, max(iv.e_ts) AS last_e
		  FROM iv
		 GROUP BY iv.seg
	), span AS (
		-- Per run and recording, from the first start to the last end of
		-- its transactions; open-ended where the run has transactions of
		-- the same recording before or after the window.
		SELECT g.run_id, g.seg,
		       CASE WHEN EXISTS (SELECT FROM chronicle.app_transaction t
		                          WHERE t.run_id = g.run_id AND t.ts >= g.seg AND t.ts <= seg.first_s)
		            THEN '-infinity'::timestamptz ELSE g.s END AS s,
		       CASE WHEN (SELECT sn.segment FROM chronicle.snapshot sn
		                   WHERE sn.ts >= (SELECT min(t.ts) FROM chronicle.app_transaction t
		                                    WHERE t.run_id = g.run_id AND t.ts > seg.last_e)
		                   ORDER BY sn.ts LIMIT 1) = g.seg
		            THEN 'infinity'::timestamptz ELSE g.e END AS e
		  FROM (SELECT txr.run_id, iv.seg, min(txr.s) AS s, max(txr.e) AS e
		          FROM txr JOIN iv ON iv.i = txr.i
		         GROUP BY txr.run_id, iv.seg) g
		  JOIN seg ON seg.seg = g.seg
	), ag AS MATERIALIZED (
		-- Aggregate rows of runs without per-transaction rows, in the
		-- interval holding their end; complete unless the first of a run's
		-- unbroken sequence.
		SELECT iv.i, a.interval_start AS a_start,
		       a.interval_start + a.interval_secs * interval '1 second' AS a_end,
		       a.num_transactions, a.sum_latency_us, a.min_latency_us, a.max_latency_us, a.sum_lag_us,
		       a.skipped AS a_skipped,
		       coalesce(a.serialization_failures, 0) + coalesce(a.deadlock_failures, 0) AS a_failed,
		       a.retries AS a_retries,
		       EXISTS (SELECT FROM chronicle.app_interval p
		                WHERE p.run_id = a.run_id
		                  AND p.interval_start = a.interval_start - a.interval_secs * interval '1 second') AS complete
		  FROM chronicle.app_interval a
		  JOIN iv ON iv.i = width_bucket(a.interval_start + a.interval_secs * interval '1 second'
		                                 - interval '1 microsecond', v_bounds)
		 WHERE a.interval_start + a.interval_secs * interval '1 second' > v_lo
		   AND a.interval_start < v_hi
		   AND (v_run IS NULL OR a.run_id = v_run)
		   AND NOT EXISTS (SELECT FROM chronicle.app_transaction t WHERE t.run_id = a.run_id)
	), agi AS (
		SELECT ag.i,
		       sum(ag.num_transactions) AS n,
		       coalesce(sum(ag.num_transactions) FILTER (WHERE ag.complete), 0) AS n_rate,
		       sum(ag.sum_latency_us) AS lat_sum,
		       min(ag.min_latency_us) AS lat_min,
		       max(ag.max_latency_us) AS lat_max,
		       sum(ag.sum_lag_us) AS lag_sum,
		       coalesce(sum(ag.num_transactions) FILTER (WHERE ag.sum_lag_us IS NOT NULL), 0) AS lag_n,
		       sum(ag.a_skipped) AS n_skipped,
		       sum(ag.a_failed) AS n_failed,
		       sum(ag.a_retries) AS n_retries
		  FROM ag
		 GROUP BY ag.i
	), piece AS (
		SELECT iv.i, greatest(sp.s, iv.s_ts) AS lo, least(sp.e, iv.e_ts) AS hi
		  FROM iv JOIN span sp ON sp.seg = iv.seg
		 WHERE sp.s < iv.e_ts AND sp.e > iv.s_ts
		UNION ALL
		SELECT ag.i, ag.a_start, ag.a_end FROM ag WHERE ag.complete
	), cov AS (
		-- the length of the union of the pieces of each interval
		SELECT p.i, sum(greatest(extract(epoch FROM p.hi - greatest(p.lo, p.prev_hi)), 0))::float8 AS secs
		  FROM (SELECT p1.*, max(p1.hi) OVER (PARTITION BY p1.i ORDER BY p1.lo, p1.hi
		                                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_hi
		          FROM piece p1) p
		 GROUP BY p.i
	)
	SELECT iv.s_ts, iv.e_ts, iv.seg,
	       (coalesce(txi.n, 0) + coalesce(agi.n, 0))::bigint,
	       CASE WHEN coalesce(txi.n, 0) + coalesce(agi.n, 0) = 0 THEN 0
	            ELSE (coalesce(txi.n, 0) + coalesce(agi.n_rate, 0)) / nullif(cov.secs, 0) END,
	       (coalesce(txi.lat_sum, 0) + coalesce(agi.lat_sum, 0))
	           / nullif(coalesce(txi.n, 0) + coalesce(agi.n, 0), 0) / 1000.0,
	       CASE WHEN coalesce(agi.n, 0) = 0 THEN txi.lat_p[1]::float8 / 1000.0 END,
	       CASE WHEN coalesce(agi.n, 0) = 0 THEN txi.lat_p[2]::float8 / 1000.0 END,
	       CASE WHEN coalesce(agi.n, 0) = 0 THEN txi.lat_p[3]::float8 / 1000.0 END,
	       greatest(txi.lat_max, agi.lat_max) / 1000.0,
	       (coalesce(txi.lag_sum, 0) + coalesce(agi.lag_sum, 0))
	           / nullif(coalesce(txi.lag_n, 0) + coalesce(agi.lag_n, 0), 0) / 1000.0,
	       (coalesce(txi.n_skipped, 0) + coalesce(agi.n_skipped, 0))::bigint,
	       (coalesce(txi.n_failed, 0) + coalesce(agi.n_failed, 0))::bigint,
	       CASE WHEN txi.n_retries IS NOT NULL OR agi.n_retries IS NOT NULL
	            THEN (coalesce(txi.n_retries, 0) + coalesce(agi.n_retries, 0))::bigint END,
	       coalesce(cov.secs, 0),
	       least(txi.lat_min, agi.lat_min) / 1000.0,
	       CASE WHEN txi.i IS NOT NULL AND agi.i IS NOT NULL THEN 'mixed'
	            WHEN txi.i IS NOT NULL THEN 'transactions'
	            WHEN agi.i IS NOT NULL THEN 'aggregates' END
	  FROM iv
	  LEFT JOIN txi ON txi.i = iv.i
	  LEFT JOIN agi ON agi.i = iv.i
	  LEFT JOIN cov ON cov.i = iv.i
	 ORDER BY iv.s_ts;
END;
$$;
COMMENT ON FUNCTION chronicle.app_intervals(timestamptz, timestamptz, text) IS
	'Per snapshot interval (start, end] ending in (from, to]: pgbench transactions, TPS over the seconds the run was active in it, latency mean/min/max and nearest-rank p50/p90/p99 (ms), lag, skipped, failures; from the per-transaction log, else the aggregate log';

CREATE FUNCTION chronicle.app_intervals(run_label text)
RETURNS TABLE (
	interval_start  timestamptz,
	interval_end    timestamptz,
	segment         timestamptz,
	transactions    bigint,
	tps             float8,
	latency_mean_ms float8,
	latency_p50_ms  float8,
	latency_p90_ms  float8,
	latency_p99_ms  float8,
	latency_max_ms  float8,
	lag_mean_ms     float8,
	skipped         bigint,
	failures        bigint,
	retries         bigint,
	active_seconds  float8,
	latency_min_ms  float8,
	basis           text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT a.*
	  FROM chronicle.run r,
	       chronicle.app_intervals(r.started, coalesce(r.ended, now()), r.label) a
	 WHERE r.run_id = chronicle.app_run_id(run_label);
$$;
COMMENT ON FUNCTION chronicle.app_intervals(text) IS
	'chronicle.app_intervals() over the window of a run (the intervals ending in (started, ended]), its transactions only';

CREATE FUNCTION chronicle._app_summary(p_run integer)
RETURNS TABLE (
	transactions    bigint,
	seconds         float8,
	tps             float8,
	latency_mean_ms float8,
	latency_p50_ms  float8,
	latency_p90_ms  float8,
	latency_p99_ms  float8,
	latency_max_ms  float8,
	lag_mean_ms     float8,
	skipped         bigint,
	failures        bigint,
	latency_min_ms  float8,
	basis           text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
	v_first timestamptz;
	v_last timestamptz;
	v_thr timestamptz[];
BEGIN
	SELECT min(t.ts), max(t.ts) INTO v_first, v_last
	  FROM chronicle.app_transaction t WHERE t.run_id = p_run;
	IF v_first IS NOT NULL THEN
		-- The recordings around the transactions: each segment's first and
		-- (just after) last snapshot, so that width_bucket() numbers the
		-- segments and the gaps between them.
		SELECT array_agg(b.ts ORDER BY b.ts) INTO v_thr
		  FROM (SELECT min(sn.ts) AS f, max(sn.ts) AS l
		          FROM chronicle.snapshot sn
		         WHERE sn.ts >= coalesce((SELECT s2.segment FROM chronicle.snapshot s2
		                                   WHERE s2.ts <= v_first ORDER BY s2.ts DESC LIMIT 1), v_first)
		           AND sn.ts <= coalesce((SELECT s3.ts FROM chronicle.snapshot s3
		                                   WHERE s3.ts >= v_last ORDER BY s3.ts LIMIT 1), v_last)
		         GROUP BY sn.segment) g,
		       LATERAL (VALUES (g.f), (g.l + interval '1 microsecond')) AS b(ts);
		RETURN QUERY
		WITH piece AS (
			SELECT min(t.ts - coalesce(t.latency_us, 0) * interval '1 microsecond') AS s, max(t.ts) AS e
			  FROM chronicle.app_transaction t
			 WHERE t.run_id = p_run
			 GROUP BY width_bucket(t.ts, v_thr)
		), span AS (
			-- the length of the union of the pieces
			SELECT sum(greatest(extract(epoch FROM p.e - greatest(p.s, p.prev_e)), 0))::float8 AS secs
			  FROM (SELECT p1.*, max(p1.e) OVER (ORDER BY p1.s, p1.e
			                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_e
			          FROM piece p1) p
		), st AS (
			SELECT count(*) FILTER (WHERE t.status = 'ok') AS n,
			       avg(t.latency_us) FILTER (WHERE t.status = 'ok')::float8 AS lat_mean,
			       min(t.latency_us) FILTER (WHERE t.status = 'ok')::float8 AS lat_min,
			       max(t.latency_us) FILTER (WHERE t.status = 'ok')::float8 AS lat_max,
			       percentile_disc(ARRAY[0.5, 0.9, 0.99]::float8[]) WITHIN GROUP (ORDER BY t.latency_us)
			           FILTER (WHERE t.status = 'ok') AS lat_p,
			       avg(t.lag_us) FILTER (WHERE t.status = 'ok')::float8 AS lag_mean,
			       count(*) FILTER (WHERE t.status = 'skipped') AS n_skipped,
			       count(*) FILTER (WHERE t.status NOT IN ('ok', 'skipped')) AS n_failed
			  FROM chronicle.app_transaction t
			 WHERE t.run_id = p_run
		)
		SELECT st.n, span.secs, st.n / nullif(span.secs, 0),
		       st.lat_mean / 1000.0,
		       st.lat_p[1]::float8 / 1000.0, st.lat_p[2]::float8 / 1000.0, st.lat_p[3]::float8 / 1000.0,
		       st.lat_max / 1000.0, st.lag_mean / 1000.0,
		       st.n_skipped, st.n_failed, st.lat_min / 1000.0, 'transactions'::text
		  FROM st, span;
		RETURN;
	END IF;

	IF EXISTS (SELECT FROM chronicle.app_interval a WHERE a.run_id = p_run) THEN
		RETURN QUERY
		WITH a AS (
			SELECT a1.*,
			       EXISTS (SELECT FROM chronicle.app_interval p
			                WHERE p.run_id = a1.run_id
			                  AND p.interval_start = a1.interval_start - a1.interval_secs * interval '1 second') AS complete
			  FROM chronicle.app_interval a1
			 WHERE a1.run_id = p_run
		)
		SELECT sum(a.num_transactions)::bigint,
		       (sum(a.interval_secs) FILTER (WHERE a.complete))::float8,
		       (sum(a.num_transactions) FILTER (WHERE a.complete)
		           / nullif(sum(a.interval_secs) FILTER (WHERE a.complete), 0))::float8,
		       sum(a.sum_latency_us) / nullif(sum(a.num_transactions), 0) / 1000.0,
		       NULL::float8, NULL::float8, NULL::float8,
		       max(a.max_latency_us) / 1000.0,
		       sum(a.sum_lag_us) / nullif(sum(a.num_transactions) FILTER (WHERE a.sum_lag_us IS NOT NULL), 0) / 1000.0,
		       coalesce(sum(a.skipped), 0)::bigint,
		       coalesce(sum(coalesce(a.serialization_failures, 0) + coalesce(a.deadlock_failures, 0)), 0)::bigint,
		       min(a.min_latency_us) / 1000.0,
		       'aggregates'::text
		  FROM a;
		RETURN;
	END IF;

	RETURN QUERY SELECT 0::bigint, NULL::float8, NULL::float8, NULL::float8, NULL::float8, NULL::float8,
	                    NULL::float8, NULL::float8, NULL::float8, 0::bigint, 0::bigint, NULL::float8, NULL::text;
END;
$$;

CREATE FUNCTION chronicle.app_summary(run_label text)
RETURNS TABLE (
	transactions    bigint,
	seconds         float8,
	tps             float8,
	latency_mean_ms float8,
	latency_p50_ms  float8,
	latency_p90_ms  float8,
	latency_p99_ms  float8,
	latency_max_ms  float8,
	lag_mean_ms     float8,
	skipped         bigint,
	failures        bigint,
	latency_min_ms  float8,
	basis           text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT * FROM chronicle._app_summary(chronicle.app_run_id(run_label));
$$;
COMMENT ON FUNCTION chronicle.app_summary(text) IS
	'Transactions, seconds (from the first transaction''s start, not across gaps), TPS, latency mean/min/max and nearest-rank percentiles of a whole run, from its per-transaction log, else its aggregate log';

REVOKE ALL ON FUNCTION chronicle.app_intervals(timestamptz, timestamptz, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.app_intervals(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._app_summary(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.app_summary(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.app_intervals(timestamptz, timestamptz, text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.app_intervals(text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._app_summary(integer) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.app_summary(text) TO pg_monitor, pg_read_all_stats;

-- The timeline's pgbench columns are app_intervals()'s; summary()'s are
-- app_summary()'s.
CREATE OR REPLACE FUNCTION chronicle.timeline(from_ts timestamptz, to_ts timestamptz, waits boolean DEFAULT true,
                                   detail boolean DEFAULT false)
RETURNS TABLE (
	interval_start timestamptz, interval_end timestamptz, seconds float8,
	commits_per_s float8, rollbacks_per_s float8, hit_ratio float8,
	reads_per_s float8, writes_per_s float8, extends_per_s float8, fsyncs_per_s float8,
	read_bytes_per_s float8, write_bytes_per_s float8, extend_bytes_per_s float8,
	client_write_bytes_per_s float8, checkpointer_write_bytes_per_s float8,
	bgwriter_write_bytes_per_s float8, autovacuum_write_bytes_per_s float8,
	io_by_backend jsonb,
	wal_bytes_per_s float8, wal_fpi_per_s float8, wal_records_per_s float8,
	checkpoints bigint, checkpoint_buffers_written bigint,
	buffers_used bigint, buffers_dirty bigint,
	mem_free_kb bigint, mem_available_kb bigint, mem_dirty_kb bigint, mem_writeback_kb bigint,
	active_processes float8, active_cpu float8, active_io float8, active_lwlock float8,
	active_lock float8, active_ipc float8, active_client float8, active_timeout float8,
	active_other float8, top_waits jsonb, wait_coverage float8,
	tps float8, latency_p50_ms float8, latency_p99_ms float8)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
SET work_mem = '256MB'
-- the engine's rows come in interval order: group them as they come
SET enable_hashagg = off
AS $$
#variable_conflict use_column
DECLARE
	has_app boolean;
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.timeline');
	IF waits IS NULL OR detail IS NULL THEN
		RAISE EXCEPTION 'chronicle.timeline: waits and detail must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
			      HINT = 'waits => false leaves the wait columns out; detail => true adds io_by_backend and top_waits.';
	END IF;
	has_app := EXISTS (SELECT FROM chronicle.app_transaction t WHERE t.ts > from_ts AND t.ts <= to_ts)
	           OR EXISTS (SELECT FROM chronicle.app_interval a
	                       WHERE a.interval_start < to_ts
	                         AND a.interval_start + a.interval_secs * interval '1 second' > from_ts);
	RETURN QUERY
	WITH iv AS MATERIALIZED (SELECT * FROM chronicle.intervals(from_ts, to_ts)),
	has AS MATERIALIZED (
		SELECT EXISTS (SELECT FROM chronicle.database_history) AS db,
		       EXISTS (SELECT FROM chronicle.io_history) AS io,
		       timeline.detail AND EXISTS (SELECT FROM chronicle.waits_history) AS waits
	),
	db AS (
		SELECT d.interval_end, d.xact_commit AS c, d.xact_rollback AS r,
		       d.blks_hit AS h, d.blks_read AS rd, d.reset AS rs
		  FROM chronicle._database_sums(from_ts, to_ts) d
	),
	io AS (
		SELECT i.interval_end, bool_or(i.reset) AS rs,
		       sum(i.reads) AS reads, sum(i.writes) AS writes, sum(i.extends) AS extends,
		       sum(i.fsyncs) AS fsyncs, sum(i.read_bytes) AS rb, sum(i.write_bytes) AS wb,
		       sum(i.extend_bytes) AS eb,
		       coalesce(sum(i.write_bytes) FILTER (WHERE i.grp = 'client backend'), 0) AS wb_client,
		       coalesce(sum(i.write_bytes) FILTER (WHERE i.grp = 'checkpointer'), 0) AS wb_ckpt,
		       coalesce(sum(i.write_bytes) FILTER (WHERE i.grp = 'background writer'), 0) AS wb_bgw,
		       coalesce(sum(i.write_bytes) FILTER (WHERE i.grp = 'autovacuum worker'), 0) AS wb_av,
		       CASE WHEN timeline.detail THEN jsonb_object_agg(i.grp, jsonb_build_object(
		           'reads_per_s', i.reads_per_s, 'writes_per_s', i.writes_per_s,
		           'extends_per_s', i.extends_per_s, 'fsyncs_per_s', coalesce(i.fsyncs_per_s, 0),
		           'read_bytes_per_s', i.read_bytes_per_s, 'write_bytes_per_s', i.write_bytes_per_s,
		           'extend_bytes_per_s', i.extend_bytes_per_s))
		           FILTER (WHERE coalesce(i.reads, 0) + coalesce(i.writes, 0) + coalesce(i.extends, 0)
		                         + coalesce(i.fsyncs, 0) > 0) END AS by_backend
		  FROM chronicle._io_sums(from_ts, to_ts, by => 'backend_type',
		                          exclude_cols => '{object}', exclude_vals => '{wal}') i
		 GROUP BY i.interval_end
	),
	wt AS (
		SELECT d.interval_end, d.wait_event_type || ':' || d.wait_event AS ev, sum(d.samples) AS n
		  FROM chronicle.wait_deltas(from_ts, to_ts, changed_only => true) d
		 WHERE timeline.detail
		   AND d.samples > 0 AND NOT (d.state = 'idle' OR d.wait_event_type = 'Activity')
		 GROUP BY d.interval_end, d.wait_event_type, d.wait_event
	),
	wr AS (
		SELECT w.*, row_number() OVER (PARTITION BY w.interval_end ORDER BY w.n DESC, w.ev) AS rk,
		       sum(w.n) OVER (PARTITION BY w.interval_end) AS total
		  FROM wt w
	),
	tw AS (
		SELECT w.interval_end,
		       jsonb_agg(jsonb_build_object('wait', w.ev, 'samples', w.n,
		                                    'share', round(w.n::numeric / w.total, 3)) ORDER BY w.rk)
		           FILTER (WHERE w.rk <= 3) AS top
		  FROM wr w
		 GROUP BY w.interval_end
	),
	ws AS (
		SELECT s.interval_end, s.ticks_due, s.ticks_taken,
		       s.active_cpu::float8 / nullif(s.ticks_taken, 0) AS cpu,
		       s.active_io::float8 / nullif(s.ticks_taken, 0) AS io,
		       s.active_lwlock::float8 / nullif(s.ticks_taken, 0) AS lwlock,
		       s.active_lock::float8 / nullif(s.ticks_taken, 0) AS lock,
		       s.active_ipc::float8 / nullif(s.ticks_taken, 0) AS ipc,
		       s.active_client::float8 / nullif(s.ticks_taken, 0) AS client,
		       s.active_timeout::float8 / nullif(s.ticks_taken, 0) AS timeout,
		       s.active_other::float8 / nullif(s.ticks_taken, 0) AS other
		  FROM chronicle.wait_sampler_deltas(from_ts, to_ts) s
		 WHERE timeline.waits
	),
	-- pgbench: app_intervals() of every run, the same intervals
	app AS (
		SELECT a.interval_end, a.tps, a.latency_p50_ms AS p50, a.latency_p99_ms AS p99
		  FROM chronicle.app_intervals(from_ts, to_ts) a
		 WHERE has_app
	)
	SELECT iv.interval_start, iv.interval_end, iv.seconds,
	       CASE WHEN NOT has.db OR db.rs THEN NULL ELSE coalesce(db.c, 0) / iv.seconds END,
	       CASE WHEN NOT has.db OR db.rs THEN NULL ELSE coalesce(db.r, 0) / iv.seconds END,
	       CASE WHEN db.rs THEN NULL ELSE db.h::float8 / nullif(db.h + db.rd, 0) END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.reads, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.writes, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.extends, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.fsyncs, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.rb, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.wb, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.eb, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.wb_client, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.wb_ckpt, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.wb_bgw, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.wb_av, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs OR NOT timeline.detail THEN NULL ELSE coalesce(io.by_backend, '{}') END,
	       wal.wal_bytes_per_s, wal.wal_fpi_per_s, wal.wal_records_per_s,
	       coalesce(ck.num_done, ck.num_timed + ck.num_requested),
	       ck.buffers_written,
	       bu.buffers_used, bu.buffers_dirty,
	       mem.mem_free, mem.mem_available, mem.dirty, mem.writeback,
	       ws.cpu + ws.io + ws.lwlock + ws.lock + ws.ipc + ws.client + ws.timeout + ws.other,
	       ws.cpu, ws.io, ws.lwlock, ws.lock, ws.ipc, ws.client, ws.timeout, ws.other,
	       CASE WHEN has.waits THEN coalesce(tw.top, '[]') END,
	       ws.ticks_taken::float8 / nullif(ws.ticks_due, 0),
	       CASE WHEN has_app THEN app.tps END,
	       app.p50, app.p99
	  FROM iv
	 CROSS JOIN has
	  LEFT JOIN db ON db.interval_end = iv.interval_end
	  LEFT JOIN io ON io.interval_end = iv.interval_end
	  LEFT JOIN chronicle.wal_deltas(from_ts, to_ts) wal ON wal.interval_end = iv.interval_end
	  LEFT JOIN chronicle.checkpointer_deltas(from_ts, to_ts) ck ON ck.interval_end = iv.interval_end
	  LEFT JOIN chronicle.buffers_values(from_ts, to_ts) bu ON bu.interval_end = iv.interval_end
	  LEFT JOIN chronicle.os_memory_deltas(from_ts, to_ts) mem ON mem.interval_end = iv.interval_end
	  LEFT JOIN ws ON ws.interval_end = iv.interval_end
	  LEFT JOIN tw ON tw.interval_end = iv.interval_end
	  LEFT JOIN app ON app.interval_end = iv.interval_end
	 ORDER BY iv.interval_end;
END;
$$;

CREATE OR REPLACE FUNCTION chronicle.summary(from_ts timestamptz, to_ts timestamptz, run_id integer DEFAULT NULL)
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
		-- the sampler's per-class counts of active processes
		SELECT sum(w.active_cpu + w.active_io + w.active_lwlock + w.active_lock + w.active_ipc
		           + w.active_client + w.active_timeout + w.active_other)::float8 AS n,
		       sum(w.ticks_taken)::float8 AS ticks,
		       sum(w.ticks_taken)::float8 / nullif(sum(w.ticks_due), 0) AS coverage
		  FROM chronicle.wait_sampler_totals(from_ts, to_ts) w
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
