-- Part of bench/storage.sh: what the rows of the measured window would
-- cost in the compact shapes of docs/storage.md, built from those very
-- rows (psql variables t0, t1: the window; secs: its length in seconds).
--   rows:   one row per key and snapshot as today, the text keys replaced by
--           an integer id from a dictionary (ts, key_id int4, values...);
--   arrays: one row per snapshot holding an int4[] of key ids and one array
--           per value column, lz4 compressed from 128 B on
--           (toast_tuple_target), no index but BRIN on ts.
-- Bytes of the rows: pg_column_size of each row (tuple header included,
-- compressed values as stored) + 4 B of line pointer; no index, no free
-- space at page ends (whole pages would hide the differences in a minute).
SET client_min_messages = warning;
CREATE SCHEMA proj;
CREATE FUNCTION proj.measure(tbl text, keys text[], lo timestamptz, hi timestamptz, secs float8,
	OUT "table" text, OUT "today heap B/s" numeric, OUT "rows+dictionary B/s" numeric, OUT "arrays B/s" numeric)
LANGUAGE plpgsql AS $$
DECLARE
	vals text[];
	k text := array_to_string(keys, ', ');
BEGIN
	SELECT array_agg(quote_ident(a.attname) ORDER BY a.attnum) INTO vals
	  FROM pg_attribute a
	 WHERE a.attrelid = format('chronicle.%I', tbl)::regclass AND a.attnum > 0 AND NOT a.attisdropped
	   AND a.attname <> 'ts' AND NOT a.attname = ANY (keys);
	EXECUTE format('CREATE TABLE proj.today AS SELECT * FROM chronicle.%I WHERE ts BETWEEN %L AND %L', tbl, lo, hi);
	EXECUTE format('CREATE TABLE proj.dict AS SELECT row_number() OVER ()::int4 AS id, %s FROM (SELECT DISTINCT %s FROM proj.today) d', k, k);
	EXECUTE format('CREATE TABLE proj.rows AS SELECT t.ts, d.id AS key_id, %s FROM proj.today t JOIN proj.dict d USING (%s)',
	               (SELECT string_agg('t.' || v, ', ') FROM unnest(vals) v), k);
	EXECUTE format('CREATE TABLE proj.arrays (ts timestamptz, key_ids int4[], %s) WITH (toast_tuple_target = 128)',
	               (SELECT string_agg(v || ' ' || format_type(a.atttypid, a.atttypmod) || '[] COMPRESSION lz4', ', ')
	                  FROM unnest(vals) v JOIN pg_attribute a ON a.attrelid = 'proj.today'::regclass AND quote_ident(a.attname) = v));
	EXECUTE 'ALTER TABLE proj.arrays ALTER key_ids SET COMPRESSION lz4';
	EXECUTE format('INSERT INTO proj.arrays SELECT ts, array_agg(key_id ORDER BY key_id), %s FROM proj.rows GROUP BY ts',
	               (SELECT string_agg(format('array_agg(%s ORDER BY key_id)', v), ', ') FROM unnest(vals) v));
	"table" := tbl;
	"today heap B/s" := (SELECT round(sum(pg_column_size(x.*) + 4) / secs) FROM proj.today x);
	"rows+dictionary B/s" := (SELECT round(sum(pg_column_size(x.*) + 4) / secs) FROM proj.rows x);
	"arrays B/s" := (SELECT round(sum(pg_column_size(x.*) + 4) / secs) FROM proj.arrays x);
	DROP TABLE proj.today, proj.dict, proj.rows, proj.arrays;
	RETURN;
END $$;
\echo 'the same rows in compact shapes (row bytes: heap + TOAST, no index; the dictionary itself not counted):'
SELECT m.* FROM (VALUES
	('waits_history', ARRAY['backend_type', 'state', 'wait_event_type', 'wait_event', 'queryid']),
	('statements_history', ARRAY['userid', 'dbid', 'queryid', 'toplevel']),
	('io_history', ARRAY['backend_type', 'object', 'context']),
	('database_history', ARRAY['datid']),
	('os_pressure_history', ARRAY['resource'])) s(t, k)
 CROSS JOIN LATERAL proj.measure(s.t, s.k, :'lo', :'hi', :secs) m;
DROP SCHEMA proj CASCADE;
