-- Analysis API, part 5: the timeline, one row per snapshot interval with the
-- headline numbers side by side (what someone plots).
--
-- Rates are per second over the interval.  A source with a reset in the
-- interval gives NULL for that interval (never a negative or huge rate); a
-- source with no history (not collected) gives NULL; a source recorded but
-- unchanged gives 0.  I/O columns cover the relation objects (relation,
-- temp relation), not the 18 "wal" rows, which are WAL I/O (see
-- io_deltas(for_object => 'wal')).  Bytes are the 18 byte counters, or
-- operations * op_bytes on 17.
--
-- CPU: cpu_user, cpu_system (with irq and softirq), cpu_iowait, cpu_steal
-- and cpu_idle are shares of all the CPU time of the interval (/proc/stat,
-- the os_cpu source; they add up to 1); procs_running is the kernel's
-- count of runnable tasks at the snapshot, the collector included.
--
-- CPU of the server's processes (/proc/<pid>/stat and schedstat, the
-- os_process_cpu source, summed by backend type): postgres_cpu is the CPU
-- (user + system) of all of them in CPUs busy (CPU seconds per second),
-- client_, autovacuum_ (workers), checkpointer_, bgwriter_ and
-- walwriter_cpu that of one type; postgres_cpu_wait and client_cpu_wait
-- the time spent runnable but waiting for a CPU, in processes waiting on
-- average (NULL without schedstat).  detail => true adds cpu_by_backend,
-- every type with CPU or waiting: its cpu, user, system and cpu_wait.
--
-- Waits: active_* are the average numbers of active sessions per wait
-- class (database time: client backends and the walsenders, autovacuum and
-- parallel workers working for them; not idle sessions, main-loop waits or
-- throttle sleeps), from the sampler's per-class counters (one row per
-- snapshot); NULL for history recorded before 0.2.0, whose counters
-- included background processes (background_active NULL); top_waits is of
-- the same samples.  waits => false leaves them out.
--
-- detail => true adds the three jsonb breakdowns: io_by_backend (the I/O
-- rates of every backend type), cpu_by_backend (above) and top_waits (the three wait events with
-- the most samples, from the keyed counts of every process).  They are off
-- by default: building a jsonb per interval costs more than the rest of a
-- long timeline, and top_waits differences every wait key, the one part
-- whose cost grows with the number of processes and query ids.
--
-- app => false leaves the pgbench columns (tps, latency_*) NULL without
-- reading the pgbench transactions (the report reads them per run).
--
-- resolution: 'raw' is every snapshot interval (all of the above);
-- 'minute' and 'hour' read the rollups (60_rollups.sql, one row per bucket,
-- the same columns); 'auto' picks raw for short windows whose raw rows are
-- there, else minute up to a day, else hour (chronicle._resolution()).  The
-- last column, resolution_used, says which answered.  See docs/rollups.md.
--
-- Each source is read once by the delta engine (src/deltas.c); keyed
-- sources are summed per interval by it (_io_sums and _os_process_cpu_sums
-- by backend type, _database_sums), so the rows joined here are one per interval.

-- One row of the timeline, from the raw history or from the rollups
-- (chronicle._timeline_rollup(), 60_rollups.sql): the one definition of
-- its columns.
-- (Created here when missing, by a fresh install and by every upgrade at
-- this point of the code, "-- @upgrade": so it is written once.)
-- @upgrade
DO $do$
BEGIN
	IF to_regtype('chronicle.timeline_row') IS NULL THEN
		CREATE TYPE chronicle.timeline_row AS (
			interval_start timestamptz, interval_end timestamptz, seconds float8,
			commits_per_s float8, rollbacks_per_s float8, hit_ratio float8,
			reads_per_s float8, writes_per_s float8, extends_per_s float8, fsyncs_per_s float8,
			read_bytes_per_s float8, write_bytes_per_s float8, extend_bytes_per_s float8,
			client_write_bytes_per_s float8, checkpointer_write_bytes_per_s float8,
			bgwriter_write_bytes_per_s float8, autovacuum_write_bytes_per_s float8,
			io_by_backend jsonb,
			wal_bytes_per_s float8, wal_fpi_per_s float8, wal_records_per_s float8,
			checkpoints bigint, checkpoint_buffers_written bigint,
			buffers_used bigint, buffers_dirty bigint,
			mem_free_kb bigint, mem_available_kb bigint, mem_dirty_kb bigint, mem_writeback_kb bigint,
			cpu_user float8, cpu_system float8, cpu_iowait float8, cpu_steal float8, cpu_idle float8,
			procs_running bigint,
			postgres_cpu float8, client_cpu float8, autovacuum_cpu float8, checkpointer_cpu float8,
			bgwriter_cpu float8, walwriter_cpu float8, postgres_cpu_wait float8, client_cpu_wait float8,
			cpu_by_backend jsonb,
			active_processes float8, active_cpu float8, active_io float8, active_lwlock float8,
			active_lock float8, active_ipc float8, active_client float8, active_timeout float8,
			active_other float8, top_waits jsonb, wait_coverage float8,
			tps float8, latency_p50_ms float8, latency_p99_ms float8, resolution_used text);
	END IF;
END;
$do$;
COMMENT ON TYPE chronicle.timeline_row IS
	'A row of chronicle.timeline(): one snapshot interval (raw) or bucket (minute, hour) with the headline rates, gauges, active sessions and pgbench numbers side by side';

CREATE FUNCTION chronicle.timeline(from_ts timestamptz, to_ts timestamptz, waits boolean DEFAULT true,
                                   detail boolean DEFAULT false, resolution text DEFAULT 'auto',
                                   app boolean DEFAULT true)
RETURNS SETOF chronicle.timeline_row
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
SET work_mem = '256MB'
-- the engine's rows come in interval order: group them as they come
SET enable_hashagg = off
AS $$
#variable_conflict use_column
DECLARE
	has_app boolean;
	res     text;
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.timeline');
	IF waits IS NULL OR detail IS NULL OR app IS NULL THEN
		RAISE EXCEPTION 'chronicle.timeline: waits, detail and app must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
			      HINT = 'waits => false leaves the wait columns out; detail => true adds io_by_backend and top_waits; app => false leaves the pgbench columns out.';
	END IF;
	-- Long windows, and windows whose raw rows are gone, from the rollups
	-- (60_rollups.sql): one row per minute or hour.  Raw up to 6 hours, 1
	-- hour with the jsonb breakdowns (each under 0.5 s).
	res := chronicle._resolution('chronicle.timeline', from_ts, to_ts, timeline.resolution,
	                             CASE WHEN detail THEN interval '1 hour' ELSE interval '6 hours' END);
	IF res <> 'raw' AND timeline.app THEN
		RETURN QUERY SELECT * FROM chronicle._timeline_rollup(from_ts, to_ts, res, waits, detail);
		RETURN;
	ELSIF res <> 'raw' THEN
		RETURN QUERY SELECT (jsonb_populate_record(r, '{"tps": null, "latency_p50_ms": null, "latency_p99_ms": null}')).*
		  FROM chronicle._timeline_rollup(from_ts, to_ts, res, waits, detail) r;
		RETURN;
	END IF;
	has_app := timeline.app AND EXISTS (SELECT FROM chronicle.app_transaction t WHERE t.ts > from_ts AND t.ts <= to_ts
	                                                       AND t.run_id IN (SELECT o.run_id FROM chronicle.run o WHERE o.origin = chronicle._origin()))
	           OR timeline.app AND EXISTS (SELECT FROM chronicle.app_interval a
	                       WHERE a.interval_start < to_ts
	                         AND a.run_id IN (SELECT o.run_id FROM chronicle.run o WHERE o.origin = chronicle._origin())
	                         AND a.interval_start + a.interval_secs * interval '1 second' > from_ts);
	RETURN QUERY
	WITH iv AS MATERIALIZED (SELECT * FROM chronicle.intervals(from_ts, to_ts)),
	has AS MATERIALIZED (
		SELECT EXISTS (SELECT FROM chronicle.database_history) AS db,
		       EXISTS (SELECT FROM chronicle.io_history) AS io,
		       EXISTS (SELECT FROM chronicle.os_process_cpu_history) AS pcpu,
		       timeline.detail AND EXISTS (SELECT FROM chronicle.waits_history) AS waits
	),
	db AS (
		SELECT d.interval_end, d.xact_commit AS c, d.xact_rollback AS r,
		       d.blks_hit AS h, d.blks_read AS rd, d.reset AS rs
		  FROM chronicle._database_sums(from_ts, to_ts) d
	),
	io AS (
		SELECT i.interval_end, bool_or(i.reset) AS rs,
		       sum(i.reads) AS reads, sum(i.writes) AS writes, sum(i.extends) AS extends,
		       sum(i.fsyncs) AS fsyncs, sum(i.read_bytes) AS rb, sum(i.write_bytes) AS wb,
		       sum(i.extend_bytes) AS eb,
		       coalesce(sum(i.write_bytes) FILTER (WHERE i.grp = 'client backend'), 0) AS wb_client,
		       coalesce(sum(i.write_bytes) FILTER (WHERE i.grp = 'checkpointer'), 0) AS wb_ckpt,
		       coalesce(sum(i.write_bytes) FILTER (WHERE i.grp = 'background writer'), 0) AS wb_bgw,
		       coalesce(sum(i.write_bytes) FILTER (WHERE i.grp = 'autovacuum worker'), 0) AS wb_av,
		       CASE WHEN timeline.detail THEN jsonb_object_agg(i.grp, jsonb_build_object(
		           'reads_per_s', i.reads_per_s, 'writes_per_s', i.writes_per_s,
		           'extends_per_s', i.extends_per_s, 'fsyncs_per_s', coalesce(i.fsyncs_per_s, 0),
		           'read_bytes_per_s', i.read_bytes_per_s, 'write_bytes_per_s', i.write_bytes_per_s,
		           'extend_bytes_per_s', i.extend_bytes_per_s))
		           FILTER (WHERE coalesce(i.reads, 0) + coalesce(i.writes, 0) + coalesce(i.extends, 0)
		                         + coalesce(i.fsyncs, 0) > 0) END AS by_backend
		  FROM chronicle._io_sums(from_ts, to_ts, by => 'backend_type',
		                          exclude_cols => '{object}', exclude_vals => '{wal}') i
		 GROUP BY i.interval_end
	),
	wd AS MATERIALIZED (
		SELECT d.* FROM chronicle.wait_deltas(from_ts, to_ts, changed_only => true) d
		 WHERE timeline.detail AND d.samples > 0
	),
	wk AS (
		-- database time, classified once per key (OFFSET 0: not pushed below
		-- the DISTINCT)
		SELECT k.* FROM (SELECT DISTINCT d.backend_type, d.state, d.wait_event_type, d.wait_event
		                   FROM wd d OFFSET 0) k
		 WHERE chronicle._wait_activity(k.backend_type, k.state, k.wait_event_type, k.wait_event) = 'database'
	),
	wt AS (
		SELECT d.interval_end, d.wait_event_type || ':' || d.wait_event AS ev, sum(d.samples) AS n
		  FROM wd d JOIN wk k ON k.backend_type = d.backend_type AND k.state = d.state
		                     AND k.wait_event_type = d.wait_event_type AND k.wait_event = d.wait_event
		 GROUP BY d.interval_end, d.wait_event_type, d.wait_event
	),
	wr AS (
		SELECT w.*, row_number() OVER (PARTITION BY w.interval_end ORDER BY w.n DESC, w.ev) AS rk,
		       sum(w.n) OVER (PARTITION BY w.interval_end) AS total
		  FROM wt w
	),
	tw AS (
		SELECT w.interval_end,
		       jsonb_agg(jsonb_build_object('wait', w.ev, 'samples', w.n,
		                                    'share', round(w.n::numeric / w.total, 3)) ORDER BY w.rk)
		           FILTER (WHERE w.rk <= 3) AS top
		  FROM wr w
		 GROUP BY w.interval_end
	),
	ws AS (
		SELECT s.interval_end, s.ticks_due, s.ticks_taken,
		       s.active_cpu::float8 / s.t AS cpu,
		       s.active_io::float8 / s.t AS io,
		       s.active_lwlock::float8 / s.t AS lwlock,
		       s.active_lock::float8 / s.t AS lock,
		       s.active_ipc::float8 / s.t AS ipc,
		       s.active_client::float8 / s.t AS client,
		       s.active_timeout::float8 / s.t AS timeout,
		       s.active_other::float8 / s.t AS other
		  FROM (SELECT s.*,
		               -- active_* before 0.2.0 counted background processes too
		               CASE WHEN s.background_active IS NOT NULL THEN nullif(s.ticks_taken, 0) END AS t
		          FROM chronicle.wait_sampler_deltas(from_ts, to_ts) s) s
		 WHERE timeline.waits
	),
	-- CPU by mode (/proc/stat): each mode's share of all the CPU time of the
	-- interval, as top and sar compute it (user with nice, system with irq
	-- and softirq); NULL at a reset
	cpu AS (
		SELECT c.interval_end, c.procs_running,
		       c.user_ms + c.nice_ms AS usr,
		       c.system_ms + coalesce(c.irq_ms, 0) + coalesce(c.softirq_ms, 0) AS sys,
		       c.iowait_ms AS iowait, c.steal_ms AS steal, c.idle_ms AS idle,
		       nullif(c.user_ms + c.nice_ms + c.system_ms + c.idle_ms + coalesce(c.iowait_ms, 0)
		              + coalesce(c.irq_ms, 0) + coalesce(c.softirq_ms, 0) + coalesce(c.steal_ms, 0), 0) AS t
		  FROM chronicle.os_cpu_deltas(from_ts, to_ts) c
	),
	-- CPU of the server's processes by backend type (ms of the interval);
	-- the run delay NULL when every changed type's is (no schedstat), 0 in
	-- an interval without a change (no row), as the rollups count it
	pcpu AS (
		SELECT p.interval_end, bool_or(p.reset) AS rs,
		       coalesce(sum(p.user_ms + p.system_ms), 0) AS cpu,
		       coalesce(sum(p.user_ms + p.system_ms) FILTER (WHERE p.grp = 'client backend'), 0) AS cpu_client,
		       coalesce(sum(p.user_ms + p.system_ms) FILTER (WHERE p.grp = 'autovacuum worker'), 0) AS cpu_av,
		       coalesce(sum(p.user_ms + p.system_ms) FILTER (WHERE p.grp = 'checkpointer'), 0) AS cpu_ckpt,
		       coalesce(sum(p.user_ms + p.system_ms) FILTER (WHERE p.grp = 'background writer'), 0) AS cpu_bgw,
		       coalesce(sum(p.user_ms + p.system_ms) FILTER (WHERE p.grp = 'walwriter'), 0) AS cpu_walw,
		       sum(p.run_delay_ms) AS wait,
		       CASE WHEN count(p.run_delay_ms) > 0
		            THEN coalesce(sum(p.run_delay_ms) FILTER (WHERE p.grp = 'client backend'), 0) END AS wait_client,
		       CASE WHEN timeline.detail THEN jsonb_object_agg(p.grp, jsonb_build_object(
		           'cpu', (p.user_ms + p.system_ms) / 1000 / p.seconds, 'user', p.user_ms / 1000 / p.seconds,
		           'system', p.system_ms / 1000 / p.seconds, 'cpu_wait', p.run_delay_ms / 1000 / p.seconds))
		           FILTER (WHERE p.user_ms + p.system_ms > 0 OR p.run_delay_ms > 0) END AS by_backend
		  FROM chronicle._os_process_cpu_sums(from_ts, to_ts, by => 'backend_type') p
		 GROUP BY p.interval_end
	),
	-- pgbench: app_intervals() of every run, the same intervals
	app AS (
		SELECT a.interval_end, a.tps, a.latency_p50_ms AS p50, a.latency_p99_ms AS p99
		  FROM chronicle.app_intervals(from_ts, to_ts) a
		 WHERE has_app
	)
	SELECT iv.interval_start, iv.interval_end, iv.seconds,
	       CASE WHEN NOT has.db OR db.rs THEN NULL ELSE coalesce(db.c, 0) / iv.seconds END,
	       CASE WHEN NOT has.db OR db.rs THEN NULL ELSE coalesce(db.r, 0) / iv.seconds END,
	       CASE WHEN db.rs THEN NULL ELSE db.h::float8 / nullif(db.h + db.rd, 0) END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.reads, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.writes, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.extends, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.fsyncs, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.rb, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.wb, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.eb, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.wb_client, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.wb_ckpt, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.wb_bgw, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs THEN NULL ELSE coalesce(io.wb_av, 0) / iv.seconds END,
	       CASE WHEN NOT has.io OR io.rs OR NOT timeline.detail THEN NULL ELSE coalesce(io.by_backend, '{}') END,
	       wal.wal_bytes_per_s, wal.wal_fpi_per_s, wal.wal_records_per_s,
	       coalesce(ck.num_done, ck.num_timed + ck.num_requested),
	       ck.buffers_written,
	       bu.buffers_used, bu.buffers_dirty,
	       mem.mem_free, mem.mem_available, mem.dirty, mem.writeback,
	       cpu.usr / cpu.t, cpu.sys / cpu.t, cpu.iowait / cpu.t, cpu.steal / cpu.t, cpu.idle / cpu.t,
	       cpu.procs_running,
	       CASE WHEN NOT has.pcpu OR pcpu.rs THEN NULL ELSE coalesce(pcpu.cpu, 0) / 1000 / iv.seconds END,
	       CASE WHEN NOT has.pcpu OR pcpu.rs THEN NULL ELSE coalesce(pcpu.cpu_client, 0) / 1000 / iv.seconds END,
	       CASE WHEN NOT has.pcpu OR pcpu.rs THEN NULL ELSE coalesce(pcpu.cpu_av, 0) / 1000 / iv.seconds END,
	       CASE WHEN NOT has.pcpu OR pcpu.rs THEN NULL ELSE coalesce(pcpu.cpu_ckpt, 0) / 1000 / iv.seconds END,
	       CASE WHEN NOT has.pcpu OR pcpu.rs THEN NULL ELSE coalesce(pcpu.cpu_bgw, 0) / 1000 / iv.seconds END,
	       CASE WHEN NOT has.pcpu OR pcpu.rs THEN NULL ELSE coalesce(pcpu.cpu_walw, 0) / 1000 / iv.seconds END,
	       CASE WHEN NOT has.pcpu OR pcpu.rs THEN NULL WHEN pcpu.interval_end IS NULL THEN 0
	            ELSE pcpu.wait / 1000 / iv.seconds END,
	       CASE WHEN NOT has.pcpu OR pcpu.rs THEN NULL WHEN pcpu.interval_end IS NULL THEN 0
	            ELSE pcpu.wait_client / 1000 / iv.seconds END,
	       CASE WHEN NOT has.pcpu OR pcpu.rs OR NOT timeline.detail THEN NULL
	            ELSE coalesce(pcpu.by_backend, '{}') END,
	       ws.cpu + ws.io + ws.lwlock + ws.lock + ws.ipc + ws.client + ws.timeout + ws.other,
	       ws.cpu, ws.io, ws.lwlock, ws.lock, ws.ipc, ws.client, ws.timeout, ws.other,
	       CASE WHEN has.waits THEN coalesce(tw.top, '[]') END,
	       ws.ticks_taken::float8 / nullif(ws.ticks_due, 0),
	       CASE WHEN has_app THEN app.tps END,
	       app.p50, app.p99, 'raw'::text
	  FROM iv
	 CROSS JOIN has
	  LEFT JOIN db ON db.interval_end = iv.interval_end
	  LEFT JOIN io ON io.interval_end = iv.interval_end
	  LEFT JOIN chronicle.wal_deltas(from_ts, to_ts) wal ON wal.interval_end = iv.interval_end
	  LEFT JOIN chronicle.checkpointer_deltas(from_ts, to_ts) ck ON ck.interval_end = iv.interval_end
	  LEFT JOIN chronicle.buffers_values(from_ts, to_ts) bu ON bu.interval_end = iv.interval_end
	  LEFT JOIN chronicle.os_memory_deltas(from_ts, to_ts) mem ON mem.interval_end = iv.interval_end
	  LEFT JOIN cpu ON cpu.interval_end = iv.interval_end
	  LEFT JOIN pcpu ON pcpu.interval_end = iv.interval_end
	  LEFT JOIN ws ON ws.interval_end = iv.interval_end
	  LEFT JOIN tw ON tw.interval_end = iv.interval_end
	  LEFT JOIN app ON app.interval_end = iv.interval_end
	 ORDER BY iv.interval_end;
END;
$$;

COMMENT ON FUNCTION chronicle.timeline(timestamptz, timestamptz, boolean, boolean, text, boolean) IS
	'One row per snapshot interval with the headline numbers: commits, I/O by backend type, WAL, checkpoints, buffers, memory, CPU by mode and by PostgreSQL process type, active processes by wait class (jsonb breakdowns by backend type and wait event on request), pgbench tps and latency';

REVOKE ALL ON FUNCTION chronicle.timeline(timestamptz, timestamptz, boolean, boolean, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.timeline(timestamptz, timestamptz, boolean, boolean, text, boolean) TO pg_monitor, pg_read_all_stats;
