-- Every table of the schema is readable by monitoring roles only.  Keep
-- this file last: it covers the tables all earlier files created.
REVOKE ALL ON ALL TABLES IN SCHEMA chronicle FROM PUBLIC;
GRANT SELECT ON ALL TABLES IN SCHEMA chronicle TO pg_monitor, pg_read_all_stats;
GRANT SELECT ON ALL SEQUENCES IN SCHEMA chronicle TO pg_monitor, pg_read_all_stats;

-- The partitions of the first days, so that recording starts at once.
SELECT chronicle.ensure_partitions(now(), now() + interval '2 days');
