-- History.  Every snapshot writes one row of chronicle.history, with a
-- packed value per source holding that source's rows (src/history.c has the
-- format): raw cumulative counters exactly as the view shows them, written
-- sparsely: a row only when it changed since the previous snapshot of the
-- same segment, every row in a keyframe.  A key without a row at a snapshot
-- has the value of its latest earlier row in the segment.  Byte counters
-- are bigint (the views show numeric; the values are equal).
--
-- Each source is read through its view, chronicle.<source>_history, one row
-- per key and snapshot as the source's C file (src/source_<name>.c) emits
-- them; a WHERE on ts reaches the table's primary key.  The views take
-- INSERT, UPDATE and DELETE too (for tests, generators and repairs): the row
-- goes into the packed value of its snapshot.

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
