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
