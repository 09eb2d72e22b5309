-- pgTAP: one definition per source.  The C column list of every source
-- (chronicle._source_columns()) is the history's SQL shape:
-- chronicle._history_layout() made each source's packed column of
-- chronicle.history and its view chronicle.<source>_history (trigger,
-- comment, grants) from it at CREATE EXTENSION.  Checked here: that the
-- result is what the lists say, that no other history view exists, that the
-- views belong to the extension (pg_dump leaves them to CREATE EXTENSION),
-- and that running the layout again (as every upgrade does) changes
-- nothing.  The same for the analysis functions chronicle._analysis_layout()
-- made from the columns' kinds and each source's ChronicleAnalysis: every
-- value column is in its source's per-interval function, every counter in
-- its totals, every value and ratio in the metric catalog, and nothing else.
BEGIN;
SELECT plan(18);

CREATE TEMP VIEW c_cols AS
SELECT source, ordinal AS position, column_name, column_type, key, description FROM chronicle._source_columns();
CREATE TEMP VIEW t_cols AS
SELECT substr(c.relname, 1, length(c.relname) - length('_history')) AS source,
       (row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum))::integer AS position,
       a.attname::text AS column_name, a.atttypid::regtype AS column_type
  FROM pg_class c
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attname <> 'ts'
 WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relkind = 'v' AND c.relname LIKE '%\_history';

-- Everything _history_layout() makes, as text.
CREATE TEMP VIEW layout AS
SELECT c.relname::text AS obj, pg_get_viewdef(c.oid) AS def, obj_description(c.oid, 'pg_class') AS comment,
       c.relacl::text AS acl,
       (SELECT string_agg(pg_get_triggerdef(t.oid), '; ' ORDER BY t.tgname)
          FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal) AS triggers,
       EXISTS (SELECT FROM pg_depend d
                WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
                  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_chronicle')) AS member
  FROM pg_class c
 WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relkind = 'v' AND c.relname LIKE '%\_history'
UNION ALL
SELECT 'chronicle.history', string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum),
       NULL, NULL, NULL, NULL
  FROM pg_attribute a
 WHERE a.attrelid = 'chronicle.history'::regclass AND a.attnum > 0 AND NOT a.attisdropped;

SELECT ok((SELECT count(DISTINCT source) FROM c_cols) >= 13, 'every source declares its columns');
SELECT is((SELECT array_agg(DISTINCT source ORDER BY source) FROM c_cols),
          (SELECT array_agg(DISTINCT source ORDER BY source) FROM t_cols),
          'a history view per source, and no other history view');
SELECT is((SELECT count(*) FROM c_cols c FULL JOIN t_cols t USING (source, position)
            WHERE c.column_name IS DISTINCT FROM t.column_name OR c.column_type IS DISTINCT FROM t.column_type),
          0::bigint, 'the C columns are the view''s columns, in order, with their types');
SELECT is((SELECT array_agg(a.attname::text ORDER BY a.attnum)
             FROM pg_attribute a
            WHERE a.attrelid = 'chronicle.history'::regclass AND a.attnum > 0 AND NOT a.attisdropped
              AND a.atttypid = 'bytea'::regtype),
          (SELECT array_agg(source ORDER BY n)
             FROM (SELECT source, min(n) AS n
                     FROM chronicle._source_columns() WITH ORDINALITY AS c(source, o, col, typ, key, d, kind, n)
                    GROUP BY source) s),
          'chronicle.history has a packed column per source, in the order of src/sources.c');
SELECT is((SELECT count(*) FROM (SELECT DISTINCT source, description FROM c_cols) c
             LEFT JOIN layout l ON l.obj = c.source || '_history'
            WHERE l.comment IS DISTINCT FROM c.description),
          0::bigint, 'each view''s comment is its source''s description');
SELECT is((SELECT count(*) FROM layout WHERE obj <> 'chronicle.history' AND NOT member),
          0::bigint, 'every history view is a member of the extension (dumped as CREATE EXTENSION)');

CREATE TEMP TABLE layout_before AS SELECT * FROM layout;
SELECT lives_ok('SELECT chronicle._history_layout()', 'the layout runs again on a built history');
SELECT set_eq('SELECT * FROM layout', 'SELECT * FROM layout_before',
              'running the layout again (as every upgrade does) changes nothing');

SELECT throws_ok($$INSERT INTO chronicle.io_history (ts, backend_type, object, context)
                   VALUES ('2020-01-01', NULL, 'relation', 'normal')$$,
                 '23502', NULL, 'a NULL key is refused');
-- no index on the history but its primary key on ts: the analysis reads
-- time ranges only, from a keyframe (chronicle._keyframe()) (on the
-- partitions: see chronicle._partition_layout())
SELECT is((SELECT string_agg(ic.relname || ' (' || pg_get_indexdef(i.indexrelid) || ')', ', ' ORDER BY ic.relname)
             FROM pg_index i
             JOIN pg_class ic ON ic.oid = i.indexrelid
            WHERE i.indrelid = 'chronicle.history_default'::regclass
              AND NOT (i.indisprimary AND i.indnatts = 1)),
	NULL, 'the history has no index but its primary key on ts');

-- The analysis functions, from the same lists.
CREATE TEMP VIEW analysed AS
SELECT a.source, a.prefix, c.column_name, c.kind, c.column_type,
       a.prefix || CASE WHEN bool_and(c.kind = 'gauge') FILTER (WHERE c.kind IN ('counter', 'time', 'gauge'))
                                 OVER (PARTITION BY a.source) THEN '_values' ELSE '_deltas' END AS fn
  FROM chronicle._source_analysis() a JOIN chronicle._source_columns() c USING (source);
CREATE TEMP VIEW fn_cols AS
SELECT p.proname::text AS fn, x.n::text AS column_name, format_type(x.t, NULL) AS column_type
  FROM pg_proc p, unnest(p.proargnames, p.proallargtypes, p.proargmodes) AS x(n, t, m)
 WHERE p.pronamespace = 'chronicle'::regnamespace AND x.m = 't';
CREATE TEMP VIEW analysis_layout AS
SELECT p.oid::regprocedure::text AS obj, pg_get_functiondef(p.oid) AS def, p.proacl::text AS acl
  FROM pg_proc p
 WHERE p.pronamespace = 'chronicle'::regnamespace
   AND p.proname ~ '_(deltas|values|totals|run_totals|sums|ends)$' AND p.proname NOT IN ('_deltas', '_ends')
UNION ALL
SELECT m.metric, row(m.*)::text, NULL FROM chronicle.metric m;

SELECT is((SELECT array_agg(DISTINCT source ORDER BY source) FROM c_cols
            WHERE source NOT IN (SELECT source FROM chronicle._source_analysis())),
          ARRAY['maintenance', 'os_process_io', 'statements'],
          'the sources without analysis are the three read by hand (maintenance: as marks)');
SELECT is((SELECT string_agg(a.fn || '.' || a.column_name, ', ')
             FROM analysed a
            WHERE a.kind IN ('counter', 'time', 'gauge', 'attribute', 'key')
              AND NOT EXISTS (SELECT FROM fn_cols f WHERE f.fn = a.fn AND f.column_name = a.column_name
                                                      AND f.column_type = format_type(a.column_type, NULL))),
          NULL, 'every key, attribute and value column is in its per-interval function, with its type');
SELECT is((SELECT string_agg(a.fn || '.' || a.column_name, ', ')
             FROM analysed a
            WHERE a.kind IN ('counter', 'time')
              AND NOT EXISTS (SELECT FROM fn_cols f WHERE f.fn = a.prefix || '_totals'
                                                      AND f.column_name IN (a.column_name || '_per_s'))),
          NULL, 'every counter has its rate in its source''s totals');
SELECT is((SELECT string_agg(f.fn || '.' || f.column_name, ', ')
             FROM fn_cols f
            WHERE f.fn IN (SELECT fn FROM analysed)
              AND f.column_name NOT IN ('interval_start', 'interval_end', 'seconds', 'reset')
              AND NOT EXISTS (SELECT FROM analysed a
                               WHERE a.fn = f.fn AND f.column_name IN (a.column_name, a.column_name || '_per_s'))
              AND NOT EXISTS (SELECT FROM chronicle._source_analysis() s, analysed a
                               WHERE a.fn = f.fn AND s.source = a.source AND f.column_name = ANY (s.per_op))),
          NULL, 'a per-interval function has no column but what its source declares');
SELECT set_eq($$SELECT metric FROM chronicle.metric$$,
              $$SELECT prefix || '.' || column_name || CASE WHEN kind = 'gauge' THEN '' ELSE '_per_s' END
                  FROM analysed WHERE kind IN ('counter', 'time', 'gauge')
                UNION ALL
                SELECT s.prefix || '.' || p FROM chronicle._source_analysis() s, unnest(s.per_op) p$$,
              'the metric catalog is every value''s series and every ratio');
SELECT is((SELECT count(*) FROM analysis_layout l
            WHERE l.acl IS NOT NULL
              AND NOT (l.acl LIKE '%pg_monitor=X%' AND l.acl LIKE '%pg_read_all_stats=X%' AND l.acl NOT LIKE '%{=X%'
                       AND l.acl NOT LIKE '%,=X%')),
          0::bigint, 'every analysis function is granted to pg_monitor and pg_read_all_stats, not to PUBLIC');
CREATE TEMP TABLE analysis_before AS SELECT * FROM analysis_layout;
SELECT lives_ok('SELECT chronicle._analysis_layout()', 'the analysis layout runs again');
SELECT set_eq('SELECT * FROM analysis_layout', 'SELECT * FROM analysis_before',
              'running the analysis layout again (as every upgrade does) changes nothing');

SELECT * FROM finish();
ROLLBACK;
