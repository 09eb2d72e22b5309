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
--   system_identifier, server_name: the server that recorded it
--             (chronicle.server()); NULL in snapshots recorded before 0.2.0.
--             See docs/storage.md, "Server identity".
CREATE TABLE chronicle.snapshot (
	ts            timestamptz NOT NULL,
	segment       timestamptz NOT NULL,
	keyframe      boolean     NOT NULL,
	collector     text        NOT NULL CHECK (collector IN ('worker', 'sql')),
	duration_ms   float8      NOT NULL,
	rows_written  bigint      NOT NULL,
	wal_bytes     bigint      NOT NULL,
	errors        integer     NOT NULL,
	system_identifier bigint,
	server_name   text,
	PRIMARY KEY (ts)
) PARTITION BY RANGE (ts);

COMMENT ON TABLE chronicle.snapshot IS
	'One row per snapshot: when, which recording (segment), whether all rows were written, and its own cost';

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
--
-- Rows to move: the parent's AccessExclusiveLock first, or a query could
-- read them in neither partition.  A query knows the parent's partitions
-- when it is planned, and the ATTACH makes it wait for the default
-- partition's lock after that; it then reads (READ COMMITTED) with a
-- snapshot taken once this transaction committed: the rows are gone from
-- the default partition, and the new one is not in its plan (a central
-- side's backfill lost a promoted standby's ring so).  A query that planned
-- holds the parent's AccessShareLock, so the lock waits for it, and the
-- next queries plan after the ATTACH.  Taken before the move, the lock also
-- waits for a writer that routes a row of the day into the default
-- partition, whose row then moves too (else the ATTACH would fail on it);
-- and once more after it, for rows that came between the two.
CREATE FUNCTION chronicle._create_partition(parent regclass, day date)
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
	waiting boolean;
	moved bigint;
BEGIN
	IF to_regclass(format('chronicle.%I', pname)) IS NOT NULL THEN
		RETURN false;
	END IF;
	EXECUTE format('CREATE TABLE chronicle.%I (LIKE chronicle.%I INCLUDING ALL)', pname, dflt);
	EXECUTE format('SELECT EXISTS (SELECT FROM chronicle.%I WHERE ts >= %L AND ts < %L)', dflt, lo, hi)
	   INTO waiting;
	IF waiting THEN
		EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', parent);
	END IF;
	EXECUTE format('WITH moved AS (DELETE FROM chronicle.%I WHERE ts >= %L AND ts < %L RETURNING *)'
	               ' INSERT INTO chronicle.%I SELECT * FROM moved',
	               dflt, lo, hi, pname);
	GET DIAGNOSTICS moved = ROW_COUNT;
	IF moved > 0 AND NOT waiting THEN
		EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', parent);
	END IF;
	EXECUTE format('ALTER TABLE %s ATTACH PARTITION chronicle.%I FOR VALUES FROM (%L) TO (%L)',
	               parent, pname, lo, hi);
	RETURN true;
END;
$$;

-- The partitioned tables of the schema (the history tables and the
-- rollups, not their partitions): what ensure_partitions(), the
-- housekeeping and the partition layout walk.
CREATE FUNCTION chronicle._partitioned_tables(OUT oid regclass, OUT relname name)
RETURNS SETOF record
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT c.oid::regclass, c.relname
	  FROM pg_class c
	  JOIN pg_partitioned_table p ON p.partrelid = c.oid
	 WHERE c.relnamespace = 'chronicle'::regnamespace
	   AND NOT c.relispartition
$$;

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
	FOR parent IN SELECT t.oid FROM chronicle._partitioned_tables() t ORDER BY t.relname LOOP
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

-- A retention given as an argument: never negative (0 keeps everything).
CREATE FUNCTION chronicle._check_retention(caller text, retention interval)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF retention < interval '0' THEN
		RAISE EXCEPTION '%: retention must not be negative', caller
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Pass an interval such as ''7 days'', or 0 to keep everything.';
	END IF;
END;
$$;
COMMENT ON FUNCTION chronicle._check_retention(text, interval) IS
	'An error naming the caller when a retention given is negative';
REVOKE ALL ON FUNCTION chronicle._check_retention(text, interval) FROM PUBLIC;

-- Housekeeping, one row per partition acted on: the partitions of today
-- and the next days created (with the rows waiting for them in the
-- default partition), the day partitions older than the retention dropped
-- (the rollups': older than chronicle.rollup_retention)
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
	PERFORM chronicle._check_retention('chronicle.maintain', keep);
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

	FOR parent IN SELECT * FROM chronicle._partitioned_tables() t ORDER BY t.relname LOOP
		blocked := false;
		table_cutoff := CASE WHEN parent.relname IN ('rollup_minute', 'rollup_hour')
		                     THEN rollup_cutoff ELSE cutoff END;
		-- The days whose rows wait in the default partition (none, normally).
		-- A row at +/-infinity has no day: it stays in the default
		-- partition, and must not make a partition without a name.
		BEGIN
			EXECUTE format('SELECT array_agg(DISTINCT (ts AT TIME ZONE ''UTC'')::date) FROM chronicle.%I'
			               ' WHERE isfinite(ts)',
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

	-- The statements' texts go with the last history that referred to
	-- them (40_statements.sql): those not seen since the cutoff.  Said
	-- only when it could not be done, as a skip.
	IF cutoff IS NOT NULL THEN
		BEGIN
			DELETE FROM chronicle.statements_text t
			 WHERE t.last_seen < cutoff::timestamp AT TIME ZONE 'UTC';
		EXCEPTION WHEN OTHERS THEN
			action := 'prune';
			relation := 'statements_text';
			ok := false;
			GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
			RETURN NEXT;
		END;
	END IF;
END;
$$;

COMMENT ON FUNCTION chronicle._maintain(interval) IS
	'Housekeeping, one row per partition created, dropped or skipped (ok = false, with the error); used by maintain() and the collector';

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
			RAISE WARNING 'chronicle.maintain: could not % %chronicle.%: %',
				r.action, CASE WHEN r.action = 'prune' THEN '' ELSE 'partition ' END,
				r.relation, r.message
				USING ERRCODE = r.code,
				      HINT = 'Nothing waited for it and recording goes on; the next maintenance tries again.';
		ELSIF r.action = 'create' THEN
			partitions_created := partitions_created + 1;
		ELSE
			partitions_dropped := partitions_dropped + 1;
		END IF;
	END LOOP;
	-- On a central database, the subscribed servers' history past its
	-- retention (42_central.sql; the housekeeper does it too).
	BEGIN
		PERFORM chronicle._prune_servers(retention);
	EXCEPTION WHEN OTHERS THEN
		partitions_skipped := partitions_skipped + 1;
		RAISE WARNING 'chronicle.maintain: could not delete the subscribed servers'' expired history: %', SQLERRM
			USING ERRCODE = SQLSTATE,
			      HINT = 'Nothing waited for it and recording goes on; the next maintenance tries again.';
	END;
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
	FOR parent IN SELECT * FROM chronicle._partitioned_tables() t ORDER BY t.relname LOOP
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

-- The identity of this server, as its snapshots record it.
CREATE FUNCTION chronicle.server(OUT system_identifier bigint, OUT name text)
RETURNS record
LANGUAGE C STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_server';

COMMENT ON FUNCTION chronicle.server() IS
	'The identity this server records in every snapshot row: system identifier (shared with its physical standbys) and name (chronicle.server_name, else cluster_name, else the host name)';

REVOKE ALL ON FUNCTION chronicle.snapshot() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.maintain(interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.ensure_partitions(timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._create_partition(regclass, date) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._retention() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._maintain(interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._partition_layout() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._partitioned_tables() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._partitioned_tables() TO pg_monitor, pg_read_all_stats;
REVOKE ALL ON FUNCTION chronicle.status() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.source_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.status() TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.source_status() TO pg_monitor, pg_read_all_stats;
REVOKE ALL ON FUNCTION chronicle.server() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.server() TO pg_monitor, pg_read_all_stats;

-- The columns every source writes (after ts), as its C file declares them
-- (src/source.h: name, type, kind), and the source's description: what
-- chronicle._history_layout() makes the history's views and packed columns
-- from (docs/storage.md), and chronicle._analysis_layout() the analysis
-- functions.
CREATE FUNCTION chronicle._source_columns(
	OUT source text,
	OUT ordinal integer,
	OUT column_name text,
	OUT column_type regtype,
	OUT key boolean,
	OUT description text,
	OUT kind text)
RETURNS SETOF record
LANGUAGE C STRICT
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_source_columns';

COMMENT ON FUNCTION chronicle._source_columns() IS
	'The columns of every source as the C source declares them (after ts), in insert order, which identify a row, the source''s description and the column''s kind';

REVOKE ALL ON FUNCTION chronicle._source_columns() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._source_columns() TO pg_monitor, pg_read_all_stats;

-- What the analysis needs of each analysed source beyond its columns'
-- kinds (src/source.h, ChronicleAnalysis): the prefix of its functions,
-- their filter columns, the per-operation ratios (result column, time
-- column, operations column), the bytes fallback (bytes column, operations
-- column, unit column), whether its keys are born at zero, the unit of its
-- gauges.
CREATE FUNCTION chronicle._source_analysis(
	OUT source text,
	OUT prefix text,
	OUT filters text[],
	OUT per_op text[],
	OUT per_op_time text[],
	OUT per_op_ops text[],
	OUT bytes text[],
	OUT bytes_ops text[],
	OUT bytes_unit text,
	OUT born_at_zero boolean,
	OUT gauge_unit text)
RETURNS SETOF record
LANGUAGE C STRICT
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_source_analysis';

COMMENT ON FUNCTION chronicle._source_analysis() IS
	'How every analysed source is analysed, as its C file declares it: function prefix, filters, per-operation ratios, bytes fallback, born at zero, gauge unit';

REVOKE ALL ON FUNCTION chronicle._source_analysis() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._source_analysis() TO pg_monitor, pg_read_all_stats;

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
