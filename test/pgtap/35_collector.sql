-- pgTAP: the collector's SQL contracts: start()/stop() on a preloaded server,
-- the standby ring functions on a primary, their errors and privileges.
BEGIN;
SELECT plan(17);

SELECT has_function('chronicle', 'start', ARRAY[]::text[]);
SELECT has_function('chronicle', 'stop', ARRAY[]::text[]);
SELECT has_function('chronicle', 'standby_history', ARRAY['text']);
SELECT has_function('chronicle', 'standby_ring', ARRAY[]::text[]);

-- Starting and stopping workers is for superusers only.
SELECT function_privs_are('chronicle', 'start', ARRAY[]::text[], 'pg_monitor', ARRAY[]::text[]);
SELECT function_privs_are('chronicle', 'stop', ARRAY[]::text[], 'pg_monitor', ARRAY[]::text[]);
SELECT function_privs_are('chronicle', 'standby_history', ARRAY['text'], 'pg_monitor', ARRAY['EXECUTE']);
SELECT function_privs_are('chronicle', 'standby_ring', ARRAY[]::text[], 'pg_monitor', ARRAY['EXECUTE']);
SELECT function_privs_are('chronicle', 'standby_ring', ARRAY[]::text[], 'public', ARRAY[]::text[]);

-- This instance preloads pg_chronicle: start() starts nothing, stop() refuses.
SELECT is((SELECT started FROM chronicle.start() WHERE worker = 'collector'), false,
          'start() on a preloaded server starts nothing');
SELECT throws_ok('SELECT * FROM chronicle.stop()', '55000', NULL,
                 'stop() refuses to stop the preloaded collector');

-- The standby ring on a primary: empty, and says it is not in recovery.
SELECT is((SELECT (snapshots, in_recovery) FROM chronicle.standby_ring()),
          ROW(0::bigint, false), 'standby_ring() on a primary: empty, not in recovery');
SELECT is((SELECT count(*) FROM chronicle.standby_history('io')), 0::bigint,
          'standby_history() on a primary returns nothing');
SELECT throws_ok($$SELECT * FROM chronicle.standby_history('nosuch')$$, '22023', NULL,
                 'standby_history() refuses an unknown source');
SELECT throws_ok('SELECT * FROM chronicle.standby_history(NULL)', '22004', NULL,
                 'standby_history() refuses NULL');

-- The ring's size is fixed at server start when preloaded.
SELECT is((SELECT context FROM pg_settings WHERE name = 'chronicle.standby_ring_size'),
          'postmaster', 'chronicle.standby_ring_size needs a restart');
SELECT is((SELECT bytes_total FROM chronicle.standby_ring()),
          (SELECT setting::bigint * 1024 FROM pg_settings WHERE name = 'chronicle.standby_ring_size'),
          'the ring has the configured size');

SELECT * FROM finish();
ROLLBACK;
