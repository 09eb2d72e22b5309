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
