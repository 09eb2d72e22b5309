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
-- it moves.  Metrics within 2 of the median (score < 2) are not reported.

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
		(25, 'pressure_memory_some', 'memory pressure', '% stalled', 1.0)
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
	SELECT w.run_from, w.run_to INTO w_from, w_to
	  FROM chronicle.run_window(slowest_intervals.run) w;	-- NULL and unknown-run errors
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
	SELECT r.run_id INTO v_run FROM chronicle.run r WHERE r.label = slowest_intervals.run;
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
		SELECT * FROM chronicle.timeline(w_from, w_to)
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
		             pr.cpu, pr.io, pr.memory]::float8[] AS vals
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
		          FROM sc WHERE sc.score >= 2) s
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
	       coalesce(ex.text, 'no recorded metric stands out (all within 2 robust deviations of the run''s median)'),
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
AS $$
#variable_conflict use_column
DECLARE
	w_from timestamptz;
	w_to timestamptz;
	secs float8;
BEGIN
	SELECT w.run_from, w.run_to INTO w_from, w_to
	  FROM chronicle.run_window(load_profile.run) w;	-- NULL and unknown-run errors
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
	), app AS (
		SELECT a.tps, a.latency_p50_ms AS p50, a.latency_p99_ms AS p99
		  FROM chronicle.app_summary(load_profile.run) a
	)
	SELECT u.metric, u.unit, u.per_second, u.per_transaction
	  FROM (
	SELECT v.ord, v.metric, v.unit,
	       CASE WHEN v.per_s THEN v.total / secs END AS per_second,
	       CASE WHEN v.per_tx THEN v.total / nullif(db.c, 0) END AS per_transaction
	  FROM db, io, wal, wt,
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
		(48, 'other waits', 'session-seconds', wt.other / wt.ticks * secs, true, true)
	       ) AS v(ord, metric, unit, total, per_s, per_tx)
	UNION ALL
	SELECT v.ord, v.metric, v.unit, v.per_s, v.per_tx
	  FROM app,
	       LATERAL (VALUES
		(50, 'pgbench tps', 'transactions', app.tps, NULL::float8),
		(51, 'latency p50', 'ms', NULL, app.p50),
		(52, 'latency p99', 'ms', NULL, app.p99)
	       ) AS v(ord, metric, unit, per_s, per_tx)
	       ) u
	 ORDER BY u.ord;
END;
$$;

COMMENT ON FUNCTION chronicle.load_profile(text) IS
	'AWR-style load profile of a run: commits, WAL, I/O, waits by class per second and per transaction (commit), pgbench tps and latency p50/p99';

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
