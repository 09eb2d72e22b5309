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
CREATE TABLE chronicle.waits_history (
	ts              timestamptz NOT NULL,
	backend_type    text NOT NULL,
	state           text NOT NULL,
	wait_event_type text NOT NULL,
	wait_event      text NOT NULL,
	queryid         bigint NOT NULL,
	samples         bigint NOT NULL
) PARTITION BY RANGE (ts);
CREATE INDEX ON chronicle.waits_history USING brin (ts);
COMMENT ON TABLE chronicle.waits_history IS
	'Wait event samples, cumulative since the sampler started, per (backend_type, state, wait_event_type, wait_event, queryid)';

-- The sampler's own honesty: ticks it should have taken, ticks it took, and
-- samples it could not store (bounded memory), all cumulative.
CREATE TABLE chronicle.wait_sampler_history (
	ts              timestamptz NOT NULL,
	ticks_due       bigint NOT NULL,
	ticks_taken     bigint NOT NULL,
	samples_dropped bigint NOT NULL,
	sampler_started timestamptz
) PARTITION BY RANGE (ts);
CREATE INDEX ON chronicle.wait_sampler_history USING brin (ts);
COMMENT ON TABLE chronicle.wait_sampler_history IS
	'Wait sampler ticks due and taken, and samples dropped on overflow (cumulative)';

-- Buffer cache summary: gauges, not counters (no deltas: values per snapshot).
-- usage_N: buffers with usage count N; dirty_N, pinned_N: of those, dirty or
-- pinned.
CREATE TABLE chronicle.buffers_history (
	ts             timestamptz NOT NULL,
	buffers_total  bigint NOT NULL,
	buffers_used   bigint NOT NULL,
	buffers_unused bigint NOT NULL,
	buffers_dirty  bigint NOT NULL,
	buffers_pinned bigint NOT NULL,
	usagecount_avg float8,
	usage_0 bigint, usage_1 bigint, usage_2 bigint, usage_3 bigint, usage_4 bigint, usage_5 bigint,
	dirty_0 bigint, dirty_1 bigint, dirty_2 bigint, dirty_3 bigint, dirty_4 bigint, dirty_5 bigint,
	pinned_0 bigint, pinned_1 bigint, pinned_2 bigint, pinned_3 bigint, pinned_4 bigint, pinned_5 bigint
) PARTITION BY RANGE (ts);
CREATE INDEX ON chronicle.buffers_history USING brin (ts);
COMMENT ON TABLE chronicle.buffers_history IS
	'Buffer cache summary (gauges): used, unused, dirty, pinned, usage-count histogram';
