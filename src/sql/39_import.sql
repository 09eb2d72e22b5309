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
-- A running sum of bigints as a bigint (sum(bigint) is a numeric): the
-- decoding of the pgbench rows' differences, millions of rows.  An
-- overflow is an error, as bigint arithmetic's.
CREATE AGGREGATE chronicle._sum_bigint(bigint) (SFUNC = pg_catalog.int8pl, STYPE = bigint);
COMMENT ON AGGREGATE chronicle._sum_bigint(bigint) IS
	'The sum of bigints as a bigint, an error on overflow (chronicle._import_run() decodes with it)';
REVOKE ALL ON FUNCTION chronicle._sum_bigint(bigint) FROM PUBLIC;

-- Whether a statement that inserts the pgbench rows of runs its own
-- transaction inserted, and checks that itself, may skip the triggers of
-- chronicle.app_transaction (session_replication_role replica, that
-- statement only): the foreign key's check, once per row, is then
-- redundant (the runs are there, and no other session sees them before
-- the transaction commits).  Only while the role may set the parameter and
-- the triggers are the ones known here: the foreign key's, the rollup's,
-- which marks this server's runs only (60_rollups.sql), the kept results'
-- epoch (50_app.sql: nothing is kept of a run not committed yet), and the
-- central's REPLICA trigger (42_central.sql: it returns a row of no apply
-- worker as it is); a trigger or constraint trigger of any other kind
-- keeps every row checked.  _import_run() and chronicle.subscribe()'s
-- runs from before (central_publisher.c) ask it.
CREATE FUNCTION chronicle._app_transaction_triggers_known()
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	RETURN has_parameter_privilege(current_user, 'session_replication_role', 'SET')
	   AND NOT EXISTS (SELECT FROM pg_trigger t
	                    WHERE t.tgrelid = 'chronicle.app_transaction'::regclass
	                      AND NOT (t.tgname IN ('rollup_app_inserted', 'rollup_app_deleted') AND NOT t.tgisinternal
	                               AND t.tgfoid = 'chronicle._rollup_app_changed()'::regprocedure)
	                      AND NOT (t.tgname = 'app_epoch_next' AND NOT t.tgisinternal
	                               AND t.tgfoid = 'chronicle._app_epoch_next()'::regprocedure)
	                      AND NOT (t.tgname = 'central' AND NOT t.tgisinternal
	                               AND t.tgfoid = 'chronicle._central_apply()'::regprocedure)
	                      AND NOT (t.tgisinternal AND t.tgconstraint IN (
	                               SELECT c.oid FROM pg_constraint c
	                                WHERE c.conrelid = 'chronicle.app_transaction'::regclass
	                                  AND c.contype = 'f' AND c.confrelid = 'chronicle.run'::regclass
	                                  AND c.conkey = ARRAY[(SELECT a.attnum FROM pg_attribute a
	                                                         WHERE a.attrelid = c.conrelid
	                                                           AND a.attname = 'run_id')]::int2[])));
END;
$fn$;
COMMENT ON FUNCTION chronicle._app_transaction_triggers_known() IS
	'Whether inserting pgbench rows of runs this transaction inserted may skip chronicle.app_transaction''s triggers (checking the foreign key once itself): the role may set session_replication_role and the triggers are the known ones';
REVOKE ALL ON FUNCTION chronicle._app_transaction_triggers_known() FROM PUBLIC;


-- The coded pgbench rows of an archive (format 2) in pg_temp's table
-- coded, decoded and inserted under run_id in one pass, no trigger fired
-- (src/import.c says when that is right); returns how many.
CREATE FUNCTION chronicle._import_transactions(run_id integer, coded regclass)
RETURNS bigint
LANGUAGE C
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'chronicle_import_transactions';
COMMENT ON FUNCTION chronicle._import_transactions(integer, regclass) IS
	'Decodes an archive''s coded pgbench rows (a temporary table copied in by pg-chronicle import) into chronicle.app_transaction, in one pass (chronicle._import_run() calls it)';
REVOKE ALL ON FUNCTION chronicle._import_transactions(integer, regclass) FROM PUBLIC;

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
	v_with text;
	v_cols text;
	v_vals text;
	v_joins text;
	v_role text;
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
	-- The caller's tables are read with this function's rights: they must
	-- be plain tables of its own temporary schema with columns of built-in
	-- types (a view, a rule or a cast of its own would run its code here).
	IF EXISTS (SELECT FROM pg_class c
	            WHERE c.relnamespace = pg_my_temp_schema() AND c.relname LIKE 'import\_%'
	              AND (c.relkind NOT IN ('r', 'S') OR c.relhasrules OR c.relrowsecurity
	                   OR EXISTS (SELECT FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
	                               WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
	                                 AND t.typnamespace <> 'pg_catalog'::regnamespace))) THEN
		RAISE EXCEPTION 'chronicle._import_run: the import tables must be plain tables of built-in types'
			USING ERRCODE = 'wrong_object_type';
	END IF;
	-- the same archive again: its run, once.  One import of an archive at a
	-- time: a second one (under another label, say) waits here for the
	-- first to end, and then finds its run.
	PERFORM pg_advisory_xact_lock('chronicle._import_run(jsonb,text)'::regprocedure::oid::integer,
	                              hashtext(manifest ->> 'archive_id'));
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
	-- One statement: each source's rows packed per snapshot as the
	-- collector packs them (a keyframe's complete), joined by ts.  (An
	-- UPDATE per source read the new rows without statistics: a nested
	-- loop over the table.)
	SELECT string_agg(format('p_%s AS (SELECT x.ts, chronicle._pack(%L, x.ts, array_agg(x), bool_or(s.keyframe)) AS v'
	                         ' FROM pg_temp.%I x JOIN pg_temp.import_snapshot s ON s.ts = x.ts GROUP BY x.ts)',
	                         src, src, 'import_' || src), ', '),
	       string_agg(format('%I', src), ', '),
	       string_agg(format('p_%s.v', src), ', '),
	       string_agg(format('LEFT JOIN p_%s ON p_%s.ts = s.ts', src, src), ' ')
	  INTO v_with, v_cols, v_vals, v_joins
	  FROM (SELECT DISTINCT c.source AS src FROM chronicle._source_columns() c) c
	 WHERE to_regclass('pg_temp.import_' || c.src) IS NOT NULL;
	EXECUTE format($q$
		%s INSERT INTO chronicle.archive_history (origin, ts, system_identifier, server_name%s)
		SELECT $1, s.ts, s.system_identifier, s.server_name%s FROM pg_temp.import_snapshot s %s$q$,
		CASE WHEN v_with IS NOT NULL THEN 'WITH ' || v_with ELSE '' END,
		coalesce(', ' || v_cols, ''), coalesce(', ' || v_vals, ''), coalesce(v_joins, '')) USING v_origin;

	-- The pgbench rows, most of an import's time (millions of rows): their
	-- foreign key to chronicle.run is checked once here, not by its trigger
	-- once per row (a query each, half the time of the insert, docs/
	-- benchmarks.md "Run archives"): every row's run_id is r.run_id, the
	-- run this transaction inserted above, which no other session sees
	-- before it commits; the triggers are skipped (by the decoding in C,
	-- or for the one statement in SQL) only while they are the known ones
	-- (_app_transaction_triggers_known()).
	IF NOT EXISTS (SELECT FROM chronicle.run o WHERE o.run_id = r.run_id AND o.origin = v_origin) THEN
		RAISE EXCEPTION 'chronicle._import_run: run % is not the one inserted', r.run_id;
	END IF;
	IF manifest -> 'members' -> 'app_transaction' ? 'encoding'
	   AND chronicle._app_transaction_triggers_known() THEN
		-- format 2 (ts and tx_no differences to the row before, n orders
		-- the rows, status NULL: ok), decoded in one pass (src/import.c)
		PERFORM chronicle._import_transactions(r.run_id, 'pg_temp.import_app_transaction'::regclass);
	ELSE
		IF chronicle._app_transaction_triggers_known() THEN
			v_role := current_setting('session_replication_role');
			PERFORM set_config('session_replication_role', 'replica', true);
		END IF;
		IF manifest -> 'members' -> 'app_transaction' ? 'encoding' THEN
			-- format 2 with a trigger of the user's: in SQL, each row
			-- through the triggers
			INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us, lag_us,
			                                       retries, status, source)
			SELECT r.run_id, 'epoch'::timestamptz + (x.us / 1000000) * interval '1 s'
			                 + (x.us % 1000000) * interval '1 microsecond',
			       x.client_id, x.tx_no, x.script_no, x.latency_us, x.lag_us, x.retries, x.status, x.source
			  FROM (SELECT chronicle._sum_bigint(t.ts) OVER w AS us, t.client_id,
			               chronicle._sum_bigint(t.tx_no) OVER w AS tx_no,
			               t.script_no, t.latency_us, t.lag_us, t.retries, coalesce(t.status, 'ok') AS status,
			               t.source
			          FROM pg_temp.import_app_transaction t
			        WINDOW w AS (ORDER BY t.n ROWS UNBOUNDED PRECEDING)) x;
		ELSE
			INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us, lag_us,
			                                       retries, status, source)
			SELECT r.run_id, t.ts, t.client_id, t.tx_no, t.script_no, t.latency_us, t.lag_us, t.retries,
			       t.status, t.source
			  FROM pg_temp.import_app_transaction t;
		END IF;
		IF v_role IS NOT NULL THEN
			PERFORM set_config('session_replication_role', v_role, true);
		END IF;
	END IF;
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

-- ---------------------------------------------------------------------
-- Exporting a run from SQL: chronicle.run_export(), the archive that
-- pg-chronicle export writes, for psql users (docs/runs.md, "Run
-- archives"): the same members, read by the same queries, as a tar file
-- that is not compressed (the server has no xz; the client reads either).

-- One member: the rows of query (whose columns are cols, in order) as
-- CSV with a header, as COPY (...) TO STDOUT (FORMAT csv, HEADER) writes
-- them, in UTF-8, in the order of ord; and its row count.  kinds tells
-- each column's text form: n a number or a time (its cast to text, which
-- holds no delimiter), b a boolean (t or f, as boolout writes it, not the
-- cast's true or false), s a string (its text, quoted where COPY quotes),
-- o anything else (its type's output function, quoted where COPY quotes).
CREATE FUNCTION chronicle._export_member(query text, cols text[], kinds text[], ord text,
                                         OUT data bytea, OUT nrows bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_line text;
	v_body text;
BEGIN
	-- a string field: NULL empty, quoted when it is empty or holds a
	-- delimiter, a quote or a line end (or is the end-of-data marker), as
	-- COPY quotes (an expression, not a function: a function with its own
	-- search_path is not inlined, and a call per field took 10 times as long)
	SELECT string_agg(CASE k WHEN 'n' THEN format('coalesce(q.%I::text, '''')', c)
	                         WHEN 'b' THEN format('CASE WHEN q.%I THEN ''t'' WHEN NOT q.%I THEN ''f'' ELSE '''' END', c, c)
	                         ELSE replace($q$CASE WHEN #v# IS NULL THEN ''
	                                              WHEN #v# = '' OR #v# = '\.' OR strpos(#v#, ',') > 0
	                                                   OR strpos(#v#, '"') > 0 OR strpos(#v#, E'\n') > 0
	                                                   OR strpos(#v#, E'\r') > 0
	                                              THEN '"' || replace(#v#, '"', '""') || '"'
	                                              ELSE #v# END$q$,
	                                      '#v#', CASE k WHEN 's' THEN format('q.%I::text', c)
	                                                    ELSE format('format(''%%s'', q.%I)', c) END) END,
	                  $s$ || ',' || $s$ ORDER BY i)
	  INTO v_line
	  FROM unnest(cols, kinds) WITH ORDINALITY AS u(c, k, i);
	EXECUTE format('SELECT string_agg(%s || E''\n'', '''' ORDER BY %s), count(*) FROM (%s) q',
	               v_line, ord, query)
	   INTO v_body, nrows;
	-- the header: the columns' names, none of which needs quotes
	data := convert_to(array_to_string(cols, ',') || E'\n' || coalesce(v_body, ''), 'UTF8');
END;
$$;

-- A file of a tar archive (POSIX ustar): its header and its data, padded
-- to 512-byte blocks; mtime in seconds since 1970.
CREATE FUNCTION chronicle._tar_member(name text, data bytea, mtime bigint)
RETURNS bytea
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	n bytea := convert_to(name, 'UTF8');
	h bytea;
	v_sum integer;
BEGIN
	IF length(n) > 99 THEN
		RAISE EXCEPTION 'chronicle._tar_member: name "%" is too long for a tar header', name;
	END IF;
	-- name, mode, uid, gid, size, mtime (numbers: octal digits and a NUL),
	-- the checksum's field as spaces while the bytes are summed, typeflag
	-- 0 (a file), no link name, magic and version, then nothing
	h := n || decode(repeat('00', 100 - length(n)), 'hex')
	     || convert_to('0000644', 'UTF8') || '\x00'::bytea
	     || convert_to('0000000', 'UTF8') || '\x00'::bytea
	     || convert_to('0000000', 'UTF8') || '\x00'::bytea
	     || convert_to(lpad(to_oct(length(data)), 11, '0'), 'UTF8') || '\x00'::bytea
	     || convert_to(lpad(to_oct(mtime), 11, '0'), 'UTF8') || '\x00'::bytea
	     || convert_to('        0', 'UTF8')
	     || decode(repeat('00', 100), 'hex')
	     || convert_to('ustar', 'UTF8') || '\x00'::bytea || convert_to('00', 'UTF8')
	     || decode(repeat('00', 512 - 265), 'hex');
	SELECT sum(get_byte(h, i)) INTO v_sum FROM generate_series(0, 511) AS i;
	h := overlay(h PLACING convert_to(lpad(to_oct(v_sum), 6, '0'), 'UTF8') || '\x0020'::bytea
	             FROM 149 FOR 8);
	RETURN h || data || decode(repeat('00', (512 - length(data) % 512) % 512), 'hex');
END;
$$;

-- The archive of an ended run, as pg-chronicle export writes it
-- (client/pg_chronicle/archive.py, whose queries these are): a tar file of
-- the manifest and the members, not compressed.  Text forms in UTC, ISO
-- dates and exact floats, as the client's session writes them; the
-- history read in the run's origin, so that an imported run exports as it
-- was imported.  Rights: those of reading the history.
CREATE FUNCTION chronicle.run_export(run text)
RETURNS bytea
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
SET DateStyle = 'ISO, YMD'
SET IntervalStyle = 'postgres'
SET extra_float_digits = 3
SET chronicle.origin = 0
AS $fn$
DECLARE
	r chronicle.run;
	v_run integer := chronicle._run_id(run, 'chronicle.run_export');
	v_srv jsonb;
	v_lo timestamptz;
	v_hi timestamptz;
	v_segment timestamptz;
	v_members jsonb := '{}';
	v_tar bytea := '';
	v_mtime bigint;
	m record;
	v_data bytea;
	v_rows bigint;
	v_view text;
	v_names text;
	v_keys text;
	v_since text;
	v_latest text;
BEGIN
	SELECT * INTO r FROM chronicle.run o WHERE o.run_id = v_run;
	IF r.ended IS NULL THEN
		RAISE EXCEPTION 'chronicle.run_export: run "%" is still open', run
			USING ERRCODE = 'object_not_in_prerequisite_state',
			      HINT = 'End it (chronicle.run_end()) before exporting it.';
	END IF;
	PERFORM chronicle._run_origin(v_run);          -- read in the run's origin
	IF r.origin = 0 THEN
		SELECT jsonb_build_object('system_identifier', s.system_identifier, 'server_name', s.name,
		                          'server_version', current_setting('server_version'),
		                          'extension_version', (SELECT e.extversion FROM pg_extension e
		                                                 WHERE e.extname = 'pg_chronicle'))
		  INTO v_srv FROM chronicle.server() s;
	ELSE
		SELECT jsonb_build_object('system_identifier', o.system_identifier, 'server_name', o.server_name,
		                          'server_version', o.server_version,
		                          'extension_version', o.extension_version)
		  INTO v_srv FROM chronicle.origin o WHERE o.origin_id = r.origin;
	END IF;
	-- the data window: from the snapshot at or before the run's start to
	-- the first one after its end (pg-chronicle export's)
	v_lo := coalesce((SELECT max(s.ts) FROM chronicle._snapshot s WHERE s.ts <= r.started), r.started);
	v_hi := coalesce((SELECT min(s.ts) FROM chronicle._snapshot s WHERE s.ts > r.ended), r.ended);
	v_segment := coalesce((SELECT s.segment FROM chronicle._snapshot s WHERE s.ts = v_lo), v_lo);
	v_mtime := extract(epoch FROM r.ended)::bigint;

	FOR m IN
		SELECT x.name, x.query, x.cols, x.kinds, x.ord
		  FROM (VALUES
			(1, 'snapshot',
			 format('SELECT ts, segment, keyframe OR ts = %L AS keyframe, collector, duration_ms, rows_written,'
			        ' wal_bytes, errors, system_identifier, server_name FROM chronicle._snapshot'
			        ' WHERE ts >= %L AND ts <= %L', v_lo, v_lo, v_hi),
			 '{ts,segment,keyframe,collector,duration_ms,rows_written,wal_bytes,errors,system_identifier,server_name}'::text[],
			 '{n,n,b,s,n,n,n,n,n,s}'::text[], 'q.ts'),
			(2, 'app_transaction',
			 format('SELECT (extract(epoch FROM t.ts) * 1000000)::bigint'
			        ' - coalesce(lag((extract(epoch FROM t.ts) * 1000000)::bigint) OVER w, 0) AS ts,'
			        ' t.client_id, t.tx_no - coalesce(lag(t.tx_no) OVER w, 0) AS tx_no, t.script_no,'
			        ' t.latency_us, t.lag_us, t.retries, nullif(t.status, ''ok'') AS status, t.source,'
			        ' t.ts AS o_ts, t.tx_no AS o_tx_no'
			        ' FROM chronicle.app_transaction t WHERE t.run_id = %s'
			        ' WINDOW w AS (ORDER BY t.ts, t.client_id, t.tx_no)', v_run),
			 '{ts,client_id,tx_no,script_no,latency_us,lag_us,retries,status,source}',
			 '{n,n,n,n,n,n,n,s,s}', 'q.o_ts, q.client_id, q.o_tx_no'),
			(3, 'app_interval',
			 format('SELECT interval_start, num_transactions, sum_latency_us, sum_latency_2, min_latency_us,'
			        ' max_latency_us, sum_lag_us, sum_lag_2, min_lag_us, max_lag_us, skipped, retried,'
			        ' retries, serialization_failures, deadlock_failures, interval_secs'
			        ' FROM chronicle.app_interval WHERE run_id = %s', v_run),
			 '{interval_start,num_transactions,sum_latency_us,sum_latency_2,min_latency_us,max_latency_us,sum_lag_us,sum_lag_2,min_lag_us,max_lag_us,skipped,retried,retries,serialization_failures,deadlock_failures,interval_secs}',
			 '{n,n,n,n,n,n,n,n,n,n,n,n,n,n,n,n}', 'q.interval_start'),
			(4, 'app_metric',
			 format('SELECT ts, name, value FROM chronicle.app_metric WHERE run_id = %s', v_run),
			 '{ts,name,value}', '{n,s,n}', 'q.ts, q.name'),
			(5, 'mark',
			 format('SELECT ts, event, owner, mark_id FROM chronicle.mark'
			        ' WHERE origin = chronicle._origin() AND ts > %L AND ts <= %L', v_lo, v_hi),
			 '{ts,event,owner}', '{n,s,s}', 'q.ts, q.mark_id'),
			(6, 'statements_text',
			 format('SELECT t.dbid, t.queryid, t.query FROM chronicle._statements_text t'
			        ' WHERE (t.dbid, t.queryid) IN (SELECT h.dbid, h.queryid FROM chronicle.statements_history h'
			        '  WHERE h.ts >= %L AND h.ts <= %L)', v_lo, v_hi),
			 '{dbid,queryid,query}', '{n,n,s}', 'q.dbid, q.queryid')
			) AS x(i, name, query, cols, kinds, ord)
		UNION ALL
		-- each source's rows of the window, as its view shows them: at the
		-- window's first snapshot every key's latest row in its segment
		-- (the statements' from the start of the segment), then the rows
		-- after it (archive.py, _history_select())
		SELECT 'history/' || c.source,
		       format('SELECT %L::timestamptz AS ts, %s FROM (%s) k UNION ALL'
		              ' SELECT ts, %s FROM %s WHERE ts > %L AND ts <= %L',
		              v_lo, c.names,
		              CASE WHEN c.keys IS NOT NULL
		                   THEN format('SELECT DISTINCT ON (%s) * FROM %s WHERE ts >= %s AND ts <= %L'
		                               ' ORDER BY %s, ts DESC', c.keys, c.view, c.since, v_lo, c.keys)
		                   ELSE format('SELECT * FROM %s WHERE ts >= %s AND ts <= %L ORDER BY ts DESC LIMIT 1',
		                               c.view, c.since, v_lo) END,
		              c.names, c.view, v_lo, v_hi),
		       ARRAY['ts'] || c.cols, ARRAY['n'] || c.kinds, 'q.ts'
		  FROM (SELECT sc.source, format('chronicle.%I', sc.source || '_history') AS view,
		               string_agg(format('%I', sc.column_name), ', ' ORDER BY sc.ordinal) AS names,
		               string_agg(format('%I', sc.column_name), ', ' ORDER BY sc.ordinal)
		                   FILTER (WHERE sc.key) AS keys,
		               array_agg(sc.column_name::text ORDER BY sc.ordinal) AS cols,
		               array_agg(CASE t.typcategory WHEN 'N' THEN 'n' WHEN 'D' THEN 'n' WHEN 'B' THEN 'b'
		                                            WHEN 'S' THEN 's' ELSE 'o' END ORDER BY sc.ordinal) AS kinds,
		               CASE WHEN sc.source = 'statements' THEN quote_literal(v_segment)
		                    ELSE format('chronicle._keyframe(%L, %L, %L)', 'chronicle.' || sc.source || '_history',
		                                v_segment, v_lo) END AS since
		          FROM chronicle._source_columns() sc
		          LEFT JOIN pg_attribute a ON a.attrelid = to_regclass('chronicle.' || sc.source || '_history')
		                                  AND a.attname = sc.column_name
		          LEFT JOIN pg_type t ON t.oid = a.atttypid
		         GROUP BY sc.source) c
		ORDER BY 1
	LOOP
		SELECT e.data, e.nrows INTO v_data, v_rows FROM chronicle._export_member(m.query, m.cols, m.kinds, m.ord) e;
		v_members := v_members || jsonb_build_object(m.name, jsonb_build_object(
			'file', m.name || '.csv', 'columns', to_jsonb(m.cols), 'rows', v_rows,
			'sha256', encode(sha256(v_data), 'hex'))
			|| CASE WHEN m.name = 'app_transaction' THEN jsonb_build_object('encoding', jsonb_build_object(
			       'ts', 'microseconds since the previous row (the first: since 1970-01-01 UTC)',
			       'tx_no', 'difference to the previous row', 'status', 'empty: ok'))
			   ELSE '{}' END);
		v_tar := v_tar || chronicle._tar_member(m.name || '.csv', v_data, v_mtime);
	END LOOP;
	RETURN chronicle._tar_member('manifest.json', convert_to(jsonb_pretty(jsonb_build_object(
		'format', 'pg_chronicle run archive', 'format_version', 2,
		'archive_id', gen_random_uuid(),
		'run', jsonb_build_object('label', r.label, 'meta', r.meta, 'settings', r.settings,
		                          'server_version', r.server_version, 'environment', r.environment,
		                          'started', r.started, 'ended', r.ended,
		                          'warmup', extract(epoch FROM r.warmup) || ' seconds'),
		'server', v_srv,
		'window', jsonb_build_object('from', v_lo, 'to', v_hi),
		'members', v_members)), 'UTF8'), v_mtime)
	       || v_tar || decode(repeat('00', 1024), 'hex');
END;
$fn$;
COMMENT ON FUNCTION chronicle.run_export(text) IS
	'The archive of an ended run (docs/runs.md, "Run archives"), as pg-chronicle export writes it but not compressed: pg-chronicle import reads it';

REVOKE ALL ON FUNCTION chronicle._export_member(text, text[], text[], text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._tar_member(text, bytea, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.run_export(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._export_member(text, text[], text[], text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._tar_member(text, bytea, bigint) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.run_export(text) TO pg_monitor, pg_read_all_stats;
