-- pgTAP: schema, privileges and function contracts of pg_chronicle.
BEGIN;
SELECT plan(24);

SELECT has_schema('chronicle');
SELECT has_table('chronicle', 'snapshot', 'table chronicle.snapshot');
SELECT has_view('chronicle', t, 'history view chronicle.' || t)
  FROM unnest(ARRAY['io_history', 'wal_history', 'checkpointer_history',
                    'bgwriter_history', 'database_history']) AS t;
SELECT has_function('chronicle', 'snapshot', ARRAY[]::text[]);
SELECT has_function('chronicle', 'status', ARRAY[]::text[]);
SELECT has_function('chronicle', 'maintain', ARRAY['interval']);

-- Keys of pg_stat_io are stored as names, never enum integers.
SELECT col_type_is('chronicle', 'io_history', 'backend_type', 'text', 'io_history.backend_type is a name');
SELECT col_type_is('chronicle', 'io_history', 'object', 'text', 'io_history.object is a name');
SELECT col_type_is('chronicle', 'io_history', 'context', 'text', 'io_history.context is a name');

-- Privileges: monitoring roles read history, PUBLIC does not.
SELECT schema_privs_are('chronicle', 'public', ARRAY[]::text[]);
SELECT schema_privs_are('chronicle', 'pg_monitor', ARRAY['USAGE']);
SELECT table_privs_are('chronicle', 'io_history', 'pg_monitor', ARRAY['SELECT']);
SELECT table_privs_are('chronicle', 'io_history', 'pg_read_all_stats', ARRAY['SELECT']);
SELECT table_privs_are('chronicle', 'io_history', 'public', ARRAY[]::text[]);
SELECT function_privs_are('chronicle', 'snapshot', ARRAY[]::text[], 'pg_monitor', ARRAY[]::text[]);
SELECT function_privs_are('chronicle', 'status', ARRAY[]::text[], 'pg_monitor', ARRAY['EXECUTE']);

-- Contracts.
SELECT throws_ok($$SELECT chronicle.ensure_partitions('2020-01-02', '2020-01-01')$$,
                 '22000', NULL, 'a reversed range is refused with data_exception');
SELECT throws_ok($$SELECT * FROM chronicle.maintain('-1 day')$$,
                 '22023', NULL, 'a negative retention is refused');
SELECT isnt(chronicle.snapshot(), NULL, 'snapshot() returns its timestamp');
SELECT is((SELECT keyframe FROM chronicle.snapshot ORDER BY ts DESC LIMIT 1), true,
          'a snapshot taken from SQL is a keyframe');

SELECT * FROM finish();
ROLLBACK;
