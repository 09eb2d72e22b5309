-- pg_chronicle: core objects.  The install script is the concatenation of
-- src/sql/*.sql in name order (see Makefile).

\echo Use "CREATE EXTENSION pg_chronicle" to load this file. \quit

-- History is for monitoring roles, not for everyone.
REVOKE ALL ON SCHEMA chronicle FROM PUBLIC;
GRANT USAGE ON SCHEMA chronicle TO pg_monitor, pg_read_all_stats;

-- One row per snapshot, whoever took it, with what it cost.
--   segment:  the first snapshot of the continuous recording this one
--             belongs to; an interval never spans two segments (a gap:
--             server or collector down).
--   keyframe: every row of every source was written, not only the
--             changed ones.
CREATE TABLE chronicle.snapshot (
	ts            timestamptz NOT NULL,
	segment       timestamptz NOT NULL,
	keyframe      boolean     NOT NULL,
	collector     text        NOT NULL CHECK (collector IN ('worker', 'sql')),
	duration_ms   float8      NOT NULL,
	rows_written  bigint      NOT NULL,
	wal_bytes     bigint      NOT NULL,
	errors        integer     NOT NULL,
	PRIMARY KEY (ts)
) PARTITION BY RANGE (ts);

COMMENT ON TABLE chronicle.snapshot IS
	'One row per snapshot: when, which recording (segment), whether all rows were written, and its own cost';

-- Daily partitions of every partitioned table in the schema.
CREATE FUNCTION chronicle.ensure_partitions(from_ts timestamptz, to_ts timestamptz)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	parent  regclass;
	day     date;
	created integer := 0;
	pname   text;
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
	LOOP
		FOR day IN
			SELECT d::date
			  FROM generate_series((from_ts AT TIME ZONE 'UTC')::date,
			                       (to_ts AT TIME ZONE 'UTC')::date,
			                       interval '1 day') AS d
		LOOP
			pname := (SELECT relname FROM pg_class WHERE oid = parent)
			         || '_p' || to_char(day, 'YYYYMMDD');
			IF to_regclass(format('chronicle.%I', pname)) IS NULL THEN
				EXECUTE format('CREATE TABLE chronicle.%I PARTITION OF %s FOR VALUES FROM (%L) TO (%L)',
				               pname, parent,
				               day::timestamp AT TIME ZONE 'UTC',
				               (day + 1)::timestamp AT TIME ZONE 'UTC');
				created := created + 1;
			END IF;
		END LOOP;
	END LOOP;
	RETURN created;
END;
$$;

COMMENT ON FUNCTION chronicle.ensure_partitions(timestamptz, timestamptz) IS
	'Creates the missing daily (UTC) partitions of every history table for a time range; returns how many';

-- Housekeeping: partitions for today and the next two days, and expired
-- partitions dropped (never DELETE).  The collector calls it hourly; without
-- the worker, schedule it with pg_cron.
CREATE FUNCTION chronicle.maintain(retention interval DEFAULT NULL)
RETURNS TABLE (partitions_created integer, partitions_dropped integer)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	keep    interval := retention;
	setting text;
	part    record;
	cutoff  date;
BEGIN
	IF keep IS NULL THEN
		setting := current_setting('chronicle.retention', true);
		keep := CASE WHEN setting IS NULL OR setting = '' THEN interval '7 days'
		             WHEN setting = '0' THEN interval '0'
		             ELSE setting::interval END;
	END IF;
	IF keep < interval '0' THEN
		RAISE EXCEPTION 'chronicle.maintain: retention must not be negative'
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Pass an interval such as ''7 days'', or 0 to keep everything.';
	END IF;

	partitions_created := chronicle.ensure_partitions(now(), now() + interval '2 days');
	partitions_dropped := 0;

	IF keep > interval '0' THEN
		-- A daily partition goes when all of it is older than the retention.
		cutoff := ((now() - keep) AT TIME ZONE 'UTC')::date;
		FOR part IN
			SELECT c.relname
			  FROM pg_inherits i
			  JOIN pg_class c ON c.oid = i.inhrelid
			  JOIN pg_class p ON p.oid = i.inhparent
			 WHERE p.relnamespace = 'chronicle'::regnamespace
			   AND c.relkind = 'r'
			   AND c.relname = p.relname || '_p' || substring(c.relname FROM '_p([0-9]{8})$')
			   AND to_date(substring(c.relname FROM '_p([0-9]{8})$'), 'YYYYMMDD') < cutoff
		LOOP
			EXECUTE format('DROP TABLE chronicle.%I', part.relname);
			partitions_dropped := partitions_dropped + 1;
		END LOOP;
	END IF;
	RETURN NEXT;
END;
$$;

COMMENT ON FUNCTION chronicle.maintain(interval) IS
	'Creates the partitions of the coming days and drops those older than the retention (default: chronicle.retention)';

CREATE FUNCTION chronicle.snapshot()
RETURNS timestamptz
LANGUAGE C
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_snapshot';

COMMENT ON FUNCTION chronicle.snapshot() IS
	'Takes one snapshot of every enabled source now (a keyframe), as the collector does; returns its timestamp';

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
	OUT wal_bytes_per_snapshot float8)
RETURNS record
LANGUAGE C STRICT
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_status';

COMMENT ON FUNCTION chronicle.status() IS
	'Whether the collector runs, what it recorded since it started, and what that cost (worker time over the last 1024 snapshots)';

CREATE FUNCTION chronicle.source_status(
	OUT source text,
	OUT enabled boolean,
	OUT snapshots bigint,
	OUT rows_written bigint,
	OUT errors bigint,
	OUT skipped bigint,
	OUT last_error_time timestamptz,
	OUT last_error text)
RETURNS SETOF record
LANGUAGE C STRICT
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_source_status';

COMMENT ON FUNCTION chronicle.source_status() IS
	'Per source: enabled or not, collections, rows written, errors and the last one';

REVOKE ALL ON FUNCTION chronicle.snapshot() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.maintain(interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.ensure_partitions(timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.status() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.source_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.status() TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.source_status() TO pg_monitor, pg_read_all_stats;

-- Start and stop the collector without shared_preload_libraries (17+).
CREATE FUNCTION chronicle.start(OUT worker text, OUT pid integer, OUT started boolean)
RETURNS SETOF record
LANGUAGE C
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_start';

COMMENT ON FUNCTION chronicle.start() IS
	'Starts the collector as a dynamic background worker recording into this database (when pg_chronicle is not preloaded)';

CREATE FUNCTION chronicle.stop(OUT worker text, OUT pid integer, OUT stopped boolean)
RETURNS SETOF record
LANGUAGE C
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_stop';

COMMENT ON FUNCTION chronicle.stop() IS
	'Stops the dynamic collector started by chronicle.start(); refused when pg_chronicle is preloaded';

-- The standby ring: snapshots taken during recovery, until promotion.
CREATE FUNCTION chronicle.standby_history(source text,
	OUT ts timestamptz, OUT keyframe boolean, OUT "row" jsonb)
RETURNS SETOF record
LANGUAGE C
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_standby_history';

COMMENT ON FUNCTION chronicle.standby_history(text) IS
	'Rows of one source kept in the standby ring (sparse as in the tables), one jsonb object per row';

CREATE FUNCTION chronicle.standby_ring(
	OUT snapshots bigint,
	OUT oldest timestamptz,
	OUT newest timestamptz,
	OUT bytes_used bigint,
	OUT bytes_total bigint,
	OUT evicted bigint,
	OUT written bigint,
	OUT in_recovery boolean)
RETURNS record
LANGUAGE C
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_standby_ring';

COMMENT ON FUNCTION chronicle.standby_ring() IS
	'How many snapshots the standby ring holds, their time range, its fill, evictions and snapshots written after promotion';

REVOKE ALL ON FUNCTION chronicle.start() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.stop() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.standby_history(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.standby_ring() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.standby_history(text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.standby_ring() TO pg_monitor, pg_read_all_stats;
