-- The generators' rows go into temporary tables shaped like the history
-- views, pg_temp.gen_<source>, and then into chronicle.history in one bulk
-- load per snapshot (bench/history_load.sql): a row at a time through the
-- views' trigger would re-pack a snapshot for every key.
DO $$
DECLARE
	s text;
BEGIN
	FOR s IN SELECT DISTINCT source FROM chronicle._source_columns() LOOP
		EXECUTE format('CREATE TEMP TABLE %I (LIKE chronicle.%I)', 'gen_' || s, s || '_history');
	END LOOP;
END;
$$;
