-- The analysis functions of every analysed source, made from what its C
-- file declares (src/source.h: the columns' kinds and the source's
-- ChronicleAnalysis), at CREATE EXTENSION and again at every upgrade, as
-- the history views are (10_history.sql).  A source with the prefix p gets:
--
--   p_deltas(from, to, [for_<filter> ..., changed_only])
--       per interval (and key) the deltas and rates of its counters, the
--       value of its gauges, its per-operation ratios; p_values() when all
--       its values are gauges (buffers)
--   p_totals(from, to, [for_<filter> ...]), p_run_totals(run, [...])
--       the sums over a window or a run, per key
--   _p_sums(from, to, [for_<filter> ..., by, exclude_cols, exclude_vals])
--       (keyed) per interval the changed keys' deltas summed, by one key
--       column when by is given: what series() and timeline() read
--   _p_ends(from, to)
--       (keyed) per key and segment the baseline and last values: the
--       totals' shortcut
--   its rows of chronicle.metric (what percentiles() knows)
--
-- The per-interval functions check their arguments and call the engine,
-- chronicle._deltas() (src/deltas.c), which describes the source from the
-- same C declaration and reads the rows once in time order.  Keyed
-- sources give a row per key and interval (zero-filled unless
-- changed_only); single-row sources a row per interval.  Reset: a changed
-- reset column or a counter going backwards flags the interval reset =
-- true with NULL deltas (the row is the new baseline).  Born at zero: see
-- src/source.h, ChronicleAnalysis.
--
-- Privileges: chronicle._deltas() and _ends() are granted to nobody; the
-- functions made here are SECURITY DEFINER and granted to pg_monitor and
-- pg_read_all_stats.  The only names a caller chooses are _p_sums()'s
-- "by" and "exclude_cols", which it checks against the source's keys
-- before the engine sees them; filter values are parameters.

-- A source's description as the functions below write SQL from it: names
-- and SQL types of its keys, attributes and values (counters, time
-- counters, gauges, with their kind letter c, t or g), its reset column,
-- and its ChronicleAnalysis.  fn: the per-interval function's name.
CREATE FUNCTION chronicle._analysis_source(src text,
	OUT prefix text, OUT fn text,
	OUT keys text[], OUT key_types text[],
	OUT attrs text[], OUT attr_types text[],
	OUT vals text[], OUT val_kinds text[], OUT val_types text[],
	OUT reset_col text, OUT filters text[],
	OUT per_op text[], OUT per_op_time text[], OUT per_op_ops text[],
	OUT bytes text[], OUT bytes_ops text[], OUT bytes_unit text,
	OUT born_at_zero boolean, OUT gauge_unit text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT a.prefix,
	       a.prefix || CASE WHEN bool_and(c.kind = 'gauge') FILTER (WHERE c.kind IN ('counter', 'time', 'gauge'))
	                        THEN '_values' ELSE '_deltas' END,
	       coalesce(array_agg(c.column_name ORDER BY c.ordinal) FILTER (WHERE c.kind = 'key'), '{}'),
	       coalesce(array_agg(format_type(c.column_type, NULL) ORDER BY c.ordinal) FILTER (WHERE c.kind = 'key'), '{}'),
	       coalesce(array_agg(c.column_name ORDER BY c.ordinal) FILTER (WHERE c.kind = 'attribute'), '{}'),
	       coalesce(array_agg(format_type(c.column_type, NULL) ORDER BY c.ordinal) FILTER (WHERE c.kind = 'attribute'), '{}'),
	       coalesce(array_agg(c.column_name ORDER BY c.ordinal) FILTER (WHERE c.kind IN ('counter', 'time', 'gauge')), '{}'),
	       coalesce(array_agg(left(c.kind, 1) ORDER BY c.ordinal) FILTER (WHERE c.kind IN ('counter', 'time', 'gauge')), '{}'),
	       coalesce(array_agg(format_type(c.column_type, NULL) ORDER BY c.ordinal)
	                FILTER (WHERE c.kind IN ('counter', 'time', 'gauge')), '{}'),
	       min(c.column_name) FILTER (WHERE c.kind = 'reset'),
	       a.filters, a.per_op, a.per_op_time, a.per_op_ops, a.bytes, a.bytes_ops, a.bytes_unit,
	       a.born_at_zero, a.gauge_unit
	  FROM chronicle._source_analysis() a
	  JOIN chronicle._source_columns() c ON c.source = a.source
	 WHERE a.source = src
	 GROUP BY a.source, a.prefix, a.filters, a.per_op, a.per_op_time, a.per_op_ops, a.bytes, a.bytes_ops,
	          a.bytes_unit, a.born_at_zero, a.gauge_unit
$$;
REVOKE ALL ON FUNCTION chronicle._analysis_source(text) FROM PUBLIC;

-- Creates (or replaces) one function of a source and grants it.  A
-- function whose result a new library changed (a column added to a source)
-- cannot be replaced: it is dropped and made again, so that adding a
-- column needs no upgrade step written by hand.
CREATE FUNCTION chronicle._analysis_create(name text, params text[], result text[], body text,
	engine boolean, lang text DEFAULT 'plpgsql')
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	sig text;
	ddl text;
BEGIN
	-- the signature: the parameters' types, without names and defaults
	SELECT coalesce(string_agg(split_part(regexp_replace(p, '^\S+\s+', ''), ' DEFAULT ', 1), ', ' ORDER BY o), '')
	  INTO sig FROM unnest(params) WITH ORDINALITY AS x(p, o);
	ddl := format(E'CREATE OR REPLACE FUNCTION chronicle.%I(%s)\nRETURNS TABLE (%s)\nLANGUAGE %s STABLE\n%s'
	              'SET search_path = pg_catalog, pg_temp\n%s%s%sAS %L',
	              name, array_to_string(params, ', '), array_to_string(result, ', '), lang,
	              -- chronicle._deltas() is granted to no role (see above)
	              CASE WHEN engine THEN E'SECURITY DEFINER\n' ELSE '' END,
	              CASE WHEN lang = 'plpgsql' THEN E'SET plan_cache_mode = force_custom_plan\n' ELSE '' END,
	              -- a function of a run reads its origin, which run_window()
	              -- sets for the call only (05_origin.sql)
	              CASE WHEN params[1] = 'run text' THEN E'SET chronicle.origin = 0\n' ELSE '' END,
	              -- the result is materialized twice (by _deltas and by RETURN
	              -- QUERY): a day of rows stays in memory instead of going to disk
	              CASE WHEN engine THEN E'SET work_mem = ''256MB''\n' ELSE '' END,
	              CASE WHEN lang = 'plpgsql' THEN E'#variable_conflict use_column\n' ELSE '' END || body);
	BEGIN
		EXECUTE ddl;
	EXCEPTION WHEN invalid_function_definition THEN
		EXECUTE format('DROP FUNCTION chronicle.%I(%s)', name, sig);
		EXECUTE ddl;
	END;
	EXECUTE format('REVOKE ALL ON FUNCTION chronicle.%I(%s) FROM PUBLIC', name, sig);
	EXECUTE format('GRANT EXECUTE ON FUNCTION chronicle.%I(%s) TO pg_monitor, pg_read_all_stats', name, sig);
END;
$fn$;
REVOKE ALL ON FUNCTION chronicle._analysis_create(text, text[], text[], text, boolean, text) FROM PUBLIC;

-- The checks of a function's arguments: the window, then each filter whose
-- values PostgreSQL names (_check_name()) or that names a database.
CREATE FUNCTION chronicle._analysis_checks(name text, filters text[])
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT format(E'\tPERFORM chronicle._check_range($1, $2, %L);\n', 'chronicle.' || name)
	       || coalesce(string_agg(CASE
	              WHEN f IN ('backend_type', 'object', 'context', 'wait_event_type')
	              THEN format(E'\tPERFORM chronicle._check_name(%L, %L, $%s);\n', 'chronicle.' || name, f, i + 2)
	              WHEN f = 'datname'
	              THEN format(E'\tPERFORM chronicle._check_datname(%L, $%s, $1, $2);\n', 'chronicle.' || name, i + 2)
	              ELSE '' END, '' ORDER BY i), '')
	  FROM unnest(filters) WITH ORDINALITY AS x(f, i)
$$;
REVOKE ALL ON FUNCTION chronicle._analysis_checks(text, text[]) FROM PUBLIC;

-- The delta of counter c between two rows (aliases cur and prev), with
-- the bytes fallback: (operations delta) * unit where the bytes are NULL.
CREATE FUNCTION chronicle._analysis_delta(c text, cur text, prev text, unit_alias text,
	bytes text[], bytes_ops text[], bytes_unit text)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN array_position(bytes, c) IS NULL
	            THEN format('%s - %s', cur || quote_ident(c), prev || quote_ident(c))
	            ELSE format('coalesce(%s - %s, (%s - %s) * %s)', cur || quote_ident(c), prev || quote_ident(c),
	                        cur || quote_ident(bytes_ops[array_position(bytes, c)]),
	                        prev || quote_ident(bytes_ops[array_position(bytes, c)]),
	                        unit_alias || quote_ident(bytes_unit)) END
$$;
REVOKE ALL ON FUNCTION chronicle._analysis_delta(text, text, text, text, text[], text[], text) FROM PUBLIC;

-- Makes every function of one source (see the top of this file).
CREATE FUNCTION chronicle._analysis_make(src text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
	d record;
	keyed boolean;
	text_keyed boolean;
	nf integer;
	fparams text[];			-- from_ts, to_ts, for_<filter> ...
	fvals text;				-- the filter values for the engine
	kdef text[];			-- keys with their types
	adef text[];			-- attributes with their types
	counters text[];		-- counters and time counters, in order
	ctypes text[];
	ckinds text[];
	res text[];
	sums text[];
	ends text[];
	tres text[];
	body text;
	items text[];
	kf text;
	ksel text;
	i integer;
BEGIN
	SELECT * INTO d FROM chronicle._analysis_source(src);
	keyed := cardinality(d.keys) > 0;
	text_keyed := keyed AND 'text' = ALL (d.key_types);
	nf := cardinality(d.filters);
	fparams := ARRAY['from_ts timestamptz', 'to_ts timestamptz']
	           || ARRAY(SELECT format('%I text DEFAULT NULL', 'for_' || f) FROM unnest(d.filters) f);
	fvals := CASE WHEN nf = 0 THEN 'NULL'
	              ELSE format('ARRAY[%s]::text[]', (SELECT string_agg('$' || (i + 2), ', ' ORDER BY i)
	                                                 FROM generate_series(1, nf) i)) END;
	kdef := ARRAY(SELECT format('%I %s', k, t) FROM unnest(d.keys, d.key_types) AS x(k, t));
	adef := ARRAY(SELECT format('%I %s', a, t) FROM unnest(d.attrs, d.attr_types) AS x(a, t));
	SELECT coalesce(array_agg(v ORDER BY o), '{}'), coalesce(array_agg(t ORDER BY o), '{}'),
	       coalesce(array_agg(k ORDER BY o), '{}')
	  INTO counters, ctypes, ckinds
	  FROM unnest(d.vals, d.val_types, d.val_kinds) WITH ORDINALITY AS x(v, t, k, o) WHERE k <> 'g';

	-- the per-interval function: keys, attributes, reset, per value its
	-- delta and rate (counters) or value (gauges), the ratios
	res := ARRAY['interval_start timestamptz', 'interval_end timestamptz', 'seconds float8'] || kdef || adef
	       || CASE WHEN d.reset_col IS NOT NULL OR cardinality(counters) > 0
	               THEN ARRAY['reset boolean'] ELSE '{}' END
	       || ARRAY(SELECT x FROM unnest(d.vals, d.val_types, d.val_kinds) WITH ORDINALITY AS u(v, t, k, o),
	                LATERAL unnest(CASE WHEN k = 'g' THEN ARRAY[format('%I %s', v, t)]
	                               ELSE ARRAY[format('%I %s', v, t), format('%I float8', v || '_per_s')] END) x
	                ORDER BY o)
	       || ARRAY(SELECT format('%I float8', p) FROM unnest(d.per_op) p);
	PERFORM chronicle._analysis_create(d.fn,
		fparams || CASE WHEN keyed THEN ARRAY['changed_only boolean DEFAULT false'] ELSE '{}' END,
		res,
		format(E'BEGIN\n%s\tRETURN QUERY\n'
		       '\tSELECT * FROM chronicle._deltas(%L, $1, $2, %s, %s, NULL, ''{}'', ''{}'', NULL)\n'
		       '\t  AS d(%s);\nEND;\n',
		       chronicle._analysis_checks(d.fn, d.filters), src, fvals,
		       CASE WHEN keyed THEN '$' || (nf + 3) ELSE 'false' END, array_to_string(res, ', ')),
		true);
	INSERT INTO chronicle.metric (metric, source, func, keyed, kind, col, col2, filters, unit)
	SELECT d.prefix || '.' || v || CASE WHEN k = 'g' THEN '' ELSE '_per_s' END, d.prefix, d.fn, keyed,
	       CASE WHEN k = 'g' THEN 'gauge' ELSE 'rate' END, v, NULL, d.filters,
	       CASE WHEN k = 'g' THEN d.gauge_unit WHEN k = 't' THEN 'ms/s'
	            WHEN v LIKE '%bytes%' THEN 'bytes/s' ELSE '1/s' END
	  FROM unnest(d.vals, d.val_kinds) AS x(v, k)
	UNION ALL
	SELECT d.prefix || '.' || p, d.prefix, d.fn, keyed, 'per_op', t, o, d.filters, 'ms'
	  FROM unnest(d.per_op, d.per_op_time, d.per_op_ops) AS x(p, t, o);

	IF cardinality(counters) = 0 THEN
		RETURN;					-- gauges only: no sums, no totals
	END IF;

	IF keyed THEN
		-- _p_sums: per interval (and group), the changed keys' deltas summed
		sums := ARRAY['interval_start timestamptz', 'interval_end timestamptz', 'seconds float8']
		        || CASE WHEN text_keyed THEN ARRAY['grp text'] ELSE '{}' END
		        || ARRAY['reset boolean']
		        || ARRAY(SELECT x FROM unnest(counters, ctypes) WITH ORDINALITY AS u(v, t, o),
		                 LATERAL unnest(ARRAY[format('%I %s', v, t), format('%I float8', v || '_per_s')]) x
		                 ORDER BY o)
		        || ARRAY(SELECT format('%I float8', p) FROM unnest(d.per_op) p);
		IF text_keyed THEN
			body := format(E'BEGIN\n'
			               '\tIF NOT coalesce($%1$s = ANY (%4$L::text[]), true)\n'
			               '\t   OR NOT coalesce($%2$s <@ %4$L::text[] AND cardinality($%2$s) = cardinality($%3$s), false) THEN\n'
			               '\t\tRAISE EXCEPTION ''%5$s: by (%%) and exclude_cols (%%) must name key columns'', $%1$s, $%2$s\n'
			               '\t\t\tUSING ERRCODE = ''invalid_parameter_value'',\n'
			               '\t\t\t      HINT = %6$L;\n'
			               '\tEND IF;\n'
			               '\tIF $%1$s IS NOT NULL THEN\n'
			               '\t\tRETURN QUERY\n'
			               '\t\tSELECT * FROM chronicle._deltas(%7$L, $1, $2, %8$s, true, ARRAY[$%1$s], $%2$s, $%3$s, NULL)\n'
			               '\t\t  AS d(%9$s);\n'
			               '\t\tRETURN;\n'
			               '\tEND IF;\n'
			               '\tRETURN QUERY\n'
			               '\tSELECT d.interval_start, d.interval_end, d.seconds, NULL::text, %10$s\n'
			               '\t  FROM chronicle._deltas(%7$L, $1, $2, %8$s, true, ''{}'', $%2$s, $%3$s, NULL)\n'
			               '\t  AS d(%11$s);\n'
			               'END;',
			               nf + 3, nf + 4, nf + 5, d.keys, 'chronicle._' || d.prefix || '_sums',
			               format('The keys are %s; exclude_vals has a value per exclude_cols.',
			                      array_to_string(d.keys, ', ')),
			               src, fvals, array_to_string(sums, ', '),
			               (SELECT string_agg('d.' || split_part(c, ' ', 1), ', ' ORDER BY o)
			                  FROM unnest(sums[5:]) WITH ORDINALITY AS x(c, o)),
			               array_to_string(sums[1:3] || sums[5:], ', '));
			PERFORM chronicle._analysis_create('_' || d.prefix || '_sums',
				fparams || ARRAY['by text DEFAULT NULL', 'exclude_cols text[] DEFAULT ''{}''',
				                 'exclude_vals text[] DEFAULT ''{}'''],
				sums, body, true);
		ELSE
			PERFORM chronicle._analysis_create('_' || d.prefix || '_sums', fparams, sums,
				format(E'BEGIN\n\tRETURN QUERY\n'
				       '\tSELECT * FROM chronicle._deltas(%L, $1, $2, %s, true, ''{}'', ''{}'', ''{}'', NULL)\n'
				       '\t  AS d(%s);\nEND;',
				       src, fvals, array_to_string(sums, ', ')),
				true);
		END IF;

		-- _p_ends: per key and segment, the baseline and the last values
		ends := kdef || adef || ARRAY['segment timestamptz', 'reset boolean', 'intervals bigint']
		        || ARRAY(SELECT x FROM unnest(counters, ctypes) WITH ORDINALITY AS u(v, t, o),
		                 LATERAL unnest(ARRAY[format('%I %s', 'b_' || v, t), format('%I %s', 'l_' || v, t)]) x
		                 ORDER BY o);
		PERFORM chronicle._analysis_create('_' || d.prefix || '_ends',
			ARRAY['from_ts timestamptz', 'to_ts timestamptz'], ends,
			format(E'BEGIN\n\tRETURN QUERY\n\tSELECT * FROM chronicle._ends(%L, $1, $2, NULL)\n\t  AS d(%s);\nEND;',
			       src, array_to_string(ends, ', ')),
			true);
	END IF;

	-- p_totals: the sums of the per-interval deltas per key, with rates
	-- over the window's recorded seconds
	tres := ARRAY['window_start timestamptz', 'window_end timestamptz', 'seconds float8', 'intervals bigint']
	        || kdef || adef || ARRAY['resets bigint']
	        || ARRAY(SELECT x FROM unnest(counters, ckinds) WITH ORDINALITY AS u(v, k, o),
	                 LATERAL unnest(ARRAY[format('%I %s', v, CASE WHEN k = 'c' THEN 'numeric' ELSE 'float8' END),
	                                      format('%I float8', v || '_per_s')]) x
	                 ORDER BY o)
	        || ARRAY(SELECT format('%I float8', p) FROM unnest(d.per_op) p);
	IF keyed THEN
		ksel := (SELECT string_agg(format('%%1$s.%I', k), ', ' ORDER BY o) FROM unnest(d.keys) WITH ORDINALITY AS x(k, o));
		kf := (SELECT string_agg(format(E'\n\t\t   AND ($%s IS NULL OR %%1$s.%I = $%s)', i + 2, f, i + 2), '' ORDER BY i)
		         FROM unnest(d.filters) WITH ORDINALITY AS x(f, i));
		-- the shortcut: without a reset in the window the deltas of a key
		-- telescope (last value minus baseline in each segment); a cell the
		-- view shows as NULL (untracked) has a NULL total
		items := ARRAY(SELECT format('max(e.%I)', a) FROM unnest(d.attrs) a)
		         || ARRAY['0::bigint']
		         || ARRAY(SELECT x FROM unnest(counters, ckinds) WITH ORDINALITY AS u(v, k, o),
		                  LATERAL (SELECT chronicle._analysis_delta(v, 'e.l_', 'e.b_', 'e.', d.bytes, d.bytes_ops, d.bytes_unit) AS de) z,
		                  LATERAL unnest(ARRAY[format('sum(%s)%s', de, CASE WHEN k = 'c' THEN '::numeric' ELSE '' END),
		                                       format('sum(%s)::float8 / secs', de)]) x
		                  ORDER BY o)
		         || ARRAY(SELECT format('sum(e.%1$I - e.%2$I)::float8 / nullif(sum(e.%3$I - e.%4$I), 0)',
		                                'l_' || t, 'b_' || t, 'l_' || c, 'b_' || c)
		                    FROM unnest(d.per_op_time, d.per_op_ops) WITH ORDINALITY AS x(t, c, o) ORDER BY o);
		body := format(E'DECLARE\n\tsecs float8;\n\tn bigint;\n\tws timestamptz;\n\twe timestamptz;\nBEGIN\n%s'
		               '\tSELECT * INTO secs, n, ws, we FROM chronicle._window($1, $2);\n'
		               '\t-- Without a reset in the window, the deltas of a key telescope: its\n'
		               '\t-- total is its last value minus its baseline in each segment, found\n'
		               '\t-- in one time-ordered read instead of differencing every interval.\n'
		               '\tRETURN QUERY\n'
		               '\tWITH e AS MATERIALIZED (\n'
		               '\t\tSELECT * FROM chronicle.%I($1, $2) e\n'
		               '\t\t WHERE true%s\n'
		               '\t)\n'
		               '\tSELECT ws, we, secs, sum(e.intervals)::bigint, %s,\n'
		               '\t       %s\n'
		               '\t  FROM e\n'
		               '\t WHERE NOT EXISTS (SELECT FROM e r WHERE r.reset)\n'
		               '\t GROUP BY %s\n'
		               '\t ORDER BY %s;\n'
		               '\tIF FOUND THEN\n\t\tRETURN;\n\tEND IF;\n',
		               chronicle._analysis_checks(d.prefix || '_totals', d.filters),
		               '_' || d.prefix || '_ends', format(coalesce(kf, ''), 'e'),
		               format(ksel, 'e'), array_to_string(items, E',\n\t       '), format(ksel, 'e'), format(ksel, 'e'));
		-- otherwise the per-interval deltas summed, over every key of the
		-- window with its latest attributes (and its cells' NULLs); no
		-- delta (no interval, or only resets): 0, or NULL for a cell the
		-- view shows as NULL (the key's row minus itself)
		items := ARRAY(SELECT format('coalesce(max(d.%1$I), max(k.%1$I))', a) FROM unnest(d.attrs) a)
		         || ARRAY['count(*) FILTER (WHERE d.reset)']
		         || ARRAY(SELECT x FROM unnest(counters, ckinds) WITH ORDINALITY AS u(v, k, o),
		                  LATERAL (SELECT format('max(%s)', chronicle._analysis_delta(v, 'k.', 'k.', 'k.', d.bytes, d.bytes_ops, d.bytes_unit)) AS zz) z,
		                  LATERAL unnest(ARRAY[format('coalesce(sum(d.%I), %s)%s', v, zz, CASE WHEN k = 'c' THEN '::numeric' ELSE '' END),
		                                       format('coalesce(sum(d.%I), %s)::float8 / secs', v, zz)]) x
		                  ORDER BY o)
		         || ARRAY(SELECT format('sum(d.%I)::float8 / nullif(sum(d.%I), 0)', t, c)
		                    FROM unnest(d.per_op_time, d.per_op_ops) WITH ORDINALITY AS x(t, c, o) ORDER BY o);
		body := body || format(
		               E'\tRETURN QUERY\n'
		               '\tSELECT ws, we, secs, max(k.intervals), %s,\n'
		               '\t       %s\n'
		               '\t  FROM (SELECT DISTINCT ON (%s) %s%s%s,\n'
		               '\t               sum(kk.intervals) OVER (PARTITION BY %s)::bigint AS intervals\n'
		               '\t          FROM chronicle.%I($1, $2) kk\n'
		               '\t         WHERE true%s\n'
		               '\t         ORDER BY %s, kk.segment DESC) k\n'
		               '\t  LEFT JOIN chronicle.%I(%s) d\n'
		               '\t    ON %s\n'
		               '\t GROUP BY %s\n'
		               '\t ORDER BY %s;\n'
		               'END;',
		               format(ksel, 'k'), array_to_string(items, E',\n\t       '),
		               format(ksel, 'kk'), format(ksel, 'kk'),
		               (SELECT coalesce(string_agg(format(', kk.%I', a), ''), '') FROM unnest(d.attrs) a),
		               (SELECT string_agg(format(', kk.%I AS %I', 'l_' || c, c), '') FROM unnest(counters) c),
		               format(ksel, 'kk'), '_' || d.prefix || '_ends', format(coalesce(kf, ''), 'kk'),
		               format(ksel, 'kk'), d.fn,
		               '$1, $2' || (SELECT coalesce(string_agg(', $' || (i + 2), '' ORDER BY i), '')
		                              FROM generate_series(1, nf) i) || ', changed_only => true',
		               (SELECT string_agg(format('d.%1$I = k.%1$I', k), ' AND ' ORDER BY o)
		                  FROM unnest(d.keys) WITH ORDINALITY AS x(k, o)),
		               format(ksel, 'k'), format(ksel, 'k'));
	ELSE
		-- The per-interval rows of a single-row source are one per interval
		-- (the engine's cost): summing them is the exact, reset-aware total,
		-- and they carry the window's intervals too.
		items := ARRAY(SELECT format('max(d.%I)', a) FROM unnest(d.attrs) a)
		         || ARRAY['count(*) FILTER (WHERE d.reset)']
		         || ARRAY(SELECT x FROM unnest(counters, ckinds) WITH ORDINALITY AS u(v, k, o),
		                  LATERAL unnest(ARRAY[format('sum(d.%I)%s', v, CASE WHEN k = 'c' THEN '::numeric' ELSE '' END),
		                                       format('sum(d.%I)::float8 / sum(d.seconds)', v)]) x
		                  ORDER BY o)
		         || ARRAY(SELECT format('sum(d.%I)::float8 / nullif(sum(d.%I), 0)', t, c)
		                    FROM unnest(d.per_op_time, d.per_op_ops) WITH ORDINALITY AS x(t, c, o) ORDER BY o);
		body := format(E'BEGIN\n%s\tRETURN QUERY\n'
		               '\tSELECT min(d.interval_start), max(d.interval_end), sum(d.seconds), count(*),\n'
		               '\t       %s\n'
		               '\t  FROM chronicle.%I($1, $2) d\n'
		               '\t HAVING count(*) > 0;\n'
		               'END;',
		               chronicle._analysis_checks(d.prefix || '_totals', d.filters),
		               array_to_string(items, E',\n\t       '), d.fn);
	END IF;
	PERFORM chronicle._analysis_create(d.prefix || '_totals', fparams, tres,
		body, false);

	-- p_run_totals: the same over a run's window
	PERFORM chronicle._analysis_create(d.prefix || '_run_totals',
		ARRAY['run text'] || fparams[3:], tres,
		format(E'\tSELECT t.* FROM chronicle.run_window($1) r,\n\t       chronicle.%I(%s) t',
		       d.prefix || '_totals',
		       'r.run_from, r.run_to' || (SELECT coalesce(string_agg(', $' || (i + 1), '' ORDER BY i), '')
		                                    FROM generate_series(1, nf) i)),
		false, 'sql');
END;
$fn$;
REVOKE ALL ON FUNCTION chronicle._analysis_make(text) FROM PUBLIC;

-- Every analysed source's functions and metrics, in the order of
-- src/sources.c.
CREATE FUNCTION chronicle._analysis_layout()
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	s text;
BEGIN
	-- the catalog holds the sources' metrics only: made again whole
	DELETE FROM chronicle.metric;
	FOR s IN SELECT a.source FROM chronicle._source_analysis() a LOOP
		PERFORM chronicle._analysis_make(s);
	END LOOP;
END;
$fn$;
COMMENT ON FUNCTION chronicle._analysis_layout() IS
	'Makes every analysed source''s functions (<prefix>_deltas, _totals, _run_totals, _sums, _ends) and metric rows from the C declarations';
REVOKE ALL ON FUNCTION chronicle._analysis_layout() FROM PUBLIC;

-- Marked "-- @upgrade": every upgrade makes the functions again from the
-- new library's declarations at this point of the code, as the install
-- script does (after run_window() in 30_analysis.sql, before the code that
-- calls them).
-- @upgrade
SELECT chronicle._analysis_layout();
