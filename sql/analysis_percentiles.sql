-- Exact percentiles over the intervals of a window, on a known series.
\set VERBOSITY terse
\pset null NULL
SET timezone = 'UTC';
SELECT chronicle.ensure_partitions('2024-03-02', '2024-03-02') >= 0 AS partitions;

-- Eleven snapshots one second apart (ten intervals) in one segment.
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT '2024-03-02 00:00:00+00'::timestamptz + i * interval '1 s', '2024-03-02 00:00:00+00', i = 0, 'sql', 0, 0, 0, 0
  FROM generate_series(0, 10) i;
-- WAL bytes per interval: 500, 100, 900, 300, 700, 200, 800, 400, 600, 1000.
INSERT INTO chronicle.wal_history (ts, wal_records, wal_fpi, wal_bytes, stats_reset)
SELECT '2024-03-02 00:00:00+00'::timestamptz + i * interval '1 s', i, 0,
       coalesce(sum(d) OVER (ORDER BY i), 0), '2024-01-01'
  FROM (SELECT i, (ARRAY[0, 500, 100, 900, 300, 700, 200, 800, 400, 600, 1000])[i + 1] AS d
          FROM generate_series(0, 10) i) s;
-- Client backend writes: one key changes in intervals 2 and 5 only; the
-- other intervals are zeros (sparse rows), and they count.
INSERT INTO chronicle.io_history (ts, backend_type, object, context, writes, write_bytes, write_time, stats_reset) VALUES
 ('2024-03-02 00:00:00', 'client backend', 'relation', 'normal', 0, 0, 0, '2024-01-01'),
 ('2024-03-02 00:00:00', 'client backend', 'relation', 'bulkwrite', 0, 0, 0, '2024-01-01'),
 ('2024-03-02 00:00:02', 'client backend', 'relation', 'normal', 4, 32768, 2, '2024-01-01'),
 ('2024-03-02 00:00:05', 'client backend', 'relation', 'normal', 5, 40960, 3, '2024-01-01'),
 ('2024-03-02 00:00:05', 'client backend', 'relation', 'bulkwrite', 2, 16384, 4, '2024-01-01');

SELECT * FROM chronicle.series('wal.wal_bytes_per_s', '2024-03-02', '2024-03-03');
-- Interpolated (percentile_cont): p50 = 550, p90 = 910, p99 = 991, max 1000.
SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-03-02', '2024-03-03');
-- The same as percentile_cont over the per-interval rates.
SELECT percentile_cont(ARRAY[0.5, 0.9, 0.99, 1]) WITHIN GROUP (ORDER BY wal_bytes_per_s) AS direct
  FROM chronicle.wal_deltas('2024-03-02', '2024-03-03');
-- Discrete: actual interval values.
SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-03-02', '2024-03-03', '{0,0.25,0.5,0.75}', discrete => true);
-- Any list; a sub-window.
SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-03-02 00:00:05', '2024-03-03', '{0.1,0.5}');

-- Keyed: summed over the matching keys per interval, zeros included:
-- per-interval write bytes/s of client backends: 0, 32768, 0, 0,
-- 8192 + 16384 = 24576, then 0 x5.
SELECT interval_end, value FROM chronicle.series('io.write_bytes_per_s', '2024-03-02', '2024-03-03',
                                                 for_backend_type => 'client backend');
SELECT * FROM chronicle.percentiles('io.write_bytes_per_s', '2024-03-02', '2024-03-03', '{0.5,0.8,0.9,1}',
                                    for_backend_type => 'client backend');
SELECT * FROM chronicle.percentiles('io.write_bytes_per_s', '2024-03-02', '2024-03-03', '{1}',
                                    for_backend_type => 'client backend', for_context => 'bulkwrite');
-- Per-operation metrics: intervals without an operation are left out:
-- 2 ms / 4 writes = 0.5 and (3 - 2 + 4) ms / (1 + 2) writes = 1.6667.
SELECT * FROM chronicle.percentiles('io.ms_per_write', '2024-03-02', '2024-03-03', '{0,1}');
-- A reset interval is left out, not counted as zero or huge: the counter
-- restarts at 0 at :06; the 9 other intervals keep their values (p50 600).
UPDATE chronicle.wal_history SET wal_bytes = 0, stats_reset = '2024-03-02 00:00:05.5'
 WHERE ts = '2024-03-02 00:00:06';
UPDATE chronicle.wal_history SET wal_bytes = wal_bytes - 2700, stats_reset = '2024-03-02 00:00:05.5'
 WHERE ts > '2024-03-02 00:00:06';
SELECT interval_end, value FROM chronicle.series('wal.wal_bytes_per_s', '2024-03-02 00:00:04', '2024-03-02 00:00:08');
SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-03-02', '2024-03-03', '{0.5,1}');

-- The catalog of metrics.
SELECT source, count(*) AS metrics FROM chronicle.metric GROUP BY source ORDER BY source;
SELECT metric, kind, unit, filters FROM chronicle.metric WHERE source IN ('io', 'wal') ORDER BY metric;

DELETE FROM chronicle.io_history WHERE ts >= '2024-03-02' AND ts < '2024-03-03';
DELETE FROM chronicle.wal_history WHERE ts >= '2024-03-02' AND ts < '2024-03-03';
DELETE FROM chronicle.snapshot WHERE ts >= '2024-03-02' AND ts < '2024-03-03';
