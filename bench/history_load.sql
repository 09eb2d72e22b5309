-- The rows bench/history_stage.sql staged, packed into chronicle.history.
SELECT chronicle._history_load(array_agg(s ORDER BY s),
                               array_agg(format('pg_temp.%I', 'gen_' || s)::regclass ORDER BY s)) AS history_rows
  FROM (SELECT DISTINCT source AS s FROM chronicle._source_columns()) x;
