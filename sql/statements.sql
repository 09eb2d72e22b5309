-- pg_stat_statements history: deltas between two times across evictions
-- and resets, from rows inserted by hand.
\set VERBOSITY terse

-- Without pg_stat_statements preloaded the source records nothing, quietly.
SELECT chronicle.snapshot() AS ts \gset
SELECT errors FROM chronicle.snapshot WHERE ts = :'ts';
SELECT count(*) AS rows FROM chronicle.statements_history WHERE ts = :'ts';

SELECT chronicle.ensure_partitions('2020-02-01', '2020-02-02') > 0 AS partitions;
-- Statement 1: steady.  Statement 2: evicted after 10:00:02 and re-added
-- (counters back to small values, new stats_since).  Statement 3: created
-- inside the range (its first row counts from zero).  Statement 4: only
-- before the range.  Statement 5: recorded before and unchanged since:
-- outside the top N in between, then recorded again with its whole growth.
INSERT INTO chronicle.statements_history
	(ts, userid, dbid, queryid, toplevel, calls, total_exec_time, rows,
	 shared_blks_hit, shared_blks_read, wal_bytes, stats_since)
VALUES
 ('2020-02-01 10:00:00+00', 10, 1, 1, true, 100, 1000.0, 100, 500, 50, 1000, '2020-02-01 09:00:00+00'),
 ('2020-02-01 10:00:01+00', 10, 1, 1, true, 150, 1500.0, 150, 750, 75, 1500, '2020-02-01 09:00:00+00'),
 ('2020-02-01 10:00:03+00', 10, 1, 1, true, 200, 2000.0, 200, 1000, 100, 2000, '2020-02-01 09:00:00+00'),
 ('2020-02-01 10:00:00+00', 10, 1, 2, true, 1000, 50.0, 10, 10, 1, 0, '2020-02-01 09:00:00+00'),
 ('2020-02-01 10:00:02+00', 10, 1, 2, true, 1010, 60.0, 11, 12, 1, 0, '2020-02-01 09:00:00+00'),
 ('2020-02-01 10:00:03+00', 10, 1, 2, true, 5, 7.0, 5, 3, 0, 0, '2020-02-01 10:00:02.5+00'),
 ('2020-02-01 10:00:04+00', 10, 1, 2, true, 8, 9.0, 8, 4, 0, 0, '2020-02-01 10:00:02.5+00'),
 ('2020-02-01 10:00:02+00', 10, 1, 3, false, 3, 30.0, 3, 3, 0, 0, '2020-02-01 10:00:01.5+00'),
 ('2020-02-01 10:00:04+00', 10, 1, 3, false, 4, 40.0, 4, 4, 0, 0, '2020-02-01 10:00:01.5+00'),
 ('2020-02-01 09:59:00+00', 10, 1, 4, true, 9, 9.0, 9, 9, 9, 9, '2020-02-01 09:00:00+00'),
 ('2020-02-01 09:59:30+00', 10, 1, 5, true, 20, 200.0, 20, 20, 2, 0, '2020-02-01 09:00:00+00'),
 ('2020-02-01 10:00:04+00', 10, 1, 5, true, 30, 320.0, 30, 30, 3, 0, '2020-02-01 09:00:00+00');
INSERT INTO chronicle.statements_text (dbid, queryid, query)
VALUES (1, 1, 'SELECT 1'), (1, 2, 'UPDATE t SET x = $1');

SELECT queryid, toplevel, calls, total_exec_time, mean_exec_time, rows,
       shared_blks_hit, shared_blks_read, wal_bytes, resets, query
  FROM chronicle.statements_top('2020-02-01 10:00:00+00', '2020-02-01 10:00:05+00');
-- A window that starts between two snapshots counts its first interval
-- whole: statement 6, created at 11:00:00.3 (after the snapshot at
-- 11:00:00, before the window's start at 11:00:00.5) and first recorded
-- at 11:00:01, counts from zero.
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
VALUES ('2020-02-01 11:00:00+00', '2020-02-01 11:00:00+00', true, 'sql', 0, 0, 0, 0),
       ('2020-02-01 11:00:01+00', '2020-02-01 11:00:00+00', false, 'sql', 0, 0, 0, 0);
INSERT INTO chronicle.statements_history
	(ts, userid, dbid, queryid, toplevel, calls, total_exec_time, rows,
	 shared_blks_hit, shared_blks_read, wal_bytes, stats_since)
VALUES ('2020-02-01 11:00:01+00', 10, 1, 6, true, 7, 70.0, 7, 7, 0, 700, '2020-02-01 11:00:00.3+00');
SELECT queryid, calls, wal_bytes
  FROM chronicle.statements_top('2020-02-01 11:00:00.5+00', '2020-02-01 11:00:02+00');
-- A shorter range: the baseline is the last row at or before its start.
SELECT queryid, calls, total_exec_time, resets
  FROM chronicle.statements_top('2020-02-01 10:00:02+00', '2020-02-01 10:00:03+00');
-- Ordered by another counter, limited.
SELECT queryid, calls FROM chronicle.statements_top('2020-02-01 10:00:00+00', '2020-02-01 10:00:05+00', 2, 'calls');
-- Bad arguments.
SELECT * FROM chronicle.statements_top('2020-02-01 10:00:05+00', '2020-02-01 10:00:00+00');
SELECT * FROM chronicle.statements_top(NULL, now());
SELECT * FROM chronicle.statements_top(now() - interval '1 s', now(), 0);
SELECT * FROM chronicle.statements_top(now() - interval '1 s', now(), 5, 'query; DROP TABLE x');
