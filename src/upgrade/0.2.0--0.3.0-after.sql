-- pg_chronicle 0.2.0 -> 0.3.0, the hand-written steps that run AFTER the
-- code of src/sql (see 0.2.0--0.3.0-before.sql): data fixes that call the
-- functions of 0.3.0.  An installed 0.1.0 runs 0.1.0--0.2.0-after.sql first.

-- The views of the origin read (05_origin.sql, 40_statements.sql), made by
-- the code: readable as every table of the schema (99_grants.sql).
REVOKE ALL ON chronicle._snapshot, chronicle._statements_text, chronicle.servers FROM PUBLIC;
GRANT SELECT ON chronicle._snapshot, chronicle._statements_text, chronicle.servers TO pg_monitor, pg_read_all_stats;
