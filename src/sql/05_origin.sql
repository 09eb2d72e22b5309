-- Origins: the servers whose history this database holds (docs/storage.md,
-- "Origins").  Origin 0 is this server: its snapshots and history are
-- chronicle.snapshot and chronicle.history, partitioned by day and dropped
-- with chronicle.retention, written by the collector as before.  A run
-- imported from an archive (pg-chronicle import) is another origin: its
-- snapshots and history go into chronicle.archive_snapshot and
-- chronicle.archive_history, keyed by (origin, ts), kept as long as its
-- run.  Two servers' timestamps may collide and their windows overlap:
-- every read of the history reads one origin, chronicle._origin().

-- The other servers' recordings, with the server that recorded it; 0 is
-- never an id here: it is this server.  Two kinds:
--   archive       one row per archive imported.  Not one row per server:
--                 each import's snapshots and history are its own, so that
--                 an archive can neither add rows to another import's
--                 window (whoever imported it) nor disagree with it, and
--                 deleting a run deletes its rows.
--   subscription  one row per server this central database subscribes to
--                 (chronicle.subscribe(), 42_central.sql): its history as
--                 logical replication applies it, named by its
--                 subscription.
CREATE TABLE chronicle.origin (
	origin_id         integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	system_identifier bigint,
	server_name       text,
	server_version    text,           -- of its latest imported run; a subscription's when subscribed
	extension_version text,           -- pg_chronicle that recorded it
	first_imported    timestamptz NOT NULL DEFAULT now(),
	kind              text NOT NULL DEFAULT 'archive' CHECK (kind IN ('archive', 'subscription')),
	subscription      name UNIQUE,    -- of kind subscription: its pg_subscription
	retention         interval CHECK (retention >= interval '0'),  -- of kind subscription: its history's; NULL: chronicle.retention's
	CHECK ((kind = 'subscription') = (subscription IS NOT NULL))
);
COMMENT ON TABLE chronicle.origin IS
	'The other servers'' recordings in this database: one per archive imported, one per server subscribed to (origin 0, not listed, is this server)';

-- The origin the history reads come from: the setting chronicle.origin,
-- which a function that takes a run sets to its run's (run_window()).
CREATE FUNCTION chronicle._origin()
RETURNS integer
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_origin_now';
COMMENT ON FUNCTION chronicle._origin() IS
	'The origin whose history the analysis reads now (chronicle.origin; 0: this server)';
REVOKE ALL ON FUNCTION chronicle._origin() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._origin() TO pg_monitor, pg_read_all_stats;

-- The snapshots of the imported origins: chronicle.snapshot's columns.
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
COMMENT ON TABLE chronicle.archive_snapshot IS
	'The snapshots of imported runs, by origin (chronicle.snapshot''s columns)';

-- The snapshots of the origin read now: what every analysis reads instead
-- of chronicle.snapshot.  The branches of the UNION ALL have no WHERE of
-- their own, so that the planner makes them one append of the tables and
-- pushes the outer quals into each: for this server's the origin's test
-- is a constant (0 = chronicle._origin(), evaluated once), and a read by
-- ts keeps its partition pruning and primary key, also as the inner side
-- of a nested loop; the archive's is read by (origin, ts).
CREATE VIEW chronicle._snapshot AS
SELECT s.ts, s.segment, s.keyframe, s.collector, s.duration_ms, s.rows_written,
       s.wal_bytes, s.errors, s.system_identifier, s.server_name
  FROM (SELECT 0 AS origin, l.ts, l.segment, l.keyframe, l.collector, l.duration_ms, l.rows_written,
               l.wal_bytes, l.errors, l.system_identifier, l.server_name
          FROM chronicle.snapshot l
        UNION ALL
        SELECT a.origin, a.ts, a.segment, a.keyframe, a.collector, a.duration_ms, a.rows_written,
               a.wal_bytes, a.errors, a.system_identifier, a.server_name
          FROM chronicle.archive_snapshot a) s
 WHERE s.origin = chronicle._origin();
COMMENT ON VIEW chronicle._snapshot IS
	'The snapshots of the origin the analysis reads (chronicle.origin): chronicle.snapshot for this server';

-- The key ids of a subscribed server's packed history (42_central.sql):
-- its chronicle.history_key's id remote_id is key_id here.  Its history is
-- packed again with this database's ids when it is applied.
CREATE TABLE chronicle.archive_key (
	origin    integer NOT NULL REFERENCES chronicle.origin ON DELETE CASCADE,
	remote_id integer NOT NULL,
	key_id    integer NOT NULL,
	PRIMARY KEY (origin, remote_id)
);
COMMENT ON TABLE chronicle.archive_key IS
	'The key ids of each subscribed server''s history_key, as this database''s key ids';

-- The server whose runs a run label names now: the subscribed server being
-- read (chronicle.use_server(), 42_central.sql, sets the setting
-- chronicle.run_server), in whose runs a label is unique
-- (chronicle.run.server); 0, this server's runs and the imported ones,
-- whose labels are unique together.  Not chronicle.origin: the functions
-- that take a run pin it to 0 at their call.
CREATE FUNCTION chronicle._server()
RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT current_setting('chronicle.run_server')::integer
$$;
COMMENT ON FUNCTION chronicle._server() IS
	'The subscribed server whose runs a run label names now (chronicle.use_server()); 0: this server''s and the imported runs';
REVOKE ALL ON FUNCTION chronicle._server() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._server() TO pg_monitor, pg_read_all_stats;
