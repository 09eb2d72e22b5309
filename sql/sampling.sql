-- Wait sampling and the buffer cache summary: settings, live functions and
-- what a snapshot records.  The regress instance preloads pg_chronicle, so
-- the sampler runs (chronicle.enabled = off only idles the collector).
\set VERBOSITY terse

-- Settings, their units, bounds and when they can change.
SELECT name, setting, unit, min_val, max_val, context
  FROM pg_settings
 WHERE name IN ('chronicle.wait_sample_interval', 'chronicle.wait_max_entries',
                'chronicle.wait_queryid',
                'chronicle.buffers_interval', 'chronicle.collect_waits',
                'chronicle.collect_wait_sampler', 'chronicle.collect_buffers')
 ORDER BY name;

-- Out-of-range values are refused.
ALTER SYSTEM SET chronicle.wait_sample_interval = '2s';
ALTER SYSTEM SET chronicle.wait_sample_interval = -1;
ALTER SYSTEM SET chronicle.wait_max_entries = 99;
ALTER SYSTEM SET chronicle.wait_max_entries = 1000001;
ALTER SYSTEM SET chronicle.buffers_interval = -1;
ALTER SYSTEM SET chronicle.buffers_interval = '25h';
-- And none of them is a session setting.
SET chronicle.wait_sample_interval = '20ms';
SET chronicle.wait_max_entries = 500;
SET chronicle.buffers_interval = '5s';

-- The sampler runs and its counters are sane.
SELECT running, pid > 0 AS has_pid, interval_ms, started <= now() AS started_before,
       ticks_taken > 0 AS ticking, ticks_taken <= ticks_due AS taken_le_due,
       samples_dropped, max_entries, entries BETWEEN 1 AND max_entries AS entries_in_bounds,
       cpu_ms >= 0 AS cpu_known
  FROM chronicle.wait_sampler_status();

-- Every process is sampled under a name; CPU is CPU/CPU.
SELECT count(*) > 0 AS some_keys,
       bool_and(samples > 0) AS all_counted,
       bool_and(backend_type <> '') AS all_named,
       count(*) FILTER (WHERE (wait_event_type = 'CPU') <> (wait_event = 'CPU')) AS cpu_mismatches
  FROM chronicle.wait_samples();
SELECT count(*) > 0 AS checkpointer_sampled
  FROM chronicle.wait_samples()
 WHERE backend_type = 'checkpointer' AND state = '' AND queryid = 0;
-- Only states pg_stat_activity knows.
SELECT count(*) AS unknown_states
  FROM chronicle.wait_samples()
 WHERE state NOT IN ('', 'starting', 'idle', 'active', 'idle in transaction',
                     'fastpath function call', 'idle in transaction (aborted)',
                     'disabled');

-- The buffer summary adds up.
SELECT buffers_total = (SELECT setting::bigint FROM pg_settings
                         WHERE name = 'shared_buffers') AS total_is_shared_buffers,
       buffers_used + buffers_unused = buffers_total AS used_plus_unused,
       buffers_used > 0 AS some_used,
       usage_0 + usage_1 + usage_2 + usage_3 + usage_4 + usage_5 = buffers_used AS usage_sum,
       dirty_0 + dirty_1 + dirty_2 + dirty_3 + dirty_4 + dirty_5 = buffers_dirty AS dirty_sum,
       pinned_0 + pinned_1 + pinned_2 + pinned_3 + pinned_4 + pinned_5 = buffers_pinned AS pinned_sum,
       buffers_dirty <= buffers_used AS dirty_le_used,
       usagecount_avg BETWEEN 0 AND 5 AS avg_in_range
  FROM chronicle.buffers_summary();

-- A snapshot records the three sources.
SELECT chronicle.snapshot() AS ts \gset
SELECT (SELECT count(*) > 0 FROM chronicle.waits_history WHERE ts = :'ts') AS waits,
       (SELECT count(*) FROM chronicle.wait_sampler_history WHERE ts = :'ts') AS wait_sampler,
       (SELECT count(*) FROM chronicle.buffers_history WHERE ts = :'ts') AS buffers;
-- Keys are unique within a snapshot.
SELECT count(*) AS duplicate_keys FROM (
  SELECT 1 FROM chronicle.waits_history WHERE ts = :'ts'
   GROUP BY backend_type, state, wait_event_type, wait_event, queryid
  HAVING count(*) > 1) d;
-- The recorded counts are no more than the live ones a moment later.
SELECT (SELECT sum(samples) FROM chronicle.waits_history WHERE ts = :'ts') <=
       (SELECT sum(samples) FROM chronicle.wait_samples()) AS recorded_le_live,
       (SELECT ticks_taken FROM chronicle.wait_sampler_history WHERE ts = :'ts') <=
       (SELECT ticks_taken FROM chronicle.wait_sampler_status()) AS ticks_le_live;
SELECT ticks_taken <= ticks_due AS taken_le_due, samples_dropped,
       sampler_started IS NOT NULL AS has_started, sampler_cpu_ms >= 0 AS cpu_known
  FROM chronicle.wait_sampler_history WHERE ts = :'ts';
SELECT buffers_used + buffers_unused = buffers_total AS adds_up
  FROM chronicle.buffers_history WHERE ts = :'ts';

-- The sources can be switched off like the others.
SELECT source, enabled, errors FROM chronicle.source_status()
 WHERE source IN ('waits', 'wait_sampler', 'buffers') ORDER BY source;
