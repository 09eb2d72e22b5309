-- Analysis API, part 7: a run explained.  slowest_intervals(): the worst
-- snapshot intervals of a run (pgbench p99, or throughput), each with the
-- recorded metrics that differ most from the run's median.
--
-- The metrics are timeline()'s per-interval series (and wal_buffers_full,
-- OS pressure), in the units a person reads (MB = 10^6 bytes).  An
-- interval's score for a metric is robust: |value - median| divided by the
-- larger of 1.4826 * MAD (the standard deviation of a normal series), a
-- tenth of |median| (a big metric moving by little is not news) and a
-- floor per metric (below it a change means nothing: 1 MB/s, 0.1 active
-- session, ...), so that a metric flat at zero in most intervals (the
-- checkpointer's writes, Lock waits) scores its value over its floor when
-- it moves.  A VACUUM or ANALYZE counts as a busy session does (floor
-- 0.1): one running where the median has none scores 10, above the noise
-- of a loaded machine's CPU and run queue (at 0.5 it scored 2, the least
-- reported: any five noisier metrics left it out of the 5 reported).
-- Metrics within 2 of the median (score < 2) are not reported, nor those
-- below it: every metric here costs the run more as it rises
-- (more writes, more waits, more pressure), so a drop explains no slow
-- interval ("bgwriter writes 0, median 3.3" is the bgwriter resting while
-- something else held the run up).

-- The metrics: position in the values array built by slowest_intervals(),
-- timeline column (or source), label, unit, floor (in the unit).
CREATE FUNCTION chronicle._interval_metrics()
RETURNS TABLE (i integer, metric text, label text, unit text, floor float8)
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT * FROM (VALUES
		(1, 'checkpointer_write_bytes_per_s', 'checkpointer writes', 'MB/s', 1.0::float8),
		(2, 'bgwriter_write_bytes_per_s', 'bgwriter writes', 'MB/s', 1.0),
		(3, 'client_write_bytes_per_s', 'client backend writes', 'MB/s', 1.0),
		(4, 'autovacuum_write_bytes_per_s', 'autovacuum writes', 'MB/s', 1.0),
		(5, 'read_bytes_per_s', 'reads', 'MB/s', 1.0),
		(6, 'extend_bytes_per_s', 'extends', 'MB/s', 1.0),
		(7, 'fsyncs_per_s', 'fsyncs', '/s', 1.0),
		(8, 'wal_bytes_per_s', 'WAL', 'MB/s', 1.0),
		(9, 'wal_fpi_per_s', 'full-page images', '/s', 10.0),
		(10, 'wal_buffers_full_per_s', 'wal_buffers full', '/s', 1.0),
		(11, 'checkpoints', 'checkpoints ended', 'in the interval', 1.0),
		(12, 'buffers_dirty', 'dirty shared buffers', 'buffers', 128.0),
		(13, 'mem_dirty_kb', 'OS Dirty', 'MB', 10.0),
		(14, 'mem_writeback_kb', 'OS Writeback', 'MB', 1.0),
		(15, 'active_cpu', 'CPU', 'sessions', 0.1),
		(16, 'active_io', 'IO waits', 'sessions', 0.1),
		(17, 'active_lwlock', 'LWLock waits', 'sessions', 0.1),
		(18, 'active_lock', 'Lock waits', 'sessions', 0.1),
		(19, 'active_ipc', 'IPC waits', 'sessions', 0.1),
		(20, 'active_client', 'Client waits', 'sessions', 0.1),
		(21, 'active_timeout', 'Timeout waits', 'sessions', 0.1),
		(22, 'active_other', 'other waits', 'sessions', 0.1),
		(23, 'pressure_cpu_some', 'CPU pressure', '% stalled', 1.0),
		(24, 'pressure_io_some', 'IO pressure', '% stalled', 1.0),
		(25, 'pressure_memory_some', 'memory pressure', '% stalled', 1.0),
		(26, 'cpu_busy', 'CPU busy (machine)', '%', 5.0),
		(27, 'cpu_iowait', 'CPU iowait', '%', 5.0),
		(28, 'cpu_steal', 'CPU steal', '%', 2.0),
		(29, 'procs_running', 'run queue', 'tasks', 1.0),
		(30, 'maintenance_runs', 'VACUUM or ANALYZE running', 'runs', 0.1)
	) AS m(i, metric, label, unit, floor)
$$;

-- A value as the explanations write it: three digits or so.
CREATE FUNCTION chronicle._fmt(v float8, unit text)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN v = 0 THEN '0'
	            WHEN abs(v) >= 100 THEN round(v::numeric)::text
	            WHEN abs(v) >= 1 THEN round(v::numeric, 1)::text
	            ELSE round(v::numeric, 2)::text END
	       || CASE WHEN unit IS NULL THEN '' WHEN unit LIKE '/%' THEN unit ELSE ' ' || unit END
$$;

CREATE FUNCTION chronicle.slowest_intervals(run text, n integer DEFAULT 10, by text DEFAULT 'p99')
RETURNS TABLE (rank integer, interval_start timestamptz, interval_end timestamptz, tps float8,
               latency_p50_ms float8, latency_p99_ms float8, latency_max_ms float8,
               explanation text, details jsonb)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
-- the run's origin, set by run_window(), for this call only (05_origin.sql)
SET chronicle.origin = 0
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
DECLARE
	w_from timestamptz;
	w_to timestamptz;
	v_run integer;
	has_tx boolean;
	has_app boolean;
BEGIN
	v_run := chronicle._run_id(slowest_intervals.run, 'chronicle.slowest_intervals');
	SELECT w.run_from, w.run_to INTO w_from, w_to
	  FROM chronicle.run_window(slowest_intervals.run) w;
	IF n IS NULL OR n < 1 THEN
		RAISE EXCEPTION 'chronicle.slowest_intervals: n must be at least 1, got %', coalesce(n::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'n is how many intervals to list, for example 10.';
	END IF;
	IF slowest_intervals.by IS NULL OR slowest_intervals.by NOT IN ('p99', 'tps') THEN
		RAISE EXCEPTION 'chronicle.slowest_intervals: unknown ranking "%"', coalesce(slowest_intervals.by, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'by => ''p99'' ranks by the worst pgbench p99 latency, by => ''tps'' by the lowest throughput.';
	END IF;
	has_tx := EXISTS (SELECT FROM chronicle.app_transaction t WHERE t.run_id = v_run);
	has_app := has_tx OR EXISTS (SELECT FROM chronicle.app_interval a WHERE a.run_id = v_run);
	IF slowest_intervals.by = 'p99' AND NOT has_tx THEN
		RAISE EXCEPTION 'chronicle.slowest_intervals: run "%" has no per-transaction pgbench log: no p99 to rank by',
			slowest_intervals.run
			USING ERRCODE = 'object_not_in_prerequisite_state',
			      HINT = CASE WHEN has_app
			                  THEN 'Its aggregate log has no percentiles: rank by => ''tps''.'
			                  ELSE 'Load the log of pgbench -l with chronicle.load_pgbench_log(), or rank by => ''tps'' (commits/s).' END;
	END IF;

	RETURN QUERY
	WITH tl AS MATERIALIZED (
		-- app => false: the run's pgbench numbers are app's below, not
		-- timeline()'s (every run's, a second pass over the transactions)
		SELECT * FROM chronicle.timeline(w_from, w_to, app => false)
	), app AS MATERIALIZED (
		SELECT a.* FROM chronicle.app_intervals(w_from, w_to, slowest_intervals.run) a WHERE has_app
	), wal AS (
		SELECT d.interval_end, d.wal_buffers_full_per_s FROM chronicle.wal_deltas(w_from, w_to) d
	), pr AS (
		-- microseconds stalled per second: / 10^4 is the % of the time
		SELECT p.interval_end,
		       max(p.some_total_per_s) FILTER (WHERE p.resource = 'cpu') / 1e4 AS cpu,
		       max(p.some_total_per_s) FILTER (WHERE p.resource = 'io') / 1e4 AS io,
		       max(p.some_total_per_s) FILTER (WHERE p.resource = 'memory') / 1e4 AS memory
		  FROM chronicle.os_pressure_deltas(w_from, w_to) p
		 WHERE NOT p.reset
		 GROUP BY p.interval_end
	), mruns AS MATERIALIZED (
		-- the VACUUM and ANALYZE runs the maintenance source saw in the
		-- window (as chronicle.marks() reads them): start, and end (NULL:
		-- still running at the window's end)
		SELECT min(h.started) AS started, min(h.ts) FILTER (WHERE h.ended IS NOT NULL) AS ended
		  FROM chronicle.maintenance_history h
		 WHERE h.ts > w_from
		   AND h.ts <= coalesce((SELECT min(s.ts) FROM chronicle._snapshot s WHERE s.ts > w_to), w_to)
		 GROUP BY h.pid, h.activity_start, h.relid, h.command
	), iv AS MATERIALIZED (
		SELECT tl.interval_start, tl.interval_end,
		       CASE WHEN has_app THEN app.tps ELSE tl.commits_per_s END AS tps,
		       app.latency_p50_ms AS p50, app.latency_p99_ms AS p99, app.latency_max_ms AS lmax,
		       -- the larger the worse; NULL: not ranked (no transaction
		       -- ended in it, or pgbench was not running in it)
		       CASE WHEN slowest_intervals.by = 'p99' THEN app.latency_p99_ms
		            WHEN has_app THEN CASE WHEN app.active_seconds > 0 THEN -app.tps END
		            ELSE -tl.commits_per_s END AS badness,
		       ARRAY[tl.checkpointer_write_bytes_per_s / 1e6, tl.bgwriter_write_bytes_per_s / 1e6,
		             tl.client_write_bytes_per_s / 1e6, tl.autovacuum_write_bytes_per_s / 1e6,
		             tl.read_bytes_per_s / 1e6, tl.extend_bytes_per_s / 1e6, tl.fsyncs_per_s,
		             tl.wal_bytes_per_s / 1e6, tl.wal_fpi_per_s, wal.wal_buffers_full_per_s,
		             tl.checkpoints::float8, tl.buffers_dirty::float8,
		             tl.mem_dirty_kb * 1024 / 1e6, tl.mem_writeback_kb * 1024 / 1e6,
		             tl.active_cpu, tl.active_io, tl.active_lwlock, tl.active_lock, tl.active_ipc,
		             tl.active_client, tl.active_timeout, tl.active_other,
		             pr.cpu, pr.io, pr.memory,
		             -- the machine's CPU (os_cpu): shares of its time, in %
		             (tl.cpu_user + tl.cpu_system) * 100, tl.cpu_iowait * 100, tl.cpu_steal * 100,
		             tl.procs_running::float8,
		             -- runs that overlap the interval
		             (SELECT count(*) FROM mruns r
		               WHERE r.started < tl.interval_end
		                 AND coalesce(r.ended, 'infinity') > tl.interval_start)::float8]::float8[] AS vals
		  FROM tl
		  LEFT JOIN app ON app.interval_end = tl.interval_end
		  LEFT JOIN wal ON wal.interval_end = tl.interval_end
		  LEFT JOIN pr ON pr.interval_end = tl.interval_end
	), m AS (
		SELECT * FROM chronicle._interval_metrics()
	), v AS MATERIALIZED (
		SELECT iv.interval_end, m.i, iv.vals[m.i] AS value
		  FROM iv CROSS JOIN m
		 WHERE iv.vals[m.i] IS NOT NULL
	), med AS (
		SELECT v.i, percentile_cont(0.5) WITHIN GROUP (ORDER BY v.value) AS median
		  FROM v GROUP BY v.i
	), mad AS (
		SELECT v.i, med.median,
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(v.value - med.median)) AS mad
		  FROM v JOIN med ON med.i = v.i
		 GROUP BY v.i, med.median
	), top AS MATERIALIZED (
		SELECT iv.*, row_number() OVER (ORDER BY iv.badness DESC, iv.interval_end) AS rk
		  FROM iv
		 WHERE iv.badness IS NOT NULL
		 ORDER BY iv.badness DESC, iv.interval_end
		 LIMIT slowest_intervals.n
	), sc AS (
		SELECT top.rk, m.i, m.metric, m.label, m.unit, v.value, mad.median,
		       abs(v.value - mad.median) / greatest(1.4826 * mad.mad, 0.1 * abs(mad.median), m.floor) AS score
		  FROM top
		  JOIN v ON v.interval_end = top.interval_end
		  JOIN m ON m.i = v.i
		  JOIN mad ON mad.i = v.i
	), best AS (
		SELECT s.*
		  FROM (SELECT sc.*, row_number() OVER (PARTITION BY sc.rk ORDER BY sc.score DESC, sc.i) AS k
		          FROM sc WHERE sc.score >= 2 AND sc.value > sc.median) s
		 WHERE s.k <= 5
	), ex AS (
		SELECT b.rk,
		       string_agg(b.label || ' ' || chronicle._fmt(b.value, b.unit) || ', median '
		                  || chronicle._fmt(b.median, NULL), '; ' ORDER BY b.k) AS text,
		       jsonb_agg(jsonb_build_object('metric', b.label, 'column', b.metric, 'unit', b.unit,
		                                    'value', b.value, 'median', b.median,
		                                    'score', round(b.score::numeric, 2)) ORDER BY b.k) AS details
		  FROM best b
		 GROUP BY b.rk
	)
	SELECT top.rk::integer, top.interval_start, top.interval_end, top.tps, top.p50, top.p99, top.lmax,
	       coalesce(ex.text, 'no recorded metric stands out (none above the run''s median by 2 robust deviations)'),
	       coalesce(ex.details, '[]'::jsonb)
	  FROM top
	  LEFT JOIN ex ON ex.rk = top.rk
	 ORDER BY top.rk;
END;
$$;

COMMENT ON FUNCTION chronicle.slowest_intervals(text, integer, text) IS
	'The n worst snapshot intervals of a run (by => p99: highest pgbench p99; tps: lowest throughput), each explained by the recorded metrics furthest from the run''s median (robust score, up to 5)';

REVOKE ALL ON FUNCTION chronicle._interval_metrics() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._fmt(float8, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.slowest_intervals(text, integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._interval_metrics() TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._fmt(float8, text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.slowest_intervals(text, integer, text) TO pg_monitor, pg_read_all_stats;

-- The load profile of a run, AWR style: each metric per second of the
-- run's window and per transaction (per commit of pg_stat_database, every
-- database: defined for loads without a pgbench log too, and the same for
-- both runs of a comparison).  From the window totals of each source
-- (*_run_totals(), app_summary()), over the window's seconds (summary()'s).
-- I/O is pg_stat_io's relation objects (not the 18 "wal" rows).  Waits are
-- the sampler's active sessions per class: per second the average active
-- sessions (session-seconds per second), per transaction the
-- session-seconds per transaction.  pgbench's tps is per second only, its
-- latencies per transaction only (NULL without a log; percentiles need the
-- per-transaction log).
CREATE FUNCTION chronicle.load_profile(run text)
RETURNS TABLE (metric text, unit text, per_second float8, per_transaction float8)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
-- the run's origin, set by run_window(), for this call only (05_origin.sql)
SET chronicle.origin = 0
AS $$
#variable_conflict use_column
DECLARE
	w_from timestamptz;
	w_to timestamptz;
	secs float8;
BEGIN
	PERFORM chronicle._run_id(load_profile.run, 'chronicle.load_profile');
	SELECT w.run_from, w.run_to INTO w_from, w_to
	  FROM chronicle.run_window(load_profile.run) w;
	SELECT w.seconds INTO secs FROM chronicle._window(w_from, w_to) w;
	RETURN QUERY
	WITH db AS (
		SELECT sum(d.xact_commit)::float8 AS c, sum(d.xact_rollback)::float8 AS r
		  FROM chronicle.database_run_totals(load_profile.run) d
	), io AS (
		SELECT sum(d.reads)::float8 AS rd, sum(d.read_bytes)::float8 AS rb,
		       sum(d.writes)::float8 AS wr, sum(d.write_bytes)::float8 AS wb,
		       CASE WHEN count(*) > 0 THEN coalesce(sum(d.write_bytes) FILTER (WHERE d.backend_type = 'checkpointer'), 0) END::float8 AS wb_ckpt,
		       CASE WHEN count(*) > 0 THEN coalesce(sum(d.write_bytes) FILTER (WHERE d.backend_type = 'background writer'), 0) END::float8 AS wb_bgw,
		       CASE WHEN count(*) > 0 THEN coalesce(sum(d.write_bytes) FILTER (WHERE d.backend_type = 'client backend'), 0) END::float8 AS wb_client,
		       sum(d.extends)::float8 AS ex, sum(d.extend_bytes)::float8 AS eb,
		       sum(d.fsyncs)::float8 AS fs, sum(d.hits)::float8 AS hi, sum(d.evictions)::float8 AS ev
		  FROM chronicle.io_run_totals(load_profile.run) d
		 WHERE d.object <> 'wal'
	), wal AS (
		SELECT sum(x.wal_bytes)::float8 AS b, sum(x.wal_records)::float8 AS r,
		       sum(x.wal_fpi)::float8 AS f, sum(x.wal_buffers_full)::float8 AS bf
		  FROM chronicle.wal_run_totals(load_profile.run) x
	), wt AS (
		-- ticks: the sampler's samples; active_x / ticks is the average
		-- number of sessions of that class
		SELECT sum(s.active_cpu)::float8 AS cpu, sum(s.active_io)::float8 AS io,
		       sum(s.active_lwlock)::float8 AS lwlock, sum(s.active_lock)::float8 AS lock,
		       sum(s.active_ipc)::float8 AS ipc, sum(s.active_client)::float8 AS client,
		       sum(s.active_timeout)::float8 AS timeout, sum(s.active_other)::float8 AS other,
		       nullif(sum(s.ticks_taken), 0)::float8 AS ticks
		  FROM chronicle.wait_sampler_run_totals(load_profile.run) s
	), pc AS (
		-- CPU of the server's processes (os_process_cpu): client backends
		-- (the talk's "simple vs prepared" finding is this per transaction),
		-- every process, and their time waiting for a CPU
		SELECT sum(p.user_ms + p.system_ms) FILTER (WHERE p.backend_type = 'client backend') / 1000 AS backend,
		       sum(p.user_ms + p.system_ms) / 1000 AS server,
		       sum(p.run_delay_ms) / 1000 AS delay
		  FROM chronicle.os_process_cpu_run_totals(load_profile.run) p
	), oc AS (
		-- the machine's CPU time not idle nor waiting for I/O (os_cpu)
		SELECT (sum(c.user_ms) + sum(c.nice_ms) + sum(c.system_ms) + sum(c.irq_ms) + sum(c.softirq_ms)
		        + sum(c.steal_ms)) / 1000 AS busy
		  FROM chronicle.os_cpu_run_totals(load_profile.run) c
	), app AS (
		SELECT a.tps, a.latency_p50_ms AS p50, a.latency_p99_ms AS p99
		  FROM chronicle.app_summary(load_profile.run) a
	)
	SELECT u.metric, u.unit, u.per_second, u.per_transaction
	  FROM (
	SELECT v.ord, v.metric, v.unit,
	       CASE WHEN v.per_s THEN v.total / secs END AS per_second,
	       CASE WHEN v.per_tx THEN v.total / nullif(db.c, 0) END AS per_transaction
	  FROM db, io, wal, wt, pc, oc,
	       LATERAL (VALUES
		(1, 'commits', 'transactions', db.c, true, false),
		(2, 'rollbacks', 'transactions', db.r, true, true),
		(10, 'WAL', 'bytes', wal.b, true, true),
		(11, 'WAL records', 'records', wal.r, true, true),
		(12, 'full-page images', 'images', wal.f, true, true),
		(13, 'wal_buffers full', 'events', wal.bf, true, true),
		(20, 'reads', 'operations', io.rd, true, true),
		(21, 'read bytes', 'bytes', io.rb, true, true),
		(22, 'writes', 'operations', io.wr, true, true),
		(23, 'write bytes', 'bytes', io.wb, true, true),
		(24, 'checkpointer write bytes', 'bytes', io.wb_ckpt, true, true),
		(25, 'bgwriter write bytes', 'bytes', io.wb_bgw, true, true),
		(26, 'client backend write bytes', 'bytes', io.wb_client, true, true),
		(27, 'extends', 'operations', io.ex, true, true),
		(28, 'extend bytes', 'bytes', io.eb, true, true),
		(29, 'fsyncs', 'operations', io.fs, true, true),
		(30, 'hits', 'buffers', io.hi, true, true),
		(31, 'evictions', 'buffers', io.ev, true, true),
		(40, 'DB time', 'session-seconds',
		 (wt.cpu + wt.io + wt.lwlock + wt.lock + wt.ipc + wt.client + wt.timeout + wt.other) / wt.ticks * secs,
		 true, true),
		(41, 'CPU', 'session-seconds', wt.cpu / wt.ticks * secs, true, true),
		(42, 'IO waits', 'session-seconds', wt.io / wt.ticks * secs, true, true),
		(43, 'LWLock waits', 'session-seconds', wt.lwlock / wt.ticks * secs, true, true),
		(44, 'Lock waits', 'session-seconds', wt.lock / wt.ticks * secs, true, true),
		(45, 'IPC waits', 'session-seconds', wt.ipc / wt.ticks * secs, true, true),
		(46, 'Client waits', 'session-seconds', wt.client / wt.ticks * secs, true, true),
		(47, 'Timeout waits', 'session-seconds', wt.timeout / wt.ticks * secs, true, true),
		(48, 'other waits', 'session-seconds', wt.other / wt.ticks * secs, true, true),
		(50, 'CPU of client backends', 'CPU-seconds', pc.backend, true, true),
		(51, 'CPU of server processes', 'CPU-seconds', pc.server, true, true),
		(52, 'waiting for a CPU', 'seconds', pc.delay, true, true),
		(53, 'CPU busy (machine)', 'CPU-seconds', oc.busy, true, true)
	       ) AS v(ord, metric, unit, total, per_s, per_tx)
	UNION ALL
	SELECT v.ord, v.metric, v.unit, v.per_s, v.per_tx
	  FROM app,
	       LATERAL (VALUES
		(60, 'pgbench tps', 'transactions', app.tps, NULL::float8),
		(61, 'latency p50', 'ms', NULL, app.p50),
		(62, 'latency p99', 'ms', NULL, app.p99)
	       ) AS v(ord, metric, unit, per_s, per_tx)
	       ) u
	 ORDER BY u.ord;
END;
$$;

COMMENT ON FUNCTION chronicle.load_profile(text) IS
	'AWR-style load profile of a run: commits, WAL, I/O, waits by class, CPU per second and per transaction (commit), pgbench tps and latency p50/p99';

-- Two load profiles side by side: ratio = B / A per transaction where both
-- runs have it, else per second (NULL when A is 0: marked if B is not).
-- marked: the ratio is off 1 by more than 10 %.
CREATE FUNCTION chronicle.compare_load_profile(a text, b text)
RETURNS TABLE (metric text, unit text, a_per_second float8, b_per_second float8,
               a_per_transaction float8, b_per_transaction float8, ratio float8, marked boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT x.metric, x.unit, x.a_s, x.b_s, x.a_t, x.b_t,
	       x.vb / nullif(x.va, 0),
	       coalesce(CASE WHEN x.va = 0 THEN x.vb <> 0 ELSE abs(x.vb / x.va - 1) > 0.10 END, false)
	  FROM (SELECT pa.ord, pa.metric, pa.unit, pa.per_second AS a_s, pb.per_second AS b_s,
	               pa.per_transaction AS a_t, pb.per_transaction AS b_t,
	               CASE WHEN pa.per_transaction IS NOT NULL AND pb.per_transaction IS NOT NULL
	                    THEN pa.per_transaction ELSE pa.per_second END AS va,
	               CASE WHEN pa.per_transaction IS NOT NULL AND pb.per_transaction IS NOT NULL
	                    THEN pb.per_transaction ELSE pb.per_second END AS vb
	          FROM (SELECT p.*, row_number() OVER () AS ord FROM chronicle.load_profile(a) p) pa
	          JOIN chronicle.load_profile(b) pb ON pb.metric = pa.metric) x
	 ORDER BY x.ord
$$;

COMMENT ON FUNCTION chronicle.compare_load_profile(text, text) IS
	'Load profiles of two runs side by side, ratio B / A (per transaction where both have it, else per second), marked beyond 10 %';

REVOKE ALL ON FUNCTION chronicle.load_profile(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.compare_load_profile(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.load_profile(text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.compare_load_profile(text, text) TO pg_monitor, pg_read_all_stats;

-- Where a run's WAL came from.  pg_stat_wal (the wal source) has all the
-- server's WAL; pg_stat_statements (the statements source) the WAL each
-- top-level statement wrote while it ran, whatever it was: a SELECT that
-- sets hint bits or prunes pages writes WAL as surely as an UPDATE.  The
-- rows, always all five, in this order:
--
--   'queries'                  statements whose text is a query: SELECT,
--                              VALUES, TABLE, SHOW, WITH without INSERT,
--                              UPDATE, DELETE or MERGE; not SELECT ... INTO
--                              or FOR UPDATE/SHARE (_statement_is_query).
--                              Their WAL is what reading writes: hint bits
--                              (a full-page image, XLOG/FPI_FOR_HINT, at a
--                              page's first hint after a checkpoint when
--                              data_checksums or wal_log_hints is on),
--                              pruning on access (Heap2/PRUNE_ON_ACCESS),
--                              or a function the query calls that writes
--   'other statements'         the rest with a known text: INSERT, UPDATE,
--                              DELETE, MERGE, COPY, DDL, VACUUM run by a
--                              session ...
--   'statements without text'  recorded without their text: unclassified
--   'not from a statement'     the total less the statements (never below
--                              0): background processes (autovacuum, the
--                              checkpointer, the pg_chronicle recorder and
--                              housekeeper, which pg_stat_statements does
--                              not track), every commit record (written
--                              when the transaction ends, after its last
--                              statement: END and COMMIT count none),
--                              statements not tracked
--                              (pg_stat_statements.track) or not recorded
--                              (beyond chronicle.statements_max); all of it
--                              when pg_stat_statements was not recorded.  No split by process: what
--                              pg_stat_io counts for object 'wal' (18) is
--                              WAL written to disk, mostly by whoever
--                              flushes it, not WAL generated.
--   'total'                    pg_stat_wal
--
-- Window and totals as load_profile()'s, the statements by statements_top()
-- over the same snapshots; per transaction is per commit.  pg_stat_statements counts a
-- statement when it ends, pg_stat_wal a backend's WAL when it flushes its
-- statistics (at most once a second): at a window's edges the two can
-- differ by a second's WAL.  The settings are the run's (run_begin); NULL
-- for a run labelled afterwards (run_label keeps none).  explanation says
-- in words what each row means for this run.
CREATE FUNCTION chronicle._statement_is_query(query text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN query IS NULL THEN NULL
	            ELSE q ~* '^(select|values|table|show|with)\M'
	                 AND q !~* '\mfor\s+(update|no\s+key\s+update|share|key\s+share)\M'
	                 AND NOT (q ~* '^select\M' AND q ~* '\minto\M')
	                 AND NOT (q ~* '^with\M' AND q ~* '\m(insert|update|delete|merge)\M') END
	  FROM (SELECT regexp_replace(
	                 regexp_replace(coalesce(query, ''), '(--[^\n]*(\n|$)|/\*([^*]|\*+[^*/])*\*+/)', ' ', 'g'),
	                 '^[\s(]+', '') AS q) s
$$;

COMMENT ON FUNCTION chronicle._statement_is_query(text) IS
	'Whether a statement''s text is a query (SELECT, VALUES, TABLE, SHOW, WITH without INSERT/UPDATE/DELETE/MERGE; not SELECT INTO or FOR UPDATE/SHARE); NULL for no text';

CREATE FUNCTION chronicle.run_wal_sources(run text)
RETURNS TABLE (source text, statements bigint, calls numeric,
               wal_records numeric, wal_fpi numeric, wal_bytes numeric, share float8,
               wal_bytes_per_s float8, wal_fpi_per_s float8, wal_bytes_per_transaction float8,
               top_queryid bigint, top_query text,
               data_checksums boolean, wal_log_hints boolean, full_page_writes boolean,
               explanation text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
-- the run's origin, set by run_window(), for this call only (05_origin.sql)
SET chronicle.origin = 0
AS $$
#variable_conflict use_column
DECLARE
	w_from timestamptz;
	w_to timestamptz;
	s_from timestamptz;
	s_to timestamptz;
	secs float8;
	v_settings jsonb;
	v_sums boolean;
	v_hints boolean;
	v_fpw boolean;
	v_commits float8;
	v_recorded boolean;
	v_ckpt numeric;
	v_autovacuum boolean;
	v_snapshots bigint;
	v_hint_text text;
	v_background text;
BEGIN
	SELECT r.settings INTO v_settings FROM chronicle.run r
	 WHERE r.run_id = chronicle._run_id(run_wal_sources.run, 'chronicle.run_wal_sources');
	SELECT w.run_from, w.run_to INTO w_from, w_to
	  FROM chronicle.run_window(run_wal_sources.run) w;
	-- the statements from the snapshot the totals start at (a statement
	-- created after it, before the run began, counts from zero)
	SELECT w.seconds, coalesce(w.window_start, w_from), coalesce(w.window_end, w_to)
	  INTO secs, s_from, s_to
	  FROM chronicle._window(w_from, w_to) w;
	v_sums := CASE WHEN v_settings ? 'data_checksums' THEN (v_settings ->> 'data_checksums')::boolean END;
	v_hints := CASE WHEN v_settings ? 'wal_log_hints' THEN (v_settings ->> 'wal_log_hints')::boolean END;
	v_fpw := CASE WHEN v_settings ? 'full_page_writes' THEN (v_settings ->> 'full_page_writes')::boolean END;
	SELECT sum(d.xact_commit)::float8 INTO v_commits
	  FROM chronicle.database_run_totals(run_wal_sources.run) d;
	v_recorded := EXISTS (SELECT FROM chronicle.statements_history h WHERE h.ts > s_from AND h.ts <= s_to);
	SELECT sum(coalesce(c.num_done, c.num_timed + c.num_requested)) INTO v_ckpt
	  FROM chronicle.checkpointer_run_totals(run_wal_sources.run) c;
	SELECT coalesce(sum(coalesce(i.hits, 0) + coalesce(i.reads, 0) + coalesce(i.writes, 0)
	                    + coalesce(i.extends, 0)), 0) > 0 INTO v_autovacuum
	  FROM chronicle.io_run_totals(run_wal_sources.run, 'autovacuum worker') i;
	SELECT count(*) INTO v_snapshots FROM chronicle._snapshot s
	 WHERE s.ts > s_from AND s.ts <= s_to AND s.collector = 'worker';

	v_hint_text := CASE
		WHEN v_sums OR v_hints THEN
			'the first hint bit set on a page after a checkpoint is logged as a full-page image '
			|| '(XLOG/FPI_FOR_HINT) because '
			|| CASE WHEN v_sums AND v_hints THEN 'data_checksums and wal_log_hints are on'
			        WHEN v_sums THEN 'data_checksums is on' ELSE 'wal_log_hints is on' END
		WHEN NOT v_sums AND NOT v_hints THEN
			'hint bits are not logged (data_checksums and wal_log_hints are off)'
		ELSE 'the first hint bit set on a page after a checkpoint is logged as a full-page image '
			|| '(XLOG/FPI_FOR_HINT) if data_checksums or wal_log_hints is on (the run kept no settings)' END;
	v_background := concat_ws('; ',
		CASE WHEN v_autovacuum THEN 'autovacuum worked in the window' END,
		CASE WHEN v_ckpt > 0 THEN v_ckpt || ' checkpoint(s) ended in it' END,
		CASE WHEN v_snapshots > 0 THEN 'the pg_chronicle recorder took ' || v_snapshots || ' snapshot(s)' END);

	RETURN QUERY
	WITH st AS MATERIALIZED (
		SELECT s.queryid, s.query, s.calls, s.wal_records, s.wal_fpi, s.wal_bytes,
		       CASE WHEN chronicle._statement_is_query(s.query) THEN 'queries'
		            WHEN s.query IS NULL THEN 'statements without text'
		            ELSE 'other statements' END AS src
		  FROM chronicle.statements_top(s_from, s_to, 2147483647, 'wal_bytes') s
		 WHERE s.toplevel IS NOT FALSE
	), g AS (
		SELECT st.src, count(*) AS n, sum(st.calls) AS calls,
		       coalesce(sum(st.wal_records), 0) AS rec, coalesce(sum(st.wal_fpi), 0) AS fpi,
		       coalesce(sum(st.wal_bytes), 0) AS bytes,
		       (array_agg(st.queryid ORDER BY st.wal_bytes DESC NULLS LAST, st.queryid)
		          FILTER (WHERE st.wal_bytes > 0))[1] AS top_id,
		       (array_agg(st.query ORDER BY st.wal_bytes DESC NULLS LAST, st.queryid)
		          FILTER (WHERE st.wal_bytes > 0))[1] AS top_q
		  FROM st GROUP BY st.src
	), tot AS (
		SELECT sum(x.wal_records) AS rec, sum(x.wal_fpi) AS fpi, sum(x.wal_bytes) AS bytes
		  FROM chronicle.wal_run_totals(run_wal_sources.run) x
	), rr AS (
		-- without a statements reading in the window what statements wrote
		-- is not known (NULL), not none
		SELECT k.ord, k.src, g.n, g.calls,
		       CASE WHEN v_recorded THEN coalesce(g.rec, 0) END AS rec,
		       CASE WHEN v_recorded THEN coalesce(g.fpi, 0) END AS fpi,
		       CASE WHEN v_recorded THEN coalesce(g.bytes, 0) END AS bytes,
		       g.top_id, g.top_q
		  FROM (VALUES (1, 'queries'), (2, 'other statements'), (3, 'statements without text')) k(ord, src)
		  LEFT JOIN g ON g.src = k.src
		UNION ALL
		SELECT 4, 'not from a statement', NULL, NULL,
		       greatest(tot.rec - (SELECT coalesce(sum(g.rec), 0) FROM g), 0),
		       greatest(tot.fpi - (SELECT coalesce(sum(g.fpi), 0) FROM g), 0),
		       greatest(tot.bytes - (SELECT coalesce(sum(g.bytes), 0) FROM g), 0),
		       NULL, NULL
		  FROM tot
		UNION ALL
		SELECT 5, 'total', NULL, NULL, tot.rec, tot.fpi, tot.bytes, NULL, NULL FROM tot
	)
	SELECT r.src, coalesce(r.n, CASE WHEN r.ord <= 3 AND v_recorded THEN 0 END), r.calls,
	       r.rec, r.fpi, r.bytes,
	       (r.bytes / nullif(tot.bytes, 0))::float8,
	       (r.bytes / secs)::float8, (r.fpi / secs)::float8,
	       (r.bytes / nullif(v_commits, 0))::float8,
	       r.top_id, r.top_q, v_sums, v_hints, v_fpw,
	       CASE WHEN r.ord <= 3 AND NOT v_recorded
	       THEN 'Not known: no pg_stat_statements reading was recorded in the window.'
	       ELSE CASE r.src
	       WHEN 'queries' THEN
	            CASE WHEN r.bytes > 0
	                 THEN 'Reading wrote WAL: ' || v_hint_text
	                      || ', and pages with dead tuples are pruned as they are read (Heap2/PRUNE_ON_ACCESS, '
	                      || 'a full-page image too at a page''s first change after a checkpoint). Both follow a '
	                      || 'write load that left tuples unhinted or dead, and stop once the pages are clean; '
	                      || 'a function a query calls may write too.'
	                 ELSE 'Queries wrote no WAL.' END
	       WHEN 'other statements' THEN
	            'Writes, DDL and utility statements: their changes'
	            || CASE WHEN v_fpw IS FALSE THEN ' (full_page_writes is off: no full-page images).'
	                    ELSE ', with a full-page image of each page first changed after a checkpoint.' END
	       WHEN 'statements without text' THEN
	            'Statements recorded without their text: not classified.'
	       WHEN 'not from a statement' THEN
	            CASE WHEN NOT v_recorded
	                 THEN 'No pg_stat_statements reading was recorded in the window: none of the WAL is attributed. '
	                 ELSE '' END
	            || 'WAL no recorded statement wrote: background processes (autovacuum, the checkpointer, '
	            || 'the pg_chronicle recorder and housekeeper, other workers'
	            || CASE WHEN v_background <> '' THEN '; here ' || v_background ELSE '' END
	            || '), commit records (written after a transaction''s last statement, END or COMMIT '
	            || 'included, so no statement counts them), statements pg_stat_statements did not track '
	            || 'or pg_chronicle did not record (beyond chronicle.statements_max).'
	       ELSE 'All the server''s WAL (pg_stat_wal); data_checksums '
	            || coalesce(CASE WHEN v_sums THEN 'on' ELSE 'off' END, 'unknown')
	            || ', wal_log_hints ' || coalesce(CASE WHEN v_hints THEN 'on' ELSE 'off' END, 'unknown')
	            || ', full_page_writes ' || coalesce(CASE WHEN v_fpw THEN 'on' ELSE 'off' END, 'unknown') || '.'
	       END END
	  FROM rr r CROSS JOIN tot
	 ORDER BY r.ord;
END;
$$;

COMMENT ON FUNCTION chronicle.run_wal_sources(text) IS
	'Where a run''s WAL came from: queries (hint bits, pruning on access), other statements, statements without text, WAL no statement wrote (background processes, the recorder), and the total, with data_checksums, wal_log_hints and full_page_writes and an explanation per row';

REVOKE ALL ON FUNCTION chronicle._statement_is_query(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.run_wal_sources(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._statement_is_query(text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.run_wal_sources(text) TO pg_monitor, pg_read_all_stats;
