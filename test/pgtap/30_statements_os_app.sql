-- pgTAP: tables, privileges and contracts of the statements, OS and
-- application parts.
BEGIN;
SELECT plan(40);

SELECT has_table('chronicle', t, 'table chronicle.' || t)
  FROM unnest(ARRAY['statements_text', 'app_transaction', 'app_interval', 'app_metric']) AS t;
SELECT has_view('chronicle', t, 'history view chronicle.' || t)
  FROM unnest(ARRAY['statements_history', 'os_memory_history', 'os_disk_history',
                    'os_pressure_history', 'os_process_io_history']) AS t;

-- Columns other parts of the project read.
SELECT has_column('chronicle', 'statements_history', 'stats_since', 'statements_history.stats_since');
SELECT has_column('chronicle', 'statements_history', 'wal_buffers_full', 'statements_history.wal_buffers_full (pgss 1.12)');
SELECT has_column('chronicle', 'app_interval', 'interval_secs', 'app_interval.interval_secs');
SELECT col_type_is('chronicle', 'os_pressure_history', 'some_total', 'bigint', 'pressure totals are bigint microseconds');

-- Settings.
SELECT is(current_setting('chronicle.statements_max'), '100', 'chronicle.statements_max defaults to 100');
SELECT is(current_setting('chronicle.proc_root'), '/proc', 'chronicle.proc_root defaults to /proc');
SELECT is(current_setting('chronicle.os_disks'), '', 'chronicle.os_disks defaults to automatic');

-- Privileges: loaders write (not PUBLIC, not monitoring); readers for monitoring.
SELECT function_privs_are('chronicle', 'load_pgbench_log', ARRAY['text', 'text', 'text', 'text', 'boolean', 'integer'],
                          'public', ARRAY[]::text[]);
SELECT function_privs_are('chronicle', 'load_pgbench_lines', ARRAY['text', 'text', 'text', 'boolean', 'integer'],
                          'pg_monitor', ARRAY[]::text[]);
SELECT function_privs_are('chronicle', 'add_metric', ARRAY['text', 'double precision', 'timestamp with time zone', 'text'],
                          'public', ARRAY[]::text[]);
SELECT function_privs_are('chronicle', 'app_intervals', ARRAY['text'], 'pg_monitor', ARRAY['EXECUTE']);
SELECT function_privs_are('chronicle', 'app_summary', ARRAY['text'], 'pg_read_all_stats', ARRAY['EXECUTE']);
SELECT function_privs_are('chronicle', '_app_summary', ARRAY['integer'], 'pg_monitor', ARRAY['EXECUTE']);
SELECT function_privs_are('chronicle', '_app_summary', ARRAY['integer'], 'public', ARRAY[]::text[]);
SELECT function_privs_are('chronicle', 'statements_top', ARRAY['timestamp with time zone', 'timestamp with time zone', 'integer', 'text'],
                          'pg_monitor', ARRAY['EXECUTE']);
SELECT table_privs_are('chronicle', 'statements_text', 'public', ARRAY[]::text[]);

-- Contracts: errors with their codes.
SELECT throws_like($$SELECT * FROM chronicle.statements_top(now(), now() - interval '1 s')$$,
                   'chronicle.statements_top: the window ends % before it starts %',
                   'statements_top refuses a reversed range with the common window check');
SELECT throws_ok($$SELECT * FROM chronicle.statements_top(now(), now() - interval '1 s')$$,
                 '22000', NULL, 'a reversed window is data_exception, as everywhere');
SELECT throws_ok($$SELECT * FROM chronicle.app_intervals(now(), now() - interval '1 s')$$,
                 '22000', NULL, 'app_intervals: a reversed window is data_exception too');
SELECT throws_ok($$SELECT * FROM chronicle.statements_top(now() - interval '1 s', now(), 5, 'x')$$,
                 '22023', 'chronicle.statements_top: cannot order statements by "x"',
                 'statements_top refuses an unknown order');
SELECT throws_ok($$SELECT * FROM chronicle.app_intervals('no such run')$$,
                 '42704', 'chronicle.app_intervals: unknown run "no such run"', 'app_intervals: unknown run');
SELECT throws_ok($$SELECT * FROM chronicle.load_pgbench_log('r', 'relative')$$,
                 '22023', NULL, 'load_pgbench_log: a relative path is refused');
SELECT throws_ok($$SELECT * FROM chronicle.load_pgbench_lines('r')$$,
                 '55000', NULL, 'load_pgbench_lines without staged lines');
SELECT lives_ok($$SELECT chronicle.pgbench_staging()$$, 'the staging table is created');
INSERT INTO pg_temp.chronicle_pgbench_lines (file, line) VALUES ('f.1', '0 1 100 0 1795323562 5');
SELECT throws_ok($$SELECT * FROM chronicle.load_pgbench_lines('no such run')$$,
                 '42704', NULL, 'loading into an unknown run without create_run');
SELECT is((SELECT lines FROM chronicle.load_pgbench_lines('pgtap run', create_run => true)), 1::bigint,
          'create_run creates the run and loads the line');
SELECT is((SELECT latency_us FROM chronicle.app_transaction t JOIN chronicle.run r USING (run_id)
            WHERE r.label = 'pgtap run'), 100::bigint, 'the latency is stored in microseconds');

-- A parameter naming an existing run is "run"; only the functions that
-- create a run call theirs "label" (issue 15).  Named calls use the new name.
SELECT is((SELECT string_agg(p.proname, ',' ORDER BY p.proname) FROM pg_proc p
            WHERE p.pronamespace = 'chronicle'::regnamespace
              AND pg_get_function_arguments(p.oid) ~ '(^|, )(run_label|label) '),
          '_check_label,_import_run,_run_open,run_begin,run_label',
          'only the functions creating a run call their parameter label');
SELECT lives_ok($$SELECT chronicle.add_metric('pgtap.metric', 1, run => 'pgtap run')$$,
                'add_metric takes the run by name: run =>');
SELECT is((SELECT count(*) FROM chronicle.app_metric m JOIN chronicle.run r USING (run_id)
            WHERE m.name = 'pgtap.metric' AND r.label = 'pgtap run'), 1::bigint,
          'the metric is tied to the run named');
SELECT throws_ok($$SELECT chronicle.add_metric('pgtap.metric', 1, run_label => 'pgtap run')$$,
                 '42883', NULL, 'the 0.1.0 parameter name run_label is gone');

SELECT * FROM finish();
ROLLBACK;
