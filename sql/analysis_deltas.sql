-- Per-interval deltas, totals and the timeline on history rows inserted
-- here (the worker is off in this instance), every expected value computed
-- by hand in the comments.
\set VERBOSITY terse
\pset null NULL
SET timezone = 'UTC';
SELECT chronicle.ensure_partitions('2024-03-01', '2024-03-01') >= 0 AS partitions;

-- Two recordings: segment A 10:00:00 .. 10:00:06 (1 s apart), segment B
-- 10:01:00, 10:01:01, 10:01:03 (a 2 s interval).  The gap between them is
-- never an interval.
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT t::timestamptz, s::timestamptz, t = s, 'sql', 0, 0, 0, 0
  FROM (VALUES ('2024-03-01 10:00:00', '2024-03-01 10:00:00'), ('2024-03-01 10:00:01', '2024-03-01 10:00:00'),
               ('2024-03-01 10:00:02', '2024-03-01 10:00:00'), ('2024-03-01 10:00:03', '2024-03-01 10:00:00'),
               ('2024-03-01 10:00:04', '2024-03-01 10:00:00'), ('2024-03-01 10:00:05', '2024-03-01 10:00:00'),
               ('2024-03-01 10:00:06', '2024-03-01 10:00:00'),
               ('2024-03-01 10:01:00', '2024-03-01 10:01:00'), ('2024-03-01 10:01:01', '2024-03-01 10:01:00'),
               ('2024-03-01 10:01:03', '2024-03-01 10:01:00')) v(t, s);

SELECT * FROM chronicle.intervals('2024-03-01', '2024-03-02');
SELECT * FROM chronicle.segments('2024-03-01', '2024-03-02');
-- A window starting mid-segment starts at the next interval.
SELECT interval_start, interval_end FROM chronicle.intervals('2024-03-01 10:00:03.5', '2024-03-01 10:00:05');

-- pg_stat_io, sparse: a row only when it changed.
--   client backend/relation/normal: +10 reads (10 ms, 0.5 ms/read), +100 hits
--     at :02; stats_reset changed at :04 (reset); +3 reads at :05; in B, reads
--     go backwards at 10:01:03 (reset).
--   checkpointer/relation/normal: reads untracked (NULL); +4 writes at :03;
--     nothing in segment B.
--   autovacuum worker/relation/vacuum: appears at :03, after the keyframe
--     of :00: pg_stat_io keys are not born at zero (its counters did not
--     start then), so a baseline, no delta; +2 reads at :05.
--   client backend/relation/bulkread: PostgreSQL 17 style, no byte counters:
--     +2 reads at :01 = 2 * op_bytes = 16384 bytes.
INSERT INTO chronicle.io_history (ts, backend_type, object, context, reads, read_bytes, read_time,
                                  writes, write_bytes, hits, op_bytes, stats_reset) VALUES
 ('2024-03-01 10:00:00', 'client backend', 'relation', 'normal', 100, 819200, 10, 10, 81920, 1000, NULL, '2024-01-01'),
 ('2024-03-01 10:00:00', 'checkpointer', 'relation', 'normal', NULL, NULL, NULL, 5, 40960, NULL, NULL, '2024-01-01'),
 ('2024-03-01 10:00:00', 'client backend', 'relation', 'bulkread', 1, NULL, 0, 0, NULL, 0, 8192, '2024-01-01'),
 ('2024-03-01 10:00:01', 'client backend', 'relation', 'bulkread', 3, NULL, 0, 0, NULL, 0, 8192, '2024-01-01'),
 ('2024-03-01 10:00:02', 'client backend', 'relation', 'normal', 110, 901120, 15, 10, 81920, 1100, NULL, '2024-01-01'),
 ('2024-03-01 10:00:03', 'checkpointer', 'relation', 'normal', NULL, NULL, NULL, 9, 73728, NULL, NULL, '2024-01-01'),
 ('2024-03-01 10:00:03', 'autovacuum worker', 'relation', 'vacuum', 7, 57344, 1, 0, 0, 0, NULL, '2024-01-01'),
 ('2024-03-01 10:00:04', 'client backend', 'relation', 'normal', 5, 40960, 1, 0, 0, 50, NULL, '2024-03-01 10:00:03.5'),
 ('2024-03-01 10:00:05', 'client backend', 'relation', 'normal', 8, 65536, 2, 0, 0, 60, NULL, '2024-03-01 10:00:03.5'),
 ('2024-03-01 10:00:05', 'autovacuum worker', 'relation', 'vacuum', 9, 73728, 1, 0, 0, 0, NULL, '2024-01-01'),
 ('2024-03-01 10:01:00', 'client backend', 'relation', 'normal', 50, 409600, 5, 1, 8192, 100, NULL, '2024-03-01 10:00:03.5'),
 ('2024-03-01 10:01:03', 'client backend', 'relation', 'normal', 40, 327680, 5, 1, 8192, 100, NULL, '2024-03-01 10:00:03.5');

-- Every interval, every key alive: unchanged keys have 0 (NULL where the
-- view has NULL), resets are flagged with NULL deltas.
SELECT to_char(interval_start, 'HH24:MI:SS') AS start, to_char(interval_end, 'HH24:MI:SS') AS "end",
       seconds, backend_type, context, reset, reads, reads_per_s, read_bytes, writes, hits, ms_per_read
  FROM chronicle.io_deltas('2024-03-01', '2024-03-02');

-- Only the stored rows (what aggregations use).
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", backend_type, context, reset, reads, writes
  FROM chronicle.io_deltas('2024-03-01', '2024-03-02', changed_only => true);

-- A window starting after the rows it needs: baselines come from before it.
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", backend_type, context, reset, reads, writes
  FROM chronicle.io_deltas('2024-03-01 10:00:03', '2024-03-01 10:00:06');

-- Key filters.
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", backend_type, writes, write_bytes, write_bytes_per_s
  FROM chronicle.io_deltas('2024-03-01', '2024-03-02', for_backend_type => 'checkpointer');
SELECT count(*) AS bulkread_rows
  FROM chronicle.io_deltas('2024-03-01', '2024-03-02', for_context => 'bulkread');

-- Totals: sums of the deltas, rates over the 9 recorded seconds (6 in A,
-- 3 in B); client backend normal: 10 + 3 reads, two resets.  intervals:
-- those each key counts in, from its first row on: client backend normal
-- all 8 (6 in A, 2 in B), the checkpointer and bulkread the 6 of A (no row
-- in B), the autovacuum key the 3 after its first row (:03).
SELECT seconds, intervals, backend_type, context, resets, reads, round(reads_per_s::numeric, 4) AS reads_per_s,
       read_bytes, writes, hits, round(ms_per_read::numeric, 4) AS ms_per_read
  FROM chronicle.io_totals('2024-03-01', '2024-03-02');
SELECT backend_type, writes FROM chronicle.io_totals('2024-03-01', '2024-03-02', 'checkpointer');
-- Without a reset in the window, totals telescope (last value - baseline):
-- 10 reads (client normal), 2 (bulkread), 4 checkpointer writes; the
-- autovacuum key's first row at :03 is its baseline.
SELECT backend_type, context, resets, reads, read_bytes, writes, hits, ms_per_read
  FROM chronicle.io_totals('2024-03-01 10:00:00', '2024-03-01 10:00:03');
-- ... and equal the sums of the per-interval deltas (NULL where the view
-- has NULL: the checkpointer's reads and hits are untracked).
SELECT count(*) AS mismatches
  FROM chronicle.io_totals('2024-03-01 10:00:00', '2024-03-01 10:00:03') t
  JOIN (SELECT backend_type, object, context, sum(reads) AS reads, sum(read_bytes) AS read_bytes,
               sum(writes) AS writes, sum(hits) AS hits
          FROM chronicle.io_deltas('2024-03-01 10:00:00', '2024-03-01 10:00:03', changed_only => true)
         GROUP BY 1, 2, 3) d USING (backend_type, object, context)
 WHERE (t.reads, t.read_bytes, t.writes, t.hits) IS DISTINCT FROM (d.reads, d.read_bytes, d.writes, d.hits);

-- pg_stat_wal (one row per snapshot, sparse): +10 records/2000 bytes at :02,
-- +5/1000 at :03, stats_reset changed at :05 (reset), unchanged at :06
-- (carried), in B: +10/900 over the 2 s interval, no row at 10:01:01.
INSERT INTO chronicle.wal_history (ts, wal_records, wal_fpi, wal_bytes, wal_write, wal_write_time, stats_reset) VALUES
 ('2024-03-01 10:00:00', 10, 1, 1000, 4, 2, '2024-01-01'),
 ('2024-03-01 10:00:02', 20, 3, 3000, 8, 4, '2024-01-01'),
 ('2024-03-01 10:00:03', 25, 3, 4000, 9, 4.5, '2024-01-01'),
 ('2024-03-01 10:00:05', 5, 0, 100, 1, 0.1, '2024-03-01 10:00:04.5'),
 ('2024-03-01 10:01:00', 50, 5, 9000, 10, 1, '2024-03-01 10:00:04.5'),
 ('2024-03-01 10:01:03', 60, 5, 9900, 12, 2, '2024-03-01 10:00:04.5');
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", seconds, reset, wal_records, wal_fpi, wal_bytes,
       wal_bytes_per_s, wal_write, ms_per_write
  FROM chronicle.wal_deltas('2024-03-01', '2024-03-02');
-- Mid-segment window: the baseline is the row of :00 for the interval ending :02.
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", wal_bytes
  FROM chronicle.wal_deltas('2024-03-01 10:00:01', '2024-03-01 10:00:03');
SELECT seconds, intervals, resets, wal_records, wal_bytes, wal_bytes_per_s, ms_per_write
  FROM chronicle.wal_totals('2024-03-01', '2024-03-02');

-- pg_stat_database: datname is carried, filters by name; a database created
-- mid-segment (datid 5, absent from the keyframe of :00) is born at zero:
-- its first row at :04 counts from zero (3 commits).
INSERT INTO chronicle.database_history (ts, datid, datname, xact_commit, xact_rollback, blks_read, blks_hit, stats_reset) VALUES
 ('2024-03-01 10:00:00', 1, 'bench', 100, 0, 10, 90, NULL),
 ('2024-03-01 10:00:02', 1, 'bench', 150, 1, 10, 190, NULL),
 ('2024-03-01 10:00:04', 5, 'late', 3, 0, 0, 0, NULL),
 ('2024-03-01 10:00:06', 5, 'late', 4, 0, 0, 0, NULL),
 ('2024-03-01 10:00:06', 1, 'bench', 160, 1, 20, 200, NULL);
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", datid, datname, reset, xact_commit, xact_commit_per_s, blks_hit
  FROM chronicle.database_deltas('2024-03-01', '2024-03-01 10:00:30');
SELECT datname, xact_commit, blks_hit, blks_read
  FROM chronicle.database_totals('2024-03-01', '2024-03-01 10:00:30', for_datname => 'bench');
-- Totals of the new database: 3 + 1 commits, by the shortcut (no reset) and
-- equal to the deltas; a window starting after its first row has that row
-- as its baseline (1 commit).
SELECT datname, xact_commit, blks_hit, blks_read
  FROM chronicle.database_totals('2024-03-01', '2024-03-01 10:00:30', for_datname => 'late');
SELECT sum(xact_commit) AS late_commits
  FROM chronicle.database_deltas('2024-03-01', '2024-03-01 10:00:30', for_datname => 'late', changed_only => true);
SELECT datname, xact_commit
  FROM chronicle.database_totals('2024-03-01 10:00:04', '2024-03-01 10:00:30', for_datname => 'late');

-- Gauges: buffers carried forward between rows, no deltas.
INSERT INTO chronicle.buffers_history (ts, buffers_total, buffers_used, buffers_unused, buffers_dirty, buffers_pinned) VALUES
 ('2024-03-01 10:00:00', 100, 10, 90, 1, 0),
 ('2024-03-01 10:00:03', 100, 20, 80, 7, 1),
 ('2024-03-01 10:01:03', 100, 30, 70, 2, 0);
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", buffers_used, buffers_dirty
  FROM chronicle.buffers_values('2024-03-01', '2024-03-02');

-- Waits: samples per key (sparse), sampler ticks for coverage.  In the
-- interval ending :02, 10 ticks due and 8 taken; client backends: 6 samples
-- of IO:DataFileRead, 2 of CPU; idle sessions (ClientRead) left out.  At :03
-- a new key (query id 2 in LWLock:WALWrite) appears after the keyframe of
-- :00: the sampler's keys are born at zero, so its 1 sample counts.  The
-- sampler's per-class counts of active sessions saw the same samples:
-- active sessions at :02 (2 + 6) / 8 = 1, at :03 (1 + 1) / 10.  The
-- checkpointer throttling its writes (Timeout:CheckpointWriteDelay) is not
-- active; the one sample of it writing (IO:DataFileWrite) at :03 is
-- background work, not a session: background_active.
INSERT INTO chronicle.wait_sampler_history (ts, ticks_due, ticks_taken, samples_dropped, sampler_started,
                                            active_cpu, active_io, active_lwlock, active_lock, active_ipc,
                                            active_client, active_timeout, active_other, background_active) VALUES
 ('2024-03-01 10:00:00', 100, 100, 0, '2024-03-01 09:00', 20, 50, 0, 0, 0, 0, 0, 0, 0),
 ('2024-03-01 10:00:02', 110, 108, 0, '2024-03-01 09:00', 22, 56, 0, 0, 0, 0, 0, 0, 0),
 ('2024-03-01 10:00:03', 120, 118, 0, '2024-03-01 09:00', 22, 57, 1, 0, 0, 0, 0, 0, 1);
INSERT INTO chronicle.waits_history (ts, backend_type, state, wait_event_type, wait_event, queryid, samples) VALUES
 ('2024-03-01 10:00:00', 'client backend', 'active', 'IO', 'DataFileRead', 1, 50),
 ('2024-03-01 10:00:00', 'client backend', 'active', 'CPU', 'CPU', 1, 20),
 ('2024-03-01 10:00:00', 'client backend', 'idle', 'Client', 'ClientRead', 0, 500),
 ('2024-03-01 10:00:00', 'checkpointer', '', 'Timeout', 'CheckpointWriteDelay', 0, 300),
 ('2024-03-01 10:00:02', 'client backend', 'active', 'IO', 'DataFileRead', 1, 56),
 ('2024-03-01 10:00:02', 'client backend', 'active', 'CPU', 'CPU', 1, 22),
 ('2024-03-01 10:00:02', 'client backend', 'idle', 'Client', 'ClientRead', 0, 510),
 ('2024-03-01 10:00:02', 'checkpointer', '', 'Timeout', 'CheckpointWriteDelay', 0, 308),
 ('2024-03-01 10:00:03', 'client backend', 'active', 'LWLock', 'WALWrite', 2, 1),
 ('2024-03-01 10:00:03', 'client backend', 'active', 'IO', 'DataFileRead', 1, 57),
 ('2024-03-01 10:00:03', 'checkpointer', '', 'Timeout', 'CheckpointWriteDelay', 0, 317),
 ('2024-03-01 10:00:03', 'checkpointer', '', 'IO', 'DataFileWrite', 0, 1);
SELECT * FROM chronicle.wait_profile('2024-03-01 10:00:00', '2024-03-01 10:00:03');
SELECT backend_type, state, wait_event, queryid, resets, samples FROM chronicle.wait_totals('2024-03-01 10:00:00', '2024-03-01 10:00:03');
SELECT wait_event, samples FROM chronicle.wait_profile('2024-03-01 10:00:00', '2024-03-01 10:00:03', include_idle => true);
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", wait_event, samples, share, avg_processes, ticks_due, ticks_taken
  FROM chronicle.wait_profile_series('2024-03-01 10:00:00', '2024-03-01 10:00:03');
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", wait_event, samples
  FROM chronicle.wait_profile_series('2024-03-01 10:00:00', '2024-03-01 10:00:03', top => 1);
-- The new key in a window that starts mid-segment, after the keyframe: its
-- first row still counts from zero, per interval and in the totals'
-- shortcut; a window starting at its first row has that row as baseline.
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", wait_event, queryid, samples
  FROM chronicle.wait_deltas('2024-03-01 10:00:02', '2024-03-01 10:00:03', for_wait_event => 'WALWrite');
SELECT wait_event, queryid, samples
  FROM chronicle.wait_totals('2024-03-01 10:00:02', '2024-03-01 10:00:03', for_wait_event => 'WALWrite');
SELECT wait_event, queryid, samples
  FROM chronicle.wait_totals('2024-03-01 10:00:03', '2024-03-01 10:00:30', for_wait_event => 'WALWrite');
-- intervals: how many of the window's intervals a key counts in, from its
-- first row on: WALWrite and the checkpointer's DataFileWrite, born at :03,
-- in (:02, :03] .. (:05, :06], 4 of the window's 6; the keys of the
-- keyframe (:00) in all 6.
SELECT backend_type, wait_event, queryid, intervals
  FROM chronicle.wait_totals('2024-03-01 10:00:00', '2024-03-01 10:00:06');
-- Segment B: the waits source failed at its keyframe (10:01:00, no rows),
-- so its first rows at 10:01:01 are baselines (cumulative since the
-- sampler started: 9000 would be a false spike), the delta comes at
-- 10:01:03.  The sampler rows of B were recorded by 0.1.0, whose active_*
-- counted background processes too (background_active NULL): the timeline
-- shows no active sessions for them rather than wrong ones.
INSERT INTO chronicle.waits_history (ts, backend_type, state, wait_event_type, wait_event, queryid, samples) VALUES
 ('2024-03-01 10:01:01', 'client backend', 'active', 'IO', 'DataFileRead', 1, 9000),
 ('2024-03-01 10:01:03', 'client backend', 'active', 'IO', 'DataFileRead', 1, 9004);
INSERT INTO chronicle.wait_sampler_history (ts, ticks_due, ticks_taken, samples_dropped, sampler_started,
                                            active_cpu, active_io, active_lwlock, active_lock, active_ipc,
                                            active_client, active_timeout, active_other) VALUES
 ('2024-03-01 10:01:00', 6000, 6000, 0, '2024-03-01 09:00', 100, 9000, 0, 0, 0, 0, 900, 0),
 ('2024-03-01 10:01:03', 6300, 6300, 0, '2024-03-01 09:00', 100, 9004, 0, 0, 0, 0, 1200, 0);
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", wait_event, samples
  FROM chronicle.wait_deltas('2024-03-01 10:01:00', '2024-03-01 10:02:00', changed_only => true);
SELECT wait_event, samples FROM chronicle.wait_totals('2024-03-01 10:01:00', '2024-03-01 10:02:00');

-- The timeline: one row per interval, the same numbers side by side.
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", commits_per_s, hit_ratio, reads_per_s, writes_per_s,
       read_bytes_per_s, checkpointer_write_bytes_per_s, wal_bytes_per_s, buffers_dirty,
       active_processes, active_cpu, active_io, active_lwlock, top_waits, wait_coverage, tps
  FROM chronicle.timeline('2024-03-01', '2024-03-02', detail => true);
-- Which samples are active sessions, background work, or not active.
SELECT b, s, t, e, chronicle._wait_activity(b, s, t, e) AS activity
  FROM (VALUES ('client backend', 'active', 'IO', 'DataFileRead'), ('client backend', 'idle', 'Client', 'ClientRead'),
               ('client backend', 'idle in transaction', 'Client', 'ClientRead'),
               ('client backend', 'active', 'Timeout', 'VacuumDelay'), ('autovacuum worker', 'active', 'Timeout', 'VacuumDelay'),
               ('autovacuum worker', 'active', 'IO', 'DataFileRead'), ('parallel worker', 'active', 'IPC', 'ParallelFinish'),
               ('walsender', 'active', 'Activity', 'WalSenderMain'), ('walsender', 'active', 'Client', 'WalSenderWaitForWal'),
               ('walsender', 'active', 'IO', 'WalRead'), ('checkpointer', '', 'Timeout', 'CheckpointWriteDelay'),
               ('checkpointer', '', 'Activity', 'CheckpointerMain'), ('checkpointer', '', 'IO', 'DataFileWrite'),
               ('background worker', '', 'Extension', 'Extension'), ('background worker', 'active', 'CPU', 'CPU'),
               ('startup', '', 'Timeout', 'RecoveryApplyDelay'), ('walwriter', '', 'IO', 'WalWrite')) v(b, s, t, e);
-- Without detail (the default) no jsonb breakdowns; the wait classes are
-- still there.  waits => false leaves all wait columns out.
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", active_processes, active_io, top_waits, io_by_backend
  FROM chronicle.timeline('2024-03-01 10:00:01', '2024-03-01 10:00:03');
SELECT count(*) FILTER (WHERE active_processes IS NOT NULL OR top_waits IS NOT NULL OR wait_coverage IS NOT NULL) AS with_waits
  FROM chronicle.timeline('2024-03-01', '2024-03-02', waits => false);
SELECT to_char(interval_end, 'HH24:MI:SS') AS "end", io_by_backend
  FROM chronicle.timeline('2024-03-01 10:00:00', '2024-03-01 10:00:03', detail => true);

-- Clean up: the other tests use their own rows.
DELETE FROM chronicle.io_history WHERE ts >= '2024-03-01' AND ts < '2024-03-02';
DELETE FROM chronicle.wal_history WHERE ts >= '2024-03-01' AND ts < '2024-03-02';
DELETE FROM chronicle.database_history WHERE ts >= '2024-03-01' AND ts < '2024-03-02';
DELETE FROM chronicle.buffers_history WHERE ts >= '2024-03-01' AND ts < '2024-03-02';
DELETE FROM chronicle.waits_history WHERE ts >= '2024-03-01' AND ts < '2024-03-02';
DELETE FROM chronicle.wait_sampler_history WHERE ts >= '2024-03-01' AND ts < '2024-03-02';
DELETE FROM chronicle.snapshot WHERE ts >= '2024-03-01' AND ts < '2024-03-02';
