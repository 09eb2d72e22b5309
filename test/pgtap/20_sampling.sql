-- pgTAP: wait sampling and buffer cache objects, privileges and contracts.
BEGIN;
SELECT plan(26);

SELECT has_view('chronicle', t, 'history view chronicle.' || t)
  FROM unnest(ARRAY['waits_history', 'wait_sampler_history', 'buffers_history']) AS t;
SELECT has_function('chronicle', f, ARRAY[]::text[], 'function chronicle.' || f)
  FROM unnest(ARRAY['wait_sampler_status', 'wait_samples', 'buffers_summary']) AS f;

-- Keys are names, never enum integers; CPU time of the sampler is recorded.
SELECT col_type_is('chronicle', 'waits_history', 'backend_type', 'text', 'waits_history.backend_type is a name');
SELECT col_type_is('chronicle', 'waits_history', 'wait_event', 'text', 'waits_history.wait_event is a name');
SELECT col_type_is('chronicle', 'wait_sampler_history', 'sampler_cpu_ms', 'double precision',
                   'wait_sampler_history records the sampler''s CPU time');

-- Monitoring roles read, PUBLIC does not.
SELECT function_privs_are('chronicle', f, ARRAY[]::text[], 'pg_monitor', ARRAY['EXECUTE'],
                          'pg_monitor may execute chronicle.' || f)
  FROM unnest(ARRAY['wait_sampler_status', 'wait_samples', 'buffers_summary']) AS f;
SELECT function_privs_are('chronicle', f, ARRAY[]::text[], 'public', ARRAY[]::text[],
                          'PUBLIC may not execute chronicle.' || f)
  FROM unnest(ARRAY['wait_sampler_status', 'wait_samples', 'buffers_summary']) AS f;
SELECT function_privs_are('chronicle', 'wait_samples_reset', ARRAY[]::text[], 'public', ARRAY[]::text[],
                          'PUBLIC may not reset the wait samples');
SELECT function_privs_are('chronicle', 'wait_samples_reset', ARRAY[]::text[], 'pg_monitor', ARRAY[]::text[],
                          'pg_monitor may not reset the wait samples');
SELECT table_privs_are('chronicle', 'waits_history', 'public', ARRAY[]::text[]);
SELECT table_privs_are('chronicle', 'waits_history', 'pg_read_all_stats', ARRAY['SELECT']);

-- Settings: out-of-range values are refused with invalid_parameter_value,
-- and none can be set per session (cant_change_runtime_param).
SELECT throws_ok($$SET chronicle.wait_sample_interval = '20ms'$$, '55P02', NULL,
                 'wait_sample_interval is not a session setting');
SELECT throws_ok($$SET chronicle.buffers_interval = '5s'$$, '55P02', NULL,
                 'buffers_interval is not a session setting');
SELECT throws_ok($$SET chronicle.wait_max_entries = 500$$, '55P02', NULL,
                 'wait_max_entries is fixed at server start');
SELECT is((SELECT min_val || '..' || max_val FROM pg_settings
            WHERE name = 'chronicle.wait_sample_interval'), '0..1000',
          'wait_sample_interval: 0 (off) to 1 s');
SELECT is((SELECT min_val || '..' || max_val FROM pg_settings
            WHERE name = 'chronicle.wait_max_entries'), '100..1000000',
          'wait_max_entries: 100 to a million');

-- The sampler's counters are consistent.
SELECT ok((SELECT ticks_taken <= ticks_due FROM chronicle.wait_sampler_status()),
          'the sampler never takes more ticks than are due');
SELECT ok((SELECT bool_and(samples > 0) FROM chronicle.wait_samples()),
          'every key was sampled at least once');

SELECT * FROM finish();
ROLLBACK;
