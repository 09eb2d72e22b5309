-- pg_chronicle 0.1.0 -> 0.2.0, the hand-written steps that run AFTER the
-- code of src/sql (see 0.1.0--0.2.0-before.sql): data fixes that call the
-- functions of 0.2.0.

-- Runs 0.1.0 opened kept passwords in their settings: redact them.
UPDATE chronicle.run r
   SET settings = (SELECT jsonb_object_agg(e.key, chronicle._redact_setting(e.key, e.value))
                     FROM jsonb_each_text(r.settings) e)
 WHERE r.settings <> '{}'
   AND r.settings IS DISTINCT FROM
       (SELECT jsonb_object_agg(e.key, chronicle._redact_setting(e.key, e.value))
          FROM jsonb_each_text(r.settings) e);

-- ---------------------------------------------------------------------
-- Storage v2 (issue 14): every row of the 0.1.0 row tables (set aside in
-- 0.1.0--0.2.0-before.sql) packed into chronicle.history, one row per ts
-- (chronicle._history_load()), then the row tables dropped with their schema.  The history's
-- day partitions first, so that the rows do not wait in its default
-- partition; they leave the extension in _partition_layout() below.
-- ---------------------------------------------------------------------
REVOKE ALL ON chronicle.io_history, chronicle.wal_history, chronicle.checkpointer_history, chronicle.bgwriter_history, chronicle.database_history, chronicle.statements_history, chronicle.os_memory_history, chronicle.os_disk_history, chronicle.os_pressure_history, chronicle.os_process_io_history, chronicle.waits_history, chronicle.wait_sampler_history, chronicle.buffers_history FROM PUBLIC;
GRANT SELECT ON chronicle.io_history, chronicle.wal_history, chronicle.checkpointer_history, chronicle.bgwriter_history, chronicle.database_history, chronicle.statements_history, chronicle.os_memory_history, chronicle.os_disk_history, chronicle.os_pressure_history, chronicle.os_process_io_history, chronicle.waits_history, chronicle.wait_sampler_history, chronicle.buffers_history TO pg_monitor, pg_read_all_stats;

SELECT chronicle._create_partition('chronicle.history'::regclass, d::date)
  FROM generate_series((SELECT min(ts) FROM chronicle.snapshot)::date,
                       (SELECT max(ts) FROM chronicle.snapshot)::date, interval '1 day') d;
SELECT chronicle._history_load(ARRAY['io', 'wal', 'checkpointer', 'bgwriter', 'database', 'statements', 'os_memory', 'os_disk', 'os_pressure', 'os_process_io', 'waits', 'wait_sampler', 'buffers'],
       ARRAY['chronicle_0_1_0.io_history', 'chronicle_0_1_0.wal_history', 'chronicle_0_1_0.checkpointer_history', 'chronicle_0_1_0.bgwriter_history', 'chronicle_0_1_0.database_history', 'chronicle_0_1_0.statements_history', 'chronicle_0_1_0.os_memory_history', 'chronicle_0_1_0.os_disk_history', 'chronicle_0_1_0.os_pressure_history', 'chronicle_0_1_0.os_process_io_history', 'chronicle_0_1_0.waits_history', 'chronicle_0_1_0.wait_sampler_history', 'chronicle_0_1_0.buffers_history']::regclass[]);

DROP SCHEMA chronicle_0_1_0 CASCADE;

SELECT chronicle._partition_layout();
