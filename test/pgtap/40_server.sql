-- pgTAP: the recording server's identity (docs/storage.md, "Server identity").
-- Checked against independent references: pg_control_system() for the
-- system identifier, cluster_name / chronicle.server_name for the name.
BEGIN;
SELECT plan(9);

SELECT has_function('chronicle', 'server', ARRAY[]::text[], 'function chronicle.server()');
SELECT function_privs_are('chronicle', 'server', ARRAY[]::text[], 'pg_monitor', ARRAY['EXECUTE'],
                          'pg_monitor may execute chronicle.server()');
SELECT function_privs_are('chronicle', 'server', ARRAY[]::text[], 'public', ARRAY[]::text[],
                          'PUBLIC may not execute chronicle.server()');

SELECT is((SELECT system_identifier FROM chronicle.server()),
          (SELECT system_identifier FROM pg_control_system()),
          'chronicle.server(): the system identifier of pg_control');

-- The name: chronicle.server_name, else cluster_name, else the host name
-- (both settings are server-wide; test/t/018_server_identity.pl changes them).
SELECT ok((SELECT name <> '' FROM chronicle.server()), 'the server has a name');
SELECT ok((SELECT name = coalesce(nullif(current_setting('chronicle.server_name'), ''),
                                  nullif(current_setting('cluster_name'), ''), name)
             FROM chronicle.server()),
          'the name is chronicle.server_name, else cluster_name');

-- Every snapshot row carries it.
SELECT lives_ok('SELECT chronicle.snapshot()', 'a snapshot from SQL');
SELECT is((SELECT system_identifier FROM chronicle.snapshot ORDER BY ts DESC LIMIT 1),
          (SELECT system_identifier FROM pg_control_system()),
          'the snapshot row carries the system identifier');
SELECT is((SELECT server_name FROM chronicle.snapshot ORDER BY ts DESC LIMIT 1), (SELECT name FROM chronicle.server()),
          'the snapshot row carries the server name');

SELECT * FROM finish();
ROLLBACK;
