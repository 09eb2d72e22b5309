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
