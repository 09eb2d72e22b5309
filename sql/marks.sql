-- Marks: chronicle.mark() records an event named by a script, and
-- chronicle.marks() lists it beside the events the history holds
-- (checkpoints, recordings that start), in time order.
\pset null NULL
\ir sql/include/err.sql

-- Snapshots from SQL (the worker is off here), a checkpoint requested
-- between the second and the third.
SELECT clock_timestamp() AS t0 \gset
SELECT chronicle.snapshot() IS NOT NULL AS first;
SELECT pg_sleep(0.05);
SELECT ts AS t_mark FROM chronicle.mark('before the checkpoint') \gset
SELECT chronicle.snapshot() IS NOT NULL AS second;
CHECKPOINT;
SELECT pg_sleep(0.05);
SELECT chronicle.snapshot() IS NOT NULL AS third;
-- three snapshots 50 ms apart, then a late one
SELECT clock_timestamp() AS t3 \gset
SELECT pg_sleep(0.05), chronicle.snapshot() IS NOT NULL AS fourth;
SELECT pg_sleep(0.05), chronicle.snapshot() IS NOT NULL AS fifth;
SELECT pg_sleep(0.05), chronicle.snapshot() IS NOT NULL AS sixth;
SELECT pg_sleep(0.5), chronicle.snapshot() IS NOT NULL AS late;
SELECT (chronicle.mark('after the checkpoint')).event;
SELECT clock_timestamp() + interval '1 hour' AS t1 \gset

-- A mark at a time the caller knew: between the first two snapshots.
SELECT event, ts = :'t_mark'::timestamptz - interval '1 millisecond' AS at_given
  FROM chronicle.mark('COPY started', :'t_mark'::timestamptz - interval '1 millisecond');

-- The window's events, oldest first; the checkpoint counted in the third
-- snapshot's interval (its end only on 18, which counts checkpoints done).
-- (A recording that starts is a mark too: test/t/045_rollups.pl restarts
-- the collector.)
SELECT kind, event, owner IS NOT NULL AS has_owner, mark_id IS NOT NULL AS has_id
  FROM chronicle.marks(:'t0', :'t1')
 WHERE kind NOT IN ('checkpoint_end', 'recording_start', 'long_interval');
SELECT count(*) = CASE WHEN current_setting('server_version_num')::int >= 180000 THEN 1 ELSE 0 END
       AS checkpoint_end_on_18
  FROM chronicle.marks(:'t0', :'t1') WHERE kind = 'checkpoint_end';
-- Each checkpoint mark is the end of the interval it was counted in.
SELECT count(*) > 0 AND bool_and(m.ts IN (SELECT s.ts FROM chronicle.snapshot s)) AS at_snapshots
  FROM chronicle.marks(:'t0', :'t1') m WHERE m.kind LIKE 'checkpoint%';
-- The late interval is a long one (more than twice the median of the
-- window's intervals), with its length; and the long intervals are those
-- the snapshots' own times say are (on a machine busy enough to delay a
-- 50 ms interval past twice the median, there may be more than one).
SELECT m.event ~ '^long interval: (0\.[5-9]\d|[1-9][\d.]*) s \(the window''s median is 0\.\d\d s\): the collector was late$'
         AS the_late_one
  FROM chronicle.marks(:'t3', :'t1') m
 WHERE m.kind = 'long_interval' AND m.ts = (SELECT max(s.ts) FROM chronicle.snapshot s);
SELECT (SELECT count(*) FROM chronicle.marks(:'t3', :'t1') m WHERE m.kind = 'long_interval')
       = (SELECT count(*) FROM (SELECT extract(epoch FROM s.ts - lag(s.ts) OVER (ORDER BY s.ts)) AS secs
                                  FROM chronicle.snapshot s WHERE s.ts <= :'t1'
                                   AND s.ts >= (SELECT max(p.ts) FROM chronicle.snapshot p WHERE p.ts <= :'t3')) x
           WHERE x.secs > 2 * (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY y.secs)
                                 FROM (SELECT extract(epoch FROM s.ts - lag(s.ts) OVER (ORDER BY s.ts)) AS secs
                                         FROM chronicle.snapshot s WHERE s.ts <= :'t1'
                                          AND s.ts >= (SELECT max(p.ts) FROM chronicle.snapshot p WHERE p.ts <= :'t3')) y
                                WHERE y.secs IS NOT NULL))
       AS as_the_snapshots_say;
-- A window is (from, to]: a mark at its start is left out, at its end kept.
SELECT count(*) AS at_from FROM chronicle.marks(:'t_mark', :'t1') WHERE event = 'before the checkpoint';
SELECT count(*) AS at_to FROM chronicle.marks(:'t0', :'t_mark') WHERE event = 'before the checkpoint';

-- Over a run.
SELECT label FROM chronicle.run_label('marked run', :'t0', :'t1');
SELECT kind, event FROM chronicle.run_marks('marked run') WHERE kind = 'mark';
SELECT split_part(pg_temp.err($$SELECT * FROM chronicle.run_marks('no such run')$$), ' / ', 1);

-- Bad input: a clear error, nothing recorded.
SELECT pg_temp.err($$SELECT chronicle.mark(NULL)$$);
SELECT pg_temp.err($$SELECT chronicle.mark('  ')$$);
SELECT pg_temp.err($$SELECT chronicle.mark(repeat('x', 201))$$);
SELECT pg_temp.err($$SELECT chronicle.mark('x', 'infinity')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.marks('2026-01-02 UTC', '2026-01-01 UTC')$$);
SELECT pg_temp.err($$SELECT chronicle.mark_delete(-1)$$);
SELECT count(*) AS marks FROM chronicle.mark;
-- Text is data: an event is kept as given.
SELECT (chronicle.mark(E'<b>"quoted"</b>; DROP TABLE x; \u00e9\t')).event = E'<b>"quoted"</b>; DROP TABLE x; \u00e9\t' AS kept;

-- A mark belongs to the role that made it: another monitoring role cannot
-- delete it; the role itself can.
CREATE ROLE regress_chronicle_marker LOGIN IN ROLE pg_monitor;
CREATE ROLE regress_chronicle_other LOGIN IN ROLE pg_monitor;
SET SESSION AUTHORIZATION regress_chronicle_marker;
SELECT mark_id AS own_mark FROM chronicle.mark('marker''s mark') \gset
SELECT pg_temp.err($$INSERT INTO chronicle.mark (ts, event, owner) VALUES (now(), 'forged', 'x')$$);
SET SESSION AUTHORIZATION regress_chronicle_other;
SELECT pg_temp.err(format('SELECT chronicle.mark_delete(%s)', :own_mark));
SET SESSION AUTHORIZATION regress_chronicle_marker;
SELECT event, owner FROM chronicle.mark_delete(:own_mark);
RESET SESSION AUTHORIZATION;
SELECT count(*) AS left_behind FROM chronicle.mark WHERE event = 'marker''s mark';
SELECT chronicle.run_delete('marked run') IS NOT NULL AS deleted;
DELETE FROM chronicle.mark;
DROP ROLE regress_chronicle_marker, regress_chronicle_other;

-- VACUUM and ANALYZE runs (the maintenance source; test/t/055_vacuum.pl
-- records real ones) on rows written here, on a day of their own:
--   pid 101, an autovacuum VACUUM of pgbench_accounts from 10:00:00.5
--     (its activity's start), gone at the 10:00:03 snapshot, then the
--     ANALYZE of the same activity, first seen at 10:00:03.001 and gone at
--     10:00:05 (that row written in another time zone: the same key);
--   pid 202, a manual VACUUM of a relation whose name is markup, in a
--     database since dropped (datname NULL), from 10:00:03.5, never seen
--     ending;
--   pid 303, an autovacuum to prevent wraparound of a relation whose name
--     is unknown, which started before the window read below.
SELECT chronicle.ensure_partitions('2024-05-07', '2024-05-07') >= 0 AS partitions;
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT t, '2024-05-07 09:59:59+00', false, 'sql', 0, 0, 0, 0
  FROM generate_series(timestamptz '2024-05-07 09:59:59+00', '2024-05-07 10:00:06+00', interval '1 s') t;
SET timezone = 'UTC';
INSERT INTO chronicle.maintenance_history (ts, pid, activity_start, relid, command, datname, relation,
                                           autovacuum, wraparound, started, phase, heap_blks_total,
                                           heap_blks_scanned, ended) VALUES
 ('2024-05-07 09:59:59', 303, '2024-05-07 09:59:58', 16999, 'VACUUM', 'bench', NULL, true, true,
  '2024-05-07 09:59:58', 'scanning heap', 10, 1, NULL),
 ('2024-05-07 10:00:01', 101, '2024-05-07 10:00:00.5', 16384, 'VACUUM', 'bench', 'public.pgbench_accounts',
  true, false, '2024-05-07 10:00:00.5', 'scanning heap', 100, 10, NULL),
 ('2024-05-07 10:00:02', 101, '2024-05-07 10:00:00.5', 16384, 'VACUUM', 'bench', 'public.pgbench_accounts',
  true, false, '2024-05-07 10:00:00.5', 'vacuuming heap', 100, 100, NULL),
 ('2024-05-07 10:00:02', 303, '2024-05-07 09:59:58', 16999, 'VACUUM', 'bench', NULL, true, true,
  '2024-05-07 09:59:58', 'scanning heap', 10, 10, '2024-05-07 10:00:02.001'),
 ('2024-05-07 10:00:03', 101, '2024-05-07 10:00:00.5', 16384, 'VACUUM', 'bench', 'public.pgbench_accounts',
  true, false, '2024-05-07 10:00:00.5', 'vacuuming heap', 100, 100, '2024-05-07 10:00:03.001'),
 ('2024-05-07 10:00:03', 101, '2024-05-07 10:00:00.5', 16384, 'ANALYZE', 'bench', 'public.pgbench_accounts',
  true, false, '2024-05-07 10:00:03.001', 'acquiring sample rows', NULL, NULL, NULL),
 ('2024-05-07 10:00:04', 202, '2024-05-07 10:00:03.5', 16400, 'VACUUM', NULL, '<b>s</b>."t&amp;"',
  false, false, '2024-05-07 10:00:03.5', 'scanning heap', 5, 1, NULL);
SET timezone = 'America/New_York';
INSERT INTO chronicle.maintenance_history (ts, pid, activity_start, relid, command, datname, relation,
                                           autovacuum, wraparound, started, phase, ended) VALUES
 ('2024-05-07 10:00:05+00', 101, '2024-05-07 10:00:00.5+00', 16384, 'ANALYZE', 'bench', 'public.pgbench_accounts',
  true, false, '2024-05-07 10:00:03.001+00', 'computing statistics', '2024-05-07 10:00:05.002+00');
SET timezone = 'UTC';
-- One key a run, whatever the time zone its rows were written in.
SELECT count(*) AS maintenance_keys FROM chronicle.history_key WHERE source = 'maintenance';
SELECT pid, activity_start, command, count(*) AS nrows
  FROM chronicle.maintenance_history WHERE ts::date = '2024-05-07' GROUP BY 1, 2, 3 ORDER BY 1, 3;
-- The marks: a start at started, an end at the snapshot that wrote ended;
-- the text names the relation as recorded (markup is data: the report
-- escapes it), or its relid.
SELECT ts, kind, event FROM chronicle.marks('2024-05-07 10:00:00', '2024-05-07 10:00:10')
 WHERE kind ~ '^(vacuum|analyze)_' ORDER BY ts, kind;
-- (from, to]: the vacuum's start at 10:00:00.5 is left out, its end kept;
-- pid 202's start at 10:00:03.5, first seen by the 10:00:04 snapshot after
-- the window, is kept: the rows are read up to the first snapshot after it.
SELECT ts, kind FROM chronicle.marks('2024-05-07 10:00:00.5', '2024-05-07 10:00:03.7')
 WHERE kind ~ '^(vacuum|analyze)_' ORDER BY ts, kind;
DELETE FROM chronicle.history WHERE ts::date = '2024-05-07';
DELETE FROM chronicle.snapshot WHERE ts::date = '2024-05-07';
RESET timezone;
