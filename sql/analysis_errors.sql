-- Every bad input gets an error with an errcode, a message and a hint:
-- err() runs a statement and shows SQLSTATE: message / HINT: hint.
\pset null NULL
SET timezone = 'UTC';
\ir sql/include/err.sql

-- Windows: NULL, reversed, empty.
SELECT pg_temp.err($$SELECT * FROM chronicle.io_deltas(NULL, now())$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.io_deltas(now(), NULL)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.wal_deltas('2024-01-02', '2024-01-01')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.wal_totals('2024-01-01', '2024-01-01')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.intervals('2024-01-02', '2024-01-01')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.timeline(NULL, NULL)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.timeline(now() - interval '1 h', now(), detail => NULL)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.wait_profile('2024-01-02', '2024-01-01')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.summary('2024-01-02', '2024-01-01')$$);

-- Unknown key names.
SELECT pg_temp.err($$SELECT * FROM chronicle.io_deltas('2024-01-01', '2024-01-02', for_backend_type => 'client backends')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.io_totals('2024-01-01', '2024-01-02', for_object => 'table')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.io_deltas('2024-01-01', '2024-01-02', for_context => 'bulk')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.database_deltas('2024-01-01', '2024-01-02', for_datname => 'no_such_database')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.wait_deltas('2024-01-01', '2024-01-02', for_wait_event_type => 'Disk')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.wait_profile('2024-01-01', '2024-01-02', for_backend_type => 'nobody')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.wait_profile('2024-01-01', '2024-01-02', include_idle => NULL)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.wait_profile_series('2024-01-01', '2024-01-02', top => 0)$$);

-- Unknown metrics, and filters that do not apply to a metric.
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.bytes', '2024-01-01', '2024-01-02')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('nonsense', '2024-01-01', '2024-01-02')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles(NULL, '2024-01-01', '2024-01-02')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.series('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', for_backend_type => 'checkpointer')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.series('io.writes_per_s', '2024-01-01', '2024-01-02', for_datname => 'postgres')$$);

-- Percentiles outside [0, 1], NULL, empty.
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', '{0.5,99}')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', '{-0.1}')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', '{0.5,NULL}')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', '{}')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', '{NaN}')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', discrete => NULL)$$);

-- Runs: unknown labels, NULL labels, bad metadata, no open run.
SELECT pg_temp.err($$SELECT * FROM chronicle.compare_runs('no_such_run', 'other')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.run_summary(NULL)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.io_run_totals('no_such_run')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.run_percentiles('no_such_run', 'wal.wal_bytes_per_s')$$);
SELECT pg_temp.err($$SELECT chronicle.run_begin(NULL)$$);
SELECT pg_temp.err($$SELECT chronicle.run_begin('')$$);
SELECT pg_temp.err($$SELECT chronicle.run_begin('x', '[1, 2]')$$);
SELECT pg_temp.err($$SELECT chronicle.run_begin('x', NULL)$$);
SELECT pg_temp.err($$SELECT chronicle.run_end()$$);
SELECT pg_temp.err($$SELECT chronicle.run_end('no_such_run')$$);
SELECT pg_temp.err($$SELECT chronicle.run_label('x', '2024-01-02', '2024-01-01')$$);
SELECT pg_temp.err($$SELECT chronicle.run_label('x', NULL, '2024-01-01')$$);
SELECT pg_temp.err($$SELECT chronicle.run_delete('no_such_run')$$);

-- The internal engine checks the whole table description against the
-- table, and the result type against the description, before it reads a
-- row (superuser only: see below).  d() calls it over a window of two
-- snapshots with one part of a good description replaced.
CREATE FUNCTION pg_temp.d(tbl text, keys text, vals text, kinds text, attrs text DEFAULT '{}',
	reset_col text DEFAULT NULL, bytes_ops text DEFAULT NULL, bytes_unit text DEFAULT 'NULL',
	per_op text DEFAULT '{}', filter_cols text DEFAULT '{}', group_by text DEFAULT 'NULL',
	exclude_cols text DEFAULT '{}', exclude_vals text DEFAULT '{}',
	coldef text DEFAULT 's timestamptz, e timestamptz, secs float8, reset boolean, wal_bytes bigint, r float8')
RETURNS text LANGUAGE sql AS $f$
	SELECT pg_temp.err(format($q$SELECT * FROM chronicle._deltas(%L, '2024-05-05', '2024-05-05 00:01',
		%L, %L, %L, %L, %L, %s, %s, %L, %L, NULL, false, %s, %L, %L) AS d(%s)$q$,
		tbl, keys, vals, kinds, attrs, reset_col,
		coalesce(bytes_ops, quote_literal(array_fill(NULL::text, ARRAY[cardinality(vals::text[])]))),
		bytes_unit, per_op, filter_cols, group_by, exclude_cols, exclude_vals, coldef))
$f$;
-- The former crashes: a single-row table with snapshots but no row in the
-- window and a short result (written past the row); 5000 group_by names.
SELECT chronicle.ensure_partitions('2024-05-05', '2024-05-05') >= 0 AS partitions;
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
VALUES ('2024-05-05 00:00:01', '2024-05-05 00:00:01', true, 'sql', 0, 0, 0, 0),
       ('2024-05-05 00:00:02', '2024-05-05 00:00:01', false, 'sql', 0, 0, 0, 0);
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_records,wal_fpi,wal_bytes,wal_write_time}', 'ccct',
	reset_col => 'stats_reset', coldef => 'a int');
SELECT pg_temp.d('chronicle.io_history', '{backend_type,object,context}', '{reads}', 'c',
	group_by => quote_literal(array_fill('backend_type'::text, ARRAY[5000])), coldef => 'a int');
-- The result type, with and without rows.
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes}', 'c',
	coldef => 's timestamptz, e timestamptz, secs float8, reset boolean, wal_bytes int, r float8');
INSERT INTO chronicle.wal_history (ts, wal_bytes) VALUES ('2024-05-05 00:00:01', 1), ('2024-05-05 00:00:02', 5);
INSERT INTO chronicle.io_history (ts, backend_type, object, context, reads)
VALUES ('2024-05-05 00:00:01', 'client backend', 'relation', 'normal', 1),
       ('2024-05-05 00:00:02', 'client backend', 'relation', 'normal', 3);
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes}', 'c', coldef => 'a int');
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes}', 'c',
	coldef => 's timestamptz, e timestamptz, secs float8, reset boolean, wal_bytes int, r float8');
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes}', 'c');
-- group_by: names twice, not a key, on a table without keys, with a gauge.
SELECT pg_temp.d('chronicle.io_history', '{backend_type,object,context}', '{reads}', 'c',
	group_by => quote_literal('{object,object}'::text[]), coldef => 'a int');
SELECT pg_temp.d('chronicle.io_history', '{backend_type,object,context}', '{reads}', 'c',
	group_by => quote_literal('{reads}'::text[]), coldef => 'a int');
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes}', 'c', group_by => $$'{}'$$);
SELECT pg_temp.d('chronicle.io_history', '{backend_type,object,context}', '{reads}', 'g',
	group_by => $$'{}'$$, coldef => 'a int');
-- Columns: unknown, a system column, twice, ts again, the wrong type.
SELECT pg_temp.d('chronicle.wal_history', '{}', '{no_such_column}', 'c');
SELECT pg_temp.d('chronicle.wal_history', '{}', '{ctid}', 'g');
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes,wal_bytes}', 'cc');
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes}', 'c', attrs => '{wal_bytes}');
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes}', 'c', reset_col => 'ts');
SELECT pg_temp.d('chronicle.wal_history', '{}', '{stats_reset}', 'c');
SELECT pg_temp.d('chronicle.io_history', '{backend_type}', '{reads}', 'c', filter_cols => '{reads}');
SELECT pg_temp.d('pg_catalog.pg_class', '{}', '{}', '');
SELECT pg_temp.err($$SELECT * FROM chronicle._deltas(0, now(), now(), '{}', '{}', '', '{}', NULL, '{}', NULL,
	'{}', '{}', '{}', false) AS d(a int)$$);
-- Counts and kinds that do not add up; NULLs.
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes}', 'cc');
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes}', 'x');
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes}', 'c', bytes_ops => $$'{}'$$);
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes,wal_write}', 'cc', bytes_ops => $$'{wal_write,NULL}'$$);
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes}', 'c', per_op => '{wal_bytes}');
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes}', 'c', per_op => '{wal_bytes,wal_fpi}');
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes,NULL}', 'cc');
SELECT pg_temp.d('chronicle.io_history', '{backend_type}', '{reads}', 'c',
	exclude_cols => '{object}', exclude_vals => '{}');
SELECT pg_temp.d('chronicle.io_history', '{backend_type}', '{reads}', 'c',
	exclude_cols => array_fill('object'::text, ARRAY[1001])::text,
	exclude_vals => array_fill('x'::text, ARRAY[1001])::text);
SELECT pg_temp.err($$SELECT * FROM chronicle._deltas('chronicle.wal_history', now(), NULL, '{}', '{}', '', '{}',
	NULL, '{}', NULL, '{}', '{}', '{}', false) AS d(a int)$$);

-- Who may: _deltas takes a description from its caller, so a monitoring
-- role may not call it; every function calling it is SECURITY DEFINER and
-- works for them.
CREATE ROLE regress_chronicle_deltas_monitor IN ROLE pg_monitor;
SET ROLE regress_chronicle_deltas_monitor;
SELECT pg_temp.d('chronicle.wal_history', '{}', '{wal_bytes}', 'c');
SELECT interval_end, wal_bytes FROM chronicle.wal_deltas('2024-05-05', '2024-05-05 00:01');
SELECT interval_end, backend_type, reads FROM chronicle.io_deltas('2024-05-05', '2024-05-05 00:01');
SELECT backend_type, reads FROM chronicle.io_totals('2024-05-05', '2024-05-05 00:01');
SELECT interval_end, value FROM chronicle.series('io.reads_per_s', '2024-05-05', '2024-05-05 00:01');
SELECT percentile, value FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-05-05', '2024-05-05 00:01', '{0.5}');
SELECT interval_end, reads_per_s, wal_bytes_per_s FROM chronicle.timeline('2024-05-05', '2024-05-05 00:01', detail => true);
SELECT pg_temp.err($$SELECT * FROM chronicle._io_sums('2024-05-05', '2024-05-05 00:01', by => 'reads')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle._os_disk_sums('2024-05-05', '2024-05-05 00:01',
	exclude_cols => '{device,device}', exclude_vals => '{x}')$$);
RESET ROLE;
DROP ROLE regress_chronicle_deltas_monitor;
SELECT p.oid::regprocedure, p.prosecdef,
       has_function_privilege('pg_monitor', p.oid, 'EXECUTE') AS pg_monitor,
       has_function_privilege('pg_read_all_stats', p.oid, 'EXECUTE') AS pg_read_all_stats
  FROM pg_proc p
 WHERE p.pronamespace = 'chronicle'::regnamespace
   AND (p.proname = '_deltas' OR p.prosrc LIKE '%chronicle._deltas(%')
 ORDER BY p.proname;
DELETE FROM chronicle.io_history WHERE ts >= '2024-05-05' AND ts < '2024-05-06';
DELETE FROM chronicle.wal_history WHERE ts >= '2024-05-05' AND ts < '2024-05-06';
DELETE FROM chronicle.snapshot WHERE ts >= '2024-05-05' AND ts < '2024-05-06';
