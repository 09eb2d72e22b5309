-- pg_stat_statements, when installed: the view statements_history (made
-- from src/source_statements.c, 10_history.sql) has the statements whose
-- counters changed, top N by total time per snapshot.  Cumulative counters
-- as the view shows them; an entry evicted and re-added shows as counters
-- going backwards.

-- Query text, stored once per (dbid, queryid), without passwords
-- (_redact_statement).  last_seen: the latest day a snapshot recorded the
-- statement (set once a day); housekeeping drops the texts not seen within
-- chronicle.retention, with the last history that referred to them
-- (00_core.sql, _maintain).
CREATE TABLE chronicle.statements_text (
	dbid       oid NOT NULL,
	queryid    bigint NOT NULL,
	query      text NOT NULL,
	first_seen timestamptz NOT NULL DEFAULT now(),
	last_seen  timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (dbid, queryid)
);
COMMENT ON TABLE chronicle.statements_text IS 'Query text of recorded statements, once per (dbid, queryid), kept as long as the history that refers to it';

-- The texts of the imported runs' statements (05_origin.sql): another
-- server's dbid and queryid name other statements.
CREATE TABLE chronicle.archive_statements_text (
	origin  integer NOT NULL REFERENCES chronicle.origin,
	dbid    oid NOT NULL,
	queryid bigint NOT NULL,
	query   text NOT NULL,
	PRIMARY KEY (origin, dbid, queryid)
);
COMMENT ON TABLE chronicle.archive_statements_text IS 'Query text of the statements of imported runs, by origin';

-- The texts of the origin read now.
CREATE VIEW chronicle._statements_text AS
SELECT t.dbid, t.queryid, t.query
  FROM (SELECT 0 AS origin, l.dbid, l.queryid, l.query FROM chronicle.statements_text l
        UNION ALL
        SELECT a.origin, a.dbid, a.queryid, a.query FROM chronicle.archive_statements_text a) t
 WHERE t.origin = chronicle._origin();
COMMENT ON VIEW chronicle._statements_text IS
	'The statement texts of the origin the analysis reads (chronicle.origin): chronicle.statements_text for this server';

-- A statement's text as the history keeps it: never a password.
-- pg_stat_statements replaces the constants of planned statements by $n,
-- not those of utility statements, which it keeps as they were run.
-- Replaced by ********: the quoted value after the word PASSWORD (CREATE
-- or ALTER ROLE / USER ... PASSWORD '...', a user mapping's or a server's
-- OPTIONS (password '...'); a dollar-quoted one hides the rest of the
-- text), and in any literal a connection string's password
-- (_redact_setting's rules: CREATE SUBSCRIPTION ... CONNECTION, dblink).
CREATE FUNCTION chronicle._redact_statement(query text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT chronicle._redact_setting('',
	         regexp_replace(query,
	                        '(\mpassword\M\s*)([EeUu]&?''(''''|\\.|[^''\\])*''?|''(''''|[^''])*''?|\$.*)',
	                        '\1''********''', 'gi'))
$$;

COMMENT ON FUNCTION chronicle._redact_statement(text) IS
	'A statement''s text with its passwords replaced by ********, as statements_text keeps it';

REVOKE ALL ON FUNCTION chronicle._redact_statement(text) FROM PUBLIC;

-- What the statements did between two times: per statement, the growth of
-- its counters, summed over the recorded rows in (from_ts, to_ts].
--
-- Each row is a cumulative reading.  The growth between two consecutive
-- rows of a statement is their difference, except when the counters went
-- backwards or stats_since changed: the entry was evicted and created
-- again (or pg_stat_statements was reset), and the later row counts from
-- zero.  A statement's first row in the range with no row at or before
-- from_ts counts from zero if the entry was created after the start of
-- the window's first interval (the snapshot at or before from_ts;
-- stats_since, PostgreSQL 17+), and is only a baseline otherwise.
CREATE FUNCTION chronicle.statements_top(
	from_ts timestamptz,
	to_ts timestamptz,
	n integer DEFAULT 20,
	order_by text DEFAULT 'total_exec_time')
RETURNS TABLE (
	userid oid, dbid oid, queryid bigint, toplevel boolean,
	calls bigint, plans bigint,
	total_exec_time float8, mean_exec_time float8, total_plan_time float8,
	rows bigint,
	shared_blks_hit bigint, shared_blks_read bigint,
	shared_blks_dirtied bigint, shared_blks_written bigint,
	temp_blks_read bigint, temp_blks_written bigint,
	blk_read_time float8, blk_write_time float8,
	wal_records bigint, wal_fpi bigint, wal_bytes bigint,
	resets integer,
	query text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.statements_top');
	IF n IS NULL OR n < 1 THEN
		RAISE EXCEPTION 'chronicle.statements_top: n must be at least 1, got %', coalesce(n::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value', HINT = 'How many statements to show.';
	END IF;
	IF order_by IS NULL OR order_by NOT IN ('total_exec_time', 'calls', 'total_plan_time', 'rows',
	                                        'shared_blks_read', 'shared_blks_dirtied', 'shared_blks_written',
	                                        'temp_blks_written', 'blk_read_time', 'wal_bytes') THEN
		RAISE EXCEPTION 'chronicle.statements_top: cannot order statements by "%"', order_by
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Use total_exec_time, calls, total_plan_time, rows, shared_blks_read, shared_blks_dirtied, shared_blks_written, temp_blks_written, blk_read_time or wal_bytes.';
	END IF;

	RETURN QUERY EXECUTE pg_catalog.format($q$
	WITH s0 AS (
		-- where the window's first interval starts: the snapshot at or
		-- before from_ts (the intervals ending in the window are counted
		-- whole), or from_ts itself for rows loaded without snapshots.  A
		-- statement created after it counts from zero.
		SELECT coalesce((SELECT sn.ts FROM chronicle._snapshot sn WHERE sn.ts <= $1
		                  ORDER BY sn.ts DESC LIMIT 1), $1) AS t
	), base AS (
		-- the last reading at or before from_ts, per statement, in the
		-- segment of from_ts.  Its first snapshot wrote every statement
		-- (source_statements.c), so the read starts there.  Not at
		-- chronicle._keyframe(): a later keyframe writes only the changed
		-- statements (the top statements_max), not every one.  Rows without
		-- a snapshot (loaded by hand) are all read.
		SELECT DISTINCT ON (h.userid, h.dbid, h.queryid, h.toplevel) h.*, true AS is_base
		  FROM chronicle.statements_history h
		 WHERE h.ts <= $1
		   AND h.ts >= coalesce((SELECT sn.segment FROM chronicle._snapshot sn WHERE sn.ts <= $1
		                          ORDER BY sn.ts DESC LIMIT 1), '-infinity')
		 ORDER BY h.userid, h.dbid, h.queryid, h.toplevel, h.ts DESC
	), r AS (
		SELECT * FROM base
		UNION ALL
		SELECT h.*, false FROM chronicle.statements_history h WHERE h.ts > $1 AND h.ts <= $2
	), k AS (
		-- per row, its predecessor's calls, time and stats_since (whether
		-- it counts from zero), and ts (whether it has one)
		SELECT r.*,
		       lag(r.calls) OVER w AS p_calls,
		       lag(r.stats_since) OVER w AS p_since,
		       lag(r.total_exec_time) OVER w AS p_exec,
		       lag(r.ts) OVER w AS p_ts
		  FROM r
		WINDOW w AS (PARTITION BY r.userid, r.dbid, r.queryid, r.toplevel ORDER BY r.ts)
	), d AS (
		SELECT k.*,
		       CASE WHEN k.is_base THEN 'skip'
		            WHEN k.p_ts IS NULL THEN
		                 CASE WHEN k.stats_since > (SELECT s0.t FROM s0) THEN 'zero' ELSE 'skip' END
		            WHEN k.calls < k.p_calls OR k.total_exec_time < k.p_exec
		                 OR k.stats_since IS DISTINCT FROM k.p_since THEN 'zero'
		            ELSE 'diff' END AS how
		  FROM k
	), f AS (
		-- Each row's weight in the sums.  A row adds its difference from
		-- the one before ('diff'), all it counts ('zero': a first reading
		-- or a reset), or nothing ('skip': a baseline); the differences of
		-- a run of 'diff' rows add up to its last row less the row before
		-- it.  So a row weighs +1 when it ends such a run or stands alone
		-- (the next row is not a 'diff', or there is none), and -1 more
		-- when it is a baseline: the same sums as the differences row by
		-- row, with one lead() a row instead of a lag() a counter.
		SELECT d.*,
		       CASE WHEN coalesce(lead(d.how) OVER w, 'skip') <> 'diff' THEN 1 ELSE 0 END
		       - CASE WHEN d.how = 'skip' THEN 1 ELSE 0 END AS wt
		  FROM d
		WINDOW w AS (PARTITION BY d.userid, d.dbid, d.queryid, d.toplevel ORDER BY d.ts)
	), g AS (
		SELECT f.userid, f.dbid, f.queryid, f.toplevel,
		       sum(f.calls * f.wt)::bigint AS calls,
		       sum(f.plans * f.wt)::bigint AS plans,
		       sum(f.total_exec_time * f.wt) AS total_exec_time,
		       sum(f.total_plan_time * f.wt) AS total_plan_time,
		       sum(f.rows * f.wt)::bigint AS rows,
		       sum(f.shared_blks_hit * f.wt)::bigint AS shared_blks_hit,
		       sum(f.shared_blks_read * f.wt)::bigint AS shared_blks_read,
		       sum(f.shared_blks_dirtied * f.wt)::bigint AS shared_blks_dirtied,
		       sum(f.shared_blks_written * f.wt)::bigint AS shared_blks_written,
		       sum(f.temp_blks_read * f.wt)::bigint AS temp_blks_read,
		       sum(f.temp_blks_written * f.wt)::bigint AS temp_blks_written,
		       sum(f.blk_read_time * f.wt) AS blk_read_time,
		       sum(f.blk_write_time * f.wt) AS blk_write_time,
		       sum(f.wal_records * f.wt)::bigint AS wal_records,
		       sum(f.wal_fpi * f.wt)::bigint AS wal_fpi,
		       sum(f.wal_bytes * f.wt)::bigint AS wal_bytes,
		       (count(*) FILTER (WHERE f.how = 'zero' AND f.p_ts IS NOT NULL))::integer AS resets
		  FROM f
		 GROUP BY f.userid, f.dbid, f.queryid, f.toplevel
	)
	SELECT g.userid, g.dbid, g.queryid, g.toplevel, g.calls, g.plans,
	       g.total_exec_time, g.total_exec_time / nullif(g.calls, 0), g.total_plan_time,
	       g.rows, g.shared_blks_hit, g.shared_blks_read, g.shared_blks_dirtied, g.shared_blks_written,
	       g.temp_blks_read, g.temp_blks_written, g.blk_read_time, g.blk_write_time,
	       g.wal_records, g.wal_fpi, g.wal_bytes, g.resets, t.query
	  FROM g LEFT JOIN chronicle._statements_text t ON t.dbid = g.dbid AND t.queryid = g.queryid
	 WHERE g.calls > 0 OR g.plans > 0
	 ORDER BY g.%I DESC NULLS LAST, g.queryid
	 LIMIT $3
	$q$, order_by) USING from_ts, to_ts, n;
END;
$$;
COMMENT ON FUNCTION chronicle.statements_top(timestamptz, timestamptz, integer, text) IS
	'The statements with the most activity between two times, from the recorded pg_stat_statements counters, across evictions and resets';
REVOKE ALL ON FUNCTION chronicle.statements_top(timestamptz, timestamptz, integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.statements_top(timestamptz, timestamptz, integer, text) TO pg_monitor, pg_read_all_stats;
