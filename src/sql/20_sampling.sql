-- Sampled sources: wait events (sampled every chronicle.wait_sample_interval
-- by the sampler) and the buffer cache summary.  Their history views
-- (waits_history, wait_sampler_history, buffers_history) are made from
-- src/source_waits.c and src/source_buffers.c (10_history.sql).

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
