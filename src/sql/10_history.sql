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

-- The packed column of each source (bytea, named after the source) is added
-- by chronicle._history_layout() below, from the source's C file.
CREATE TABLE chronicle.history (
	ts                timestamptz NOT NULL,
	system_identifier bigint,	-- the recording server (chronicle.server())
	server_name       text,
	PRIMARY KEY (ts)
) PARTITION BY RANGE (ts);
COMMENT ON TABLE chronicle.history IS
	'One row per snapshot: every source''s changed rows, packed (read them through the <source>_history views)';

-- The history of the imported origins (05_origin.sql): chronicle.history's
-- columns, keyed by (origin, ts), packed with this database's key ids (an
-- import packs the archive's rows again), the same packed column per
-- source (chronicle._history_layout()).
CREATE TABLE chronicle.archive_history (
	origin            integer NOT NULL REFERENCES chronicle.origin,
	ts                timestamptz NOT NULL,
	system_identifier bigint,
	server_name       text,
	PRIMARY KEY (origin, ts)
);
COMMENT ON TABLE chronicle.archive_history IS
	'The history of imported runs, by origin (chronicle.history''s columns)';

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

-- The SQL shape of the history, made from the C column lists
-- (chronicle._source_columns(), src/source_*.c), the one definition of
-- every source's columns: per source, its packed column of
-- chronicle.history, and the view chronicle.<source>_history with its
-- INSTEAD OF trigger, its comment (the source's description) and its grants.
-- Creates what is missing and replaces what exists, so it runs at CREATE
-- EXTENSION and again at every upgrade: a new source gets its column (added
-- at the end) and view, a new column of a source (at the end of its list)
-- its place in the view.  What CREATE OR REPLACE VIEW refuses (a column
-- renamed, retyped or removed) needs a DROP VIEW in the upgrade's
-- -before.sql, as a changed signature needs a DROP FUNCTION.
CREATE FUNCTION chronicle._history_layout()
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	s record;
	v text;
BEGIN
	FOR s IN
		-- %s of a regtype: its output is a type name, quoted where needed
		SELECT c.source, min(c.description) AS description,
		       string_agg(format('%I %s', c.column_name, c.column_type), ', ' ORDER BY c.ordinal) AS columns
		  FROM chronicle._source_columns() WITH ORDINALITY AS c(source, ordinal, column_name, column_type, key, description, kind, n)
		 GROUP BY c.source
		 ORDER BY min(c.n)	-- the order of src/sources.c
	LOOP
		v := s.source || '_history';
		EXECUTE format('ALTER TABLE chronicle.history ADD COLUMN IF NOT EXISTS %I bytea', s.source);
		EXECUTE format('ALTER TABLE chronicle.archive_history ADD COLUMN IF NOT EXISTS %I bytea', s.source);
		-- the origin read now, as chronicle._snapshot reads it
		-- (05_origin.sql): this server's by chronicle.history's primary key
		-- as before, an imported one's by (origin, ts)
		EXECUTE format($q$CREATE OR REPLACE VIEW chronicle.%I AS
SELECT h.ts, u.*
  FROM (SELECT 0 AS origin, l.ts, l.%I AS v FROM chronicle.history l
        UNION ALL
        SELECT a.origin, a.ts, a.%I FROM chronicle.archive_history a) h
 CROSS JOIN LATERAL chronicle._unpack(%L, h.ts, h.v) AS u(%s)
 WHERE h.v IS NOT NULL AND h.origin = chronicle._origin()$q$,
		               v, s.source, s.source, s.source, s.columns);
		EXECUTE format('CREATE OR REPLACE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.%I '
		               'FOR EACH ROW EXECUTE FUNCTION chronicle._history_write(%L)', v, s.source);
		EXECUTE format('COMMENT ON VIEW chronicle.%I IS %L', v, s.description);
		-- as 99_grants.sql grants every table of the schema, which upgrades
		-- do not run again
		EXECUTE format('REVOKE ALL ON chronicle.%I FROM PUBLIC', v);
		EXECUTE format('GRANT SELECT ON chronicle.%I TO pg_monitor, pg_read_all_stats', v);
	END LOOP;
END;
$fn$;
COMMENT ON FUNCTION chronicle._history_layout() IS
	'Makes every source''s packed column of chronicle.history and its <source>_history view (trigger, comment, grants) from the C column lists';
REVOKE ALL ON FUNCTION chronicle._history_layout() FROM PUBLIC;

-- Here, right after what it calls: the code below reads the views (and a
-- view or a LANGUAGE sql body that reads one is checked when it is
-- created).  Marked "-- @upgrade" because the views are code, not data:
-- every upgrade makes them again from the new library's C lists, at this
-- point of the code as the install script does, so a source or a column
-- added needs no upgrade step written by hand.
-- @upgrade
SELECT chronicle._history_layout();
