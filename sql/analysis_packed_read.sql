-- The engine (src/deltas.c) reads a source's view chronicle.<source>_history
-- by reading chronicle.history and decoding the packed values itself; any
-- other table it reads through SQL.  Checked here: the same engine over a
-- plain copy of each view's rows (the SQL path) gives the same answers,
-- row for row, with filters (NULL filter values), exclusions,
-- changed_only, group_by, the totals' ends, born_at_zero, windows that
-- start before the history, between keyframes and in a second segment;
-- and the views are really read the fast way (chronicle._unpack(), which
-- the views call for every history row, is not called per row).
\set VERBOSITY terse
SET timezone = 'UTC';
SET track_functions = 'all';
SELECT chronicle.ensure_partitions('2024-07-01', '2024-07-01') >= 0 AS partitions;

-- Segment A: 00:00:00 .. 00:00:49, keyframes every 10 s; segment B:
-- 00:01:00 .. 00:01:20, keyframes at :00 and :15.
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
SELECT t, '2024-07-01 00:00:00+00'::timestamptz, extract(second FROM t)::int % 10 = 0, 'sql', 0, 0, 0, 0
  FROM generate_series('2024-07-01 00:00:00+00'::timestamptz, '2024-07-01 00:00:49+00', interval '1 s') t
UNION ALL
SELECT t, '2024-07-01 00:01:00+00'::timestamptz, extract(second FROM t)::int IN (0, 15), 'sql', 0, 0, 0, 0
  FROM generate_series('2024-07-01 00:01:00+00'::timestamptz, '2024-07-01 00:01:20+00', interval '1 s') t;

-- io: four cells; a reset (stats_reset and a
-- counter going down) at :30 for the checkpointer; rows when a cell
-- changed and at keyframes.
INSERT INTO chronicle.io_history (ts, backend_type, object, context, op_bytes, reads, read_bytes, writes,
                                  write_time, hits, stats_reset)
SELECT sn.ts, c.bt, c.obj, c.ctx, 8192,
       CASE WHEN c.bt = 'checkpointer' AND s >= 30 THEN s - 30 ELSE 100 + s * c.k END,
       NULL, 50 + s / 3 * c.k, (s * c.k)::float8 / 7, 1000 + s * s * c.k,
       CASE WHEN c.bt = 'checkpointer' AND s >= 30 THEN '2024-07-01 00:00:30+00'::timestamptz END
  FROM chronicle.snapshot sn
  CROSS JOIN LATERAL (SELECT extract(epoch FROM sn.ts - sn.segment)::int AS s) x
  CROSS JOIN (VALUES ('client backend', 'relation', 'normal', 1, 2),
                     ('client backend', 'relation', 'bulkread', 3, 3),
                     ('checkpointer', 'relation', 'normal', 2, 1),
                     ('client backend', 'wal', 'normal', 5, 4)) c(bt, obj, ctx, k, every)
 WHERE sn.ts >= '2024-07-01' AND sn.ts < '2024-07-02'
   AND (x.s % c.every = 0 OR sn.keyframe);

-- waits (born at zero): a key born at :13, one gone after :24, a blip
-- between two keyframes.
INSERT INTO chronicle.waits_history (ts, backend_type, state, wait_event_type, wait_event, queryid, samples)
SELECT sn.ts, 'client backend', 'active', w.wet, w.we, w.q, 10 * w.q + (s - w.born) * (w.q + 1)
  FROM chronicle.snapshot sn
  CROSS JOIN LATERAL (SELECT extract(epoch FROM sn.ts - sn.segment)::int AS s) x
  CROSS JOIN (VALUES (1, 'IO', 'DataFileRead', 0, 49), (2, 'Lock', 'relation', 13, 49),
                     (3, 'IO', 'WalSync', 0, 24), (4, 'LWLock', 'WALWrite', 32, 35)) w(q, wet, we, born, died)
 WHERE sn.ts >= '2024-07-01' AND sn.ts < '2024-07-02'
   AND x.s BETWEEN w.born AND w.died
   AND (x.s % (w.q + 1) = 0 OR sn.keyframe OR x.s IN (w.born, w.died));

-- wal: a single row a snapshot.
INSERT INTO chronicle.wal_history (ts, wal_records, wal_fpi, wal_bytes, wal_buffers_full)
SELECT sn.ts, 10 * s, s / 4, 1000 * s + s * s, 0
  FROM chronicle.snapshot sn
  CROSS JOIN LATERAL (SELECT extract(epoch FROM sn.ts - sn.segment)::int AS s) x
 WHERE sn.ts >= '2024-07-01' AND sn.ts < '2024-07-02';

CREATE TEMP TABLE io_copy AS SELECT * FROM chronicle.io_history;
CREATE TEMP TABLE waits_copy AS SELECT * FROM chronicle.waits_history;
CREATE TEMP TABLE wal_copy AS SELECT * FROM chronicle.wal_history;

-- The query tpl (with %1$s for the engine's tbl argument: NULL, the view,
-- or the copy c) both ways: rows, whether both give the same rows (as
-- text, sorted), and whether the view was read without a
-- chronicle._unpack() call per history row.
CREATE FUNCTION pg_temp.both(c regclass, tpl text)
RETURNS TABLE (rows bigint, same boolean, fast boolean)
LANGUAGE plpgsql AS $$
DECLARE
	unpack oid := 'chronicle._unpack(text, timestamptz, bytea)'::regprocedure;
	calls0 bigint;
	calls bigint;
	a text;
	b text;
	n bigint;
	m bigint;
BEGIN
	calls0 := coalesce(pg_stat_get_xact_function_calls(unpack), 0);
	EXECUTE format('SELECT count(*), string_agg(x::text, E''\n'' ORDER BY x::text) FROM (%s) x',
	               format(tpl, 'NULL')) INTO n, a;
	calls := coalesce(pg_stat_get_xact_function_calls(unpack), 0) - calls0;
	EXECUTE format('SELECT count(*), string_agg(x::text, E''\n'' ORDER BY x::text) FROM (%s) x',
	               format(tpl, quote_literal(c))) INTO m, b;
	rows := n;
	same := n = m AND a IS NOT DISTINCT FROM b;
	fast := calls < (SELECT count(*) FROM chronicle.history WHERE ts >= '2024-07-01' AND ts < '2024-07-02');
	RETURN NEXT;
END;
$$;

-- The result columns of a function made from the same description: the
-- engine's column definition list.
CREATE FUNCTION pg_temp.cols(f text)
RETURNS text LANGUAGE sql AS $$
	SELECT string_agg(format('%I %s', n, format_type(t, NULL)), ', ' ORDER BY o)
	  FROM pg_proc p, unnest(p.proargnames, p.proallargtypes, p.proargmodes) WITH ORDINALITY AS x(n, t, m, o)
	 WHERE p.oid = to_regproc('chronicle.' || f) AND x.m = 't'
$$;

CREATE TEMP TABLE win (f timestamptz, t timestamptz);
INSERT INTO win VALUES ('2024-06-30 23:59:00+00', '2024-07-01 00:02:00+00'),	-- all of it
                       ('2024-07-01 00:00:05+00', '2024-07-01 00:00:27+00'),	-- between keyframes
                       ('2024-07-01 00:00:33+00', '2024-07-01 00:01:07+00'),	-- across the segments
                       ('2024-07-01 00:01:16+00', '2024-07-01 00:01:20+00');	-- after B's last keyframe

-- io: every key, changed or not, then filters, exclusions, groups.
CREATE TEMP TABLE io_calls (label text, args text);
INSERT INTO io_calls VALUES
	('all keys', $$filter_vals => ARRAY[NULL, NULL, NULL]::text[], changed_only => false$$),
	('changed only', $$filter_vals => ARRAY[NULL, NULL, NULL]::text[], changed_only => true$$),
	('one backend type', $$filter_vals => ARRAY['client backend', NULL, NULL], changed_only => false$$),
	('object = relation', $$filter_vals => ARRAY[NULL, 'relation', NULL], changed_only => true$$),
	('no filter values', $$filter_vals => NULL, changed_only => true$$),
	('a value no row has', $$filter_vals => ARRAY[NULL, NULL, 'vacuum'], changed_only => false$$),
	('context <> bulkread', $$changed_only => true, exclude_cols => ARRAY['context'], exclude_vals => ARRAY['bulkread']$$),
	('object <> relation', $$changed_only => false, exclude_cols => ARRAY['object'], exclude_vals => ARRAY['relation']$$);
SELECT c.label, to_char(w.f, 'HH24:MI:SS') AS "from", to_char(w.t, 'HH24:MI:SS') AS "to", r.*
  FROM io_calls c CROSS JOIN win w CROSS JOIN LATERAL pg_temp.both('pg_temp.io_copy', format($q$
	SELECT * FROM chronicle._deltas('io', %L, %L, %s, tbl => %%1$s)
	  AS d(%s)$q$, w.f, w.t, c.args, pg_temp.cols('io_deltas'))) r
 ORDER BY c.label, w.f;

-- io summed per backend type, and the totals' ends.
SELECT to_char(w.f, 'HH24:MI:SS') AS "from", r.*
  FROM win w CROSS JOIN LATERAL pg_temp.both('pg_temp.io_copy', format($q$
	SELECT * FROM chronicle._deltas('io', %L, %L, filter_vals => ARRAY[NULL, NULL, 'normal'], changed_only => true,
		group_by => ARRAY['backend_type'], tbl => %%1$s)
	  AS d(%s)$q$, w.f, w.t, pg_temp.cols('_io_sums'))) r
 ORDER BY w.f;
SELECT to_char(w.f, 'HH24:MI:SS') AS "from", r.*
  FROM win w CROSS JOIN LATERAL pg_temp.both('pg_temp.io_copy', format($q$
	SELECT * FROM chronicle._ends('io', %L, %L, tbl => %%1$s)
	  AS d(%s)$q$, w.f, w.t, pg_temp.cols('_io_ends'))) r
 ORDER BY w.f;

-- waits, born at zero: deltas of a wait event type, and the ends.
SELECT to_char(w.f, 'HH24:MI:SS') AS "from", r.*
  FROM win w CROSS JOIN LATERAL pg_temp.both('pg_temp.waits_copy', format($q$
	SELECT * FROM chronicle._deltas('waits', %L, %L, filter_vals => ARRAY[NULL, 'IO', NULL], changed_only => false,
		tbl => %%1$s)
	  AS d(%s)$q$, w.f, w.t, pg_temp.cols('wait_deltas'))) r
 ORDER BY w.f;
SELECT to_char(w.f, 'HH24:MI:SS') AS "from", r.*
  FROM win w CROSS JOIN LATERAL pg_temp.both('pg_temp.waits_copy', format($q$
	SELECT * FROM chronicle._ends('waits', %L, %L, tbl => %%1$s)
	  AS d(%s)$q$, w.f, w.t, pg_temp.cols('_wait_ends'))) r
 ORDER BY w.f;

-- The intervals each wait key counts in over (00:00:05, 00:01:20], 44 in A
-- (:06 .. :49) and 20 in B (01:01 .. 01:20), by hand: DataFileRead (q 1)
-- and WalSync (q 3) from before the window in A and from B's keyframe, 64;
-- relation (q 2), born at :13 in A and at 01:13 in B (the interval it was
-- born in counts), 37 + 8 = 45.  (WALWrite, q 4, between two keyframes of
-- A, is not seen by the totals' shortcut: docs/analysis.md.)
SELECT wait_event, queryid, intervals
  FROM chronicle.wait_totals('2024-07-01 00:00:05+00', '2024-07-01 00:01:20+00')
 ORDER BY queryid;

-- wal: a source without keys.
SELECT to_char(w.f, 'HH24:MI:SS') AS "from", r.*
  FROM win w CROSS JOIN LATERAL pg_temp.both('pg_temp.wal_copy', format($q$
	SELECT * FROM chronicle._deltas('wal', %L, %L, tbl => %%1$s)
	  AS d(%s)$q$, w.f, w.t, pg_temp.cols('wal_deltas'))) r
 ORDER BY w.f;

-- A reader who may read the views but not chronicle.history gets the same
-- answer (through the view), and no more.
CREATE FUNCTION pg_temp.io_client(tbl text) RETURNS TABLE (rows bigint, hash text)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE format($q$
	SELECT count(*), md5(string_agg(d::text, ',' ORDER BY d::text))
	  FROM chronicle._deltas('io', '2024-07-01 00:00:05+00', '2024-07-01 00:00:40+00',
	                         filter_vals => ARRAY['client backend', NULL, NULL], changed_only => true,
	                         tbl => %s)
	    AS d(%s)$q$, tbl, pg_temp.cols('io_deltas'));
END;
$$;
CREATE ROLE packed_read_viewer;
GRANT USAGE ON SCHEMA chronicle TO packed_read_viewer;
GRANT SELECT ON chronicle.io_history, chronicle._snapshot, chronicle.history_key TO packed_read_viewer;
GRANT EXECUTE ON FUNCTION chronicle._unpack(text, timestamptz, bytea),
	chronicle._keyframe(regclass, timestamptz, timestamptz), chronicle._origin(),
	chronicle._deltas(text, timestamptz, timestamptz, text[], boolean, text[], text[], text[], regclass)
	TO packed_read_viewer;
GRANT SELECT ON pg_temp.io_copy TO packed_read_viewer;
CREATE TEMP TABLE as_superuser AS SELECT * FROM pg_temp.io_client('NULL');
GRANT SELECT ON as_superuser TO packed_read_viewer;
SET ROLE packed_read_viewer;
SELECT has_table_privilege('chronicle.history', 'SELECT') AS reads_history,
       v.rows, (v.rows, v.hash) = (s.rows, s.hash) AS same,
       (c.rows, c.hash) = (s.rows, s.hash) AS same_as_copy
  FROM pg_temp.io_client('NULL') v, pg_temp.io_client(quote_literal('pg_temp.io_copy')) c, as_superuser s;
RESET ROLE;
DROP TABLE as_superuser;
DROP OWNED BY packed_read_viewer;		-- and its privileges
DROP ROLE packed_read_viewer;

-- Leave no history for the tests after this one.
DELETE FROM chronicle.history WHERE ts >= '2024-07-01' AND ts < '2024-07-02';
DELETE FROM chronicle.snapshot WHERE ts >= '2024-07-01' AND ts < '2024-07-02';
