-- Keep this file last: it covers the tables all earlier files created.

-- Every table of the schema is readable by monitoring roles only (the
-- partitions made below are read through their parents).
REVOKE ALL ON ALL TABLES IN SCHEMA chronicle FROM PUBLIC;
GRANT SELECT ON ALL TABLES IN SCHEMA chronicle TO pg_monitor, pg_read_all_stats;
GRANT SELECT ON ALL SEQUENCES IN SCHEMA chronicle TO pg_monitor, pg_read_all_stats;

-- The central repository's triggers on the published tables (42_central.sql),
-- once they all exist, at every upgrade as at the install.
-- @upgrade
SELECT chronicle._central_layout();

-- The partition layout (00_core.sql): a DEFAULT partition for every
-- history table, indexes on the partitions.  No day partition is made
-- here: it would belong to the extension, and the CREATE EXTENSION of a
-- restore would make partitions the dump has.  The housekeeping of the
-- first snapshot makes them, before its rows.  Every upgrade script runs
-- it again after the code (-- @upgrade, src/upgrade/code.awk): the
-- indexes of a table the upgrade changed move onto its partitions too.
-- @upgrade
SELECT chronicle._partition_layout();

-- pg_dump dumps the rows of every table of the extension (and the state of
-- its sequences): CREATE EXTENSION makes the tables at restore, the rows
-- come from the dump.  Not chronicle.metric, which this script fills, nor
-- chronicle.rollup_dirty, a queue whose ranges the restore's own rows of
-- app_transaction mark again (60_rollups.sql), nor chronicle.app_epoch
-- (its one row is this script's) and chronicle.app_memo (results computed
-- again when read: 50_app.sql).  The day partitions do not
-- belong to the extension and are dumped whole.
-- (One call a statement: each one updates the extension's row.)  Every
-- upgrade script runs it again after the code: a table it adds is dumped.
-- @upgrade
DO $$
DECLARE
	t regclass;
BEGIN
	FOR t IN
		SELECT c.oid::regclass
		  FROM pg_catalog.pg_class c
		  JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_class'::regclass
		                             AND d.objid = c.oid AND d.deptype = 'e'
		  JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_chronicle'
		 WHERE c.relnamespace = 'chronicle'::regnamespace
		   AND c.relkind IN ('r', 'S')
		   AND c.oid NOT IN ('chronicle.metric'::regclass, 'chronicle.rollup_dirty'::regclass,
		                     'chronicle.app_epoch'::regclass, 'chronicle.app_memo'::regclass)
		 ORDER BY c.relname
	LOOP
		PERFORM pg_catalog.pg_extension_config_dump(t, '');
	END LOOP;
END;
$$;
