-- pgTAP: one definition per source.  The C column list of every source
-- (chronicle._source_columns()) is what its history view has, column by
-- column, in the same order and type; every history view has a source, and
-- chronicle.history a packed column per source; a NULL key is refused.  tools/check_sources.py ties the tables to the analysis
-- generator's description (tools/gen_deltas.py).
BEGIN;
SELECT plan(5);

CREATE TEMP VIEW c_cols AS
SELECT source, ordinal AS position, column_name, column_type, key FROM chronicle._source_columns();
CREATE TEMP VIEW t_cols AS
SELECT substr(c.relname, 1, length(c.relname) - length('_history')) AS source,
       (row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum))::integer AS position,
       a.attname::text AS column_name, a.atttypid::regtype AS column_type
  FROM pg_class c
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attname <> 'ts'
 WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relkind = 'v' AND c.relname LIKE '%\_history';

SELECT ok((SELECT count(DISTINCT source) FROM c_cols) >= 13, 'every source declares its columns');
SELECT is((SELECT array_agg(DISTINCT source ORDER BY source) FROM c_cols),
          (SELECT array_agg(DISTINCT source ORDER BY source) FROM t_cols),
          'a history view per source, a source per history view');
SELECT is((SELECT count(*) FROM c_cols c FULL JOIN t_cols t USING (source, position)
            WHERE c.column_name IS DISTINCT FROM t.column_name OR c.column_type IS DISTINCT FROM t.column_type),
          0::bigint, 'the C columns are the view''s columns, in order, with their types');
SELECT is((SELECT array_agg(a.attname::text ORDER BY a.attname)
             FROM pg_attribute a
            WHERE a.attrelid = 'chronicle.history'::regclass AND a.attnum > 0 AND NOT a.attisdropped
              AND a.atttypid = 'bytea'::regtype),
          (SELECT array_agg(DISTINCT source ORDER BY source) FROM c_cols),
          'chronicle.history has a packed column per source');
SELECT throws_ok($$INSERT INTO chronicle.io_history (ts, backend_type, object, context)
                   VALUES ('2020-01-01', NULL, 'relation', 'normal')$$,
                 '23502', NULL, 'a NULL key is refused');

SELECT * FROM finish();
ROLLBACK;
