-- Core objects: schema, history tables, partitions, snapshot(), status(),
-- and who may read what.
\set VERBOSITY terse

-- The tables that hold history, all partitioned by time: every source's
-- rows are packed in chronicle.history (read through <source>_history).
SELECT c.relname, p.partstrat
  FROM pg_class c JOIN pg_partitioned_table p ON p.partrelid = c.oid
 WHERE c.relnamespace = 'chronicle'::regnamespace
 ORDER BY 1;

-- One snapshot from SQL writes a keyframe: every row of every source.
SELECT chronicle.snapshot() AS ts \gset
SELECT keyframe, collector, errors, rows_written > 0 AS wrote,
       segment = ts AS own_segment
  FROM chronicle.snapshot WHERE ts = :'ts';

-- pg_stat_io: every row of the view, with the same keys.
SELECT (SELECT count(*) FROM chronicle.io_history WHERE ts = :'ts') =
       (SELECT count(*) FROM pg_stat_io) AS all_io_rows;
SELECT count(*) AS io_rows_missing
  FROM pg_stat_io v
 WHERE NOT EXISTS (SELECT FROM chronicle.io_history h
                    WHERE h.ts = :'ts' AND h.backend_type = v.backend_type
                      AND h.object = v.object AND h.context = v.context);
-- Untracked cells stay NULL, as in the view.
SELECT count(*) AS null_mismatches
  FROM pg_stat_io v JOIN chronicle.io_history h
    ON h.ts = :'ts' AND h.backend_type = v.backend_type
   AND h.object = v.object AND h.context = v.context
 WHERE (v.reads IS NULL) <> (h.reads IS NULL)
    OR (v.writes IS NULL) <> (h.writes IS NULL)
    OR (v.extends IS NULL) <> (h.extends IS NULL)
    OR (v.hits IS NULL) <> (h.hits IS NULL)
    OR (v.fsyncs IS NULL) <> (h.fsyncs IS NULL)
    OR (v.evictions IS NULL) <> (h.evictions IS NULL);

-- One row for each single-row source, one per database for pg_stat_database.
SELECT (SELECT count(*) FROM chronicle.wal_history WHERE ts = :'ts') AS wal,
       (SELECT count(*) FROM chronicle.checkpointer_history WHERE ts = :'ts') AS checkpointer,
       (SELECT count(*) FROM chronicle.bgwriter_history WHERE ts = :'ts') AS bgwriter;
SELECT count(*) FILTER (WHERE datid = 0) AS shared_row,
       count(*) FILTER (WHERE datname = current_database()) AS this_db
  FROM chronicle.database_history WHERE ts = :'ts';

-- A second snapshot from SQL continues the same segment.
SELECT chronicle.snapshot() AS ts2 \gset
SELECT segment = :'ts' AS same_segment FROM chronicle.snapshot WHERE ts = :'ts2';

-- Partitions: created on demand, bad ranges refused.
SELECT chronicle.ensure_partitions('2020-01-01', '2020-01-03');
SELECT chronicle.ensure_partitions('2020-01-01', '2020-01-03');
SELECT chronicle.ensure_partitions('2020-01-03', '2020-01-01');
SELECT chronicle.ensure_partitions(NULL, '2020-01-01');
-- Retention drops whole partitions, never rows of the current ones.
SELECT partitions_dropped > 0 AS dropped_old, partitions_skipped
  FROM chronicle.maintain('30 days');
SELECT count(*) AS old_partitions_left
  FROM pg_class WHERE relnamespace = 'chronicle'::regnamespace
   AND relname ~ '_p2020';
SELECT * FROM chronicle.maintain('-1 day');

-- A row of a day without partition lands in the default partition, and
-- maintain() moves it into the day's partition it creates (then drops it:
-- 2019 is older than the retention).
INSERT INTO chronicle.wal_history (ts, wal_records) VALUES ('2019-06-01 12:00+00', 1);
SELECT tableoid::regclass FROM chronicle.history WHERE ts = '2019-06-01 12:00+00';
SELECT partitions_created, partitions_dropped, partitions_skipped
  FROM chronicle.maintain('30 days');
SELECT count(*) AS left_in_default FROM chronicle.history_default;

-- The partition layout: a DEFAULT partition for every history table;
-- indexes on the partitions, none on a parent, and no day partition a
-- member of the extension (so that pg_dump dumps them whole and a restore
-- does not build their indexes twice); every table of the extension but
-- the metric catalog dumped with its rows.
SELECT c.relname AS without_default
  FROM pg_class c JOIN pg_partitioned_table p ON p.partrelid = c.oid
 WHERE c.relnamespace = 'chronicle'::regnamespace AND p.partdefid = 0;
SELECT i.indexrelid::regclass AS index_on_a_parent
  FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
 WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relkind = 'p';
SELECT count(*) > 0 AS day_partitions,
       count(*) FILTER (WHERE EXISTS (SELECT FROM pg_depend d
                                       WHERE d.classid = 'pg_class'::regclass
                                         AND d.objid = c.oid AND d.deptype = 'e')) AS members
  FROM pg_class c
 WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relname ~ '_p[0-9]{8}$';
SELECT c.oid::regclass AS member_not_dumped
  FROM pg_class c
  JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid
 WHERE c.relkind IN ('r', 'S') AND NOT c.oid = ANY (e.extconfig)
 ORDER BY 1;

-- chronicle.retention as maintain() reads it (the default: 7 days).
SELECT chronicle._retention();

-- status(): the worker records nothing in this instance (chronicle.enabled
-- = off): stopped, or running but disabled, depending on whether it came
-- back to contrib_regression before or after the extension was created.
SELECT running = (state <> 'stopped') AS running_is_state,
       state IN ('stopped', 'disabled (chronicle.enabled = off)') AS not_recording
  FROM chronicle.status();
SELECT source, enabled, errors FROM chronicle.source_status() ORDER BY source;

-- Settings have bounds.
ALTER SYSTEM SET chronicle.snapshot_interval = '10ms';
ALTER SYSTEM SET chronicle.snapshot_interval = '2h';
ALTER SYSTEM SET chronicle.retention = '-1';
ALTER SYSTEM SET chronicle.database = '';
SHOW chronicle.snapshot_interval;

-- History is not for everyone.
CREATE ROLE regress_chronicle_nobody;
CREATE ROLE regress_chronicle_monitor IN ROLE pg_monitor;
SET ROLE regress_chronicle_nobody;
SELECT count(*) FROM chronicle.io_history;
SELECT chronicle.snapshot();
RESET ROLE;
SET ROLE regress_chronicle_monitor;
SELECT count(*) > 0 AS monitor_reads FROM chronicle.io_history;
SELECT running IS NOT NULL AS monitor_reads_status FROM chronicle.status();
SELECT chronicle.snapshot();
RESET ROLE;
DROP ROLE regress_chronicle_nobody;
DROP ROLE regress_chronicle_monitor;

-- Every function of the extension pins its search_path (an aggregate has
-- no settings of its own: its functions are pg_catalog's).
SELECT p.oid::regprocedure
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_chronicle')
   AND NOT EXISTS (SELECT FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%')
   AND NOT (p.prokind = 'a' AND NOT EXISTS (SELECT FROM pg_aggregate a JOIN pg_proc f
                                              ON f.oid IN (a.aggtransfn, a.aggfinalfn)
                                             WHERE a.aggfnoid = p.oid
                                               AND f.pronamespace <> 'pg_catalog'::regnamespace));
