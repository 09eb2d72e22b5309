-- Rollups: per-minute and per-hour aggregates of every per-interval series
-- the analysis functions serve, kept longer than the raw 1 s rows
-- (chronicle.rollup_retention, default 90 days, against chronicle.retention
-- for the raw rows), so that long windows are answered from them.  See
-- docs/rollups.md.
--
-- They are computed from the per-interval functions (<source>_deltas,
-- buffers_values, the engine's reset-aware deltas), never from the
-- physical rows, so they hold exactly what those functions say, whatever
-- the storage of the history.
--
-- A bucket ts covers the intervals whose END lies in (ts, ts + 1 minute]
-- (or 1 hour), as a window (from, to] holds the intervals ending in it:
-- a window whose bounds are whole minutes is exactly a set of buckets.
--
-- One row per origin, bucket, source and key.  origin: this server's (0)
-- and every subscribed server's (42_central.sql), each rolled up from its
-- own history as the session reading it computes it; an imported run's
-- history is read raw (05_origin.sql).
--
--   source 'intervals', key '{}': the snapshot intervals of the bucket
--     (seconds, intervals); the other sources' seconds may be fewer;
--   an unkeyed source (wal, checkpointer, ...), key '{}';
--   a keyed source (io, database, wait, os_disk, os_pressure): one row per
--     key that changed in the bucket (the key columns' values in key), and
--     one row with key '{}' that says the source was recorded and how many
--     seconds count;
--   source 'app', key {run_id}: the pgbench transactions (status ok) that
--     ended in the bucket, with a latency histogram.
--   seconds: seconds of the intervals counted; an interval in which any key
--     of the source was reset (a NULL delta in the engine) is left out of
--     every key of that source (resets says how many were);
--   vals: a float8[] in the fixed column order of the source
--     (_rollup_sources(): its counters by name, then its gauges by name):
--     per counter 3 slots [sum of deltas, min and max of the per-second
--     rate over the intervals], per gauge 4 slots [min, max, avg, last];
--     a counter NULL in every interval is NULL in its slots, one with
--     nothing to say is 0 in them.  NULL for 'intervals' and the '{}' rows
--     of keyed sources.  No column names repeated in every row: a jsonb
--     object of the same numbers took twice the bytes (docs/rollups.md).
--     app: [transactions, latency_us_sum, latency_us_min, latency_us_max].
--     _rollup_vals() turns one back into the jsonb object of each column.
--   hist (app): latency histogram, log buckets: bucket i holds latencies in
--     [1.02^i, 1.02^(i+1)) microseconds (below 1 us: bucket 0), so that a
--     percentile read from it at the bucket's geometric middle is within 1 %
--     (1.02^0.5 - 1 = 0.995 %) of the exact one.

CREATE TABLE chronicle.rollup_minute (
	ts        timestamptz NOT NULL,
	source    text NOT NULL,
	key       text[] NOT NULL,
	seconds   float8 NOT NULL,
	intervals integer NOT NULL,
	resets    integer NOT NULL,
	vals      float8[],
	hist      jsonb,
	origin    integer NOT NULL DEFAULT 0,
	PRIMARY KEY (origin, ts, source, key)
) PARTITION BY RANGE (ts);
COMMENT ON TABLE chronicle.rollup_minute IS
	'Per-minute rollups of every per-interval series: sums and min/max rates of counters, min/max/avg/last of gauges, latency histograms (see docs/rollups.md)';

CREATE TABLE chronicle.rollup_hour (LIKE chronicle.rollup_minute INCLUDING ALL)
	PARTITION BY RANGE (ts);
COMMENT ON TABLE chronicle.rollup_hour IS
	'Per-hour rollups, merged from rollup_minute (same shape)';

-- How far the minutes of each origin are rolled up: every complete minute
-- before done_until was looked at.
CREATE TABLE chronicle.rollup_state (
	done_until timestamptz,
	origin     integer PRIMARY KEY DEFAULT 0
);
COMMENT ON TABLE chronicle.rollup_state IS
	'How far housekeeping has rolled up the history (every minute before done_until)';

-- Time ranges whose pgbench transactions changed (loaded late, or deleted
-- with their run): their minutes are rolled up again.
CREATE TABLE chronicle.rollup_dirty (
	lo     timestamptz NOT NULL,
	hi     timestamptz NOT NULL,
	origin integer NOT NULL DEFAULT 0
);
COMMENT ON TABLE chronicle.rollup_dirty IS
	'Time ranges of application rows loaded or deleted since they were rolled up: rolled up again by the next housekeeping (not dumped: a restore marks the rows it loads)';

-- chronicle.rollup_retention as an interval (as _retention() for the raw rows).
CREATE FUNCTION chronicle._rollup_retention()
RETURNS interval
LANGUAGE C STABLE
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_rollup_retention_interval';

COMMENT ON FUNCTION chronicle._rollup_retention() IS
	'chronicle.rollup_retention as an interval, parsed with the setting''s unit rules (bare number = minutes)';

-- The series rolled up: every source of the metric catalog, its per-interval
-- function, its key columns and its counter and gauge columns.
CREATE FUNCTION chronicle._rollup_sources(
	OUT source text, OUT func text, OUT keys text[], OUT has_reset boolean,
	OUT counters text[], OUT gauges text[])
RETURNS SETOF record
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT m.source, m.func,
	       -- the filters of a keyed function, and the session state of a
	       -- wait (which makes it database time or not); query ids are summed
	       CASE WHEN NOT 'changed_only' = ANY (p.proargnames) THEN '{}'
	            WHEN m.source = 'wait' THEN ARRAY['backend_type', 'state', 'wait_event_type', 'wait_event']
	            ELSE min(m.filters) END,
	       'reset' = ANY (p.proargnames),
	       coalesce(array_agg(DISTINCT c.col ORDER BY c.col) FILTER (WHERE m.kind <> 'gauge'), '{}'),
	       coalesce(array_agg(DISTINCT c.col ORDER BY c.col) FILTER (WHERE m.kind = 'gauge'), '{}')
	  FROM chronicle.metric m
	  JOIN pg_proc p ON p.pronamespace = 'chronicle'::regnamespace AND p.proname = m.func
	                AND p.proargtypes[0] = 'timestamptz'::regtype AND p.proargtypes[1] = 'timestamptz'::regtype
	 CROSS JOIN LATERAL (SELECT m.col UNION SELECT m.col2 WHERE m.col2 IS NOT NULL) c(col)
	 WHERE m.func ~ '^[a-z_]+_(deltas|values)$'
	 GROUP BY m.source, m.func, p.proargnames
	 ORDER BY m.source
$$;

-- The minute rows of the buckets ending in (from, to], both whole minutes,
-- computed from the per-interval functions (nothing is written), of the
-- origin the session reads (chronicle._origin()).
CREATE FUNCTION chronicle._rollup_compute(from_ts timestamptz, to_ts timestamptz)
RETURNS TABLE (ts timestamptz, source text, key text[], seconds float8, intervals integer,
               resets integer, vals float8[], hist jsonb)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET work_mem = '256MB'
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
DECLARE
	s      record;
	keyed  boolean;
	keyexp text;
	aggs   text;
	slots  text;
	q      text;
	ends   timestamptz[];
	secs   float8[];
	segs   timestamptz[];
	hcol   text;
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle._rollup_compute');
	SELECT array_agg(i.interval_end ORDER BY i.interval_end), array_agg(i.seconds ORDER BY i.interval_end),
	       array_agg(i.segment ORDER BY i.interval_end)
	  INTO ends, secs, segs
	  FROM chronicle.intervals(from_ts, to_ts) i;

	RETURN QUERY
	SELECT date_trunc('minute', i.e - interval '1 microsecond'), 'intervals'::text, '{}'::text[],
	       sum(i.s::numeric)::float8, count(*)::integer, 0, NULL::float8[], NULL::jsonb
	  FROM unnest(ends, secs) AS i(e, s)
	 GROUP BY 1;

	FOR s IN SELECT * FROM chronicle._rollup_sources() LOOP
		keyed := cardinality(s.keys) > 0;
		-- the source's column of chronicle.history (its C name)
		SELECT a.source INTO hcol FROM chronicle._source_analysis() a WHERE a.prefix = s.source;
		keyexp := CASE WHEN keyed
		               THEN 'ARRAY[' || (SELECT string_agg(format('d0.%I::text', k), ', ' ORDER BY o)
		                                   FROM unnest(s.keys) WITH ORDINALITY AS u(k, o)) || ']'
		               ELSE '''{}''::text[]' END;
		-- per interval and key: counters summed over what the key leaves
		-- out (query ids), gauges as they are (one row per interval).
		-- Every float sum and average here is taken in numeric: a float8
		-- sum depends on the order of its rows, which depends on the plan
		-- and the process, and a rollup written again must be the same.
		SELECT string_agg(x, ', ') INTO aggs
		  FROM (SELECT format('sum(d0.%I::numeric)::float8 AS %I', c, c) FROM unnest(s.counters) c
		        UNION ALL
		        SELECT format('max(d0.%I)::float8 AS %I', g, g) FROM unnest(s.gauges) g) a(x);
		-- counters over the intervals of the bucket not reset: [sum, min
		-- rate, max rate], where an interval in which the key did not
		-- change (no row: changed_only) has rate 0, NULL when the column
		-- was NULL in every such interval; gauges over every interval:
		-- [min, max, avg, last]; in the order of _rollup_vals()
		SELECT coalesce('ARRAY[' || string_agg(x, ', ' ORDER BY o) || ']::float8[]', 'NULL::float8[]')
		  INTO slots
		  FROM (SELECT c.o, format(
				'CASE WHEN count(d.%1$I) FILTER (WHERE NOT d.rs) = 0 AND bool_or(NOT d.rs) THEN NULL
				      ELSE coalesce(sum(d.%1$I::numeric) FILTER (WHERE NOT d.rs), 0)::float8 END,
				 CASE WHEN count(d.%1$I) FILTER (WHERE NOT d.rs) = 0 AND bool_or(NOT d.rs) THEN NULL
				      WHEN count(d.%1$I) FILTER (WHERE NOT d.rs) < b.good_n
				      THEN coalesce(least(min(d.%1$I / d.seconds) FILTER (WHERE NOT d.rs), 0), 0)
				      ELSE coalesce(min(d.%1$I / d.seconds) FILTER (WHERE NOT d.rs), 0) END,
				 CASE WHEN count(d.%1$I) FILTER (WHERE NOT d.rs) = 0 AND bool_or(NOT d.rs) THEN NULL
				      WHEN count(d.%1$I) FILTER (WHERE NOT d.rs) < b.good_n
				      THEN coalesce(greatest(max(d.%1$I / d.seconds) FILTER (WHERE NOT d.rs), 0), 0)
				      ELSE coalesce(max(d.%1$I / d.seconds) FILTER (WHERE NOT d.rs), 0) END', c.c)
		          FROM unnest(s.counters) WITH ORDINALITY AS c(c, o)
		        UNION ALL
		        SELECT cardinality(s.counters) + g.o, format(
				'min(d.%1$I), max(d.%1$I), avg(d.%1$I::numeric)::float8,
				 (array_agg(d.%1$I ORDER BY d.interval_end DESC) FILTER (WHERE d.%1$I IS NOT NULL))[1]', g.g)
		          FROM unnest(s.gauges) WITH ORDINALITY AS g(g, o)) a(o, x);
		q := format($q$
			WITH d0 AS MATERIALIZED (
				SELECT * FROM chronicle.%1$I($1, $2%2$s)
			),
			rs AS (
				SELECT DISTINCT d0.interval_end FROM d0 WHERE %3$s
			),
			ivb AS (
				SELECT i.e AS interval_end, i.s AS seconds, i.g AS segment,
				       date_trunc('minute', i.e - interval '1 microsecond') AS m,
				       rs.interval_end IS NOT NULL AS rs
				  FROM unnest($3::timestamptz[], $4::float8[], $5::timestamptz[]) AS i(e, s, g)
				  LEFT JOIN rs ON rs.interval_end = i.e
			),
			rec AS MATERIALIZED (
				-- per segment, the source's first stored row (the marker below)
				-- in the origin read (as the <source>_history views read it),
				-- from the segment's last keyframe at or before the window on
				-- (its first snapshot, if none): a keyframe holds every key of
				-- every source, so a source with rows before it has rows at
				-- it.  A read bounded by the keyframe interval: from the
				-- segment's start, a source without rows (switched off, or
				-- unavailable) cost every run a read of the whole segment.
				SELECT g.segment,
				       (SELECT min(h.ts)
				          FROM (SELECT l.ts, l.%9$I AS v FROM chronicle.history l
				                 WHERE chronicle._origin() = 0
				                UNION ALL
				                SELECT a.ts, a.%9$I FROM chronicle.archive_history a
				                 WHERE a.origin = chronicle._origin()) h
				         WHERE h.ts >= g.k AND h.ts <= $2 AND h.v IS NOT NULL) AS first
				  FROM (SELECT s.segment,
				               coalesce((SELECT max(sn.ts) FROM chronicle._snapshot sn
				                          WHERE sn.ts >= s.segment AND sn.ts <= $1
				                            AND sn.segment = s.segment AND sn.keyframe),
				                        s.segment) AS k
				          FROM (SELECT DISTINCT ivb.segment FROM ivb) s) g
			),
			b AS (
				SELECT ivb.m, coalesce(sum(ivb.seconds::numeric) FILTER (WHERE NOT ivb.rs), 0)::float8 AS good_s,
				       count(*) FILTER (WHERE NOT ivb.rs) AS good_n, count(*) AS n,
				       count(*) FILTER (WHERE ivb.rs) AS n_rs
				  FROM ivb GROUP BY ivb.m
			),
			k AS (
				SELECT d0.interval_end, %4$s AS key, %5$s
				  FROM d0 GROUP BY 1, 2
			),
			d AS (
				SELECT ivb.m, ivb.seconds, ivb.rs, k.*
				  FROM k JOIN ivb ON ivb.interval_end = k.interval_end
			)
			SELECT d.m, %6$L::text, d.key, b.good_s, b.n::integer, b.n_rs::integer, %7$s, NULL::jsonb
			  FROM d JOIN b ON b.m = d.m
			 GROUP BY d.m, d.key, b.good_s, b.good_n, b.n, b.n_rs
			%8$s$q$,
			s.func,
			CASE WHEN keyed THEN ', changed_only => true' ELSE '' END,
			CASE WHEN s.has_reset THEN 'd0.reset' ELSE 'false' END,
			keyexp, aggs, s.source, slots,
			-- a keyed source: one row more per bucket, key '{}', saying
			-- it was recorded and what its seconds are.  Recorded: the
			-- bucket has an interval ending at or after the source's
			-- first stored row in the interval's segment (a source starts
			-- later than its segment: the relations' first reading).  A
			-- fact of the bucket's own history, so that a minute computed
			-- alone and within a longer window gives the same row (whether
			-- the window held a changed row of the source is not).
			CASE WHEN keyed THEN format($k$
			UNION ALL
			SELECT b.m, %L::text, '{}'::text[], b.good_s, b.n::integer, b.n_rs::integer, NULL::float8[], NULL::jsonb
			  FROM b
			 WHERE EXISTS (SELECT FROM ivb JOIN rec ON rec.segment = ivb.segment
			                WHERE ivb.m = b.m AND ivb.interval_end >= rec.first)$k$, s.source) ELSE '' END,
			hcol);
		RETURN QUERY EXECUTE q USING from_ts, to_ts, ends, secs, segs;
	END LOOP;

	-- pgbench transactions: count, latency sum/min/max and histogram
	RETURN QUERY
	SELECT h.m, 'app'::text, ARRAY[h.run_id::text], 0::float8, 0, 0,
	       ARRAY[sum(h.n), sum(h.lat_sum), min(h.lat_min), max(h.lat_max)]::float8[],
	       jsonb_object_agg(h.b::text, h.n)
	  FROM (SELECT date_trunc('minute', t.ts - interval '1 microsecond') AS m, t.run_id,
	               chronicle._latency_bucket(t.latency_us) AS b, count(*) AS n,
	               sum(t.latency_us) AS lat_sum, min(t.latency_us) AS lat_min, max(t.latency_us) AS lat_max
	          FROM chronicle.app_transaction t
	         WHERE t.ts > from_ts AND t.ts <= to_ts AND t.status = 'ok' AND t.latency_us IS NOT NULL
	           AND t.run_id IN (SELECT o.run_id FROM chronicle.run o WHERE o.origin = chronicle._origin())
	         GROUP BY 1, 2, 3) h
	 GROUP BY h.m, h.run_id;
END;
$$;

-- The histogram bucket of a latency in microseconds, and the value a
-- bucket stands for (its geometric middle): within 0.995 % of any latency
-- of the bucket.
CREATE FUNCTION chronicle._latency_bucket(latency_us float8)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT floor(ln(greatest(latency_us, 1)) / ln(1.02))::integer $$;

CREATE FUNCTION chronicle._latency_bucket_value(bucket integer)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT power(1.02::float8, bucket + 0.5) $$;

-- Nearest-rank percentiles (as percentile_disc) of a latency histogram,
-- in milliseconds, each clamped to the [min, max] latency it came with.
CREATE FUNCTION chronicle._hist_percentiles(hist jsonb, percentiles float8[],
                                            lat_min float8 DEFAULT NULL, lat_max float8 DEFAULT NULL)
RETURNS float8[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT array_agg((SELECT least(greatest(chronicle._latency_bucket_value(c.b), lat_min), lat_max) / 1000
	                    FROM (SELECT h.b, sum(h.n) OVER (ORDER BY h.b) AS cum, sum(h.n) OVER () AS total
	                            FROM (SELECT e.key::integer AS b, e.value::bigint AS n FROM jsonb_each_text(hist) e) h) c
	                   WHERE c.cum >= greatest(ceil(p.p * c.total), 1)
	                   ORDER BY c.b LIMIT 1) ORDER BY p.o)
	  FROM unnest(percentiles) WITH ORDINALITY AS p(p, o)
$$;

-- The vals of a rollup row as a jsonb object, one member per column:
-- counters [sum, min rate, max rate] (left out when all 0: reads as 0),
-- gauges [min, max, avg, last], [] for a column NULL in every interval;
-- app: transactions, latency_us_sum, latency_us_min, latency_us_max.
-- counters, gauges: the source's columns (_rollup_sources()); the slots
-- follow them in that order, 3 per counter and 4 per gauge.
CREATE FUNCTION chronicle._rollup_decode(vals float8[], counters text[], gauges text[])
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(jsonb_object_agg(c.col, c.v) FILTER (WHERE c.v IS NOT NULL), '{}')
	  FROM (SELECT u.col,
	               CASE WHEN vals[3 * u.o::integer - 2] IS NULL AND vals[3 * u.o::integer - 1] IS NULL AND vals[3 * u.o::integer] IS NULL
	                    THEN '[]'::jsonb
	                    WHEN vals[3 * u.o::integer - 2] = 0 AND vals[3 * u.o::integer - 1] = 0 AND vals[3 * u.o::integer] = 0 THEN NULL
	                    ELSE jsonb_build_array(vals[3 * u.o::integer - 2], vals[3 * u.o::integer - 1], vals[3 * u.o::integer]) END AS v
	          FROM unnest(counters) WITH ORDINALITY AS u(col, o)
	        UNION ALL
	        SELECT u.col,
	               CASE WHEN vals[b + 1] IS NULL AND vals[b + 2] IS NULL AND vals[b + 3] IS NULL AND vals[b + 4] IS NULL
	                    THEN '[]'::jsonb
	                    ELSE jsonb_build_array(vals[b + 1], vals[b + 2], vals[b + 3], vals[b + 4]) END
	          FROM unnest(gauges) WITH ORDINALITY AS u(col, o)
	         CROSS JOIN LATERAL (SELECT 3 * cardinality(counters) + 4 * (u.o - 1)::integer AS b) x) c
	 WHERE vals IS NOT NULL
$$;

-- The other way: a jsonb object of that shape into the slots.
CREATE FUNCTION chronicle._rollup_encode(vals jsonb, counters text[], gauges text[])
RETURNS float8[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT ARRAY(SELECT x.v
	               FROM (SELECT u.o, i.i, CASE WHEN vals ? u.col THEN (vals -> u.col ->> (i.i - 1))::float8 ELSE 0 END
	                       FROM unnest(counters) WITH ORDINALITY AS u(col, o), generate_series(1, 3) AS i(i)
	                     UNION ALL
	                     SELECT cardinality(counters) + u.o, i.i, (vals -> u.col ->> (i.i - 1))::float8
	                       FROM unnest(gauges) WITH ORDINALITY AS u(col, o), generate_series(1, 4) AS i(i)) x(o, i, v)
	              ORDER BY x.o, x.i)
	 WHERE vals IS NOT NULL
$$;

-- The vals of a row of rollup_minute or rollup_hour as a jsonb object
-- (above), for reading by hand and for the tests.
CREATE FUNCTION chronicle._rollup_vals(source text, vals float8[])
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN source = 'app' THEN
	            jsonb_build_object('transactions', vals[1], 'latency_us_sum', vals[2],
	                               'latency_us_min', vals[3], 'latency_us_max', vals[4])
	            ELSE coalesce((SELECT chronicle._rollup_decode(vals, s.counters, s.gauges)
	                             FROM chronicle._rollup_sources() s WHERE s.source = _rollup_vals.source), '{}') END
$$;

-- Merges rows of one source and key (minutes into an hour, or the rows of
-- a bucket): counters add up, min of mins and max of maxes (0 counted when
-- a row is missing: the key did not change then), gauges weighted by their
-- intervals with the last one last.  n_rows: how many buckets the key
-- could have had a row in (the source's '{}' rows).
CREATE FUNCTION chronicle._rollup_merge(vals jsonb[], intervals integer[], n_rows integer)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(jsonb_object_agg(c.col, c.v) FILTER (WHERE c.v IS NOT NULL), '{}')
	  FROM (SELECT e.key AS col,
	               CASE WHEN max(jsonb_array_length(e.value)) = 4 THEN
	                    jsonb_build_array(min((e.value->>0)::float8), max((e.value->>1)::float8),
	                                      sum((e.value->>2)::float8 * v.n) / nullif(sum(v.n) FILTER (WHERE e.value->>2 IS NOT NULL), 0),
	                                      (array_agg(e.value->3 ORDER BY v.o DESC) FILTER (WHERE jsonb_array_length(e.value) = 4))[1])
	                    WHEN count(e.value->>0) = 0 THEN
	                         CASE WHEN count(*) = n_rows THEN '[]'::jsonb END
	                    ELSE jsonb_build_array(sum((e.value->>0)::numeric),
	                                           CASE WHEN count(e.value->>0) < n_rows THEN least(min((e.value->>1)::float8), 0)
	                                                ELSE min((e.value->>1)::float8) END,
	                                           CASE WHEN count(e.value->>0) < n_rows THEN greatest(max((e.value->>2)::float8), 0)
	                                                ELSE max((e.value->>2)::float8) END) END AS v
	          FROM unnest(vals, intervals) WITH ORDINALITY AS v(j, n, o)
	         CROSS JOIN LATERAL jsonb_each(v.j) e
	         GROUP BY e.key) c
$$;

-- The hour rows of some hours, merged from their minute rows, of the
-- origin the session reads.
CREATE FUNCTION chronicle._rollup_hours(hours timestamptz[])
RETURNS TABLE (ts timestamptz, source text, key text[], seconds float8, intervals integer,
               resets integer, vals float8[], hist jsonb)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH m AS (
		SELECT date_trunc('hour', r.ts) AS h, r.*
		  FROM chronicle.rollup_minute r
		 WHERE date_trunc('hour', r.ts) = ANY (hours) AND r.origin = chronicle._origin()
	),
	src AS (
		-- per hour and source: the minutes it was recorded in
		SELECT m.h, m.source, count(*)::integer AS n
		  FROM m WHERE m.key = '{}' GROUP BY 1, 2
	)
	-- counters, gauges
	-- (merged as jsonb objects: 0.1 ms a row, ten times less often than
	-- the minutes are computed)
	SELECT m.h, m.source, m.key, sum(m.seconds::numeric)::float8, sum(m.intervals)::integer, sum(m.resets)::integer,
	       CASE WHEN count(m.vals) > 0 THEN
	            chronicle._rollup_encode(
	                chronicle._rollup_merge(array_agg(chronicle._rollup_decode(m.vals, s.counters, s.gauges) ORDER BY m.ts),
	                                        array_agg(m.intervals ORDER BY m.ts),
	                                        coalesce(min(src.n), count(*)::integer)),
	                min(s.counters), min(s.gauges)) END,
	       NULL::jsonb
	  FROM m LEFT JOIN src ON src.h = m.h AND src.source = m.source
	  LEFT JOIN chronicle._rollup_sources() s ON s.source = m.source
	 WHERE m.source <> 'app'
	 GROUP BY m.h, m.source, m.key
	UNION ALL
	-- pgbench: counts and sums add, histograms add
	SELECT m.h, 'app', m.key, 0, 0, 0,
	       ARRAY[sum(m.vals[1]), sum(m.vals[2]), min(m.vals[3]), max(m.vals[4])],
	       (SELECT jsonb_object_agg(x.b, x.n)
	          FROM (SELECT e.key AS b, sum(e.value::bigint) AS n
	                  FROM unnest(array_agg(m.hist)) AS hh(j), jsonb_each_text(hh.j) e
	                 GROUP BY e.key) x)
	  FROM m
	 WHERE m.source = 'app'
	 GROUP BY m.h, m.key
$$;

-- Housekeeping's rollup of one origin (p_origin, _rollup() below runs it
-- for each): rolls up its complete minutes not rolled up yet
-- (at most max_minutes of them, the oldest first; NULL: all), those of the
-- last hour whose snapshots changed since (late rows), and those of the
-- ranges in rollup_dirty (pgbench logs loaded or deleted); then the hours
-- they belong to.  Each bucket is deleted and written again whole, so a
-- second run changes nothing (idempotent).  from_ts/to_ts: roll up that
-- range again (say, after restoring rows into the history).  Minutes
-- whose snapshots are gone (past chronicle.retention) keep their rows.
CREATE FUNCTION chronicle._rollup_origin(p_origin integer, max_minutes integer,
	from_ts timestamptz, to_ts timestamptz, OUT minutes integer, OUT hours integer)
RETURNS record
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- the origin read, set below for this call only (05_origin.sql)
SET chronicle.origin = 0
SET work_mem = '256MB'
AS $$
DECLARE
	complete  timestamptz := date_trunc('minute', now() - interval '10 s');
	done      timestamptz;
	lo        timestamptz;
	hi        timestamptz;
	cands     timestamptz[];
	withraw   timestamptz[];
	dirty     timestamptz[];
	hrs       timestamptz[];
	forced    boolean := from_ts IS NOT NULL OR to_ts IS NOT NULL;
BEGIN
	minutes := 0;
	hours := 0;
	IF p_origin IS NULL THEN
		RAISE EXCEPTION 'chronicle._rollup_origin: the origin must not be NULL'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM set_config('chronicle.origin', p_origin::text, true);
	IF p_origin <> 0 THEN
		-- a subscribed server's minute is complete once a snapshot after
		-- it has arrived (the apply may lag, or the server be gone)
		complete := least(complete, date_trunc('minute', (SELECT max(sn.ts) FROM chronicle._snapshot sn)));
		IF complete IS NULL THEN
			RETURN;		-- no history yet
		END IF;
	END IF;

	SELECT s.done_until INTO done FROM chronicle.rollup_state s WHERE s.origin = p_origin;
	IF forced THEN
		lo := date_trunc('minute', from_ts);
		hi := least(date_trunc('minute', to_ts - interval '1 microsecond') + interval '1 minute', complete);
	ELSE
		-- from the last hour rolled up (its late rows), or from the first
		-- snapshot; at most a day a run
		lo := coalesce(done - interval '1 hour',
		               date_trunc('minute', (SELECT min(sn.ts) FROM chronicle._snapshot sn)));
		IF lo IS NULL THEN
			RETURN;		-- no history
		END IF;
		hi := least(lo + interval '1 day', complete);
	END IF;

	-- The minutes whose intervals are not those rolled up: new minutes,
	-- minutes with late snapshots, minutes without any source's rows.
	-- None where the snapshots are gone.
	IF lo < hi THEN
		SELECT array_agg(a.m ORDER BY a.m) INTO cands
		  FROM (SELECT date_trunc('minute', i.interval_end - interval '1 microsecond') AS m, count(*) AS n
		          FROM chronicle.intervals(lo, hi) i GROUP BY 1) a
		  LEFT JOIN chronicle.rollup_minute r ON r.origin = p_origin AND r.ts = a.m
		                                     AND r.source = 'intervals' AND r.key = '{}'
		 WHERE forced OR r.intervals IS DISTINCT FROM a.n
		    -- a minute rolled up with its intervals but no source's rows
		    -- (seen on a loaded machine after a collector restart): again
		    OR NOT EXISTS (SELECT FROM chronicle.rollup_minute o
		                    WHERE o.origin = p_origin AND o.ts = a.m AND o.source NOT IN ('intervals', 'app'));
	END IF;
	withraw := coalesce(cands, '{}');
	-- pgbench rows changed since: their minutes, and forced, every minute
	-- of the range with pgbench rows
	SELECT array_agg(DISTINCT x.m) INTO dirty
	  FROM (SELECT date_trunc('minute', t.ts - interval '1 microsecond') AS m
	          FROM chronicle.rollup_dirty d
	          JOIN chronicle.app_transaction t ON t.ts > d.lo - interval '1 microsecond' AND t.ts <= d.hi
	                                          AND t.run_id IN (SELECT o.run_id FROM chronicle.run o WHERE o.origin = p_origin)
	         WHERE d.origin = p_origin
	        UNION
	        SELECT r.ts FROM chronicle.rollup_dirty d
	          JOIN chronicle.rollup_minute r ON r.origin = p_origin AND r.source = 'app'
	                                        AND r.ts >= date_trunc('minute', d.lo - interval '1 microsecond')
	                                        AND r.ts <= d.hi
	         WHERE d.origin = p_origin
	        UNION
	        SELECT date_trunc('minute', t.ts - interval '1 microsecond')
	          FROM chronicle.app_transaction t
	         WHERE forced AND t.ts > lo AND t.ts <= hi
	           AND t.run_id IN (SELECT o.run_id FROM chronicle.run o WHERE o.origin = p_origin)) x
	 WHERE x.m < complete;
	DELETE FROM chronicle.rollup_dirty d WHERE d.origin = p_origin;
	cands := ARRAY(SELECT DISTINCT u FROM unnest(coalesce(cands, '{}') || coalesce(dirty, '{}')) u ORDER BY u);
	IF max_minutes IS NOT NULL AND cardinality(cands) > max_minutes THEN
		-- the rest next time: the dirty minutes left are marked again
		INSERT INTO chronicle.rollup_dirty (lo, hi, origin)
		SELECT min(u), max(u) + interval '1 minute', p_origin
		  FROM unnest(cands[max_minutes + 1:]) u WHERE u = ANY (dirty)
		HAVING count(*) > 0;
		cands := cands[1:max_minutes];
		IF NOT forced THEN
			hi := cands[max_minutes] + interval '1 minute';
		END IF;
	END IF;

	IF cardinality(cands) > 0 THEN
		-- A minute without snapshots (past the raw retention) keeps its
		-- rows but the pgbench ones.
		DELETE FROM chronicle.rollup_minute r
		 WHERE r.origin = p_origin AND r.ts = ANY (cands) AND (r.source = 'app' OR r.ts = ANY (withraw));
		INSERT INTO chronicle.rollup_minute (ts, source, key, seconds, intervals, resets, vals, hist, origin)
		SELECT c.*, p_origin FROM chronicle._rollup_compute(cands[1], cands[cardinality(cands)] + interval '1 minute') c
		 WHERE c.ts = ANY (cands) AND (c.source = 'app' OR c.ts = ANY (withraw));
		minutes := cardinality(cands);

		hrs := ARRAY(SELECT DISTINCT date_trunc('hour', u) FROM unnest(cands) u);
		DELETE FROM chronicle.rollup_hour r WHERE r.origin = p_origin AND r.ts = ANY (hrs);
		INSERT INTO chronicle.rollup_hour (ts, source, key, seconds, intervals, resets, vals, hist, origin)
		SELECT h.*, p_origin FROM chronicle._rollup_hours(hrs) h;
		hours := cardinality(hrs);
	END IF;

	IF NOT forced AND hi > lo THEN
		-- Nothing in the day looked at: jump to the next snapshot.
		IF cardinality(cands) = 0 AND hi < complete THEN
			hi := greatest(hi, least(complete,
			               date_trunc('minute', (SELECT min(sn.ts) FROM chronicle._snapshot sn WHERE sn.ts > hi))));
		END IF;
		INSERT INTO chronicle.rollup_state AS s (origin, done_until) VALUES (p_origin, hi)
		ON CONFLICT (origin) DO UPDATE SET done_until = greatest(s.done_until, excluded.done_until);
	END IF;
END;
$$;

COMMENT ON FUNCTION chronicle._rollup_origin(integer, integer, timestamptz, timestamptz) IS
	'chronicle._rollup() of one origin: this server (0) or a subscribed server';

-- Housekeeping's rollup: _rollup_origin() of this server's history and
-- then of each subscribed server's, each as far as its own rollup_state
-- says (at most max_minutes minutes each).  One run at a time in a
-- database: another one returns at once, with NULLs (nothing done, not
-- nothing to do), so that the housekeeper tries again soon.
CREATE FUNCTION chronicle._rollup(max_minutes integer DEFAULT NULL,
	from_ts timestamptz DEFAULT NULL, to_ts timestamptz DEFAULT NULL,
	OUT minutes integer, OUT hours integer)
RETURNS record
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	o integer;
	r record;
BEGIN
	minutes := 0;
	hours := 0;
	IF max_minutes < 1 THEN
		RAISE EXCEPTION 'chronicle.rollup: max_minutes must be at least 1'
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'NULL rolls up every minute waiting.';
	END IF;
	IF from_ts IS NOT NULL OR to_ts IS NOT NULL THEN
		PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.rollup');
	END IF;
	IF NOT pg_try_advisory_xact_lock('chronicle._rollup(integer,timestamptz,timestamptz)'::regprocedure::oid::bigint) THEN
		minutes := NULL;
		hours := NULL;
		RETURN;
	END IF;
	FOR o IN SELECT 0 UNION ALL SELECT x.origin_id FROM chronicle.origin x WHERE x.kind = 'subscription' ORDER BY 1
	LOOP
		r := chronicle._rollup_origin(o, max_minutes, from_ts, to_ts);
		minutes := minutes + r.minutes;
		hours := hours + r.hours;
	END LOOP;
END;
$$;

COMMENT ON FUNCTION chronicle._rollup(integer, timestamptz, timestamptz) IS
	'Housekeeping''s rollup: the complete minutes not rolled up yet (at most max_minutes), late ones, and the hours they belong to; or a range again';

-- Rolls up from SQL (pg_cron, or after loading history by hand): what
-- the collector does every minute, without limit.
CREATE FUNCTION chronicle.rollup(from_ts timestamptz DEFAULT NULL, to_ts timestamptz DEFAULT NULL,
	OUT minutes integer, OUT hours integer)
RETURNS record
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT * FROM chronicle._rollup(NULL, from_ts, to_ts)
$$;

COMMENT ON FUNCTION chronicle.rollup(timestamptz, timestamptz) IS
	'Rolls up the history into rollup_minute and rollup_hour now (every minute waiting; or the range given, again); returns how many minutes and hours were written, NULL while another rollup runs';

-- pgbench rows loaded or deleted: their range is rolled up again.
CREATE FUNCTION chronicle._rollup_app_changed()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	-- the runs of the origins rolled up (this server's and the subscribed
	-- servers'): imported runs are not (05_origin.sql)
	INSERT INTO chronicle.rollup_dirty (lo, hi, origin)
	SELECT min(c.ts), max(c.ts), r.origin
	  FROM changed c JOIN chronicle.run r ON r.run_id = c.run_id
	 WHERE r.origin = 0 OR r.origin IN (SELECT x.origin_id FROM chronicle.origin x WHERE x.kind = 'subscription')
	 GROUP BY r.origin;
	RETURN NULL;
END;
$$;

CREATE TRIGGER rollup_app_inserted AFTER INSERT ON chronicle.app_transaction
	REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
	EXECUTE FUNCTION chronicle._rollup_app_changed();
CREATE TRIGGER rollup_app_deleted AFTER DELETE ON chronicle.app_transaction
	REFERENCING OLD TABLE AS changed FOR EACH STATEMENT
	EXECUTE FUNCTION chronicle._rollup_app_changed();

REVOKE ALL ON FUNCTION chronicle._rollup_retention() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup_sources() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup_compute(timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._latency_bucket(float8) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._latency_bucket_value(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._hist_percentiles(jsonb, float8[], float8, float8) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup_merge(jsonb[], integer[], integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup_decode(float8[], text[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup_encode(jsonb, text[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup_vals(text, float8[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup_hours(timestamptz[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup(integer, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup_origin(integer, integer, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.rollup(timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rollup_app_changed() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._rollup_sources() TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._rollup_compute(timestamptz, timestamptz) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._latency_bucket(float8) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._latency_bucket_value(integer) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._hist_percentiles(jsonb, float8[], float8, float8) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._rollup_merge(jsonb[], integer[], integer) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._rollup_decode(float8[], text[], text[]) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._rollup_encode(jsonb, text[], text[]) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._rollup_vals(text, float8[]) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._rollup_hours(timestamptz[]) TO pg_monitor, pg_read_all_stats;

-- ---------------------------------------------------------------------
-- Reading rollups.

-- A counter's sum in a rollup row's vals as _rollup_vals() gives them: 0
-- when left out (all zero), NULL when it was NULL in every interval ([]).
CREATE FUNCTION chronicle._rv(vals jsonb, col text)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT CASE WHEN vals ? col THEN (vals -> col ->> 0)::float8 ELSE 0 END $$;

-- A gauge's last value in a rollup row's vals as _rollup_vals() gives them.
CREATE FUNCTION chronicle._rv_last(vals jsonb, col text)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (vals -> col ->> 3)::float8 $$;

-- The resolution a long-window function uses.  'raw' (every snapshot
-- interval) when the raw rows cover the window (no rollup holds a whole
-- minute of it from before the oldest snapshot left) and the window is
-- at most raw_limit long, or no rollup holds any of it (not rolled up
-- yet); else 'minute' up to a day, 'hour' beyond (each read under 0.5 s).  A resolution asked
-- for is checked and kept.
CREATE FUNCTION chronicle._resolution(caller text, from_ts timestamptz, to_ts timestamptz, resolution text,
                                      raw_limit interval DEFAULT '6 hours')
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	oldest timestamptz;
BEGIN
	IF resolution IS NULL OR resolution NOT IN ('auto', 'raw', 'minute', 'hour') THEN
		RAISE EXCEPTION '%: unknown resolution "%"', caller, resolution
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Pass ''auto'' (the default), ''raw'' (every snapshot interval), ''minute'' or ''hour''.';
	END IF;
	-- The rollups are this server's and the subscribed servers' (05_origin.sql):
	-- an imported run's history is read raw.
	IF chronicle._origin() <> 0
	   AND NOT EXISTS (SELECT FROM chronicle.origin o
	                    WHERE o.origin_id = chronicle._origin() AND o.kind = 'subscription') THEN
		IF resolution IN ('minute', 'hour') THEN
			RAISE EXCEPTION '%: no % rollups of origin %: imported history is read raw', caller, resolution, chronicle._origin()
				USING ERRCODE = 'invalid_parameter_value',
				      HINT = 'Pass ''auto'' or ''raw''.';
		END IF;
		RETURN 'raw';
	END IF;
	IF resolution <> 'auto' THEN
		RETURN resolution;
	END IF;
	oldest := (SELECT min(s.ts) FROM chronicle._snapshot s);
	IF oldest IS NULL OR oldest <= from_ts
	   OR NOT EXISTS (SELECT FROM chronicle.rollup_minute r
	                   WHERE r.origin = chronicle._origin() AND r.source = 'intervals'
	                     AND r.ts >= date_trunc('minute', from_ts)
	                     AND r.ts < to_ts AND r.ts + interval '1 minute' <= oldest) THEN
		-- the raw rows cover the window
		IF to_ts - from_ts <= raw_limit
		   OR NOT EXISTS (SELECT FROM chronicle.rollup_minute r
		                   WHERE r.origin = chronicle._origin() AND r.source = 'intervals'
		                     AND r.ts >= date_trunc('minute', from_ts)
		                     AND r.ts < to_ts) THEN
			RETURN 'raw';
		END IF;
	END IF;
	RETURN CASE WHEN to_ts - from_ts <= interval '1 day' THEN 'minute' ELSE 'hour' END;
END;
$$;

COMMENT ON FUNCTION chronicle._resolution(text, timestamptz, timestamptz, text, interval) IS
	'The resolution for a window: raw up to raw_limit when the raw rows cover it (or nothing is rolled up), else minute up to a day, else hour';

-- The timeline from the rollups: one row per minute or hour, the same
-- columns.  (The values are read from vals by their slot, found once per
-- call in ix, not through _rollup_vals(): decoding every row would cost
-- more than the rest.)  Rates are the bucket's deltas over its seconds (intervals in
-- which a source was reset left out); gauges (buffers, memory) are the
-- last value of the bucket; active_* the average over the bucket; the CPU
-- of the server's processes (os_process_cpu) the bucket's CPU time of each
-- backend type over its seconds; tps the
-- bucket's pgbench transactions over its seconds, latency percentiles
-- from its histogram (within 1 %).
CREATE FUNCTION chronicle._timeline_rollup(from_ts timestamptz, to_ts timestamptz, res text,
                                           waits boolean, detail boolean)
RETURNS SETOF chronicle.timeline_row
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET work_mem = '256MB'
SET enable_hashagg = on
AS $$
#variable_conflict use_column
DECLARE
	step    interval := CASE res WHEN 'minute' THEN interval '1 minute' ELSE interval '1 hour' END;
	unit    text := CASE res WHEN 'minute' THEN 'minute' ELSE 'hour' END;
	lo      timestamptz := date_trunc(unit, from_ts);
	tail_lo timestamptz;
	tail_hi timestamptz := date_trunc('minute', to_ts - interval '1 microsecond') + interval '1 minute';
	ix      integer[];
BEGIN
	-- Where each number read below is in vals: source.column.slot (0-2 of
	-- a counter, 0-3 of a gauge), NULL for a column the source lacks.
	SELECT array_agg(l.slot ORDER BY n.o) INTO ix
	  FROM unnest(ARRAY['database.xact_commit.0', 'database.xact_rollback.0', 'database.blks_hit.0', 'database.blks_read.0', 'io.reads.0', 'io.writes.0', 'io.extends.0', 'io.fsyncs.0', 'io.read_bytes.0', 'io.write_bytes.0', 'io.extend_bytes.0', 'wal.wal_bytes.0', 'wal.wal_fpi.0', 'wal.wal_records.0', 'checkpointer.num_timed.0', 'checkpointer.num_requested.0', 'checkpointer.buffers_written.0', 'buffers.buffers_used.3', 'buffers.buffers_dirty.3', 'os_memory.mem_free.3', 'os_memory.mem_available.3', 'os_memory.dirty.3', 'os_memory.writeback.3', 'wait_sampler.ticks_due.0', 'wait_sampler.ticks_taken.0', 'wait_sampler.active_cpu.0', 'wait_sampler.active_io.0', 'wait_sampler.active_lwlock.0', 'wait_sampler.active_lock.0', 'wait_sampler.active_ipc.0', 'wait_sampler.active_client.0', 'wait_sampler.active_timeout.0', 'wait_sampler.active_other.0', 'wait.samples.0', 'checkpointer.num_done.0', 'wait_sampler.background_active.0', 'os_cpu.user_ms.0', 'os_cpu.nice_ms.0', 'os_cpu.system_ms.0', 'os_cpu.idle_ms.0', 'os_cpu.iowait_ms.0', 'os_cpu.irq_ms.0', 'os_cpu.softirq_ms.0', 'os_cpu.steal_ms.0', 'os_cpu.procs_running.3', 'os_process_cpu.user_ms.0', 'os_process_cpu.system_ms.0', 'os_process_cpu.run_delay_ms.0']) WITH ORDINALITY AS n(name, o)
	  LEFT JOIN (SELECT s.source || '.' || c.col || '.' || i.i AS name,
	                    CASE WHEN c.gauge THEN 3 * cardinality(s.counters) + 4 * (c.o - cardinality(s.counters) - 1) + i.i + 1
	                         ELSE 3 * (c.o - 1) + i.i + 1 END::integer AS slot
	               FROM chronicle._rollup_sources() s
	              CROSS JOIN LATERAL unnest(s.counters || s.gauges) WITH ORDINALITY AS c0(col, o)
	              CROSS JOIN LATERAL (SELECT c0.col, c0.o::integer AS o, c0.o > cardinality(s.counters) AS gauge) c
	              CROSS JOIN generate_series(0, 3) AS i(i)) l ON l.name = n.name;
	-- The buckets touching the window, whole: the stored rows, and the
	-- minutes not rolled up yet computed from the raw rows (the last few).
	SELECT max(m.ts) + interval '1 minute' INTO tail_lo
	  FROM chronicle.rollup_minute m
	 WHERE m.origin = chronicle._origin() AND m.source = 'intervals' AND m.key = '{}'
	   AND m.ts >= lo AND m.ts < to_ts;
	tail_lo := coalesce(tail_lo, lo);
	RETURN QUERY
	WITH r AS MATERIALIZED (
		-- the numbers read once from vals (only those of the row's source),
		-- into narrow rows
		SELECT x.bucket, x.ts, x.source, x.key, x.seconds,
		       CASE WHEN x.source = 'app' THEN x.hist END AS hist,
		       CASE WHEN x.source = 'database' THEN x.vals[ix[1]] END AS xact_commit,
		       CASE WHEN x.source = 'database' THEN x.vals[ix[2]] END AS xact_rollback,
		       CASE WHEN x.source = 'database' THEN x.vals[ix[3]] END AS blks_hit,
		       CASE WHEN x.source = 'database' THEN x.vals[ix[4]] END AS blks_read,
		       CASE WHEN x.source = 'io' THEN x.vals[ix[5]] END AS reads,
		       CASE WHEN x.source = 'io' THEN x.vals[ix[6]] END AS writes,
		       CASE WHEN x.source = 'io' THEN x.vals[ix[7]] END AS extends,
		       CASE WHEN x.source = 'io' THEN x.vals[ix[8]] END AS fsyncs,
		       CASE WHEN x.source = 'io' THEN x.vals[ix[9]] END AS read_bytes,
		       CASE WHEN x.source = 'io' THEN x.vals[ix[10]] END AS write_bytes,
		       CASE WHEN x.source = 'io' THEN x.vals[ix[11]] END AS extend_bytes,
		       CASE WHEN x.source = 'wal' THEN x.vals[ix[12]] END AS wal_bytes,
		       CASE WHEN x.source = 'wal' THEN x.vals[ix[13]] END AS wal_fpi,
		       CASE WHEN x.source = 'wal' THEN x.vals[ix[14]] END AS wal_records,
		       CASE WHEN x.source = 'checkpointer' THEN x.vals[ix[35]] END AS num_done,
		       CASE WHEN x.source = 'checkpointer' THEN x.vals[ix[15]] END AS num_timed,
		       CASE WHEN x.source = 'checkpointer' THEN x.vals[ix[16]] END AS num_requested,
		       CASE WHEN x.source = 'checkpointer' THEN x.vals[ix[17]] END AS buffers_written,
		       CASE WHEN x.source = 'buffers' THEN x.vals[ix[18]] END AS buffers_used,
		       CASE WHEN x.source = 'buffers' THEN x.vals[ix[19]] END AS buffers_dirty,
		       CASE WHEN x.source = 'os_memory' THEN x.vals[ix[20]] END AS mem_free,
		       CASE WHEN x.source = 'os_memory' THEN x.vals[ix[21]] END AS mem_available,
		       CASE WHEN x.source = 'os_memory' THEN x.vals[ix[22]] END AS mem_dirty,
		       CASE WHEN x.source = 'os_memory' THEN x.vals[ix[23]] END AS mem_writeback,
		       CASE WHEN x.source = 'wait_sampler' THEN x.vals[ix[24]] END AS ticks_due,
		       CASE WHEN x.source = 'wait_sampler' THEN x.vals[ix[25]] END AS ticks_taken,
		       CASE WHEN x.source = 'wait_sampler' THEN x.vals[ix[36]] IS NULL END AS old_sampler,
		       CASE WHEN x.source = 'wait_sampler' THEN x.vals[ix[26]] END AS active_cpu,
		       CASE WHEN x.source = 'wait_sampler' THEN x.vals[ix[27]] END AS active_io,
		       CASE WHEN x.source = 'wait_sampler' THEN x.vals[ix[28]] END AS active_lwlock,
		       CASE WHEN x.source = 'wait_sampler' THEN x.vals[ix[29]] END AS active_lock,
		       CASE WHEN x.source = 'wait_sampler' THEN x.vals[ix[30]] END AS active_ipc,
		       CASE WHEN x.source = 'wait_sampler' THEN x.vals[ix[31]] END AS active_client,
		       CASE WHEN x.source = 'wait_sampler' THEN x.vals[ix[32]] END AS active_timeout,
		       CASE WHEN x.source = 'wait_sampler' THEN x.vals[ix[33]] END AS active_other,
		       CASE WHEN x.source = 'wait' THEN x.vals[ix[34]] END AS samples,
		       CASE WHEN x.source = 'os_cpu' THEN x.vals[ix[37]] + x.vals[ix[38]] END AS cpu_usr,
		       CASE WHEN x.source = 'os_cpu' THEN x.vals[ix[39]] + coalesce(x.vals[ix[42]], 0)
		                                          + coalesce(x.vals[ix[43]], 0) END AS cpu_sys,
		       CASE WHEN x.source = 'os_cpu' THEN x.vals[ix[40]] END AS cpu_idle,
		       CASE WHEN x.source = 'os_cpu' THEN x.vals[ix[41]] END AS cpu_iowait,
		       CASE WHEN x.source = 'os_cpu' THEN x.vals[ix[44]] END AS cpu_steal,
		       CASE WHEN x.source = 'os_cpu' THEN x.vals[ix[45]] END AS procs_running,
		       CASE WHEN x.source = 'os_process_cpu' THEN x.vals[ix[46]] END AS pc_user,
		       CASE WHEN x.source = 'os_process_cpu' THEN x.vals[ix[47]] END AS pc_system,
		       CASE WHEN x.source = 'os_process_cpu' THEN x.vals[ix[48]] END AS pc_delay,
		       CASE WHEN x.source = 'app' THEN x.vals[1] END AS transactions,
		       CASE WHEN x.source = 'app' THEN x.vals[3] END AS lat_min,
		       CASE WHEN x.source = 'app' THEN x.vals[4] END AS lat_max
		  FROM (SELECT m.ts AS bucket, m.ts, m.source, m.key, m.seconds, m.vals, m.hist
		          FROM chronicle.rollup_minute m
		         WHERE res = 'minute' AND m.origin = chronicle._origin() AND m.ts >= lo AND m.ts < tail_lo
		        UNION ALL
		        SELECT h.ts, h.ts, h.source, h.key, h.seconds, h.vals, h.hist
		          FROM chronicle.rollup_hour h
		         WHERE res = 'hour' AND h.origin = chronicle._origin() AND h.ts >= lo AND h.ts < tail_lo
		        UNION ALL
		        SELECT date_trunc(unit, c.ts), c.ts, c.source, c.key, c.seconds, c.vals, c.hist
		          FROM chronicle._rollup_compute(tail_lo, tail_hi) c
		         WHERE tail_lo < tail_hi) x
		 WHERE x.source <> 'wait' OR _timeline_rollup.detail
	),
	iv AS (
		SELECT r.bucket, sum(r.seconds) AS s FROM r WHERE r.source = 'intervals' GROUP BY r.bucket
	),
	sec AS (
		SELECT r.bucket, r.source, sum(r.seconds) AS s
		  FROM r WHERE r.key = '{}' GROUP BY r.bucket, r.source
	),
	db AS (
		SELECT r.bucket, sum(coalesce(r.xact_commit, 0)) AS c, sum(coalesce(r.xact_rollback, 0)) AS rb,
		       sum(coalesce(r.blks_hit, 0)) AS h, sum(coalesce(r.blks_read, 0)) AS rd
		  FROM r WHERE r.source = 'database' AND r.key <> '{}' GROUP BY r.bucket
	),
	iok AS (
		SELECT r.bucket, r.key[1] AS grp,
		       sum(coalesce(r.reads, 0)) AS reads, sum(coalesce(r.writes, 0)) AS writes,
		       sum(coalesce(r.extends, 0)) AS extends, sum(coalesce(r.fsyncs, 0)) AS fsyncs,
		       sum(coalesce(r.read_bytes, 0)) AS rb, sum(coalesce(r.write_bytes, 0)) AS wb,
		       sum(coalesce(r.extend_bytes, 0)) AS eb
		  FROM r WHERE r.source = 'io' AND r.key <> '{}' AND r.key[2] <> 'wal'
		 GROUP BY r.bucket, r.key[1]
	),
	io AS (
		SELECT k.bucket, sum(k.reads) AS reads, sum(k.writes) AS writes, sum(k.extends) AS extends,
		       sum(k.fsyncs) AS fsyncs, sum(k.rb) AS rb, sum(k.wb) AS wb, sum(k.eb) AS eb,
		       coalesce(sum(k.wb) FILTER (WHERE k.grp = 'client backend'), 0) AS wb_client,
		       coalesce(sum(k.wb) FILTER (WHERE k.grp = 'checkpointer'), 0) AS wb_ckpt,
		       coalesce(sum(k.wb) FILTER (WHERE k.grp = 'background writer'), 0) AS wb_bgw,
		       coalesce(sum(k.wb) FILTER (WHERE k.grp = 'autovacuum worker'), 0) AS wb_av,
		       CASE WHEN _timeline_rollup.detail THEN jsonb_object_agg(k.grp, jsonb_build_object(
		           'reads_per_s', k.reads / s.s, 'writes_per_s', k.writes / s.s,
		           'extends_per_s', k.extends / s.s, 'fsyncs_per_s', coalesce(k.fsyncs, 0) / s.s,
		           'read_bytes_per_s', k.rb / s.s, 'write_bytes_per_s', k.wb / s.s,
		           'extend_bytes_per_s', k.eb / s.s))
		           FILTER (WHERE coalesce(k.reads, 0) + coalesce(k.writes, 0) + coalesce(k.extends, 0)
		                         + coalesce(k.fsyncs, 0) > 0 AND s.s > 0) END AS by_backend
		  FROM iok k JOIN sec s ON s.bucket = k.bucket AND s.source = 'io'
		 GROUP BY k.bucket
	),
	pck AS (
		SELECT r.bucket, r.key[1] AS grp, sum(r.pc_user) AS u, sum(r.pc_system) AS sy, sum(r.pc_delay) AS d
		  FROM r WHERE r.source = 'os_process_cpu' AND r.key <> '{}'
		 GROUP BY r.bucket, r.key[1]
	),
	pc AS (
		-- the CPU of the server's processes, as the raw timeline's pcpu
		SELECT k.bucket, coalesce(sum(k.u + k.sy), 0) AS cpu,
		       coalesce(sum(k.u + k.sy) FILTER (WHERE k.grp = 'client backend'), 0) AS cpu_client,
		       coalesce(sum(k.u + k.sy) FILTER (WHERE k.grp = 'autovacuum worker'), 0) AS cpu_av,
		       coalesce(sum(k.u + k.sy) FILTER (WHERE k.grp = 'checkpointer'), 0) AS cpu_ckpt,
		       coalesce(sum(k.u + k.sy) FILTER (WHERE k.grp = 'background writer'), 0) AS cpu_bgw,
		       coalesce(sum(k.u + k.sy) FILTER (WHERE k.grp = 'walwriter'), 0) AS cpu_walw,
		       sum(k.d) AS wait,
		       CASE WHEN count(k.d) > 0
		            THEN coalesce(sum(k.d) FILTER (WHERE k.grp = 'client backend'), 0) END AS wait_client,
		       CASE WHEN _timeline_rollup.detail THEN jsonb_object_agg(k.grp, jsonb_build_object(
		           'cpu', (k.u + k.sy) / 1000 / s.s, 'user', k.u / 1000 / s.s,
		           'system', k.sy / 1000 / s.s, 'cpu_wait', k.d / 1000 / s.s))
		           FILTER (WHERE (k.u + k.sy > 0 OR k.d > 0) AND s.s > 0) END AS by_backend
		  FROM pck k JOIN sec s ON s.bucket = k.bucket AND s.source = 'os_process_cpu'
		 GROUP BY k.bucket
	),
	one AS (
		-- the unkeyed sources: sums, and the gauges' last values
		SELECT r.bucket,
		       sum(coalesce(r.wal_bytes, 0)) FILTER (WHERE r.source = 'wal') AS wal_bytes,
		       sum(coalesce(r.wal_fpi, 0)) FILTER (WHERE r.source = 'wal') AS wal_fpi,
		       sum(coalesce(r.wal_records, 0)) FILTER (WHERE r.source = 'wal') AS wal_records,
		       sum(r.num_done) FILTER (WHERE r.source = 'checkpointer') AS num_done,
		       sum(coalesce(r.num_timed, 0) + coalesce(r.num_requested, 0))
		           FILTER (WHERE r.source = 'checkpointer') AS num_tr,
		       sum(coalesce(r.buffers_written, 0)) FILTER (WHERE r.source = 'checkpointer') AS ck_written,
		       (array_agg(r.buffers_used ORDER BY r.ts DESC) FILTER (WHERE r.source = 'buffers'))[1] AS bu_used,
		       (array_agg(r.buffers_dirty ORDER BY r.ts DESC) FILTER (WHERE r.source = 'buffers'))[1] AS bu_dirty,
		       (array_agg(r.mem_free ORDER BY r.ts DESC) FILTER (WHERE r.source = 'os_memory'))[1] AS mem_free,
		       (array_agg(r.mem_available ORDER BY r.ts DESC) FILTER (WHERE r.source = 'os_memory'))[1] AS mem_available,
		       (array_agg(r.mem_dirty ORDER BY r.ts DESC) FILTER (WHERE r.source = 'os_memory'))[1] AS mem_dirty,
		       (array_agg(r.mem_writeback ORDER BY r.ts DESC) FILTER (WHERE r.source = 'os_memory'))[1] AS mem_writeback,
		       sum(coalesce(r.ticks_due, 0)) FILTER (WHERE r.source = 'wait_sampler') AS ticks_due,
		       sum(coalesce(r.ticks_taken, 0)) FILTER (WHERE r.source = 'wait_sampler') AS ticks_taken,
		       -- active_* before 0.2.0 counted background processes too
		       bool_or(r.old_sampler) FILTER (WHERE r.source = 'wait_sampler') AS old_sampler,
		       sum(coalesce(r.active_cpu, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_cpu,
		       sum(coalesce(r.active_io, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_io,
		       sum(coalesce(r.active_lwlock, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_lwlock,
		       sum(coalesce(r.active_lock, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_lock,
		       sum(coalesce(r.active_ipc, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_ipc,
		       sum(coalesce(r.active_client, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_client,
		       sum(coalesce(r.active_timeout, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_timeout,
		       sum(coalesce(r.active_other, 0)) FILTER (WHERE r.source = 'wait_sampler') AS a_other,
		       sum(r.cpu_usr) FILTER (WHERE r.source = 'os_cpu') AS cpu_usr,
		       sum(r.cpu_sys) FILTER (WHERE r.source = 'os_cpu') AS cpu_sys,
		       sum(r.cpu_idle) FILTER (WHERE r.source = 'os_cpu') AS cpu_idle,
		       sum(r.cpu_iowait) FILTER (WHERE r.source = 'os_cpu') AS cpu_iowait,
		       sum(r.cpu_steal) FILTER (WHERE r.source = 'os_cpu') AS cpu_steal,
		       (array_agg(r.procs_running ORDER BY r.ts DESC) FILTER (WHERE r.source = 'os_cpu'))[1] AS procs_running
		  FROM r WHERE r.source IN ('wal', 'checkpointer', 'buffers', 'os_memory', 'wait_sampler', 'os_cpu')
		 GROUP BY r.bucket
	),
	wk AS (
		-- database time, classified once per key (OFFSET 0: not pushed
		-- below the DISTINCT)
		SELECT k.key FROM (SELECT DISTINCT r.key FROM r WHERE r.source = 'wait' AND r.key <> '{}' OFFSET 0) k
		 WHERE chronicle._wait_activity(k.key[1], k.key[2], k.key[3], k.key[4]) = 'database'
	),
	wt AS (
		SELECT r.bucket, r.key[3] || ':' || r.key[4] AS ev, sum(coalesce(r.samples, 0)) AS n
		  FROM r JOIN wk ON wk.key = r.key
		 WHERE r.source = 'wait'
		 GROUP BY r.bucket, r.key[3], r.key[4]
		HAVING sum(coalesce(r.samples, 0)) > 0
	),
	tw AS (
		SELECT w.bucket,
		       jsonb_agg(jsonb_build_object('wait', w.ev, 'samples', w.n::bigint,
		                                    'share', round((w.n / w.total)::numeric, 3)) ORDER BY w.rk)
		           FILTER (WHERE w.rk <= 3) AS top
		  FROM (SELECT w.*, row_number() OVER (PARTITION BY w.bucket ORDER BY w.n DESC, w.ev) AS rk,
		               sum(w.n) OVER (PARTITION BY w.bucket) AS total
		          FROM wt w) w
		 GROUP BY w.bucket
	),
	app AS (
		SELECT a.bucket, sum(a.transactions) AS n, min(a.lat_min) AS lat_min, max(a.lat_max) AS lat_max,
		       (SELECT jsonb_object_agg(x.b, x.n)
		          FROM (SELECT e.key AS b, sum(e.value::bigint) AS n
		                  FROM unnest(array_agg(a.hist)) AS hh(j), jsonb_each_text(hh.j) e
		                 GROUP BY e.key) x) AS hist
		  FROM r a WHERE a.source = 'app'
		 GROUP BY a.bucket
	),
	has AS MATERIALIZED (
		SELECT EXISTS (SELECT FROM r WHERE r.source = 'app') AS app,
		       _timeline_rollup.detail AND EXISTS (SELECT FROM chronicle.waits_history) AS waits
	)
	SELECT iv.bucket, iv.bucket + step, iv.s,
	       coalesce(db.c, 0) / nullif(sd.s, 0), coalesce(db.rb, 0) / nullif(sd.s, 0),
	       db.h / nullif(db.h + db.rd, 0),
	       coalesce(io.reads, 0) / nullif(si.s, 0), coalesce(io.writes, 0) / nullif(si.s, 0),
	       coalesce(io.extends, 0) / nullif(si.s, 0), coalesce(io.fsyncs, 0) / nullif(si.s, 0),
	       coalesce(io.rb, 0) / nullif(si.s, 0), coalesce(io.wb, 0) / nullif(si.s, 0),
	       coalesce(io.eb, 0) / nullif(si.s, 0),
	       coalesce(io.wb_client, 0) / nullif(si.s, 0), coalesce(io.wb_ckpt, 0) / nullif(si.s, 0),
	       coalesce(io.wb_bgw, 0) / nullif(si.s, 0), coalesce(io.wb_av, 0) / nullif(si.s, 0),
	       CASE WHEN si.s > 0 AND _timeline_rollup.detail THEN coalesce(io.by_backend, '{}') END,
	       one.wal_bytes / nullif(sw.s, 0), one.wal_fpi / nullif(sw.s, 0), one.wal_records / nullif(sw.s, 0),
	       coalesce(one.num_done, one.num_tr)::bigint, one.ck_written::bigint,
	       one.bu_used::bigint, one.bu_dirty::bigint,
	       one.mem_free::bigint, one.mem_available::bigint, one.mem_dirty::bigint, one.mem_writeback::bigint,
	       one.cpu_usr / cpu.t, one.cpu_sys / cpu.t, one.cpu_iowait / cpu.t, one.cpu_steal / cpu.t,
	       one.cpu_idle / cpu.t, one.procs_running::bigint,
	       coalesce(pc.cpu, 0) / 1000 / nullif(sp.s, 0), coalesce(pc.cpu_client, 0) / 1000 / nullif(sp.s, 0),
	       coalesce(pc.cpu_av, 0) / 1000 / nullif(sp.s, 0), coalesce(pc.cpu_ckpt, 0) / 1000 / nullif(sp.s, 0),
	       coalesce(pc.cpu_bgw, 0) / 1000 / nullif(sp.s, 0), coalesce(pc.cpu_walw, 0) / 1000 / nullif(sp.s, 0),
	       pc.wait / 1000 / nullif(sp.s, 0), pc.wait_client / 1000 / nullif(sp.s, 0),
	       CASE WHEN sp.s > 0 AND _timeline_rollup.detail THEN coalesce(pc.by_backend, '{}') END,
	       ws.cpu + ws.io + ws.lwlock + ws.lock + ws.ipc + ws.client + ws.timeout + ws.other,
	       ws.cpu, ws.io, ws.lwlock, ws.lock, ws.ipc, ws.client, ws.timeout, ws.other,
	       CASE WHEN has.waits THEN coalesce(tw.top, '[]') END,
	       CASE WHEN _timeline_rollup.waits THEN one.ticks_taken / nullif(one.ticks_due, 0) END,
	       CASE WHEN has.app THEN coalesce(app.n, 0) / nullif(iv.s, 0) END,
	       p.p[1], p.p[2],
	       res
	  FROM iv
	 CROSS JOIN has
	  LEFT JOIN sec sd ON sd.bucket = iv.bucket AND sd.source = 'database'
	  LEFT JOIN sec si ON si.bucket = iv.bucket AND si.source = 'io'
	  LEFT JOIN sec sw ON sw.bucket = iv.bucket AND sw.source = 'wal'
	  LEFT JOIN sec sp ON sp.bucket = iv.bucket AND sp.source = 'os_process_cpu'
	  LEFT JOIN db ON db.bucket = iv.bucket
	  LEFT JOIN io ON io.bucket = iv.bucket
	  LEFT JOIN pc ON pc.bucket = iv.bucket
	  LEFT JOIN one ON one.bucket = iv.bucket
	  LEFT JOIN LATERAL (
		SELECT nullif(one.cpu_usr + one.cpu_sys + one.cpu_idle + coalesce(one.cpu_iowait, 0)
		              + coalesce(one.cpu_steal, 0), 0) AS t) cpu ON true
	  LEFT JOIN LATERAL (
		SELECT one.a_cpu / t.t AS cpu, one.a_io / t.t AS io, one.a_lwlock / t.t AS lwlock,
		       one.a_lock / t.t AS lock, one.a_ipc / t.t AS ipc, one.a_client / t.t AS client,
		       one.a_timeout / t.t AS timeout, one.a_other / t.t AS other
		  FROM (SELECT CASE WHEN NOT one.old_sampler THEN nullif(one.ticks_taken, 0) END AS t) t
		 WHERE _timeline_rollup.waits) ws ON true
	  LEFT JOIN tw ON tw.bucket = iv.bucket
	  LEFT JOIN app ON app.bucket = iv.bucket
	  LEFT JOIN LATERAL (SELECT chronicle._hist_percentiles(app.hist, '{0.5,0.99}', app.lat_min, app.lat_max) AS p
	                      WHERE app.hist IS NOT NULL) p ON true
	 ORDER BY iv.bucket;
END;
$$;

REVOKE ALL ON FUNCTION chronicle._rv(jsonb, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._rv_last(jsonb, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._resolution(text, timestamptz, timestamptz, text, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._timeline_rollup(timestamptz, timestamptz, text, boolean, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._rv(jsonb, text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._rv_last(jsonb, text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._resolution(text, timestamptz, timestamptz, text, interval) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._timeline_rollup(timestamptz, timestamptz, text, boolean, boolean) TO pg_monitor, pg_read_all_stats;
