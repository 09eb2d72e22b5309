-- One hour of synthetic 1 s history with every source on, as a pgbench run
-- at about 1,000 tps records it (PostgreSQL 18 shapes), and the run "bench-1h"
-- over it with its per-transaction log: the input of bench/report.sh.
-- A checkpoint starts every 300 s and writes for 270 s; after each start the
-- full-page images jump and decay, the tps dips and the latency tail rises.
-- Day: :day (psql variable).  Deterministic (setseed).
SET synchronous_commit = off;
SELECT setseed(0.42);
SELECT chronicle.ensure_partitions(:'day'::timestamptz, :'day'::timestamptz + interval '1 day') >= 0 AS partitions;

-- The shape of each second n (0 .. 3600): rates, then their running sums
-- (the cumulative counters the collector records).
CREATE TEMP TABLE sec AS
SELECT n, :'day'::timestamptz + n * interval '1 s' AS t, since,
       (1000 * (1 - 0.3 * exp(-since / 25.0)) * (0.95 + 0.1 * random()))::float8 AS tps,
       (150 + 3000 * exp(-since / 40.0))::float8 AS fpi,
       CASE WHEN since < 270 THEN 380 + 40 * random() ELSE 0 END::float8 AS ckpt_bufs,
       (20 + 30 * random())::float8 AS bgw_bufs,
       (0.5 + 2.5 * exp(-since / 25.0) + 0.3 * random())::float8 AS lock_aas
  FROM generate_series(0, 3600) n,
       LATERAL (SELECT (n + 270) % 300 AS since) s;
CREATE TEMP TABLE cum AS
SELECT n, t, since, tps, fpi, ckpt_bufs, lock_aas,
       sum(tps) OVER w AS c_tps, sum(fpi) OVER w AS c_fpi, sum(ckpt_bufs) OVER w AS c_ckpt,
       sum(bgw_bufs) OVER w AS c_bgw, sum(lock_aas) OVER w AS c_lock,
       count(*) FILTER (WHERE since = 0) OVER w AS c_ckpt_started,
       count(*) FILTER (WHERE since = 270) OVER w AS c_ckpt_done
  FROM sec WINDOW w AS (ORDER BY n);

INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT t, :'day'::timestamptz, n = 0, 'worker', 0.4, 60, 4000, 0 FROM cum;

-- pg_stat_io: every PostgreSQL 18 row at the keyframe, then the rows that
-- change under pgbench every second (client backends, walwriter), the
-- checkpointer while it writes, the background writer every 2 s and
-- autovacuum every 30 s.
\ir io_keys.sql
\ir history_stage.sql
INSERT INTO pg_temp.gen_io (ts, backend_type, object, context, reads, read_bytes, read_time, writes, write_bytes,
                                  write_time, writebacks, writeback_time, extends, extend_bytes, extend_time,
                                  op_bytes, hits, evictions, reuses, fsyncs, fsync_time, stats_reset)
SELECT c.t, k.backend_type, k.object, k.context, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL::bigint, 0, 0, 0, 0, 0,
       :'day'::timestamptz - interval '1 day'
  FROM io_keys k, cum c WHERE c.n = 0
UNION ALL
SELECT c.t, v.backend_type, v.object, v.context, v.reads, v.reads * 8192, v.reads * 0.05, v.writes,
       v.writes * v.sz, v.writes * 0.02, v.writes, v.writes * 0.01, v.extends, v.extends * 8192, v.extends * 0.01,
       NULL, v.hits, v.reads, 0, v.fsyncs, v.fsyncs * 2.0, :'day'::timestamptz - interval '1 day'
  FROM cum c,
       LATERAL (VALUES
         ('client backend', 'relation', 'normal', (c.c_tps * 0.4)::bigint, (c.c_tps * 0.01)::bigint,
          (c.c_tps * 0.02)::bigint, (c.c_tps * 14)::bigint, 0::bigint, 8192, true),
         ('client backend', 'wal', 'normal', 0, (c.c_tps * 0.2)::bigint, 0, 0, (c.c_tps * 0.2)::bigint, 8192, true),
         ('walwriter', 'wal', 'normal', 0, (c.c_tps * 0.5)::bigint, 0, 0, (c.c_tps * 0.5)::bigint, 8192, true),
         ('checkpointer', 'relation', 'normal', 0, c.c_ckpt::bigint, 0, 0, c.c_ckpt_done * 40, 8192,
          c.since < 271),
         ('background writer', 'relation', 'normal', 0, c.c_bgw::bigint, 0, 0, 0, 8192, c.n % 2 = 0),
         ('autovacuum worker', 'relation', 'vacuum', (c.n / 30) * 200, (c.n / 30) * 50, 0, (c.n / 30) * 900,
          0, 8192, c.n % 30 = 0)
       ) v(backend_type, object, context, reads, writes, extends, hits, fsyncs, sz, changed)
 WHERE c.n > 0 AND v.changed;

INSERT INTO pg_temp.gen_wal (ts, wal_records, wal_fpi, wal_bytes, wal_buffers_full, stats_reset)
SELECT t, (c_tps * 6)::bigint, c_fpi::bigint, (c_tps * 700 + c_fpi * 4000)::bigint, (c_fpi / 500)::bigint,
       :'day'::timestamptz - interval '1 day'
  FROM cum;
INSERT INTO pg_temp.gen_checkpointer (ts, num_timed, num_requested, num_done, write_time, sync_time,
                                            buffers_written, slru_written, stats_reset)
SELECT t, c_ckpt_started, 0, c_ckpt_done, c_ckpt * 0.7, c_ckpt_done * 300.0, c_ckpt::bigint, c_ckpt_done * 5,
       :'day'::timestamptz - interval '1 day'
  FROM cum WHERE n = 0 OR since <= 270;
INSERT INTO pg_temp.gen_bgwriter (ts, buffers_clean, maxwritten_clean, buffers_alloc, stats_reset)
SELECT t, c_ckpt::bigint / 10, n / 50, (c_tps * 0.4)::bigint, :'day'::timestamptz - interval '1 day'
  FROM cum WHERE n % 2 = 0;
INSERT INTO pg_temp.gen_database (ts, datid, datname, xact_commit, xact_rollback, blks_read, blks_hit,
                                        tup_returned, tup_fetched, tup_inserted, tup_updated, stats_reset)
SELECT t, d, CASE d WHEN 5 THEN 'postgres' ELSE 'bench' END,
       CASE d WHEN 5 THEN n * 2 ELSE c_tps::bigint END, n / 100,
       (c_tps * 0.4 / (d / 5))::bigint, (c_tps * 14 / (d / 5))::bigint,
       (c_tps * 10)::bigint, (c_tps * 5)::bigint, c_tps::bigint, (c_tps * 3)::bigint, NULL
  FROM cum, (VALUES (5), (16384)) dd(d);
INSERT INTO pg_temp.gen_buffers (ts, buffers_total, buffers_used, buffers_unused, buffers_dirty, buffers_pinned,
                                       usagecount_avg, usage_0, usage_1, usage_2, usage_3, usage_4, usage_5)
SELECT t, 65536, 65536, 0, d, (random() * 8)::bigint, 2.6,
       2000 + (random() * 500)::bigint, 9000, 14000, 15000, 12000, 65536 - 52000 - 2000 - (random() * 500)::bigint
  FROM cum, LATERAL (SELECT (CASE WHEN since < 270 THEN 12000 - since * 40 ELSE 1200 + since * 20 END
                             + random() * 300)::bigint AS d) x;
INSERT INTO pg_temp.gen_os_memory (ts, mem_total, mem_free, mem_available, buffers, cached, dirty, writeback,
                                         shmem, swap_total, swap_free, pgpgin, pgpgout, pswpin, pswpout)
SELECT t, 24000000, 8000000 - n, 18000000, 200000, 9000000,
       (40000 + 60000 * exp(-since / 60.0) + random() * 4000)::bigint,
       (CASE WHEN since % 30 < 3 THEN 8000 * random() ELSE 200 * random() END)::bigint,
       600000, 0, 0, (c_tps * 0.4 * 8)::bigint, (c_ckpt * 8 + c_tps * 4)::bigint, 0, 0
  FROM cum;
INSERT INTO pg_temp.gen_os_pressure (ts, resource, some_total, full_total)
SELECT t, r, (CASE r WHEN 'cpu' THEN n * 120000 WHEN 'io' THEN c_ckpt * 300 ELSE n * 10 END)::bigint,
       CASE r WHEN 'cpu' THEN 0 WHEN 'io' THEN (c_ckpt * 120)::bigint ELSE n * 4 END
  FROM cum, (VALUES ('cpu'), ('io'), ('memory')) rr(r);
INSERT INTO pg_temp.gen_os_disk (ts, device, role, reads_completed, reads_merged, sectors_read, read_time_ms,
                                       writes_completed, writes_merged, sectors_written, write_time_ms, in_flight,
                                       io_time_ms, weighted_io_time_ms, discards_completed, discards_merged,
                                       sectors_discarded, discard_time_ms, flushes_completed, flush_time_ms)
SELECT t, dev, role, (c_tps * 0.4)::bigint, 0, (c_tps * 0.4 * 16)::bigint, (c_tps * 0.02)::bigint,
       w::bigint, 0, (w * 16)::bigint, (w * 0.1)::bigint, 1, least(n * 1000, (w * 0.6)::bigint), (w * 0.5)::bigint,
       0, 0, 0, 0, n * 50, n * 20
  FROM cum, (VALUES ('nvme0n1', 'data'), ('nvme1n1', 'wal')) dd(dev, role),
       LATERAL (SELECT CASE role WHEN 'data' THEN c_ckpt * 1.2 + c_tps * 0.01 ELSE c_tps * 1.1 END AS w) x;
INSERT INTO pg_temp.gen_wait_sampler (ts, ticks_due, ticks_taken, samples_dropped, sampler_started,
                                            active_cpu, active_io, active_lwlock, active_lock, active_ipc,
                                            active_client, active_timeout, active_other, background_active)
SELECT t, n * 100, n * 100 - n / 100, 0, :'day'::timestamptz - interval '1 h',
       (c_tps * 0.4)::bigint, (c_tps * 0.15 + c_fpi * 0.02)::bigint, (c_tps * 0.06)::bigint, (c_lock * 100)::bigint,
       n * 5, (c_tps * 0.2)::bigint, 0, 0, (c_ckpt * 0.2)::bigint
  FROM cum;

-- Waits of 32 pgbench clients over 5 query ids and 6 states, idle
-- ClientRead, and the background processes: about 40 keys changing every
-- second.
CREATE TEMP TABLE wait_keys AS
SELECT 'client backend'::text AS backend_type, 'active'::text AS state, e.typ AS wait_event_type, e.ev AS wait_event,
       q::bigint AS queryid, e.w * (6 - q) / 15.0 AS share
  FROM generate_series(1, 5) q,
       (VALUES ('CPU', 'CPU', 40), ('IO', 'DataFileRead', 8), ('LWLock', 'WALWrite', 6), ('IO', 'WalSync', 9),
               ('Lock', 'transactionid', 10), ('Client', 'ClientRead', 20)) e(typ, ev, w)
UNION ALL SELECT 'client backend', 'idle', 'Client', 'ClientRead', 0, 30
UNION ALL
SELECT b, '', 'Activity', ev, 0, 100
  FROM (VALUES ('checkpointer', 'CheckpointerMain'), ('background writer', 'BgwriterMain'),
               ('walwriter', 'WalWriterMain'), ('autovacuum launcher', 'AutovacuumMain')) x(b, ev)
UNION ALL SELECT 'checkpointer', '', 'IO', 'DataFileWrite', 0, 20;
INSERT INTO pg_temp.gen_waits (ts, backend_type, state, wait_event_type, wait_event, queryid, samples)
SELECT c.t, k.backend_type, k.state, k.wait_event_type, k.wait_event, k.queryid,
       (CASE WHEN k.wait_event_type = 'Lock' THEN c.c_lock * 10 ELSE c.n * 1.0 END * k.share)::bigint
  FROM wait_keys k, cum c;

-- pg_stat_statements: pgbench's statements, every second.
INSERT INTO chronicle.statements_text (dbid, queryid, query)
VALUES (16384, 1, 'UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2'),
       (16384, 2, 'SELECT abalance FROM pgbench_accounts WHERE aid = $1'),
       (16384, 3, 'UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2'),
       (16384, 4, 'UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2'),
       (16384, 5, 'INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)'),
       (16384, 6, 'BEGIN'), (16384, 7, 'END')
ON CONFLICT DO NOTHING;
INSERT INTO pg_temp.gen_statements (ts, userid, dbid, queryid, toplevel, plans, total_plan_time, calls,
                                          total_exec_time, rows, shared_blks_hit, shared_blks_read,
                                          shared_blks_dirtied, shared_blks_written, local_blks_hit, local_blks_read,
                                          local_blks_dirtied, local_blks_written, temp_blks_read, temp_blks_written,
                                          blk_read_time, blk_write_time, wal_records, wal_fpi, wal_bytes, stats_since)
SELECT c.t, 10, 16384, q, true, 0, 0, c.c_tps::bigint, c.c_tps * ms, c.c_tps::bigint,
       (c.c_tps * hit)::bigint, (c.c_tps * rd)::bigint, (c.c_tps * rd * 0.8)::bigint, (c.c_tps * 0.01)::bigint,
       0, 0, 0, 0, 0, 0, c.c_tps * rd * 0.05, 0, (c.c_tps * 1.2)::bigint, (c.c_fpi / 5)::bigint,
       (c.c_tps * 120)::bigint, :'day'::timestamptz - interval '1 day'
  FROM cum c,
       (VALUES (1, 0.9, 6.0, 0.35), (2, 0.08, 4.0, 0.05), (3, 0.6, 3.0, 0.0), (4, 1.8, 3.0, 0.0),
               (5, 0.05, 2.0, 0.0), (6, 0.002, 0, 0), (7, 0.3, 0, 0)) s(q, ms, hit, rd);

-- The run, opened and closed by chronicle (its settings and environment
-- are this server's), moved onto the generated hour.
SELECT chronicle.run_begin('bench-1h', '{"clients": 32, "scale": 1000, "generated": "bench/report_gen.sql"}') IS NOT NULL AS run;
SELECT chronicle.run_end('bench-1h') IS NOT NULL AS ended;
UPDATE chronicle.run SET started = :'day'::timestamptz, ended = :'day'::timestamptz + interval '3600 s'
 WHERE label = 'bench-1h';

-- pgbench's per-transaction log: tps transactions in each second, latency
-- log-normal around 2 ms with a heavier tail after a checkpoint starts.
INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us, status)
SELECT r.run_id, c.t - (i / c.tps) * interval '1 s', i % 32, c.n * 2000 + i, 0,
       (exp(ln(2000) + 0.45 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))
        * CASE WHEN random() < 0.01 * (1 + 8 * exp(-c.since / 20.0)) THEN 3 + 10 * random() ELSE 1 END)::bigint,
       'ok'
  FROM chronicle.run r, cum c, LATERAL generate_series(0, c.tps::int - 1) i
 WHERE r.label = 'bench-1h' AND c.n > 0;

\ir history_load.sql
VACUUM ANALYZE;
SELECT (SELECT count(*) FROM chronicle.snapshot) AS snapshots,
       (SELECT count(*) FROM chronicle.app_transaction) AS transactions,
       (SELECT count(*) FROM chronicle.io_history) AS io_rows,
       (SELECT count(*) FROM chronicle.waits_history) AS wait_rows;
