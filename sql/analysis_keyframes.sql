-- Baselines from keyframes: the analysis reads time ranges only, from the
-- keyframe before a window (chronicle._keyframe()), and the totals read
-- only the keyframe intervals where a key appears or disappears.  Checked
-- here against references that read every row of the history (DISTINCT ON
-- and lag() over whole segments), on history with a keyframe every 10 s.
\set VERBOSITY terse
\pset null NULL
SET timezone = 'UTC';
SELECT chronicle.ensure_partitions('2024-06-01', '2024-06-01') >= 0 AS partitions;

-- Segment A: 00:00:00 .. 00:00:59, keyframes every 10 s.  Segment B:
-- 00:02:00 .. 00:02:30, keyframes at :00, :15 and :20; at :20 the waits
-- source failed (no waits rows), io recorded.
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT t, '2024-06-01 00:00:00+00'::timestamptz, extract(second FROM t)::int % 10 = 0, 'sql', 0, 0, 0, 0
  FROM generate_series('2024-06-01 00:00:00+00'::timestamptz, '2024-06-01 00:00:59+00', interval '1 s') t
UNION ALL
SELECT t, '2024-06-01 00:02:00+00'::timestamptz, extract(second FROM t)::int IN (0, 15, 20), 'sql', 0, 0, 0, 0
  FROM generate_series('2024-06-01 00:02:00+00'::timestamptz, '2024-06-01 00:02:30+00', interval '1 s') t;

-- Wait keys (queryid), sparse as the collector writes them: a row when the
-- count changed, and at every keyframe while the key exists.
--   1: changes every second;  2: every 7 s;
--   3: born at :13, changes every 3 s;  4: gone after its row at :24;
--   5: a blip, rows at :32 and :35 only (between two keyframes);
--   in segment B: 1 and 2 again (from zero), 6 born at 02:17.
CREATE TEMP TABLE wk (queryid bigint, born int, died int, every int, seg text);
INSERT INTO wk VALUES (1, 0, 59, 1, 'A'), (2, 0, 59, 7, 'A'), (3, 13, 59, 3, 'A'), (4, 0, 24, 4, 'A'),
                      (5, 32, 35, 3, 'A'), (1, 0, 30, 1, 'B'), (2, 0, 30, 4, 'B'), (6, 17, 30, 2, 'B');
INSERT INTO chronicle.waits_history (ts, backend_type, state, wait_event_type, wait_event, queryid, samples)
SELECT sn.ts, 'client backend', 'active', 'IO', 'DataFileRead', wk.queryid,
       10 * wk.queryid + (s - wk.born) / wk.every * (wk.queryid + 1)
  FROM chronicle.snapshot sn
  CROSS JOIN LATERAL (SELECT extract(epoch FROM sn.ts - sn.segment)::int AS s) x
  JOIN wk ON wk.seg = CASE WHEN sn.segment = '2024-06-01 00:00:00+00' THEN 'A' ELSE 'B' END
 WHERE sn.ts >= '2024-06-01' AND sn.ts < '2024-06-02'
   AND x.s BETWEEN wk.born AND wk.died
   AND ((x.s - wk.born) % wk.every = 0 OR sn.keyframe OR x.s = wk.died)
   AND NOT (sn.segment = '2024-06-01 00:02:00+00' AND x.s = 20);

-- io (not born at zero): two cells; the second appears at :31 (a source
-- turned on: its first row is a baseline) and is in every keyframe after.
INSERT INTO chronicle.io_history (ts, backend_type, object, context, reads, writes, stats_reset)
SELECT sn.ts, 'client backend', 'relation', c.context, 1000 + s * c.k, 500 + s / 4 * c.k, NULL
  FROM chronicle.snapshot sn
  CROSS JOIN LATERAL (SELECT extract(epoch FROM sn.ts - sn.segment)::int AS s) x
  CROSS JOIN (VALUES ('normal', 1, 0), ('bulkread', 3, 31)) c(context, k, born)
 WHERE sn.ts >= '2024-06-01' AND sn.ts < '2024-06-02' AND x.s >= c.born
   AND (x.s % 2 = 0 OR sn.keyframe OR x.s = c.born);

-- chronicle._keyframe(): the latest keyframe of the segment at or before t
-- with rows of the table; else the segment's start.
SELECT to_char(chronicle._keyframe('chronicle.waits_history', '2024-06-01 00:00:00+00', '2024-06-01 00:00:25+00'), 'HH24:MI:SS') AS a_25,
       to_char(chronicle._keyframe('chronicle.waits_history', '2024-06-01 00:00:00+00', '2024-06-01 00:00:20+00'), 'HH24:MI:SS') AS a_20,
       to_char(chronicle._keyframe('chronicle.waits_history', '2024-06-01 00:02:00+00', '2024-06-01 00:02:25+00'), 'HH24:MI:SS') AS b_25_waits,
       to_char(chronicle._keyframe('chronicle.io_history', '2024-06-01 00:02:00+00', '2024-06-01 00:02:25+00'), 'HH24:MI:SS') AS b_25_io,
       to_char(chronicle._keyframe('chronicle.wal_history', '2024-06-01 00:02:00+00', '2024-06-01 00:02:25+00'), 'HH24:MI:SS') AS b_25_wal,
       to_char(chronicle._keyframe('chronicle.waits_history', '2024-06-01 00:02:00+00', '2024-06-01 00:01:00+00'), 'HH24:MI:SS') AS before_segment;

-- The reference: per key and segment of the window, the baseline (the
-- latest row at or before the segment's first interval start, else the
-- key's first row in the window, counting from zero when born after the
-- segment's first keyframe with rows) and the last row, from every row.
CREATE FUNCTION pg_temp.wait_ref(f timestamptz, t timestamptz)
RETURNS TABLE (queryid bigint, total numeric) LANGUAGE sql AS $$
	WITH sg AS (
		SELECT i.segment, min(i.interval_start) AS fs, max(i.interval_end) AS le,
		       (SELECT min(sn.ts) FROM chronicle.snapshot sn
		         WHERE sn.segment = i.segment AND sn.keyframe
		           AND EXISTS (SELECT FROM chronicle.waits_history h WHERE h.ts = sn.ts)) AS born_after
		  FROM chronicle.intervals(f, t) i GROUP BY i.segment
	), k AS (
		SELECT DISTINCT sg.*, h.queryid FROM sg JOIN chronicle.waits_history h
		    ON h.ts >= sg.segment AND h.ts <= sg.le
	)
	SELECT k.queryid,
	       sum((SELECT h.samples FROM chronicle.waits_history h
	             WHERE h.queryid = k.queryid AND h.ts >= k.segment AND h.ts <= k.le ORDER BY h.ts DESC LIMIT 1)
	           - coalesce((SELECT h.samples FROM chronicle.waits_history h
	                        WHERE h.queryid = k.queryid AND h.ts >= k.segment AND h.ts <= k.fs
	                        ORDER BY h.ts DESC LIMIT 1),
	                      (SELECT CASE WHEN h.ts > k.born_after THEN 0 ELSE h.samples END
	                         FROM chronicle.waits_history h
	                        WHERE h.queryid = k.queryid AND h.ts > k.fs AND h.ts <= k.le
	                        ORDER BY h.ts LIMIT 1)))
	  FROM k GROUP BY k.queryid
$$;

-- Per-interval reference: every stored row in the window against the
-- previous row of its key in the segment (lag() over the whole segment);
-- a first row counts from zero when born after the first keyframe.
CREATE FUNCTION pg_temp.wait_deltas_ref(f timestamptz, t timestamptz)
RETURNS TABLE (interval_end timestamptz, queryid bigint, samples bigint) LANGUAGE sql AS $$
	SELECT r.ts, r.queryid, CASE WHEN r.p IS NOT NULL THEN r.samples - r.p ELSE r.samples END
	  FROM (SELECT h.ts, h.queryid, h.samples, sn.segment,
	               lag(h.samples) OVER (PARTITION BY sn.segment, h.queryid ORDER BY h.ts) AS p,
	               (SELECT min(s2.ts) FROM chronicle.snapshot s2
	                 WHERE s2.segment = sn.segment AND s2.keyframe
	                   AND EXISTS (SELECT FROM chronicle.waits_history x WHERE x.ts = s2.ts)) AS born_after
	          FROM chronicle.waits_history h JOIN chronicle.snapshot sn ON sn.ts = h.ts) r
	 WHERE r.ts IN (SELECT i.interval_end FROM chronicle.intervals(f, t) i)
	   AND (r.p IS NOT NULL OR r.ts > r.born_after)
$$;

-- Windows: inside one keyframe interval, across several, starting after a
-- key is gone, across both segments, over the failed keyframe.
CREATE TEMP TABLE win (f timestamptz, t timestamptz);
INSERT INTO win VALUES
	('2024-06-01 00:00:03+00', '2024-06-01 00:00:08+00'),
	('2024-06-01 00:00:05+00', '2024-06-01 00:00:47+00'),
	('2024-06-01 00:00:11+00', '2024-06-01 00:00:29+00'),
	('2024-06-01 00:00:26+00', '2024-06-01 00:00:59+00'),
	('2024-06-01 00:00:33+00', '2024-06-01 00:02:30+00'),
	('2024-06-01 00:02:16+00', '2024-06-01 00:02:30+00'),
	('2024-05-31 23:00:00+00', '2024-06-01 01:00:00+00');

-- The totals' shortcut against the reference, per window: the keys, and
-- the keys whose totals differ ("key: reference/totals", "-": no row).
-- The differences are the two documented in docs/analysis.md: key 4 gone
-- before the keyframe preceding the window (the reference lists it with
-- 0), key 5 that appeared and disappeared between two keyframes.
SELECT to_char(w.f, 'HH24:MI:SS') AS "from", to_char(w.t, 'HH24:MI:SS') AS "to",
       (SELECT string_agg(d.queryid || '=' || d.samples, ' ' ORDER BY d.queryid)
          FROM chronicle.wait_totals(w.f, w.t) d) AS totals,
       (SELECT string_agg(coalesce(r.queryid, d.queryid) || ': ' || coalesce(r.total::text, '-') || '/'
                          || coalesce(d.samples::text, '-'), ' ' ORDER BY coalesce(r.queryid, d.queryid))
          FROM pg_temp.wait_ref(w.f, w.t) r
          FULL JOIN chronicle.wait_totals(w.f, w.t) d ON d.queryid = r.queryid
         WHERE r.total IS DISTINCT FROM d.samples) AS differ
  FROM win w ORDER BY w.f;

-- The per-interval deltas (the engine, reading from the keyframe before
-- the window) equal the reference, row for row.
SELECT to_char(w.f, 'HH24:MI:SS') AS "from", to_char(w.t, 'HH24:MI:SS') AS "to",
       (SELECT count(*) FROM pg_temp.wait_deltas_ref(w.f, w.t)) AS rows,
       (SELECT count(*) FROM (
			SELECT * FROM pg_temp.wait_deltas_ref(w.f, w.t)
			EXCEPT SELECT d.interval_end, d.queryid, d.samples
			         FROM chronicle.wait_deltas(w.f, w.t, changed_only => true) d) x) AS missing,
       (SELECT count(*) FROM (
			SELECT d.interval_end, d.queryid, d.samples
			  FROM chronicle.wait_deltas(w.f, w.t, changed_only => true) d
			EXCEPT SELECT * FROM pg_temp.wait_deltas_ref(w.f, w.t)) x) AS extra
  FROM win w ORDER BY w.f;

-- The blip between two keyframes: counted by the deltas, not by the
-- totals' shortcut over a window with keyframes around it.
SELECT (SELECT sum(d.samples) FROM chronicle.wait_deltas('2024-06-01 00:00:26+00', '2024-06-01 00:00:59+00',
                                                          changed_only => true) d WHERE d.queryid = 5) AS blip_deltas,
       (SELECT count(*) FROM chronicle.wait_totals('2024-06-01 00:00:26+00', '2024-06-01 00:00:59+00') d
         WHERE d.queryid = 5) AS blip_totals;

-- A key gone before the keyframe preceding the window has no baseline: no
-- zero-filled rows (key 4, last row at :24; the keyframe before :33 is :30);
-- from :26 (keyframe :20, where it was) it is zero-filled.
SELECT count(*) FILTER (WHERE d.interval_end <= '2024-06-01 00:00:59+00') AS key4_rows_from_33
  FROM chronicle.wait_deltas('2024-06-01 00:00:33+00', '2024-06-01 00:00:40+00') d WHERE d.queryid = 4;
SELECT count(*) AS key4_rows_from_26, sum(d.samples) AS key4_samples
  FROM chronicle.wait_deltas('2024-06-01 00:00:26+00', '2024-06-01 00:00:40+00') d WHERE d.queryid = 4;

-- io: totals (shortcut) equal the sum of the per-interval deltas, and the
-- reference from every row; the cell that appears at :31 is a baseline.
SELECT to_char(w.f, 'HH24:MI:SS') AS "from", to_char(w.t, 'HH24:MI:SS') AS "to", t.context, t.reads, t.writes,
       (SELECT sum(d.reads) FROM chronicle.io_deltas(w.f, w.t, changed_only => true) d
         WHERE d.context = t.context) AS sum_deltas
  FROM win w CROSS JOIN LATERAL chronicle.io_totals(w.f, w.t) t
 ORDER BY w.f, t.context;
