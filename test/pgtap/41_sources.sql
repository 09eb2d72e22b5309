-- pgTAP: one definition per source.  The C column list of every source
-- (chronicle._source_columns()) is what its history table has, column by
-- column, in the same order and type, keys NOT NULL; every history table
-- has a source.  tools/check_sources.py ties the tables to the analysis
-- generator's description (tools/gen_deltas.py).
BEGIN;
SELECT plan(5);

CREATE TEMP VIEW c_cols AS
SELECT source, ordinal AS position, column_name, column_type, key FROM chronicle._source_columns();
CREATE TEMP VIEW t_cols AS
SELECT substr(c.relname, 1, length(c.relname) - length('_history')) AS source,
       (row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum))::integer AS position,
       a.attname::text AS column_name, a.atttypid::regtype AS column_type, a.attnotnull
  FROM pg_class c
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attname <> 'ts'
 WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relkind = 'p' AND c.relname LIKE '%\_history';

SELECT ok((SELECT count(DISTINCT source) FROM c_cols) >= 13, 'every source declares its columns');
SELECT is((SELECT array_agg(DISTINCT source ORDER BY source) FROM c_cols),
          (SELECT array_agg(DISTINCT source ORDER BY source) FROM t_cols),
          'a history table per source, a source per history table');
SELECT is((SELECT count(*) FROM c_cols c FULL JOIN t_cols t USING (source, position)
            WHERE c.column_name IS DISTINCT FROM t.column_name OR c.column_type IS DISTINCT FROM t.column_type),
          0::bigint, 'the C columns are the table''s columns, in order, with their types');
SELECT is((SELECT string_agg(source || '.' || column_name, ', ') FROM c_cols c JOIN t_cols t USING (source, position, column_name)
            WHERE c.key AND NOT t.attnotnull),
          NULL, 'the key columns are NOT NULL');
-- no index on the history tables but the BRIN on ts: the analysis reads
-- time ranges only, from a keyframe (chronicle._keyframe()), so that the
-- history can be stored in a format without per-key indexes (on the
-- partitions: see chronicle._partition_layout())
SELECT is((SELECT string_agg(ic.relname, ', ' ORDER BY ic.relname)
             FROM pg_index i
             JOIN pg_class ic ON ic.oid = i.indexrelid
             JOIN pg_class c ON c.oid = i.indrelid
             JOIN pg_am am ON am.oid = ic.relam
            WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relname LIKE '%\_history\_default'
              AND am.amname <> 'brin'),
	NULL, 'the history tables have no per-key index');

SELECT * FROM finish();
ROLLBACK;
