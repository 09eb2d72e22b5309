-- pgTAP: one definition per source.  The C column list of every source
-- (chronicle._source_columns()) is the history's SQL shape:
-- chronicle._history_layout() made each source's packed column of
-- chronicle.history and its view chronicle.<source>_history (trigger,
-- comment, grants) from it at CREATE EXTENSION.  Checked here: that the
-- result is what the lists say, that no other history view exists, that the
-- views belong to the extension (pg_dump leaves them to CREATE EXTENSION),
-- and that running the layout again (as every upgrade does) changes
-- nothing.  tools/check_sources.py ties the C lists to the analysis
-- generator's description (tools/gen_deltas.py).
BEGIN;
SELECT plan(10);

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
                     FROM chronicle._source_columns() WITH ORDINALITY AS c(source, o, col, typ, key, d, n)
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

SELECT * FROM finish();
ROLLBACK;
