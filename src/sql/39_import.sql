-- Importing a run archive (pg-chronicle import, client/pg_chronicle/archive.py;
-- the format: docs/runs.md, "Run archives").  The client checks the
-- archive (format, version, checksums), copies its members into temporary
-- tables of its session, pg_temp.import_<member>, with the columns of this
-- database's tables and views, and calls this function in the same
-- transaction: the run, its origin (05_origin.sql), its snapshots and
-- history packed with this database's key ids, its pgbench rows, metrics,
-- marks and statement texts.  All or nothing: the caller's transaction.
--
-- Who may import: whoever may write runs (pg_monitor, as run_begin), so
-- SECURITY DEFINER, reading only the caller's own temporary tables.
-- Idempotent: an archive already imported (its id, in run.meta ->
-- 'archive') gives its run back with a NOTICE.  A label taken by another
-- run is refused (the client renames only when asked).
CREATE FUNCTION chronicle._import_run(manifest jsonb, label text)
RETURNS chronicle.run
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	r chronicle.run;
	m jsonb := manifest -> 'run';
	srv jsonb := manifest -> 'server';
	v_origin integer;
	src text;
	n bigint;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles u WHERE u.rolname = session_user
	                AND (u.rolsuper OR pg_has_role(u.oid, 'pg_monitor', 'MEMBER'))) THEN
		RAISE EXCEPTION 'chronicle._import_run: role % may not write runs', session_user
			USING ERRCODE = 'insufficient_privilege',
			      HINT = 'Importing a run needs the rights to record one: membership in pg_monitor.';
	END IF;
	IF manifest ->> 'archive_id' IS NULL OR m IS NULL OR srv IS NULL THEN
		RAISE EXCEPTION 'chronicle._import_run: the manifest has no archive_id, run or server'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- the same archive again: its run, once
	SELECT * INTO r FROM chronicle.run o WHERE o.meta -> 'archive' ->> 'id' = manifest ->> 'archive_id';
	IF FOUND THEN
		RAISE NOTICE 'archive % is imported already, as run "%"', manifest ->> 'archive_id', r.label
			USING DETAIL = 'Nothing was imported again.';
		RETURN r;
	END IF;
	PERFORM chronicle._check_label('chronicle._import_run', label, coalesce(m -> 'meta', '{}'));

	-- the origin: one per archive imported (05_origin.sql says why), with
	-- the server that recorded it
	INSERT INTO chronicle.origin (system_identifier, server_name, server_version, extension_version)
	VALUES ((srv ->> 'system_identifier')::bigint, srv ->> 'server_name',
	        srv ->> 'server_version', srv ->> 'extension_version')
	RETURNING origin_id INTO v_origin;

	INSERT INTO chronicle.run (label, started, ended, meta, settings, server_version, environment,
	                           owner, warmup, origin)
	VALUES (label, (m ->> 'started')::timestamptz, (m ->> 'ended')::timestamptz,
	        coalesce(m -> 'meta', '{}') || jsonb_build_object('archive', jsonb_build_object(
	            'id', manifest ->> 'archive_id', 'label', m ->> 'label', 'imported', now())),
	        coalesce(m -> 'settings', '{}'), m ->> 'server_version', coalesce(m -> 'environment', '{}'),
	        session_user, coalesce((m ->> 'warmup')::interval, '0'), v_origin)
	RETURNING * INTO r;

	-- Snapshots and history, the origin's own
	INSERT INTO chronicle.archive_snapshot
	SELECT v_origin, s.ts, s.segment, s.keyframe, s.collector, s.duration_ms, s.rows_written,
	       s.wal_bytes, s.errors, s.system_identifier, s.server_name
	  FROM pg_temp.import_snapshot s;
	INSERT INTO chronicle.archive_history (origin, ts, system_identifier, server_name)
	SELECT v_origin, s.ts, s.system_identifier, s.server_name FROM pg_temp.import_snapshot s;
	FOR src IN SELECT DISTINCT c.source FROM chronicle._source_columns() c ORDER BY 1 LOOP
		CONTINUE WHEN to_regclass('pg_temp.import_' || src) IS NULL;
		-- each snapshot's rows packed as the collector packs them, a
		-- keyframe's complete
		EXECUTE format($q$
			UPDATE chronicle.archive_history h SET %I = p.v
			  FROM (SELECT x.ts, chronicle._pack(%L, x.ts, array_agg(x), bool_or(s.keyframe)) AS v
			          FROM pg_temp.%I x JOIN pg_temp.import_snapshot s ON s.ts = x.ts
			         GROUP BY x.ts) p
			 WHERE h.origin = $1 AND h.ts = p.ts AND h.%I IS NULL$q$,
			src, src, 'import_' || src, src) USING v_origin;
	END LOOP;

	INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us, lag_us,
	                                       retries, status, source)
	SELECT r.run_id, t.ts, t.client_id, t.tx_no, t.script_no, t.latency_us, t.lag_us, t.retries,
	       t.status, t.source
	  FROM pg_temp.import_app_transaction t;
	INSERT INTO chronicle.app_interval
	SELECT r.run_id, a.interval_start, a.num_transactions, a.sum_latency_us, a.sum_latency_2,
	       a.min_latency_us, a.max_latency_us, a.sum_lag_us, a.sum_lag_2, a.min_lag_us, a.max_lag_us,
	       a.skipped, a.retried, a.retries, a.serialization_failures, a.deadlock_failures, a.interval_secs
	  FROM pg_temp.import_app_interval a;
	INSERT INTO chronicle.app_metric (ts, name, value, run_id)
	SELECT a.ts, a.name, a.value, r.run_id FROM pg_temp.import_app_metric a;
	INSERT INTO chronicle.mark (ts, event, owner, origin)
	SELECT k.ts, k.event, k.owner, v_origin FROM pg_temp.import_mark k
	 WHERE NOT EXISTS (SELECT FROM chronicle.mark o
	                    WHERE o.origin = v_origin AND o.ts = k.ts AND o.event = k.event);
	INSERT INTO chronicle.archive_statements_text (origin, dbid, queryid, query)
	SELECT v_origin, t.dbid, t.queryid, t.query FROM pg_temp.import_statements_text t
	ON CONFLICT DO NOTHING;
	RETURN r;
END;
$fn$;
COMMENT ON FUNCTION chronicle._import_run(jsonb, text) IS
	'Imports a run archive that the client copied into temporary tables (pg-chronicle import): its run, origin, snapshots, history, pgbench rows, metrics, marks and statement texts';
REVOKE ALL ON FUNCTION chronicle._import_run(jsonb, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._import_run(jsonb, text) TO pg_monitor;
