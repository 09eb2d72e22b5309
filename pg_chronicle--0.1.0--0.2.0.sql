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
	run text DEFAULT NULL)
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
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.app_intervals');
	IF run IS NOT NULL THEN
		v_run := chronicle._run_id(run, 'chronicle.app_intervals');
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

CREATE FUNCTION chronicle.app_intervals(run text)
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
	 WHERE r.run_id = chronicle._run_id(run, 'chronicle.app_intervals');
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

CREATE FUNCTION chronicle.app_summary(run text)
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
	SELECT * FROM chronicle._app_summary(chronicle._run_id(run, 'chronicle.app_summary'));
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
-- (chronicle.timeline(): defined once, at the end of this script)

-- (chronicle.summary(): defined once, at the end of this script)

COMMENT ON FUNCTION chronicle.summary(timestamptz, timestamptz, integer) IS
	'Headline numbers of a window, one row per metric (pgbench numbers of the run when a run_id is given, as app_summary() gives them)';

-- ----------------------------------------------------------------------
-- Right numbers: waits (issue 12, defects 1, 6 and 8)
--
-- Keys born at zero (the wait sampler's, databases) count their first
-- interval from zero: chronicle._deltas() gains born_at_zero, the wait and
-- database functions pass it, their totals' shortcut (_<source>_ends)
-- starts such a key at zero.  Database time: the sampler's active_* count
-- sessions only (client backends, walsenders, autovacuum and parallel
-- workers), not idle, main-loop or throttle waits; background processes at
-- work go to the new background_active; chronicle._wait_activity() says
-- the same of a recorded key for wait_profile(), wait_profile_series() and
-- the timeline's top_waits; parallel workers have their own backend type.
-- Totals keep NULL where the view shows NULL (untracked cells).
ALTER TABLE chronicle.wait_sampler_history ADD COLUMN background_active bigint;
COMMENT ON TABLE chronicle.wait_sampler_history IS
	'Wait sampler ticks due and taken, samples dropped on overflow, samples of active sessions (database time) by wait class and of background processes at work (cumulative)';

DROP FUNCTION chronicle._deltas(regclass, timestamptz, timestamptz, text[], text[], text, text[], text, text[], text, text[], text[], text[], boolean, text[], text[], text[]);
CREATE FUNCTION chronicle._deltas(tbl regclass, from_ts timestamptz, to_ts timestamptz,
	keys text[], vals text[], kinds text, attrs text[], reset_col text,
	bytes_ops text[], bytes_unit text, per_op text[],
	filter_cols text[], filter_vals text[], changed_only boolean,
	group_by text[] DEFAULT NULL, exclude_cols text[] DEFAULT '{}', exclude_vals text[] DEFAULT '{}',
	born_at_zero boolean DEFAULT false)
RETURNS SETOF record
LANGUAGE C STABLE
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_deltas';

REVOKE ALL ON FUNCTION chronicle._deltas(regclass, timestamptz, timestamptz, text[], text[], text, text[], text, text[], text, text[], text[], text[], boolean, text[], text[], text[], boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION chronicle._check_name(caller text, kind text, value text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	valid text[];
BEGIN
	IF value IS NULL THEN
		RETURN;
	END IF;
	valid := CASE kind
		WHEN 'backend_type' THEN ARRAY['autovacuum launcher', 'autovacuum worker', 'background worker',
			'background writer', 'checkpointer', 'client backend', 'io worker', 'slotsync worker',
			'standalone backend', 'startup', 'walreceiver', 'walsender', 'walsummarizer', 'walwriter',
			'archiver', 'logger', 'parallel worker']
		WHEN 'object' THEN ARRAY['relation', 'temp relation', 'wal']
		WHEN 'context' THEN ARRAY['bulkread', 'bulkwrite', 'init', 'normal', 'vacuum']
		WHEN 'wait_event_type' THEN ARRAY['CPU', 'Activity', 'BufferPin', 'Client', 'Extension', 'InjectionPoint',
			'IO', 'IPC', 'Lock', 'LWLock', 'Timeout']
		WHEN 'state' THEN ARRAY['', 'active', 'idle', 'idle in transaction',
			'idle in transaction (aborted)', 'fastpath function call', 'disabled']
		ELSE NULL END;
	IF valid IS NULL THEN
		RAISE EXCEPTION 'chronicle._check_name: unknown kind %', kind;
	END IF;
	IF NOT value = ANY (valid) THEN
		RAISE EXCEPTION '%: unknown % "%"', caller, kind, value
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = format('Valid values: %s; NULL means all.', array_to_string(valid, ', '));
	END IF;
END;
$$;

CREATE OR REPLACE FUNCTION chronicle.io_totals(from_ts timestamptz, to_ts timestamptz, for_backend_type text DEFAULT NULL, for_object text DEFAULT NULL, for_context text DEFAULT NULL)
RETURNS TABLE (window_start timestamptz, window_end timestamptz, seconds float8, intervals bigint, backend_type text, object text, context text, op_bytes bigint, resets bigint, reads numeric, reads_per_s float8, read_bytes numeric, read_bytes_per_s float8, read_time float8, read_time_per_s float8, writes numeric, writes_per_s float8, write_bytes numeric, write_bytes_per_s float8, write_time float8, write_time_per_s float8, writebacks numeric, writebacks_per_s float8, writeback_time float8, writeback_time_per_s float8, extends numeric, extends_per_s float8, extend_bytes numeric, extend_bytes_per_s float8, extend_time float8, extend_time_per_s float8, hits numeric, hits_per_s float8, evictions numeric, evictions_per_s float8, reuses numeric, reuses_per_s float8, fsyncs numeric, fsyncs_per_s float8, fsync_time float8, fsync_time_per_s float8, ms_per_read float8, ms_per_write float8, ms_per_writeback float8, ms_per_extend float8, ms_per_fsync float8)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
	secs float8;
	n bigint;
	ws timestamptz;
	we timestamptz;
BEGIN
	PERFORM chronicle._check_range($1, $2, 'chronicle.io_totals');
	PERFORM chronicle._check_name('chronicle.io_totals', 'backend_type', $3);
	PERFORM chronicle._check_name('chronicle.io_totals', 'object', $4);
	PERFORM chronicle._check_name('chronicle.io_totals', 'context', $5);
	SELECT * INTO secs, n, ws, we FROM chronicle._window($1, $2);
	-- Without a reset in the window, the deltas of a key telescope: its
	-- total is its last value minus its baseline in each segment, two
	-- index probes per key instead of every row of the window.
	RETURN QUERY
	WITH e AS MATERIALIZED (
		SELECT * FROM chronicle._io_ends($1, $2) e
		 WHERE true
		   AND ($3 IS NULL OR e.backend_type = $3)
		   AND ($4 IS NULL OR e.object = $4)
		   AND ($5 IS NULL OR e.context = $5)
	)
	SELECT ws, we, secs, n, e.backend_type, e.object, e.context,
	       max(e.op_bytes),
	       0::bigint,
	       sum(e.l_reads - e.b_reads)::numeric,
	       sum(e.l_reads - e.b_reads)::float8 / secs,
	       sum(coalesce(e.l_read_bytes - e.b_read_bytes, (e.l_reads - e.b_reads) * e.op_bytes))::numeric,
	       sum(coalesce(e.l_read_bytes - e.b_read_bytes, (e.l_reads - e.b_reads) * e.op_bytes))::float8 / secs,
	       sum(e.l_read_time - e.b_read_time),
	       sum(e.l_read_time - e.b_read_time)::float8 / secs,
	       sum(e.l_writes - e.b_writes)::numeric,
	       sum(e.l_writes - e.b_writes)::float8 / secs,
	       sum(coalesce(e.l_write_bytes - e.b_write_bytes, (e.l_writes - e.b_writes) * e.op_bytes))::numeric,
	       sum(coalesce(e.l_write_bytes - e.b_write_bytes, (e.l_writes - e.b_writes) * e.op_bytes))::float8 / secs,
	       sum(e.l_write_time - e.b_write_time),
	       sum(e.l_write_time - e.b_write_time)::float8 / secs,
	       sum(e.l_writebacks - e.b_writebacks)::numeric,
	       sum(e.l_writebacks - e.b_writebacks)::float8 / secs,
	       sum(e.l_writeback_time - e.b_writeback_time),
	       sum(e.l_writeback_time - e.b_writeback_time)::float8 / secs,
	       sum(e.l_extends - e.b_extends)::numeric,
	       sum(e.l_extends - e.b_extends)::float8 / secs,
	       sum(coalesce(e.l_extend_bytes - e.b_extend_bytes, (e.l_extends - e.b_extends) * e.op_bytes))::numeric,
	       sum(coalesce(e.l_extend_bytes - e.b_extend_bytes, (e.l_extends - e.b_extends) * e.op_bytes))::float8 / secs,
	       sum(e.l_extend_time - e.b_extend_time),
	       sum(e.l_extend_time - e.b_extend_time)::float8 / secs,
	       sum(e.l_hits - e.b_hits)::numeric,
	       sum(e.l_hits - e.b_hits)::float8 / secs,
	       sum(e.l_evictions - e.b_evictions)::numeric,
	       sum(e.l_evictions - e.b_evictions)::float8 / secs,
	       sum(e.l_reuses - e.b_reuses)::numeric,
	       sum(e.l_reuses - e.b_reuses)::float8 / secs,
	       sum(e.l_fsyncs - e.b_fsyncs)::numeric,
	       sum(e.l_fsyncs - e.b_fsyncs)::float8 / secs,
	       sum(e.l_fsync_time - e.b_fsync_time),
	       sum(e.l_fsync_time - e.b_fsync_time)::float8 / secs,
	       sum(e.l_read_time - e.b_read_time)::float8 / nullif(sum(e.l_reads - e.b_reads), 0),
	       sum(e.l_write_time - e.b_write_time)::float8 / nullif(sum(e.l_writes - e.b_writes), 0),
	       sum(e.l_writeback_time - e.b_writeback_time)::float8 / nullif(sum(e.l_writebacks - e.b_writebacks), 0),
	       sum(e.l_extend_time - e.b_extend_time)::float8 / nullif(sum(e.l_extends - e.b_extends), 0),
	       sum(e.l_fsync_time - e.b_fsync_time)::float8 / nullif(sum(e.l_fsyncs - e.b_fsyncs), 0)
	  FROM e
	 WHERE NOT EXISTS (SELECT FROM e r WHERE r.reset)
	 GROUP BY e.backend_type, e.object, e.context
	 ORDER BY e.backend_type, e.object, e.context;
	IF FOUND THEN
		RETURN;
	END IF;
	RETURN QUERY
	SELECT ws, we, secs, n, k.backend_type, k.object, k.context,
	       coalesce(max(d.op_bytes), max(k.op_bytes)),
	       count(*) FILTER (WHERE d.reset),
	       coalesce(sum(d.reads), max(k.reads - k.reads))::numeric,
	       coalesce(sum(d.reads), max(k.reads - k.reads))::float8 / secs,
	       coalesce(sum(d.read_bytes), max(coalesce(k.read_bytes - k.read_bytes, (k.reads - k.reads) * k.op_bytes)))::numeric,
	       coalesce(sum(d.read_bytes), max(coalesce(k.read_bytes - k.read_bytes, (k.reads - k.reads) * k.op_bytes)))::float8 / secs,
	       coalesce(sum(d.read_time), max(k.read_time - k.read_time)),
	       coalesce(sum(d.read_time), max(k.read_time - k.read_time))::float8 / secs,
	       coalesce(sum(d.writes), max(k.writes - k.writes))::numeric,
	       coalesce(sum(d.writes), max(k.writes - k.writes))::float8 / secs,
	       coalesce(sum(d.write_bytes), max(coalesce(k.write_bytes - k.write_bytes, (k.writes - k.writes) * k.op_bytes)))::numeric,
	       coalesce(sum(d.write_bytes), max(coalesce(k.write_bytes - k.write_bytes, (k.writes - k.writes) * k.op_bytes)))::float8 / secs,
	       coalesce(sum(d.write_time), max(k.write_time - k.write_time)),
	       coalesce(sum(d.write_time), max(k.write_time - k.write_time))::float8 / secs,
	       coalesce(sum(d.writebacks), max(k.writebacks - k.writebacks))::numeric,
	       coalesce(sum(d.writebacks), max(k.writebacks - k.writebacks))::float8 / secs,
	       coalesce(sum(d.writeback_time), max(k.writeback_time - k.writeback_time)),
	       coalesce(sum(d.writeback_time), max(k.writeback_time - k.writeback_time))::float8 / secs,
	       coalesce(sum(d.extends), max(k.extends - k.extends))::numeric,
	       coalesce(sum(d.extends), max(k.extends - k.extends))::float8 / secs,
	       coalesce(sum(d.extend_bytes), max(coalesce(k.extend_bytes - k.extend_bytes, (k.extends - k.extends) * k.op_bytes)))::numeric,
	       coalesce(sum(d.extend_bytes), max(coalesce(k.extend_bytes - k.extend_bytes, (k.extends - k.extends) * k.op_bytes)))::float8 / secs,
	       coalesce(sum(d.extend_time), max(k.extend_time - k.extend_time)),
	       coalesce(sum(d.extend_time), max(k.extend_time - k.extend_time))::float8 / secs,
	       coalesce(sum(d.hits), max(k.hits - k.hits))::numeric,
	       coalesce(sum(d.hits), max(k.hits - k.hits))::float8 / secs,
	       coalesce(sum(d.evictions), max(k.evictions - k.evictions))::numeric,
	       coalesce(sum(d.evictions), max(k.evictions - k.evictions))::float8 / secs,
	       coalesce(sum(d.reuses), max(k.reuses - k.reuses))::numeric,
	       coalesce(sum(d.reuses), max(k.reuses - k.reuses))::float8 / secs,
	       coalesce(sum(d.fsyncs), max(k.fsyncs - k.fsyncs))::numeric,
	       coalesce(sum(d.fsyncs), max(k.fsyncs - k.fsyncs))::float8 / secs,
	       coalesce(sum(d.fsync_time), max(k.fsync_time - k.fsync_time)),
	       coalesce(sum(d.fsync_time), max(k.fsync_time - k.fsync_time))::float8 / secs,
	       sum(d.read_time)::float8 / nullif(sum(d.reads), 0),
	       sum(d.write_time)::float8 / nullif(sum(d.writes), 0),
	       sum(d.writeback_time)::float8 / nullif(sum(d.writebacks), 0),
	       sum(d.extend_time)::float8 / nullif(sum(d.extends), 0),
	       sum(d.fsync_time)::float8 / nullif(sum(d.fsyncs), 0)
	  FROM (SELECT DISTINCT ON (kk.backend_type, kk.object, kk.context) kk.backend_type, kk.object, kk.context, kk.op_bytes, kk.reads, kk.read_bytes, kk.read_time, kk.writes, kk.write_bytes, kk.write_time, kk.writebacks, kk.writeback_time, kk.extends, kk.extend_bytes, kk.extend_time, kk.hits, kk.evictions, kk.reuses, kk.fsyncs, kk.fsync_time
	          FROM chronicle._io_keys($1, $2) kk
	         WHERE true
	           AND ($3 IS NULL OR kk.backend_type = $3)
	           AND ($4 IS NULL OR kk.object = $4)
	           AND ($5 IS NULL OR kk.context = $5)
	         ORDER BY kk.backend_type, kk.object, kk.context, kk.first_ts DESC) k
	  LEFT JOIN chronicle.io_deltas($1, $2, $3, $4, $5, changed_only => true) d
	    ON d.backend_type = k.backend_type AND d.object = k.object AND d.context = k.context
	 GROUP BY k.backend_type, k.object, k.context
	 ORDER BY k.backend_type, k.object, k.context;
END;
$fn$;

CREATE OR REPLACE FUNCTION chronicle._database_sums(from_ts timestamptz, to_ts timestamptz, for_datname text DEFAULT NULL)
RETURNS TABLE (interval_start timestamptz, interval_end timestamptz, seconds float8, reset boolean, xact_commit bigint, xact_commit_per_s float8, xact_rollback bigint, xact_rollback_per_s float8, blks_read bigint, blks_read_per_s float8, blks_hit bigint, blks_hit_per_s float8, tup_returned bigint, tup_returned_per_s float8, tup_fetched bigint, tup_fetched_per_s float8, tup_inserted bigint, tup_inserted_per_s float8, tup_updated bigint, tup_updated_per_s float8, tup_deleted bigint, tup_deleted_per_s float8, conflicts bigint, conflicts_per_s float8, temp_files bigint, temp_files_per_s float8, temp_bytes bigint, temp_bytes_per_s float8, deadlocks bigint, deadlocks_per_s float8, checksum_failures bigint, checksum_failures_per_s float8, blk_read_time float8, blk_read_time_per_s float8, blk_write_time float8, blk_write_time_per_s float8, session_time float8, session_time_per_s float8, active_time float8, active_time_per_s float8, idle_in_transaction_time float8, idle_in_transaction_time_per_s float8, sessions bigint, sessions_per_s float8, sessions_abandoned bigint, sessions_abandoned_per_s float8, sessions_fatal bigint, sessions_fatal_per_s float8, sessions_killed bigint, sessions_killed_per_s float8, parallel_workers_to_launch bigint, parallel_workers_to_launch_per_s float8, parallel_workers_launched bigint, parallel_workers_launched_per_s float8, ms_per_blk_read float8)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
SET work_mem = '256MB'
AS $fn$
#variable_conflict use_column
BEGIN
	RETURN QUERY
	SELECT * FROM chronicle._deltas('chronicle.database_history'::regclass, $1, $2,
		keys => ARRAY['datid']::text[],
		vals => ARRAY['xact_commit', 'xact_rollback', 'blks_read', 'blks_hit', 'tup_returned', 'tup_fetched', 'tup_inserted', 'tup_updated', 'tup_deleted', 'conflicts', 'temp_files', 'temp_bytes', 'deadlocks', 'checksum_failures', 'blk_read_time', 'blk_write_time', 'session_time', 'active_time', 'idle_in_transaction_time', 'sessions', 'sessions_abandoned', 'sessions_fatal', 'sessions_killed', 'parallel_workers_to_launch', 'parallel_workers_launched']::text[],
		kinds => 'cccccccccccccctttttcccccc',
		attrs => ARRAY['datname']::text[],
		reset_col => 'stats_reset',
		bytes_ops => ARRAY[NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL]::text[],
		bytes_unit => NULL,
		per_op => ARRAY['blk_read_time', 'blks_read']::text[],
		filter_cols => ARRAY['datname']::text[],
		filter_vals => ARRAY[$3]::text[],
		changed_only => true, group_by => ARRAY[]::text[],
		born_at_zero => true)
	  AS d(interval_start timestamptz, interval_end timestamptz, seconds float8, reset boolean, xact_commit bigint, xact_commit_per_s float8, xact_rollback bigint, xact_rollback_per_s float8, blks_read bigint, blks_read_per_s float8, blks_hit bigint, blks_hit_per_s float8, tup_returned bigint, tup_returned_per_s float8, tup_fetched bigint, tup_fetched_per_s float8, tup_inserted bigint, tup_inserted_per_s float8, tup_updated bigint, tup_updated_per_s float8, tup_deleted bigint, tup_deleted_per_s float8, conflicts bigint, conflicts_per_s float8, temp_files bigint, temp_files_per_s float8, temp_bytes bigint, temp_bytes_per_s float8, deadlocks bigint, deadlocks_per_s float8, checksum_failures bigint, checksum_failures_per_s float8, blk_read_time float8, blk_read_time_per_s float8, blk_write_time float8, blk_write_time_per_s float8, session_time float8, session_time_per_s float8, active_time float8, active_time_per_s float8, idle_in_transaction_time float8, idle_in_transaction_time_per_s float8, sessions bigint, sessions_per_s float8, sessions_abandoned bigint, sessions_abandoned_per_s float8, sessions_fatal bigint, sessions_fatal_per_s float8, sessions_killed bigint, sessions_killed_per_s float8, parallel_workers_to_launch bigint, parallel_workers_to_launch_per_s float8, parallel_workers_launched bigint, parallel_workers_launched_per_s float8, ms_per_blk_read float8);
END;
$fn$;

CREATE OR REPLACE FUNCTION chronicle.database_deltas(from_ts timestamptz, to_ts timestamptz, for_datname text DEFAULT NULL, changed_only boolean DEFAULT false)
RETURNS TABLE (interval_start timestamptz, interval_end timestamptz, seconds float8, datid oid, datname text, reset boolean, xact_commit bigint, xact_commit_per_s float8, xact_rollback bigint, xact_rollback_per_s float8, blks_read bigint, blks_read_per_s float8, blks_hit bigint, blks_hit_per_s float8, tup_returned bigint, tup_returned_per_s float8, tup_fetched bigint, tup_fetched_per_s float8, tup_inserted bigint, tup_inserted_per_s float8, tup_updated bigint, tup_updated_per_s float8, tup_deleted bigint, tup_deleted_per_s float8, conflicts bigint, conflicts_per_s float8, temp_files bigint, temp_files_per_s float8, temp_bytes bigint, temp_bytes_per_s float8, deadlocks bigint, deadlocks_per_s float8, checksum_failures bigint, checksum_failures_per_s float8, blk_read_time float8, blk_read_time_per_s float8, blk_write_time float8, blk_write_time_per_s float8, session_time float8, session_time_per_s float8, active_time float8, active_time_per_s float8, idle_in_transaction_time float8, idle_in_transaction_time_per_s float8, sessions bigint, sessions_per_s float8, sessions_abandoned bigint, sessions_abandoned_per_s float8, sessions_fatal bigint, sessions_fatal_per_s float8, sessions_killed bigint, sessions_killed_per_s float8, parallel_workers_to_launch bigint, parallel_workers_to_launch_per_s float8, parallel_workers_launched bigint, parallel_workers_launched_per_s float8, ms_per_blk_read float8)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
SET work_mem = '256MB'
AS $fn$
#variable_conflict use_column
BEGIN
	PERFORM chronicle._check_range($1, $2, 'chronicle.database_deltas');
	PERFORM chronicle._check_datname('chronicle.database_deltas', $3);
	RETURN QUERY
	SELECT * FROM chronicle._deltas('chronicle.database_history'::regclass, $1, $2,
		keys => ARRAY['datid']::text[],
		vals => ARRAY['xact_commit', 'xact_rollback', 'blks_read', 'blks_hit', 'tup_returned', 'tup_fetched', 'tup_inserted', 'tup_updated', 'tup_deleted', 'conflicts', 'temp_files', 'temp_bytes', 'deadlocks', 'checksum_failures', 'blk_read_time', 'blk_write_time', 'session_time', 'active_time', 'idle_in_transaction_time', 'sessions', 'sessions_abandoned', 'sessions_fatal', 'sessions_killed', 'parallel_workers_to_launch', 'parallel_workers_launched']::text[],
		kinds => 'cccccccccccccctttttcccccc',
		attrs => ARRAY['datname']::text[],
		reset_col => 'stats_reset',
		bytes_ops => ARRAY[NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL]::text[],
		bytes_unit => NULL,
		per_op => ARRAY['blk_read_time', 'blks_read']::text[],
		filter_cols => ARRAY['datname']::text[],
		filter_vals => ARRAY[$3]::text[],
		changed_only => $4,
		born_at_zero => true)
	  AS d(interval_start timestamptz, interval_end timestamptz, seconds float8, datid oid, datname text, reset boolean, xact_commit bigint, xact_commit_per_s float8, xact_rollback bigint, xact_rollback_per_s float8, blks_read bigint, blks_read_per_s float8, blks_hit bigint, blks_hit_per_s float8, tup_returned bigint, tup_returned_per_s float8, tup_fetched bigint, tup_fetched_per_s float8, tup_inserted bigint, tup_inserted_per_s float8, tup_updated bigint, tup_updated_per_s float8, tup_deleted bigint, tup_deleted_per_s float8, conflicts bigint, conflicts_per_s float8, temp_files bigint, temp_files_per_s float8, temp_bytes bigint, temp_bytes_per_s float8, deadlocks bigint, deadlocks_per_s float8, checksum_failures bigint, checksum_failures_per_s float8, blk_read_time float8, blk_read_time_per_s float8, blk_write_time float8, blk_write_time_per_s float8, session_time float8, session_time_per_s float8, active_time float8, active_time_per_s float8, idle_in_transaction_time float8, idle_in_transaction_time_per_s float8, sessions bigint, sessions_per_s float8, sessions_abandoned bigint, sessions_abandoned_per_s float8, sessions_fatal bigint, sessions_fatal_per_s float8, sessions_killed bigint, sessions_killed_per_s float8, parallel_workers_to_launch bigint, parallel_workers_to_launch_per_s float8, parallel_workers_launched bigint, parallel_workers_launched_per_s float8, ms_per_blk_read float8);
END;
$fn$;

CREATE OR REPLACE FUNCTION chronicle._database_ends(from_ts timestamptz, to_ts timestamptz)
RETURNS TABLE (datid oid, datname text, segment timestamptz, reset boolean, b_xact_commit bigint, l_xact_commit bigint, b_xact_rollback bigint, l_xact_rollback bigint, b_blks_read bigint, l_blks_read bigint, b_blks_hit bigint, l_blks_hit bigint, b_tup_returned bigint, l_tup_returned bigint, b_tup_fetched bigint, l_tup_fetched bigint, b_tup_inserted bigint, l_tup_inserted bigint, b_tup_updated bigint, l_tup_updated bigint, b_tup_deleted bigint, l_tup_deleted bigint, b_conflicts bigint, l_conflicts bigint, b_temp_files bigint, l_temp_files bigint, b_temp_bytes bigint, l_temp_bytes bigint, b_deadlocks bigint, l_deadlocks bigint, b_checksum_failures bigint, l_checksum_failures bigint, b_blk_read_time float8, l_blk_read_time float8, b_blk_write_time float8, l_blk_write_time float8, b_session_time float8, l_session_time float8, b_active_time float8, l_active_time float8, b_idle_in_transaction_time float8, l_idle_in_transaction_time float8, b_sessions bigint, l_sessions bigint, b_sessions_abandoned bigint, l_sessions_abandoned bigint, b_sessions_fatal bigint, l_sessions_fatal bigint, b_sessions_killed bigint, l_sessions_killed bigint, b_parallel_workers_to_launch bigint, l_parallel_workers_to_launch bigint, b_parallel_workers_launched bigint, l_parallel_workers_launched bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
BEGIN
	RETURN QUERY
	WITH sg AS (
		SELECT i.segment, min(i.interval_start) AS first_start, max(i.interval_end) AS last_end
		  FROM chronicle.intervals($1, $2) i GROUP BY i.segment
	), sgk AS (
		-- the first keyframe of the segment that recorded the table
		SELECT g.*, (SELECT sn.ts FROM chronicle.snapshot sn
		                 WHERE sn.segment = g.segment AND sn.ts >= g.segment AND sn.ts <= $2
		                   AND sn.keyframe
		                   AND EXISTS (SELECT FROM chronicle.database_history x WHERE x.ts = sn.ts)
		                 ORDER BY sn.ts LIMIT 1) AS born_after
		  FROM sg g
	)
	SELECT k.datid, l.datname, sg.segment,
	       (b.stats_reset IS DISTINCT FROM l.stats_reset
	        OR coalesce(l.xact_commit < b.xact_commit, false)
	        OR coalesce(l.xact_rollback < b.xact_rollback, false)
	        OR coalesce(l.blks_read < b.blks_read, false)
	        OR coalesce(l.blks_hit < b.blks_hit, false)
	        OR coalesce(l.tup_returned < b.tup_returned, false)
	        OR coalesce(l.tup_fetched < b.tup_fetched, false)
	        OR coalesce(l.tup_inserted < b.tup_inserted, false)
	        OR coalesce(l.tup_updated < b.tup_updated, false)
	        OR coalesce(l.tup_deleted < b.tup_deleted, false)
	        OR coalesce(l.conflicts < b.conflicts, false)
	        OR coalesce(l.temp_files < b.temp_files, false)
	        OR coalesce(l.temp_bytes < b.temp_bytes, false)
	        OR coalesce(l.deadlocks < b.deadlocks, false)
	        OR coalesce(l.checksum_failures < b.checksum_failures, false)
	        OR coalesce(l.blk_read_time < b.blk_read_time, false)
	        OR coalesce(l.blk_write_time < b.blk_write_time, false)
	        OR coalesce(l.session_time < b.session_time, false)
	        OR coalesce(l.active_time < b.active_time, false)
	        OR coalesce(l.idle_in_transaction_time < b.idle_in_transaction_time, false)
	        OR coalesce(l.sessions < b.sessions, false)
	        OR coalesce(l.sessions_abandoned < b.sessions_abandoned, false)
	        OR coalesce(l.sessions_fatal < b.sessions_fatal, false)
	        OR coalesce(l.sessions_killed < b.sessions_killed, false)
	        OR coalesce(l.parallel_workers_to_launch < b.parallel_workers_to_launch, false)
	        OR coalesce(l.parallel_workers_launched < b.parallel_workers_launched, false)),
	       CASE WHEN b.born AND b.xact_commit IS NOT NULL THEN 0 ELSE b.xact_commit END, l.xact_commit,
	       CASE WHEN b.born AND b.xact_rollback IS NOT NULL THEN 0 ELSE b.xact_rollback END, l.xact_rollback,
	       CASE WHEN b.born AND b.blks_read IS NOT NULL THEN 0 ELSE b.blks_read END, l.blks_read,
	       CASE WHEN b.born AND b.blks_hit IS NOT NULL THEN 0 ELSE b.blks_hit END, l.blks_hit,
	       CASE WHEN b.born AND b.tup_returned IS NOT NULL THEN 0 ELSE b.tup_returned END, l.tup_returned,
	       CASE WHEN b.born AND b.tup_fetched IS NOT NULL THEN 0 ELSE b.tup_fetched END, l.tup_fetched,
	       CASE WHEN b.born AND b.tup_inserted IS NOT NULL THEN 0 ELSE b.tup_inserted END, l.tup_inserted,
	       CASE WHEN b.born AND b.tup_updated IS NOT NULL THEN 0 ELSE b.tup_updated END, l.tup_updated,
	       CASE WHEN b.born AND b.tup_deleted IS NOT NULL THEN 0 ELSE b.tup_deleted END, l.tup_deleted,
	       CASE WHEN b.born AND b.conflicts IS NOT NULL THEN 0 ELSE b.conflicts END, l.conflicts,
	       CASE WHEN b.born AND b.temp_files IS NOT NULL THEN 0 ELSE b.temp_files END, l.temp_files,
	       CASE WHEN b.born AND b.temp_bytes IS NOT NULL THEN 0 ELSE b.temp_bytes END, l.temp_bytes,
	       CASE WHEN b.born AND b.deadlocks IS NOT NULL THEN 0 ELSE b.deadlocks END, l.deadlocks,
	       CASE WHEN b.born AND b.checksum_failures IS NOT NULL THEN 0 ELSE b.checksum_failures END, l.checksum_failures,
	       CASE WHEN b.born AND b.blk_read_time IS NOT NULL THEN 0 ELSE b.blk_read_time END, l.blk_read_time,
	       CASE WHEN b.born AND b.blk_write_time IS NOT NULL THEN 0 ELSE b.blk_write_time END, l.blk_write_time,
	       CASE WHEN b.born AND b.session_time IS NOT NULL THEN 0 ELSE b.session_time END, l.session_time,
	       CASE WHEN b.born AND b.active_time IS NOT NULL THEN 0 ELSE b.active_time END, l.active_time,
	       CASE WHEN b.born AND b.idle_in_transaction_time IS NOT NULL THEN 0 ELSE b.idle_in_transaction_time END, l.idle_in_transaction_time,
	       CASE WHEN b.born AND b.sessions IS NOT NULL THEN 0 ELSE b.sessions END, l.sessions,
	       CASE WHEN b.born AND b.sessions_abandoned IS NOT NULL THEN 0 ELSE b.sessions_abandoned END, l.sessions_abandoned,
	       CASE WHEN b.born AND b.sessions_fatal IS NOT NULL THEN 0 ELSE b.sessions_fatal END, l.sessions_fatal,
	       CASE WHEN b.born AND b.sessions_killed IS NOT NULL THEN 0 ELSE b.sessions_killed END, l.sessions_killed,
	       CASE WHEN b.born AND b.parallel_workers_to_launch IS NOT NULL THEN 0 ELSE b.parallel_workers_to_launch END, l.parallel_workers_to_launch,
	       CASE WHEN b.born AND b.parallel_workers_launched IS NOT NULL THEN 0 ELSE b.parallel_workers_launched END, l.parallel_workers_launched
	  FROM (SELECT DISTINCT kk.datid FROM chronicle._database_keys($1, $2) kk) k
	 CROSS JOIN sgk sg
	 CROSS JOIN LATERAL (
		SELECT h.* FROM chronicle.database_history h
		 WHERE h.datid = k.datid AND h.ts >= sg.segment AND h.ts <= sg.last_end
		 ORDER BY h.ts DESC LIMIT 1) l
	 CROSS JOIN LATERAL (
		SELECT x.* FROM (
			(SELECT h.*, false AS born FROM chronicle.database_history h
			  WHERE h.datid = k.datid AND h.ts >= sg.segment AND h.ts <= sg.first_start
			  ORDER BY h.ts DESC LIMIT 1)
			UNION ALL
			-- else the first row in the window: born if after that keyframe
			(SELECT h.*, coalesce(h.ts > sg.born_after, false) FROM chronicle.database_history h
			  WHERE h.datid = k.datid AND h.ts > sg.first_start AND h.ts <= sg.last_end
			  ORDER BY h.ts LIMIT 1)) x
		 ORDER BY x.ts ASC LIMIT 1) b;
END;
$fn$;

CREATE OR REPLACE FUNCTION chronicle.database_totals(from_ts timestamptz, to_ts timestamptz, for_datname text DEFAULT NULL)
RETURNS TABLE (window_start timestamptz, window_end timestamptz, seconds float8, intervals bigint, datid oid, datname text, resets bigint, xact_commit numeric, xact_commit_per_s float8, xact_rollback numeric, xact_rollback_per_s float8, blks_read numeric, blks_read_per_s float8, blks_hit numeric, blks_hit_per_s float8, tup_returned numeric, tup_returned_per_s float8, tup_fetched numeric, tup_fetched_per_s float8, tup_inserted numeric, tup_inserted_per_s float8, tup_updated numeric, tup_updated_per_s float8, tup_deleted numeric, tup_deleted_per_s float8, conflicts numeric, conflicts_per_s float8, temp_files numeric, temp_files_per_s float8, temp_bytes numeric, temp_bytes_per_s float8, deadlocks numeric, deadlocks_per_s float8, checksum_failures numeric, checksum_failures_per_s float8, blk_read_time float8, blk_read_time_per_s float8, blk_write_time float8, blk_write_time_per_s float8, session_time float8, session_time_per_s float8, active_time float8, active_time_per_s float8, idle_in_transaction_time float8, idle_in_transaction_time_per_s float8, sessions numeric, sessions_per_s float8, sessions_abandoned numeric, sessions_abandoned_per_s float8, sessions_fatal numeric, sessions_fatal_per_s float8, sessions_killed numeric, sessions_killed_per_s float8, parallel_workers_to_launch numeric, parallel_workers_to_launch_per_s float8, parallel_workers_launched numeric, parallel_workers_launched_per_s float8, ms_per_blk_read float8)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
	secs float8;
	n bigint;
	ws timestamptz;
	we timestamptz;
BEGIN
	PERFORM chronicle._check_range($1, $2, 'chronicle.database_totals');
	PERFORM chronicle._check_datname('chronicle.database_totals', $3);
	SELECT * INTO secs, n, ws, we FROM chronicle._window($1, $2);
	-- Without a reset in the window, the deltas of a key telescope: its
	-- total is its last value minus its baseline in each segment, two
	-- index probes per key instead of every row of the window.
	RETURN QUERY
	WITH e AS MATERIALIZED (
		SELECT * FROM chronicle._database_ends($1, $2) e
		 WHERE true
		   AND ($3 IS NULL OR e.datname = $3)
	)
	SELECT ws, we, secs, n, e.datid,
	       max(e.datname),
	       0::bigint,
	       sum(e.l_xact_commit - e.b_xact_commit)::numeric,
	       sum(e.l_xact_commit - e.b_xact_commit)::float8 / secs,
	       sum(e.l_xact_rollback - e.b_xact_rollback)::numeric,
	       sum(e.l_xact_rollback - e.b_xact_rollback)::float8 / secs,
	       sum(e.l_blks_read - e.b_blks_read)::numeric,
	       sum(e.l_blks_read - e.b_blks_read)::float8 / secs,
	       sum(e.l_blks_hit - e.b_blks_hit)::numeric,
	       sum(e.l_blks_hit - e.b_blks_hit)::float8 / secs,
	       sum(e.l_tup_returned - e.b_tup_returned)::numeric,
	       sum(e.l_tup_returned - e.b_tup_returned)::float8 / secs,
	       sum(e.l_tup_fetched - e.b_tup_fetched)::numeric,
	       sum(e.l_tup_fetched - e.b_tup_fetched)::float8 / secs,
	       sum(e.l_tup_inserted - e.b_tup_inserted)::numeric,
	       sum(e.l_tup_inserted - e.b_tup_inserted)::float8 / secs,
	       sum(e.l_tup_updated - e.b_tup_updated)::numeric,
	       sum(e.l_tup_updated - e.b_tup_updated)::float8 / secs,
	       sum(e.l_tup_deleted - e.b_tup_deleted)::numeric,
	       sum(e.l_tup_deleted - e.b_tup_deleted)::float8 / secs,
	       sum(e.l_conflicts - e.b_conflicts)::numeric,
	       sum(e.l_conflicts - e.b_conflicts)::float8 / secs,
	       sum(e.l_temp_files - e.b_temp_files)::numeric,
	       sum(e.l_temp_files - e.b_temp_files)::float8 / secs,
	       sum(e.l_temp_bytes - e.b_temp_bytes)::numeric,
	       sum(e.l_temp_bytes - e.b_temp_bytes)::float8 / secs,
	       sum(e.l_deadlocks - e.b_deadlocks)::numeric,
	       sum(e.l_deadlocks - e.b_deadlocks)::float8 / secs,
	       sum(e.l_checksum_failures - e.b_checksum_failures)::numeric,
	       sum(e.l_checksum_failures - e.b_checksum_failures)::float8 / secs,
	       sum(e.l_blk_read_time - e.b_blk_read_time),
	       sum(e.l_blk_read_time - e.b_blk_read_time)::float8 / secs,
	       sum(e.l_blk_write_time - e.b_blk_write_time),
	       sum(e.l_blk_write_time - e.b_blk_write_time)::float8 / secs,
	       sum(e.l_session_time - e.b_session_time),
	       sum(e.l_session_time - e.b_session_time)::float8 / secs,
	       sum(e.l_active_time - e.b_active_time),
	       sum(e.l_active_time - e.b_active_time)::float8 / secs,
	       sum(e.l_idle_in_transaction_time - e.b_idle_in_transaction_time),
	       sum(e.l_idle_in_transaction_time - e.b_idle_in_transaction_time)::float8 / secs,
	       sum(e.l_sessions - e.b_sessions)::numeric,
	       sum(e.l_sessions - e.b_sessions)::float8 / secs,
	       sum(e.l_sessions_abandoned - e.b_sessions_abandoned)::numeric,
	       sum(e.l_sessions_abandoned - e.b_sessions_abandoned)::float8 / secs,
	       sum(e.l_sessions_fatal - e.b_sessions_fatal)::numeric,
	       sum(e.l_sessions_fatal - e.b_sessions_fatal)::float8 / secs,
	       sum(e.l_sessions_killed - e.b_sessions_killed)::numeric,
	       sum(e.l_sessions_killed - e.b_sessions_killed)::float8 / secs,
	       sum(e.l_parallel_workers_to_launch - e.b_parallel_workers_to_launch)::numeric,
	       sum(e.l_parallel_workers_to_launch - e.b_parallel_workers_to_launch)::float8 / secs,
	       sum(e.l_parallel_workers_launched - e.b_parallel_workers_launched)::numeric,
	       sum(e.l_parallel_workers_launched - e.b_parallel_workers_launched)::float8 / secs,
	       sum(e.l_blk_read_time - e.b_blk_read_time)::float8 / nullif(sum(e.l_blks_read - e.b_blks_read), 0)
	  FROM e
	 WHERE NOT EXISTS (SELECT FROM e r WHERE r.reset)
	 GROUP BY e.datid
	 ORDER BY e.datid;
	IF FOUND THEN
		RETURN;
	END IF;
	RETURN QUERY
	SELECT ws, we, secs, n, k.datid,
	       coalesce(max(d.datname), max(k.datname)),
	       count(*) FILTER (WHERE d.reset),
	       coalesce(sum(d.xact_commit), max(k.xact_commit - k.xact_commit))::numeric,
	       coalesce(sum(d.xact_commit), max(k.xact_commit - k.xact_commit))::float8 / secs,
	       coalesce(sum(d.xact_rollback), max(k.xact_rollback - k.xact_rollback))::numeric,
	       coalesce(sum(d.xact_rollback), max(k.xact_rollback - k.xact_rollback))::float8 / secs,
	       coalesce(sum(d.blks_read), max(k.blks_read - k.blks_read))::numeric,
	       coalesce(sum(d.blks_read), max(k.blks_read - k.blks_read))::float8 / secs,
	       coalesce(sum(d.blks_hit), max(k.blks_hit - k.blks_hit))::numeric,
	       coalesce(sum(d.blks_hit), max(k.blks_hit - k.blks_hit))::float8 / secs,
	       coalesce(sum(d.tup_returned), max(k.tup_returned - k.tup_returned))::numeric,
	       coalesce(sum(d.tup_returned), max(k.tup_returned - k.tup_returned))::float8 / secs,
	       coalesce(sum(d.tup_fetched), max(k.tup_fetched - k.tup_fetched))::numeric,
	       coalesce(sum(d.tup_fetched), max(k.tup_fetched - k.tup_fetched))::float8 / secs,
	       coalesce(sum(d.tup_inserted), max(k.tup_inserted - k.tup_inserted))::numeric,
	       coalesce(sum(d.tup_inserted), max(k.tup_inserted - k.tup_inserted))::float8 / secs,
	       coalesce(sum(d.tup_updated), max(k.tup_updated - k.tup_updated))::numeric,
	       coalesce(sum(d.tup_updated), max(k.tup_updated - k.tup_updated))::float8 / secs,
	       coalesce(sum(d.tup_deleted), max(k.tup_deleted - k.tup_deleted))::numeric,
	       coalesce(sum(d.tup_deleted), max(k.tup_deleted - k.tup_deleted))::float8 / secs,
	       coalesce(sum(d.conflicts), max(k.conflicts - k.conflicts))::numeric,
	       coalesce(sum(d.conflicts), max(k.conflicts - k.conflicts))::float8 / secs,
	       coalesce(sum(d.temp_files), max(k.temp_files - k.temp_files))::numeric,
	       coalesce(sum(d.temp_files), max(k.temp_files - k.temp_files))::float8 / secs,
	       coalesce(sum(d.temp_bytes), max(k.temp_bytes - k.temp_bytes))::numeric,
	       coalesce(sum(d.temp_bytes), max(k.temp_bytes - k.temp_bytes))::float8 / secs,
	       coalesce(sum(d.deadlocks), max(k.deadlocks - k.deadlocks))::numeric,
	       coalesce(sum(d.deadlocks), max(k.deadlocks - k.deadlocks))::float8 / secs,
	       coalesce(sum(d.checksum_failures), max(k.checksum_failures - k.checksum_failures))::numeric,
	       coalesce(sum(d.checksum_failures), max(k.checksum_failures - k.checksum_failures))::float8 / secs,
	       coalesce(sum(d.blk_read_time), max(k.blk_read_time - k.blk_read_time)),
	       coalesce(sum(d.blk_read_time), max(k.blk_read_time - k.blk_read_time))::float8 / secs,
	       coalesce(sum(d.blk_write_time), max(k.blk_write_time - k.blk_write_time)),
	       coalesce(sum(d.blk_write_time), max(k.blk_write_time - k.blk_write_time))::float8 / secs,
	       coalesce(sum(d.session_time), max(k.session_time - k.session_time)),
	       coalesce(sum(d.session_time), max(k.session_time - k.session_time))::float8 / secs,
	       coalesce(sum(d.active_time), max(k.active_time - k.active_time)),
	       coalesce(sum(d.active_time), max(k.active_time - k.active_time))::float8 / secs,
	       coalesce(sum(d.idle_in_transaction_time), max(k.idle_in_transaction_time - k.idle_in_transaction_time)),
	       coalesce(sum(d.idle_in_transaction_time), max(k.idle_in_transaction_time - k.idle_in_transaction_time))::float8 / secs,
	       coalesce(sum(d.sessions), max(k.sessions - k.sessions))::numeric,
	       coalesce(sum(d.sessions), max(k.sessions - k.sessions))::float8 / secs,
	       coalesce(sum(d.sessions_abandoned), max(k.sessions_abandoned - k.sessions_abandoned))::numeric,
	       coalesce(sum(d.sessions_abandoned), max(k.sessions_abandoned - k.sessions_abandoned))::float8 / secs,
	       coalesce(sum(d.sessions_fatal), max(k.sessions_fatal - k.sessions_fatal))::numeric,
	       coalesce(sum(d.sessions_fatal), max(k.sessions_fatal - k.sessions_fatal))::float8 / secs,
	       coalesce(sum(d.sessions_killed), max(k.sessions_killed - k.sessions_killed))::numeric,
	       coalesce(sum(d.sessions_killed), max(k.sessions_killed - k.sessions_killed))::float8 / secs,
	       coalesce(sum(d.parallel_workers_to_launch), max(k.parallel_workers_to_launch - k.parallel_workers_to_launch))::numeric,
	       coalesce(sum(d.parallel_workers_to_launch), max(k.parallel_workers_to_launch - k.parallel_workers_to_launch))::float8 / secs,
	       coalesce(sum(d.parallel_workers_launched), max(k.parallel_workers_launched - k.parallel_workers_launched))::numeric,
	       coalesce(sum(d.parallel_workers_launched), max(k.parallel_workers_launched - k.parallel_workers_launched))::float8 / secs,
	       sum(d.blk_read_time)::float8 / nullif(sum(d.blks_read), 0)
	  FROM (SELECT DISTINCT ON (kk.datid) kk.datid, kk.datname, kk.xact_commit, kk.xact_rollback, kk.blks_read, kk.blks_hit, kk.tup_returned, kk.tup_fetched, kk.tup_inserted, kk.tup_updated, kk.tup_deleted, kk.conflicts, kk.temp_files, kk.temp_bytes, kk.deadlocks, kk.checksum_failures, kk.blk_read_time, kk.blk_write_time, kk.session_time, kk.active_time, kk.idle_in_transaction_time, kk.sessions, kk.sessions_abandoned, kk.sessions_fatal, kk.sessions_killed, kk.parallel_workers_to_launch, kk.parallel_workers_launched
	          FROM chronicle._database_keys($1, $2) kk
	         WHERE true
	           AND ($3 IS NULL OR kk.datname = $3)
	         ORDER BY kk.datid, kk.first_ts DESC) k
	  LEFT JOIN chronicle.database_deltas($1, $2, $3, changed_only => true) d
	    ON d.datid = k.datid
	 GROUP BY k.datid
	 ORDER BY k.datid;
END;
$fn$;

CREATE OR REPLACE FUNCTION chronicle._wait_sums(from_ts timestamptz, to_ts timestamptz, for_backend_type text DEFAULT NULL, for_wait_event_type text DEFAULT NULL, for_wait_event text DEFAULT NULL)
RETURNS TABLE (interval_start timestamptz, interval_end timestamptz, seconds float8, reset boolean, samples bigint, samples_per_s float8)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
SET work_mem = '256MB'
AS $fn$
#variable_conflict use_column
BEGIN
	RETURN QUERY
	SELECT * FROM chronicle._deltas('chronicle.waits_history'::regclass, $1, $2,
		keys => ARRAY['backend_type', 'state', 'wait_event_type', 'wait_event', 'queryid']::text[],
		vals => ARRAY['samples']::text[],
		kinds => 'c',
		attrs => ARRAY[]::text[],
		reset_col => NULL,
		bytes_ops => ARRAY[NULL]::text[],
		bytes_unit => NULL,
		per_op => ARRAY[]::text[],
		filter_cols => ARRAY['backend_type', 'wait_event_type', 'wait_event']::text[],
		filter_vals => ARRAY[$3, $4, $5]::text[],
		changed_only => true, group_by => ARRAY[]::text[],
		born_at_zero => true)
	  AS d(interval_start timestamptz, interval_end timestamptz, seconds float8, reset boolean, samples bigint, samples_per_s float8);
END;
$fn$;

CREATE OR REPLACE FUNCTION chronicle.wait_deltas(from_ts timestamptz, to_ts timestamptz, for_backend_type text DEFAULT NULL, for_wait_event_type text DEFAULT NULL, for_wait_event text DEFAULT NULL, changed_only boolean DEFAULT false)
RETURNS TABLE (interval_start timestamptz, interval_end timestamptz, seconds float8, backend_type text, state text, wait_event_type text, wait_event text, queryid bigint, reset boolean, samples bigint, samples_per_s float8)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
SET work_mem = '256MB'
AS $fn$
#variable_conflict use_column
BEGIN
	PERFORM chronicle._check_range($1, $2, 'chronicle.wait_deltas');
	PERFORM chronicle._check_name('chronicle.wait_deltas', 'backend_type', $3);
	PERFORM chronicle._check_name('chronicle.wait_deltas', 'wait_event_type', $4);
	RETURN QUERY
	SELECT * FROM chronicle._deltas('chronicle.waits_history'::regclass, $1, $2,
		keys => ARRAY['backend_type', 'state', 'wait_event_type', 'wait_event', 'queryid']::text[],
		vals => ARRAY['samples']::text[],
		kinds => 'c',
		attrs => ARRAY[]::text[],
		reset_col => NULL,
		bytes_ops => ARRAY[NULL]::text[],
		bytes_unit => NULL,
		per_op => ARRAY[]::text[],
		filter_cols => ARRAY['backend_type', 'wait_event_type', 'wait_event']::text[],
		filter_vals => ARRAY[$3, $4, $5]::text[],
		changed_only => $6,
		born_at_zero => true)
	  AS d(interval_start timestamptz, interval_end timestamptz, seconds float8, backend_type text, state text, wait_event_type text, wait_event text, queryid bigint, reset boolean, samples bigint, samples_per_s float8);
END;
$fn$;

CREATE OR REPLACE FUNCTION chronicle._wait_ends(from_ts timestamptz, to_ts timestamptz)
RETURNS TABLE (backend_type text, state text, wait_event_type text, wait_event text, queryid bigint, segment timestamptz, reset boolean, b_samples bigint, l_samples bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
BEGIN
	RETURN QUERY
	WITH sg AS (
		SELECT i.segment, min(i.interval_start) AS first_start, max(i.interval_end) AS last_end
		  FROM chronicle.intervals($1, $2) i GROUP BY i.segment
	), sgk AS (
		-- the first keyframe of the segment that recorded the table
		SELECT g.*, (SELECT sn.ts FROM chronicle.snapshot sn
		                 WHERE sn.segment = g.segment AND sn.ts >= g.segment AND sn.ts <= $2
		                   AND sn.keyframe
		                   AND EXISTS (SELECT FROM chronicle.waits_history x WHERE x.ts = sn.ts)
		                 ORDER BY sn.ts LIMIT 1) AS born_after
		  FROM sg g
	)
	SELECT k.backend_type, k.state, k.wait_event_type, k.wait_event, k.queryid, sg.segment,
	       (coalesce(l.samples < b.samples, false)),
	       CASE WHEN b.born AND b.samples IS NOT NULL THEN 0 ELSE b.samples END, l.samples
	  FROM (SELECT DISTINCT kk.backend_type, kk.state, kk.wait_event_type, kk.wait_event, kk.queryid FROM chronicle._wait_keys($1, $2) kk) k
	 CROSS JOIN sgk sg
	 CROSS JOIN LATERAL (
		SELECT h.* FROM chronicle.waits_history h
		 WHERE h.backend_type = k.backend_type AND h.state = k.state AND h.wait_event_type = k.wait_event_type AND h.wait_event = k.wait_event AND h.queryid = k.queryid AND h.ts >= sg.segment AND h.ts <= sg.last_end
		 ORDER BY h.ts DESC LIMIT 1) l
	 CROSS JOIN LATERAL (
		SELECT x.* FROM (
			(SELECT h.*, false AS born FROM chronicle.waits_history h
			  WHERE h.backend_type = k.backend_type AND h.state = k.state AND h.wait_event_type = k.wait_event_type AND h.wait_event = k.wait_event AND h.queryid = k.queryid AND h.ts >= sg.segment AND h.ts <= sg.first_start
			  ORDER BY h.ts DESC LIMIT 1)
			UNION ALL
			-- else the first row in the window: born if after that keyframe
			(SELECT h.*, coalesce(h.ts > sg.born_after, false) FROM chronicle.waits_history h
			  WHERE h.backend_type = k.backend_type AND h.state = k.state AND h.wait_event_type = k.wait_event_type AND h.wait_event = k.wait_event AND h.queryid = k.queryid AND h.ts > sg.first_start AND h.ts <= sg.last_end
			  ORDER BY h.ts LIMIT 1)) x
		 ORDER BY x.ts ASC LIMIT 1) b;
END;
$fn$;

CREATE OR REPLACE FUNCTION chronicle.wait_totals(from_ts timestamptz, to_ts timestamptz, for_backend_type text DEFAULT NULL, for_wait_event_type text DEFAULT NULL, for_wait_event text DEFAULT NULL)
RETURNS TABLE (window_start timestamptz, window_end timestamptz, seconds float8, intervals bigint, backend_type text, state text, wait_event_type text, wait_event text, queryid bigint, resets bigint, samples numeric, samples_per_s float8)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
	secs float8;
	n bigint;
	ws timestamptz;
	we timestamptz;
BEGIN
	PERFORM chronicle._check_range($1, $2, 'chronicle.wait_totals');
	PERFORM chronicle._check_name('chronicle.wait_totals', 'backend_type', $3);
	PERFORM chronicle._check_name('chronicle.wait_totals', 'wait_event_type', $4);
	SELECT * INTO secs, n, ws, we FROM chronicle._window($1, $2);
	-- Without a reset in the window, the deltas of a key telescope: its
	-- total is its last value minus its baseline in each segment, two
	-- index probes per key instead of every row of the window.
	RETURN QUERY
	WITH e AS MATERIALIZED (
		SELECT * FROM chronicle._wait_ends($1, $2) e
		 WHERE true
		   AND ($3 IS NULL OR e.backend_type = $3)
		   AND ($4 IS NULL OR e.wait_event_type = $4)
		   AND ($5 IS NULL OR e.wait_event = $5)
	)
	SELECT ws, we, secs, n, e.backend_type, e.state, e.wait_event_type, e.wait_event, e.queryid,
	       0::bigint,
	       sum(e.l_samples - e.b_samples)::numeric,
	       sum(e.l_samples - e.b_samples)::float8 / secs
	  FROM e
	 WHERE NOT EXISTS (SELECT FROM e r WHERE r.reset)
	 GROUP BY e.backend_type, e.state, e.wait_event_type, e.wait_event, e.queryid
	 ORDER BY e.backend_type, e.state, e.wait_event_type, e.wait_event, e.queryid;
	IF FOUND THEN
		RETURN;
	END IF;
	RETURN QUERY
	SELECT ws, we, secs, n, k.backend_type, k.state, k.wait_event_type, k.wait_event, k.queryid,
	       count(*) FILTER (WHERE d.reset),
	       coalesce(sum(d.samples), max(k.samples - k.samples))::numeric,
	       coalesce(sum(d.samples), max(k.samples - k.samples))::float8 / secs
	  FROM (SELECT DISTINCT ON (kk.backend_type, kk.state, kk.wait_event_type, kk.wait_event, kk.queryid) kk.backend_type, kk.state, kk.wait_event_type, kk.wait_event, kk.queryid, kk.samples
	          FROM chronicle._wait_keys($1, $2) kk
	         WHERE true
	           AND ($3 IS NULL OR kk.backend_type = $3)
	           AND ($4 IS NULL OR kk.wait_event_type = $4)
	           AND ($5 IS NULL OR kk.wait_event = $5)
	         ORDER BY kk.backend_type, kk.state, kk.wait_event_type, kk.wait_event, kk.queryid, kk.first_ts DESC) k
	  LEFT JOIN chronicle.wait_deltas($1, $2, $3, $4, $5, changed_only => true) d
	    ON d.backend_type = k.backend_type AND d.state = k.state AND d.wait_event_type = k.wait_event_type AND d.wait_event = k.wait_event AND d.queryid = k.queryid
	 GROUP BY k.backend_type, k.state, k.wait_event_type, k.wait_event, k.queryid
	 ORDER BY k.backend_type, k.state, k.wait_event_type, k.wait_event, k.queryid;
END;
$fn$;

CREATE OR REPLACE FUNCTION chronicle.os_disk_totals(from_ts timestamptz, to_ts timestamptz, for_device text DEFAULT NULL)
RETURNS TABLE (window_start timestamptz, window_end timestamptz, seconds float8, intervals bigint, device text, role text, resets bigint, reads_completed numeric, reads_completed_per_s float8, reads_merged numeric, reads_merged_per_s float8, sectors_read numeric, sectors_read_per_s float8, read_time_ms numeric, read_time_ms_per_s float8, writes_completed numeric, writes_completed_per_s float8, writes_merged numeric, writes_merged_per_s float8, sectors_written numeric, sectors_written_per_s float8, write_time_ms numeric, write_time_ms_per_s float8, io_time_ms numeric, io_time_ms_per_s float8, weighted_io_time_ms numeric, weighted_io_time_ms_per_s float8, discards_completed numeric, discards_completed_per_s float8, discards_merged numeric, discards_merged_per_s float8, sectors_discarded numeric, sectors_discarded_per_s float8, discard_time_ms numeric, discard_time_ms_per_s float8, flushes_completed numeric, flushes_completed_per_s float8, flush_time_ms numeric, flush_time_ms_per_s float8, ms_per_read float8, ms_per_write float8)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
	secs float8;
	n bigint;
	ws timestamptz;
	we timestamptz;
BEGIN
	PERFORM chronicle._check_range($1, $2, 'chronicle.os_disk_totals');
	SELECT * INTO secs, n, ws, we FROM chronicle._window($1, $2);
	-- Without a reset in the window, the deltas of a key telescope: its
	-- total is its last value minus its baseline in each segment, two
	-- index probes per key instead of every row of the window.
	RETURN QUERY
	WITH e AS MATERIALIZED (
		SELECT * FROM chronicle._os_disk_ends($1, $2) e
		 WHERE true
		   AND ($3 IS NULL OR e.device = $3)
	)
	SELECT ws, we, secs, n, e.device, e.role,
	       0::bigint,
	       sum(e.l_reads_completed - e.b_reads_completed)::numeric,
	       sum(e.l_reads_completed - e.b_reads_completed)::float8 / secs,
	       sum(e.l_reads_merged - e.b_reads_merged)::numeric,
	       sum(e.l_reads_merged - e.b_reads_merged)::float8 / secs,
	       sum(e.l_sectors_read - e.b_sectors_read)::numeric,
	       sum(e.l_sectors_read - e.b_sectors_read)::float8 / secs,
	       sum(e.l_read_time_ms - e.b_read_time_ms)::numeric,
	       sum(e.l_read_time_ms - e.b_read_time_ms)::float8 / secs,
	       sum(e.l_writes_completed - e.b_writes_completed)::numeric,
	       sum(e.l_writes_completed - e.b_writes_completed)::float8 / secs,
	       sum(e.l_writes_merged - e.b_writes_merged)::numeric,
	       sum(e.l_writes_merged - e.b_writes_merged)::float8 / secs,
	       sum(e.l_sectors_written - e.b_sectors_written)::numeric,
	       sum(e.l_sectors_written - e.b_sectors_written)::float8 / secs,
	       sum(e.l_write_time_ms - e.b_write_time_ms)::numeric,
	       sum(e.l_write_time_ms - e.b_write_time_ms)::float8 / secs,
	       sum(e.l_io_time_ms - e.b_io_time_ms)::numeric,
	       sum(e.l_io_time_ms - e.b_io_time_ms)::float8 / secs,
	       sum(e.l_weighted_io_time_ms - e.b_weighted_io_time_ms)::numeric,
	       sum(e.l_weighted_io_time_ms - e.b_weighted_io_time_ms)::float8 / secs,
	       sum(e.l_discards_completed - e.b_discards_completed)::numeric,
	       sum(e.l_discards_completed - e.b_discards_completed)::float8 / secs,
	       sum(e.l_discards_merged - e.b_discards_merged)::numeric,
	       sum(e.l_discards_merged - e.b_discards_merged)::float8 / secs,
	       sum(e.l_sectors_discarded - e.b_sectors_discarded)::numeric,
	       sum(e.l_sectors_discarded - e.b_sectors_discarded)::float8 / secs,
	       sum(e.l_discard_time_ms - e.b_discard_time_ms)::numeric,
	       sum(e.l_discard_time_ms - e.b_discard_time_ms)::float8 / secs,
	       sum(e.l_flushes_completed - e.b_flushes_completed)::numeric,
	       sum(e.l_flushes_completed - e.b_flushes_completed)::float8 / secs,
	       sum(e.l_flush_time_ms - e.b_flush_time_ms)::numeric,
	       sum(e.l_flush_time_ms - e.b_flush_time_ms)::float8 / secs,
	       sum(e.l_read_time_ms - e.b_read_time_ms)::float8 / nullif(sum(e.l_reads_completed - e.b_reads_completed), 0),
	       sum(e.l_write_time_ms - e.b_write_time_ms)::float8 / nullif(sum(e.l_writes_completed - e.b_writes_completed), 0)
	  FROM e
	 WHERE NOT EXISTS (SELECT FROM e r WHERE r.reset)
	 GROUP BY e.device, e.role
	 ORDER BY e.device, e.role;
	IF FOUND THEN
		RETURN;
	END IF;
	RETURN QUERY
	SELECT ws, we, secs, n, k.device, k.role,
	       count(*) FILTER (WHERE d.reset),
	       coalesce(sum(d.reads_completed), max(k.reads_completed - k.reads_completed))::numeric,
	       coalesce(sum(d.reads_completed), max(k.reads_completed - k.reads_completed))::float8 / secs,
	       coalesce(sum(d.reads_merged), max(k.reads_merged - k.reads_merged))::numeric,
	       coalesce(sum(d.reads_merged), max(k.reads_merged - k.reads_merged))::float8 / secs,
	       coalesce(sum(d.sectors_read), max(k.sectors_read - k.sectors_read))::numeric,
	       coalesce(sum(d.sectors_read), max(k.sectors_read - k.sectors_read))::float8 / secs,
	       coalesce(sum(d.read_time_ms), max(k.read_time_ms - k.read_time_ms))::numeric,
	       coalesce(sum(d.read_time_ms), max(k.read_time_ms - k.read_time_ms))::float8 / secs,
	       coalesce(sum(d.writes_completed), max(k.writes_completed - k.writes_completed))::numeric,
	       coalesce(sum(d.writes_completed), max(k.writes_completed - k.writes_completed))::float8 / secs,
	       coalesce(sum(d.writes_merged), max(k.writes_merged - k.writes_merged))::numeric,
	       coalesce(sum(d.writes_merged), max(k.writes_merged - k.writes_merged))::float8 / secs,
	       coalesce(sum(d.sectors_written), max(k.sectors_written - k.sectors_written))::numeric,
	       coalesce(sum(d.sectors_written), max(k.sectors_written - k.sectors_written))::float8 / secs,
	       coalesce(sum(d.write_time_ms), max(k.write_time_ms - k.write_time_ms))::numeric,
	       coalesce(sum(d.write_time_ms), max(k.write_time_ms - k.write_time_ms))::float8 / secs,
	       coalesce(sum(d.io_time_ms), max(k.io_time_ms - k.io_time_ms))::numeric,
	       coalesce(sum(d.io_time_ms), max(k.io_time_ms - k.io_time_ms))::float8 / secs,
	       coalesce(sum(d.weighted_io_time_ms), max(k.weighted_io_time_ms - k.weighted_io_time_ms))::numeric,
	       coalesce(sum(d.weighted_io_time_ms), max(k.weighted_io_time_ms - k.weighted_io_time_ms))::float8 / secs,
	       coalesce(sum(d.discards_completed), max(k.discards_completed - k.discards_completed))::numeric,
	       coalesce(sum(d.discards_completed), max(k.discards_completed - k.discards_completed))::float8 / secs,
	       coalesce(sum(d.discards_merged), max(k.discards_merged - k.discards_merged))::numeric,
	       coalesce(sum(d.discards_merged), max(k.discards_merged - k.discards_merged))::float8 / secs,
	       coalesce(sum(d.sectors_discarded), max(k.sectors_discarded - k.sectors_discarded))::numeric,
	       coalesce(sum(d.sectors_discarded), max(k.sectors_discarded - k.sectors_discarded))::float8 / secs,
	       coalesce(sum(d.discard_time_ms), max(k.discard_time_ms - k.discard_time_ms))::numeric,
	       coalesce(sum(d.discard_time_ms), max(k.discard_time_ms - k.discard_time_ms))::float8 / secs,
	       coalesce(sum(d.flushes_completed), max(k.flushes_completed - k.flushes_completed))::numeric,
	       coalesce(sum(d.flushes_completed), max(k.flushes_completed - k.flushes_completed))::float8 / secs,
	       coalesce(sum(d.flush_time_ms), max(k.flush_time_ms - k.flush_time_ms))::numeric,
	       coalesce(sum(d.flush_time_ms), max(k.flush_time_ms - k.flush_time_ms))::float8 / secs,
	       sum(d.read_time_ms)::float8 / nullif(sum(d.reads_completed), 0),
	       sum(d.write_time_ms)::float8 / nullif(sum(d.writes_completed), 0)
	  FROM (SELECT DISTINCT ON (kk.device, kk.role) kk.device, kk.role, kk.reads_completed, kk.reads_merged, kk.sectors_read, kk.read_time_ms, kk.writes_completed, kk.writes_merged, kk.sectors_written, kk.write_time_ms, kk.io_time_ms, kk.weighted_io_time_ms, kk.discards_completed, kk.discards_merged, kk.sectors_discarded, kk.discard_time_ms, kk.flushes_completed, kk.flush_time_ms
	          FROM chronicle._os_disk_keys($1, $2) kk
	         WHERE true
	           AND ($3 IS NULL OR kk.device = $3)
	         ORDER BY kk.device, kk.role, kk.first_ts DESC) k
	  LEFT JOIN chronicle.os_disk_deltas($1, $2, $3, changed_only => true) d
	    ON d.device = k.device AND d.role = k.role
	 GROUP BY k.device, k.role
	 ORDER BY k.device, k.role;
END;
$fn$;

CREATE OR REPLACE FUNCTION chronicle.os_pressure_totals(from_ts timestamptz, to_ts timestamptz, for_resource text DEFAULT NULL)
RETURNS TABLE (window_start timestamptz, window_end timestamptz, seconds float8, intervals bigint, resource text, resets bigint, some_total numeric, some_total_per_s float8, full_total numeric, full_total_per_s float8)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
	secs float8;
	n bigint;
	ws timestamptz;
	we timestamptz;
BEGIN
	PERFORM chronicle._check_range($1, $2, 'chronicle.os_pressure_totals');
	SELECT * INTO secs, n, ws, we FROM chronicle._window($1, $2);
	-- Without a reset in the window, the deltas of a key telescope: its
	-- total is its last value minus its baseline in each segment, two
	-- index probes per key instead of every row of the window.
	RETURN QUERY
	WITH e AS MATERIALIZED (
		SELECT * FROM chronicle._os_pressure_ends($1, $2) e
		 WHERE true
		   AND ($3 IS NULL OR e.resource = $3)
	)
	SELECT ws, we, secs, n, e.resource,
	       0::bigint,
	       sum(e.l_some_total - e.b_some_total)::numeric,
	       sum(e.l_some_total - e.b_some_total)::float8 / secs,
	       sum(e.l_full_total - e.b_full_total)::numeric,
	       sum(e.l_full_total - e.b_full_total)::float8 / secs
	  FROM e
	 WHERE NOT EXISTS (SELECT FROM e r WHERE r.reset)
	 GROUP BY e.resource
	 ORDER BY e.resource;
	IF FOUND THEN
		RETURN;
	END IF;
	RETURN QUERY
	SELECT ws, we, secs, n, k.resource,
	       count(*) FILTER (WHERE d.reset),
	       coalesce(sum(d.some_total), max(k.some_total - k.some_total))::numeric,
	       coalesce(sum(d.some_total), max(k.some_total - k.some_total))::float8 / secs,
	       coalesce(sum(d.full_total), max(k.full_total - k.full_total))::numeric,
	       coalesce(sum(d.full_total), max(k.full_total - k.full_total))::float8 / secs
	  FROM (SELECT DISTINCT ON (kk.resource) kk.resource, kk.some_total, kk.full_total
	          FROM chronicle._os_pressure_keys($1, $2) kk
	         WHERE true
	           AND ($3 IS NULL OR kk.resource = $3)
	         ORDER BY kk.resource, kk.first_ts DESC) k
	  LEFT JOIN chronicle.os_pressure_deltas($1, $2, $3, changed_only => true) d
	    ON d.resource = k.resource
	 GROUP BY k.resource
	 ORDER BY k.resource;
END;
$fn$;

-- wait_sampler: a new column in the results
DROP FUNCTION chronicle.wait_sampler_run_totals(text);
DROP FUNCTION chronicle.wait_sampler_totals(timestamptz, timestamptz);
DROP FUNCTION chronicle.wait_sampler_deltas(timestamptz, timestamptz);
CREATE FUNCTION chronicle.wait_sampler_deltas(from_ts timestamptz, to_ts timestamptz)
RETURNS TABLE (interval_start timestamptz, interval_end timestamptz, seconds float8, reset boolean, ticks_due bigint, ticks_due_per_s float8, ticks_taken bigint, ticks_taken_per_s float8, samples_dropped bigint, samples_dropped_per_s float8, active_cpu bigint, active_cpu_per_s float8, active_io bigint, active_io_per_s float8, active_lwlock bigint, active_lwlock_per_s float8, active_lock bigint, active_lock_per_s float8, active_ipc bigint, active_ipc_per_s float8, active_client bigint, active_client_per_s float8, active_timeout bigint, active_timeout_per_s float8, active_other bigint, active_other_per_s float8, background_active bigint, background_active_per_s float8)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
SET work_mem = '256MB'
AS $fn$
#variable_conflict use_column
BEGIN
	PERFORM chronicle._check_range($1, $2, 'chronicle.wait_sampler_deltas');
	RETURN QUERY
	SELECT * FROM chronicle._deltas('chronicle.wait_sampler_history'::regclass, $1, $2,
		keys => ARRAY[]::text[],
		vals => ARRAY['ticks_due', 'ticks_taken', 'samples_dropped', 'active_cpu', 'active_io', 'active_lwlock', 'active_lock', 'active_ipc', 'active_client', 'active_timeout', 'active_other', 'background_active']::text[],
		kinds => 'cccccccccccc',
		attrs => ARRAY[]::text[],
		reset_col => 'sampler_started',
		bytes_ops => ARRAY[NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL]::text[],
		bytes_unit => NULL,
		per_op => ARRAY[]::text[],
		filter_cols => ARRAY[]::text[],
		filter_vals => ARRAY[]::text[],
		changed_only => false)
	  AS d(interval_start timestamptz, interval_end timestamptz, seconds float8, reset boolean, ticks_due bigint, ticks_due_per_s float8, ticks_taken bigint, ticks_taken_per_s float8, samples_dropped bigint, samples_dropped_per_s float8, active_cpu bigint, active_cpu_per_s float8, active_io bigint, active_io_per_s float8, active_lwlock bigint, active_lwlock_per_s float8, active_lock bigint, active_lock_per_s float8, active_ipc bigint, active_ipc_per_s float8, active_client bigint, active_client_per_s float8, active_timeout bigint, active_timeout_per_s float8, active_other bigint, active_other_per_s float8, background_active bigint, background_active_per_s float8);
END;
$fn$;

REVOKE ALL ON FUNCTION chronicle.wait_sampler_deltas(timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.wait_sampler_deltas(timestamptz, timestamptz) TO pg_monitor, pg_read_all_stats;

CREATE FUNCTION chronicle.wait_sampler_totals(from_ts timestamptz, to_ts timestamptz)
RETURNS TABLE (window_start timestamptz, window_end timestamptz, seconds float8, intervals bigint, resets bigint, ticks_due numeric, ticks_due_per_s float8, ticks_taken numeric, ticks_taken_per_s float8, samples_dropped numeric, samples_dropped_per_s float8, active_cpu numeric, active_cpu_per_s float8, active_io numeric, active_io_per_s float8, active_lwlock numeric, active_lwlock_per_s float8, active_lock numeric, active_lock_per_s float8, active_ipc numeric, active_ipc_per_s float8, active_client numeric, active_client_per_s float8, active_timeout numeric, active_timeout_per_s float8, active_other numeric, active_other_per_s float8, background_active numeric, background_active_per_s float8)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
BEGIN
	PERFORM chronicle._check_range($1, $2, 'chronicle.wait_sampler_totals');
	RETURN QUERY
	SELECT min(d.interval_start), max(d.interval_end), sum(d.seconds), count(*),
	       count(*) FILTER (WHERE d.reset),
	       sum(d.ticks_due)::numeric,
	       sum(d.ticks_due)::float8 / sum(d.seconds),
	       sum(d.ticks_taken)::numeric,
	       sum(d.ticks_taken)::float8 / sum(d.seconds),
	       sum(d.samples_dropped)::numeric,
	       sum(d.samples_dropped)::float8 / sum(d.seconds),
	       sum(d.active_cpu)::numeric,
	       sum(d.active_cpu)::float8 / sum(d.seconds),
	       sum(d.active_io)::numeric,
	       sum(d.active_io)::float8 / sum(d.seconds),
	       sum(d.active_lwlock)::numeric,
	       sum(d.active_lwlock)::float8 / sum(d.seconds),
	       sum(d.active_lock)::numeric,
	       sum(d.active_lock)::float8 / sum(d.seconds),
	       sum(d.active_ipc)::numeric,
	       sum(d.active_ipc)::float8 / sum(d.seconds),
	       sum(d.active_client)::numeric,
	       sum(d.active_client)::float8 / sum(d.seconds),
	       sum(d.active_timeout)::numeric,
	       sum(d.active_timeout)::float8 / sum(d.seconds),
	       sum(d.active_other)::numeric,
	       sum(d.active_other)::float8 / sum(d.seconds),
	       sum(d.background_active)::numeric,
	       sum(d.background_active)::float8 / sum(d.seconds)
	  FROM chronicle.wait_sampler_deltas($1, $2) d
	 HAVING count(*) > 0;
END;
$fn$;

REVOKE ALL ON FUNCTION chronicle.wait_sampler_totals(timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.wait_sampler_totals(timestamptz, timestamptz) TO pg_monitor, pg_read_all_stats;

CREATE FUNCTION chronicle.wait_sampler_run_totals(run text)
RETURNS TABLE (window_start timestamptz, window_end timestamptz, seconds float8, intervals bigint, resets bigint, ticks_due numeric, ticks_due_per_s float8, ticks_taken numeric, ticks_taken_per_s float8, samples_dropped numeric, samples_dropped_per_s float8, active_cpu numeric, active_cpu_per_s float8, active_io numeric, active_io_per_s float8, active_lwlock numeric, active_lwlock_per_s float8, active_lock numeric, active_lock_per_s float8, active_ipc numeric, active_ipc_per_s float8, active_client numeric, active_client_per_s float8, active_timeout numeric, active_timeout_per_s float8, active_other numeric, active_other_per_s float8, background_active numeric, background_active_per_s float8)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
	SELECT t.* FROM chronicle.run_window($1) r,
	       chronicle.wait_sampler_totals(r.run_from, r.run_to) t
$fn$;

REVOKE ALL ON FUNCTION chronicle.wait_sampler_run_totals(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.wait_sampler_run_totals(text) TO pg_monitor, pg_read_all_stats;

INSERT INTO chronicle.metric (metric, source, func, keyed, kind, col, col2, filters, unit) VALUES
	('wait_sampler.background_active_per_s', 'wait_sampler', 'wait_sampler_deltas', False, 'rate', 'background_active', NULL, ARRAY[]::text[], '1/s');

CREATE FUNCTION chronicle._wait_activity(backend_type text, state text,
                                         wait_event_type text, wait_event text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE
		WHEN state = 'idle' OR wait_event_type = 'Activity'
		  OR (wait_event_type = 'Timeout'
		      AND wait_event IN ('CheckpointWriteDelay', 'RecoveryApplyDelay',
		                         'RecoveryRetrieveRetryInterval', 'WalSummarizerError'))
		  OR (wait_event_type = 'Client' AND wait_event = 'WalSenderWaitForWal')
		THEN NULL
		WHEN backend_type IN ('client backend', 'walsender', 'autovacuum worker', 'parallel worker',
		                      'not initialized', 'standalone backend')
		THEN CASE WHEN backend_type = 'autovacuum worker'
		               AND wait_event_type = 'Timeout' AND wait_event = 'VacuumDelay'
		          THEN NULL ELSE 'database' END
		WHEN wait_event_type = 'Extension'
		  OR (wait_event_type = 'Timeout' AND wait_event = 'VacuumDelay')
		THEN NULL
		ELSE 'background'
	END
$$;

COMMENT ON FUNCTION chronicle._wait_activity(text, text, text, text) IS
	'database (an active session: database time), background (a background process at work) or NULL (idle, main-loop wait, throttle sleep) for a wait key';

REVOKE ALL ON FUNCTION chronicle._wait_activity(text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._wait_activity(text, text, text, text) TO pg_monitor, pg_read_all_stats;

CREATE OR REPLACE FUNCTION chronicle.wait_profile(
	from_ts timestamptz, to_ts timestamptz,
	for_backend_type text DEFAULT NULL, include_idle boolean DEFAULT false)
RETURNS TABLE (backend_type text, wait_event_type text, wait_event text,
               samples numeric, share float8, avg_processes float8,
               ticks_due numeric, ticks_taken numeric, coverage float8)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
	due   numeric;
	taken numeric;
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.wait_profile');
	PERFORM chronicle._check_name('chronicle.wait_profile', 'backend_type', for_backend_type);
	IF include_idle IS NULL THEN
		RAISE EXCEPTION 'chronicle.wait_profile: include_idle must not be NULL'
			USING ERRCODE = 'null_value_not_allowed', HINT = 'Pass true or false.';
	END IF;
	SELECT s.ticks_due, s.ticks_taken INTO due, taken
	  FROM chronicle.wait_sampler_totals(from_ts, to_ts) s;
	RETURN QUERY
	WITH w AS (
		SELECT d.backend_type, d.wait_event_type, d.wait_event, sum(d.samples)::numeric AS n
		  FROM chronicle.wait_totals(from_ts, to_ts, for_backend_type) d
		 WHERE d.samples > 0
		   AND (include_idle
		        OR chronicle._wait_activity(d.backend_type, d.state, d.wait_event_type, d.wait_event) IS NOT NULL)
		 GROUP BY d.backend_type, d.wait_event_type, d.wait_event
	)
	SELECT w.backend_type, w.wait_event_type, w.wait_event, w.n,
	       (w.n / sum(w.n) OVER ())::float8,
	       (w.n / nullif(taken, 0))::float8,
	       due, taken, (taken / nullif(due, 0))::float8
	  FROM w
	 ORDER BY w.n DESC, w.backend_type, w.wait_event_type, w.wait_event;
END;
$$;

CREATE OR REPLACE FUNCTION chronicle.wait_profile_series(
	from_ts timestamptz, to_ts timestamptz,
	for_backend_type text DEFAULT NULL, include_idle boolean DEFAULT false,
	top integer DEFAULT NULL)
RETURNS TABLE (interval_start timestamptz, interval_end timestamptz, seconds float8,
               backend_type text, wait_event_type text, wait_event text,
               samples bigint, share float8, avg_processes float8,
               ticks_due bigint, ticks_taken bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.wait_profile_series');
	PERFORM chronicle._check_name('chronicle.wait_profile_series', 'backend_type', for_backend_type);
	IF include_idle IS NULL THEN
		RAISE EXCEPTION 'chronicle.wait_profile_series: include_idle must not be NULL'
			USING ERRCODE = 'null_value_not_allowed', HINT = 'Pass true or false.';
	END IF;
	IF top IS NOT NULL AND top < 1 THEN
		RAISE EXCEPTION 'chronicle.wait_profile_series: top must be at least 1, got %', top
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Pass NULL for every wait event.';
	END IF;
	RETURN QUERY
	WITH d AS MATERIALIZED (
		SELECT d.* FROM chronicle.wait_deltas(from_ts, to_ts, for_backend_type, changed_only => true) d
		 WHERE d.samples > 0
	), k AS (
		-- classified once per key, not per interval (OFFSET 0: not pushed
		-- below the DISTINCT)
		SELECT k.backend_type, k.state, k.wait_event_type, k.wait_event
		  FROM (SELECT DISTINCT d.backend_type, d.state, d.wait_event_type, d.wait_event FROM d OFFSET 0) k
		 WHERE include_idle
		    OR chronicle._wait_activity(k.backend_type, k.state, k.wait_event_type, k.wait_event) IS NOT NULL
	), w AS (
		SELECT d.interval_start, d.interval_end, d.seconds,
		       d.backend_type, d.wait_event_type, d.wait_event, sum(d.samples)::bigint AS n
		  FROM d JOIN k ON k.backend_type = d.backend_type AND k.state = d.state
		               AND k.wait_event_type = d.wait_event_type AND k.wait_event = d.wait_event
		 GROUP BY d.interval_start, d.interval_end, d.seconds, d.backend_type, d.wait_event_type, d.wait_event
	), r AS (
		SELECT w.*, row_number() OVER (PARTITION BY w.interval_end ORDER BY w.n DESC,
		                               w.backend_type, w.wait_event_type, w.wait_event) AS rk,
		       w.n::float8 / sum(w.n) OVER (PARTITION BY w.interval_end) AS sh
		  FROM w
	)
	SELECT r.interval_start, r.interval_end, r.seconds, r.backend_type, r.wait_event_type,
	       r.wait_event, r.n, r.sh, r.n::float8 / nullif(s.ticks_taken, 0),
	       s.ticks_due, s.ticks_taken
	  FROM r
	  LEFT JOIN chronicle.wait_sampler_deltas(from_ts, to_ts) s ON s.interval_end = r.interval_end
	 WHERE top IS NULL OR r.rk <= top
	 ORDER BY r.interval_end, r.rk;
END;
$$;

-- (chronicle.timeline(): defined once, at the end of this script)

-- (chronicle.summary(): defined once, at the end of this script)

-- ---------------------------------------------------------------------
-- timeline() and summary(), changed by two sections above (the numbers
-- of the pgbench log, the database time of the waits): defined once, here.
-- ---------------------------------------------------------------------
-- Rollups (issue 14): timeline() gains resolution (and resolution_used).
DROP FUNCTION chronicle.timeline(timestamptz, timestamptz, boolean, boolean);

CREATE FUNCTION chronicle.timeline(from_ts timestamptz, to_ts timestamptz, waits boolean DEFAULT true,
                                   detail boolean DEFAULT false, resolution text DEFAULT 'auto')
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
	tps float8, latency_p50_ms float8, latency_p99_ms float8, resolution_used text)
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
	res     text;
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.timeline');
	IF waits IS NULL OR detail IS NULL THEN
		RAISE EXCEPTION 'chronicle.timeline: waits and detail must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
			      HINT = 'waits => false leaves the wait columns out; detail => true adds io_by_backend and top_waits.';
	END IF;
	-- Long windows, and windows whose raw rows are gone, from the rollups
	-- (60_rollups.sql): one row per minute or hour.  Raw up to 6 hours, 1
	-- hour with the jsonb breakdowns (each under 0.5 s).
	res := chronicle._resolution('chronicle.timeline', from_ts, to_ts, timeline.resolution,
	                             CASE WHEN detail THEN interval '1 hour' ELSE interval '6 hours' END);
	IF res <> 'raw' THEN
		RETURN QUERY SELECT * FROM chronicle._timeline_rollup(from_ts, to_ts, res, waits, detail);
		RETURN;
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
	wd AS MATERIALIZED (
		SELECT d.* FROM chronicle.wait_deltas(from_ts, to_ts, changed_only => true) d
		 WHERE timeline.detail AND d.samples > 0
	),
	wk AS (
		-- database time, classified once per key (OFFSET 0: not pushed below
		-- the DISTINCT)
		SELECT k.* FROM (SELECT DISTINCT d.backend_type, d.state, d.wait_event_type, d.wait_event
		                   FROM wd d OFFSET 0) k
		 WHERE chronicle._wait_activity(k.backend_type, k.state, k.wait_event_type, k.wait_event) = 'database'
	),
	wt AS (
		SELECT d.interval_end, d.wait_event_type || ':' || d.wait_event AS ev, sum(d.samples) AS n
		  FROM wd d JOIN wk k ON k.backend_type = d.backend_type AND k.state = d.state
		                     AND k.wait_event_type = d.wait_event_type AND k.wait_event = d.wait_event
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
		       s.active_cpu::float8 / s.t AS cpu,
		       s.active_io::float8 / s.t AS io,
		       s.active_lwlock::float8 / s.t AS lwlock,
		       s.active_lock::float8 / s.t AS lock,
		       s.active_ipc::float8 / s.t AS ipc,
		       s.active_client::float8 / s.t AS client,
		       s.active_timeout::float8 / s.t AS timeout,
		       s.active_other::float8 / s.t AS other
		  FROM (SELECT s.*,
		               -- active_* before 0.2.0 counted background processes too
		               CASE WHEN s.background_active IS NOT NULL THEN nullif(s.ticks_taken, 0) END AS t
		          FROM chronicle.wait_sampler_deltas(from_ts, to_ts) s) s
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
	       app.p50, app.p99, 'raw'::text
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

COMMENT ON FUNCTION chronicle.timeline(timestamptz, timestamptz, boolean, boolean, text) IS
	'One row per snapshot interval with the headline numbers: commits, I/O by backend type, WAL, checkpoints, buffers, memory, active processes by wait class (jsonb breakdowns by backend type and wait event on request), pgbench tps and latency';

REVOKE ALL ON FUNCTION chronicle.timeline(timestamptz, timestamptz, boolean, boolean, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.timeline(timestamptz, timestamptz, boolean, boolean, text) TO pg_monitor, pg_read_all_stats;

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

-- ---------------------------------------------------------------------
-- Housekeeping (issue 11, defects 2-5): chronicle.maintain() and the
-- collector's housekeeping never stop or stall recording (a subtransaction
-- per DDL under lock_timeout, skips counted in status()); a DEFAULT
-- partition per history table; indexes on the partitions, no day
-- partition a member of the extension, the data of every table dumped by
-- pg_dump; chronicle.retention parsed with the setting's units without
-- preload.
-- ---------------------------------------------------------------------

-- Partitions.  Every partitioned table of the schema is partitioned by day
-- (UTC) on ts into <table>_pYYYYMMDD, and has a DEFAULT partition,
-- <table>_default: a row whose day partition is missing (not created yet,
-- dropped by hand, its creation skipped under a lock) lands there instead
-- of failing, and the next chronicle.maintain() moves it into its day.
--
-- Indexes and primary keys live on the partitions, not on the parent
-- (chronicle._partition_layout() below moves them there): the parents
-- belong to the extension and the day partitions do not, so pg_dump dumps
-- each day partition with its own indexes, and a restore that attached it
-- to a parent with partitioned indexes would build them twice ("multiple
-- primary keys for table", "relation already exists").  A day partition
-- is created LIKE the default partition, indexes included.

-- The day partition of one table, if missing: created apart, the rows of
-- its day that wait in the default partition moved into it, then attached.
-- ATTACH PARTITION takes only a ShareUpdateExclusiveLock on the parent,
-- which neither readers nor writers conflict with (CREATE TABLE ...
-- PARTITION OF takes an AccessExclusiveLock), and an AccessExclusiveLock on
-- the default partition (scanned for rows of the new day).  Returns whether
-- it created the partition.
CREATE OR REPLACE FUNCTION chronicle._create_partition(parent regclass, day date)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	base  name := (SELECT c.relname FROM pg_class c WHERE c.oid = parent);
	pname text := base || '_p' || to_char(day, 'YYYYMMDD');
	dflt  text := base || '_default';
	lo    timestamptz := day::timestamp AT TIME ZONE 'UTC';
	hi    timestamptz := (day + 1)::timestamp AT TIME ZONE 'UTC';
BEGIN
	IF to_regclass(format('chronicle.%I', pname)) IS NOT NULL THEN
		RETURN false;
	END IF;
	EXECUTE format('CREATE TABLE chronicle.%I (LIKE chronicle.%I INCLUDING ALL)', pname, dflt);
	EXECUTE format('WITH moved AS (DELETE FROM chronicle.%I WHERE ts >= %L AND ts < %L RETURNING *)'
	               ' INSERT INTO chronicle.%I SELECT * FROM moved',
	               dflt, lo, hi, pname);
	EXECUTE format('ALTER TABLE %s ATTACH PARTITION chronicle.%I FOR VALUES FROM (%L) TO (%L)',
	               parent, pname, lo, hi);
	RETURN true;
END;
$$;

-- Daily partitions of every partitioned table in the schema.
CREATE OR REPLACE FUNCTION chronicle.ensure_partitions(from_ts timestamptz, to_ts timestamptz)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	parent  regclass;
	day     date;
	created integer := 0;
BEGIN
	IF from_ts IS NULL OR to_ts IS NULL THEN
		RAISE EXCEPTION 'chronicle.ensure_partitions: range bounds must not be NULL'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF to_ts < from_ts THEN
		RAISE EXCEPTION 'chronicle.ensure_partitions: range ends before it starts'
			USING ERRCODE = 'data_exception',
			      HINT = 'Pass the earlier timestamp first.';
	END IF;
	IF to_ts - from_ts > interval '3660 days' THEN
		RAISE EXCEPTION 'chronicle.ensure_partitions: range of % is too long', to_ts - from_ts
			USING ERRCODE = 'program_limit_exceeded',
			      HINT = 'Create at most ten years of daily partitions at once.';
	END IF;
	FOR parent IN
		SELECT c.oid::regclass
		  FROM pg_class c
		  JOIN pg_partitioned_table p ON p.partrelid = c.oid
		 WHERE c.relnamespace = 'chronicle'::regnamespace
		   AND NOT c.relispartition
		 ORDER BY c.relname
	LOOP
		FOR day IN
			SELECT d::date
			  FROM generate_series((from_ts AT TIME ZONE 'UTC')::date,
			                       (to_ts AT TIME ZONE 'UTC')::date,
			                       interval '1 day') AS d
		LOOP
			IF chronicle._create_partition(parent, day) THEN
				created := created + 1;
			END IF;
		END LOOP;
	END LOOP;
	RETURN created;
END;
$$;

COMMENT ON FUNCTION chronicle.ensure_partitions(timestamptz, timestamptz) IS
	'Creates the missing daily (UTC) partitions of every history table for a time range; returns how many';

-- chronicle.retention as the server parses it: a bare number is minutes,
-- units (min, h, d) as in postgresql.conf.  A session that has not loaded
-- the library only has the raw text of the setting ('20160' is 14 days,
-- not 20160 seconds); calling this C function loads the library, whose
-- definition of the setting parses the raw text by the GUC's rules.
CREATE FUNCTION chronicle._retention()
RETURNS interval
LANGUAGE C STABLE
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_retention_interval';

COMMENT ON FUNCTION chronicle._retention() IS
	'chronicle.retention as an interval, parsed with the setting''s unit rules (bare number = minutes)';

-- Housekeeping, one row per partition acted on: the partitions of today
-- and the next days created (with the rows waiting for them in the
-- default partition), the day partitions older than the retention dropped
-- (never DELETE).  Nothing here may stop the recording or stall anyone:
-- every creation and drop is a subtransaction of its own under a short
-- lock_timeout, and one that fails (a lock not granted in time, a view
-- that depends on the partition, ...) is reported with ok = false and
-- tried again next time; after a lock timeout the rest of that table waits
-- for the next run, so one run waits at most lock_timeout per table.
CREATE FUNCTION chronicle._maintain(retention interval,
	OUT action text, OUT relation text, OUT ok boolean, OUT code text, OUT message text)
RETURNS SETOF record
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
AS $$
DECLARE
	keep    interval := coalesce(retention, chronicle._retention());
	keep_rollups interval := chronicle._rollup_retention();
	today   date := (now() AT TIME ZONE 'UTC')::date;
	cutoff  date;
	rollup_cutoff date;
	table_cutoff  date;
	parent  record;
	step    record;
	waiting date[];
	blocked boolean;
BEGIN
	IF keep < interval '0' THEN
		RAISE EXCEPTION 'chronicle.maintain: retention must not be negative'
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Pass an interval such as ''7 days'', or 0 to keep everything.';
	END IF;
	-- A day partition goes when all of it is older than the retention.
	IF keep > interval '0' THEN
		cutoff := ((now() - keep) AT TIME ZONE 'UTC')::date;
	END IF;
	-- The rollups (60_rollups.sql) follow chronicle.rollup_retention.
	IF keep_rollups > interval '0' THEN
		rollup_cutoff := ((now() - keep_rollups) AT TIME ZONE 'UTC')::date;
	END IF;
	-- One housekeeping at a time in a database (the collector's, a pg_cron
	-- job's, a chronicle.snapshot()'s), until the end of its transaction:
	-- the next one waits for it, a second at most, and then finds the
	-- partitions made, so that no snapshot writes a row into a default
	-- partition while another session attaches that row's day (the row
	-- would fail the default partition's new constraint).  The key: this
	-- function's oid.
	BEGIN
		PERFORM set_config('lock_timeout', '1s', true);
		PERFORM pg_advisory_xact_lock('chronicle._maintain(interval)'::regprocedure::oid::bigint);
		PERFORM set_config('lock_timeout', '100ms', true);
	EXCEPTION WHEN lock_not_available THEN
		action := 'maintain';
		ok := false;
		code := '55P03';
		message := 'another housekeeping has been running in this database for more than 1 s';
		RETURN NEXT;
		RETURN;
	END;

	FOR parent IN
		SELECT c.oid::regclass AS oid, c.relname
		  FROM pg_class c
		  JOIN pg_partitioned_table p ON p.partrelid = c.oid
		 WHERE c.relnamespace = 'chronicle'::regnamespace
		   AND NOT c.relispartition
		 ORDER BY c.relname
	LOOP
		blocked := false;
		table_cutoff := CASE WHEN parent.relname IN ('rollup_minute', 'rollup_hour')
		                     THEN rollup_cutoff ELSE cutoff END;
		-- The days whose rows wait in the default partition (none, normally).
		BEGIN
			EXECUTE format('SELECT array_agg(DISTINCT (ts AT TIME ZONE ''UTC'')::date) FROM chronicle.%I',
			               parent.relname || '_default')
			   INTO waiting;
		EXCEPTION WHEN OTHERS THEN
			-- Locked or missing: the creations below report why.
			waiting := NULL;
			blocked := SQLSTATE = '55P03';
		END;

		-- Create today and the next three days (a skipped creation is
		-- retried long before its day comes) and the waiting days; then
		-- drop the expired days, those just created from waiting rows too.
		FOR step IN
			SELECT 'create' AS act, d AS day
			  FROM (SELECT g::date FROM generate_series(today, today + 3, interval '1 day') AS g
			        UNION
			        SELECT unnest(waiting)) AS s(d)
			UNION ALL
			SELECT 'drop', d
			  FROM (SELECT to_date(substring(c.relname FROM '_p([0-9]{8})$'), 'YYYYMMDD')
			          FROM pg_inherits i
			          JOIN pg_class c ON c.oid = i.inhrelid
			         WHERE i.inhparent = parent.oid
			           AND c.relkind = 'r'
			           AND c.relname = parent.relname || '_p' || substring(c.relname FROM '_p([0-9]{8})$')
			        UNION
			        SELECT unnest(waiting)) AS s(d)
			 WHERE d < table_cutoff
			 ORDER BY 1, 2
		LOOP
			action := step.act;
			relation := parent.relname || '_p' || to_char(step.day, 'YYYYMMDD');
			ok := false;
			code := NULL;
			message := NULL;
			IF step.act = 'drop' AND to_regclass(format('chronicle.%I', relation)) IS NULL THEN
				CONTINUE;		-- its creation failed, and was reported
			ELSIF blocked THEN
				code := '55P03';
				message := format('not tried after a lock timeout on %s in this run', parent.oid);
			ELSE
				BEGIN
					IF step.act = 'create' THEN
						ok := chronicle._create_partition(parent.oid, step.day);
						CONTINUE WHEN NOT ok;	-- it exists: nothing to say
					ELSE
						EXECUTE format('DROP TABLE chronicle.%I', relation);
						ok := true;
					END IF;
				EXCEPTION WHEN OTHERS THEN
					GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
					blocked := code = '55P03';
				END;
			END IF;
			RETURN NEXT;
		END LOOP;
	END LOOP;
END;
$$;

COMMENT ON FUNCTION chronicle._maintain(interval) IS
	'Housekeeping, one row per partition created, dropped or skipped (ok = false, with the error); used by maintain() and the collector';

DROP FUNCTION chronicle.maintain(interval);

-- Housekeeping from SQL (pg_cron, or by hand): what _maintain() did,
-- counted, and a WARNING for each partition it could not create or drop.
-- The collector calls _maintain() itself, hourly.
CREATE FUNCTION chronicle.maintain(retention interval DEFAULT NULL)
RETURNS TABLE (partitions_created integer, partitions_dropped integer, partitions_skipped integer)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r record;
BEGIN
	partitions_created := 0;
	partitions_dropped := 0;
	partitions_skipped := 0;
	FOR r IN SELECT * FROM chronicle._maintain(retention) LOOP
		IF r.relation IS NULL THEN
			RAISE WARNING 'chronicle.maintain: nothing done: %', r.message
				USING ERRCODE = r.code,
				      HINT = 'Try again later.';
		ELSIF NOT r.ok THEN
			partitions_skipped := partitions_skipped + 1;
			RAISE WARNING 'chronicle.maintain: could not % partition chronicle.%: %',
				r.action, r.relation, r.message
				USING ERRCODE = r.code,
				      HINT = 'Nothing waited for it and recording goes on; the next maintenance tries again.';
		ELSIF r.action = 'create' THEN
			partitions_created := partitions_created + 1;
		ELSE
			partitions_dropped := partitions_dropped + 1;
		END IF;
	END LOOP;
	RETURN NEXT;
END;
$$;

COMMENT ON FUNCTION chronicle.maintain(interval) IS
	'Creates the partitions of the coming days and drops those older than the retention (default: chronicle.retention); what it could not do is skipped with a WARNING';

-- The partition layout of every partitioned table of the schema (see
-- above): a DEFAULT partition; indexes and constraints on the partitions
-- only, not on the parent; no day partition a member of the extension.
-- Called at the end of the install and upgrade scripts, so that an index
-- declared on a parent in src/sql lands on the partitions: they are
-- detached, the parent's index dropped (each partition keeps its own copy)
-- and attached again.
CREATE FUNCTION chronicle._partition_layout()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	parent record;
	part   record;
	idx    record;
	parts  regclass[];
	bounds text[];
BEGIN
	FOR parent IN
		SELECT c.oid::regclass AS oid, c.relname
		  FROM pg_class c
		  JOIN pg_partitioned_table p ON p.partrelid = c.oid
		 WHERE c.relnamespace = 'chronicle'::regnamespace
		   AND NOT c.relispartition
		 ORDER BY c.relname
	LOOP
		IF NOT EXISTS (SELECT FROM pg_partitioned_table WHERE partrelid = parent.oid AND partdefid <> 0) THEN
			EXECUTE format('CREATE TABLE chronicle.%I PARTITION OF %s DEFAULT',
			               parent.relname || '_default', parent.oid);
		END IF;

		CONTINUE WHEN NOT EXISTS (SELECT FROM pg_index WHERE indrelid = parent.oid);
		-- The default partition last: attached after the days, it is
		-- scanned once.  pg_get_expr() gives each bound as SQL: FOR VALUES
		-- FROM (...) TO (...), or DEFAULT.
		SELECT array_agg(c.oid::regclass ORDER BY c.oid = t.partdefid, c.relname),
		       array_agg(pg_get_expr(c.relpartbound, c.oid) ORDER BY c.oid = t.partdefid, c.relname)
		  INTO parts, bounds
		  FROM pg_inherits i
		  JOIN pg_class c ON c.oid = i.inhrelid
		  JOIN pg_partitioned_table t ON t.partrelid = i.inhparent
		 WHERE i.inhparent = parent.oid;
		FOR n IN 1 .. coalesce(array_length(parts, 1), 0) LOOP
			EXECUTE format('ALTER TABLE %s DETACH PARTITION %s', parent.oid, parts[n]);
		END LOOP;
		FOR idx IN
			SELECT i.indexrelid::regclass AS oid, con.conname
			  FROM pg_index i
			  LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.conrelid = parent.oid
			 WHERE i.indrelid = parent.oid
		LOOP
			IF idx.conname IS NOT NULL THEN
				EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', parent.oid, idx.conname);
			ELSE
				EXECUTE format('DROP INDEX %s', idx.oid);
			END IF;
		END LOOP;
		FOR n IN 1 .. coalesce(array_length(parts, 1), 0) LOOP
			EXECUTE format('ALTER TABLE %s ATTACH PARTITION %s %s', parent.oid, parts[n], bounds[n]);
		END LOOP;
	END LOOP;

	-- Day partitions made by CREATE EXTENSION of 0.1.0 belong to the
	-- extension: they must not.  (No day partition is made here: the
	-- CREATE EXTENSION of a restore would make partitions the dump has.)
	FOR part IN
		SELECT c.oid::regclass AS oid
		  FROM pg_class c
		  JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid
		                  AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
		 WHERE c.relnamespace = 'chronicle'::regnamespace
		   AND c.relispartition
		   AND c.relname ~ '_p[0-9]{8}$'
	LOOP
		EXECUTE format('ALTER EXTENSION pg_chronicle DROP TABLE %s', part.oid);
	END LOOP;
END;
$$;

COMMENT ON FUNCTION chronicle._partition_layout() IS
	'Gives every partitioned table of the schema a DEFAULT partition and moves its indexes onto its partitions (run by the install and upgrade scripts)';

DROP FUNCTION chronicle.status();

CREATE FUNCTION chronicle.status(
	OUT running boolean,
	OUT pid integer,
	OUT state text,
	OUT started timestamptz,
	OUT last_snapshot timestamptz,
	OUT snapshots bigint,
	OUT snapshot_errors bigint,
	OUT ticks_due bigint,
	OUT ticks_missed bigint,
	OUT rows_written bigint,
	OUT wal_bytes bigint,
	OUT snapshot_ms_p50 float8,
	OUT snapshot_ms_p99 float8,
	OUT snapshot_ms_max float8,
	OUT wal_bytes_per_snapshot float8,
	OUT last_maintenance timestamptz,
	OUT partitions_created bigint,
	OUT partitions_dropped bigint,
	OUT partitions_skipped bigint,
	OUT maintenance_errors bigint,
	OUT last_maintenance_error text)
RETURNS record
LANGUAGE C STRICT
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_status';

COMMENT ON FUNCTION chronicle.status() IS
	'Whether the collector runs, what it recorded since it started, what that cost (worker time over the last 1024 snapshots), and its housekeeping: partitions created, dropped, skipped';

REVOKE ALL ON FUNCTION chronicle.maintain(interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._create_partition(regclass, date) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._retention() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._maintain(interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._partition_layout() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.status() TO pg_monitor, pg_read_all_stats;

-- ---------------------------------------------------------------------
-- One error style (issue 15): every message starts with the function the
-- caller called, conditions by name, windows checked by _check_range()
-- (a reversed window is data_exception everywhere), runs looked up by
-- _run_id().
-- ---------------------------------------------------------------------

CREATE FUNCTION chronicle._run_id(run text, caller text)
RETURNS integer
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_run integer;
BEGIN
	IF run IS NULL THEN
		RAISE EXCEPTION '%: the run label must not be NULL', caller
			USING ERRCODE = 'null_value_not_allowed',
			      HINT = 'Pass the label given to chronicle.run_begin() or chronicle.run_label().';
	END IF;
	SELECT r.run_id INTO v_run FROM chronicle.run r WHERE r.label = run;
	IF v_run IS NULL THEN
		RAISE EXCEPTION '%: unknown run "%"', caller, run
			USING ERRCODE = 'undefined_object',
			      HINT = coalesce('Known runs: ' || (SELECT string_agg(r.label, ', ' ORDER BY r.started)
			                                            FROM chronicle.run r) || '.',
			                      'No run is recorded yet; see chronicle.run_begin().');
	END IF;
	RETURN v_run;
END;
$$;

REVOKE ALL ON FUNCTION chronicle._run_id(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._run_id(text, text) TO pg_monitor, pg_read_all_stats;

CREATE OR REPLACE FUNCTION chronicle.run_window(run text, OUT run_from timestamptz, OUT run_to timestamptz)
RETURNS record
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_run integer := chronicle._run_id(run, 'chronicle.run_window');
BEGIN
	SELECT r.started, coalesce(r.ended, now()) INTO run_from, run_to
	  FROM chronicle.run r WHERE r.run_id = v_run;
	IF run_to <= run_from THEN
		RAISE EXCEPTION 'chronicle.run_window: run "%" is empty (it ended when it started)', run
			USING ERRCODE = 'data_exception',
			      HINT = 'A run needs run_end() after at least one snapshot.';
	END IF;
END;
$$;

CREATE OR REPLACE FUNCTION chronicle.statements_top(
	from_ts timestamptz,
	to_ts timestamptz,
	n integer DEFAULT 20,
	order_by text DEFAULT 'total_exec_time')
RETURNS TABLE (
	userid oid, dbid oid, queryid bigint, toplevel boolean,
	calls bigint, plans bigint,
	total_exec_time float8, mean_exec_time float8, total_plan_time float8,
	rows bigint,
	shared_blks_hit bigint, shared_blks_read bigint,
	shared_blks_dirtied bigint, shared_blks_written bigint,
	temp_blks_read bigint, temp_blks_written bigint,
	blk_read_time float8, blk_write_time float8,
	wal_records bigint, wal_fpi bigint, wal_bytes bigint,
	resets integer,
	query text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.statements_top');
	IF n IS NULL OR n < 1 THEN
		RAISE EXCEPTION 'chronicle.statements_top: n must be at least 1, got %', coalesce(n::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value', HINT = 'How many statements to show.';
	END IF;
	IF order_by IS NULL OR order_by NOT IN ('total_exec_time', 'calls', 'total_plan_time', 'rows',
	                                        'shared_blks_read', 'shared_blks_dirtied', 'shared_blks_written',
	                                        'temp_blks_written', 'blk_read_time', 'wal_bytes') THEN
		RAISE EXCEPTION 'chronicle.statements_top: cannot order statements by "%"', order_by
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Use total_exec_time, calls, total_plan_time, rows, shared_blks_read, shared_blks_dirtied, shared_blks_written, temp_blks_written, blk_read_time or wal_bytes.';
	END IF;

	RETURN QUERY EXECUTE pg_catalog.format($q$
	WITH base AS (
		-- the last reading at or before from_ts, per statement
		SELECT DISTINCT ON (h.userid, h.dbid, h.queryid, h.toplevel) h.*, true AS is_base
		  FROM chronicle.statements_history h
		 WHERE h.ts <= $1
		 ORDER BY h.userid, h.dbid, h.queryid, h.toplevel, h.ts DESC
	), r AS (
		SELECT * FROM base
		UNION ALL
		SELECT h.*, false FROM chronicle.statements_history h WHERE h.ts > $1 AND h.ts <= $2
	), k AS (
		SELECT r.*,
		       lag(r.calls) OVER w AS p_calls,
		       lag(r.stats_since) OVER w AS p_since,
		       lag(r.total_exec_time) OVER w AS p_exec,
		       lag(r.ts) OVER w AS p_ts,
		       lag(r.plans) OVER w AS p_plans, lag(r.total_plan_time) OVER w AS p_plan_time,
		       lag(r.rows) OVER w AS p_rows,
		       lag(r.shared_blks_hit) OVER w AS p_hit, lag(r.shared_blks_read) OVER w AS p_read,
		       lag(r.shared_blks_dirtied) OVER w AS p_dirtied, lag(r.shared_blks_written) OVER w AS p_written,
		       lag(r.temp_blks_read) OVER w AS p_tread, lag(r.temp_blks_written) OVER w AS p_twritten,
		       lag(r.blk_read_time) OVER w AS p_rtime, lag(r.blk_write_time) OVER w AS p_wtime,
		       lag(r.wal_records) OVER w AS p_wrec, lag(r.wal_fpi) OVER w AS p_wfpi, lag(r.wal_bytes) OVER w AS p_wbytes
		  FROM r
		WINDOW w AS (PARTITION BY r.userid, r.dbid, r.queryid, r.toplevel ORDER BY r.ts)
	), d AS (
		SELECT k.*,
		       CASE WHEN k.is_base THEN 'skip'
		            WHEN k.p_ts IS NULL THEN
		                 CASE WHEN k.stats_since > $1 THEN 'zero' ELSE 'skip' END
		            WHEN k.calls < k.p_calls OR k.total_exec_time < k.p_exec
		                 OR k.stats_since IS DISTINCT FROM k.p_since THEN 'zero'
		            ELSE 'diff' END AS how
		  FROM k
	), g AS (
		SELECT d.userid, d.dbid, d.queryid, d.toplevel,
		       sum(CASE d.how WHEN 'zero' THEN d.calls WHEN 'diff' THEN d.calls - d.p_calls ELSE 0 END)::bigint AS calls,
		       sum(CASE d.how WHEN 'zero' THEN d.plans WHEN 'diff' THEN d.plans - d.p_plans ELSE 0 END)::bigint AS plans,
		       sum(CASE d.how WHEN 'zero' THEN d.total_exec_time WHEN 'diff' THEN d.total_exec_time - d.p_exec ELSE 0 END) AS total_exec_time,
		       sum(CASE d.how WHEN 'zero' THEN d.total_plan_time WHEN 'diff' THEN d.total_plan_time - d.p_plan_time ELSE 0 END) AS total_plan_time,
		       sum(CASE d.how WHEN 'zero' THEN d.rows WHEN 'diff' THEN d.rows - d.p_rows ELSE 0 END)::bigint AS rows,
		       sum(CASE d.how WHEN 'zero' THEN d.shared_blks_hit WHEN 'diff' THEN d.shared_blks_hit - d.p_hit ELSE 0 END)::bigint AS shared_blks_hit,
		       sum(CASE d.how WHEN 'zero' THEN d.shared_blks_read WHEN 'diff' THEN d.shared_blks_read - d.p_read ELSE 0 END)::bigint AS shared_blks_read,
		       sum(CASE d.how WHEN 'zero' THEN d.shared_blks_dirtied WHEN 'diff' THEN d.shared_blks_dirtied - d.p_dirtied ELSE 0 END)::bigint AS shared_blks_dirtied,
		       sum(CASE d.how WHEN 'zero' THEN d.shared_blks_written WHEN 'diff' THEN d.shared_blks_written - d.p_written ELSE 0 END)::bigint AS shared_blks_written,
		       sum(CASE d.how WHEN 'zero' THEN d.temp_blks_read WHEN 'diff' THEN d.temp_blks_read - d.p_tread ELSE 0 END)::bigint AS temp_blks_read,
		       sum(CASE d.how WHEN 'zero' THEN d.temp_blks_written WHEN 'diff' THEN d.temp_blks_written - d.p_twritten ELSE 0 END)::bigint AS temp_blks_written,
		       sum(CASE d.how WHEN 'zero' THEN d.blk_read_time WHEN 'diff' THEN d.blk_read_time - d.p_rtime ELSE 0 END) AS blk_read_time,
		       sum(CASE d.how WHEN 'zero' THEN d.blk_write_time WHEN 'diff' THEN d.blk_write_time - d.p_wtime ELSE 0 END) AS blk_write_time,
		       sum(CASE d.how WHEN 'zero' THEN d.wal_records WHEN 'diff' THEN d.wal_records - d.p_wrec ELSE 0 END)::bigint AS wal_records,
		       sum(CASE d.how WHEN 'zero' THEN d.wal_fpi WHEN 'diff' THEN d.wal_fpi - d.p_wfpi ELSE 0 END)::bigint AS wal_fpi,
		       sum(CASE d.how WHEN 'zero' THEN d.wal_bytes WHEN 'diff' THEN d.wal_bytes - d.p_wbytes ELSE 0 END)::bigint AS wal_bytes,
		       (count(*) FILTER (WHERE d.how = 'zero' AND d.p_ts IS NOT NULL))::integer AS resets
		  FROM d
		 GROUP BY d.userid, d.dbid, d.queryid, d.toplevel
	)
	SELECT g.userid, g.dbid, g.queryid, g.toplevel, g.calls, g.plans,
	       g.total_exec_time, g.total_exec_time / nullif(g.calls, 0), g.total_plan_time,
	       g.rows, g.shared_blks_hit, g.shared_blks_read, g.shared_blks_dirtied, g.shared_blks_written,
	       g.temp_blks_read, g.temp_blks_written, g.blk_read_time, g.blk_write_time,
	       g.wal_records, g.wal_fpi, g.wal_bytes, g.resets, t.query
	  FROM g LEFT JOIN chronicle.statements_text t ON t.dbid = g.dbid AND t.queryid = g.queryid
	 WHERE g.calls > 0 OR g.plans > 0
	 ORDER BY g.%I DESC NULLS LAST, g.queryid
	 LIMIT $3
	$q$, order_by) USING from_ts, to_ts, n;
END;
$$;

CREATE OR REPLACE FUNCTION chronicle.pgbench_bad_line(p_file text, p_format text, p_ncols integer)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r record;
	first_no bigint;
BEGIN
	SELECT min(line_no) INTO first_no FROM pg_temp.chronicle_pgbench_lines WHERE file = p_file;
	FOR r IN
		SELECT line_no - first_no + 1 AS n, line, string_to_array(line, ' ') AS a
		  FROM pg_temp.chronicle_pgbench_lines
		 WHERE file = p_file
		 ORDER BY line_no
	LOOP
		IF cardinality(r.a) IS DISTINCT FROM p_ncols THEN
			RAISE EXCEPTION 'chronicle.load_pgbench_lines: malformed pgbench log line in "%" line %: % fields, expected % (%)',
				p_file, r.n, coalesce(cardinality(r.a), 0), p_ncols, p_format
				USING ERRCODE = 'bad_copy_file_format', DETAIL = format('The line is: %s', left(r.line, 200)),
				      HINT = 'Every line of a file must have the same layout; nothing was loaded.';
		END IF;
		IF p_format = 'transaction' THEN
			IF NOT (r.a[1] ~ '^\d{1,9}$' AND r.a[2] ~ '^\d{1,18}$' AND r.a[4] ~ '^\d{1,9}$'
					AND r.a[5] ~ '^\d{1,12}$' AND r.a[6] ~ '^\d{1,6}$'
					AND (r.a[3] ~ '^\d{1,18}$' OR r.a[3] IN ('skipped', 'failed', 'serialization', 'deadlock', 'other'))
					AND (p_ncols < 7 OR r.a[7] ~ '^\d{1,18}$')
					AND (p_ncols < 8 OR r.a[8] ~ '^\d{1,9}$')) THEN
				RAISE EXCEPTION 'chronicle.load_pgbench_lines: malformed pgbench log line in "%" line %: a field is not a number', p_file, r.n
					USING ERRCODE = 'invalid_text_representation', DETAIL = format('The line is: %s', left(r.line, 200)),
					      HINT = 'Nothing was loaded.';
			END IF;
		ELSE
			IF EXISTS (SELECT FROM unnest(r.a) AS f WHERE f !~ '^-?\d{1,30}(\.\d+)?$') THEN
				RAISE EXCEPTION 'chronicle.load_pgbench_lines: malformed pgbench aggregate log line in "%" line %: a field is not a number', p_file, r.n
					USING ERRCODE = 'invalid_text_representation', DETAIL = format('The line is: %s', left(r.line, 200)),
					      HINT = 'Nothing was loaded.';
			END IF;
		END IF;
	END LOOP;
	RAISE EXCEPTION 'chronicle.load_pgbench_lines: pgbench log "%" could not be parsed as %', p_file, p_format
		USING ERRCODE = 'invalid_text_representation', HINT = 'Nothing was loaded.';
END;
$$;

-- The run is "run" (issue 15, names): a parameter cannot be renamed in place.
DROP FUNCTION chronicle.load_pgbench_lines(text, text, text, boolean, integer);
CREATE FUNCTION chronicle.load_pgbench_lines(
	run text,
	format text DEFAULT 'auto',
	extra_column text DEFAULT 'lag',
	create_run boolean DEFAULT false,
	aggregate_interval integer DEFAULT NULL)
RETURNS TABLE (file text, log_format text, lines bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_run integer;
	f record;
	v_fmt text;
	v_n bigint;
	v_first bigint;
	v_started timestamptz;
	v_ended timestamptz;
	v_interval integer := aggregate_interval;
	v_files text[] := '{}';
	v_fmts text[] := '{}';
	v_lines bigint[] := '{}';
	v_cols integer[] := '{}';
	v_agg boolean := false;
BEGIN
	IF run IS NULL OR run = '' THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_lines: run label must not be NULL or empty'
			USING ERRCODE = 'null_value_not_allowed', HINT = 'Name the run the log belongs to, as given to chronicle.run_begin().';
	END IF;
	IF format IS NULL OR format NOT IN ('auto', 'transaction', 'aggregate') THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_lines: unknown pgbench log format "%"', format
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Use ''auto'', ''transaction'' or ''aggregate''.';
	END IF;
	IF extra_column IS NULL OR extra_column NOT IN ('lag', 'retries') THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_lines: extra_column must be ''lag'' or ''retries'', not "%"', extra_column
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'A 7-field per-transaction line has either the --rate schedule lag or the --max-tries retries.';
	END IF;
	IF aggregate_interval IS NOT NULL AND aggregate_interval < 1 THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_lines: aggregate_interval must be at least 1 second'
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Give the --aggregate-interval pgbench ran with, or NULL to infer it.';
	END IF;
	IF to_regclass('pg_temp.chronicle_pgbench_lines') IS NULL THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_lines: no staged pgbench log lines in this session'
			USING ERRCODE = 'object_not_in_prerequisite_state',
			      HINT = 'Call chronicle.pgbench_staging() and \copy the files into pg_temp.chronicle_pgbench_lines first, or use chronicle.load_pgbench_log().';
	END IF;

	SELECT r.run_id INTO v_run FROM chronicle.run r WHERE r.label = run;

	-- Layout of every file: the number of fields of each line must agree.
	FOR f IN
		SELECT s.file AS name, min(s.nf) AS mincols, max(s.nf) AS maxcols, count(*) AS n
		  FROM (SELECT s1.file, length(s1.line) - length(replace(s1.line, ' ', '')) + 1 AS nf
		          FROM pg_temp.chronicle_pgbench_lines s1) s
		 GROUP BY s.file ORDER BY s.file
	LOOP
		IF f.name IS NULL THEN
			RAISE EXCEPTION 'chronicle.load_pgbench_lines: staged pgbench log lines without a file name'
				USING ERRCODE = 'invalid_parameter_value', HINT = 'Set the default of pg_temp.chronicle_pgbench_lines.file before each \copy.';
		END IF;
		v_fmt := CASE WHEN format <> 'auto' THEN format
		              WHEN f.maxcols >= 10 THEN 'aggregate' ELSE 'transaction' END;
		IF f.mincols IS DISTINCT FROM f.maxcols
		   OR (v_fmt = 'transaction' AND f.maxcols NOT BETWEEN 6 AND 8)
		   OR (v_fmt = 'aggregate' AND f.maxcols NOT IN (6, 10, 11, 15)) THEN
			SELECT array_length(string_to_array(s.line, ' '), 1) INTO v_n
			  FROM pg_temp.chronicle_pgbench_lines s WHERE s.file = f.name ORDER BY s.line_no LIMIT 1;
			IF v_fmt = 'transaction' AND v_n NOT BETWEEN 6 AND 8 THEN v_n := 6; END IF;
			IF v_fmt = 'aggregate' AND v_n NOT IN (6, 10, 11, 15) THEN v_n := 15; END IF;
			PERFORM chronicle.pgbench_bad_line(f.name, v_fmt, v_n::integer);
		END IF;
		IF v_agg <> (v_fmt = 'aggregate') AND cardinality(v_files) > 0 THEN
			RAISE EXCEPTION 'chronicle.load_pgbench_lines: per-transaction and aggregate pgbench logs loaded together'
				USING ERRCODE = 'invalid_parameter_value', HINT = 'Load the per-transaction logs and the aggregate logs in separate calls.';
		END IF;
		v_agg := (v_fmt = 'aggregate');
		v_files := v_files || f.name;
		v_fmts := v_fmts || v_fmt;
		v_lines := v_lines || f.n;
		v_cols := v_cols || f.maxcols::integer;
	END LOOP;
	IF cardinality(v_files) = 0 THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_lines: the staged pgbench log is empty'
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Check the file names: no line was read.';
	END IF;

	-- The aggregation interval: given, or the smallest spacing of starts.
	IF v_agg AND v_interval IS NULL THEN
		SELECT min(d)::integer INTO v_interval
		  FROM (SELECT st - lag(st) OVER (PARTITION BY s.file ORDER BY s.line_no) AS d
		          FROM (SELECT s2.file, s2.line_no,
		                       CASE WHEN split_part(s2.line, ' ', 1) ~ '^\d{1,12}$'
		                            THEN split_part(s2.line, ' ', 1)::bigint END AS st
		                  FROM pg_temp.chronicle_pgbench_lines s2) s) x
		 WHERE d > 0;
	END IF;

	-- The run: it must exist, or is created from the log's time range.
	IF v_run IS NULL THEN
		IF NOT create_run THEN
			RAISE EXCEPTION 'chronicle.load_pgbench_lines: unknown run "%"', run
				USING ERRCODE = 'undefined_object',
				      HINT = 'Start it with chronicle.run_begin() before pgbench, or pass create_run => true to create it from the time range of the log.';
		END IF;
		BEGIN
		IF v_agg THEN
			SELECT to_timestamp(min(split_part(s.line, ' ', 1)::bigint)),
			       to_timestamp(max(split_part(s.line, ' ', 1)::bigint) + coalesce(v_interval, 1))
			  INTO v_started, v_ended FROM pg_temp.chronicle_pgbench_lines s;
		ELSE
			SELECT min(to_timestamp(split_part(s.line, ' ', 5)::bigint)
			           + split_part(s.line, ' ', 6)::bigint * interval '1 microsecond'
			           - CASE WHEN split_part(s.line, ' ', 3) ~ '^\d+$'
			                  THEN split_part(s.line, ' ', 3)::bigint ELSE 0 END * interval '1 microsecond'),
			       max(to_timestamp(split_part(s.line, ' ', 5)::bigint)
			           + split_part(s.line, ' ', 6)::bigint * interval '1 microsecond')
			  INTO v_started, v_ended FROM pg_temp.chronicle_pgbench_lines s;
		END IF;
		EXCEPTION
			WHEN invalid_text_representation OR numeric_value_out_of_range OR datetime_field_overflow THEN
				FOR i IN 1 .. cardinality(v_files) LOOP
					PERFORM chronicle.pgbench_bad_line(v_files[i], v_fmts[i], v_cols[i]);
				END LOOP;
				RAISE;
		END;
		INSERT INTO chronicle.run (label, started, ended, meta)
		VALUES (run, v_started, v_ended,
		        jsonb_build_object('created_by', 'chronicle.load_pgbench_lines', 'files', to_jsonb(v_files)))
		RETURNING run_id INTO v_run;
	END IF;

	IF NOT v_agg THEN
		-- Reloading a file replaces its rows.
		DELETE FROM chronicle.app_transaction t WHERE t.run_id = v_run AND t.source = ANY (v_files);
		-- One pass over every file: the layout of a line is its field count
		-- (the same on every line of a file, checked above).
		BEGIN
			INSERT INTO chronicle.app_transaction
				(run_id, ts, client_id, tx_no, script_no, latency_us, lag_us, retries, status, source)
			SELECT v_run,
			       -- a negative or out-of-range number is malformed too
			       to_timestamp(a[5]::bigint)
			       + (CASE WHEN a[6]::bigint BETWEEN 0 AND 999999 AND a[5]::bigint >= 0
			               THEN a[6] ELSE 'malformed ' || a[6] END)::bigint * interval '1 microsecond',
			       a[1]::integer, a[2]::bigint, a[4]::integer,
			       CASE WHEN a[3] IN ('skipped', 'failed', 'serialization', 'deadlock', 'other')
			            THEN NULL ELSE a[3]::bigint END,
			       CASE WHEN n = 8 OR (n = 7 AND extra_column = 'lag') THEN a[7]::bigint END,
			       CASE WHEN n = 8 OR (n = 7 AND extra_column = 'retries') THEN a[n]::integer END,
			       CASE WHEN a[3] IN ('skipped', 'failed', 'serialization', 'deadlock', 'other')
			            THEN a[3] ELSE 'ok' END,
			       l.file
			  FROM (SELECT s.file, string_to_array(s.line, ' ') AS a,
			               length(s.line) - length(replace(s.line, ' ', '')) + 1 AS n
			          FROM pg_temp.chronicle_pgbench_lines s
			         OFFSET 0) AS l;		-- split each line once, not once per field
		EXCEPTION
			WHEN invalid_text_representation OR numeric_value_out_of_range
			     OR datetime_field_overflow OR invalid_parameter_value THEN
				FOR i IN 1 .. cardinality(v_files) LOOP
					PERFORM chronicle.pgbench_bad_line(v_files[i], 'transaction', v_cols[i]);
				END LOOP;
				RAISE;
		END;
	ELSE
		BEGIN
			INSERT INTO chronicle.app_interval AS ai
				(run_id, interval_start, num_transactions, sum_latency_us, sum_latency_2,
				 min_latency_us, max_latency_us, sum_lag_us, sum_lag_2, min_lag_us, max_lag_us,
				 skipped, retried, retries, serialization_failures, deadlock_failures, interval_secs)
			SELECT v_run, to_timestamp(a[1]::bigint), sum(a[2]::bigint),
			       sum(a[3]::float8), sum(a[4]::float8),
			       -- an idle thread's interval shows min 0: not a latency
			       min(a[5]::float8) FILTER (WHERE a[2]::bigint > 0), max(a[6]::float8),
			       sum(a[7]::float8), sum(a[8]::float8),
			       min(a[9]::float8) FILTER (WHERE a[2]::bigint > 0), max(a[10]::float8),
			       sum(a[11]::bigint), sum(a[12]::bigint), sum(a[13]::bigint),
			       sum(a[14]::bigint), sum(a[15]::bigint), v_interval
			  FROM (SELECT string_to_array(s.line, ' ') AS a FROM pg_temp.chronicle_pgbench_lines s
			         OFFSET 0) l		-- split each line once, not once per field
			 GROUP BY a[1]::bigint
			ON CONFLICT (run_id, interval_start) DO UPDATE
			   SET num_transactions = excluded.num_transactions,
			       sum_latency_us = excluded.sum_latency_us, sum_latency_2 = excluded.sum_latency_2,
			       min_latency_us = excluded.min_latency_us, max_latency_us = excluded.max_latency_us,
			       sum_lag_us = excluded.sum_lag_us, sum_lag_2 = excluded.sum_lag_2,
			       min_lag_us = excluded.min_lag_us, max_lag_us = excluded.max_lag_us,
			       skipped = excluded.skipped, retried = excluded.retried, retries = excluded.retries,
			       serialization_failures = excluded.serialization_failures,
			       deadlock_failures = excluded.deadlock_failures,
			       interval_secs = excluded.interval_secs;
		EXCEPTION
			WHEN invalid_text_representation OR numeric_value_out_of_range OR datetime_field_overflow THEN
				FOR i IN 1 .. cardinality(v_files) LOOP
					PERFORM chronicle.pgbench_bad_line(v_files[i], 'aggregate', v_cols[i]);
				END LOOP;
				RAISE;
		END;
	END IF;

	RETURN QUERY SELECT u.f, u.fmt, u.n FROM unnest(v_files, v_fmts, v_lines) AS u(f, fmt, n);
END;
$$;
COMMENT ON FUNCTION chronicle.load_pgbench_lines(text, text, text, boolean, integer) IS
	'Parses the pgbench log lines staged in pg_temp.chronicle_pgbench_lines into app_transaction or app_interval of a run';
REVOKE ALL ON FUNCTION chronicle.load_pgbench_lines(text, text, text, boolean, integer) FROM PUBLIC;

-- The run is "run" (issue 15, names): a parameter cannot be renamed in place.
DROP FUNCTION chronicle.load_pgbench_log(text, text, text, text, boolean, integer);
CREATE FUNCTION chronicle.load_pgbench_log(
	run text,
	path text,
	format text DEFAULT 'auto',
	extra_column text DEFAULT 'lag',
	create_run boolean DEFAULT false,
	aggregate_interval integer DEFAULT NULL)
RETURNS TABLE (file text, log_format text, lines bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_dir text;
	v_base text;
	v_files text[];
	v_f text;
BEGIN
	IF path IS NULL OR path = '' THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_log: path must not be NULL or empty'
			USING ERRCODE = 'null_value_not_allowed', HINT = 'Give the log file, or the prefix of the per-thread files (pgbench_log.12345).';
	END IF;
	IF left(path, 1) <> '/' THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_log: path "%" is not absolute', path
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Server-side loading reads files of the database server: give an absolute path.';
	END IF;
	IF NOT (pg_has_role(current_user, 'pg_read_server_files', 'USAGE')
	        OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)) THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_log: permission denied to read server files'
			USING ERRCODE = 'insufficient_privilege',
			      HINT = 'Loading a file of the server needs the pg_read_server_files role; from a client, use tools/pgbench-log-load or the \copy recipe of the README.';
	END IF;

	-- A prefix names every <prefix>.<pid>[.<thread>] file (and itself, if a file).
	v_dir := regexp_replace(path, '/[^/]*$', '');
	IF v_dir = '' THEN v_dir := '/'; END IF;
	v_base := regexp_replace(path, '^.*/', '');
	IF has_function_privilege('pg_catalog.pg_ls_dir(text, boolean, boolean)', 'EXECUTE') THEN
		SELECT array_agg(rtrim(v_dir, '/') || '/' || d ORDER BY d) INTO v_files
		  FROM pg_ls_dir(v_dir, true, false) AS d
		 WHERE d = v_base
		    OR (starts_with(d, v_base || '.') AND substr(d, length(v_base) + 2) ~ '^\d+(\.\d+)?$');
		IF v_files IS NULL THEN
			RAISE EXCEPTION 'chronicle.load_pgbench_log: no pgbench log file "%" or "%.<pid>[.<thread>]"', path, path
				USING ERRCODE = 'undefined_file', HINT = 'Check the path: it is read on the database server.';
		END IF;
	ELSE
		-- Without pg_ls_dir the path must name one file.
		v_files := ARRAY[path];
	END IF;

	PERFORM chronicle.pgbench_staging();
	FOREACH v_f IN ARRAY v_files LOOP
		EXECUTE pg_catalog.format('ALTER TABLE pg_temp.chronicle_pgbench_lines ALTER COLUMN file SET DEFAULT %L', v_f);
		EXECUTE pg_catalog.format('COPY pg_temp.chronicle_pgbench_lines (line) FROM %L', v_f);
	END LOOP;
	RETURN QUERY SELECT * FROM chronicle.load_pgbench_lines(run, format, extra_column, create_run, aggregate_interval);
	TRUNCATE pg_temp.chronicle_pgbench_lines;
END;
$$;
COMMENT ON FUNCTION chronicle.load_pgbench_log(text, text, text, text, boolean, integer) IS
	'Loads pgbench logs from server files (a file, or a prefix for every <prefix>.<pid>[.<thread>]) into a run';
REVOKE ALL ON FUNCTION chronicle.load_pgbench_log(text, text, text, text, boolean, integer) FROM PUBLIC;

-- The run is "run" (issue 15, names): a parameter cannot be renamed in place.
DROP FUNCTION chronicle.app_run_id(text);
CREATE FUNCTION chronicle.app_run_id(run text)
RETURNS integer
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT chronicle._run_id(run, 'chronicle.app_run_id')
$$;
REVOKE ALL ON FUNCTION chronicle.app_run_id(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.app_run_id(text) TO pg_monitor, pg_read_all_stats;

-- The run is "run" (issue 15, names): a parameter cannot be renamed in place.
DROP FUNCTION chronicle.add_metric(text, float8, timestamptz, text);
CREATE FUNCTION chronicle.add_metric(name text, value float8,
									 ts timestamptz DEFAULT now(),
									 run text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF name IS NULL OR name = '' THEN
		RAISE EXCEPTION 'chronicle.add_metric: metric name must not be NULL or empty'
			USING ERRCODE = 'null_value_not_allowed', HINT = 'Name the series, e.g. ''app.orders_per_s''.';
	END IF;
	IF value IS NULL OR ts IS NULL THEN
		RAISE EXCEPTION 'chronicle.add_metric: metric value and time must not be NULL'
			USING ERRCODE = 'null_value_not_allowed', HINT = 'Leave ts out for now().';
	END IF;
	INSERT INTO chronicle.app_metric (ts, name, value, run_id)
	VALUES (ts, name, value,
	        CASE WHEN run IS NOT NULL THEN chronicle._run_id(run, 'chronicle.add_metric') END);
END;
$$;
COMMENT ON FUNCTION chronicle.add_metric(text, float8, timestamptz, text) IS
	'Records one value of an application metric series, optionally tied to a run';
REVOKE ALL ON FUNCTION chronicle.add_metric(text, float8, timestamptz, text) FROM PUBLIC;

-- The run is "run" (issue 15, names): a parameter cannot be renamed in place.
DROP FUNCTION chronicle.run_end(text);
CREATE FUNCTION chronicle.run_end(run text DEFAULT NULL)
RETURNS chronicle.run
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r chronicle.run;
BEGIN
	IF run IS NULL THEN
		SELECT * INTO r FROM chronicle.run o WHERE o.ended IS NULL FOR UPDATE;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'chronicle.run_end: no run is open'
				USING ERRCODE = 'object_not_in_prerequisite_state',
				      HINT = 'Open one with chronicle.run_begin(label).';
		END IF;
	ELSE
		SELECT * INTO r FROM chronicle.run o WHERE o.label = run_end.run FOR UPDATE;
		IF NOT FOUND THEN
			PERFORM chronicle._run_id(run, 'chronicle.run_end');	-- the unknown-run error
		END IF;
		IF r.ended IS NOT NULL THEN
			RAISE EXCEPTION 'chronicle.run_end: run "%" has ended already', run
				USING ERRCODE = 'object_not_in_prerequisite_state',
				      HINT = 'Only an open run can be ended.';
		END IF;
	END IF;
	UPDATE chronicle.run o SET ended = greatest(clock_timestamp(), o.started)
	 WHERE o.run_id = r.run_id
	RETURNING * INTO r;
	RETURN r;
END;
$$;
COMMENT ON FUNCTION chronicle.run_end(text) IS
	'Ends the open run (or the one named) now';
REVOKE ALL ON FUNCTION chronicle.run_end(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.run_end(text) TO pg_monitor;

-- The run is "run" (issue 15, names): a parameter cannot be renamed in place.
DROP FUNCTION chronicle.run_delete(text);
CREATE FUNCTION chronicle.run_delete(run text)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM chronicle._run_id(run, 'chronicle.run_delete');	-- NULL and unknown-run errors
	DELETE FROM chronicle.run r WHERE r.label = run_delete.run;
END;
$$;
COMMENT ON FUNCTION chronicle.run_delete(text) IS
	'Forgets a run (and its application metrics); the history itself stays';
REVOKE ALL ON FUNCTION chronicle.run_delete(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.run_delete(text) TO pg_monitor;

-- The default partitions, the 0.1.0 day partitions out of the extension
-- with indexes of their own.  Keep this after every index added to a
-- history table in this script.
SELECT chronicle._partition_layout();

-- pg_dump dumps the rows of every table of the extension (and the state of
-- its sequences): CREATE EXTENSION makes the tables at restore, the rows
-- come from the dump.  Not chronicle.metric, which this script fills.  The
-- day partitions do not belong to the extension and are dumped whole.
-- (One call a statement: each one updates the extension's row.)
DO $$
DECLARE
	t regclass;
BEGIN
	FOR t IN
		SELECT c.oid::regclass
		  FROM pg_catalog.pg_class c
		  JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_class'::regclass
		                             AND d.objid = c.oid AND d.deptype = 'e'
		  JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_chronicle'
		 WHERE c.relnamespace = 'chronicle'::regnamespace
		   AND c.relkind IN ('r', 'S')
		   AND c.oid <> 'chronicle.metric'::regclass
		 ORDER BY c.relname
	LOOP
		PERFORM pg_catalog.pg_extension_config_dump(t, '');
	END LOOP;
END;
$$;

-- ---------------------------------------------------------------------
-- See it (issue 13): runs keep every setting (those at their default too)
-- and their environment (src/environment.c); compare_environment().
-- ---------------------------------------------------------------------

ALTER TABLE chronicle.run ADD COLUMN environment jsonb NOT NULL DEFAULT '{}';
COMMENT ON TABLE chronicle.run IS
	'Benchmark runs: a labelled time range with its metadata, settings, server version and environment';

-- _run_open() takes the environment: dropped and created again.
DROP FUNCTION chronicle._run_open(text, jsonb, text[], text[]);

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
	SELECT * INTO r FROM chronicle.run o WHERE o.ended IS NULL;
	IF FOUND THEN
		RAISE EXCEPTION 'chronicle.run_begin: run "%" is still open', r.label
			USING ERRCODE = 'object_in_use',
			      HINT = 'End it first with SELECT chronicle.run_end();';
	END IF;
	INSERT INTO chronicle.run (label, started, meta, settings, server_version, environment)
	VALUES (label, clock_timestamp(), meta,
	        (SELECT coalesce(jsonb_object_agg(u.n, chronicle._redact_setting(u.n, u.v) ORDER BY u.n), '{}')
	           FROM unnest(names, vals) AS u(n, v)),
	        current_setting('server_version'), coalesce(environment, '{}'))
	RETURNING * INTO r;
	RETURN r;
END;
$$;

COMMENT ON FUNCTION chronicle.run_begin(text, jsonb) IS
	'Opens a labelled benchmark run now, remembering the server version, the settings the caller may read (passwords redacted) and the environment (build, OS, CPU, devices)';

COMMENT ON FUNCTION chronicle.compare_settings(text, text) IS
	'Settings (at the start of each run) that differ between two runs, and the server version if it differs';

-- The environment that differs between two runs: the nested keys of
-- chronicle.run.environment as dotted names ('device.pg_wal.scheduler'), a
-- key one run has and the other has not with NULL on that side.  A run
-- without an environment (labelled after the fact, or opened by 0.1.0) has
-- '{}': every key of the other is listed.
CREATE FUNCTION chronicle.compare_environment(a text, b text)
RETURNS TABLE (name text, value_a text, value_b text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
	PERFORM chronicle._run_id(a, 'chronicle.compare_environment');
	PERFORM chronicle._run_id(b, 'chronicle.compare_environment');
	RETURN QUERY
	WITH RECURSIVE r AS (
		SELECT 'a' AS side, r.environment AS env FROM chronicle.run r WHERE r.label = compare_environment.a
		UNION ALL
		SELECT 'b', r.environment FROM chronicle.run r WHERE r.label = compare_environment.b
	), flat(side, key, value) AS (
		SELECT r.side, e.key, e.value FROM r, jsonb_each(r.env) e
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
	 ORDER BY 1;
END;
$$;

COMMENT ON FUNCTION chronicle.compare_environment(text, text) IS
	'The environment (build, kernel, CPU, memory, cpufreq, huge pages, devices of the data directory and pg_wal) that differs between two runs, by dotted name';

REVOKE ALL ON FUNCTION chronicle._run_open(text, jsonb, text[], text[], jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.compare_environment(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.compare_environment(text, text) TO pg_monitor, pg_read_all_stats;

-- See it (issue 13): the run profile, src/sql/37_run_profile.sql (new).

-- Analysis API, part 7: a run explained.  slowest_intervals(): the worst
-- snapshot intervals of a run (pgbench p99, or throughput), each with the
-- recorded metrics that differ most from the run's median.
--
-- The metrics are timeline()'s per-interval series (and wal_buffers_full,
-- OS pressure), in the units a person reads (MB = 10^6 bytes).  An
-- interval's score for a metric is robust: |value - median| divided by the
-- larger of 1.4826 * MAD (the standard deviation of a normal series), a
-- tenth of |median| (a big metric moving by little is not news) and a
-- floor per metric (below it a change means nothing: 1 MB/s, 0.1 active
-- session, ...), so that a metric flat at zero in most intervals (the
-- checkpointer's writes, Lock waits) scores its value over its floor when
-- it moves.  Metrics within 2 of the median (score < 2) are not reported.

-- The metrics: position in the values array built by slowest_intervals(),
-- timeline column (or source), label, unit, floor (in the unit).
CREATE FUNCTION chronicle._interval_metrics()
RETURNS TABLE (i integer, metric text, label text, unit text, floor float8)
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT * FROM (VALUES
		(1, 'checkpointer_write_bytes_per_s', 'checkpointer writes', 'MB/s', 1.0::float8),
		(2, 'bgwriter_write_bytes_per_s', 'bgwriter writes', 'MB/s', 1.0),
		(3, 'client_write_bytes_per_s', 'client backend writes', 'MB/s', 1.0),
		(4, 'autovacuum_write_bytes_per_s', 'autovacuum writes', 'MB/s', 1.0),
		(5, 'read_bytes_per_s', 'reads', 'MB/s', 1.0),
		(6, 'extend_bytes_per_s', 'extends', 'MB/s', 1.0),
		(7, 'fsyncs_per_s', 'fsyncs', '/s', 1.0),
		(8, 'wal_bytes_per_s', 'WAL', 'MB/s', 1.0),
		(9, 'wal_fpi_per_s', 'full-page images', '/s', 10.0),
		(10, 'wal_buffers_full_per_s', 'wal_buffers full', '/s', 1.0),
		(11, 'checkpoints', 'checkpoints ended', 'in the interval', 1.0),
		(12, 'buffers_dirty', 'dirty shared buffers', 'buffers', 128.0),
		(13, 'mem_dirty_kb', 'OS Dirty', 'MB', 10.0),
		(14, 'mem_writeback_kb', 'OS Writeback', 'MB', 1.0),
		(15, 'active_cpu', 'CPU', 'sessions', 0.1),
		(16, 'active_io', 'IO waits', 'sessions', 0.1),
		(17, 'active_lwlock', 'LWLock waits', 'sessions', 0.1),
		(18, 'active_lock', 'Lock waits', 'sessions', 0.1),
		(19, 'active_ipc', 'IPC waits', 'sessions', 0.1),
		(20, 'active_client', 'Client waits', 'sessions', 0.1),
		(21, 'active_timeout', 'Timeout waits', 'sessions', 0.1),
		(22, 'active_other', 'other waits', 'sessions', 0.1),
		(23, 'pressure_cpu_some', 'CPU pressure', '% stalled', 1.0),
		(24, 'pressure_io_some', 'IO pressure', '% stalled', 1.0),
		(25, 'pressure_memory_some', 'memory pressure', '% stalled', 1.0)
	) AS m(i, metric, label, unit, floor)
$$;

-- A value as the explanations write it: three digits or so.
CREATE FUNCTION chronicle._fmt(v float8, unit text)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN v = 0 THEN '0'
	            WHEN abs(v) >= 100 THEN round(v::numeric)::text
	            WHEN abs(v) >= 1 THEN round(v::numeric, 1)::text
	            ELSE round(v::numeric, 2)::text END
	       || CASE WHEN unit IS NULL THEN '' WHEN unit LIKE '/%' THEN unit ELSE ' ' || unit END
$$;

CREATE FUNCTION chronicle.slowest_intervals(run text, n integer DEFAULT 10, by text DEFAULT 'p99')
RETURNS TABLE (rank integer, interval_start timestamptz, interval_end timestamptz, tps float8,
               latency_p50_ms float8, latency_p99_ms float8, latency_max_ms float8,
               explanation text, details jsonb)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
DECLARE
	w_from timestamptz;
	w_to timestamptz;
	v_run integer;
	has_tx boolean;
	has_app boolean;
BEGIN
	PERFORM chronicle._run_id(slowest_intervals.run, 'chronicle.slowest_intervals');
	SELECT w.run_from, w.run_to INTO w_from, w_to
	  FROM chronicle.run_window(slowest_intervals.run) w;
	IF n IS NULL OR n < 1 THEN
		RAISE EXCEPTION 'chronicle.slowest_intervals: n must be at least 1, got %', coalesce(n::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'n is how many intervals to list, for example 10.';
	END IF;
	IF slowest_intervals.by IS NULL OR slowest_intervals.by NOT IN ('p99', 'tps') THEN
		RAISE EXCEPTION 'chronicle.slowest_intervals: unknown ranking "%"', coalesce(slowest_intervals.by, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'by => ''p99'' ranks by the worst pgbench p99 latency, by => ''tps'' by the lowest throughput.';
	END IF;
	SELECT r.run_id INTO v_run FROM chronicle.run r WHERE r.label = slowest_intervals.run;
	has_tx := EXISTS (SELECT FROM chronicle.app_transaction t WHERE t.run_id = v_run);
	has_app := has_tx OR EXISTS (SELECT FROM chronicle.app_interval a WHERE a.run_id = v_run);
	IF slowest_intervals.by = 'p99' AND NOT has_tx THEN
		RAISE EXCEPTION 'chronicle.slowest_intervals: run "%" has no per-transaction pgbench log: no p99 to rank by',
			slowest_intervals.run
			USING ERRCODE = 'object_not_in_prerequisite_state',
			      HINT = CASE WHEN has_app
			                  THEN 'Its aggregate log has no percentiles: rank by => ''tps''.'
			                  ELSE 'Load the log of pgbench -l with chronicle.load_pgbench_log(), or rank by => ''tps'' (commits/s).' END;
	END IF;

	RETURN QUERY
	WITH tl AS MATERIALIZED (
		SELECT * FROM chronicle.timeline(w_from, w_to)
	), app AS MATERIALIZED (
		SELECT a.* FROM chronicle.app_intervals(w_from, w_to, slowest_intervals.run) a WHERE has_app
	), wal AS (
		SELECT d.interval_end, d.wal_buffers_full_per_s FROM chronicle.wal_deltas(w_from, w_to) d
	), pr AS (
		-- microseconds stalled per second: / 10^4 is the % of the time
		SELECT p.interval_end,
		       max(p.some_total_per_s) FILTER (WHERE p.resource = 'cpu') / 1e4 AS cpu,
		       max(p.some_total_per_s) FILTER (WHERE p.resource = 'io') / 1e4 AS io,
		       max(p.some_total_per_s) FILTER (WHERE p.resource = 'memory') / 1e4 AS memory
		  FROM chronicle.os_pressure_deltas(w_from, w_to) p
		 WHERE NOT p.reset
		 GROUP BY p.interval_end
	), iv AS MATERIALIZED (
		SELECT tl.interval_start, tl.interval_end,
		       CASE WHEN has_app THEN app.tps ELSE tl.commits_per_s END AS tps,
		       app.latency_p50_ms AS p50, app.latency_p99_ms AS p99, app.latency_max_ms AS lmax,
		       -- the larger the worse; NULL: not ranked (no transaction
		       -- ended in it, or pgbench was not running in it)
		       CASE WHEN slowest_intervals.by = 'p99' THEN app.latency_p99_ms
		            WHEN has_app THEN CASE WHEN app.active_seconds > 0 THEN -app.tps END
		            ELSE -tl.commits_per_s END AS badness,
		       ARRAY[tl.checkpointer_write_bytes_per_s / 1e6, tl.bgwriter_write_bytes_per_s / 1e6,
		             tl.client_write_bytes_per_s / 1e6, tl.autovacuum_write_bytes_per_s / 1e6,
		             tl.read_bytes_per_s / 1e6, tl.extend_bytes_per_s / 1e6, tl.fsyncs_per_s,
		             tl.wal_bytes_per_s / 1e6, tl.wal_fpi_per_s, wal.wal_buffers_full_per_s,
		             tl.checkpoints::float8, tl.buffers_dirty::float8,
		             tl.mem_dirty_kb * 1024 / 1e6, tl.mem_writeback_kb * 1024 / 1e6,
		             tl.active_cpu, tl.active_io, tl.active_lwlock, tl.active_lock, tl.active_ipc,
		             tl.active_client, tl.active_timeout, tl.active_other,
		             pr.cpu, pr.io, pr.memory]::float8[] AS vals
		  FROM tl
		  LEFT JOIN app ON app.interval_end = tl.interval_end
		  LEFT JOIN wal ON wal.interval_end = tl.interval_end
		  LEFT JOIN pr ON pr.interval_end = tl.interval_end
	), m AS (
		SELECT * FROM chronicle._interval_metrics()
	), v AS MATERIALIZED (
		SELECT iv.interval_end, m.i, iv.vals[m.i] AS value
		  FROM iv CROSS JOIN m
		 WHERE iv.vals[m.i] IS NOT NULL
	), med AS (
		SELECT v.i, percentile_cont(0.5) WITHIN GROUP (ORDER BY v.value) AS median
		  FROM v GROUP BY v.i
	), mad AS (
		SELECT v.i, med.median,
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(v.value - med.median)) AS mad
		  FROM v JOIN med ON med.i = v.i
		 GROUP BY v.i, med.median
	), top AS MATERIALIZED (
		SELECT iv.*, row_number() OVER (ORDER BY iv.badness DESC, iv.interval_end) AS rk
		  FROM iv
		 WHERE iv.badness IS NOT NULL
		 ORDER BY iv.badness DESC, iv.interval_end
		 LIMIT slowest_intervals.n
	), sc AS (
		SELECT top.rk, m.i, m.metric, m.label, m.unit, v.value, mad.median,
		       abs(v.value - mad.median) / greatest(1.4826 * mad.mad, 0.1 * abs(mad.median), m.floor) AS score
		  FROM top
		  JOIN v ON v.interval_end = top.interval_end
		  JOIN m ON m.i = v.i
		  JOIN mad ON mad.i = v.i
	), best AS (
		SELECT s.*
		  FROM (SELECT sc.*, row_number() OVER (PARTITION BY sc.rk ORDER BY sc.score DESC, sc.i) AS k
		          FROM sc WHERE sc.score >= 2) s
		 WHERE s.k <= 5
	), ex AS (
		SELECT b.rk,
		       string_agg(b.label || ' ' || chronicle._fmt(b.value, b.unit) || ', median '
		                  || chronicle._fmt(b.median, NULL), '; ' ORDER BY b.k) AS text,
		       jsonb_agg(jsonb_build_object('metric', b.label, 'column', b.metric, 'unit', b.unit,
		                                    'value', b.value, 'median', b.median,
		                                    'score', round(b.score::numeric, 2)) ORDER BY b.k) AS details
		  FROM best b
		 GROUP BY b.rk
	)
	SELECT top.rk::integer, top.interval_start, top.interval_end, top.tps, top.p50, top.p99, top.lmax,
	       coalesce(ex.text, 'no recorded metric stands out (all within 2 robust deviations of the run''s median)'),
	       coalesce(ex.details, '[]'::jsonb)
	  FROM top
	  LEFT JOIN ex ON ex.rk = top.rk
	 ORDER BY top.rk;
END;
$$;

COMMENT ON FUNCTION chronicle.slowest_intervals(text, integer, text) IS
	'The n worst snapshot intervals of a run (by => p99: highest pgbench p99; tps: lowest throughput), each explained by the recorded metrics furthest from the run''s median (robust score, up to 5)';

REVOKE ALL ON FUNCTION chronicle._interval_metrics() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._fmt(float8, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.slowest_intervals(text, integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._interval_metrics() TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._fmt(float8, text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.slowest_intervals(text, integer, text) TO pg_monitor, pg_read_all_stats;

-- The load profile of a run, AWR style: each metric per second of the
-- run's window and per transaction (per commit of pg_stat_database, every
-- database: defined for loads without a pgbench log too, and the same for
-- both runs of a comparison).  From the window totals of each source
-- (*_run_totals(), app_summary()), over the window's seconds (summary()'s).
-- I/O is pg_stat_io's relation objects (not the 18 "wal" rows).  Waits are
-- the sampler's active sessions per class: per second the average active
-- sessions (session-seconds per second), per transaction the
-- session-seconds per transaction.  pgbench's tps is per second only, its
-- latencies per transaction only (NULL without a log; percentiles need the
-- per-transaction log).
CREATE FUNCTION chronicle.load_profile(run text)
RETURNS TABLE (metric text, unit text, per_second float8, per_transaction float8)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
	w_from timestamptz;
	w_to timestamptz;
	secs float8;
BEGIN
	PERFORM chronicle._run_id(load_profile.run, 'chronicle.load_profile');
	SELECT w.run_from, w.run_to INTO w_from, w_to
	  FROM chronicle.run_window(load_profile.run) w;
	SELECT w.seconds INTO secs FROM chronicle._window(w_from, w_to) w;
	RETURN QUERY
	WITH db AS (
		SELECT sum(d.xact_commit)::float8 AS c, sum(d.xact_rollback)::float8 AS r
		  FROM chronicle.database_run_totals(load_profile.run) d
	), io AS (
		SELECT sum(d.reads)::float8 AS rd, sum(d.read_bytes)::float8 AS rb,
		       sum(d.writes)::float8 AS wr, sum(d.write_bytes)::float8 AS wb,
		       CASE WHEN count(*) > 0 THEN coalesce(sum(d.write_bytes) FILTER (WHERE d.backend_type = 'checkpointer'), 0) END::float8 AS wb_ckpt,
		       CASE WHEN count(*) > 0 THEN coalesce(sum(d.write_bytes) FILTER (WHERE d.backend_type = 'background writer'), 0) END::float8 AS wb_bgw,
		       CASE WHEN count(*) > 0 THEN coalesce(sum(d.write_bytes) FILTER (WHERE d.backend_type = 'client backend'), 0) END::float8 AS wb_client,
		       sum(d.extends)::float8 AS ex, sum(d.extend_bytes)::float8 AS eb,
		       sum(d.fsyncs)::float8 AS fs, sum(d.hits)::float8 AS hi, sum(d.evictions)::float8 AS ev
		  FROM chronicle.io_run_totals(load_profile.run) d
		 WHERE d.object <> 'wal'
	), wal AS (
		SELECT sum(x.wal_bytes)::float8 AS b, sum(x.wal_records)::float8 AS r,
		       sum(x.wal_fpi)::float8 AS f, sum(x.wal_buffers_full)::float8 AS bf
		  FROM chronicle.wal_run_totals(load_profile.run) x
	), wt AS (
		-- ticks: the sampler's samples; active_x / ticks is the average
		-- number of sessions of that class
		SELECT sum(s.active_cpu)::float8 AS cpu, sum(s.active_io)::float8 AS io,
		       sum(s.active_lwlock)::float8 AS lwlock, sum(s.active_lock)::float8 AS lock,
		       sum(s.active_ipc)::float8 AS ipc, sum(s.active_client)::float8 AS client,
		       sum(s.active_timeout)::float8 AS timeout, sum(s.active_other)::float8 AS other,
		       nullif(sum(s.ticks_taken), 0)::float8 AS ticks
		  FROM chronicle.wait_sampler_run_totals(load_profile.run) s
	), app AS (
		SELECT a.tps, a.latency_p50_ms AS p50, a.latency_p99_ms AS p99
		  FROM chronicle.app_summary(load_profile.run) a
	)
	SELECT u.metric, u.unit, u.per_second, u.per_transaction
	  FROM (
	SELECT v.ord, v.metric, v.unit,
	       CASE WHEN v.per_s THEN v.total / secs END AS per_second,
	       CASE WHEN v.per_tx THEN v.total / nullif(db.c, 0) END AS per_transaction
	  FROM db, io, wal, wt,
	       LATERAL (VALUES
		(1, 'commits', 'transactions', db.c, true, false),
		(2, 'rollbacks', 'transactions', db.r, true, true),
		(10, 'WAL', 'bytes', wal.b, true, true),
		(11, 'WAL records', 'records', wal.r, true, true),
		(12, 'full-page images', 'images', wal.f, true, true),
		(13, 'wal_buffers full', 'events', wal.bf, true, true),
		(20, 'reads', 'operations', io.rd, true, true),
		(21, 'read bytes', 'bytes', io.rb, true, true),
		(22, 'writes', 'operations', io.wr, true, true),
		(23, 'write bytes', 'bytes', io.wb, true, true),
		(24, 'checkpointer write bytes', 'bytes', io.wb_ckpt, true, true),
		(25, 'bgwriter write bytes', 'bytes', io.wb_bgw, true, true),
		(26, 'client backend write bytes', 'bytes', io.wb_client, true, true),
		(27, 'extends', 'operations', io.ex, true, true),
		(28, 'extend bytes', 'bytes', io.eb, true, true),
		(29, 'fsyncs', 'operations', io.fs, true, true),
		(30, 'hits', 'buffers', io.hi, true, true),
		(31, 'evictions', 'buffers', io.ev, true, true),
		(40, 'DB time', 'session-seconds',
		 (wt.cpu + wt.io + wt.lwlock + wt.lock + wt.ipc + wt.client + wt.timeout + wt.other) / wt.ticks * secs,
		 true, true),
		(41, 'CPU', 'session-seconds', wt.cpu / wt.ticks * secs, true, true),
		(42, 'IO waits', 'session-seconds', wt.io / wt.ticks * secs, true, true),
		(43, 'LWLock waits', 'session-seconds', wt.lwlock / wt.ticks * secs, true, true),
		(44, 'Lock waits', 'session-seconds', wt.lock / wt.ticks * secs, true, true),
		(45, 'IPC waits', 'session-seconds', wt.ipc / wt.ticks * secs, true, true),
		(46, 'Client waits', 'session-seconds', wt.client / wt.ticks * secs, true, true),
		(47, 'Timeout waits', 'session-seconds', wt.timeout / wt.ticks * secs, true, true),
		(48, 'other waits', 'session-seconds', wt.other / wt.ticks * secs, true, true)
	       ) AS v(ord, metric, unit, total, per_s, per_tx)
	UNION ALL
	SELECT v.ord, v.metric, v.unit, v.per_s, v.per_tx
	  FROM app,
	       LATERAL (VALUES
		(50, 'pgbench tps', 'transactions', app.tps, NULL::float8),
		(51, 'latency p50', 'ms', NULL, app.p50),
		(52, 'latency p99', 'ms', NULL, app.p99)
	       ) AS v(ord, metric, unit, per_s, per_tx)
	       ) u
	 ORDER BY u.ord;
END;
$$;

COMMENT ON FUNCTION chronicle.load_profile(text) IS
	'AWR-style load profile of a run: commits, WAL, I/O, waits by class per second and per transaction (commit), pgbench tps and latency p50/p99';

-- Two load profiles side by side: ratio = B / A per transaction where both
-- runs have it, else per second (NULL when A is 0: marked if B is not).
-- marked: the ratio is off 1 by more than 10 %.
CREATE FUNCTION chronicle.compare_load_profile(a text, b text)
RETURNS TABLE (metric text, unit text, a_per_second float8, b_per_second float8,
               a_per_transaction float8, b_per_transaction float8, ratio float8, marked boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT x.metric, x.unit, x.a_s, x.b_s, x.a_t, x.b_t,
	       x.vb / nullif(x.va, 0),
	       coalesce(CASE WHEN x.va = 0 THEN x.vb <> 0 ELSE abs(x.vb / x.va - 1) > 0.10 END, false)
	  FROM (SELECT pa.ord, pa.metric, pa.unit, pa.per_second AS a_s, pb.per_second AS b_s,
	               pa.per_transaction AS a_t, pb.per_transaction AS b_t,
	               CASE WHEN pa.per_transaction IS NOT NULL AND pb.per_transaction IS NOT NULL
	                    THEN pa.per_transaction ELSE pa.per_second END AS va,
	               CASE WHEN pa.per_transaction IS NOT NULL AND pb.per_transaction IS NOT NULL
	                    THEN pb.per_transaction ELSE pb.per_second END AS vb
	          FROM (SELECT p.*, row_number() OVER () AS ord FROM chronicle.load_profile(a) p) pa
	          JOIN chronicle.load_profile(b) pb ON pb.metric = pa.metric) x
	 ORDER BY x.ord
$$;

COMMENT ON FUNCTION chronicle.compare_load_profile(text, text) IS
	'Load profiles of two runs side by side, ratio B / A (per transaction where both have it, else per second), marked beyond 10 %';

REVOKE ALL ON FUNCTION chronicle.load_profile(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.compare_load_profile(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.load_profile(text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.compare_load_profile(text, text) TO pg_monitor, pg_read_all_stats;

-- ---------------------------------------------------------------------
-- Storage v2 (issue 14): the recording server's identity in every
-- snapshot row (system identifier and chronicle.server_name), and
-- chronicle.server().  Snapshots recorded before keep NULL there.
-- chronicle._source_columns(): the C column lists, for the tests that tie
-- them to the tables.
-- ---------------------------------------------------------------------

ALTER TABLE chronicle.snapshot ADD COLUMN system_identifier bigint, ADD COLUMN server_name text;

CREATE FUNCTION chronicle.server(OUT system_identifier bigint, OUT name text)
RETURNS record
LANGUAGE C STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_server';

COMMENT ON FUNCTION chronicle.server() IS
	'The identity this server records in every snapshot row: system identifier (shared with its physical standbys) and name (chronicle.server_name, else cluster_name, else the host name)';

REVOKE ALL ON FUNCTION chronicle.server() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.server() TO pg_monitor, pg_read_all_stats;

-- The columns every source writes (after ts), as its C file declares them;
-- the tests compare them with the history tables (docs/storage.md).
CREATE FUNCTION chronicle._source_columns(
	OUT source text,
	OUT ordinal integer,
	OUT column_name text,
	OUT column_type regtype,
	OUT key boolean)
RETURNS SETOF record
LANGUAGE C STRICT
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_source_columns';

COMMENT ON FUNCTION chronicle._source_columns() IS
	'The columns of every source as the C source declares them (after ts), in insert order, and which identify a row';

REVOKE ALL ON FUNCTION chronicle._source_columns() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._source_columns() TO pg_monitor, pg_read_all_stats;

-- ---------------------------------------------------------------------
-- Rollups for long windows (issue 14, items 3 and 5): per-minute and
-- per-hour rollups written by the collector's housekeeping, kept for
-- chronicle.rollup_retention; timeline() reads them for long windows
-- (defined above, with the other definition of timeline()).
-- ---------------------------------------------------------------------

-- Rollups: per-minute and per-hour aggregates of every per-interval series
-- the analysis functions serve, kept longer than the raw 1 s rows
-- (chronicle.rollup_retention, default 90 days, against chronicle.retention
-- for the raw rows), so that long windows are answered from them.  See
-- docs/rollups.md.
--
-- They are computed from the per-interval functions (<source>_deltas,
-- buffers_values, the engine's reset-aware deltas), never from the
-- physical rows, so they hold exactly what those functions say, whatever
-- the storage of the history.
--
-- A bucket ts covers the intervals whose END lies in (ts, ts + 1 minute]
-- (or 1 hour), as a window (from, to] holds the intervals ending in it:
-- a window whose bounds are whole minutes is exactly a set of buckets.
--
-- One row per bucket, source and key:
--   source 'intervals', key '{}': the snapshot intervals of the bucket
--     (seconds, intervals); the other sources' seconds may be fewer;
--   an unkeyed source (wal, checkpointer, ...), key '{}';
--   a keyed source (io, database, wait, os_disk, os_pressure): one row per
--     key that changed in the bucket (the key columns' values in key), and
--     one row with key '{}' that says the source was recorded and how many
--     seconds count;
--   source 'app', key {run_id}: the pgbench transactions (status ok) that
--     ended in the bucket, with a latency histogram.
--   seconds: seconds of the intervals counted; an interval in which any key
--     of the source was reset (a NULL delta in the engine) is left out of
--     every key of that source (resets says how many were);
--   vals: per column of the source, counters [sum of deltas, min and max of
--     the per-second rate over the intervals], gauges [min, max, avg, last];
--     a counter whose sum, min and max are all 0 is left out (reads as 0),
--     a column NULL in every interval is [] (reads as NULL).
--   hist (app): latency histogram, log buckets: bucket i holds latencies in
--     [1.02^i, 1.02^(i+1)) microseconds (below 1 us: bucket 0), so that a
--     percentile read from it at the bucket's geometric middle is within 1 %
--     (1.02^0.5 - 1 = 0.995 %) of the exact one.

CREATE TABLE chronicle.rollup_minute (
	ts        timestamptz NOT NULL,
	source    text NOT NULL,
	key       text[] NOT NULL,
	seconds   float8 NOT NULL,
	intervals integer NOT NULL,
	resets    integer NOT NULL,
	vals      jsonb NOT NULL,
	hist      jsonb,
	PRIMARY KEY (ts, source, key)
) PARTITION BY RANGE (ts);
COMMENT ON TABLE chronicle.rollup_minute IS
	'Per-minute rollups of every per-interval series: sums and min/max rates of counters, min/max/avg/last of gauges, latency histograms (see docs/rollups.md)';

CREATE TABLE chronicle.rollup_hour (
	ts        timestamptz NOT NULL,
	source    text NOT NULL,
	key       text[] NOT NULL,
	seconds   float8 NOT NULL,
	intervals integer NOT NULL,
	resets    integer NOT NULL,
	vals      jsonb NOT NULL,
	hist      jsonb,
	PRIMARY KEY (ts, source, key)
) PARTITION BY RANGE (ts);
COMMENT ON TABLE chronicle.rollup_hour IS
	'Per-hour rollups, merged from rollup_minute (same shape)';

-- How far the minutes are rolled up: every complete minute before
-- done_until was looked at (one row).
CREATE TABLE chronicle.rollup_state (
	id         boolean PRIMARY KEY DEFAULT true CHECK (id),
	done_until timestamptz
);
COMMENT ON TABLE chronicle.rollup_state IS
	'How far housekeeping has rolled up the history (every minute before done_until)';

-- Time ranges whose pgbench transactions changed (loaded late, or deleted
-- with their run): their minutes are rolled up again.
CREATE TABLE chronicle.rollup_dirty (
	lo timestamptz NOT NULL,
	hi timestamptz NOT NULL
);
COMMENT ON TABLE chronicle.rollup_dirty IS
	'Time ranges of application rows loaded or deleted since they were rolled up: rolled up again by the next housekeeping (not dumped: a restore marks the rows it loads)';

-- chronicle.rollup_retention as an interval (as _retention() for the raw rows).
CREATE FUNCTION chronicle._rollup_retention()
RETURNS interval
LANGUAGE C STABLE
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_rollup_retention_interval';

COMMENT ON FUNCTION chronicle._rollup_retention() IS
	'chronicle.rollup_retention as an interval, parsed with the setting''s unit rules (bare number = minutes)';

-- The series rolled up: every source of the metric catalog, its per-interval
-- function, its key columns and its counter and gauge columns.
CREATE FUNCTION chronicle._rollup_sources(
	OUT source text, OUT func text, OUT keys text[], OUT has_reset boolean,
	OUT counters text[], OUT gauges text[])
RETURNS SETOF record
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT m.source, m.func,
	       -- the filters of a keyed function, and the session state of a
	       -- wait (which makes it database time or not); query ids are summed
	       CASE WHEN NOT 'changed_only' = ANY (p.proargnames) THEN '{}'
	            WHEN m.source = 'wait' THEN ARRAY['backend_type', 'state', 'wait_event_type', 'wait_event']
	            ELSE min(m.filters) END,
	       'reset' = ANY (p.proargnames),
	       coalesce(array_agg(DISTINCT c.col ORDER BY c.col) FILTER (WHERE m.kind <> 'gauge'), '{}'),
	       coalesce(array_agg(DISTINCT c.col ORDER BY c.col) FILTER (WHERE m.kind = 'gauge'), '{}')
	  FROM chronicle.metric m
	  JOIN pg_proc p ON p.pronamespace = 'chronicle'::regnamespace AND p.proname = m.func
	                AND p.proargtypes[0] = 'timestamptz'::regtype AND p.proargtypes[1] = 'timestamptz'::regtype
	 CROSS JOIN LATERAL (SELECT m.col UNION SELECT m.col2 WHERE m.col2 IS NOT NULL) c(col)
	 WHERE m.func ~ '^[a-z_]+_(deltas|values)$'
	 GROUP BY m.source, m.func, p.proargnames
	 ORDER BY m.source
$$;

-- The minute rows of the buckets ending in (from, to], both whole minutes,
-- computed from the per-interval functions (nothing is written).
CREATE FUNCTION chronicle._rollup_compute(from_ts timestamptz, to_ts timestamptz)
RETURNS TABLE (ts timestamptz, source text, key text[], seconds float8, intervals integer,
               resets integer, vals jsonb, hist jsonb)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET work_mem = '256MB'
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
DECLARE
	s      record;
	keyed  boolean;
	keyexp text;
	aggs   text;
	pairs  text[];
	obj    text;
	q      text;
	ends   timestamptz[];
	secs   float8[];
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle._rollup_compute');
	SELECT array_agg(i.interval_end ORDER BY i.interval_end), array_agg(i.seconds ORDER BY i.interval_end)
	  INTO ends, secs
	  FROM chronicle.intervals(from_ts, to_ts) i;

	RETURN QUERY
	SELECT date_trunc('minute', i.e - interval '1 microsecond'), 'intervals'::text, '{}'::text[],
	       sum(i.s), count(*)::integer, 0, '{}'::jsonb, NULL::jsonb
	  FROM unnest(ends, secs) AS i(e, s)
	 GROUP BY 1;

	FOR s IN SELECT * FROM chronicle._rollup_sources() LOOP
		keyed := cardinality(s.keys) > 0;
		keyexp := CASE WHEN keyed
		               THEN 'ARRAY[' || (SELECT string_agg(format('d0.%I::text', k), ', ' ORDER BY o)
		                                   FROM unnest(s.keys) WITH ORDINALITY AS u(k, o)) || ']'
		               ELSE '''{}''::text[]' END;
		-- per interval and key: counters summed over what the key leaves
		-- out (query ids), gauges as they are (one row per interval)
		SELECT string_agg(x, ', ') INTO aggs
		  FROM (SELECT format('sum(d0.%I)::float8 AS %I', c, c) FROM unnest(s.counters) c
		        UNION ALL
		        SELECT format('max(d0.%I)::float8 AS %I', g, g) FROM unnest(s.gauges) g) a(x);
		-- counters over the intervals of the bucket not reset: [sum, min
		-- rate, max rate], where an interval in which the key did not
		-- change (no row: changed_only) has rate 0; gauges over every
		-- interval: [min, max, avg, last]
		pairs := ARRAY(
			SELECT format(
				'%L, CASE WHEN count(d.%I) FILTER (WHERE NOT d.rs) = 0 AND bool_or(NOT d.rs) THEN ''[]''::jsonb
				          WHEN coalesce(sum(d.%I) FILTER (WHERE NOT d.rs), 0) = 0
				               AND coalesce(min(d.%I / d.seconds) FILTER (WHERE NOT d.rs), 0) = 0
				               AND coalesce(max(d.%I / d.seconds) FILTER (WHERE NOT d.rs), 0) = 0 THEN NULL
				          ELSE jsonb_build_array(sum(d.%I) FILTER (WHERE NOT d.rs),
				                   CASE WHEN count(d.%I) FILTER (WHERE NOT d.rs) < b.good_n
				                        THEN least(min(d.%I / d.seconds) FILTER (WHERE NOT d.rs), 0)
				                        ELSE min(d.%I / d.seconds) FILTER (WHERE NOT d.rs) END,
				                   CASE WHEN count(d.%I) FILTER (WHERE NOT d.rs) < b.good_n
				                        THEN greatest(max(d.%I / d.seconds) FILTER (WHERE NOT d.rs), 0)
				                        ELSE max(d.%I / d.seconds) FILTER (WHERE NOT d.rs) END) END',
				c, c, c, c, c, c, c, c, c, c, c, c)
			  FROM unnest(s.counters) c
			UNION ALL
			SELECT format(
				'%L, CASE WHEN count(d.%I) = 0 THEN ''[]''::jsonb
				          ELSE jsonb_build_array(min(d.%I), max(d.%I), avg(d.%I),
				                   (array_agg(d.%I ORDER BY d.interval_end DESC) FILTER (WHERE d.%I IS NOT NULL))[1]) END',
				g, g, g, g, g, g, g)
			  FROM unnest(s.gauges) g);
		-- jsonb_build_object() takes at most 100 arguments: one object
		-- per 40 columns, concatenated
		SELECT coalesce('jsonb_strip_nulls(' || string_agg('jsonb_build_object(' || x || ')', ' || ') || ')',
		                '''{}''::jsonb')
		  INTO obj
		  FROM (SELECT string_agg(p, ', ' ORDER BY o) AS x
		          FROM unnest(pairs) WITH ORDINALITY AS u(p, o)
		         GROUP BY (o - 1) / 40) c;
		q := format($q$
			WITH d0 AS MATERIALIZED (
				SELECT * FROM chronicle.%1$I($1, $2%2$s)
			),
			rs AS (
				SELECT DISTINCT d0.interval_end FROM d0 WHERE %3$s
			),
			ivb AS (
				SELECT i.e AS interval_end, i.s AS seconds,
				       date_trunc('minute', i.e - interval '1 microsecond') AS m,
				       rs.interval_end IS NOT NULL AS rs
				  FROM unnest($3::timestamptz[], $4::float8[]) AS i(e, s)
				  LEFT JOIN rs ON rs.interval_end = i.e
			),
			b AS (
				SELECT ivb.m, coalesce(sum(ivb.seconds) FILTER (WHERE NOT ivb.rs), 0) AS good_s,
				       count(*) FILTER (WHERE NOT ivb.rs) AS good_n, count(*) AS n,
				       count(*) FILTER (WHERE ivb.rs) AS n_rs
				  FROM ivb GROUP BY ivb.m
			),
			k AS (
				SELECT d0.interval_end, %4$s AS key, %5$s
				  FROM d0 GROUP BY 1, 2
			),
			d AS (
				SELECT ivb.m, ivb.seconds, ivb.rs, k.*
				  FROM k JOIN ivb ON ivb.interval_end = k.interval_end
			)
			SELECT d.m, %6$L::text, d.key, b.good_s, b.n::integer, b.n_rs::integer, %7$s, NULL::jsonb
			  FROM d JOIN b ON b.m = d.m
			 GROUP BY d.m, d.key, b.good_s, b.good_n, b.n, b.n_rs
			%8$s$q$,
			s.func,
			CASE WHEN keyed THEN ', changed_only => true' ELSE '' END,
			CASE WHEN s.has_reset THEN 'd0.reset' ELSE 'false' END,
			keyexp, aggs, s.source, obj,
			-- a keyed source: one row more per bucket, key '{}', saying
			-- it was recorded and what its seconds are
			CASE WHEN keyed THEN format($k$
			UNION ALL
			SELECT b.m, %L::text, '{}'::text[], b.good_s, b.n::integer, b.n_rs::integer, '{}'::jsonb, NULL::jsonb
			  FROM b WHERE EXISTS (SELECT FROM d0)$k$, s.source) ELSE '' END);
		RETURN QUERY EXECUTE q USING from_ts, to_ts, ends, secs;
	END LOOP;

	-- pgbench transactions: count, latency sum/min/max and histogram
	RETURN QUERY
	SELECT h.m, 'app'::text, ARRAY[h.run_id::text], 0::float8, 0, 0,
	       jsonb_build_object('transactions', sum(h.n), 'latency_us_sum', sum(h.lat_sum),
	                          'latency_us_min', min(h.lat_min), 'latency_us_max', max(h.lat_max)),
	       jsonb_object_agg(h.b::text, h.n)
	  FROM (SELECT date_trunc('minute', t.ts - interval '1 microsecond') AS m, t.run_id,
	               chronicle._latency_bucket(t.latency_us) AS b, count(*) AS n,
	               sum(t.latency_us) AS lat_sum, min(t.latency_us) AS lat_min, max(t.latency_us) AS lat_max
	          FROM chronicle.app_transaction t
	         WHERE t.ts > from_ts AND t.ts <= to_ts AND t.status = 'ok' AND t.latency_us IS NOT NULL
	         GROUP BY 1, 2, 3) h
	 GROUP BY h.m, h.run_id;
END;
$$;

-- The histogram bucket of a latency in microseconds, and the value a
-- bucket stands for (its geometric middle): within 0.995 % of any latency
-- of the bucket.
CREATE FUNCTION chronicle._latency_bucket(latency_us float8)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT floor(ln(greatest(latency_us, 1)) / ln(1.02))::integer $$;

CREATE FUNCTION chronicle._latency_bucket_value(bucket integer)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT power(1.02::float8, bucket + 0.5) $$;

-- Nearest-rank percentiles (as percentile_disc) of a latency histogram,
-- in milliseconds, each clamped to the [min, max] latency it came with.
CREATE FUNCTION chronicle._hist_percentiles(hist jsonb, percentiles float8[],
                                            lat_min float8 DEFAULT NULL, lat_max float8 DEFAULT NULL)
RETURNS float8[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT array_agg((SELECT least(greatest(chronicle._latency_bucket_value(c.b), lat_min), lat_max) / 1000
	                    FROM (SELECT h.b, sum(h.n) OVER (ORDER BY h.b) AS cum, sum(h.n) OVER () AS total
	                            FROM (SELECT e.key::integer AS b, e.value::bigint AS n FROM jsonb_each_text(hist) e) h) c
	                   WHERE c.cum >= greatest(ceil(p.p * c.total), 1)
	                   ORDER BY c.b LIMIT 1) ORDER BY p.o)
	  FROM unnest(percentiles) WITH ORDINALITY AS p(p, o)
$$;

-- Merges rows of one source and key (minutes into an hour, or the rows of
-- a bucket): counters add up, min of mins and max of maxes (0 counted when
-- a row is missing: the key did not change then), gauges weighted by their
-- intervals with the last one last.  n_rows: how many buckets the key
-- could have had a row in (the source's '{}' rows).
CREATE FUNCTION chronicle._rollup_merge(vals jsonb[], intervals integer[], n_rows integer)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(jsonb_object_agg(c.col, c.v) FILTER (WHERE c.v IS NOT NULL), '{}')
	  FROM (SELECT e.key AS col,
	               CASE WHEN max(jsonb_array_length(e.value)) = 4 THEN
	                    jsonb_build_array(min((e.value->>0)::float8), max((e.value->>1)::float8),
	                                      sum((e.value->>2)::float8 * v.n) / nullif(sum(v.n) FILTER (WHERE e.value->>2 IS NOT NULL), 0),
	                                      (array_agg(e.value->3 ORDER BY v.o DESC) FILTER (WHERE jsonb_array_length(e.value) = 4))[1])
	                    WHEN count(e.value->>0) = 0 THEN
	                         CASE WHEN count(*) = n_rows THEN '[]'::jsonb END
	                    ELSE jsonb_build_array(sum((e.value->>0)::numeric),
	                                           CASE WHEN count(e.value->>0) < n_rows THEN least(min((e.value->>1)::float8), 0)
	                                                ELSE min((e.value->>1)::float8) END,
	                                           CASE WHEN count(e.value->>0) < n_rows THEN greatest(max((e.value->>2)::float8), 0)
	                                                ELSE max((e.value->>2)::float8) END) END AS v
	          FROM unnest(vals, intervals) WITH ORDINALITY AS v(j, n, o)
	         CROSS JOIN LATERAL jsonb_each(v.j) e
	         GROUP BY e.key) c
$$;

-- The hour rows of some hours, merged from their minute rows.
CREATE FUNCTION chronicle._rollup_hours(hours timestamptz[])
RETURNS TABLE (ts timestamptz, source text, key text[], seconds float8, intervals integer,
               resets integer, vals jsonb, hist jsonb)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH m AS (
		SELECT date_trunc('hour', r.ts) AS h, r.*
		  FROM chronicle.rollup_minute r
		 WHERE date_trunc('hour', r.ts) = ANY (hours)
	),
	src AS (
		-- per hour and source: the minutes it was recorded in
		SELECT m.h, m.source, count(*)::integer AS n
		  FROM m WHERE m.key = '{}' GROUP BY 1, 2
	)
	-- counters, gauges
	SELECT m.h, m.source, m.key, sum(m.seconds), sum(m.intervals)::integer, sum(m.resets)::integer,
	       chronicle._rollup_merge(array_agg(m.vals ORDER BY m.ts), array_agg(m.intervals ORDER BY m.ts),
	                               coalesce(min(src.n), count(*)::integer)),
	       NULL::jsonb
	  FROM m LEFT JOIN src ON src.h = m.h AND src.source = m.source
	 WHERE m.source <> 'app'
	 GROUP BY m.h, m.source, m.key
	UNION ALL
	-- pgbench: counts and sums add, histograms add
	SELECT m.h, 'app', m.key, 0, 0, 0,
	       jsonb_build_object('transactions', sum((m.vals->>'transactions')::bigint),
	                          'latency_us_sum', sum((m.vals->>'latency_us_sum')::numeric),
	                          'latency_us_min', min((m.vals->>'latency_us_min')::float8),
	                          'latency_us_max', max((m.vals->>'latency_us_max')::float8)),
	       (SELECT jsonb_object_agg(x.b, x.n)
	          FROM (SELECT e.key AS b, sum(e.value::bigint) AS n
	                  FROM unnest(array_agg(m.hist)) AS hh(j), jsonb_each_text(hh.j) e
	                 GROUP BY e.key) x)
	  FROM m
	 WHERE m.source = 'app'
	 GROUP BY m.h, m.key
$$;

-- Housekeeping's rollup: rolls up the complete minutes not rolled up yet
-- (at most max_minutes of them, the oldest first; NULL: all), those of the
-- last hour whose snapshots changed since (late rows), and those of the
-- ranges in rollup_dirty (pgbench logs loaded or deleted); then the hours
-- they belong to.  Each bucket is deleted and written again whole, so a
-- second run changes nothing (idempotent).  from_ts/to_ts: roll up that
-- range again (say, after restoring rows into the history).  Minutes
-- whose snapshots are gone (past chronicle.retention) keep their rows.
-- One run at a time in a database: another one returns at once.
CREATE FUNCTION chronicle._rollup(max_minutes integer DEFAULT NULL,
	from_ts timestamptz DEFAULT NULL, to_ts timestamptz DEFAULT NULL,
	OUT minutes integer, OUT hours integer)
RETURNS record
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET work_mem = '256MB'
AS $$
DECLARE
	complete  timestamptz := date_trunc('minute', now() - interval '10 s');
	done      timestamptz;
	lo        timestamptz;
	hi        timestamptz;
	cands     timestamptz[];
	withraw   timestamptz[];
	dirty     timestamptz[];
	hrs       timestamptz[];
	forced    boolean := from_ts IS NOT NULL OR to_ts IS NOT NULL;
BEGIN
	minutes := 0;
	hours := 0;
	IF max_minutes < 1 THEN
		RAISE EXCEPTION 'chronicle.rollup: max_minutes must be at least 1'
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'NULL rolls up every minute waiting.';
	END IF;
	IF forced THEN
		PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.rollup');
	END IF;
	IF NOT pg_try_advisory_xact_lock('chronicle._rollup(integer,timestamptz,timestamptz)'::regprocedure::oid::bigint) THEN
		RETURN;
	END IF;

	SELECT s.done_until INTO done FROM chronicle.rollup_state s;
	IF forced THEN
		lo := date_trunc('minute', from_ts);
		hi := least(date_trunc('minute', to_ts - interval '1 microsecond') + interval '1 minute', complete);
	ELSE
		-- from the last hour rolled up (its late rows), or from the first
		-- snapshot; at most a day a run
		lo := coalesce(done - interval '1 hour',
		               date_trunc('minute', (SELECT min(sn.ts) FROM chronicle.snapshot sn)));
		IF lo IS NULL THEN
			RETURN;		-- no history
		END IF;
		hi := least(lo + interval '1 day', complete);
	END IF;

	-- The minutes whose intervals are not those rolled up: new minutes,
	-- minutes with late snapshots.  None where the snapshots are gone.
	IF lo < hi THEN
		SELECT array_agg(a.m ORDER BY a.m) INTO cands
		  FROM (SELECT date_trunc('minute', i.interval_end - interval '1 microsecond') AS m, count(*) AS n
		          FROM chronicle.intervals(lo, hi) i GROUP BY 1) a
		  LEFT JOIN chronicle.rollup_minute r ON r.ts = a.m AND r.source = 'intervals' AND r.key = '{}'
		 WHERE forced OR r.intervals IS DISTINCT FROM a.n;
	END IF;
	withraw := coalesce(cands, '{}');
	-- pgbench rows changed since: their minutes, and forced, every minute
	-- of the range with pgbench rows
	SELECT array_agg(DISTINCT x.m) INTO dirty
	  FROM (SELECT date_trunc('minute', t.ts - interval '1 microsecond') AS m
	          FROM chronicle.rollup_dirty d
	          JOIN chronicle.app_transaction t ON t.ts > d.lo - interval '1 microsecond' AND t.ts <= d.hi
	        UNION
	        SELECT r.ts FROM chronicle.rollup_dirty d
	          JOIN chronicle.rollup_minute r ON r.source = 'app'
	                                        AND r.ts >= date_trunc('minute', d.lo - interval '1 microsecond')
	                                        AND r.ts <= d.hi
	        UNION
	        SELECT date_trunc('minute', t.ts - interval '1 microsecond')
	          FROM chronicle.app_transaction t
	         WHERE forced AND t.ts > lo AND t.ts <= hi) x
	 WHERE x.m < complete;
	DELETE FROM chronicle.rollup_dirty;
	cands := ARRAY(SELECT DISTINCT u FROM unnest(coalesce(cands, '{}') || coalesce(dirty, '{}')) u ORDER BY u);
	IF max_minutes IS NOT NULL AND cardinality(cands) > max_minutes THEN
		-- the rest next time: the dirty minutes left are marked again
		INSERT INTO chronicle.rollup_dirty
		SELECT min(u), max(u) + interval '1 minute'
		  FROM unnest(cands[max_minutes + 1:]) u WHERE u = ANY (dirty)
		HAVING count(*) > 0;
		cands := cands[1:max_minutes];
		IF NOT forced THEN
			hi := cands[max_minutes] + interval '1 minute';
		END IF;
	END IF;

	IF cardinality(cands) > 0 THEN
		-- A minute without snapshots (past the raw retention) keeps its
		-- rows but the pgbench ones.
		DELETE FROM chronicle.rollup_minute r
		 WHERE r.ts = ANY (cands) AND (r.source = 'app' OR r.ts = ANY (withraw));
		INSERT INTO chronicle.rollup_minute
		SELECT c.* FROM chronicle._rollup_compute(cands[1], cands[cardinality(cands)] + interval '1 minute') c
		 WHERE c.ts = ANY (cands) AND (c.source = 'app' OR c.ts = ANY (withraw));
		minutes := cardinality(cands);

		hrs := ARRAY(SELECT DISTINCT date_trunc('hour', u) FROM unnest(cands) u);
		DELETE FROM chronicle.rollup_hour r WHERE r.ts = ANY (hrs);
		INSERT INTO chronicle.rollup_hour SELECT * FROM chronicle._rollup_hours(hrs);
		hours := cardinality(hrs);
	END IF;

	IF NOT forced AND hi > lo THEN
		-- Nothing in the day looked at: jump to the next snapshot.
		IF cardinality(cands) = 0 AND hi < complete THEN
			hi := greatest(hi, least(complete,
			               date_trunc('minute', (SELECT min(sn.ts) FROM chronicle.snapshot sn WHERE sn.ts > hi))));
		END IF;
		INSERT INTO chronicle.rollup_state AS s (id, done_until) VALUES (true, hi)
		ON CONFLICT (id) DO UPDATE SET done_until = greatest(s.done_until, excluded.done_until);
	END IF;
END;
$$;

COMMENT ON FUNCTION chronicle._rollup(integer, timestamptz, timestamptz) IS
	'Housekeeping''s rollup: the complete minutes not rolled up yet (at most max_minutes), late ones, and the hours they belong to; or a range again';

-- Rolls up from SQL (pg_cron, or after loading history by hand): what
-- the collector does every minute, without limit.
CREATE FUNCTION chronicle.rollup(from_ts timestamptz DEFAULT NULL, to_ts timestamptz DEFAULT NULL,
	OUT minutes integer, OUT hours integer)
RETURNS record
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT * FROM chronicle._rollup(NULL, from_ts, to_ts)
$$;

COMMENT ON FUNCTION chronicle.rollup(timestamptz, timestamptz) IS
	'Rolls up the history into rollup_minute and rollup_hour now (every minute waiting; or the range given, again); returns how many minutes and hours were written';

-- pgbench rows loaded or deleted: their range is rolled up again.
CREATE FUNCTION chronicle._rollup_app_changed()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	INSERT INTO chronicle.rollup_dirty (lo, hi)
	SELECT min(c.ts), max(c.ts) FROM changed c HAVING count(*) > 0;
	RETURN NULL;
END;
$$;

CREATE TRIGGER rollup_app_inserted AFTER INSERT ON chronicle.app_transaction
	REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
	EXECUTE FUNCTION chronicle._rollup_app_changed();
CREATE TRIGGER rollup_app_deleted AFTER DELETE ON chronicle.app_transaction
	REFERENCING OLD TABLE AS changed FOR EACH STATEMENT
	EXECUTE FUNCTION chronicle._rollup_app_changed();

REVOKE ALL ON FUNCTION chronicle._rollup_retention() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup_sources() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup_compute(timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._latency_bucket(float8) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._latency_bucket_value(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._hist_percentiles(jsonb, float8[], float8, float8) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup_merge(jsonb[], integer[], integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup_hours(timestamptz[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup(integer, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.rollup(timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup_app_changed() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._rollup_sources() TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._rollup_compute(timestamptz, timestamptz) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._latency_bucket(float8) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._latency_bucket_value(integer) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._hist_percentiles(jsonb, float8[], float8, float8) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._rollup_merge(jsonb[], integer[], integer) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._rollup_hours(timestamptz[]) TO pg_monitor, pg_read_all_stats;

-- ---------------------------------------------------------------------
-- Reading rollups.

-- A counter's sum in a rollup row: 0 when left out (all zero), NULL when
-- it was NULL in every interval ([]).
CREATE FUNCTION chronicle._rv(vals jsonb, col text)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT CASE WHEN vals ? col THEN (vals -> col ->> 0)::float8 ELSE 0 END $$;

-- A gauge's last value in a rollup row.
CREATE FUNCTION chronicle._rv_last(vals jsonb, col text)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (vals -> col ->> 3)::float8 $$;

-- The resolution a long-window function uses.  'raw' (every snapshot
-- interval) when the raw rows cover the window (no rollup holds a whole
-- minute of it from before the oldest snapshot left) and the window is
-- at most raw_limit long, or no rollup holds any of it (not rolled up
-- yet); else 'minute' up to a day, 'hour' beyond (each read under 0.5 s).  A resolution asked
-- for is checked and kept.
CREATE FUNCTION chronicle._resolution(caller text, from_ts timestamptz, to_ts timestamptz, resolution text,
                                      raw_limit interval DEFAULT '6 hours')
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	oldest timestamptz;
BEGIN
	IF resolution IS NULL OR resolution NOT IN ('auto', 'raw', 'minute', 'hour') THEN
		RAISE EXCEPTION '%: unknown resolution "%"', caller, resolution
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Pass ''auto'' (the default), ''raw'' (every snapshot interval), ''minute'' or ''hour''.';
	END IF;
	IF resolution <> 'auto' THEN
		RETURN resolution;
	END IF;
	oldest := (SELECT min(s.ts) FROM chronicle.snapshot s);
	IF oldest IS NULL OR oldest <= from_ts
	   OR NOT EXISTS (SELECT FROM chronicle.rollup_minute r
	                   WHERE r.source = 'intervals' AND r.ts >= date_trunc('minute', from_ts)
	                     AND r.ts < to_ts AND r.ts + interval '1 minute' <= oldest) THEN
		-- the raw rows cover the window
		IF to_ts - from_ts <= raw_limit
		   OR NOT EXISTS (SELECT FROM chronicle.rollup_minute r
		                   WHERE r.source = 'intervals' AND r.ts >= date_trunc('minute', from_ts)
		                     AND r.ts < to_ts) THEN
			RETURN 'raw';
		END IF;
	END IF;
	RETURN CASE WHEN to_ts - from_ts <= interval '1 day' THEN 'minute' ELSE 'hour' END;
END;
$$;

COMMENT ON FUNCTION chronicle._resolution(text, timestamptz, timestamptz, text, interval) IS
	'The resolution for a window: raw up to raw_limit when the raw rows cover it (or nothing is rolled up), else minute up to a day, else hour';

-- The timeline from the rollups: one row per minute or hour, the same
-- columns.  (The values are read from vals inline, not with _rv(): a
-- function with its own search_path is not inlined, and the calls cost
-- more than the rest.)  Rates are the bucket's deltas over its seconds (intervals in
-- which a source was reset left out); gauges (buffers, memory) are the
-- last value of the bucket; active_* the average over the bucket; tps the
-- bucket's pgbench transactions over its seconds, latency percentiles
-- from its histogram (within 1 %).
CREATE FUNCTION chronicle._timeline_rollup(from_ts timestamptz, to_ts timestamptz, res text,
                                           waits boolean, detail boolean)
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
	tps float8, latency_p50_ms float8, latency_p99_ms float8, resolution_used text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET work_mem = '256MB'
SET enable_hashagg = on
AS $$
#variable_conflict use_column
DECLARE
	step    interval := CASE res WHEN 'minute' THEN interval '1 minute' ELSE interval '1 hour' END;
	unit    text := CASE res WHEN 'minute' THEN 'minute' ELSE 'hour' END;
	lo      timestamptz := date_trunc(unit, from_ts);
	tail_lo timestamptz;
	tail_hi timestamptz := date_trunc('minute', to_ts - interval '1 microsecond') + interval '1 minute';
BEGIN
	-- The buckets touching the window, whole: the stored rows, and the
	-- minutes not rolled up yet computed from the raw rows (the last few).
	SELECT max(m.ts) + interval '1 minute' INTO tail_lo
	  FROM chronicle.rollup_minute m
	 WHERE m.source = 'intervals' AND m.key = '{}' AND m.ts >= lo AND m.ts < to_ts;
	tail_lo := coalesce(tail_lo, lo);
	RETURN QUERY
	WITH r AS MATERIALIZED (
		-- the numbers read once from vals (only those of the row's source),
		-- into narrow rows
		SELECT x.bucket, x.ts, x.source, x.key, x.seconds,
		       CASE WHEN x.source = 'app' THEN x.hist END AS hist,
		       CASE WHEN x.source = 'database' THEN (x.vals -> 'xact_commit' -> 0)::float8 END AS xact_commit,
		       CASE WHEN x.source = 'database' THEN (x.vals -> 'xact_rollback' -> 0)::float8 END AS xact_rollback,
		       CASE WHEN x.source = 'database' THEN (x.vals -> 'blks_hit' -> 0)::float8 END AS blks_hit,
		       CASE WHEN x.source = 'database' THEN (x.vals -> 'blks_read' -> 0)::float8 END AS blks_read,
		       CASE WHEN x.source = 'io' THEN (x.vals -> 'reads' -> 0)::float8 END AS reads,
		       CASE WHEN x.source = 'io' THEN (x.vals -> 'writes' -> 0)::float8 END AS writes,
		       CASE WHEN x.source = 'io' THEN (x.vals -> 'extends' -> 0)::float8 END AS extends,
		       CASE WHEN x.source = 'io' THEN (x.vals -> 'fsyncs' -> 0)::float8 END AS fsyncs,
		       CASE WHEN x.source = 'io' THEN (x.vals -> 'read_bytes' -> 0)::float8 END AS read_bytes,
		       CASE WHEN x.source = 'io' THEN (x.vals -> 'write_bytes' -> 0)::float8 END AS write_bytes,
		       CASE WHEN x.source = 'io' THEN (x.vals -> 'extend_bytes' -> 0)::float8 END AS extend_bytes,
		       CASE WHEN x.source = 'wal' THEN (x.vals -> 'wal_bytes' -> 0)::float8 END AS wal_bytes,
		       CASE WHEN x.source = 'wal' THEN (x.vals -> 'wal_fpi' -> 0)::float8 END AS wal_fpi,
		       CASE WHEN x.source = 'wal' THEN (x.vals -> 'wal_records' -> 0)::float8 END AS wal_records,
		       CASE WHEN x.source <> 'checkpointer' THEN NULL WHEN x.vals ? 'num_done' THEN (x.vals -> 'num_done' -> 0)::float8 ELSE 0 END AS num_done,
		       CASE WHEN x.source = 'checkpointer' THEN (x.vals -> 'num_timed' -> 0)::float8 END AS num_timed,
		       CASE WHEN x.source = 'checkpointer' THEN (x.vals -> 'num_requested' -> 0)::float8 END AS num_requested,
		       CASE WHEN x.source = 'checkpointer' THEN (x.vals -> 'buffers_written' -> 0)::float8 END AS buffers_written,
		       CASE WHEN x.source = 'buffers' THEN (x.vals -> 'buffers_used' -> 3)::float8 END AS buffers_used,
		       CASE WHEN x.source = 'buffers' THEN (x.vals -> 'buffers_dirty' -> 3)::float8 END AS buffers_dirty,
		       CASE WHEN x.source = 'os_memory' THEN (x.vals -> 'mem_free' -> 3)::float8 END AS mem_free,
		       CASE WHEN x.source = 'os_memory' THEN (x.vals -> 'mem_available' -> 3)::float8 END AS mem_available,
		       CASE WHEN x.source = 'os_memory' THEN (x.vals -> 'dirty' -> 3)::float8 END AS mem_dirty,
		       CASE WHEN x.source = 'os_memory' THEN (x.vals -> 'writeback' -> 3)::float8 END AS mem_writeback,
		       CASE WHEN x.source = 'wait_sampler' THEN (x.vals -> 'ticks_due' -> 0)::float8 END AS ticks_due,
		       CASE WHEN x.source = 'wait_sampler' THEN (x.vals -> 'ticks_taken' -> 0)::float8 END AS ticks_taken,
		       CASE WHEN x.source = 'wait_sampler' THEN x.vals -> 'background_active' = '[]' END AS old_sampler,
		       CASE WHEN x.source = 'wait_sampler' THEN (x.vals -> 'active_cpu' -> 0)::float8 END AS active_cpu,
		       CASE WHEN x.source = 'wait_sampler' THEN (x.vals -> 'active_io' -> 0)::float8 END AS active_io,
		       CASE WHEN x.source = 'wait_sampler' THEN (x.vals -> 'active_lwlock' -> 0)::float8 END AS active_lwlock,
		       CASE WHEN x.source = 'wait_sampler' THEN (x.vals -> 'active_lock' -> 0)::float8 END AS active_lock,
		       CASE WHEN x.source = 'wait_sampler' THEN (x.vals -> 'active_ipc' -> 0)::float8 END AS active_ipc,
		       CASE WHEN x.source = 'wait_sampler' THEN (x.vals -> 'active_client' -> 0)::float8 END AS active_client,
		       CASE WHEN x.source = 'wait_sampler' THEN (x.vals -> 'active_timeout' -> 0)::float8 END AS active_timeout,
		       CASE WHEN x.source = 'wait_sampler' THEN (x.vals -> 'active_other' -> 0)::float8 END AS active_other,
		       CASE WHEN x.source = 'wait' THEN (x.vals -> 'samples' -> 0)::float8 END AS samples,
		       CASE WHEN x.source = 'app' THEN (x.vals ->> 'transactions')::float8 END AS transactions,
		       CASE WHEN x.source = 'app' THEN (x.vals ->> 'latency_us_min')::float8 END AS lat_min,
		       CASE WHEN x.source = 'app' THEN (x.vals ->> 'latency_us_max')::float8 END AS lat_max
		  FROM (SELECT m.ts AS bucket, m.ts, m.source, m.key, m.seconds, m.vals, m.hist
		          FROM chronicle.rollup_minute m
		         WHERE res = 'minute' AND m.ts >= lo AND m.ts < tail_lo
		        UNION ALL
		        SELECT h.ts, h.ts, h.source, h.key, h.seconds, h.vals, h.hist
		          FROM chronicle.rollup_hour h
		         WHERE res = 'hour' AND h.ts >= lo AND h.ts < tail_lo
		        UNION ALL
		        SELECT date_trunc(unit, c.ts), c.ts, c.source, c.key, c.seconds, c.vals, c.hist
		          FROM chronicle._rollup_compute(tail_lo, tail_hi) c
		         WHERE tail_lo < tail_hi) x
		 WHERE x.source <> 'wait' OR _timeline_rollup.detail
	),
	iv AS (
		SELECT r.bucket, sum(r.seconds) AS s FROM r WHERE r.source = 'intervals' GROUP BY r.bucket
	),
	sec AS (
		SELECT r.bucket, r.source, sum(r.seconds) AS s
		  FROM r WHERE r.key = '{}' GROUP BY r.bucket, r.source
	),
	db AS (
		SELECT r.bucket, sum(coalesce(r.xact_commit, 0)) AS c, sum(coalesce(r.xact_rollback, 0)) AS rb,
		       sum(coalesce(r.blks_hit, 0)) AS h, sum(coalesce(r.blks_read, 0)) AS rd
		  FROM r WHERE r.source = 'database' AND r.key <> '{}' GROUP BY r.bucket
	),
	iok AS (
		SELECT r.bucket, r.key[1] AS grp,
		       sum(coalesce(r.reads, 0)) AS reads, sum(coalesce(r.writes, 0)) AS writes,
		       sum(coalesce(r.extends, 0)) AS extends, sum(coalesce(r.fsyncs, 0)) AS fsyncs,
		       sum(coalesce(r.read_bytes, 0)) AS rb, sum(coalesce(r.write_bytes, 0)) AS wb,
		       sum(coalesce(r.extend_bytes, 0)) AS eb
		  FROM r WHERE r.source = 'io' AND r.key <> '{}' AND r.key[2] <> 'wal'
		 GROUP BY r.bucket, r.key[1]
	),
	io AS (
		SELECT k.bucket, sum(k.reads) AS reads, sum(k.writes) AS writes, sum(k.extends) AS extends,
		       sum(k.fsyncs) AS fsyncs, sum(k.rb) AS rb, sum(k.wb) AS wb, sum(k.eb) AS eb,
		       coalesce(sum(k.wb) FILTER (WHERE k.grp = 'client backend'), 0) AS wb_client,
		       coalesce(sum(k.wb) FILTER (WHERE k.grp = 'checkpointer'), 0) AS wb_ckpt,
		       coalesce(sum(k.wb) FILTER (WHERE k.grp = 'background writer'), 0) AS wb_bgw,
		       coalesce(sum(k.wb) FILTER (WHERE k.grp = 'autovacuum worker'), 0) AS wb_av,
		       CASE WHEN _timeline_rollup.detail THEN jsonb_object_agg(k.grp, jsonb_build_object(
		           'reads_per_s', k.reads / s.s, 'writes_per_s', k.writes / s.s,
		           'extends_per_s', k.extends / s.s, 'fsyncs_per_s', coalesce(k.fsyncs, 0) / s.s,
		           'read_bytes_per_s', k.rb / s.s, 'write_bytes_per_s', k.wb / s.s,
		           'extend_bytes_per_s', k.eb / s.s))
		           FILTER (WHERE coalesce(k.reads, 0) + coalesce(k.writes, 0) + coalesce(k.extends, 0)
		                         + coalesce(k.fsyncs, 0) > 0 AND s.s > 0) END AS by_backend
		  FROM iok k JOIN sec s ON s.bucket = k.bucket AND s.source = 'io'
		 GROUP BY k.bucket
	),
	one AS (
		-- the unkeyed sources: sums, and the gauges' last values
		SELECT r.bucket,
		       sum(coalesce(r.wal_bytes, 0)) FILTER (WHERE r.source = 'wal') AS wal_bytes,
		       sum(coalesce(r.wal_fpi, 0)) FILTER (WHERE r.source = 'wal') AS wal_fpi,
		       sum(coalesce(r.wal_records, 0)) FILTER (WHERE r.source = 'wal') AS wal_records,
		       sum(r.num_done) FILTER (WHERE r.source = 'checkpointer') AS num_done,
		       sum(coalesce(r.num_timed, 0) + coalesce(r.num_requested, 0))
		           FILTER (WHERE r.source = 'checkpointer') AS num_tr,
		       sum(coalesce(r.buffers_written, 0)) FILTER (WHERE r.source = 'checkpointer') AS ck_written,
		       (array_agg(r.buffers_used ORDER BY r.ts DESC) FILTER (WHERE r.source = 'buffers'))[1] AS bu_used,
		       (array_agg(r.buffers_dirty ORDER BY r.ts DESC) FILTER (WHERE r.source = 'buffers'))[1] AS bu_dirty,
		       (array_agg(r.mem_free ORDER BY r.ts DESC) FILTER (WHERE r.source = 'os_memory'))[1] AS mem_free,
		       (array_agg(r.mem_available ORDER BY r.ts DESC) FILTER (WHERE r.source = 'os_memory'))[1] AS mem_available,
		       (array_agg(r.mem_dirty ORDER BY r.ts DESC) FILTER (WHERE r.source = 'os_memory'))[1] AS mem_dirty,
		       (array_agg(r.mem_writeback ORDER BY r.ts DESC) FILTER (WHERE r.source = 'os_memory'))[1] AS mem_writeback,
		       sum(coalesce(r.ticks_due, 0)) FILTER (WHERE r.source = 'wait_sampler') AS ticks_due,
		       sum(coalesce(r.ticks_taken, 0)) FILTER (WHERE r.source = 'wait_sampler') AS ticks_taken,
		       -- active_* before 0.2.0 counted background processes too
		       bool_or(r.old_sampler) FILTER (WHERE r.source = 'wait_sampler') AS old_sampler,
		       sum(coalesce(r.active_cpu, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_cpu,
		       sum(coalesce(r.active_io, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_io,
		       sum(coalesce(r.active_lwlock, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_lwlock,
		       sum(coalesce(r.active_lock, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_lock,
		       sum(coalesce(r.active_ipc, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_ipc,
		       sum(coalesce(r.active_client, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_client,
		       sum(coalesce(r.active_timeout, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_timeout,
		       sum(coalesce(r.active_other, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_other
		  FROM r WHERE r.source IN ('wal', 'checkpointer', 'buffers', 'os_memory', 'wait_sampler')
		 GROUP BY r.bucket
	),
	wk AS (
		-- database time, classified once per key (OFFSET 0: not pushed
		-- below the DISTINCT)
		SELECT k.key FROM (SELECT DISTINCT r.key FROM r WHERE r.source = 'wait' AND r.key <> '{}' OFFSET 0) k
		 WHERE chronicle._wait_activity(k.key[1], k.key[2], k.key[3], k.key[4]) = 'database'
	),
	wt AS (
		SELECT r.bucket, r.key[3] || ':' || r.key[4] AS ev, sum(coalesce(r.samples, 0)) AS n
		  FROM r JOIN wk ON wk.key = r.key
		 WHERE r.source = 'wait'
		 GROUP BY r.bucket, r.key[3], r.key[4]
		HAVING sum(coalesce(r.samples, 0)) > 0
	),
	tw AS (
		SELECT w.bucket,
		       jsonb_agg(jsonb_build_object('wait', w.ev, 'samples', w.n::bigint,
		                                    'share', round((w.n / w.total)::numeric, 3)) ORDER BY w.rk)
		           FILTER (WHERE w.rk <= 3) AS top
		  FROM (SELECT w.*, row_number() OVER (PARTITION BY w.bucket ORDER BY w.n DESC, w.ev) AS rk,
		               sum(w.n) OVER (PARTITION BY w.bucket) AS total
		          FROM wt w) w
		 GROUP BY w.bucket
	),
	app AS (
		SELECT a.bucket, sum(a.transactions) AS n, min(a.lat_min) AS lat_min, max(a.lat_max) AS lat_max,
		       (SELECT jsonb_object_agg(x.b, x.n)
		          FROM (SELECT e.key AS b, sum(e.value::bigint) AS n
		                  FROM unnest(array_agg(a.hist)) AS hh(j), jsonb_each_text(hh.j) e
		                 GROUP BY e.key) x) AS hist
		  FROM r a WHERE a.source = 'app'
		 GROUP BY a.bucket
	),
	has AS MATERIALIZED (
		SELECT EXISTS (SELECT FROM r WHERE r.source = 'app') AS app,
		       _timeline_rollup.detail AND EXISTS (SELECT FROM chronicle.waits_history) AS waits
	)
	SELECT iv.bucket, iv.bucket + step, iv.s,
	       coalesce(db.c, 0) / nullif(sd.s, 0), coalesce(db.rb, 0) / nullif(sd.s, 0),
	       db.h / nullif(db.h + db.rd, 0),
	       coalesce(io.reads, 0) / nullif(si.s, 0), coalesce(io.writes, 0) / nullif(si.s, 0),
	       coalesce(io.extends, 0) / nullif(si.s, 0), coalesce(io.fsyncs, 0) / nullif(si.s, 0),
	       coalesce(io.rb, 0) / nullif(si.s, 0), coalesce(io.wb, 0) / nullif(si.s, 0),
	       coalesce(io.eb, 0) / nullif(si.s, 0),
	       coalesce(io.wb_client, 0) / nullif(si.s, 0), coalesce(io.wb_ckpt, 0) / nullif(si.s, 0),
	       coalesce(io.wb_bgw, 0) / nullif(si.s, 0), coalesce(io.wb_av, 0) / nullif(si.s, 0),
	       CASE WHEN si.s > 0 AND _timeline_rollup.detail THEN coalesce(io.by_backend, '{}') END,
	       one.wal_bytes / nullif(sw.s, 0), one.wal_fpi / nullif(sw.s, 0), one.wal_records / nullif(sw.s, 0),
	       coalesce(one.num_done, one.num_tr)::bigint, one.ck_written::bigint,
	       one.bu_used::bigint, one.bu_dirty::bigint,
	       one.mem_free::bigint, one.mem_available::bigint, one.mem_dirty::bigint, one.mem_writeback::bigint,
	       ws.cpu + ws.io + ws.lwlock + ws.lock + ws.ipc + ws.client + ws.timeout + ws.other,
	       ws.cpu, ws.io, ws.lwlock, ws.lock, ws.ipc, ws.client, ws.timeout, ws.other,
	       CASE WHEN has.waits THEN coalesce(tw.top, '[]') END,
	       CASE WHEN _timeline_rollup.waits THEN one.ticks_taken / nullif(one.ticks_due, 0) END,
	       CASE WHEN has.app THEN coalesce(app.n, 0) / nullif(iv.s, 0) END,
	       p.p[1], p.p[2],
	       res
	  FROM iv
	 CROSS JOIN has
	  LEFT JOIN sec sd ON sd.bucket = iv.bucket AND sd.source = 'database'
	  LEFT JOIN sec si ON si.bucket = iv.bucket AND si.source = 'io'
	  LEFT JOIN sec sw ON sw.bucket = iv.bucket AND sw.source = 'wal'
	  LEFT JOIN db ON db.bucket = iv.bucket
	  LEFT JOIN io ON io.bucket = iv.bucket
	  LEFT JOIN one ON one.bucket = iv.bucket
	  LEFT JOIN LATERAL (
		SELECT one.a_cpu / t.t AS cpu, one.a_io / t.t AS io, one.a_lwlock / t.t AS lwlock,
		       one.a_lock / t.t AS lock, one.a_ipc / t.t AS ipc, one.a_client / t.t AS client,
		       one.a_timeout / t.t AS timeout, one.a_other / t.t AS other
		  FROM (SELECT CASE WHEN NOT one.old_sampler THEN nullif(one.ticks_taken, 0) END AS t) t
		 WHERE _timeline_rollup.waits) ws ON true
	  LEFT JOIN tw ON tw.bucket = iv.bucket
	  LEFT JOIN app ON app.bucket = iv.bucket
	  LEFT JOIN LATERAL (SELECT chronicle._hist_percentiles(app.hist, '{0.5,0.99}', app.lat_min, app.lat_max) AS p
	                      WHERE app.hist IS NOT NULL) p ON true
	 ORDER BY iv.bucket;
END;
$$;

REVOKE ALL ON FUNCTION chronicle._rv(jsonb, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rv_last(jsonb, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._resolution(text, timestamptz, timestamptz, text, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._timeline_rollup(timestamptz, timestamptz, text, boolean, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._rv(jsonb, text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._rv_last(jsonb, text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._resolution(text, timestamptz, timestamptz, text, interval) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._timeline_rollup(timestamptz, timestamptz, text, boolean, boolean) TO pg_monitor, pg_read_all_stats;

REVOKE ALL ON chronicle.rollup_minute, chronicle.rollup_hour, chronicle.rollup_state, chronicle.rollup_dirty FROM PUBLIC;
GRANT SELECT ON chronicle.rollup_minute, chronicle.rollup_hour, chronicle.rollup_state, chronicle.rollup_dirty
	TO pg_monitor, pg_read_all_stats;

-- Their default partitions, indexes on the partitions.
SELECT chronicle._partition_layout();

-- pg_dump dumps their rows (not rollup_dirty's: a restore marks the
-- pgbench rows it loads again).
SELECT pg_catalog.pg_extension_config_dump('chronicle.rollup_hour_default', '');
SELECT pg_catalog.pg_extension_config_dump('chronicle.rollup_minute_default', '');
SELECT pg_catalog.pg_extension_config_dump('chronicle.rollup_state', '');

-- ---------------------------------------------------------------------
-- Storage v2 (issue 14): the packed history.  The row tables of 0.1.0
-- (one per source, a row per key and snapshot, (key, ts) indexes) become
-- chronicle.history, one row per snapshot with every source's rows packed,
-- read through views of the same names and columns (src/sql/10_history.sql,
-- src/history.c).  Their rows are converted here, every one of them.
-- ---------------------------------------------------------------------

-- The row tables step aside (out of the extension, renamed), with their
-- partitions and indexes; they are dropped once converted.
DO $$
DECLARE
	s text;
BEGIN
	FOREACH s IN ARRAY ARRAY['io', 'wal', 'checkpointer', 'bgwriter', 'database', 'statements', 'os_memory', 'os_disk', 'os_pressure', 'os_process_io', 'waits', 'wait_sampler', 'buffers'] LOOP
		EXECUTE format('ALTER EXTENSION pg_chronicle DROP TABLE chronicle.%I', s || '_history_default');
		EXECUTE format('ALTER EXTENSION pg_chronicle DROP TABLE chronicle.%I', s || '_history');
		EXECUTE format('ALTER TABLE chronicle.%I RENAME TO %I', s || '_history', s || '_history_v1');
	END LOOP;
END;
$$;
CREATE TABLE chronicle.history (
	ts                timestamptz NOT NULL,
	system_identifier bigint,	-- the recording server (chronicle.server())
	server_name       text,
	io                bytea,
	wal               bytea,
	checkpointer      bytea,
	bgwriter          bytea,
	database          bytea,
	statements        bytea,
	os_memory         bytea,
	os_disk           bytea,
	os_pressure       bytea,
	os_process_io     bytea,
	waits             bytea,
	wait_sampler      bytea,
	buffers           bytea,
	PRIMARY KEY (ts)
) PARTITION BY RANGE (ts);
COMMENT ON TABLE chronicle.history IS
	'One row per snapshot: every source''s changed rows, packed (read them through the <source>_history views)';

-- The keys of the packed rows: a key (its columns as text, in the order of
-- the source's columns) has one id, for every snapshot.
CREATE SEQUENCE chronicle.history_key_id_seq AS integer;
CREATE TABLE chronicle.history_key (
	key_id integer NOT NULL DEFAULT nextval('chronicle.history_key_id_seq') PRIMARY KEY,
	source text NOT NULL,
	key    text[] NOT NULL,
	first_seen timestamptz NOT NULL DEFAULT now(),
	UNIQUE (source, key)
);
ALTER SEQUENCE chronicle.history_key_id_seq OWNED BY chronicle.history_key.key_id;
COMMENT ON TABLE chronicle.history_key IS
	'The keys of the packed history: (source, key columns as text) -> id';

CREATE FUNCTION chronicle._unpack(source text, ts timestamptz, data bytea)
RETURNS SETOF record
LANGUAGE C STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_unpack';
COMMENT ON FUNCTION chronicle._unpack(text, timestamptz, bytea) IS
	'The rows of one source packed in one snapshot (behind the <source>_history views)';
REVOKE ALL ON FUNCTION chronicle._unpack(text, timestamptz, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._unpack(text, timestamptz, bytea) TO pg_monitor, pg_read_all_stats;

CREATE FUNCTION chronicle._pack(source text, ts timestamptz, rows anyarray, complete boolean DEFAULT false)
RETURNS bytea
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_pack_rows';
COMMENT ON FUNCTION chronicle._pack(text, timestamptz, anyarray, boolean) IS
	'The rows of one source at one snapshot, packed (an array of rows with the source''s columns, by name)';
REVOKE ALL ON FUNCTION chronicle._pack(text, timestamptz, anyarray, boolean) FROM PUBLIC;

-- Bulk load: rows[i], a table (or view) with ts and the columns of source
-- sources[i] (by name), become that source's packed rows, one value per ts,
-- replacing what chronicle.history held for the source at those ts; one row
-- of chronicle.history per ts, written once.  For the upgrade from 0.1.0,
-- generators and imports; the collector packs its own rows.  Returns the
-- number of history rows written.
CREATE FUNCTION chronicle._history_load(sources text[], rows regclass[])
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	parts text[] := '{}';
	cols text[] := '{}';
	i integer;
	n bigint;
BEGIN
	IF sources IS NULL OR rows IS NULL OR cardinality(sources) <> cardinality(rows)
	   OR cardinality(sources) = 0 THEN
		RAISE EXCEPTION 'chronicle._history_load: give one table of rows per source'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	FOR i IN 1 .. cardinality(sources) LOOP
		IF NOT EXISTS (SELECT FROM chronicle._source_columns() c WHERE c.source = sources[i]) THEN
			RAISE EXCEPTION 'chronicle._history_load: no source named "%"', sources[i]
				USING ERRCODE = 'invalid_parameter_value',
				      HINT = 'The sources are listed by chronicle.source_status().';
		END IF;
		parts := parts || format('SELECT %s AS i, r.ts, chronicle._pack(%L, r.ts, array_agg(r)) AS v FROM %s r GROUP BY r.ts',
		                         i, sources[i], rows[i]);
		cols := cols || format('(array_agg(x.v) FILTER (WHERE x.i = %s))[1] AS %I', i, sources[i]);
	END LOOP;
	EXECUTE format($q$
		WITH p AS MATERIALIZED (
			SELECT x.ts, %s FROM (%s) x GROUP BY x.ts
		), u AS (
			UPDATE chronicle.history h SET %s FROM p WHERE h.ts = p.ts RETURNING h.ts
		), i AS (
			INSERT INTO chronicle.history (ts, %s)
			SELECT p.ts, %s FROM p WHERE p.ts NOT IN (SELECT u.ts FROM u)
			RETURNING 1
		)
		SELECT (SELECT count(*) FROM u) + (SELECT count(*) FROM i)$q$,
		array_to_string(cols, ', '),
		array_to_string(parts, ' UNION ALL '),
		(SELECT string_agg(format('%I = coalesce(p.%I, h.%I)', s, s, s), ', ') FROM unnest(sources) s),
		(SELECT string_agg(format('%I', s), ', ') FROM unnest(sources) s),
		(SELECT string_agg(format('p.%I', s), ', ') FROM unnest(sources) s)) INTO n;
	RETURN n;
END;
$fn$;
REVOKE ALL ON FUNCTION chronicle._history_load(text[], regclass[]) FROM PUBLIC;

CREATE FUNCTION chronicle._history_write()
RETURNS trigger
LANGUAGE C
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_history_write';
REVOKE ALL ON FUNCTION chronicle._history_write() FROM PUBLIC;

CREATE VIEW chronicle.io_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('io', h.ts, h.io) AS u(
		backend_type text,
		object text,
		context text,
		reads bigint,
		read_bytes bigint,
		read_time float8,
		writes bigint,
		write_bytes bigint,
		write_time float8,
		writebacks bigint,
		writeback_time float8,
		extends bigint,
		extend_bytes bigint,
		extend_time float8,
		op_bytes bigint,
		hits bigint,
		evictions bigint,
		reuses bigint,
		fsyncs bigint,
		fsync_time float8,
		stats_reset timestamptz)
 WHERE h.io IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.io_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('io');
COMMENT ON VIEW chronicle.io_history IS
	'pg_stat_io, every (backend_type, object, context) row and column; *_bytes on 18+, op_bytes before 18';

CREATE VIEW chronicle.wal_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('wal', h.ts, h.wal) AS u(
		wal_records bigint,
		wal_fpi bigint,
		wal_bytes bigint,
		wal_buffers_full bigint,
		wal_write bigint,
		wal_sync bigint,
		wal_write_time float8,
		wal_sync_time float8,
		stats_reset timestamptz)
 WHERE h.wal IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.wal_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('wal');
COMMENT ON VIEW chronicle.wal_history IS
	'pg_stat_wal; wal_write, wal_sync and their times before 18 (18 has them in pg_stat_io, object wal)';

CREATE VIEW chronicle.checkpointer_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('checkpointer', h.ts, h.checkpointer) AS u(
		num_timed bigint,
		num_requested bigint,
		num_done bigint,
		restartpoints_timed bigint,
		restartpoints_req bigint,
		restartpoints_done bigint,
		write_time float8,
		sync_time float8,
		buffers_written bigint,
		slru_written bigint,
		stats_reset timestamptz)
 WHERE h.checkpointer IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.checkpointer_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('checkpointer');
COMMENT ON VIEW chronicle.checkpointer_history IS
	'pg_stat_checkpointer; num_done and slru_written on 18+';

CREATE VIEW chronicle.bgwriter_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('bgwriter', h.ts, h.bgwriter) AS u(
		buffers_clean bigint,
		maxwritten_clean bigint,
		buffers_alloc bigint,
		stats_reset timestamptz)
 WHERE h.bgwriter IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.bgwriter_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('bgwriter');
COMMENT ON VIEW chronicle.bgwriter_history IS 'pg_stat_bgwriter';


CREATE VIEW chronicle.database_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('database', h.ts, h.database) AS u(
		datid oid,
		datname text,
		xact_commit bigint,
		xact_rollback bigint,
		blks_read bigint,
		blks_hit bigint,
		tup_returned bigint,
		tup_fetched bigint,
		tup_inserted bigint,
		tup_updated bigint,
		tup_deleted bigint,
		conflicts bigint,
		temp_files bigint,
		temp_bytes bigint,
		deadlocks bigint,
		checksum_failures bigint,
		blk_read_time float8,
		blk_write_time float8,
		session_time float8,
		active_time float8,
		idle_in_transaction_time float8,
		sessions bigint,
		sessions_abandoned bigint,
		sessions_fatal bigint,
		sessions_killed bigint,
		parallel_workers_to_launch bigint,
		parallel_workers_launched bigint,
		stats_reset timestamptz)
 WHERE h.database IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.database_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('database');
COMMENT ON VIEW chronicle.database_history IS
	'pg_stat_database per database, and datid 0 for shared objects (numbackends is not recorded)';

CREATE VIEW chronicle.waits_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('waits', h.ts, h.waits) AS u(
		backend_type    text,
		state           text,
		wait_event_type text,
		wait_event      text,
		queryid         bigint,
		samples         bigint)
 WHERE h.waits IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.waits_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('waits');
COMMENT ON VIEW chronicle.waits_history IS
	'Wait event samples, cumulative since the sampler started, per (backend_type, state, wait_event_type, wait_event, queryid)';

CREATE VIEW chronicle.wait_sampler_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('wait_sampler', h.ts, h.wait_sampler) AS u(
		ticks_due       bigint,
		ticks_taken     bigint,
		samples_dropped bigint,
		sampler_started timestamptz,
		sampler_cpu_ms  float8,			-- the sampler's own user + system CPU time
		samples_reset   timestamptz,	-- last chronicle.wait_samples_reset()
		-- database time: samples of active client backends and the processes
		-- working for them (walsenders, autovacuum workers, parallel workers)
		-- by wait class: sum / ticks_taken = average active sessions.  Not
		-- active: idle sessions, main-loop waits, throttle sleeps (see
		-- docs/sources.md, "Wait events").  Before 0.2.0: every active process, background ones
		-- included (background_active is NULL in those rows).
		active_cpu      bigint,
		active_io       bigint,
		active_lwlock   bigint,
		active_lock     bigint,
		active_ipc      bigint,
		active_client   bigint,
		active_timeout  bigint,
		active_other    bigint,			-- BufferPin, Extension, InjectionPoint
		-- samples of background processes at work (checkpointer writing, not
		-- in its main loop or throttle sleep); 0.2.0+
		background_active bigint)
 WHERE h.wait_sampler IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.wait_sampler_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('wait_sampler');
COMMENT ON VIEW chronicle.wait_sampler_history IS
	'Wait sampler ticks due and taken, samples dropped on overflow, samples of active sessions (database time) by wait class and of background processes at work (cumulative)';

CREATE VIEW chronicle.buffers_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('buffers', h.ts, h.buffers) AS u(
		buffers_total  bigint,
		buffers_used   bigint,
		buffers_unused bigint,
		buffers_dirty  bigint,
		buffers_pinned bigint,
		usagecount_avg float8,
		usage_0 bigint, usage_1 bigint, usage_2 bigint, usage_3 bigint, usage_4 bigint, usage_5 bigint,
		dirty_0 bigint, dirty_1 bigint, dirty_2 bigint, dirty_3 bigint, dirty_4 bigint, dirty_5 bigint,
		pinned_0 bigint, pinned_1 bigint, pinned_2 bigint, pinned_3 bigint, pinned_4 bigint, pinned_5 bigint)
 WHERE h.buffers IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.buffers_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('buffers');
COMMENT ON VIEW chronicle.buffers_history IS
	'Buffer cache summary (gauges): used, unused, dirty, pinned, usage-count histogram';

CREATE VIEW chronicle.statements_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('statements', h.ts, h.statements) AS u(
		userid              oid,
		dbid                oid,
		queryid             bigint,
		toplevel            boolean,
		plans               bigint,
		total_plan_time     float8,
		calls               bigint,
		total_exec_time     float8,
		rows                bigint,
		shared_blks_hit     bigint,
		shared_blks_read    bigint,
		shared_blks_dirtied bigint,
		shared_blks_written bigint,
		local_blks_hit      bigint,
		local_blks_read     bigint,
		local_blks_dirtied  bigint,
		local_blks_written  bigint,
		temp_blks_read      bigint,
		temp_blks_written   bigint,
		blk_read_time       float8,    -- shared_blk_read_time on 17+
		blk_write_time      float8,    -- shared_blk_write_time on 17+
		wal_records         bigint,
		wal_fpi             bigint,
		wal_bytes           bigint,
		stats_since         timestamptz,
		-- added with the source: pg_stat_statements 1.11 (PG17) and 1.12 (PG18)
		local_blk_read_time  float8,
		local_blk_write_time float8,
		temp_blk_read_time   float8,
		temp_blk_write_time  float8,
		wal_buffers_full     bigint,               -- 1.12+
		parallel_workers_to_launch bigint,         -- 1.12+
		parallel_workers_launched  bigint          -- 1.12+
	)
 WHERE h.statements IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.statements_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('statements');
COMMENT ON VIEW chronicle.statements_history IS
	'pg_stat_statements counters of the statements that changed (top N by total time), cumulative';

CREATE VIEW chronicle.os_memory_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('os_memory', h.ts, h.os_memory) AS u(
		mem_total     bigint,
		mem_free      bigint,
		mem_available bigint,
		buffers       bigint,
		cached        bigint,
		dirty         bigint,
		writeback     bigint,
		shmem         bigint,
		swap_total    bigint,
		swap_free     bigint,
		pgpgin        bigint,
		pgpgout       bigint,
		pswpin        bigint,
		pswpout       bigint)
 WHERE h.os_memory IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.os_memory_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('os_memory');
COMMENT ON VIEW chronicle.os_memory_history IS
	'/proc/meminfo (kB, gauges) and /proc/vmstat page and swap counters (cumulative)';

CREATE VIEW chronicle.os_disk_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('os_disk', h.ts, h.os_disk) AS u(
		device              text,
		role                text,       -- 'data', 'wal' or 'data,wal'
		reads_completed     bigint,
		reads_merged        bigint,
		sectors_read        bigint,
		read_time_ms        bigint,
		writes_completed    bigint,
		writes_merged       bigint,
		sectors_written     bigint,
		write_time_ms       bigint,
		in_flight           bigint,              -- gauge
		io_time_ms          bigint,
		weighted_io_time_ms bigint,
		discards_completed  bigint,
		discards_merged     bigint,
		sectors_discarded   bigint,
		discard_time_ms     bigint,
		flushes_completed   bigint,
		flush_time_ms       bigint)
 WHERE h.os_disk IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.os_disk_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('os_disk');
COMMENT ON VIEW chronicle.os_disk_history IS
	'/proc/diskstats of the devices under the data directory and pg_wal (cumulative, but in_flight)';

CREATE VIEW chronicle.os_pressure_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('os_pressure', h.ts, h.os_pressure) AS u(
		resource    text,     -- 'cpu', 'io', 'memory'
		some_total  bigint,
		full_total  bigint)
 WHERE h.os_pressure IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.os_pressure_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('os_pressure');
COMMENT ON VIEW chronicle.os_pressure_history IS
	'/proc/pressure stall totals in microseconds (cumulative)';

CREATE VIEW chronicle.os_process_io_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('os_process_io', h.ts, h.os_process_io) AS u(
		backend_type          text,
		pid                   integer,
		rchar                 bigint,
		wchar                 bigint,
		syscr                 bigint,
		syscw                 bigint,
		read_bytes            bigint,
		write_bytes           bigint,
		cancelled_write_bytes bigint)
 WHERE h.os_process_io IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.os_process_io_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('os_process_io');
COMMENT ON VIEW chronicle.os_process_io_history IS
	'/proc/<pid>/io of the checkpointer, walwriter and bgwriter (cumulative)';

GRANT SELECT ON chronicle.history, chronicle.history_key TO pg_monitor, pg_read_all_stats;
GRANT SELECT ON SEQUENCE chronicle.history_key_id_seq TO pg_monitor, pg_read_all_stats;
REVOKE ALL ON chronicle.io_history, chronicle.wal_history, chronicle.checkpointer_history, chronicle.bgwriter_history, chronicle.database_history, chronicle.statements_history, chronicle.os_memory_history, chronicle.os_disk_history, chronicle.os_pressure_history, chronicle.os_process_io_history, chronicle.waits_history, chronicle.wait_sampler_history, chronicle.buffers_history FROM PUBLIC;
GRANT SELECT ON chronicle.io_history, chronicle.wal_history, chronicle.checkpointer_history, chronicle.bgwriter_history, chronicle.database_history, chronicle.statements_history, chronicle.os_memory_history, chronicle.os_disk_history, chronicle.os_pressure_history, chronicle.os_process_io_history, chronicle.waits_history, chronicle.wait_sampler_history, chronicle.buffers_history TO pg_monitor, pg_read_all_stats;

-- Every row of the row tables, packed: one value per source and ts, one
-- row of chronicle.history per ts.  Its partitions first, so that the rows
-- do not wait in the default partition (not with ensure_partitions(): the
-- row tables are still there; the day partitions leave the extension, and
-- the primary key moves to the partitions, in _partition_layout() below).
CREATE TABLE chronicle.history_default PARTITION OF chronicle.history DEFAULT;
SELECT chronicle._create_partition('chronicle.history'::regclass, d::date)
  FROM generate_series((SELECT min(ts) FROM chronicle.snapshot)::date,
                       (SELECT max(ts) FROM chronicle.snapshot)::date, interval '1 day') d;
SELECT chronicle._history_load(ARRAY['io', 'wal', 'checkpointer', 'bgwriter', 'database', 'statements', 'os_memory', 'os_disk', 'os_pressure', 'os_process_io', 'waits', 'wait_sampler', 'buffers'],
       ARRAY['chronicle.io_history_v1', 'chronicle.wal_history_v1', 'chronicle.checkpointer_history_v1', 'chronicle.bgwriter_history_v1', 'chronicle.database_history_v1', 'chronicle.statements_history_v1', 'chronicle.os_memory_history_v1', 'chronicle.os_disk_history_v1', 'chronicle.os_pressure_history_v1', 'chronicle.os_process_io_history_v1', 'chronicle.waits_history_v1', 'chronicle.wait_sampler_history_v1', 'chronicle.buffers_history_v1']::regclass[]);

DO $$
DECLARE
	s text;
BEGIN
	FOREACH s IN ARRAY ARRAY['io', 'wal', 'checkpointer', 'bgwriter', 'database', 'statements', 'os_memory', 'os_disk', 'os_pressure', 'os_process_io', 'waits', 'wait_sampler', 'buffers'] LOOP
		EXECUTE format('DROP TABLE chronicle.%I', s || '_history_v1');
	END LOOP;
END;
$$;

SELECT chronicle._partition_layout();
SELECT pg_catalog.pg_extension_config_dump('chronicle.history_default', '');
SELECT pg_catalog.pg_extension_config_dump('chronicle.history_key', '');
SELECT pg_catalog.pg_extension_config_dump('chronicle.history_key_id_seq', '');
