-- Rollups (src/sql/60_rollups.sql) against an independent computation
-- from the per-interval functions over the same buckets: sums exact, min
-- and max exact, percentiles within 1 %; a counter reset and a crash
-- restart (a new segment) inside one minute; idempotence, late rows, the
-- timeline's choice of resolution.  Day 2021-02-03, used by no other test.
\set VERBOSITY terse
\pset null NULL
SET timezone = 'UTC';
SELECT chronicle.ensure_partitions('2021-02-03', '2021-02-03') >= 0 AS partitions;

-- Segment A 09:58:30 .. 10:00:20, then the server crashed; segment B
-- 10:00:40 .. 10:02:30, a 3 s interval ending 10:02:00.  n: seconds since
-- 09:58:30.
CREATE TEMP TABLE snap AS
SELECT t, CASE WHEN t < '2021-02-03 10:00:30+00' THEN timestamptz '2021-02-03 09:58:30+00'
               ELSE timestamptz '2021-02-03 10:00:40+00' END AS seg,
       extract(epoch FROM t - '2021-02-03 09:58:30+00')::integer AS n
  FROM generate_series(timestamptz '2021-02-03 09:58:30+00', '2021-02-03 10:02:30+00', interval '1 s') t
 WHERE (t <= '2021-02-03 10:00:20+00' OR t >= '2021-02-03 10:00:40+00')
   AND t NOT IN ('2021-02-03 10:01:58+00', '2021-02-03 10:01:59+00');
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT t, seg, t = seg, 'sql', 0, 0, 0, 0 FROM snap;

-- pg_stat_wal, sparse (no row when n % 4 = 3), reset at 10:01:15 (n 165).
INSERT INTO chronicle.wal_history (ts, wal_records, wal_fpi, wal_bytes, wal_write, wal_sync, wal_write_time, stats_reset)
SELECT t, r * 3 + r / 7, r / 4, r * r * 10, r, NULL, r * 0.25,
       CASE WHEN n < 165 THEN timestamptz '2021-01-01' ELSE '2021-02-03 10:01:14+00' END
  FROM snap, LATERAL (SELECT CASE WHEN n < 165 THEN n + 1000 ELSE n - 160 END AS r) x
 WHERE n % 4 <> 3 OR t = seg;

-- pg_stat_io: client backend relation/normal every second, reset at
-- 10:01:45 (n 195); checkpointer every 10 s; WAL rows every second;
-- an autovacuum key first seen at 10:01:00 (a baseline).
INSERT INTO chronicle.io_history (ts, backend_type, object, context, reads, read_bytes, read_time, writes, write_bytes,
                                  write_time, writebacks, writeback_time, extends, extend_bytes, extend_time,
                                  op_bytes, hits, evictions, reuses, fsyncs, fsync_time, stats_reset)
SELECT t, 'client backend', 'relation', 'normal', r * 2 + r % 3, (r * 2 + r % 3) * 8192, r * 0.5, r, r * 8192, r * 0.1,
       0, 0, r / 3, (r / 3) * 8192, 0, NULL::bigint, r * 100 + (r * r) % 17, 0, 0, 0, 0,
       CASE WHEN n < 195 THEN timestamptz '2021-01-01' ELSE '2021-02-03 10:01:44+00' END
  FROM snap, LATERAL (SELECT CASE WHEN n < 195 THEN n + 500 ELSE n - 190 END AS r) x
UNION ALL
SELECT t, 'checkpointer', 'relation', 'normal', NULL, NULL, NULL, n / 10 * 7, n / 10 * 7 * 8192, n * 0.01, 0, 0,
       0, 0, 0, NULL, NULL, 0, 0, n / 10, n * 0.02, '2021-01-01'
  FROM snap WHERE n % 10 = 0 OR t = seg
UNION ALL
SELECT t, 'client backend', 'wal', 'normal', 0, 0, 0, n * 4, n * 4 * 8192, n * 0.3, 0, 0, 0, 0, 0,
       NULL, NULL, 0, 0, n, n * 0.4, '2021-01-01'
  FROM snap
UNION ALL
SELECT t, 'autovacuum worker', 'relation', 'vacuum', n * 5, n * 5 * 8192, 0, 0, 0, 0, 0, 0, 0, 0, 0,
       NULL, n, 0, 0, 0, 0, '2021-01-01'
  FROM snap WHERE t >= '2021-02-03 10:01:00+00' AND n % 2 = 0;

-- pg_stat_database: two databases every 2 s (and at the keyframes); the
-- commits of datid 0 go backwards every 7 s (a reset each time).
INSERT INTO chronicle.database_history (ts, datid, datname, xact_commit, xact_rollback, blks_read, blks_hit,
                                        tup_returned, session_time, stats_reset)
SELECT t, d, CASE WHEN d = 0 THEN NULL ELSE 'bench' END, n * 50 * d + n % 7, n / 9, n * 3, n * 97 + d,
       n * 1000, n * 1.5, NULL
  FROM snap, (VALUES (0), (1)) v(d)
 WHERE n % 2 = 0 OR t = seg;

-- pg_stat_checkpointer: a checkpoint every 30 s, 40 buffers each.
INSERT INTO chronicle.checkpointer_history (ts, num_timed, num_requested, num_done, restartpoints_timed,
                                            restartpoints_req, restartpoints_done, write_time, sync_time,
                                            buffers_written, slru_written, stats_reset)
SELECT t, n / 30, n / 90, n / 30 + n / 90, 0, 0, 0, n * 2.5, n * 0.5, (n / 30) * 40, 0, '2021-01-01'
  FROM snap WHERE n % 30 = 0 OR t = seg;

-- Wait samples (born at zero), two query ids on one key, summed in the rollup.
INSERT INTO chronicle.waits_history (ts, backend_type, state, wait_event_type, wait_event, queryid, samples)
SELECT t, 'client backend', s, w, e, q, n * k + n % 3
  FROM snap, (VALUES ('active', 'IO', 'DataFileRead', 1, 30), ('active', 'IO', 'DataFileRead', 2, 11),
                     ('active', 'LWLock', 'WALWrite', 1, 7), ('idle', 'Client', 'ClientRead', 0, 90)) v(s, w, e, q, k);
INSERT INTO chronicle.wait_sampler_history (ts, ticks_due, ticks_taken, samples_dropped, sampler_started,
                                            active_cpu, active_io, active_lwlock, active_lock, active_ipc,
                                            active_client, active_timeout, active_other, background_active)
SELECT t, n * 100, n * 99, 0, '2021-02-03 09:00+00', n * 50, n * 41, n * 7, 0, n % 5, 0, 0, 0, n * 5
  FROM snap;

-- Gauges, every second.
INSERT INTO chronicle.os_memory_history (ts, mem_total, mem_free, mem_available, buffers, cached, dirty, writeback,
                                         shmem, swap_total, swap_free, pgpgin, pgpgout, pswpin, pswpout)
SELECT t, 16000000, 1000000 - (n * 37) % 5000, 9000000 + (n * 13) % 700, 1000, 5000000, (n * 101) % 900, n % 3,
       200000, 0, 0, n * 8, n * 20, 0, 0
  FROM snap;
INSERT INTO chronicle.buffers_history (ts, buffers_total, buffers_used, buffers_unused, buffers_dirty, buffers_pinned,
                                       usagecount_avg, usage_0, usage_1, usage_2, usage_3, usage_4, usage_5)
SELECT t, 16384, 10000 + n * 3, 6384 - n * 3, (n * 53) % 1000, n % 4, 1.5 + (n % 10) / 10.0, 1, 2, 3, 4, 5, 6
  FROM snap;

-- CPU of the server's processes by type: client backends every second,
-- the checkpointer every 10 s, walwriter without run delay (NULL); each
-- collector start counts from zero (segment B; and a collector restarted
-- at 10:01:30, n 180: a reset).
INSERT INTO chronicle.os_process_cpu_history (ts, backend_type, user_ms, system_ms, run_delay_ms, read_bytes,
                                              write_bytes, voluntary_ctxt_switches, nonvoluntary_ctxt_switches,
                                              exited, processes, collector_started)
SELECT t, b, r * u, r * sy, CASE WHEN b = 'walwriter' THEN NULL ELSE r * d END, 0, 0, r, 0, 0, 1,
       CASE WHEN n < 180 THEN seg ELSE timestamptz '2021-02-03 10:01:30+00' END
  FROM snap, (VALUES ('client backend', 37, 11, 5), ('checkpointer', 20, 30, 1), ('walwriter', 0, 10, 0)) v(b, u, sy, d),
       LATERAL (SELECT CASE WHEN n < 130 THEN n WHEN n < 180 THEN n - 123 ELSE n - 177 END AS r0) x,
       LATERAL (SELECT CASE WHEN b = 'checkpointer' THEN r0 / 10 ELSE r0 END AS r) y
 WHERE b <> 'checkpointer' OR n % 10 = 0 OR t = seg OR n = 180;

-- pgbench transactions: 12000 over 09:58:31 .. 10:01:30, latencies from
-- 200 us to about 200 ms.
INSERT INTO chronicle.run (label, started, ended) VALUES ('rollup run', '2021-02-03 09:58:30+00', '2021-02-03 10:02:30+00');
INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us, status)
SELECT (SELECT run_id FROM chronicle.run WHERE label = 'rollup run'),
       timestamptz '2021-02-03 09:58:31+00' + i * interval '15 ms', i % 8, i, 0,
       200 + (i * 7919) % 1000 + CASE WHEN i % 50 = 0 THEN (i * 31) % 200000 ELSE 0 END, 'ok'
  FROM generate_series(1, 12000) i;

-- Roll up the five minutes (and their two hours).
SELECT * FROM chronicle.rollup('2021-02-03 09:58', '2021-02-03 10:03');
SELECT source, count(*) AS minute_rows, count(DISTINCT ts) AS minutes
  FROM chronicle.rollup_minute WHERE ts >= '2021-02-03' AND ts < '2021-02-04' GROUP BY source ORDER BY source;

-- The reference: every source's per-interval function with every key in
-- every interval (not changed_only), unpivoted, aggregated per bucket:
-- counters over the intervals without a reset of the source (a delta
-- missing or NULL counts as rate 0), gauges over all intervals.
CREATE FUNCTION pg_temp.ref(unit text, lo timestamptz, hi timestamptz)
RETURNS TABLE (b timestamptz, source text, key text[], col text, v jsonb)
LANGUAGE plpgsql AS $$
DECLARE
	s record;
BEGIN
	FOR s IN SELECT * FROM chronicle._rollup_sources() LOOP
		RETURN QUERY EXECUTE format($q$
			WITH x AS (SELECT to_jsonb(d) AS j FROM chronicle.%I($1, $2) d),
			iv AS (SELECT i.interval_end AS e, i.seconds, date_trunc($3, i.interval_end - interval '1 microsecond') AS b,
			              EXISTS (SELECT FROM x WHERE (x.j ->> 'interval_end')::timestamptz = i.interval_end
			                                       AND coalesce((x.j ->> 'reset')::boolean, false)) AS rs
			         FROM chronicle.intervals($1, $2) i),
			keys AS (SELECT DISTINCT ARRAY(SELECT x.j ->> k FROM unnest($4::text[]) WITH ORDINALITY u(k, o) ORDER BY o) AS key
			           FROM x),
			per AS (  -- per interval, key and column: the sum over what the key leaves out
				SELECT (x.j ->> 'interval_end')::timestamptz AS e,
				       ARRAY(SELECT x.j ->> k FROM unnest($4::text[]) WITH ORDINALITY u(k, o) ORDER BY o) AS key,
				       c.col, sum((x.j ->> c.col)::numeric) AS v, count(x.j ->> c.col) AS nn
				  FROM x CROSS JOIN unnest($5::text[] || $6::text[]) c(col)
				 GROUP BY 1, 2, 3),
			grid AS (SELECT iv.*, k.key, c.col, c.col = ANY ($6) AS gauge
			           FROM iv CROSS JOIN keys k CROSS JOIN unnest($5::text[] || $6::text[]) c(col))
			SELECT g.b, %L::text, g.key, g.col,
			       CASE WHEN NOT g.gauge THEN
			                 CASE WHEN count(p.v) FILTER (WHERE NOT g.rs) = 0 AND bool_or(NOT g.rs) THEN
			                           CASE WHEN bool_or(p.e IS NOT NULL AND NOT g.rs) THEN '[]'::jsonb END
			                      WHEN coalesce(sum(p.v) FILTER (WHERE NOT g.rs), 0) = 0
			                           AND coalesce(min(coalesce(p.v, 0)::float8 / g.seconds) FILTER (WHERE NOT g.rs), 0) = 0
			                           AND coalesce(max(coalesce(p.v, 0)::float8 / g.seconds) FILTER (WHERE NOT g.rs), 0) = 0 THEN NULL
			                      ELSE jsonb_build_array(sum(p.v) FILTER (WHERE NOT g.rs),
			                                             min(coalesce(p.v, 0)::float8 / g.seconds) FILTER (WHERE NOT g.rs),
			                                             max(coalesce(p.v, 0)::float8 / g.seconds) FILTER (WHERE NOT g.rs)) END
			            WHEN count(p.v) = 0 THEN '[]'::jsonb
			            ELSE jsonb_build_array(min(p.v::float8), max(p.v::float8), avg(p.v::float8),
			                                   (array_agg(p.v::float8 ORDER BY g.e DESC) FILTER (WHERE p.v IS NOT NULL))[1]) END
			  FROM grid g LEFT JOIN per p ON p.e = g.e AND p.key = g.key AND p.col = g.col
			 GROUP BY g.b, g.key, g.col, g.gauge$q$, s.func, s.source)
		USING lo, hi, unit, s.keys, s.counters, s.gauges;
	END LOOP;
END;
$$;

-- What the rollups say, unpacked the same way (their float8[] vals as
-- the jsonb object of each column, _rollup_vals()).
CREATE FUNCTION pg_temp.got(tbl text, lo timestamptz, hi timestamptz)
RETURNS TABLE (b timestamptz, source text, key text[], col text, v jsonb)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format($q$
		SELECT r.ts, r.source, r.key, e.key, e.value
		  FROM chronicle.%I r CROSS JOIN LATERAL jsonb_each(chronicle._rollup_vals(r.source, r.vals)) e
		 WHERE r.ts >= $1 AND r.ts < $2 AND r.source NOT IN ('intervals', 'app')$q$, tbl)
	USING lo, hi;
END;
$$;

-- Equal: sums exactly, rates to the last bits of a float8.
CREATE FUNCTION pg_temp.same(a jsonb, b jsonb) RETURNS boolean LANGUAGE sql AS $$
	SELECT a IS NOT DISTINCT FROM b
	    OR (jsonb_typeof(a) = 'array' AND jsonb_typeof(b) = 'array'
	        AND jsonb_array_length(a) = jsonb_array_length(b)
	        AND NOT EXISTS (SELECT FROM jsonb_array_elements(a) WITH ORDINALITY x(v, o)
	                          JOIN jsonb_array_elements(b) WITH ORDINALITY y(v, o) USING (o)
	                         WHERE (x.v = 'null') <> (y.v = 'null')
	                            OR abs((x.v #>> '{}')::float8 - (y.v #>> '{}')::float8)
	                               > 1e-9 * greatest(abs((x.v #>> '{}')::float8), 1)))
$$;

-- Per resolution and source: values compared, and the mismatches (none).
WITH r AS (
	SELECT 'minute' AS unit, * FROM pg_temp.ref('minute', '2021-02-03 09:00', '2021-02-03 11:00') WHERE v IS NOT NULL
	UNION ALL
	SELECT 'hour', * FROM pg_temp.ref('hour', '2021-02-03 09:00', '2021-02-03 11:00') WHERE v IS NOT NULL
), g AS (
	SELECT 'minute' AS unit, * FROM pg_temp.got('rollup_minute', '2021-02-03 09:00', '2021-02-03 11:00')
	UNION ALL
	SELECT 'hour', * FROM pg_temp.got('rollup_hour', '2021-02-03 09:00', '2021-02-03 11:00')
)
SELECT coalesce(r.unit, g.unit) AS unit, coalesce(r.source, g.source) AS source,
       count(r.v) AS compared, count(*) FILTER (WHERE NOT pg_temp.same(r.v, g.v)) AS mismatches
  FROM r FULL JOIN g ON g.unit = r.unit AND g.b = r.b AND g.source = r.source AND g.key = r.key AND g.col = r.col
 GROUP BY 1, 2 ORDER BY 1, 2;

-- The minute of the crash restart (10:00): 20 intervals of segment A and
-- 20 of B, none across the gap.  10:01: 58 intervals (two snapshots
-- missing) over 60 s; the resets of wal (10:01:15) and io (10:01:45) leave
-- one interval of those sources out.
SELECT to_char(ts, 'HH24:MI') AS minute, source, seconds, intervals, resets
  FROM chronicle.rollup_minute
 WHERE ts >= '2021-02-03 10:00' AND ts < '2021-02-03 10:02' AND key = '{}'
   AND source IN ('intervals', 'io', 'wal', 'database')
 ORDER BY 1, 2;

-- pgbench latency percentiles from the histograms of each minute and
-- hour against percentile_disc over the same transactions: within 1 %.
WITH h AS (
	SELECT 'minute' AS unit, ts, chronicle._rollup_vals(source, vals) AS vals, hist FROM chronicle.rollup_minute
	 WHERE source = 'app' AND ts >= '2021-02-03' AND ts < '2021-02-04'
	UNION ALL
	SELECT 'hour', ts, chronicle._rollup_vals(source, vals), hist FROM chronicle.rollup_hour
	 WHERE source = 'app' AND ts >= '2021-02-03' AND ts < '2021-02-04'
), c AS (
	SELECT h.unit, h.ts, (h.vals ->> 'transactions')::bigint AS n,
	       chronicle._hist_percentiles(h.hist, '{0,0.5,0.9,0.99,1}', (h.vals ->> 'latency_us_min')::float8,
	                                   (h.vals ->> 'latency_us_max')::float8) AS est,
	       (SELECT array_agg(x / 1000.0) FROM unnest(
	           (SELECT percentile_disc('{0,0.5,0.9,0.99,1}'::float8[]) WITHIN GROUP (ORDER BY t.latency_us)
	              FROM chronicle.app_transaction t
	             WHERE t.ts > h.ts AND t.ts <= h.ts + CASE h.unit WHEN 'minute' THEN interval '1 minute' ELSE interval '1 hour' END)) x) AS exact,
	       (SELECT count(*) FROM chronicle.app_transaction t
	         WHERE t.ts > h.ts AND t.ts <= h.ts + CASE h.unit WHEN 'minute' THEN interval '1 minute' ELSE interval '1 hour' END) AS n_exact
	  FROM h
)
SELECT unit, count(*) AS buckets, sum(n) AS transactions, bool_and(n = n_exact) AS counts_equal,
       max((SELECT max(abs(e - x) / x) FROM unnest(est, exact) u(e, x))) < 0.01 AS within_1_percent
  FROM c GROUP BY unit ORDER BY unit;

-- Idempotent: rolling the same range up again writes the same rows.
CREATE TEMP TABLE before AS
SELECT 'minute' AS t, * FROM chronicle.rollup_minute WHERE ts >= '2021-02-03' AND ts < '2021-02-04'
UNION ALL
SELECT 'hour', * FROM chronicle.rollup_hour WHERE ts >= '2021-02-03' AND ts < '2021-02-04';
SELECT * FROM chronicle.rollup('2021-02-03 09:58', '2021-02-03 10:03');
SELECT count(*) AS differences FROM (
	(SELECT * FROM before
	 EXCEPT ALL
	 (SELECT 'minute', * FROM chronicle.rollup_minute WHERE ts >= '2021-02-03' AND ts < '2021-02-04'
	  UNION ALL
	  SELECT 'hour', * FROM chronicle.rollup_hour WHERE ts >= '2021-02-03' AND ts < '2021-02-04'))
	UNION ALL
	((SELECT 'minute', * FROM chronicle.rollup_minute WHERE ts >= '2021-02-03' AND ts < '2021-02-04'
	  UNION ALL
	  SELECT 'hour', * FROM chronicle.rollup_hour WHERE ts >= '2021-02-03' AND ts < '2021-02-04')
	 EXCEPT ALL
	 SELECT * FROM before)) d;

-- Late rows: the two snapshots of 10:01:58 and 10:01:59 arrive after the
-- minute was rolled up.  Housekeeping's run (done up to 10:03, looking an
-- hour back) rolls that minute up again, and only the minutes it touches.
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
VALUES ('2021-02-03 10:01:58+00', '2021-02-03 10:00:40+00', false, 'sql', 0, 0, 0, 0),
       ('2021-02-03 10:01:59+00', '2021-02-03 10:00:40+00', false, 'sql', 0, 0, 0, 0);
INSERT INTO chronicle.wal_history (ts, wal_records, wal_fpi, wal_bytes, wal_write, wal_sync, wal_write_time, stats_reset)
VALUES ('2021-02-03 10:01:59+00', 222, 9, 99999, 88, NULL, 7.5, '2021-02-03 10:01:14+00');
INSERT INTO chronicle.rollup_state AS s (origin, done_until) VALUES (0, '2021-02-03 10:03')
ON CONFLICT (origin) DO UPDATE SET done_until = excluded.done_until;
SELECT * FROM chronicle._rollup(10);
SELECT to_char(ts, 'HH24:MI') AS minute, intervals, seconds FROM chronicle.rollup_minute
 WHERE source = 'intervals' AND ts >= '2021-02-03 10:01' AND ts < '2021-02-03 10:02';
-- ... and it still agrees with the reference.
WITH r AS (
	SELECT * FROM pg_temp.ref('minute', '2021-02-03 09:00', '2021-02-03 11:00') WHERE v IS NOT NULL
), g AS (
	SELECT * FROM pg_temp.got('rollup_minute', '2021-02-03 09:00', '2021-02-03 11:00')
)
SELECT count(r.v) AS compared, count(*) FILTER (WHERE NOT pg_temp.same(r.v, g.v)) AS mismatches
  FROM r FULL JOIN g ON g.b = r.b AND g.source = r.source AND g.key = r.key AND g.col = r.col;
-- A second run finds nothing to do.
SELECT * FROM chronicle._rollup(10);

-- The timeline picks its resolution and says which: raw rows up to 6
-- hours when they cover the window, minutes up to a day, hours beyond.
SELECT resolution_used, count(*) AS rows
  FROM chronicle.timeline('2021-02-03 09:58', '2021-02-03 10:03') GROUP BY 1;
SELECT resolution_used, count(*) AS rows, min(interval_start) AS first, max(interval_end) AS last
  FROM chronicle.timeline('2021-02-02 12:00', '2021-02-03 12:00') GROUP BY 1;
SELECT resolution_used, count(*) AS rows, min(interval_start) AS first, max(interval_end) AS last
  FROM chronicle.timeline('2021-02-01', '2021-02-05') GROUP BY 1;
-- Beyond 6 hours (1 hour with the jsonb breakdowns) the rollups answer.
SELECT resolution_used, count(*) AS rows
  FROM chronicle.timeline('2021-02-03 04:00', '2021-02-03 10:30') GROUP BY 1;
SELECT resolution_used, count(*) AS rows
  FROM chronicle.timeline('2021-02-03 08:00', '2021-02-03 10:30', detail => true) GROUP BY 1;
SELECT resolution_used, count(*) AS rows
  FROM chronicle.timeline('2021-02-03 09:30', '2021-02-03 10:30', detail => true) GROUP BY 1;
-- A minute timeline against the raw one, its intervals weighted by their
-- seconds (those of a reset left out, as the raw one gives NULL for them).
WITH raw AS (
	SELECT date_trunc('minute', interval_end - interval '1 microsecond') AS m, *
	  FROM chronicle.timeline('2021-02-03 09:58', '2021-02-03 10:03', detail => true)
), agg AS (
	SELECT m, sum(seconds) AS seconds,
	       sum(commits_per_s * seconds) / sum(seconds) FILTER (WHERE commits_per_s IS NOT NULL) AS commits_per_s,
	       sum(reads_per_s * seconds) / sum(seconds) FILTER (WHERE reads_per_s IS NOT NULL) AS reads_per_s,
	       sum(client_write_bytes_per_s * seconds) / sum(seconds) FILTER (WHERE client_write_bytes_per_s IS NOT NULL) AS cwb,
	       sum(wal_bytes_per_s * seconds) / sum(seconds) FILTER (WHERE wal_bytes_per_s IS NOT NULL) AS wal_bytes_per_s,
	       sum(checkpoints) AS checkpoints,
	       (array_agg(buffers_dirty ORDER BY interval_end DESC))[1] AS buffers_dirty,
	       (array_agg(mem_free_kb ORDER BY interval_end DESC))[1] AS mem_free_kb,
	       sum(active_io * seconds) / sum(seconds) FILTER (WHERE active_io IS NOT NULL) AS active_io,
	       sum(postgres_cpu * seconds) / sum(seconds) FILTER (WHERE postgres_cpu IS NOT NULL) AS postgres_cpu,
	       sum(client_cpu * seconds) / sum(seconds) FILTER (WHERE client_cpu IS NOT NULL) AS client_cpu,
	       sum(checkpointer_cpu * seconds) / sum(seconds) FILTER (WHERE checkpointer_cpu IS NOT NULL) AS ckpt_cpu,
	       sum(walwriter_cpu * seconds) / sum(seconds) FILTER (WHERE walwriter_cpu IS NOT NULL) AS walw_cpu,
	       sum(postgres_cpu_wait * seconds) / sum(seconds) FILTER (WHERE postgres_cpu_wait IS NOT NULL) AS cpu_wait,
	       sum(client_cpu_wait * seconds) / sum(seconds) FILTER (WHERE client_cpu_wait IS NOT NULL) AS client_wait,
	       sum((cpu_by_backend -> 'client backend' ->> 'user')::float8 * seconds) / sum(seconds)
	           FILTER (WHERE cpu_by_backend IS NOT NULL) AS client_user
	  FROM raw GROUP BY m
)
SELECT to_char(t.interval_start, 'HH24:MI') AS minute, t.seconds = a.seconds AS seconds,
       round(t.commits_per_s::numeric, 6) = round(a.commits_per_s::numeric, 6) AS commits,
       round(t.reads_per_s::numeric, 6) = round(a.reads_per_s::numeric, 6) AS reads,
       round(t.client_write_bytes_per_s::numeric, 3) = round(a.cwb::numeric, 3) AS client_writes,
       round(t.wal_bytes_per_s::numeric, 6) = round(a.wal_bytes_per_s::numeric, 6) AS wal,
       t.checkpoints = a.checkpoints AS checkpoints, t.buffers_dirty = a.buffers_dirty AS buffers,
       t.mem_free_kb = a.mem_free_kb AS memory,
       round(t.active_io::numeric, 6) = round(a.active_io::numeric, 6) AS active_io,
       round(t.postgres_cpu::numeric, 9) = round(a.postgres_cpu::numeric, 9)
       AND round(t.client_cpu::numeric, 9) = round(a.client_cpu::numeric, 9)
       AND round(t.checkpointer_cpu::numeric, 9) = round(a.ckpt_cpu::numeric, 9)
       AND round(t.walwriter_cpu::numeric, 9) = round(a.walw_cpu::numeric, 9)
       AND round(t.postgres_cpu_wait::numeric, 9) = round(a.cpu_wait::numeric, 9)
       AND round(t.client_cpu_wait::numeric, 9) = round(a.client_wait::numeric, 9)
       AND round((t.cpu_by_backend -> 'client backend' ->> 'user')::numeric, 9) = round(a.client_user::numeric, 9)
       AS process_cpu, t.top_waits, t.tps
  FROM chronicle.timeline('2021-02-03 09:58', '2021-02-03 10:03', detail => true, resolution => 'minute') t
  JOIN agg a ON a.m = t.interval_start
 ORDER BY 1;
-- The CPU of the server's processes over the window (CPU seconds, the raw
-- rows) against the history's own differences: client backends 48 ms a
-- step, 110 steps in segment A, 49 in B before the collector's restart
-- and 60 after it (the interval of the restart is a reset, NULL, left
-- out): 10.512 s, 1.095 s of it waiting (5 ms a step); the checkpointer 50
-- ms every 10 steps, 11 + 4 + 6 times: 1.05 s, waiting 0.021 s; walwriter
-- 10 ms a step, 219 steps: 2.19 s, no run delay (NULL: not in the
-- waits).  All of them: 13.752 s, waiting 1.116 s.  (The minutes agree
-- with these rows above.)
SELECT round(sum(postgres_cpu * seconds)::numeric, 6) AS postgres,
       round(sum(client_cpu * seconds)::numeric, 6) AS client,
       round(sum(checkpointer_cpu * seconds)::numeric, 6) AS checkpointer,
       round(sum(walwriter_cpu * seconds)::numeric, 6) AS walwriter,
       round(sum(bgwriter_cpu * seconds + autovacuum_cpu * seconds)::numeric, 6) AS others,
       round(sum(postgres_cpu_wait * seconds)::numeric, 6) AS postgres_wait,
       round(sum(client_cpu_wait * seconds)::numeric, 6) AS client_wait,
       count(*) FILTER (WHERE postgres_cpu IS NULL) AS resets
  FROM chronicle.timeline('2021-02-03 09:58', '2021-02-03 10:03', resolution => 'raw');
-- The raw timeline of the same window is the one without the argument.
SELECT count(*) AS differences FROM (
	(SELECT * FROM chronicle.timeline('2021-02-03 09:58', '2021-02-03 10:03', detail => true)
	 EXCEPT ALL
	 SELECT * FROM chronicle.timeline('2021-02-03 09:58', '2021-02-03 10:03', detail => true, resolution => 'raw'))) d;

-- Raw rows gone (past chronicle.retention): the window is answered from
-- the rollups even when short.
DELETE FROM chronicle.snapshot WHERE ts < '2021-02-03 10:00:40';
SELECT resolution_used, count(*) AS rows
  FROM chronicle.timeline('2021-02-03 09:58', '2021-02-03 10:03') GROUP BY 1;

\ir sql/include/err.sql
SELECT pg_temp.err($$SELECT * FROM chronicle.timeline('2021-02-03', '2021-02-04', resolution => 'second')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.timeline('2021-02-03', '2021-02-04', resolution => NULL)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.rollup('2021-02-04', '2021-02-03')$$);
