-- Sampled sources: wait events (sampled every chronicle.wait_sample_interval
-- by the sampler) and the buffer cache summary.

-- Cumulative sample counts since the sampler started, per key; a sampler
-- restart shows as counters going backwards (a new baseline).
--   wait_event_type/wait_event: 'CPU'/'CPU' when the process runs without a
--   wait event.
--   state: the backend state as in pg_stat_activity ('active', 'idle',
--   'idle in transaction', ...), '' for processes without one; an idle
--   session waiting in ClientRead has state 'idle', a backend waiting for
--   its client mid-transaction 'idle in transaction' or 'active'.
--   queryid: the sampled process's query id, 0 when none is known.
CREATE VIEW chronicle.waits_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('waits', h.ts, h.waits) AS u(
		backend_type    text,
		state           text,
		wait_event_type text,
		wait_event      text,
		queryid         bigint,
		samples         bigint)
 WHERE h.waits IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.waits_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('waits');
COMMENT ON VIEW chronicle.waits_history IS
	'Wait event samples, cumulative since the sampler started, per (backend_type, state, wait_event_type, wait_event, queryid)';

-- The sampler's own honesty: ticks it should have taken, ticks it took, and
-- samples it could not store (bounded memory), all cumulative.
CREATE VIEW chronicle.wait_sampler_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('wait_sampler', h.ts, h.wait_sampler) AS u(
		ticks_due       bigint,
		ticks_taken     bigint,
		samples_dropped bigint,
		sampler_started timestamptz,
		sampler_cpu_ms  float8,			-- the sampler's own user + system CPU time
		samples_reset   timestamptz,	-- last chronicle.wait_samples_reset()
		-- database time: samples of active client backends and the processes
		-- working for them (walsenders, autovacuum workers, parallel workers)
		-- by wait class: sum / ticks_taken = average active sessions.  Not
		-- active: idle sessions, main-loop waits, throttle sleeps (see
		-- docs/sources.md, "Wait events").  Before 0.2.0: every active process, background ones
		-- included (background_active is NULL in those rows).
		active_cpu      bigint,
		active_io       bigint,
		active_lwlock   bigint,
		active_lock     bigint,
		active_ipc      bigint,
		active_client   bigint,
		active_timeout  bigint,
		active_other    bigint,			-- BufferPin, Extension, InjectionPoint
		-- samples of background processes at work (checkpointer writing, not
		-- in its main loop or throttle sleep); 0.2.0+
		background_active bigint)
 WHERE h.wait_sampler IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.wait_sampler_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('wait_sampler');
COMMENT ON VIEW chronicle.wait_sampler_history IS
	'Wait sampler ticks due and taken, samples dropped on overflow, samples of active sessions (database time) by wait class and of background processes at work (cumulative)';

-- Buffer cache summary: gauges, not counters (no deltas: values per snapshot).
-- usage_N: buffers with usage count N; dirty_N, pinned_N: of those, dirty or
-- pinned.
CREATE VIEW chronicle.buffers_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('buffers', h.ts, h.buffers) AS u(
		buffers_total  bigint,
		buffers_used   bigint,
		buffers_unused bigint,
		buffers_dirty  bigint,
		buffers_pinned bigint,
		usagecount_avg float8,
		usage_0 bigint, usage_1 bigint, usage_2 bigint, usage_3 bigint, usage_4 bigint, usage_5 bigint,
		dirty_0 bigint, dirty_1 bigint, dirty_2 bigint, dirty_3 bigint, dirty_4 bigint, dirty_5 bigint,
		pinned_0 bigint, pinned_1 bigint, pinned_2 bigint, pinned_3 bigint, pinned_4 bigint, pinned_5 bigint)
 WHERE h.buffers IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.buffers_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('buffers');
COMMENT ON VIEW chronicle.buffers_history IS
	'Buffer cache summary (gauges): used, unused, dirty, pinned, usage-count histogram';

-- Live readings, without the history.

CREATE FUNCTION chronicle.wait_sampler_status(
	OUT running boolean,
	OUT pid integer,
	OUT interval_ms integer,
	OUT started timestamptz,
	OUT ticks_due bigint,
	OUT ticks_taken bigint,
	OUT samples_dropped bigint,
	OUT entries integer,
	OUT max_entries integer,
	OUT cpu_ms float8,
	OUT samples_reset timestamptz)
RETURNS record
LANGUAGE C STRICT
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_wait_sampler_status';

COMMENT ON FUNCTION chronicle.wait_sampler_status() IS
	'Whether the wait sampler runs, its cumulative ticks due and taken, samples dropped, hash entries used and its own CPU time (NULL counters when pg_chronicle is not preloaded)';

CREATE FUNCTION chronicle.wait_samples(
	OUT backend_type text,
	OUT state text,
	OUT wait_event_type text,
	OUT wait_event text,
	OUT queryid bigint,
	OUT samples bigint)
RETURNS SETOF record
LANGUAGE C STRICT
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_wait_samples';

COMMENT ON FUNCTION chronicle.wait_samples() IS
	'The wait sampler''s cumulative sample counts now, one row per key; an error when pg_chronicle is not preloaded';

CREATE FUNCTION chronicle.buffers_summary(
	OUT buffers_total bigint,
	OUT buffers_used bigint,
	OUT buffers_unused bigint,
	OUT buffers_dirty bigint,
	OUT buffers_pinned bigint,
	OUT usagecount_avg float8,
	OUT usage_0 bigint, OUT usage_1 bigint, OUT usage_2 bigint,
	OUT usage_3 bigint, OUT usage_4 bigint, OUT usage_5 bigint,
	OUT dirty_0 bigint, OUT dirty_1 bigint, OUT dirty_2 bigint,
	OUT dirty_3 bigint, OUT dirty_4 bigint, OUT dirty_5 bigint,
	OUT pinned_0 bigint, OUT pinned_1 bigint, OUT pinned_2 bigint,
	OUT pinned_3 bigint, OUT pinned_4 bigint, OUT pinned_5 bigint)
RETURNS record
LANGUAGE C STRICT
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_buffers_summary';

COMMENT ON FUNCTION chronicle.buffers_summary() IS
	'A scan of the buffer cache headers now: the columns of buffers_history';

CREATE FUNCTION chronicle.wait_samples_reset()
RETURNS void
LANGUAGE C STRICT
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_wait_samples_reset';

COMMENT ON FUNCTION chronicle.wait_samples_reset() IS
	'Forgets the wait sampler''s keys and counts (and samples dropped); the ticks go on.  The history sees the counts go backwards: a new baseline';

REVOKE ALL ON FUNCTION chronicle.wait_samples_reset() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.wait_sampler_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.wait_samples() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.buffers_summary() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.wait_sampler_status() TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.wait_samples() TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.buffers_summary() TO pg_monitor, pg_read_all_stats;
