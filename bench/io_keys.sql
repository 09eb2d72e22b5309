-- The rows of pg_stat_io in PostgreSQL 18 (backend type, object, context),
-- as the temporary table io_keys: the keyframe of the synthetic history of
-- bench/analysis_gen.sql and bench/report_gen.sql, which \ir this file.
CREATE TEMP TABLE io_keys (backend_type text, object text, context text);
INSERT INTO io_keys
SELECT b, o, c
  FROM (VALUES ('client backend'), ('autovacuum launcher'), ('autovacuum worker'), ('background worker'),
               ('walsender'), ('slotsync worker'), ('standalone backend'), ('io worker'), ('startup')) bt(b),
       (VALUES ('relation'), ('temp relation'), ('wal')) ob(o),
       (VALUES ('bulkread'), ('bulkwrite'), ('init'), ('normal'), ('vacuum')) ct(c)
 WHERE NOT (o = 'wal' AND c NOT IN ('init', 'normal'))
UNION ALL
SELECT b, o, c FROM (VALUES ('background writer'), ('checkpointer'), ('walwriter'), ('walsummarizer'), ('walreceiver')) bt(b),
       (VALUES ('relation'), ('wal')) ob(o), (VALUES ('init'), ('normal')) ct(c);
