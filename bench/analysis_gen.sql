-- 24 hours of synthetic 1 s history at pgbench-like density (PostgreSQL 18
-- shapes), for bench/analysis_bench.sh.  Day: :day (psql variable).
SET synchronous_commit = off;
SELECT chronicle.ensure_partitions(:'day'::timestamptz, :'day'::timestamptz + interval '1 day') >= 0 AS partitions;

-- 86400 snapshots; the collector restarted once at noon (two segments).
-- A keyframe every hour (chronicle.keyframe_interval), as the collector
-- writes them: every key of every source, changed or not; the segments'
-- first snapshots are on the hour too.
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT t, CASE WHEN t < :'day'::timestamptz + interval '12 h' THEN :'day'::timestamptz
               ELSE :'day'::timestamptz + interval '12 h' END,
       extract(epoch FROM t - :'day'::timestamptz)::bigint % 3600 = 0, 'worker', 0.3, 10, 2000, 0
  FROM generate_series(:'day'::timestamptz, :'day'::timestamptz + interval '86399 s', interval '1 s') t;

-- pg_stat_io: every PostgreSQL 18 row at each keyframe (every hour), then the rows that change under pgbench: client backend relation/normal
-- and wal/normal, walwriter wal every second; background writer every 2 s;
-- checkpointer every 5 s; autovacuum every 30 s.
\ir io_keys.sql
ALTER TABLE io_keys ADD COLUMN every integer;
UPDATE io_keys SET every = CASE
         WHEN (backend_type, object, context) IN (('client backend', 'relation', 'normal'),
                                                  ('client backend', 'wal', 'normal'),
                                                  ('walwriter', 'wal', 'normal')) THEN 1
         WHEN (backend_type, object, context) = ('background writer', 'relation', 'normal') THEN 2
         WHEN backend_type = 'checkpointer' AND context = 'normal' THEN 5
         WHEN backend_type = 'autovacuum worker' AND context IN ('normal', 'vacuum') THEN 30
         ELSE 0 END;
SELECT count(*) AS io_keys, count(*) FILTER (WHERE every > 0) AS changing FROM io_keys;

\ir history_stage.sql
INSERT INTO pg_temp.gen_io (ts, backend_type, object, context, reads, read_bytes, read_time, writes, write_bytes,
                                  write_time, writebacks, writeback_time, extends, extend_bytes, extend_time,
                                  op_bytes, hits, evictions, reuses, fsyncs, fsync_time, stats_reset)
SELECT t, k.backend_type, k.object, k.context,
       n * 3, n * 3 * 8192, n * 0.2, n * 2, n * 2 * 8192, n * 0.1, n, n * 0.05, n, n * 8192, n * 0.01,
       NULL, n * 500, n, 0, n / 10, n * 0.3, :'day'::timestamptz - interval '1 day'
  FROM io_keys k,
       LATERAL generate_series(:'day'::timestamptz, :'day'::timestamptz + interval '86399 s', interval '1 s') t,
       LATERAL (SELECT extract(epoch FROM t - :'day'::timestamptz)::bigint AS n) s
 WHERE (k.every > 0 AND s.n % k.every = 0) OR s.n % 3600 = 0;

-- Single-row sources, every second (wal, buffers, memory, sampler),
-- every 2 s (bgwriter), every 5 s (checkpointer); two databases.  All of
-- them write a row at each keyframe (3600 is a multiple of 2 and 5).
INSERT INTO pg_temp.gen_wal (ts, wal_records, wal_fpi, wal_bytes, wal_buffers_full, stats_reset)
SELECT t, n * 6000, n * 200, n * 1500000, n / 100, :'day'::timestamptz - interval '1 day'
  FROM generate_series(:'day'::timestamptz, :'day'::timestamptz + interval '86399 s', interval '1 s') t,
       LATERAL (SELECT extract(epoch FROM t - :'day'::timestamptz)::bigint AS n) s;
INSERT INTO pg_temp.gen_checkpointer (ts, num_timed, num_requested, num_done, write_time, sync_time,
                                            buffers_written, slru_written, stats_reset)
SELECT t, n / 300, 0, n / 300, n * 10.0, n * 0.5, n * 40, n, :'day'::timestamptz - interval '1 day'
  FROM generate_series(:'day'::timestamptz, :'day'::timestamptz + interval '86399 s', interval '5 s') t,
       LATERAL (SELECT extract(epoch FROM t - :'day'::timestamptz)::bigint AS n) s;
INSERT INTO pg_temp.gen_bgwriter (ts, buffers_clean, maxwritten_clean, buffers_alloc, stats_reset)
SELECT t, n * 10, n / 50, n * 30, :'day'::timestamptz - interval '1 day'
  FROM generate_series(:'day'::timestamptz, :'day'::timestamptz + interval '86399 s', interval '2 s') t,
       LATERAL (SELECT extract(epoch FROM t - :'day'::timestamptz)::bigint AS n) s;
INSERT INTO pg_temp.gen_database (ts, datid, datname, xact_commit, xact_rollback, blks_read, blks_hit,
                                        tup_returned, tup_fetched, tup_inserted, tup_updated, stats_reset)
SELECT t, d, CASE d WHEN 5 THEN 'postgres' ELSE 'bench' END, n * 1000 / d, n, n * 3, n * 500, n * 10000, n * 5000, n * 1000, n * 3000, NULL
  FROM generate_series(:'day'::timestamptz, :'day'::timestamptz + interval '86399 s', interval '1 s') t,
       LATERAL (SELECT extract(epoch FROM t - :'day'::timestamptz)::bigint AS n) s,
       (VALUES (5), (16384)) dd(d);
INSERT INTO pg_temp.gen_buffers (ts, buffers_total, buffers_used, buffers_unused, buffers_dirty, buffers_pinned,
                                       usagecount_avg)
SELECT t, 16384, 16384, 0, 1000 + (n * 7919) % 3000, n % 5, 2.5
  FROM generate_series(:'day'::timestamptz, :'day'::timestamptz + interval '86399 s', interval '1 s') t,
       LATERAL (SELECT extract(epoch FROM t - :'day'::timestamptz)::bigint AS n) s;
INSERT INTO pg_temp.gen_os_memory (ts, mem_total, mem_free, mem_available, buffers, cached, dirty, writeback,
                                         shmem, swap_total, swap_free, pgpgin, pgpgout, pswpin, pswpout)
SELECT t, 8000000, 2000000 - n % 1000, 5000000, 100000, 3000000, 20000 + (n * 31) % 5000, n % 100, 200000, 0, 0,
       n * 10, n * 400, 0, 0
  FROM generate_series(:'day'::timestamptz, :'day'::timestamptz + interval '86399 s', interval '1 s') t,
       LATERAL (SELECT extract(epoch FROM t - :'day'::timestamptz)::bigint AS n) s;
INSERT INTO pg_temp.gen_wait_sampler (ts, ticks_due, ticks_taken, samples_dropped, sampler_started,
                                            active_cpu, active_io, active_lwlock, active_lock, active_ipc,
                                            active_client, active_timeout, active_other)
SELECT t, n * 100, n * 99, 0, :'day'::timestamptz - interval '1 h',
       n * 4000, n * 1500, n * 300, n * 200, n * 100, n * 600, 0, 0
  FROM generate_series(:'day'::timestamptz, :'day'::timestamptz + interval '86399 s', interval '1 s') t,
       LATERAL (SELECT extract(epoch FROM t - :'day'::timestamptz)::bigint AS n) s;

-- Waits of 100 processes: 90 pgbench clients spread over 10 query ids and
-- 6 wait states, idle ClientRead, plus background processes: 70 keys, of
-- which about 40 change every second (sparse rows), the rest every 10 s;
-- every key at each keyframe.
CREATE TEMP TABLE wait_keys AS
SELECT 'client backend'::text AS backend_type, 'active'::text AS state, e.typ AS wait_event_type, e.ev AS wait_event,
       q::bigint AS queryid, CASE WHEN q <= 6 THEN 1 ELSE 10 END AS every, e.w * (11 - q) AS rate
  FROM generate_series(1, 10) q,
       (VALUES ('CPU', 'CPU', 20), ('IO', 'DataFileRead', 5), ('LWLock', 'WALWrite', 3), ('IO', 'WALSync', 4),
               ('Lock', 'transactionid', 2), ('Client', 'ClientRead', 6)) e(typ, ev, w)
UNION ALL
SELECT 'client backend', 'idle', 'Client', 'ClientRead', 0, 1, 50
UNION ALL
SELECT b, '', 'Activity', ev, 0, 1, 100
  FROM (VALUES ('checkpointer', 'CheckpointerMain'), ('background writer', 'BgwriterMain'),
               ('walwriter', 'WalWriterMain'), ('autovacuum launcher', 'AutovacuumMain')) x(b, ev)
UNION ALL
SELECT 'checkpointer', '', 'IO', 'DataFileWrite', 0, 5, 10;
SELECT count(*) AS wait_keys, count(*) FILTER (WHERE every = 1) AS every_second FROM wait_keys;
INSERT INTO pg_temp.gen_waits (ts, backend_type, state, wait_event_type, wait_event, queryid, samples)
SELECT t, k.backend_type, k.state, k.wait_event_type, k.wait_event, k.queryid, s.n * k.rate
  FROM wait_keys k,
       LATERAL generate_series(:'day'::timestamptz, :'day'::timestamptz + interval '86399 s', interval '1 s') t,
       LATERAL (SELECT extract(epoch FROM t - :'day'::timestamptz)::bigint AS n) s
 WHERE s.n % k.every = 0 OR s.n % 3600 = 0;

\ir history_load.sql
VACUUM ANALYZE;
SELECT relname, n_live_tup FROM pg_stat_user_tables
 WHERE relname ~ ('_p' || to_char(:'day'::date, 'YYYYMMDD') || '$') AND n_live_tup > 0 ORDER BY 1;
