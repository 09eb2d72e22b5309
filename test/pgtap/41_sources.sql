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
-- the (key, ts) index of the keyed sources the analysis reads by key (on
-- the partitions: see chronicle._partition_layout())
SELECT is((SELECT string_agg(s.source, ', ') FROM (
	SELECT source, array_agg(column_name::name ORDER BY position) AS keys
	  FROM c_cols WHERE key GROUP BY source) s
	WHERE NOT EXISTS (
		SELECT FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
		 WHERE i.indrelid = format('chronicle.%I', s.source || '_history_default')::regclass
		   AND (SELECT array_agg(a.attname ORDER BY k.n)
		          FROM unnest(i.indkey) WITH ORDINALITY k(attnum, n)
		          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum)
		       = s.keys || 'ts'::name)
	  AND s.source IN ('io', 'database', 'waits')),
	NULL, 'the keyed sources with analysis have their (key, ts) index');

SELECT * FROM finish();
ROLLBACK;
