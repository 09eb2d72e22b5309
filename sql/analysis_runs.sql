-- Runs: labelled windows, their summary, comparison and settings.
\pset null NULL
SET timezone = 'UTC';
\ir sql/include/err.sql
SELECT chronicle.ensure_partitions('2024-03-03', '2024-03-03') >= 0 AS partitions;

-- Ten 1 s intervals; run a = the first five, run b = the last five.
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT '2024-03-03 00:00:00+00'::timestamptz + i * interval '1 s', '2024-03-03 00:00:00+00', i = 0, 'sql', 0, 0, 0, 0
  FROM generate_series(0, 10) i;
-- a: 100 commits, 100000 WAL bytes, 40 FPIs; b: 100 commits, 50000 bytes, 10 FPIs.
INSERT INTO chronicle.database_history (ts, datid, datname, xact_commit, xact_rollback, blks_read, blks_hit) VALUES
 ('2024-03-03 00:00:00', 1, 'bench', 0, 0, 0, 0),
 ('2024-03-03 00:00:05', 1, 'bench', 100, 0, 10, 90),
 ('2024-03-03 00:00:10', 1, 'bench', 200, 0, 10, 190);
INSERT INTO chronicle.wal_history (ts, wal_records, wal_fpi, wal_bytes, stats_reset) VALUES
 ('2024-03-03 00:00:00', 0, 0, 0, '2024-01-01'),
 ('2024-03-03 00:00:03', 300, 40, 100000, '2024-01-01'),
 ('2024-03-03 00:00:07', 500, 45, 120000, '2024-01-01'),
 ('2024-03-03 00:00:10', 600, 50, 150000, '2024-01-01');

SELECT label, started, ended, meta, settings, server_version
  FROM chronicle.run_label('a', '2024-03-03 00:00:00', '2024-03-03 00:00:05', '{"wal_compression": "off"}');
SELECT label FROM chronicle.run_label('b', '2024-03-03 00:00:05', '2024-03-03 00:00:10');
SELECT * FROM chronicle.run_window('b');

-- pgbench transactions of run b: 5 in 5 s, latencies 1 .. 5 ms.
INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us)
SELECT (SELECT run_id FROM chronicle.run WHERE label = 'b'),
       '2024-03-03 00:00:05.5+00'::timestamptz + i * interval '1 s', 0, i, 0, (i + 1) * 1000
  FROM generate_series(0, 4) i;

SELECT * FROM chronicle.run_summary('a') WHERE value IS NOT NULL;
-- WAL per commit halves from a to b: ratio 0.5.
SELECT * FROM chronicle.compare_runs('a', 'b')
 WHERE metric IN ('seconds', 'commits_per_s', 'wal_bytes_per_s', 'wal_bytes_per_commit',
                  'wal_fpi_per_commit', 'hit_ratio', 'tps', 'latency_p50_ms', 'latency_p99_ms');
SELECT seconds, wal_bytes, wal_fpi FROM chronicle.wal_run_totals('b');
SELECT * FROM chronicle.run_percentiles('b', 'wal.wal_bytes_per_s', '{0,0.5,1}');
-- The timeline carries pgbench's numbers: one transaction per interval,
-- tps over the intervals the run was active in all of it, between its
-- first start (00:00:05.499) and last end (00:00:09.5), as app_intervals()
-- has it; none in the two it was active in part of (partial).
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", commits_per_s, wal_bytes_per_s, tps, latency_p50_ms
  FROM chronicle.timeline('2024-03-03 00:00:04', '2024-03-03 00:00:10');

-- Settings that differ (labelled past ranges have none: set them here).
UPDATE chronicle.run SET settings = '{"wal_compression": "off", "shared_buffers": "128MB"}', server_version = '18.1'
 WHERE label = 'a';
UPDATE chronicle.run SET settings = '{"wal_compression": "lz4", "shared_buffers": "128MB", "work_mem": "64MB"}',
       server_version = '18.1'
 WHERE label = 'b';
SELECT * FROM chronicle.compare_settings('a', 'b');
UPDATE chronicle.run SET server_version = '18.2' WHERE label = 'b';
SELECT * FROM chronicle.compare_settings('a', 'b');

-- A live run remembers the server's non-default settings and version.
SELECT label, ended IS NULL AS open, settings ? 'shared_preload_libraries' AS superuser_setting_kept,
       settings ? 'TimeZone' AS session_setting_kept, server_version = current_setting('server_version') AS version
  FROM chronicle.run_begin('live', '{"clients": 8}');
-- One open run at a time.
SELECT pg_temp.err($$SELECT chronicle.run_begin('live2')$$);
SELECT pg_temp.err($$SELECT chronicle.run_label('a', now() - interval '1 h', now())$$);
SELECT label, ended >= started AS ended FROM chronicle.run_end();
SELECT pg_temp.err($$SELECT chronicle.run_end('live')$$);
SELECT pg_temp.err($$SELECT chronicle.run_end()$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.compare_runs('a', 'nope')$$);
-- run_end by label.
SELECT label FROM chronicle.run_begin('live2');
SELECT label, ended IS NOT NULL AS ended FROM chronicle.run_end('live2');
SELECT chronicle.run_delete('live2');
SELECT label FROM chronicle.run ORDER BY run_id;

-- Who may: pg_monitor members open and end runs and read comparisons;
-- others may not.
CREATE ROLE regress_chronicle_runner IN ROLE pg_monitor;
CREATE ROLE regress_chronicle_other;
SET ROLE regress_chronicle_runner;
SELECT label FROM chronicle.run_begin('by_monitor');
SELECT label FROM chronicle.run_end();
SELECT metric, ratio FROM chronicle.compare_runs('a', 'b') WHERE metric = 'wal_bytes_per_commit';
SELECT count(*) > 0 AS timeline FROM chronicle.timeline('2024-03-03', '2024-03-04');
RESET ROLE;
SET ROLE regress_chronicle_other;
SELECT pg_temp.err($$SELECT chronicle.run_begin('by_other')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.compare_runs('a', 'b')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.io_deltas(now() - interval '1 min', now())$$);
RESET ROLE;
DROP ROLE regress_chronicle_runner;
DROP ROLE regress_chronicle_other;

-- Every function of the analysis API pins its search_path (an aggregate
-- has no settings of its own: its functions are pg_catalog's) and is not
-- executable by PUBLIC.
SELECT p.oid::regprocedure
  FROM pg_proc p
 WHERE p.pronamespace = 'chronicle'::regnamespace
   AND ((p.prokind <> 'a' AND NOT EXISTS (SELECT FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%'))
        OR has_function_privilege('public', p.oid, 'EXECUTE'));

DELETE FROM chronicle.run;
DELETE FROM chronicle.database_history WHERE ts >= '2024-03-03' AND ts < '2024-03-04';
DELETE FROM chronicle.wal_history WHERE ts >= '2024-03-03' AND ts < '2024-03-04';
DELETE FROM chronicle.snapshot WHERE ts >= '2024-03-03' AND ts < '2024-03-04';
