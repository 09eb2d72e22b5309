-- Analysis API, part 3: any per-interval series of the metric catalog, and
-- exact percentiles over the intervals of a window.

-- Looks a metric up, with an error naming the valid ones when unknown, and
-- checks that the filters given apply to it.
CREATE FUNCTION chronicle._metric(caller text, name text, filters text[])
RETURNS chronicle.metric
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m      chronicle.metric;
	f      text;
	valid  text;
BEGIN
	IF name IS NULL THEN
		RAISE EXCEPTION '%: the metric must not be NULL', caller
			USING ERRCODE = 'null_value_not_allowed',
			      HINT = 'SELECT metric FROM chronicle.metric lists the metrics.';
	END IF;
	SELECT * INTO m FROM chronicle.metric WHERE metric = name;
	IF NOT FOUND THEN
		-- The metrics of the source named before the dot, or all of them.
		SELECT string_agg(metric, ', ' ORDER BY metric) INTO valid
		  FROM chronicle.metric WHERE source = split_part(name, '.', 1);
		IF valid IS NULL THEN
			SELECT string_agg(DISTINCT source, ', ' ORDER BY source) INTO valid FROM chronicle.metric;
			RAISE EXCEPTION '%: unknown metric "%"', caller, name
				USING ERRCODE = 'undefined_object',
				      HINT = 'Metrics are named <source>.<column>, sources: ' || valid
				             || '; SELECT metric FROM chronicle.metric lists them all.';
		END IF;
		RAISE EXCEPTION '%: unknown metric "%"', caller, name
			USING ERRCODE = 'undefined_object',
			      HINT = 'Valid metrics: ' || valid || '.';
	END IF;
	FOREACH f IN ARRAY filters LOOP
		IF NOT f = ANY (m.filters) THEN
			RAISE EXCEPTION '%: filter for_% does not apply to metric "%"', caller, f, name
				USING ERRCODE = 'invalid_parameter_value',
				      HINT = CASE WHEN cardinality(m.filters) = 0
				                  THEN 'This metric has no key to filter on.'
				                  ELSE 'It accepts: ' || (SELECT string_agg('for_' || x, ', ') FROM unnest(m.filters) x) || '.' END;
		END IF;
	END LOOP;
	RETURN m;
END;
$$;

-- The per-interval values of one metric over a window: every interval,
-- zero when nothing changed, NULL when the interval is a reset of a key
-- that matches (or, for ms-per-operation metrics, when no operation
-- happened).
CREATE FUNCTION chronicle.series(
	metric text, from_ts timestamptz, to_ts timestamptz,
	for_backend_type text DEFAULT NULL, for_object text DEFAULT NULL,
	for_context text DEFAULT NULL, for_datname text DEFAULT NULL,
	for_wait_event_type text DEFAULT NULL, for_wait_event text DEFAULT NULL,
	for_device text DEFAULT NULL, for_resource text DEFAULT NULL)
RETURNS TABLE (interval_start timestamptz, interval_end timestamptz, seconds float8, value float8)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m     chronicle.metric;
	given text[] := '{}';
	args  text := '';
	expr  text;
	q     text;
	names text[] := ARRAY['backend_type', 'object', 'context', 'datname',
	                      'wait_event_type', 'wait_event', 'device', 'resource'];
	vals  text[] := ARRAY[for_backend_type, for_object, for_context, for_datname,
	                      for_wait_event_type, for_wait_event, for_device, for_resource];
	i     integer;
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.series');
	FOR i IN 1 .. cardinality(names) LOOP
		IF vals[i] IS NOT NULL THEN
			given := given || names[i];
		END IF;
	END LOOP;
	m := chronicle._metric('chronicle.series', metric, given);
	-- Pass the filters the function has; values are bound, never inlined.
	FOR i IN 1 .. cardinality(names) LOOP
		IF names[i] = ANY (m.filters) THEN
			args := args || format(', for_%s => $%s', names[i], i + 2);
		END IF;
	END LOOP;
	IF m.keyed AND m.kind = 'gauge' THEN
		-- A level of every matching key at the end of the interval, summed
		-- (the per-key function carries a key's last value forward).
		q := format('SELECT iv.interval_start, iv.interval_end, iv.seconds, sum(d.%I)::float8
		               FROM chronicle.intervals($1, $2) iv
		               LEFT JOIN chronicle.%I($1, $2%s) d
		                 ON d.interval_end = iv.interval_end
		              GROUP BY iv.interval_start, iv.interval_end, iv.seconds
		              ORDER BY iv.interval_end', m.col, m.func, args);
	ELSIF m.keyed THEN
		-- The matching keys' deltas summed per interval by the engine
		-- (_<source>_sums); an interval where no key changed has no row: 0.
		expr := CASE m.kind
			WHEN 'rate' THEN format('coalesce(d.%I, 0)::float8 / iv.seconds', m.col)
			WHEN 'per_op' THEN format('d.%I::float8 / nullif(d.%I, 0)', m.col, m.col2)
			ELSE format('d.%I::float8', m.col) END;
		q := format('SELECT iv.interval_start, iv.interval_end, iv.seconds,
		                    CASE WHEN coalesce(d.reset, false) THEN NULL ELSE %s END
		               FROM chronicle.intervals($1, $2) iv
		               LEFT JOIN chronicle.%I($1, $2%s) d
		                 ON d.interval_end = iv.interval_end
		              ORDER BY iv.interval_end', expr,
		            '_' || regexp_replace(m.func, '_deltas$', '_sums'), args);
	ELSE
		expr := CASE m.kind
			WHEN 'rate' THEN format('d.%I::float8 / d.seconds', m.col)
			WHEN 'per_op' THEN format('d.%I::float8 / nullif(d.%I, 0)', m.col, m.col2)
			ELSE format('d.%I::float8', m.col) END;
		q := format('SELECT d.interval_start, d.interval_end, d.seconds, %s
		               FROM chronicle.%I($1, $2) d ORDER BY d.interval_end', expr, m.func);
	END IF;
	RETURN QUERY EXECUTE q USING from_ts, to_ts, for_backend_type, for_object, for_context,
		for_datname, for_wait_event_type, for_wait_event, for_device, for_resource;
END;
$$;

COMMENT ON FUNCTION chronicle.series(text, timestamptz, timestamptz, text, text, text, text, text, text, text, text) IS
	'One metric of chronicle.metric per snapshot interval of a window, summed over the keys that match the filters';

CREATE FUNCTION chronicle._check_percentiles(caller text, percentiles float8[])
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF percentiles IS NULL OR cardinality(percentiles) = 0 THEN
		RAISE EXCEPTION '%: no percentiles requested', caller
			USING ERRCODE = 'null_value_not_allowed',
			      HINT = 'Pass fractions such as ''{0.5,0.9,0.99,1}''.';
	END IF;
	IF array_position(percentiles, NULL) IS NOT NULL
	   OR EXISTS (SELECT FROM unnest(percentiles) p WHERE p < 0 OR p > 1 OR p = 'NaN') THEN
		RAISE EXCEPTION '%: percentiles must be fractions between 0 and 1, got %', caller, percentiles
			USING ERRCODE = 'numeric_value_out_of_range',
			      HINT = 'Write the 99th percentile as 0.99 and the maximum as 1.';
	END IF;
END;
$$;

-- Exact percentiles of a per-interval series over a window: computed over
-- the values of every interval of the window (not a percentile of
-- percentiles), with percentile_cont (linear interpolation between the two
-- nearest intervals) by default, or percentile_disc (an actual interval's
-- value) when discrete.  NULL intervals (resets, per-operation metrics
-- without operations) are left out; "intervals" says how many counted.
CREATE FUNCTION chronicle.percentiles(
	metric text, from_ts timestamptz, to_ts timestamptz,
	percentiles float8[] DEFAULT '{0.5,0.9,0.99,1}',
	for_backend_type text DEFAULT NULL, for_object text DEFAULT NULL,
	for_context text DEFAULT NULL, for_datname text DEFAULT NULL,
	for_wait_event_type text DEFAULT NULL, for_wait_event text DEFAULT NULL,
	for_device text DEFAULT NULL, for_resource text DEFAULT NULL,
	discrete boolean DEFAULT false)
RETURNS TABLE (percentile float8, value float8, intervals bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	vals float8[];
	n    bigint;
BEGIN
	PERFORM chronicle._check_percentiles('chronicle.percentiles', percentiles);
	IF discrete IS NULL THEN
		RAISE EXCEPTION 'chronicle.percentiles: discrete must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
			      HINT = 'false: percentile_cont (interpolated), true: percentile_disc.';
	END IF;
	-- (the two ordered-set aggregates share one sort of the values)
	SELECT CASE WHEN discrete THEN percentile_disc(percentiles) WITHIN GROUP (ORDER BY s.value)
	            ELSE percentile_cont(percentiles) WITHIN GROUP (ORDER BY s.value) END,
	       count(s.value)
	  INTO vals, n
	  FROM chronicle.series(metric, from_ts, to_ts, for_backend_type, for_object, for_context,
	                        for_datname, for_wait_event_type, for_wait_event, for_device,
	                        for_resource) s;
	RETURN QUERY
	SELECT p.p, vals[p.i], n
	  FROM unnest(percentiles) WITH ORDINALITY AS p(p, i)
	 ORDER BY p.i;
END;
$$;

COMMENT ON FUNCTION chronicle.percentiles(text, timestamptz, timestamptz, float8[], text, text, text, text, text, text, text, text, boolean) IS
	'Exact percentiles (percentile_cont, or percentile_disc when discrete) of a metric''s per-interval values over a window';

CREATE FUNCTION chronicle.run_percentiles(
	run text, metric text,
	percentiles float8[] DEFAULT '{0.5,0.9,0.99,1}',
	for_backend_type text DEFAULT NULL, for_object text DEFAULT NULL,
	for_context text DEFAULT NULL, for_datname text DEFAULT NULL,
	for_wait_event_type text DEFAULT NULL, for_wait_event text DEFAULT NULL,
	for_device text DEFAULT NULL, for_resource text DEFAULT NULL,
	discrete boolean DEFAULT false)
RETURNS TABLE (percentile float8, value float8, intervals bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
-- the run's origin, set by run_window(), for this call only (05_origin.sql)
SET chronicle.origin = 0
AS $$
	SELECT p.* FROM chronicle.run_window(run) r,
	       chronicle.percentiles(metric, r.run_from, r.run_to, percentiles, for_backend_type,
	                             for_object, for_context, for_datname, for_wait_event_type,
	                             for_wait_event, for_device, for_resource, discrete) p
$$;

COMMENT ON FUNCTION chronicle.run_percentiles(text, text, float8[], text, text, text, text, text, text, text, text, boolean) IS
	'chronicle.percentiles() over the window of a run';

REVOKE ALL ON FUNCTION chronicle._metric(text, text, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._check_percentiles(text, float8[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.series(text, timestamptz, timestamptz, text, text, text, text, text, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.percentiles(text, timestamptz, timestamptz, float8[], text, text, text, text, text, text, text, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.run_percentiles(text, text, float8[], text, text, text, text, text, text, text, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._metric(text, text, text[]) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._check_percentiles(text, float8[]) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.series(text, timestamptz, timestamptz, text, text, text, text, text, text, text, text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.percentiles(text, timestamptz, timestamptz, float8[], text, text, text, text, text, text, text, text, boolean) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.run_percentiles(text, text, float8[], text, text, text, text, text, text, text, text, boolean) TO pg_monitor, pg_read_all_stats;
