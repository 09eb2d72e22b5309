-- Application metrics: pgbench logs of every format, malformed lines,
-- per snapshot interval statistics, generic metrics.
\set VERBOSITY default
\set SHOW_CONTEXT never
\getenv abs_srcdir PG_ABS_SRCDIR
\set d :abs_srcdir '/test/data/pgbench/'

-- Loading into a run that does not exist is refused with a hint.
SELECT chronicle.pgbench_staging();
ALTER TABLE pg_temp.chronicle_pgbench_lines ALTER COLUMN file SET DEFAULT 'plain.1000';
\set f :d 'plain.1000'
COPY pg_temp.chronicle_pgbench_lines (line) FROM :'f';
SELECT * FROM chronicle.load_pgbench_lines('nope');
\set VERBOSITY terse
-- ... or creates the run from the log's time range when asked.
SELECT * FROM chronicle.load_pgbench_lines('plain', create_run => true);
SELECT label, started, ended, meta->'files' AS files FROM chronicle.run WHERE label = 'plain';

-- Server side: a prefix loads every <prefix>.<pid>[.<thread>] file.
SELECT regexp_replace(file, '^.*/', '') AS file, log_format, lines
  FROM chronicle.load_pgbench_log('plain', :'d' || 'plain.1000');
-- Loading the same files again replaces their rows.
SELECT regexp_replace(file, '^.*/', '') AS file, lines
  FROM chronicle.load_pgbench_log('plain', :'d' || 'plain.1000');
SELECT regexp_replace(source, '^.*/', '') AS file, count(*), sum(latency_us), min(ts), max(ts),
       count(lag_us) AS lags, count(retries) AS retries
  FROM chronicle.app_transaction t JOIN chronicle.run r USING (run_id)
 WHERE r.label = 'plain' GROUP BY source ORDER BY source;
SELECT client_id, tx_no, script_no, latency_us, ts, status
  FROM chronicle.app_transaction WHERE source LIKE '%plain.1000' ORDER BY tx_no LIMIT 2;

-- --rate with --latency-limit: schedule lag column, skipped lines.
SELECT regexp_replace(file, '^.*/', '') AS file, log_format, lines
  FROM chronicle.load_pgbench_log('rate', :'d' || 'rate.2000', create_run => true);
SELECT status, count(*), sum(latency_us), sum(lag_us), count(retries) AS retries
  FROM chronicle.app_transaction WHERE source LIKE '%rate.2000' GROUP BY 1 ORDER BY 1;

-- --max-tries: 7 fields are ambiguous, extra_column says which.
SELECT lines FROM chronicle.load_pgbench_log('tries', :'d' || 'tries.3000',
                                              extra_column => 'retries', create_run => true);
SELECT count(*), sum(retries), count(lag_us) AS lags
  FROM chronicle.app_transaction WHERE source LIKE '%tries.3000' AND source NOT LIKE '%rate%';

-- --rate and --max-tries: 8 fields.
SELECT lines FROM chronicle.load_pgbench_log('tries', :'d' || 'ratetries.4000');
SELECT count(*), sum(lag_us), sum(retries)
  FROM chronicle.app_transaction WHERE source LIKE '%ratetries.4000';

-- --failures-detailed: serialization, deadlock and failed lines.
SELECT lines FROM chronicle.load_pgbench_log('failures', :'d' || 'failed.6000',
                                              extra_column => 'retries', create_run => true);
SELECT status, count(*), sum(latency_us), sum(retries)
  FROM chronicle.app_transaction WHERE source LIKE '%failed.6000' GROUP BY 1 ORDER BY 1;

-- Aggregate logs (15 fields on 16-18): the threads' files sharing an
-- interval are summed, min/max combined, the interval inferred.
SELECT regexp_replace(file, '^.*/', '') AS file, log_format, lines
  FROM chronicle.load_pgbench_log('agg', :'d' || 'agg.5000', create_run => true);
SELECT interval_start, num_transactions, sum_latency_us, min_latency_us, max_latency_us,
       skipped, retried, serialization_failures, interval_secs
  FROM chronicle.app_interval i JOIN chronicle.run r USING (run_id)
 WHERE r.label = 'agg' ORDER BY 1;
-- ... and the 11-field layout of older pgbench, interval given.
SELECT lines FROM chronicle.load_pgbench_log('agg11', :'d' || 'agg11.7000',
                                              create_run => true, aggregate_interval => 1);
SELECT interval_start, num_transactions, sum_lag_us, max_lag_us, skipped, retried, interval_secs
  FROM chronicle.app_interval i JOIN chronicle.run r USING (run_id)
 WHERE r.label = 'agg11' ORDER BY 1;
SELECT ended - started AS agg11_length FROM chronicle.run WHERE label = 'agg11';

-- Malformed lines: file and line number, and nothing loaded.
\set VERBOSITY default
\set SHOW_CONTEXT never
SELECT count(*) AS before FROM chronicle.app_transaction \gset
SELECT chronicle.pgbench_staging();
ALTER TABLE pg_temp.chronicle_pgbench_lines ALTER COLUMN file SET DEFAULT 'good.1';
\set f :d 'plain.1000'
COPY pg_temp.chronicle_pgbench_lines (line) FROM :'f';
ALTER TABLE pg_temp.chronicle_pgbench_lines ALTER COLUMN file SET DEFAULT 'bad_cols.8000';
\set f :d 'bad_cols.8000'
COPY pg_temp.chronicle_pgbench_lines (line) FROM :'f';
SELECT * FROM chronicle.load_pgbench_lines('plain');
SELECT chronicle.pgbench_staging();
ALTER TABLE pg_temp.chronicle_pgbench_lines ALTER COLUMN file SET DEFAULT 'bad_num.9000';
\set f :d 'bad_num.9000'
COPY pg_temp.chronicle_pgbench_lines (line) FROM :'f';
SELECT * FROM chronicle.load_pgbench_lines('plain');
SELECT * FROM chronicle.load_pgbench_lines('new_run', create_run => true);
SELECT chronicle.pgbench_staging();
ALTER TABLE pg_temp.chronicle_pgbench_lines ALTER COLUMN file SET DEFAULT 'neg.1';
INSERT INTO pg_temp.chronicle_pgbench_lines (line) VALUES ('0 1 100 0 1795323562 5'), ('0 2 100 0 1795323562 -5');
SELECT * FROM chronicle.load_pgbench_lines('plain');
SELECT chronicle.pgbench_staging();
ALTER TABLE pg_temp.chronicle_pgbench_lines ALTER COLUMN file SET DEFAULT 'agg_bad.1';
INSERT INTO pg_temp.chronicle_pgbench_lines (line)
VALUES ('1795323564 423 513548 703330410 488 6563 0 0 0 0 0 0 0 0 0'),
       ('1795323565 936 999563 x 453 4406 0 0 0 0 0 0 0 0 0');
SELECT * FROM chronicle.load_pgbench_lines('agg');
SELECT count(*) - :before AS rows_added FROM chronicle.app_transaction;
SELECT count(*) AS new_run FROM chronicle.run WHERE label = 'new_run';
\set VERBOSITY terse

-- Bad arguments.
SELECT * FROM chronicle.load_pgbench_lines('plain', format => 'csv');
SELECT * FROM chronicle.load_pgbench_lines('plain', extra_column => 'foo');
SELECT * FROM chronicle.load_pgbench_lines(NULL);
SELECT * FROM chronicle.load_pgbench_log('plain', 'relative/path');
SELECT set_config('chronicle_test.d', :'d', false) IS NOT NULL AS set;
DO $$
BEGIN
	PERFORM chronicle.load_pgbench_log('plain', current_setting('chronicle_test.d') || 'no_such_log');
EXCEPTION WHEN undefined_file THEN
	RAISE NOTICE '%', replace(SQLERRM, current_setting('chronicle_test.d'), '.../');
END
$$;
-- Reading server files needs pg_read_server_files.
CREATE ROLE chronicle_app_user;
GRANT USAGE ON SCHEMA chronicle TO chronicle_app_user;
GRANT EXECUTE ON FUNCTION chronicle.load_pgbench_log(text, text, text, text, boolean, integer) TO chronicle_app_user;
SET ROLE chronicle_app_user;
SELECT * FROM chronicle.load_pgbench_log('plain', '/etc/passwd');
RESET ROLE;
REVOKE ALL ON SCHEMA chronicle FROM chronicle_app_user;
REVOKE ALL ON FUNCTION chronicle.load_pgbench_log(text, text, text, text, boolean, integer) FROM chronicle_app_user;
DROP ROLE chronicle_app_user;

-- Per snapshot interval statistics, from hand-made snapshots and
-- transactions: two intervals in one recording, a gap, one more.
SELECT chronicle.ensure_partitions('2020-03-01', '2020-03-02') > 0 AS partitions;
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
VALUES ('2020-03-01 10:00:00+00', '2020-03-01 10:00:00+00', true, 'worker', 1, 0, 0, 0),
       ('2020-03-01 10:00:01+00', '2020-03-01 10:00:00+00', false, 'worker', 1, 0, 0, 0),
       ('2020-03-01 10:00:03+00', '2020-03-01 10:00:00+00', false, 'worker', 1, 0, 0, 0),
       ('2020-03-01 10:00:10+00', '2020-03-01 10:00:10+00', true, 'worker', 1, 0, 0, 0),
       ('2020-03-01 10:00:11+00', '2020-03-01 10:00:10+00', false, 'worker', 1, 0, 0, 0);
INSERT INTO chronicle.run (label, started, ended)
VALUES ('hand', '2020-03-01 10:00:00+00', '2020-03-01 10:00:11+00');
-- 100 transactions of 1..100 ms in the first second, 10 in the next two,
-- 1 skipped and 2 failed, 4 in the gap (no interval), 3 in the last one.
INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us, lag_us, retries, status)
SELECT r.run_id, '2020-03-01 10:00:00+00'::timestamptz + i * interval '9 ms', 0, i, 0, i * 1000, 10 * i, 0, 'ok'
  FROM chronicle.run r, generate_series(1, 100) i WHERE r.label = 'hand'
UNION ALL
SELECT r.run_id, '2020-03-01 10:00:01.5+00'::timestamptz + i * interval '100 ms', 1, i, 0, 5000, 0, 1, 'ok'
  FROM chronicle.run r, generate_series(1, 10) i WHERE r.label = 'hand'
UNION ALL
SELECT r.run_id, '2020-03-01 10:00:02+00', 2, 1, 0, NULL, 0, 0, s
  FROM chronicle.run r, unnest(ARRAY['skipped', 'failed', 'deadlock']) s WHERE r.label = 'hand'
UNION ALL
SELECT r.run_id, '2020-03-01 10:00:05+00'::timestamptz + i * interval '1 s', 3, i, 0, 7000, 0, 0, 'ok'
  FROM chronicle.run r, generate_series(1, 4) i WHERE r.label = 'hand'
UNION ALL
SELECT r.run_id, '2020-03-01 10:00:10.5+00'::timestamptz, 4, i, 0, 1000 * i, 0, 0, 'ok'
  FROM chronicle.run r, generate_series(1, 3) i WHERE r.label = 'hand';
-- active_seconds: the part of the interval the run was active in, from
-- the first start (10:00:00.008) in the first, to the last end of the
-- recording (10:00:02.5) in the second, and in the last one the 3 ms of
-- its three transactions' latencies.  The run was active in part of each:
-- partial, no tps (a rate over 3 ms is no rate of the run).
SELECT interval_start, interval_end, segment, transactions, tps, active_seconds, latency_mean_ms,
       latency_min_ms, latency_p50_ms, latency_p90_ms, latency_p99_ms, latency_max_ms, lag_mean_ms,
       skipped, failures, retries, basis, partial
  FROM chronicle.app_intervals('hand');
-- A window (from, to] holds the intervals whose end lies in it, as
-- chronicle.intervals() has them.
SELECT interval_start, interval_end, transactions
  FROM chronicle.app_intervals('2020-03-01 10:00:00.5+00', '2020-03-01 10:00:03+00');
SELECT count(*) FROM chronicle.intervals('2020-03-01 10:00:00.5+00', '2020-03-01 10:00:03+00');
SELECT count(*) AS none FROM chronicle.app_intervals('2020-03-01 10:00:02+00', '2020-03-01 10:00:02.5+00');
-- A whole run's percentiles come from every transaction, not from
-- intervals; its seconds from the first start to the last end of each
-- recording and of the gap between them (the 4 transactions ending there,
-- 10:00:05.993 .. 10:00:09), not across the gap: 2.492 + 3.007 + 0.003.
SELECT * FROM chronicle.app_summary('hand');

-- Percentiles are the nearest rank: the p-th of n latencies is the
-- ceil(p * n)-th smallest, a latency that occurred (682 us, not 682.5).
INSERT INTO chronicle.run (label, started, ended)
VALUES ('ranks', '2020-03-01 09:00:00+00', '2020-03-01 09:00:01+00');
INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us)
SELECT r.run_id, '2020-03-01 09:00:00.1+00'::timestamptz + u.i * interval '1 ms', 0, u.i, 0, u.l
  FROM chronicle.run r, unnest(ARRAY[683, 682]) WITH ORDINALITY AS u(l, i) WHERE r.label = 'ranks';
SELECT transactions, latency_min_ms, latency_p50_ms, latency_p90_ms, latency_p99_ms, latency_max_ms
  FROM chronicle.app_summary('ranks');

-- A run created from its log: it starts and ends mid-interval (one
-- client, a transaction every 10 ms from 11:00:00.60 to 11:00:04.50, run
-- 11:00:00.5 .. 11:00:04.5, snapshots every second).  Its window reaches
-- the snapshot after its last transaction (11:00:05), so that its
-- intervals hold every transaction; the first and the last, which it ran
-- 0.4 and 0.5 s of, are partial: no tps (not a dip, not a spike).
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT '2020-03-01 11:00:00+00'::timestamptz + i * interval '1 s', '2020-03-01 11:00:00+00', i = 0, 'worker', 1, 0, 0, 0
  FROM generate_series(0, 5) i;
INSERT INTO chronicle.run (label, started, ended, meta)
VALUES ('edge', '2020-03-01 11:00:00.5+00', '2020-03-01 11:00:04.5+00',
        '{"created_by": "chronicle.load_pgbench_lines"}');
INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us)
SELECT r.run_id, '2020-03-01 11:00:00.61+00'::timestamptz + k * interval '10 ms', 0, k, 0,
       CASE WHEN k = 0 THEN 10000 ELSE 1000 + k * 37 % 9000 END
  FROM chronicle.run r, generate_series(0, 389) k WHERE r.label = 'edge';
SELECT interval_end, transactions, active_seconds, tps, latency_p50_ms, latency_p99_ms, partial
  FROM chronicle.app_intervals('edge');
SELECT * FROM chronicle.run_window('edge');
SELECT count(*) AS intervals FROM chronicle.run_window('edge') w, chronicle.intervals(w.run_from, w.run_to);
-- The intervals add up to the run.
SELECT (SELECT sum(transactions) FROM chronicle.app_intervals('edge')) AS intervals_sum,
       (SELECT transactions FROM chronicle.app_summary('edge')) AS summary;
-- The timeline and app_intervals() agree, interval by interval.
SELECT count(*) AS intervals,
       count(*) FILTER (WHERE t.tps IS NOT DISTINCT FROM a.tps AND t.latency_p50_ms = a.latency_p50_ms
                          AND t.latency_p99_ms = a.latency_p99_ms) AS equal
  FROM chronicle.run_window('edge') w,
       chronicle.timeline(w.run_from, w.run_to, waits => false) t
  JOIN chronicle.app_intervals('edge') a USING (interval_end);
-- From the first transaction's start (11:00:00.60) to the last end: 3.9 s.
SELECT transactions, seconds, tps FROM chronicle.app_summary('edge');

-- Two pgbench runs of 2 s at 100/s around a server restart (two
-- recordings with a 7 s gap): 4 s and 100/s, not the 12 s since the first.
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT seg + i * interval '1 s', seg, i = 0, 'worker', 1, 0, 0, 0
  FROM unnest(ARRAY['2020-03-01 12:00:00+00', '2020-03-01 12:00:10+00']::timestamptz[]) seg,
       generate_series(0, 3) i;
INSERT INTO chronicle.run (label, started, ended)
VALUES ('restart', '2020-03-01 11:59:59+00', '2020-03-01 12:00:14+00');
INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us)
SELECT r.run_id, b + k * interval '10 ms', 0, k, 0, 10000
  FROM chronicle.run r,
       unnest(ARRAY['2020-03-01 12:00:00.51+00', '2020-03-01 12:00:10.51+00']::timestamptz[]) b,
       generate_series(0, 199) k
 WHERE r.label = 'restart';
SELECT transactions, seconds, tps, basis FROM chronicle.app_summary('restart');
-- run_summary's tps is app_summary's (its seconds are the recorded ones).
SELECT metric, value FROM chronicle.run_summary('restart')
 WHERE metric IN ('seconds', 'tps', 'latency_avg_ms', 'latency_p50_ms', 'latency_p99_ms');
SELECT interval_end, transactions, active_seconds, tps, partial FROM chronicle.app_intervals('restart');

-- Two pgbench runs of 2 s at 100/s around a server stop, each with edges
-- in the gap between the recordings: the first (stop.a) ends 0.5 s after
-- the last snapshot before the stop (12:00:22), the second (stop.b) starts
-- 0.5 s before the first snapshot after it (12:00:30).  No pgbench process
-- outlives a stop: the gap's transactions are counted per log file, 4 s
-- and 100/s, not the 11 s from the first's start over the stop.  The 100
-- transactions that ended in the gap are in no interval.
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT seg + i * interval '1 s', seg, i = 0, 'worker', 1, 0, 0, 0
  FROM unnest(ARRAY['2020-03-01 12:00:20+00', '2020-03-01 12:00:30+00']::timestamptz[]) seg,
       generate_series(0, 2) i;
INSERT INTO chronicle.run (label, started, ended)
VALUES ('stop', '2020-03-01 12:00:20+00', '2020-03-01 12:00:32+00');
INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us, source)
SELECT r.run_id, f.b + k * interval '10 ms', 0, k, 0, 10000, f.source
  FROM chronicle.run r,
       (VALUES ('2020-03-01 12:00:20.51+00'::timestamptz, 'stop.a'),
               ('2020-03-01 12:00:29.51+00'::timestamptz, 'stop.b')) f(b, source),
       generate_series(0, 199) k
 WHERE r.label = 'stop';
SELECT transactions, seconds, tps FROM chronicle.app_summary('stop');
SELECT interval_end, transactions, active_seconds, tps, partial FROM chronicle.app_intervals('stop');

-- An aggregate log (run 'agg', loaded above: 1 s intervals starting at
-- 04:59:24, 25, 26, two threads) is read where a run has no
-- per-transaction rows.  Its first interval is partial (pgbench started
-- within it): its transactions and latencies count, not its seconds.
-- No single latencies: no percentiles.  (Snapshots on whole seconds, as
-- the log's intervals: each snapshot interval holds one; see 'agg_half'
-- below for snapshots between them.)
SELECT chronicle.ensure_partitions('2026-11-22', '2026-11-22') >= 0 AS partitions;
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT '2026-11-22 04:59:24+00'::timestamptz + i * interval '1 s', '2026-11-22 04:59:24+00', i = 0, 'worker', 1, 0, 0, 0
  FROM generate_series(0, 4) i;
SELECT * FROM chronicle.app_summary('agg');
SELECT interval_end, transactions, active_seconds, tps, latency_mean_ms, latency_min_ms,
       latency_max_ms, latency_p50_ms, basis
  FROM chronicle.app_intervals('agg');
SELECT metric, value FROM chronicle.run_summary('agg')
 WHERE metric IN ('tps', 'latency_avg_ms', 'latency_p50_ms', 'latency_p99_ms');
-- The timeline shows every run's pgbench numbers, as app_intervals()
-- without a label does (the other logs loaded above are of that time too).
SELECT to_char(t.interval_end AT TIME ZONE 'UTC', 'HH24:MI:SS') AS "end", t.tps, a.tps AS app_tps,
       t.latency_p50_ms, a.latency_p50_ms AS app_p50, a.basis
  FROM chronicle.run_window('agg') w,
       chronicle.timeline(w.run_from, w.run_to, waits => false) t
  JOIN chronicle.app_intervals(w.run_from, w.run_to) a USING (interval_end);
-- Snapshots every 0.5 s over an aggregate log of 1 s intervals: pgbench
-- ran at 100/s from 14:00:00.2 (the run's start, within its first, partial
-- interval: 80 transactions) to 14:00:04.  Each interval's transactions
-- are spread over its second (the first from the run's start): 30 and 50
-- in the first two snapshot intervals, 50 in each after, no interval at 0
-- while pgbench ran, and they add up to the log's 380.  The first two are
-- partial (the first aggregation interval's seconds are not known): no tps.
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT '2020-03-01 14:00:00+00'::timestamptz + i * interval '0.5 s', '2020-03-01 14:00:00+00', i = 0, 'worker', 1, 0, 0, 0
  FROM generate_series(0, 8) i;
INSERT INTO chronicle.run (label, started, ended)
VALUES ('agg_half', '2020-03-01 14:00:00.2+00', '2020-03-01 14:00:04+00');
INSERT INTO chronicle.app_interval (run_id, interval_start, num_transactions, sum_latency_us, min_latency_us,
                                    max_latency_us, skipped, retried, retries, serialization_failures,
                                    deadlock_failures, interval_secs)
SELECT r.run_id, '2020-03-01 14:00:00+00'::timestamptz + i * interval '1 s', n, n * (5000 + 1000 * i),
       1000, 9000, 0, 0, 0, 0, 0, 1
  FROM chronicle.run r, unnest(ARRAY[80, 100, 100, 100]) WITH ORDINALITY AS u(n, o),
       LATERAL (SELECT (u.o - 1)::int AS i) x
 WHERE r.label = 'agg_half';
SELECT interval_end, transactions, active_seconds, tps, latency_mean_ms, basis, partial
  FROM chronicle.app_intervals('agg_half');
SELECT (SELECT sum(transactions) FROM chronicle.app_intervals('agg_half')) AS intervals_sum,
       (SELECT transactions FROM chronicle.app_summary('agg_half')) AS summary;
-- A run without any pgbench rows: 0 transactions, no rate.
INSERT INTO chronicle.run (label, started, ended)
VALUES ('empty', '2020-03-01 12:00:00+00', '2020-03-01 12:00:01+00');
SELECT * FROM chronicle.app_summary('empty');
SELECT * FROM chronicle.app_intervals('2020-03-01 10:00:02+00', '2020-03-01 10:00:01+00');
SELECT * FROM chronicle.app_intervals(NULL, now());
SELECT * FROM chronicle.app_intervals('no such run');

-- Generic metrics.
SELECT chronicle.add_metric('orders_per_s', 12.5, '2020-03-01 10:00:01+00', 'hand');
SELECT chronicle.add_metric('orders_per_s', 13.5, '2020-03-01 10:00:02+00');
SELECT m.ts, m.name, m.value, r.label FROM chronicle.app_metric m
  LEFT JOIN chronicle.run r USING (run_id) ORDER BY m.ts;
SELECT chronicle.add_metric('', 1);
SELECT chronicle.add_metric('x', NULL);
SELECT chronicle.add_metric('x', 1, now(), 'no such run');

-- Who may do what: loading writes (not PUBLIC), reading is for monitoring.
SELECT p.proname, has_function_privilege('public', p.oid, 'EXECUTE') AS public,
       has_function_privilege('pg_monitor', p.oid, 'EXECUTE') AS pg_monitor
  FROM pg_proc p WHERE p.pronamespace = 'chronicle'::regnamespace
   AND p.proname IN ('load_pgbench_log', 'load_pgbench_lines', 'pgbench_staging', 'add_metric',
                     'app_intervals', 'app_summary', 'statements_top')
 ORDER BY 1, 2;

-- Kept results (chronicle.app_memo, 50_app.sql): a reader's first read of
-- a run's numbers keeps them, written by the SECURITY DEFINER function (a
-- reader cannot write the table); the next reads return them; every change
-- they depend on (transactions, the warm-up, a snapshot among those read)
-- makes the next read compute them again.  Each read is compared with the
-- computation (pg_temp.computed: the functions that compute, called
-- directly).
CREATE ROLE chronicle_reader IN ROLE pg_monitor;
CREATE FUNCTION pg_temp.computed(run text) RETURNS TABLE (intervals chronicle.app_interval_row[],
                                                         summary chronicle.app_summary_row[],
                                                         latencies bigint[])
LANGUAGE sql AS $$
	SELECT (SELECT array_agg(a) FROM chronicle.run_window(run) w,
	                                 chronicle._app_intervals(w.run_from, w.run_to, chronicle._run_id(run, 'test')) a),
	       (SELECT array_agg(a) FROM chronicle._app_summary_compute(chronicle._run_id(run, 'test')) a),
	       (SELECT array_agg(ARRAY[l.latency_us, l.transactions, l.completed] ORDER BY l.latency_us)
	          FROM chronicle.run_window(run) w,
	               chronicle._app_latencies(chronicle._run_id(run, 'test'), w.run_from, w.run_to) l)
$$;
CREATE FUNCTION pg_temp.read(run text) RETURNS TABLE (intervals chronicle.app_interval_row[],
                                                     summary chronicle.app_summary_row[],
                                                     latencies bigint[])
LANGUAGE sql AS $$
	SELECT (SELECT array_agg(a) FROM chronicle.app_intervals(run) a),
	       (SELECT array_agg(a) FROM chronicle.app_summary(run) a),
	       (SELECT array_agg(ARRAY[l.latency_us, l.transactions, l.completed] ORDER BY l.latency_us)
	          FROM chronicle.run_window(run) w, chronicle.app_latencies(run, w.run_from, w.run_to) l)
$$;
CREATE FUNCTION pg_temp.kept(run text) RETURNS TABLE (kind text, current boolean)
LANGUAGE sql AS $$
	SELECT m.kind, m.epoch = chronicle._app_epoch()
	  FROM chronicle.app_memo m WHERE m.run_id = chronicle._run_id(run, 'test') ORDER BY 1
$$;
CREATE FUNCTION pg_temp.check(run text) RETURNS TABLE (read_is_computed boolean, transactions bigint,
                                                      latency_max_ms float8, intervals integer)
LANGUAGE sql AS $$
	SELECT r IS NOT DISTINCT FROM c, (r.summary[1]).transactions, (r.summary[1]).latency_max_ms,
	       cardinality(r.intervals)
	  FROM pg_temp.read(run) r, pg_temp.computed(run) c
$$;
GRANT EXECUTE ON FUNCTION pg_temp.computed(text), pg_temp.read(text), pg_temp.kept(text),
                          pg_temp.check(text) TO chronicle_reader;
-- kept by the reads above, since changed: not current
SELECT * FROM pg_temp.kept('hand');
SET ROLE chronicle_reader;
SELECT * FROM pg_temp.check('hand');
SELECT * FROM pg_temp.kept('hand');
-- read back: the same
SELECT * FROM pg_temp.check('hand');
-- a reader cannot write them, nor move the epoch
UPDATE chronicle.app_memo SET epoch = epoch + 1;
DELETE FROM chronicle.app_memo;
UPDATE chronicle.app_epoch SET epoch = epoch + 1;
RESET ROLE;
-- A transaction more (in the first interval, slower than every other):
-- the kept rows are no longer current, the next read is the computation.
INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us)
SELECT r.run_id, '2020-03-01 10:00:00.95+00', 9, 1, 0, 200000 FROM chronicle.run r WHERE r.label = 'hand';
SELECT * FROM pg_temp.kept('hand');
SET ROLE chronicle_reader;
SELECT * FROM pg_temp.check('hand');
RESET ROLE;
SELECT * FROM pg_temp.kept('hand');
-- A warm-up: the summary counts the transactions after it.
SELECT warmup FROM chronicle.run_set_warmup('hand', '1 s');
SET ROLE chronicle_reader;
SELECT * FROM pg_temp.check('hand');
RESET ROLE;
SELECT warmup FROM chronicle.run_set_warmup('hand', '0');
-- A snapshot among those read (recorded, imported): the intervals change
-- without a change to the transactions or the run.
SET ROLE chronicle_reader;
SELECT * FROM pg_temp.check('hand');
RESET ROLE;
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
VALUES ('2020-03-01 10:00:02+00', '2020-03-01 10:00:00+00', false, 'worker', 1, 0, 0, 0);
SET ROLE chronicle_reader;
SELECT * FROM pg_temp.check('hand');
RESET ROLE;
DELETE FROM chronicle.snapshot WHERE ts = '2020-03-01 10:00:02+00';
DELETE FROM chronicle.app_transaction WHERE client_id = 9 AND ts = '2020-03-01 10:00:00.95+00';
-- In a read-only transaction (a standby) nothing is kept: computed.
BEGIN READ ONLY;
SELECT * FROM pg_temp.check('hand');
COMMIT;
SELECT * FROM pg_temp.kept('hand');
-- A deleted run's kept rows go with it.
INSERT INTO chronicle.run (label, started, ended)
VALUES ('memo_gone', '2020-03-01 10:00:00+00', '2020-03-01 10:00:11+00');
SELECT transactions FROM chronicle.app_summary('memo_gone');
SELECT count(*) AS kept FROM chronicle.app_memo m JOIN chronicle.run r USING (run_id) WHERE r.label = 'memo_gone';
SELECT chronicle.run_delete('memo_gone');
SELECT count(*) AS kept FROM chronicle.app_memo m WHERE NOT EXISTS (SELECT FROM chronicle.run r WHERE r.run_id = m.run_id);
DROP FUNCTION pg_temp.computed(text), pg_temp.read(text), pg_temp.kept(text), pg_temp.check(text);
DROP ROLE chronicle_reader;
