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

-- The internal engine describes a source from its C declaration, checks
-- that description against the relation it reads and the result type
-- against the description, before it reads a row (superuser only: see
-- below).  d() calls it over a window of two snapshots.
-- walcols(): the result columns of chronicle.wal_deltas(), the engine's
-- column definition list for wal (d()'s default).
CREATE FUNCTION pg_temp.walcols() RETURNS text LANGUAGE sql AS $f$
	SELECT string_agg(format('%I %s', x.n, format_type(x.t, NULL)), ', ' ORDER BY x.o)
	  FROM pg_proc p, unnest(p.proargnames, p.proallargtypes, p.proargmodes) WITH ORDINALITY AS x(n, t, m, o)
	 WHERE p.oid = 'chronicle.wal_deltas'::regproc AND x.m = 't'
$f$;
CREATE FUNCTION pg_temp.d(src text, args text DEFAULT '', coldef text DEFAULT NULL)
RETURNS text LANGUAGE sql AS $f$
	SELECT pg_temp.err(format($q$SELECT * FROM chronicle._deltas(%L, '2024-05-05', '2024-05-05 00:01'%s) AS d(%s)$q$,
		src, args, coalesce(coldef, pg_temp.walcols())))
$f$;
-- The former crashes: a single-row source with snapshots but no row in the
-- window and a short result (written past the row); 5000 group_by names.
SELECT chronicle.ensure_partitions('2024-05-05', '2024-05-05') >= 0 AS partitions;
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
VALUES ('2024-05-05 00:00:01', '2024-05-05 00:00:01', true, 'sql', 0, 0, 0, 0),
       ('2024-05-05 00:00:02', '2024-05-05 00:00:01', false, 'sql', 0, 0, 0, 0);
SELECT pg_temp.d('wal', coldef => 'a int');
SELECT pg_temp.d('io', format(', group_by => %L', array_fill('backend_type'::text, ARRAY[5000])), coldef => 'a int');
-- The result type, with and without rows.
SELECT pg_temp.d('wal', coldef => replace(pg_temp.walcols(), 'wal_bytes bigint', 'wal_bytes integer'));
SELECT pg_temp.d('wal');
INSERT INTO chronicle.wal_history (ts, wal_bytes) VALUES ('2024-05-05 00:00:01', 1), ('2024-05-05 00:00:02', 5);
INSERT INTO chronicle.io_history (ts, backend_type, object, context, reads)
VALUES ('2024-05-05 00:00:01', 'client backend', 'relation', 'normal', 1),
       ('2024-05-05 00:00:02', 'client backend', 'relation', 'normal', 3);
SELECT pg_temp.d('wal', coldef => 'a int');
SELECT pg_temp.d('wal', coldef => replace(pg_temp.walcols(), 'wal_bytes bigint', 'wal_bytes integer'));
SELECT pg_temp.d('wal');
-- Sources: unknown, recorded but not analysed, NULL.
SELECT pg_temp.d('no_such_source');
SELECT pg_temp.d('statements');
SELECT pg_temp.err($$SELECT * FROM chronicle._deltas(NULL, now(), now()) AS d(a int)$$);
-- group_by: names twice, not a key, on a source without keys, with gauges.
SELECT pg_temp.d('io', $$, group_by => '{object,object}'$$, coldef => 'a int');
SELECT pg_temp.d('io', $$, group_by => '{reads}'$$, coldef => 'a int');
SELECT pg_temp.d('wal', $$, group_by => '{}'$$);
SELECT pg_temp.d('buffers', $$, group_by => '{}'$$, coldef => 'a int');
-- tbl: a relation without the source's columns, or of the wrong types;
-- none at all.
SELECT pg_temp.d('wal', $$, tbl => 'pg_catalog.pg_class'$$);
CREATE TEMP TABLE wal_int (ts timestamptz, wal_records int, wal_fpi bigint, wal_bytes bigint,
	wal_buffers_full bigint, wal_write bigint, wal_sync bigint, wal_write_time float8,
	wal_sync_time float8, stats_reset timestamptz);
SELECT pg_temp.d('wal', $$, tbl => 'pg_temp.wal_int'$$);
DROP TABLE wal_int;
SELECT pg_temp.d('wal', ', tbl => 0');
-- Filter values that do not match the filter columns; exclusions.
SELECT pg_temp.d('io', $$, filter_vals => '{client backend}'$$, coldef => 'a int');
SELECT pg_temp.d('io', $$, exclude_cols => '{object}', exclude_vals => '{}'$$, coldef => 'a int');
SELECT pg_temp.d('io', $$, exclude_cols => '{reads}', exclude_vals => '{1}'$$, coldef => 'a int');
SELECT pg_temp.d('io', format(', exclude_cols => %L, exclude_vals => %L',
	array_fill('object'::text, ARRAY[1001]), array_fill('x'::text, ARRAY[1001])), coldef => 'a int');
SELECT pg_temp.err($$SELECT * FROM chronicle._deltas('wal', now(), NULL) AS d(a int)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle._ends('wal', now(), now()) AS d(a int)$$);

-- Who may: _deltas reads any relation it is given, so a monitoring role
-- may not call it; every function calling it is SECURITY DEFINER and works
-- for them.
CREATE ROLE regress_chronicle_deltas_monitor IN ROLE pg_monitor;
SET ROLE regress_chronicle_deltas_monitor;
SELECT pg_temp.d('wal');
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
