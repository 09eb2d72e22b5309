-- Marks: the events of a run, one list for every time chart.
--
-- A benchmark script names what it did and when ("COPY started", "index
-- dropped") with chronicle.mark(); the history already holds the events
-- that explain a curve without being one (a checkpoint's start and end, a
-- recording that starts again after a gap).  chronicle.marks() returns
-- both for a window, in time order; the report draws them on every time
-- chart with their text (docs/analysis.md, "Marks").
--
-- A mark belongs to the login role that made it: only that role, a member
-- of it or a superuser deletes it (chronicle._check_owner).  Marks are
-- kept until deleted, as runs are: they are a few rows a run.
CREATE TABLE chronicle.mark (
	mark_id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	ts      timestamptz NOT NULL,
	event   text NOT NULL CHECK (event <> ''),
	owner   text NOT NULL,
	origin  integer NOT NULL DEFAULT 0	-- 0: this server; else an imported run's (05_origin.sql)
);
CREATE INDEX mark_ts ON chronicle.mark (ts);
COMMENT ON TABLE chronicle.mark IS
	'Events named by a benchmark script (chronicle.mark()), with when and by which role';

-- The longest text a mark takes: a sentence, not a log.
CREATE FUNCTION chronicle._mark_event_max()
RETURNS integer
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT 200 $$;

-- Records a mark now (the clock of the call, not of its transaction), or
-- at a time the caller knew (an event that a script saw start earlier).
-- SECURITY DEFINER: the monitoring roles that may open runs may mark, and
-- neither may write the table itself.
CREATE FUNCTION chronicle.mark(event text, at timestamptz DEFAULT NULL)
RETURNS chronicle.mark
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m chronicle.mark;
BEGIN
	IF event IS NULL OR btrim(event) = '' THEN
		RAISE EXCEPTION 'chronicle.mark: a mark needs an event'
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Say what happened, e.g. chronicle.mark(''COPY started'').';
	END IF;
	IF length(event) > chronicle._mark_event_max() THEN
		RAISE EXCEPTION 'chronicle.mark: an event has at most % characters (this one has %)',
			chronicle._mark_event_max(), length(event)
			USING ERRCODE = 'string_data_right_truncation',
			      HINT = 'A mark says what happened in a few words; keep details in the run''s meta.';
	END IF;
	IF at IS NOT NULL THEN
		PERFORM chronicle._check_finite('chronicle.mark', 'at', at);
	END IF;
	INSERT INTO chronicle.mark (ts, event, owner)
	VALUES (coalesce(at, clock_timestamp()), event, session_user)
	RETURNING * INTO m;
	RETURN m;
END;
$$;

COMMENT ON FUNCTION chronicle.mark(text, timestamptz) IS
	'Records an event named by a benchmark script (now, or at the time given), drawn on every time chart of the report';

-- Deletes a mark by its id (chronicle.mark's mark_id).
CREATE FUNCTION chronicle.mark_delete(mark_id integer)
RETURNS chronicle.mark
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m chronicle.mark;
BEGIN
	SELECT * INTO m FROM chronicle.mark o WHERE o.mark_id = mark_delete.mark_id FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'chronicle.mark_delete: no mark %', coalesce(mark_id::text, 'NULL')
			USING ERRCODE = 'no_data_found',
			      HINT = 'chronicle.marks(from, to) lists the marks of a window with their ids.';
	END IF;
	PERFORM chronicle._check_owner('chronicle.mark_delete', format('mark %s', m.mark_id), m.owner);
	DELETE FROM chronicle.mark o WHERE o.mark_id = m.mark_id;
	RETURN m;
END;
$$;

COMMENT ON FUNCTION chronicle.mark_delete(integer) IS
	'Deletes a mark (the role that made it, a member of that role or a superuser)';

-- The stalls of the window: snapshot intervals in which no pgbench
-- transaction of a run ended while that run was active (it had
-- transactions ending at or before the interval's start and after its
-- end), one row per run and interval.  From per-transaction logs only (an
-- aggregate log says too little).  A stall is the benchmark standing still:
-- a lock, a checkpoint's fsync, a client that could not send.
CREATE FUNCTION chronicle.app_stalls(from_ts timestamptz, to_ts timestamptz)
RETURNS TABLE (interval_start timestamptz, interval_end timestamptz, seconds float8, run_label text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.app_stalls');
	RETURN QUERY
	WITH r AS MATERIALIZED (
		-- the runs with transactions in the window: their first and last
		-- (two probes of the index on (run_id, ts) a run)
		SELECT ru.run_id, ru.label, f.ts AS t_first, l.ts AS t_last
		  FROM chronicle.run ru
		 CROSS JOIN LATERAL (SELECT a.ts FROM chronicle.app_transaction a
		                      WHERE a.run_id = ru.run_id ORDER BY a.ts LIMIT 1) f
		 CROSS JOIN LATERAL (SELECT a.ts FROM chronicle.app_transaction a
		                      WHERE a.run_id = ru.run_id ORDER BY a.ts DESC LIMIT 1) l
		 WHERE f.ts < to_ts AND l.ts > from_ts
		   AND ru.origin = chronicle._origin()
	)
	SELECT i.interval_start, i.interval_end, i.seconds, r.label
	  FROM chronicle.intervals(from_ts, to_ts) i
	  JOIN r ON r.t_first <= i.interval_start AND r.t_last > i.interval_end
	 WHERE NOT EXISTS (SELECT FROM chronicle.app_transaction a
	                    WHERE a.run_id = r.run_id AND a.ts > i.interval_start AND a.ts <= i.interval_end)
	 ORDER BY i.interval_end, r.label;
END;
$$;

COMMENT ON FUNCTION chronicle.app_stalls(timestamptz, timestamptz) IS
	'Snapshot intervals in which no pgbench transaction of a run ended while the run was active';

CREATE FUNCTION chronicle.run_stalls(run text)
RETURNS TABLE (interval_start timestamptz, interval_end timestamptz, seconds float8, run_label text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
-- the run's origin, set by run_window(), for this call only (05_origin.sql)
SET chronicle.origin = 0
AS $$
	SELECT s.* FROM chronicle.run_window(run_stalls.run) w,
	       chronicle.app_stalls(w.run_from, w.run_to) s
	 WHERE s.run_label = (SELECT r.label FROM chronicle.run r
	                       WHERE r.run_id = chronicle._run_id(run_stalls.run, 'chronicle.run_stalls'))
$$;

COMMENT ON FUNCTION chronicle.run_stalls(text) IS
	'chronicle.app_stalls() of a run''s window and of that run';

-- The events of the window (from, to], oldest first:
--   mark              chronicle.mark(): its event, the role that made it, its id
--   checkpoint_start  an interval in which a checkpoint started (timed or
--                     requested; checkpointer_deltas())
--   checkpoint_end    an interval in which one ended (PostgreSQL 18 counts
--                     them: num_done; on 17 there is no such mark)
--   recording_start   the first snapshot of a recording (a segment): the
--                     server or the collector started, or recording resumed
--                     after a gap; nothing is known of the time before it
--   stall             an interval in which no pgbench transaction of a run
--                     ended while the run was active (app_stalls())
--   long_interval     an interval more than twice as long as the window's
--                     median: the collector was late (a stall of its own, or
--                     a machine too busy to run it), and a chart draws it as
--                     one straight segment where it knows nothing finer
--   vacuum_start, vacuum_end, analyze_start, analyze_end
--                     a VACUUM or ANALYZE of a relation (manual or
--                     autovacuum, any database; the maintenance source):
--                     its start, and the first snapshot that no longer saw
--                     it; a run shorter than an interval may be missed
-- ts is the mark's time, or the end of the interval the event is counted in.
CREATE FUNCTION chronicle.marks(from_ts timestamptz, to_ts timestamptz)
RETURNS TABLE (ts timestamptz, kind text, event text, owner text, mark_id integer)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.marks');
	RETURN QUERY
	WITH i AS MATERIALIZED (
		SELECT v.interval_end, v.seconds FROM chronicle.intervals(from_ts, to_ts) v
	), med AS (
		SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY i.seconds) AS s FROM i
	), c AS MATERIALIZED (
		SELECT d.interval_end, coalesce(d.num_timed, 0) + coalesce(d.num_requested, 0) AS started,
		       d.num_requested, d.num_done
		  FROM chronicle.checkpointer_deltas(from_ts, to_ts) d
	), v AS MATERIALIZED (
		-- the maintenance runs with rows in the window, read up to the first
		-- snapshot after it (which first sees a run that started in its
		-- last interval); a run's earliest start and end, should
		-- chronicle.snapshot() in another backend have written its own
		SELECT lower(h.command) AS cmd,
		       format('%s%s %s%s (database %s)',
		              CASE WHEN bool_or(h.autovacuum) THEN 'autovacuum ' ELSE '' END, h.command,
		              coalesce(max(h.relation), format('relation %s', h.relid)),
		              CASE WHEN bool_or(h.wraparound) THEN ' (to prevent wraparound)' ELSE '' END,
		              coalesce(max(h.datname), 'dropped')) AS what,
		       min(h.started) AS started,
		       min(h.ts) FILTER (WHERE h.ended IS NOT NULL) AS ended
		  FROM chronicle.maintenance_history h
		 WHERE h.ts > from_ts
		   AND h.ts <= coalesce((SELECT min(s.ts) FROM chronicle._snapshot s WHERE s.ts > to_ts), to_ts)
		 GROUP BY h.pid, h.activity_start, h.relid, h.command
	)
	SELECT e.ts, e.kind, e.event, e.owner, e.mark_id
	  FROM (SELECT m.ts, 'mark'::text AS kind, m.event, m.owner, m.mark_id
	          FROM chronicle.mark m
	         WHERE m.ts > from_ts AND m.ts <= to_ts AND m.origin = chronicle._origin()
	        UNION ALL
	        SELECT c.interval_end, 'checkpoint_start',
	               CASE WHEN c.started > 1 THEN format('%s checkpoints started', c.started)
	                    WHEN c.num_requested > 0 THEN 'checkpoint started (requested)'
	                    ELSE 'checkpoint started (timed)' END,
	               NULL, NULL
	          FROM c WHERE c.started > 0
	        UNION ALL
	        SELECT c.interval_end, 'checkpoint_end',
	               CASE WHEN c.num_done > 1 THEN format('%s checkpoints ended', c.num_done)
	                    ELSE 'checkpoint ended' END,
	               NULL, NULL
	          FROM c WHERE c.num_done > 0
	        UNION ALL
	        SELECT i.interval_end, 'long_interval',
	               format('long interval: %s s (the window''s median is %s s): the collector was late',
	                      round(i.seconds::numeric, 2), round(med.s::numeric, 2)),
	               NULL, NULL
	          FROM i, med WHERE i.seconds > 2 * med.s
	        UNION ALL
	        SELECT st.interval_end, 'stall',
	               format('stall: no pgbench transaction of run "%s" ended in %s s', st.run_label,
	                      round(st.seconds::numeric, 2)),
	               NULL, NULL
	          FROM chronicle.app_stalls(from_ts, to_ts) st
	        UNION ALL
	        SELECT v.started, v.cmd || '_start', v.what, NULL, NULL
	          FROM v WHERE v.started > from_ts AND v.started <= to_ts
	        UNION ALL
	        SELECT v.ended, v.cmd || '_end',
	               format('%s ended after %s s', v.what,
	                      round(extract(epoch FROM v.ended - v.started)::numeric, 1)),
	               NULL, NULL
	          FROM v WHERE v.ended > from_ts AND v.ended <= to_ts
	        UNION ALL
	        SELECT s.ts, 'recording_start', 'recording starts (after a restart or a gap)', NULL, NULL
	          FROM chronicle._snapshot s
	         WHERE s.ts = s.segment AND s.ts > from_ts AND s.ts <= to_ts) e
	 ORDER BY e.ts, e.kind, e.mark_id;
END;
$$;

COMMENT ON FUNCTION chronicle.marks(timestamptz, timestamptz) IS
	'The events of a window in time order: marks made with chronicle.mark(), checkpoint starts and ends, VACUUM and ANALYZE starts and ends, recordings that start, intervals twice as long as the median';

CREATE FUNCTION chronicle.run_marks(run text)
RETURNS TABLE (ts timestamptz, kind text, event text, owner text, mark_id integer)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
-- the run's origin, set by run_window(), for this call only (05_origin.sql)
SET chronicle.origin = 0
AS $$
	SELECT m.* FROM chronicle.run_window(run) w, chronicle.marks(w.run_from, w.run_to) m
$$;

COMMENT ON FUNCTION chronicle.run_marks(text) IS
	'chronicle.marks() over a run''s window';

REVOKE ALL ON FUNCTION chronicle._mark_event_max() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.mark(text, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.mark_delete(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.marks(timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.run_marks(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.app_stalls(timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.run_stalls(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.app_stalls(timestamptz, timestamptz) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.run_stalls(text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.mark(text, timestamptz) TO pg_monitor;
GRANT EXECUTE ON FUNCTION chronicle.mark_delete(integer) TO pg_monitor;
GRANT EXECUTE ON FUNCTION chronicle.marks(timestamptz, timestamptz) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.run_marks(text) TO pg_monitor, pg_read_all_stats;
