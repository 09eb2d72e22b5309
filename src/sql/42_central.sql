-- A central repository (docs/central.md): recording servers publish their
-- history with PostgreSQL's logical replication (chronicle.publish()), a
-- central database with the extension subscribes to each of them
-- (chronicle.subscribe()), and every analysis reads one server there by
-- its origin (chronicle.use_server(), the setting chronicle.origin).
--
-- The subscription applies into the tables of the same names; the REPLICA
-- trigger chronicle._central_apply() (src/central.c) sends each row into
-- the archive tables under the server's origin (05_origin.sql) instead,
-- its packed history packed again with this database's key ids.

-- A run's changes after its start (its end, its warm-up), as rows of their
-- own: the publication sends inserts only (publish = 'insert'), and an
-- UPDATE of chronicle.run could not reach the central side anyway.  There
-- the server's run has another run_id (its own), and the apply worker
-- looks an UPDATE's row up by the replica identity (run_id) in the
-- central's table: it finds no row, or a row of another run, and when
-- it finds none it only logs it and skips the change
-- (apply_handle_update_internal(): "did not find row to be updated"), no
-- trigger of the central side seeing it.  So every change of ended or
-- warmup of this server's own runs is inserted here too (the trigger
-- run_change, 42_central.sql's _central_layout()), and the central side
-- applies it to the run its map names.  Deleted with the run.
CREATE TABLE chronicle.run_change (
	run_id  integer NOT NULL REFERENCES chronicle.run ON DELETE CASCADE,
	changed timestamptz NOT NULL DEFAULT clock_timestamp(),
	ended   timestamptz,
	warmup  interval NOT NULL,
	PRIMARY KEY (run_id, changed)
);
COMMENT ON TABLE chronicle.run_change IS
	'The changes of this server''s runs after their start (end, warm-up), inserted to be published (docs/central.md)';

-- This server's runs deleted (run_delete()), as rows of their own for the
-- same reasons: the central side deletes its copy of each.  Kept: a
-- subscribe() that comes back after a while reads them too, for the runs
-- deleted meanwhile.
CREATE TABLE chronicle.run_deleted (
	run_id  integer PRIMARY KEY,
	deleted timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE chronicle.run_deleted IS
	'The runs of this server deleted, inserted to be published (docs/central.md)';

-- On a central database: the run here of each run of a subscribed server
-- (its origin, its run_id there).
CREATE TABLE chronicle.archive_run (
	origin    integer NOT NULL REFERENCES chronicle.origin ON DELETE CASCADE,
	remote_id integer NOT NULL,
	run_id    integer NOT NULL REFERENCES chronicle.run ON DELETE CASCADE,
	PRIMARY KEY (origin, remote_id)
);
COMMENT ON TABLE chronicle.archive_run IS
	'The runs of each subscribed server here: its run_id there (remote_id), the run_id here';

CREATE FUNCTION chronicle._run_changed()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	INSERT INTO chronicle.run_change (run_id, ended, warmup) VALUES (NEW.run_id, NEW.ended, NEW.warmup);
	RETURN NULL;
END;
$fn$;
COMMENT ON FUNCTION chronicle._run_changed() IS
	'Trigger: a change of a run''s end or warm-up into chronicle.run_change, to be published';
REVOKE ALL ON FUNCTION chronicle._run_changed() FROM PUBLIC;

CREATE FUNCTION chronicle._run_deleted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	INSERT INTO chronicle.run_deleted (run_id) VALUES (OLD.run_id) ON CONFLICT DO NOTHING;
	RETURN NULL;
END;
$fn$;
COMMENT ON FUNCTION chronicle._run_deleted() IS
	'Trigger: a run of this server deleted, into chronicle.run_deleted, to be published';
REVOKE ALL ON FUNCTION chronicle._run_deleted() FROM PUBLIC;

-- The tables a recording server publishes: what differs per server and is
-- written by its recording.  Not the extension's metadata (chronicle.metric,
-- the settings of the rollups...): the same on every server, or this
-- server's own.
-- (By name: the run tables are made by later files, 50_app.sql.)
CREATE FUNCTION chronicle._published_tables()
RETURNS regclass[]
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT ARRAY['chronicle.snapshot', 'chronicle.history', 'chronicle.history_key',
	             'chronicle.statements_text', 'chronicle.run', 'chronicle.run_change', 'chronicle.run_deleted', 'chronicle.mark',
	             'chronicle.app_transaction', 'chronicle.app_interval', 'chronicle.app_metric']::text[]::regclass[]
$$;
COMMENT ON FUNCTION chronicle._published_tables() IS
	'The tables chronicle.publish() publishes';
REVOKE ALL ON FUNCTION chronicle._published_tables() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._published_tables() TO pg_monitor, pg_read_all_stats;

-- On a recording server: the publication of its history, created or set
-- to the tables of this version (run it again after an upgrade).  INSERT
-- only: neither this server's retention (which drops partitions, and
-- DROP is not replicated anyway) nor a DELETE or TRUNCATE here deletes
-- anything on the central side; through the partitioned tables' root, so
-- that a new day partition needs no change to the publication.  A list of
-- tables, never FOR TABLES IN SCHEMA: the extension's other tables are
-- the same on every server and would collide.
CREATE FUNCTION chronicle.publish(publication name DEFAULT 'pg_chronicle')
RETURNS name
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	v_tables text := (SELECT string_agg(t::text, ', ') FROM unnest(chronicle._published_tables()) t);
BEGIN
	IF current_setting('wal_level') <> 'logical' THEN
		RAISE WARNING 'wal_level is %, not logical: nothing is published until it is', current_setting('wal_level')
			USING HINT = 'Set wal_level = logical and restart (docs/central.md).';
	END IF;
	IF EXISTS (SELECT FROM pg_publication p WHERE p.pubname = publication) THEN
		EXECUTE format('ALTER PUBLICATION %I SET TABLE %s', publication, v_tables);
		EXECUTE format('ALTER PUBLICATION %I SET (publish = %L, publish_via_partition_root = true)',
		               publication, 'insert');
	ELSE
		EXECUTE format('CREATE PUBLICATION %I FOR TABLE %s WITH (publish = %L, publish_via_partition_root = true)',
		               publication, v_tables, 'insert');
	END IF;
	RETURN publication;
END;
$fn$;
COMMENT ON FUNCTION chronicle.publish(name) IS
	'Publishes this server''s history for a central repository (INSERT only, through the partitioned tables'' root)';
REVOKE ALL ON FUNCTION chronicle.publish(name) FROM PUBLIC;

-- The trigger that stores what a subscription applies under its server's
-- origin (src/central.c).
CREATE FUNCTION chronicle._central_apply()
RETURNS trigger
LANGUAGE C
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_central_apply';
REVOKE ALL ON FUNCTION chronicle._central_apply() FROM PUBLIC;

-- The trigger on each published table, as a REPLICA trigger: it fires in
-- the sessions with session_replication_role = replica only (the apply
-- workers), so this server's own recording never runs it.  On a
-- partitioned table it is cloned onto every partition, with its REPLICA
-- state, also onto the partitions attached later.  CREATE OR REPLACE
-- TRIGGER makes it an ORIGIN trigger again, so it runs at every upgrade
-- (-- @upgrade below) as at the install.
CREATE FUNCTION chronicle._central_layout()
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	t regclass;
BEGIN
	-- on every server: its runs' changes as inserts (chronicle.run_change)
	CREATE OR REPLACE TRIGGER run_change AFTER UPDATE OF ended, warmup ON chronicle.run
		FOR EACH ROW
		WHEN (NEW.origin = 0 AND NEW.server = 0
		      AND (OLD.ended IS DISTINCT FROM NEW.ended OR OLD.warmup IS DISTINCT FROM NEW.warmup))
		EXECUTE FUNCTION chronicle._run_changed();
	CREATE OR REPLACE TRIGGER run_deleted AFTER DELETE ON chronicle.run
		FOR EACH ROW WHEN (OLD.origin = 0 AND OLD.server = 0)
		EXECUTE FUNCTION chronicle._run_deleted();
	FOREACH t IN ARRAY chronicle._published_tables() LOOP
		EXECUTE format('CREATE OR REPLACE TRIGGER central BEFORE INSERT ON %s '
		               'FOR EACH ROW EXECUTE FUNCTION chronicle._central_apply(%L)',
		               t, (SELECT c.relname FROM pg_class c WHERE c.oid = t));
		EXECUTE format('ALTER TABLE %s ENABLE REPLICA TRIGGER central', t);
	END LOOP;
END;
$fn$;
COMMENT ON FUNCTION chronicle._central_layout() IS
	'Makes the REPLICA trigger that redirects a subscribed server''s rows on each published table';
REVOKE ALL ON FUNCTION chronicle._central_layout() FROM PUBLIC;

-- (Called by 99_grants.sql, once every published table exists.)

-- On the central database, from the trigger (src/central.c): a row of a
-- subscribed server's runs, marks, run changes or deletions (kind: the
-- published table's name, r: the row as jsonb) stored under its origin.
-- Its run under a run_id of this database (chronicle.archive_run maps the
-- server's), its label unique among the server's runs (run.server).  Only
-- the server's own runs (origin 0 there): the history of a run it
-- imported is not published.  A change of a run that has no run here
-- (begun before the subscription) is skipped.  (The pgbench rows and
-- metrics, one row a transaction, get their run_id in the trigger.)
CREATE FUNCTION chronicle._central_store_run(origin integer, kind text, r jsonb)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	v_origin integer := origin;
	v_run integer;
	fk record;
BEGIN
	IF kind = 'run' THEN
		IF (r ->> 'origin')::integer <> 0 OR EXISTS (SELECT FROM chronicle.archive_run a
		                                             WHERE a.origin = v_origin AND a.remote_id = (r ->> 'run_id')::integer) THEN
			RETURN;
		END IF;
		INSERT INTO chronicle.run (label, started, ended, meta, settings, server_version, environment,
		                           owner, warmup, origin, server)
		SELECT x.label, x.started, x.ended, x.meta, x.settings, x.server_version, x.environment,
		       x.owner, x.warmup, v_origin, v_origin
		  FROM jsonb_populate_record(NULL::chronicle.run, r) x
		RETURNING run_id INTO v_run;
		INSERT INTO chronicle.archive_run (origin, remote_id, run_id)
		VALUES (v_origin, (r ->> 'run_id')::integer, v_run);
		RETURN;
	ELSIF kind = 'mark' THEN
		IF (r ->> 'origin')::integer = 0 THEN
			INSERT INTO chronicle.mark (ts, event, owner, origin)
			SELECT x.ts, x.event, x.owner, v_origin FROM jsonb_populate_record(NULL::chronicle.mark, r) x;
		END IF;
		RETURN;
	END IF;
	SELECT a.run_id INTO v_run FROM chronicle.archive_run a
	 WHERE a.origin = v_origin AND a.remote_id = (r ->> 'run_id')::integer;
	IF v_run IS NULL THEN
		RETURN;
	END IF;
	IF kind = 'run_change' THEN
		UPDATE chronicle.run o SET ended = (r ->> 'ended')::timestamptz, warmup = (r ->> 'warmup')::interval
		 WHERE o.run_id = v_run;
	ELSIF kind = 'run_deleted' THEN
		-- The run's rows in every table that refers to it, by name: an apply
		-- worker fires neither the foreign keys' cascades nor the statement
		-- trigger that rolls the pgbench rows' minutes up again.
		INSERT INTO chronicle.rollup_dirty (lo, hi, origin)
		SELECT min(t.ts), max(t.ts), v_origin FROM chronicle.app_transaction t
		 WHERE t.run_id = v_run HAVING count(*) > 0;
		FOR fk IN
			SELECT c.conrelid::regclass AS rel, a.attname
			  FROM pg_constraint c
			  JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
			 WHERE c.contype = 'f' AND c.confrelid = 'chronicle.run'::regclass AND c.conparentid = 0
		LOOP
			EXECUTE format('DELETE FROM %s WHERE %I = $1', fk.rel, fk.attname) USING v_run;
		END LOOP;
		DELETE FROM chronicle.run o WHERE o.run_id = v_run;
	ELSE
		RAISE EXCEPTION 'chronicle._central_store_run: unknown kind "%"', kind;
	END IF;
END;
$fn$;
COMMENT ON FUNCTION chronicle._central_store_run(integer, text, jsonb) IS
	'Stores a row of a subscribed server''s runs (run, run_change, run_deleted, mark) under its origin';
REVOKE ALL ON FUNCTION chronicle._central_store_run(integer, text, jsonb) FROM PUBLIC;

-- The publisher's side of chronicle.subscribe() (src/central.c).
CREATE FUNCTION chronicle._publisher_prepare(conninfo text, slot_name text,
	origin integer, runs_since timestamptz,
	OUT system_identifier bigint, OUT server_version integer,
	OUT key_ids integer[], OUT sources text[], OUT keys text[])
RETURNS record
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_publisher_prepare';
COMMENT ON FUNCTION chronicle._publisher_prepare(text, text, integer, timestamptz) IS
	'Creates the publisher''s replication slot, then reads with its snapshot the system identifier, version, key dictionary, and the runs to backfill (stored under origin)';
REVOKE ALL ON FUNCTION chronicle._publisher_prepare(text, text, integer, timestamptz) FROM PUBLIC;

CREATE FUNCTION chronicle._publisher_drop_slot(conninfo text, slot_name text)
RETURNS void
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_publisher_drop_slot';
COMMENT ON FUNCTION chronicle._publisher_drop_slot(text, text) IS
	'Drops a replication slot on the publisher';
REVOKE ALL ON FUNCTION chronicle._publisher_drop_slot(text, text) FROM PUBLIC;

CREATE FUNCTION chronicle._publisher_backfill(conninfo text, origin integer, since timestamptz)
RETURNS bigint
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_publisher_backfill';
COMMENT ON FUNCTION chronicle._publisher_backfill(text, integer, timestamptz) IS
	'Stores the publisher''s snapshots and history since a time (from the keyframe before it) under an origin, read an hour at a time';
REVOKE ALL ON FUNCTION chronicle._publisher_backfill(text, integer, timestamptz) FROM PUBLIC;

-- On the central database: subscribe to a recording server's publication.
-- The subscription (named subscription, its slot on the publisher too)
-- copies nothing (copy_data = false: no long COPY that holds back the
-- publisher's VACUUM), streams no
-- transaction in progress (the rows of a transaction reach the trigger
-- in their order, keys before the history that uses them), and transfers
-- binary (the packed history is bytea).  With backfill, the history the
-- publisher holds from that long ago (from the keyframe before) is read
-- from its tables, an hour per query, once the slot exists: none is
-- missed, none stored twice.  The server's runs that ended within the
-- backfill or are still open, with their pgbench rows, metrics and marks,
-- are read with the slot's snapshot (chronicle._publisher_prepare()), a
-- run the central side holds already not again.  Superuser only: it connects to
-- another server and creates a slot there.  Call it by itself, not inside
-- a transaction block: the slot is created on the publisher at once, and
-- a rollback after the call leaves it there (chronicle.subscribe() drops
-- it when it fails itself).
CREATE FUNCTION chronicle.subscribe(server_name text, conninfo text,
	publication name DEFAULT 'pg_chronicle', subscription name DEFAULT NULL,
	backfill interval DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	v_sub name := coalesce(subscription,
	                       left('chronicle_' || lower(regexp_replace(server_name, '[^A-Za-z0-9_]', '_', 'g')), 63));
	v_origin integer;
	p record;
BEGIN
	IF server_name IS NULL OR server_name = '' OR conninfo IS NULL THEN
		RAISE EXCEPTION 'chronicle.subscribe: give the server''s name and conninfo'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF strpos(server_name, ':') > 0 THEN
		RAISE EXCEPTION 'chronicle.subscribe: a server''s name cannot hold ":": "%"', server_name
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'server:label names a run of a subscribed server (docs/central.md); name it, for example, db1.';
	END IF;
	-- a server subscribed to before (chronicle.unsubscribe()) keeps its
	-- origin: its history goes on where it stopped
	SELECT o.origin_id INTO v_origin FROM chronicle.origin o
	 WHERE o.kind = 'subscription' AND o.server_name = subscribe.server_name;
	IF FOUND AND EXISTS (SELECT FROM chronicle.origin o JOIN pg_subscription s ON s.subname = o.subscription
	                      WHERE o.origin_id = v_origin) THEN
		RAISE EXCEPTION 'chronicle.subscribe: server "%" is subscribed already', server_name
			USING ERRCODE = 'duplicate_object',
			      HINT = 'chronicle.servers lists the subscriptions; chronicle.unsubscribe() ends one.';
	END IF;
	-- disabled until the keys are here: it checks the publication and
	-- lists its tables, and creates no slot (which a function may not)
	EXECUTE format('CREATE SUBSCRIPTION %I CONNECTION %L PUBLICATION %I'
	               ' WITH (create_slot = false, slot_name = %L, copy_data = false, enabled = false,'
	               ' streaming = off, binary = true)',
	               v_sub, conninfo, publication, v_sub);
	-- CREATE SUBSCRIPTION only warns about a publication the publisher
	-- lacks: every table it should send, or nothing is done
	IF (SELECT count(*) FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid
	     WHERE s.subname = v_sub AND r.srrelid = ANY (chronicle._published_tables()))
	   <> cardinality(chronicle._published_tables()) THEN
		RAISE EXCEPTION 'chronicle.subscribe: publication "%" of server "%" does not publish pg_chronicle''s history',
			publication, server_name
			USING ERRCODE = 'undefined_object',
			      HINT = 'Run SELECT chronicle.publish() on that server (docs/central.md).';
	END IF;
	IF v_origin IS NULL THEN
		INSERT INTO chronicle.origin (server_name, kind, subscription, extension_version)
		VALUES (server_name, 'subscription', v_sub,
		        (SELECT e.extversion FROM pg_extension e WHERE e.extname = 'pg_chronicle'))
		RETURNING origin_id INTO v_origin;
	ELSE
		UPDATE chronicle.origin o SET subscription = v_sub WHERE o.origin_id = v_origin;
	END IF;

	-- the slot, then every key the publisher holds: a key is in that list
	-- or comes through the slot
	p := chronicle._publisher_prepare(conninfo, v_sub, v_origin, now() - backfill);
	BEGIN
		IF (SELECT o.system_identifier <> p.system_identifier FROM chronicle.origin o WHERE o.origin_id = v_origin) THEN
			RAISE EXCEPTION 'chronicle.subscribe: server "%" is another cluster than the one subscribed to before', server_name
				USING ERRCODE = 'invalid_parameter_value',
				      DETAIL = format('Its system identifier is %s, the origin''s %s.', p.system_identifier,
				                      (SELECT o.system_identifier FROM chronicle.origin o WHERE o.origin_id = v_origin)),
				      HINT = 'Subscribe to it under another name.';
		END IF;
		UPDATE chronicle.origin o
		   SET system_identifier = p.system_identifier,
		       server_version = (p.server_version / 10000)::text || '.' || (p.server_version % 10000)::text
		 WHERE o.origin_id = v_origin;
		INSERT INTO chronicle.history_key (source, key)
		SELECT k.source, k.key::text[] FROM unnest(p.sources, p.keys) AS k(source, key)
		ON CONFLICT (source, key) DO NOTHING;
		INSERT INTO chronicle.archive_key (origin, remote_id, key_id)
		SELECT v_origin, k.id, h.key_id
		  FROM unnest(p.key_ids, p.sources, p.keys) AS k(id, source, key)
		  JOIN chronicle.history_key h ON h.source = k.source AND h.key = k.key::text[]
		-- subscribed again: the publisher's dictionary as it is now
		ON CONFLICT (origin, remote_id) DO UPDATE SET key_id = excluded.key_id;
		IF backfill IS NOT NULL THEN
			RAISE NOTICE 'server "%": % snapshots from before the subscription', server_name,
				chronicle._publisher_backfill(conninfo, v_origin, now() - backfill);
		END IF;
		EXECUTE format('ALTER SUBSCRIPTION %I ENABLE', v_sub);
	EXCEPTION WHEN OTHERS THEN
		PERFORM chronicle._publisher_drop_slot(conninfo, v_sub);
		RAISE;
	END;
	RETURN v_origin;
END;
$fn$;
COMMENT ON FUNCTION chronicle.subscribe(text, text, name, name, interval) IS
	'Subscribes this central database to a recording server''s history (its publication, chronicle.publish()); returns its origin';
REVOKE ALL ON FUNCTION chronicle.subscribe(text, text, name, name, interval) FROM PUBLIC;

-- Ends the subscription to a server; its history stays, under its origin,
-- and chronicle.subscribe() of the same name goes on with it (what the
-- server recorded in between is not fetched).  Drops the slot on the
-- publisher when it can reach it (a WARNING otherwise: drop it there, it
-- holds back the publisher's WAL).  DROP SUBSCRIPTION of a subscription
-- with a slot cannot run in a function: the subscription is disabled and
-- dissociated from its slot first, and the slot dropped over a
-- connection of its own.  Superuser only.
CREATE FUNCTION chronicle.unsubscribe(server_name text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	v_sub name;
	v_conninfo text;
	v_slot name;
BEGIN
	SELECT s.subname, s.subconninfo, s.subslotname INTO v_sub, v_conninfo, v_slot
	  FROM chronicle.origin o
	  JOIN pg_subscription s ON s.subname = o.subscription
	                        AND s.subdbid = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
	 WHERE o.kind = 'subscription' AND o.server_name = unsubscribe.server_name;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'chronicle.unsubscribe: no subscription to a server named "%"', server_name
			USING ERRCODE = 'undefined_object',
			      HINT = 'The servers are listed by chronicle.servers.';
	END IF;
	EXECUTE format('ALTER SUBSCRIPTION %I DISABLE', v_sub);
	EXECUTE format('ALTER SUBSCRIPTION %I SET (slot_name = NONE)', v_sub);
	EXECUTE format('DROP SUBSCRIPTION %I', v_sub);
	IF v_slot IS NOT NULL THEN
		BEGIN
			PERFORM chronicle._publisher_drop_slot(v_conninfo, v_slot);
		EXCEPTION WHEN OTHERS THEN
			RAISE WARNING 'could not drop the replication slot "%" on server "%": %', v_slot, server_name, SQLERRM
				USING HINT = 'Drop it on that server: it holds back its WAL.';
		END;
	END IF;
END;
$fn$;
COMMENT ON FUNCTION chronicle.unsubscribe(text) IS
	'Ends the subscription to a server (its slot dropped on the publisher); its history stays';
REVOKE ALL ON FUNCTION chronicle.unsubscribe(text) FROM PUBLIC;

-- Retention on the central side.  A subscribed server's history is not
-- partitioned by day (archive_snapshot and archive_history, keyed by
-- (origin, ts), 05_origin.sql): what is older than its retention
-- (origin.retention, or chronicle.retention: the argument of
-- chronicle.maintain()) is deleted, never what the server itself still
-- keeps (publish = 'insert': the server's own retention deletes nothing
-- here).  The cut is a keyframe: a row after it reads back to the latest
-- keyframe (docs/storage.md), so the rows from the cut on stay readable.
-- A call deletes at most a day of each server from its oldest row on (a
-- few hundred thousand rows at 1 s), so that it holds no lock for long
-- and a backlog (a retention made shorter) goes in steps.  Runs, their
-- pgbench rows and marks stay, as this server's do.  Called by the
-- housekeeper every five minutes and by chronicle.maintain(); returns the
-- snapshots deleted.
CREATE FUNCTION chronicle._prune_servers(retention interval DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
AS $fn$
DECLARE
	keep interval := coalesce(retention, chronicle._retention());
	o record;
	v_first timestamptz;
	v_cut timestamptz;
	v_rows bigint;
	v_total bigint := 0;
BEGIN
	FOR o IN SELECT g.origin_id, coalesce(g.retention, keep) AS keep
	           FROM chronicle.origin g
	          WHERE g.kind = 'subscription'
	          ORDER BY g.origin_id LOOP
		CONTINUE WHEN o.keep <= interval '0';
		SELECT min(a.ts) INTO v_first FROM chronicle.archive_snapshot a WHERE a.origin = o.origin_id;
		CONTINUE WHEN v_first IS NULL;
		-- the latest keyframe of the day from the oldest row, or else the
		-- first keyframe after it, before the cutoff
		SELECT coalesce(
		         (SELECT max(a.ts) FROM chronicle.archive_snapshot a
		           WHERE a.origin = o.origin_id AND a.keyframe AND a.ts > v_first
		             AND a.ts <= least(now() - o.keep, v_first + interval '1 day')),
		         (SELECT min(a.ts) FROM chronicle.archive_snapshot a
		           WHERE a.origin = o.origin_id AND a.keyframe AND a.ts > v_first
		             AND a.ts <= now() - o.keep))
		  INTO v_cut;
		CONTINUE WHEN v_cut IS NULL;
		DELETE FROM chronicle.archive_history h WHERE h.origin = o.origin_id AND h.ts < v_cut;
		DELETE FROM chronicle.archive_snapshot a WHERE a.origin = o.origin_id AND a.ts < v_cut;
		GET DIAGNOSTICS v_rows = ROW_COUNT;
		v_total := v_total + v_rows;
	END LOOP;
	RETURN v_total;
END;
$fn$;
COMMENT ON FUNCTION chronicle._prune_servers(interval) IS
	'Deletes the subscribed servers'' history older than their retention, from a keyframe, at most a day of each a call';
REVOKE ALL ON FUNCTION chronicle._prune_servers(interval) FROM PUBLIC;

-- The origin of a subscribed server, by its name; an error naming the
-- caller when there is none.
CREATE FUNCTION chronicle._server_origin(caller text, server_name text)
RETURNS integer
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	v_origin integer;
BEGIN
	SELECT o.origin_id INTO v_origin FROM chronicle.origin o
	 WHERE o.kind = 'subscription' AND o.server_name = _server_origin.server_name;
	IF NOT FOUND THEN
		RAISE EXCEPTION '%: no subscribed server named "%"', caller, server_name
			USING ERRCODE = 'undefined_object',
			      HINT = 'The servers are listed by chronicle.servers.';
	END IF;
	RETURN v_origin;
END;
$fn$;
COMMENT ON FUNCTION chronicle._server_origin(text, text) IS
	'The origin of a subscribed server by its name (an error naming the caller when there is none)';
REVOKE ALL ON FUNCTION chronicle._server_origin(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._server_origin(text, text) TO pg_monitor, pg_read_all_stats;

-- A subscribed server's retention on the central side: NULL follows
-- chronicle.retention, 0 keeps everything.
CREATE FUNCTION chronicle.set_server_retention(server_name text, retention interval)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	v_origin integer := chronicle._server_origin('chronicle.set_server_retention', server_name);
BEGIN
	PERFORM chronicle._check_retention('chronicle.set_server_retention', retention);
	UPDATE chronicle.origin o SET retention = set_server_retention.retention WHERE o.origin_id = v_origin;
END;
$fn$;
COMMENT ON FUNCTION chronicle.set_server_retention(text, interval) IS
	'Sets how long the central side keeps a subscribed server''s history (NULL: chronicle.retention, 0: forever)';
REVOKE ALL ON FUNCTION chronicle.set_server_retention(text, interval) FROM PUBLIC;

-- The servers this central database subscribes to: the server, its
-- version when subscribed, its retention here (NULL: chronicle.retention),
-- the oldest snapshot kept, the latest received and how old it is
-- (the publisher's clock against this one's), and the apply worker's view
-- of the stream (pg_stat_subscription).
CREATE VIEW chronicle.servers AS
SELECT o.origin_id AS origin, o.server_name, o.system_identifier, o.server_version,
       o.subscription, s.subenabled AS enabled, o.retention,
       l.first AS first_snapshot, l.ts AS last_snapshot,
       clock_timestamp() - l.ts AS snapshot_age,
       st.received_lsn, st.latest_end_lsn,
       st.last_msg_receipt_time - st.last_msg_send_time AS transfer_lag,
       st.pid IS NOT NULL AS streaming
  FROM chronicle.origin o
  LEFT JOIN pg_subscription s ON s.subname = o.subscription
                             AND s.subdbid = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
  LEFT JOIN pg_stat_subscription st ON st.subid = s.oid AND st.relid IS NULL AND st.leader_pid IS NULL
  LEFT JOIN LATERAL (SELECT min(a.ts) AS first, max(a.ts) AS ts FROM chronicle.archive_snapshot a
                      WHERE a.origin = o.origin_id) l ON true
 WHERE o.kind = 'subscription';
COMMENT ON VIEW chronicle.servers IS
	'The servers this central database subscribes to: version, latest snapshot received, apply state';

-- Read a subscribed server from now on in this session: chronicle.origin
-- set to its origin, which every analysis function reads.  NULL: this
-- server again.
CREATE FUNCTION chronicle.use_server(server_name text)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	v_origin integer;
BEGIN
	IF server_name IS NULL THEN
		PERFORM set_config('chronicle.origin', '0', false);
		PERFORM set_config('chronicle.run_server', '0', false);
		RETURN 0;
	END IF;
	v_origin := chronicle._server_origin('chronicle.use_server', server_name);
	PERFORM set_config('chronicle.origin', v_origin::text, false);
	PERFORM set_config('chronicle.run_server', v_origin::text, false);
	RETURN v_origin;
END;
$fn$;
COMMENT ON FUNCTION chronicle.use_server(text) IS
	'Makes the analysis of this session read a subscribed server (its origin); NULL: this server';
REVOKE ALL ON FUNCTION chronicle.use_server(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.use_server(text) TO pg_monitor, pg_read_all_stats;
