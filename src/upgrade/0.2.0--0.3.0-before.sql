-- pg_chronicle 0.2.0 -> 0.3.0, the hand-written steps that run BEFORE the
-- code.  The upgrade script pg_chronicle--0.2.0--0.3.0.sql is built by make:
-- this file, then every function, procedure, trigger, comment and grant of
-- src/sql (src/upgrade/code.awk, CREATE OR REPLACE), then
-- 0.2.0--0.3.0-after.sql.  Here: what CREATE OR REPLACE cannot do (drop a
-- function whose return type or parameter names changed, or that is gone)
-- and every change to the tables since 0.2.0.  An installed 0.1.0 runs
-- 0.1.0--0.2.0-before.sql and then this file (pg_chronicle--0.1.0--0.3.0.sql):
-- write each step against the tables as 0.2.0 left them.  See
-- docs/development.md, "Upgrade scripts"; test/t/040_upgrade_<release>.pl
-- compares the catalog an update reaches with a fresh CREATE EXTENSION.

-- A run belongs to the role that opened it (36_runs.sql,
-- _check_run_owner); runs recorded before 0.3.0 have no owner.
ALTER TABLE chronicle.run ADD COLUMN owner text;
ALTER TABLE chronicle.run ADD COLUMN warmup interval NOT NULL DEFAULT '0' CHECK (warmup >= interval '0');

-- A statement's text is kept as long as the history that refers to it
-- (40_statements.sql); texts stored before 0.3.0 count as seen now.
ALTER TABLE chronicle.statements_text ADD COLUMN last_seen timestamptz NOT NULL DEFAULT now();

-- run_end(run) became run_end(run, after) (36_runs.sql: the run ends at the
-- first snapshot after the time given).  IF EXISTS: from 0.1.0,
-- 0.1.0--0.2.0-before.sql has dropped run_end(text) already (its code is
-- created once, after every step).
DROP FUNCTION IF EXISTS chronicle.run_end(text);

-- The analysis engine takes a source's name and describes the source from
-- its C declaration (30_analysis.sql); the functions that call it are made
-- from the same declaration by chronicle._analysis_layout()
-- (31_analysis_layout.sql), which replaces a function whose result changed
-- by itself.  chronicle._source_columns() gained a column, kind.
DROP FUNCTION IF EXISTS chronicle._deltas(regclass, timestamptz, timestamptz, text[], text[], text, text[],
	text, text[], text, text[], text[], text[], boolean, text[], text[], text[], boolean);
DROP FUNCTION IF EXISTS chronicle._ends(regclass, timestamptz, timestamptz, text[], text[], text, text[],
	text, text[], text, text[], text[], text[], boolean, text[], text[], text[], boolean);
DROP FUNCTION IF EXISTS chronicle._source_columns();

-- The result shapes of timeline(), app_intervals() and app_summary() are
-- composite types, each said once (34_timeline.sql, 50_app.sql, which
-- create them in the code of every upgrade); the functions returned
-- TABLE (...) before, and app_intervals() gained a
-- column, partial (50_app.sql: an interval the runs were active in part of
-- has no tps).  IF EXISTS: from 0.1.0, 0.1.0--0.2.0-before.sql has dropped
-- some already.
DROP FUNCTION IF EXISTS chronicle.timeline(timestamptz, timestamptz, boolean, boolean, text);
DROP FUNCTION IF EXISTS chronicle._timeline_rollup(timestamptz, timestamptz, text, boolean, boolean);
DROP FUNCTION IF EXISTS chronicle.app_intervals(timestamptz, timestamptz, text);
DROP FUNCTION IF EXISTS chronicle.app_intervals(text);
DROP FUNCTION IF EXISTS chronicle._app_summary(integer);
DROP FUNCTION IF EXISTS chronicle.app_summary(text);

-- Marks (38_marks.sql): events named by a benchmark script.
CREATE TABLE chronicle.mark (
	mark_id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	ts      timestamptz NOT NULL,
	event   text NOT NULL CHECK (event <> ''),
	owner   text NOT NULL
);
CREATE INDEX mark_ts ON chronicle.mark (ts);
REVOKE ALL ON chronicle.mark FROM PUBLIC;
GRANT SELECT ON chronicle.mark TO pg_monitor, pg_read_all_stats;
GRANT SELECT ON SEQUENCE chronicle.mark_mark_id_seq TO pg_monitor, pg_read_all_stats;

-- Origins (05_origin.sql): the servers whose runs were imported, their
-- snapshots, history and statement texts apart from this server's, and
-- the origin of every run and mark (0: this server, as every row recorded
-- before).  This server's partitioned tables do not change.
CREATE TABLE chronicle.origin (
	origin_id         integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	system_identifier bigint,
	server_name       text,
	server_version    text,
	extension_version text,
	first_imported    timestamptz NOT NULL DEFAULT now(),
	kind              text NOT NULL DEFAULT 'archive' CHECK (kind IN ('archive', 'subscription')),
	subscription      name UNIQUE,
	retention         interval CHECK (retention >= interval '0'),
	CHECK ((kind = 'subscription') = (subscription IS NOT NULL))
);
CREATE TABLE chronicle.archive_snapshot (
	origin        integer     NOT NULL REFERENCES chronicle.origin,
	ts            timestamptz NOT NULL,
	segment       timestamptz NOT NULL,
	keyframe      boolean     NOT NULL,
	collector     text        NOT NULL,
	duration_ms   float8      NOT NULL,
	rows_written  bigint      NOT NULL,
	wal_bytes     bigint      NOT NULL,
	errors        integer     NOT NULL,
	system_identifier bigint,
	server_name   text,
	PRIMARY KEY (origin, ts)
);
-- its packed columns are added by chronicle._history_layout(), in the code
CREATE TABLE chronicle.archive_history (
	origin            integer NOT NULL REFERENCES chronicle.origin,
	ts                timestamptz NOT NULL,
	system_identifier bigint,
	server_name       text,
	PRIMARY KEY (origin, ts)
);
CREATE TABLE chronicle.archive_statements_text (
	origin  integer NOT NULL REFERENCES chronicle.origin,
	dbid    oid NOT NULL,
	queryid bigint NOT NULL,
	query   text NOT NULL,
	PRIMARY KEY (origin, dbid, queryid)
);
-- A central repository's map of each subscribed server's key ids
-- (05_origin.sql, 42_central.sql).
CREATE TABLE chronicle.archive_key (
	origin    integer NOT NULL REFERENCES chronicle.origin ON DELETE CASCADE,
	remote_id integer NOT NULL,
	key_id    integer NOT NULL,
	PRIMARY KEY (origin, remote_id)
);
ALTER TABLE chronicle.run ADD COLUMN origin integer NOT NULL DEFAULT 0;
ALTER TABLE chronicle.mark ADD COLUMN origin integer NOT NULL DEFAULT 0;
-- A central repository's runs of its subscribed servers (42_central.sql):
-- a label is unique per server; the runs each server's run ids map to; the
-- changes of a run (its end) and its deletion published as inserts.
ALTER TABLE chronicle.run ADD COLUMN server integer NOT NULL DEFAULT 0;
ALTER TABLE chronicle.run DROP CONSTRAINT run_label_key;
ALTER TABLE chronicle.run ADD CONSTRAINT run_label_server_key UNIQUE (label, server);
CREATE TABLE chronicle.archive_run (
	origin    integer NOT NULL REFERENCES chronicle.origin ON DELETE CASCADE,
	remote_id integer NOT NULL,
	run_id    integer NOT NULL REFERENCES chronicle.run ON DELETE CASCADE,
	PRIMARY KEY (origin, remote_id)
);
CREATE TABLE chronicle.run_change (
	run_id  integer NOT NULL REFERENCES chronicle.run ON DELETE CASCADE,
	changed timestamptz NOT NULL DEFAULT clock_timestamp(),
	ended   timestamptz,
	warmup  interval NOT NULL,
	PRIMARY KEY (run_id, changed)
);
CREATE TABLE chronicle.run_deleted (
	run_id  integer PRIMARY KEY,
	deleted timestamptz NOT NULL DEFAULT clock_timestamp()
);
REVOKE ALL ON chronicle.archive_run, chronicle.run_change, chronicle.run_deleted FROM PUBLIC;
GRANT SELECT ON chronicle.archive_run, chronicle.run_change, chronicle.run_deleted TO pg_monitor, pg_read_all_stats;
REVOKE ALL ON chronicle.origin, chronicle.archive_snapshot, chronicle.archive_history,
	chronicle.archive_statements_text, chronicle.archive_key FROM PUBLIC;
GRANT SELECT ON chronicle.origin, chronicle.archive_snapshot, chronicle.archive_history,
	chronicle.archive_statements_text, chronicle.archive_key TO pg_monitor, pg_read_all_stats;
GRANT SELECT ON SEQUENCE chronicle.origin_origin_id_seq TO pg_monitor, pg_read_all_stats;

-- Rollups of the subscribed servers too (60_rollups.sql): every row, the
-- state and the queue name their origin (0: this server, as every row
-- rolled up before).
-- The primary key, origin first: on each partition as 0.2.0 left them
-- (00_core.sql, "Partitions"), or on the parent from 0.1.0, until
-- _partition_layout() moves it at the end of the script.
DO $$
DECLARE
	t text;
	c record;
BEGIN
	FOREACH t IN ARRAY ARRAY['rollup_minute', 'rollup_hour'] LOOP
		-- (named as CREATE TABLE rollup_hour (LIKE rollup_minute) names it
		-- on 18, which names NOT NULL constraints)
		EXECUTE format('ALTER TABLE chronicle.%I ADD COLUMN origin integer'
		               ' CONSTRAINT rollup_minute_origin_not_null NOT NULL DEFAULT 0', t);
		FOR c IN
			SELECT con.conrelid::regclass AS rel, con.conname
			  FROM pg_catalog.pg_constraint con
			 WHERE con.contype = 'p' AND con.conparentid = 0
			   AND (con.conrelid = format('chronicle.%I', t)::regclass
			        OR con.conrelid IN (SELECT i.inhrelid FROM pg_catalog.pg_inherits i
			                             WHERE i.inhparent = format('chronicle.%I', t)::regclass))
		LOOP
			EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.rel, c.conname);
			EXECUTE format('ALTER TABLE %s ADD PRIMARY KEY (origin, ts, source, key)', c.rel);
		END LOOP;
	END LOOP;
END;
$$;
ALTER TABLE chronicle.rollup_state ADD COLUMN origin integer DEFAULT 0;
ALTER TABLE chronicle.rollup_state DROP COLUMN id;
ALTER TABLE chronicle.rollup_state ADD PRIMARY KEY (origin);
ALTER TABLE chronicle.rollup_dirty ADD COLUMN origin integer NOT NULL DEFAULT 0;
