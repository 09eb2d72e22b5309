-- pg_chronicle 0.1.0 -> 0.2.0, the hand-written steps that run BEFORE the
-- code.  The upgrade script from 0.1.0 (pg_chronicle--0.1.0--<version>.sql)
-- is built by make: this file and the -before.sql steps of the releases
-- after 0.2.0, then every function, procedure, trigger, comment and grant of
-- src/sql (src/upgrade/code.awk, CREATE OR REPLACE), then
-- 0.1.0--0.2.0-after.sql and the later -after.sql steps.  Here: what CREATE
-- OR REPLACE cannot do (drop a function whose return type or parameter
-- names changed, or that is gone) and every change to the tables from
-- 0.1.0 to 0.2.0.  See docs/development.md, "Upgrade scripts";
-- test/t/040_upgrade_0.1.0.pl compares the catalog an update reaches with a
-- fresh CREATE EXTENSION.

-- ---------------------------------------------------------------------
-- Trust (issue 11): run settings read with the caller's rights, passwords
-- redacted (src/sql/36_runs.sql, src/runs.c).  The runs 0.1.0 opened are
-- redacted in 0.1.0--0.2.0-after.sql.
-- ---------------------------------------------------------------------

-- run_begin reads the settings itself now, with its caller's rights.
DROP FUNCTION chronicle._settings();

-- ---------------------------------------------------------------------
-- Right numbers (issue 12): app_intervals() and app_summary() gain columns
-- (active_seconds, latency_min_ms, basis): dropped and created again.
-- ---------------------------------------------------------------------
DROP FUNCTION chronicle.app_intervals(text);
DROP FUNCTION chronicle.app_intervals(timestamptz, timestamptz, text);
DROP FUNCTION chronicle.app_summary(text);

-- ---------------------------------------------------------------------
-- Right numbers: waits (issue 12, defects 1, 6 and 8).  Background
-- processes at work go to the new background_active of the wait sampler;
-- chronicle._deltas() gains born_at_zero.
-- ---------------------------------------------------------------------
ALTER TABLE chronicle.wait_sampler_history ADD COLUMN background_active bigint;

DROP FUNCTION chronicle._deltas(regclass, timestamptz, timestamptz, text[], text[], text, text[], text, text[], text, text[], text[], text[], boolean, text[], text[], text[]);

-- wait_sampler: a new column in the results
DROP FUNCTION chronicle.wait_sampler_run_totals(text);
DROP FUNCTION chronicle.wait_sampler_totals(timestamptz, timestamptz);
DROP FUNCTION chronicle.wait_sampler_deltas(timestamptz, timestamptz);

INSERT INTO chronicle.metric (metric, source, func, keyed, kind, col, col2, filters, unit) VALUES
	('wait_sampler.background_active_per_s', 'wait_sampler', 'wait_sampler_deltas', False, 'rate', 'background_active', NULL, ARRAY[]::text[], '1/s');

-- ---------------------------------------------------------------------
-- Rollups (issue 14): timeline() gains resolution (and resolution_used).
-- ---------------------------------------------------------------------
DROP FUNCTION chronicle.timeline(timestamptz, timestamptz, boolean, boolean);

-- ---------------------------------------------------------------------
-- Housekeeping (issue 11, defects 2-5): maintain() and status() return
-- more columns.  The partitions themselves are laid out again at the end
-- of the code (chronicle._partition_layout(), 99_grants.sql).
-- ---------------------------------------------------------------------
DROP FUNCTION chronicle.maintain(interval);
DROP FUNCTION chronicle.status();

-- ---------------------------------------------------------------------
-- One error style (issue 15, names): the run is "run", and a parameter
-- cannot be renamed in place.
-- ---------------------------------------------------------------------
DROP FUNCTION chronicle.load_pgbench_lines(text, text, text, boolean, integer);
DROP FUNCTION chronicle.load_pgbench_log(text, text, text, text, boolean, integer);
DROP FUNCTION chronicle.app_run_id(text);
DROP FUNCTION chronicle.add_metric(text, float8, timestamptz, text);
DROP FUNCTION chronicle.run_end(text);
DROP FUNCTION chronicle.run_delete(text);

-- ---------------------------------------------------------------------
-- See it (issue 13): runs keep every setting (those at their default too)
-- and their environment (src/environment.c).
-- ---------------------------------------------------------------------
ALTER TABLE chronicle.run ADD COLUMN environment jsonb NOT NULL DEFAULT '{}';

-- ---------------------------------------------------------------------
-- Storage v2 (issue 14): the recording server's identity in every
-- snapshot row (system identifier and chronicle.server_name).  Snapshots
-- recorded before keep NULL there.
-- ---------------------------------------------------------------------
ALTER TABLE chronicle.snapshot ADD COLUMN system_identifier bigint, ADD COLUMN server_name text;

-- ---------------------------------------------------------------------
-- Rollups for long windows (issue 14, items 3 and 5): the tables of
-- src/sql/60_rollups.sql (their comments come with the code).
-- ---------------------------------------------------------------------
CREATE TABLE chronicle.rollup_minute (
	ts        timestamptz NOT NULL,
	source    text NOT NULL,
	key       text[] NOT NULL,
	seconds   float8 NOT NULL,
	intervals integer NOT NULL,
	resets    integer NOT NULL,
	vals      float8[],
	hist      jsonb,
	PRIMARY KEY (ts, source, key)
) PARTITION BY RANGE (ts);

CREATE TABLE chronicle.rollup_hour (LIKE chronicle.rollup_minute INCLUDING ALL)
	PARTITION BY RANGE (ts);

CREATE TABLE chronicle.rollup_state (
	id         boolean PRIMARY KEY DEFAULT true CHECK (id),
	done_until timestamptz
);

CREATE TABLE chronicle.rollup_dirty (
	lo timestamptz NOT NULL,
	hi timestamptz NOT NULL
);

-- As 99_grants.sql grants every table of the schema.
REVOKE ALL ON chronicle.rollup_minute, chronicle.rollup_hour, chronicle.rollup_state, chronicle.rollup_dirty FROM PUBLIC;
GRANT SELECT ON chronicle.rollup_minute, chronicle.rollup_hour, chronicle.rollup_state, chronicle.rollup_dirty
	TO pg_monitor, pg_read_all_stats;

-- ---------------------------------------------------------------------
-- Analysis without per-key indexes (issue 14): the key-finding skip scans
-- _<source>_keys() are gone (the engine finds the keys in its one read from
-- the keyframe, chronicle._ends()); _check_datname() takes the window, a
-- database name is checked against the window's rows (a new signature).
-- ---------------------------------------------------------------------
DROP FUNCTION chronicle._io_keys(timestamptz, timestamptz);
DROP FUNCTION chronicle._database_keys(timestamptz, timestamptz);
DROP FUNCTION chronicle._wait_keys(timestamptz, timestamptz);
DROP FUNCTION chronicle._os_disk_keys(timestamptz, timestamptz);
DROP FUNCTION chronicle._os_pressure_keys(timestamptz, timestamptz);
DROP FUNCTION chronicle._check_datname(text, text);

-- ---------------------------------------------------------------------
-- Storage v2 (issue 14): the packed history.  The row tables of 0.1.0
-- (one per source, a row per key and snapshot, (key, ts) indexes) become
-- chronicle.history, one row per snapshot with every source's rows packed
-- (src/history.c), read through views of the same names and columns.  Here
-- the row tables step aside, out of the extension and into the schema
-- chronicle_v1 (their day partitions, never members, stay attached): out
-- of the schema chronicle, so that the partition layout the code runs
-- (chronicle._partition_layout(), over the schema's partitioned tables)
-- neither gives them default partitions nor moves their indexes.  The new
-- tables are made here; the code (its chronicle._history_layout() call,
-- 10_history.sql) adds the packed columns and makes the views, with their
-- grants, from the C column lists, as a fresh install does;
-- 0.1.0--0.2.0-after.sql converts every row and drops chronicle_v1.
-- ---------------------------------------------------------------------
CREATE SCHEMA chronicle_v1;
DO $$
DECLARE
	s text;
BEGIN
	FOREACH s IN ARRAY ARRAY['io', 'wal', 'checkpointer', 'bgwriter', 'database', 'statements', 'os_memory', 'os_disk', 'os_pressure', 'os_process_io', 'waits', 'wait_sampler', 'buffers'] LOOP
		EXECUTE format('ALTER EXTENSION pg_chronicle DROP TABLE chronicle.%I', s || '_history');
		EXECUTE format('ALTER TABLE chronicle.%I SET SCHEMA chronicle_v1', s || '_history');
	END LOOP;
END;
$$;

CREATE TABLE chronicle.history (
	ts                timestamptz NOT NULL,
	system_identifier bigint,	-- the recording server (chronicle.server())
	server_name       text,
	PRIMARY KEY (ts)
) PARTITION BY RANGE (ts);

CREATE SEQUENCE chronicle.history_key_id_seq AS integer;
CREATE TABLE chronicle.history_key (
	key_id integer NOT NULL DEFAULT nextval('chronicle.history_key_id_seq') PRIMARY KEY,
	source text NOT NULL,
	key    text[] NOT NULL,
	first_seen timestamptz NOT NULL DEFAULT now(),
	UNIQUE (source, key)
);
ALTER SEQUENCE chronicle.history_key_id_seq OWNED BY chronicle.history_key.key_id;

-- As 99_grants.sql grants every table of the schema.
REVOKE ALL ON chronicle.history, chronicle.history_key FROM PUBLIC;
GRANT SELECT ON chronicle.history, chronicle.history_key TO pg_monitor, pg_read_all_stats;
GRANT SELECT ON SEQUENCE chronicle.history_key_id_seq TO pg_monitor, pg_read_all_stats;
