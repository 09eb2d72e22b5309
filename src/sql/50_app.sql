-- Application metrics, joined to the server's history by time.

-- pgbench per-transaction log lines (-l), one row per transaction.
CREATE TABLE chronicle.app_transaction (
	run_id     integer NOT NULL REFERENCES chronicle.run ON DELETE CASCADE,
	ts         timestamptz NOT NULL,     -- end of the transaction
	client_id  integer NOT NULL,
	tx_no      bigint NOT NULL,
	script_no  integer NOT NULL,
	latency_us bigint,                   -- NULL for skipped/failed
	lag_us     bigint,                   -- with --rate
	retries    integer,                  -- with --max-tries
	status     text NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'skipped', 'failed', 'serialization', 'deadlock', 'other')),
	source     text                      -- file it came from
);
CREATE INDEX ON chronicle.app_transaction (run_id, ts);
COMMENT ON TABLE chronicle.app_transaction IS
	'pgbench per-transaction log (-l), one row per transaction, tied to a run';

-- pgbench aggregate log lines (--aggregate-interval), summed over the
-- per-thread files that share an interval.
CREATE TABLE chronicle.app_interval (
	run_id          integer NOT NULL REFERENCES chronicle.run ON DELETE CASCADE,
	interval_start  timestamptz NOT NULL,
	num_transactions bigint NOT NULL,
	sum_latency_us   float8,
	sum_latency_2    float8,
	min_latency_us   float8,
	max_latency_us   float8,
	sum_lag_us       float8,
	sum_lag_2        float8,
	min_lag_us       float8,
	max_lag_us       float8,
	skipped          bigint,
	retried          bigint,
	retries          bigint,
	serialization_failures bigint,
	deadlock_failures      bigint,
	PRIMARY KEY (run_id, interval_start)
);
COMMENT ON TABLE chronicle.app_interval IS
	'pgbench aggregate log (--aggregate-interval), per interval, summed over threads';

-- Any (ts, name, value) series a user inserts.
CREATE TABLE chronicle.app_metric (
	ts    timestamptz NOT NULL,
	name  text NOT NULL,
	value float8 NOT NULL,
	run_id integer REFERENCES chronicle.run ON DELETE CASCADE
);
CREATE INDEX ON chronicle.app_metric (name, ts);
COMMENT ON TABLE chronicle.app_metric IS 'Generic application metrics: any (ts, name, value) series';

-- Added with the loaders: the aggregation interval of an app_interval row
-- (pgbench does not write it into the log; inferred from the spacing of the
-- interval starts, or given to the loader).
ALTER TABLE chronicle.app_interval ADD COLUMN interval_secs integer;
CREATE INDEX ON chronicle.app_metric (run_id, name, ts);

-- ---------------------------------------------------------------------
-- Loading pgbench logs.
--
-- Both paths end in chronicle.load_pgbench_lines(), which parses the lines
-- of the session's temporary table pg_temp.chronicle_pgbench_lines
-- (file, line_no, line): the server-side chronicle.load_pgbench_log()
-- fills it with COPY FROM a server file, the client-side
-- tools/pgbench-log-load with psql's \copy.
-- ---------------------------------------------------------------------

-- Create (or empty) the staging table of this session.
CREATE FUNCTION chronicle.pgbench_staging()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF to_regclass('pg_temp.chronicle_pgbench_lines') IS NULL THEN
		CREATE TEMP TABLE chronicle_pgbench_lines (
			file    text,
			line_no bigint GENERATED ALWAYS AS IDENTITY,
			line    text
		);
	ELSE
		TRUNCATE pg_temp.chronicle_pgbench_lines RESTART IDENTITY;
	END IF;
	ALTER TABLE pg_temp.chronicle_pgbench_lines ALTER COLUMN file DROP DEFAULT;
END;
$$;
COMMENT ON FUNCTION chronicle.pgbench_staging() IS
	'Creates or empties pg_temp.chronicle_pgbench_lines(file, line_no, line), the staging table of the pgbench log loaders';

-- Report the first malformed line of the staged lines of one file.
CREATE FUNCTION chronicle.pgbench_bad_line(p_file text, p_format text, p_ncols integer)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r record;
	first_no bigint;
BEGIN
	SELECT min(line_no) INTO first_no FROM pg_temp.chronicle_pgbench_lines WHERE file = p_file;
	FOR r IN
		SELECT line_no - first_no + 1 AS n, line, string_to_array(line, ' ') AS a
		  FROM pg_temp.chronicle_pgbench_lines
		 WHERE file = p_file
		 ORDER BY line_no
	LOOP
		IF cardinality(r.a) IS DISTINCT FROM p_ncols THEN
			RAISE EXCEPTION 'chronicle.load_pgbench_lines: malformed pgbench log line in "%" line %: % fields, expected % (%)',
				p_file, r.n, coalesce(cardinality(r.a), 0), p_ncols, p_format
				USING ERRCODE = 'bad_copy_file_format', DETAIL = format('The line is: %s', left(r.line, 200)),
				      HINT = 'Every line of a file must have the same layout; nothing was loaded.';
		END IF;
		IF p_format = 'transaction' THEN
			IF NOT (r.a[1] ~ '^\d{1,9}$' AND r.a[2] ~ '^\d{1,18}$' AND r.a[4] ~ '^\d{1,9}$'
					AND r.a[5] ~ '^\d{1,12}$' AND r.a[6] ~ '^\d{1,6}$'
					AND (r.a[3] ~ '^\d{1,18}$' OR r.a[3] IN ('skipped', 'failed', 'serialization', 'deadlock', 'other'))
					AND (p_ncols < 7 OR r.a[7] ~ '^\d{1,18}$')
					AND (p_ncols < 8 OR r.a[8] ~ '^\d{1,9}$')) THEN
				RAISE EXCEPTION 'chronicle.load_pgbench_lines: malformed pgbench log line in "%" line %: a field is not a number', p_file, r.n
					USING ERRCODE = 'invalid_text_representation', DETAIL = format('The line is: %s', left(r.line, 200)),
					      HINT = 'Nothing was loaded.';
			END IF;
		ELSE
			IF EXISTS (SELECT FROM unnest(r.a) AS f WHERE f !~ '^-?\d{1,30}(\.\d+)?$') THEN
				RAISE EXCEPTION 'chronicle.load_pgbench_lines: malformed pgbench aggregate log line in "%" line %: a field is not a number', p_file, r.n
					USING ERRCODE = 'invalid_text_representation', DETAIL = format('The line is: %s', left(r.line, 200)),
					      HINT = 'Nothing was loaded.';
			END IF;
		END IF;
	END LOOP;
	RAISE EXCEPTION 'chronicle.load_pgbench_lines: pgbench log "%" could not be parsed as %', p_file, p_format
		USING ERRCODE = 'invalid_text_representation', HINT = 'Nothing was loaded.';
END;
$$;

CREATE FUNCTION chronicle.load_pgbench_lines(
	run text,
	format text DEFAULT 'auto',
	extra_column text DEFAULT 'lag',
	create_run boolean DEFAULT false,
	aggregate_interval integer DEFAULT NULL)
RETURNS TABLE (file text, log_format text, lines bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_run integer;
	f record;
	v_fmt text;
	v_n bigint;
	v_first bigint;
	v_started timestamptz;
	v_ended timestamptz;
	v_interval integer := aggregate_interval;
	v_files text[] := '{}';
	v_fmts text[] := '{}';
	v_lines bigint[] := '{}';
	v_cols integer[] := '{}';
	v_agg boolean := false;
BEGIN
	IF run IS NULL OR run = '' THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_lines: run label must not be NULL or empty'
			USING ERRCODE = 'null_value_not_allowed', HINT = 'Name the run the log belongs to, as given to chronicle.run_begin().';
	END IF;
	IF format IS NULL OR format NOT IN ('auto', 'transaction', 'aggregate') THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_lines: unknown pgbench log format "%"', format
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Use ''auto'', ''transaction'' or ''aggregate''.';
	END IF;
	IF extra_column IS NULL OR extra_column NOT IN ('lag', 'retries') THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_lines: extra_column must be ''lag'' or ''retries'', not "%"', extra_column
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'A 7-field per-transaction line has either the --rate schedule lag or the --max-tries retries.';
	END IF;
	IF aggregate_interval IS NOT NULL AND aggregate_interval < 1 THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_lines: aggregate_interval must be at least 1 second'
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Give the --aggregate-interval pgbench ran with, or NULL to infer it.';
	END IF;
	IF to_regclass('pg_temp.chronicle_pgbench_lines') IS NULL THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_lines: no staged pgbench log lines in this session'
			USING ERRCODE = 'object_not_in_prerequisite_state',
			      HINT = 'Call chronicle.pgbench_staging() and \copy the files into pg_temp.chronicle_pgbench_lines first, or use chronicle.load_pgbench_log().';
	END IF;

	v_run := chronicle._find_run(run);

	-- Layout of every file: the number of fields of each line must agree.
	FOR f IN
		SELECT s.file AS name, min(s.nf) AS mincols, max(s.nf) AS maxcols, count(*) AS n
		  FROM (SELECT s1.file, length(s1.line) - length(replace(s1.line, ' ', '')) + 1 AS nf
		          FROM pg_temp.chronicle_pgbench_lines s1) s
		 GROUP BY s.file ORDER BY s.file
	LOOP
		IF f.name IS NULL THEN
			RAISE EXCEPTION 'chronicle.load_pgbench_lines: staged pgbench log lines without a file name'
				USING ERRCODE = 'invalid_parameter_value', HINT = 'Set the default of pg_temp.chronicle_pgbench_lines.file before each \copy.';
		END IF;
		v_fmt := CASE WHEN format <> 'auto' THEN format
		              WHEN f.maxcols >= 10 THEN 'aggregate' ELSE 'transaction' END;
		IF f.mincols IS DISTINCT FROM f.maxcols
		   OR (v_fmt = 'transaction' AND f.maxcols NOT BETWEEN 6 AND 8)
		   OR (v_fmt = 'aggregate' AND f.maxcols NOT IN (6, 10, 11, 15)) THEN
			SELECT array_length(string_to_array(s.line, ' '), 1) INTO v_n
			  FROM pg_temp.chronicle_pgbench_lines s WHERE s.file = f.name ORDER BY s.line_no LIMIT 1;
			IF v_fmt = 'transaction' AND v_n NOT BETWEEN 6 AND 8 THEN v_n := 6; END IF;
			IF v_fmt = 'aggregate' AND v_n NOT IN (6, 10, 11, 15) THEN v_n := 15; END IF;
			PERFORM chronicle.pgbench_bad_line(f.name, v_fmt, v_n::integer);
		END IF;
		IF v_agg <> (v_fmt = 'aggregate') AND cardinality(v_files) > 0 THEN
			RAISE EXCEPTION 'chronicle.load_pgbench_lines: per-transaction and aggregate pgbench logs loaded together'
				USING ERRCODE = 'invalid_parameter_value', HINT = 'Load the per-transaction logs and the aggregate logs in separate calls.';
		END IF;
		v_agg := (v_fmt = 'aggregate');
		v_files := v_files || f.name;
		v_fmts := v_fmts || v_fmt;
		v_lines := v_lines || f.n;
		v_cols := v_cols || f.maxcols::integer;
	END LOOP;
	IF cardinality(v_files) = 0 THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_lines: the staged pgbench log is empty'
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Check the file names: no line was read.';
	END IF;

	-- The aggregation interval: given, or the smallest spacing of starts.
	IF v_agg AND v_interval IS NULL THEN
		SELECT min(d)::integer INTO v_interval
		  FROM (SELECT st - lag(st) OVER (PARTITION BY s.file ORDER BY s.line_no) AS d
		          FROM (SELECT s2.file, s2.line_no,
		                       CASE WHEN split_part(s2.line, ' ', 1) ~ '^\d{1,12}$'
		                            THEN split_part(s2.line, ' ', 1)::bigint END AS st
		                  FROM pg_temp.chronicle_pgbench_lines s2) s) x
		 WHERE d > 0;
	END IF;

	-- The run: it must exist, or is created from the log's time range.
	IF v_run IS NULL THEN
		IF NOT create_run THEN
			RAISE EXCEPTION 'chronicle.load_pgbench_lines: unknown run "%"', run
				USING ERRCODE = 'undefined_object',
				      HINT = 'Start it with chronicle.run_begin() before pgbench, or pass create_run => true to create it from the time range of the log.';
		END IF;
		BEGIN
		IF v_agg THEN
			SELECT to_timestamp(min(split_part(s.line, ' ', 1)::bigint)),
			       to_timestamp(max(split_part(s.line, ' ', 1)::bigint) + coalesce(v_interval, 1))
			  INTO v_started, v_ended FROM pg_temp.chronicle_pgbench_lines s;
		ELSE
			SELECT min(to_timestamp(split_part(s.line, ' ', 5)::bigint)
			           + split_part(s.line, ' ', 6)::bigint * interval '1 microsecond'
			           - CASE WHEN split_part(s.line, ' ', 3) ~ '^\d+$'
			                  THEN split_part(s.line, ' ', 3)::bigint ELSE 0 END * interval '1 microsecond'),
			       max(to_timestamp(split_part(s.line, ' ', 5)::bigint)
			           + split_part(s.line, ' ', 6)::bigint * interval '1 microsecond')
			  INTO v_started, v_ended FROM pg_temp.chronicle_pgbench_lines s;
		END IF;
		EXCEPTION
			WHEN invalid_text_representation OR numeric_value_out_of_range OR datetime_field_overflow THEN
				FOR i IN 1 .. cardinality(v_files) LOOP
					PERFORM chronicle.pgbench_bad_line(v_files[i], v_fmts[i], v_cols[i]);
				END LOOP;
				RAISE;
		END;
		INSERT INTO chronicle.run (label, started, ended, meta)
		VALUES (run, v_started, v_ended,
		        jsonb_build_object('created_by', 'chronicle.load_pgbench_lines', 'files', to_jsonb(v_files)))
		RETURNING run_id INTO v_run;
	END IF;

	IF NOT v_agg THEN
		-- Reloading a file replaces its rows.
		DELETE FROM chronicle.app_transaction t WHERE t.run_id = v_run AND t.source = ANY (v_files);
		-- One pass over every file: the layout of a line is its field count
		-- (the same on every line of a file, checked above).
		BEGIN
			INSERT INTO chronicle.app_transaction
				(run_id, ts, client_id, tx_no, script_no, latency_us, lag_us, retries, status, source)
			SELECT v_run,
			       -- a negative or out-of-range number is malformed too
			       to_timestamp(a[5]::bigint)
			       + (CASE WHEN a[6]::bigint BETWEEN 0 AND 999999 AND a[5]::bigint >= 0
			               THEN a[6] ELSE 'malformed ' || a[6] END)::bigint * interval '1 microsecond',
			       a[1]::integer, a[2]::bigint, a[4]::integer,
			       CASE WHEN a[3] IN ('skipped', 'failed', 'serialization', 'deadlock', 'other')
			            THEN NULL ELSE a[3]::bigint END,
			       CASE WHEN n = 8 OR (n = 7 AND extra_column = 'lag') THEN a[7]::bigint END,
			       CASE WHEN n = 8 OR (n = 7 AND extra_column = 'retries') THEN a[n]::integer END,
			       CASE WHEN a[3] IN ('skipped', 'failed', 'serialization', 'deadlock', 'other')
			            THEN a[3] ELSE 'ok' END,
			       l.file
			  FROM (SELECT s.file, string_to_array(s.line, ' ') AS a,
			               length(s.line) - length(replace(s.line, ' ', '')) + 1 AS n
			          FROM pg_temp.chronicle_pgbench_lines s
			         OFFSET 0) AS l;		-- split each line once, not once per field
		EXCEPTION
			WHEN invalid_text_representation OR numeric_value_out_of_range
			     OR datetime_field_overflow OR invalid_parameter_value THEN
				FOR i IN 1 .. cardinality(v_files) LOOP
					PERFORM chronicle.pgbench_bad_line(v_files[i], 'transaction', v_cols[i]);
				END LOOP;
				RAISE;
		END;
	ELSE
		BEGIN
			INSERT INTO chronicle.app_interval AS ai
				(run_id, interval_start, num_transactions, sum_latency_us, sum_latency_2,
				 min_latency_us, max_latency_us, sum_lag_us, sum_lag_2, min_lag_us, max_lag_us,
				 skipped, retried, retries, serialization_failures, deadlock_failures, interval_secs)
			SELECT v_run, to_timestamp(a[1]::bigint), sum(a[2]::bigint),
			       sum(a[3]::float8), sum(a[4]::float8),
			       -- an idle thread's interval shows min 0: not a latency
			       min(a[5]::float8) FILTER (WHERE a[2]::bigint > 0), max(a[6]::float8),
			       sum(a[7]::float8), sum(a[8]::float8),
			       min(a[9]::float8) FILTER (WHERE a[2]::bigint > 0), max(a[10]::float8),
			       sum(a[11]::bigint), sum(a[12]::bigint), sum(a[13]::bigint),
			       sum(a[14]::bigint), sum(a[15]::bigint), v_interval
			  FROM (SELECT string_to_array(s.line, ' ') AS a FROM pg_temp.chronicle_pgbench_lines s
			         OFFSET 0) l		-- split each line once, not once per field
			 GROUP BY a[1]::bigint
			ON CONFLICT (run_id, interval_start) DO UPDATE
			   SET num_transactions = excluded.num_transactions,
			       sum_latency_us = excluded.sum_latency_us, sum_latency_2 = excluded.sum_latency_2,
			       min_latency_us = excluded.min_latency_us, max_latency_us = excluded.max_latency_us,
			       sum_lag_us = excluded.sum_lag_us, sum_lag_2 = excluded.sum_lag_2,
			       min_lag_us = excluded.min_lag_us, max_lag_us = excluded.max_lag_us,
			       skipped = excluded.skipped, retried = excluded.retried, retries = excluded.retries,
			       serialization_failures = excluded.serialization_failures,
			       deadlock_failures = excluded.deadlock_failures,
			       interval_secs = excluded.interval_secs;
		EXCEPTION
			WHEN invalid_text_representation OR numeric_value_out_of_range OR datetime_field_overflow THEN
				FOR i IN 1 .. cardinality(v_files) LOOP
					PERFORM chronicle.pgbench_bad_line(v_files[i], 'aggregate', v_cols[i]);
				END LOOP;
				RAISE;
		END;
	END IF;

	RETURN QUERY SELECT u.f, u.fmt, u.n FROM unnest(v_files, v_fmts, v_lines) AS u(f, fmt, n);
END;
$$;
COMMENT ON FUNCTION chronicle.load_pgbench_lines(text, text, text, boolean, integer) IS
	'Parses the pgbench log lines staged in pg_temp.chronicle_pgbench_lines into app_transaction or app_interval of a run';

-- Server side: COPY the files (or every <prefix>.<pid>[.<thread>]) and parse.
CREATE FUNCTION chronicle.load_pgbench_log(
	run text,
	path text,
	format text DEFAULT 'auto',
	extra_column text DEFAULT 'lag',
	create_run boolean DEFAULT false,
	aggregate_interval integer DEFAULT NULL)
RETURNS TABLE (file text, log_format text, lines bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_dir text;
	v_base text;
	v_files text[];
	v_f text;
BEGIN
	IF path IS NULL OR path = '' THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_log: path must not be NULL or empty'
			USING ERRCODE = 'null_value_not_allowed', HINT = 'Give the log file, or the prefix of the per-thread files (pgbench_log.12345).';
	END IF;
	IF left(path, 1) <> '/' THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_log: path "%" is not absolute', path
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Server-side loading reads files of the database server: give an absolute path.';
	END IF;
	IF NOT (pg_has_role(current_user, 'pg_read_server_files', 'USAGE')
	        OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)) THEN
		RAISE EXCEPTION 'chronicle.load_pgbench_log: permission denied to read server files'
			USING ERRCODE = 'insufficient_privilege',
			      HINT = 'Loading a file of the server needs the pg_read_server_files role; from a client, use tools/pgbench-log-load or the \copy recipe of the README.';
	END IF;

	-- A prefix names every <prefix>.<pid>[.<thread>] file (and itself, if a file).
	v_dir := regexp_replace(path, '/[^/]*$', '');
	IF v_dir = '' THEN v_dir := '/'; END IF;
	v_base := regexp_replace(path, '^.*/', '');
	IF has_function_privilege('pg_catalog.pg_ls_dir(text, boolean, boolean)', 'EXECUTE') THEN
		SELECT array_agg(rtrim(v_dir, '/') || '/' || d ORDER BY d) INTO v_files
		  FROM pg_ls_dir(v_dir, true, false) AS d
		 WHERE d = v_base
		    OR (starts_with(d, v_base || '.') AND substr(d, length(v_base) + 2) ~ '^\d+(\.\d+)?$');
		IF v_files IS NULL THEN
			RAISE EXCEPTION 'chronicle.load_pgbench_log: no pgbench log file "%" or "%.<pid>[.<thread>]"', path, path
				USING ERRCODE = 'undefined_file', HINT = 'Check the path: it is read on the database server.';
		END IF;
	ELSE
		-- Without pg_ls_dir the path must name one file.
		v_files := ARRAY[path];
	END IF;

	PERFORM chronicle.pgbench_staging();
	FOREACH v_f IN ARRAY v_files LOOP
		EXECUTE pg_catalog.format('ALTER TABLE pg_temp.chronicle_pgbench_lines ALTER COLUMN file SET DEFAULT %L', v_f);
		EXECUTE pg_catalog.format('COPY pg_temp.chronicle_pgbench_lines (line) FROM %L', v_f);
	END LOOP;
	RETURN QUERY SELECT * FROM chronicle.load_pgbench_lines(run, format, extra_column, create_run, aggregate_interval);
	TRUNCATE pg_temp.chronicle_pgbench_lines;
END;
$$;
COMMENT ON FUNCTION chronicle.load_pgbench_log(text, text, text, text, boolean, integer) IS
	'Loads pgbench logs from server files (a file, or a prefix for every <prefix>.<pid>[.<thread>]) into a run';

REVOKE ALL ON FUNCTION chronicle.pgbench_staging() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.pgbench_bad_line(text, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.load_pgbench_lines(text, text, text, boolean, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.load_pgbench_log(text, text, text, text, boolean, integer) FROM PUBLIC;

-- ---------------------------------------------------------------------
-- pgbench's numbers per snapshot interval and per run.
--
-- Latency percentiles, everywhere (app_intervals, app_summary, timeline,
-- summary): percentile_disc, the nearest rank.  The p-th percentile of n
-- latencies is the ceil(p * n)-th smallest (the smallest for p = 0): a
-- latency that occurred, in the whole microseconds pgbench logs, never an
-- interpolation between two.  Only 'ok' transactions count.  An aggregate
-- log keeps no single latencies: its percentiles are NULL.
--
-- Time is counted the way pgbench counts it, from the start of the first
-- transaction (its end minus its latency; with --rate its scheduled start,
-- since the latency includes the schedule lag) to the end of the last, and
-- never across a gap between recordings: a run's transactions are split by
-- the segment (or the gap between two segments) their end falls in, and in
-- a gap by log file too (a gap may hold a server stop, and no pgbench
-- process outlives one); each piece spans [first start, last end], and the
-- time is the length of the union of the pieces.  Two pgbench runs around a
-- server stop count their own seconds, not the downtime, even when the
-- second started before the collector's first snapshot.
--
-- Per snapshot interval (start, end] (the window semantics of intervals():
-- the end in the window, never across two segments): the transactions
-- ending in it; active_seconds, the part of it inside the span of the
-- run's transactions that end in the same segment; tps over the interval
-- where the runs were active all of it.  An interval they were active in
-- part of (a run's first and last, the edges of a pgbench process) is
-- partial: its transactions count, its tps is NULL (a rate over a part of
-- an interval, 0.13 s of it, is a spike or a dip that did not happen).
--
-- Aggregate logs count for a run without per-transaction rows.  pgbench
-- logs no finer time than the aggregation interval: its transactions (and
-- skips, failures, retries) are spread evenly over its seconds, and an
-- interval gets the whole transactions of the spread that reach it (the
-- rounded cumulative spread at its end minus that at its start, so the
-- intervals add up to the log); its latency mean/min/max are those of the
-- aggregation intervals overlapping it.  The first aggregation interval of
-- each unbroken sequence of a run is partial (pgbench starts mid-interval
-- and does not log when): spread from the run's start, its transactions
-- and latencies count, but its seconds are left out of the rates (tps,
-- seconds).  pgbench never writes its last, partial one.
-- ---------------------------------------------------------------------

-- The rows of chronicle.app_intervals() (over a window or a run) and of
-- chronicle.app_summary(): the one definition of each (created when
-- missing, by a fresh install and by every upgrade at this point of the
-- code: see chronicle.timeline_row).
-- @upgrade
DO $do$
BEGIN
	IF to_regtype('chronicle.app_interval_row') IS NULL THEN
		CREATE TYPE chronicle.app_interval_row AS (
			interval_start  timestamptz,
			interval_end    timestamptz,
			segment         timestamptz,
			transactions    bigint,
			tps             float8,
			latency_mean_ms float8,
			latency_p50_ms  float8,
			latency_p90_ms  float8,
			latency_p99_ms  float8,
			latency_max_ms  float8,
			lag_mean_ms     float8,
			skipped         bigint,
			failures        bigint,
			retries         bigint,
			active_seconds  float8,
			latency_min_ms  float8,
			basis           text,
			partial         boolean);
	END IF;
	IF to_regtype('chronicle.app_summary_row') IS NULL THEN
		CREATE TYPE chronicle.app_summary_row AS (
			transactions    bigint,
			seconds         float8,
			tps             float8,
			latency_mean_ms float8,
			latency_p50_ms  float8,
			latency_p90_ms  float8,
			latency_p99_ms  float8,
			latency_max_ms  float8,
			lag_mean_ms     float8,
			skipped         bigint,
			failures        bigint,
			latency_min_ms  float8,
			basis           text);
	END IF;
END;
$do$;
COMMENT ON TYPE chronicle.app_interval_row IS
	'A row of chronicle.app_intervals(): one snapshot interval''s pgbench transactions, TPS and latencies';
COMMENT ON TYPE chronicle.app_summary_row IS
	'The row of chronicle.app_summary(): a whole run''s pgbench transactions, TPS and latencies';

-- The run's id from its label, or an error with a hint (chronicle._run_id,
-- the lookup every function taking a run label shares).
CREATE FUNCTION chronicle.app_run_id(run text)
RETURNS integer
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT chronicle._run_id(run, 'chronicle.app_run_id')
$$;

-- chronicle.app_intervals() computed: p_run's transactions (NULL: every
-- run's of the origin read), its arguments checked by the caller.
CREATE FUNCTION chronicle._app_intervals(
	from_ts timestamptz,
	to_ts timestamptz,
	p_run integer)
RETURNS SETOF chronicle.app_interval_row
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
	v_run integer := p_run;
	v_runs integer[];
	v_bounds timestamptz[];
	v_lo timestamptz;
	v_hi timestamptz;
BEGIN
	-- The snapshots bounding the intervals whose end lies in (from, to].
	SELECT array_agg(s.ts ORDER BY s.ts) INTO v_bounds
	  FROM chronicle._snapshot s
	 WHERE s.ts >= coalesce((SELECT max(s2.ts) FROM chronicle._snapshot s2 WHERE s2.ts <= from_ts), from_ts)
	   AND s.ts <= to_ts;
	IF coalesce(cardinality(v_bounds), 0) < 2 THEN
		RETURN;
	END IF;
	v_lo := v_bounds[1];
	v_hi := v_bounds[cardinality(v_bounds)];
	-- the runs whose transactions are read: p_run, or every run of the
	-- origin read that has some in the window
	v_runs := CASE WHEN v_run IS NOT NULL THEN ARRAY[v_run]
	               ELSE ARRAY(SELECT o.run_id FROM chronicle.run o
	                           WHERE o.origin = chronicle._origin()
	                             AND EXISTS (SELECT FROM chronicle.app_transaction t
	                                          WHERE t.run_id = o.run_id AND t.ts > v_lo AND t.ts <= v_hi)) END;

	-- An event at time t belongs to interval i = (b[i], b[i+1]]:
	-- width_bucket(t - 1 us, b), timestamps being whole microseconds.
	RETURN QUERY
	WITH bp AS MATERIALIZED (
		-- every pair of consecutive snapshots, across a gap too
		SELECT b.i, b.ts AS s_ts, lead(b.ts) OVER (ORDER BY b.i) AS e_ts,
		       sn.segment AS seg, lead(sn.segment) OVER (ORDER BY b.i) AS next_seg
		  FROM unnest(v_bounds) WITH ORDINALITY AS b(ts, i)
		  JOIN chronicle._snapshot sn ON sn.ts = b.ts
	), iv AS MATERIALIZED (
		SELECT bp.i, bp.s_ts, bp.e_ts, bp.seg
		  FROM bp
		 WHERE bp.next_seg = bp.seg		-- never across two recordings
	), txi AS (
		-- each interval's transactions read in turn by the (run_id, ts)
		-- index, its latencies sorted on their own (a GROUP BY of the
		-- interval sorted every transaction of the window first: 1.4
		-- times the time)
		SELECT bp.i, g.n, g.lat_sum, g.lat_min, g.lat_max, g.lat_p, g.lag_sum, g.lag_n,
		       g.n_skipped, g.n_failed, g.n_retries, g.s, g.e
		  FROM bp
		 CROSS JOIN LATERAL (
		       SELECT count(*) AS n_rows,
		              count(*) FILTER (WHERE t.status = 'ok') AS n,
		              sum(t.latency_us) FILTER (WHERE t.status = 'ok')::float8 AS lat_sum,
		              min(t.latency_us) FILTER (WHERE t.status = 'ok')::float8 AS lat_min,
		              max(t.latency_us) FILTER (WHERE t.status = 'ok')::float8 AS lat_max,
		              percentile_disc(ARRAY[0.5, 0.9, 0.99]::float8[]) WITHIN GROUP (ORDER BY t.latency_us)
		                  FILTER (WHERE t.status = 'ok') AS lat_p,
		              sum(t.lag_us) FILTER (WHERE t.status = 'ok')::float8 AS lag_sum,
		              count(t.lag_us) FILTER (WHERE t.status = 'ok') AS lag_n,
		              count(*) FILTER (WHERE t.status = 'skipped') AS n_skipped,
		              count(*) FILTER (WHERE t.status NOT IN ('ok', 'skipped')) AS n_failed,
		              sum(t.retries) AS n_retries,
		              min(t.ts - coalesce(t.latency_us, 0) * interval '1 microsecond') AS s,
		              max(t.ts) AS e
		         FROM chronicle.app_transaction t
		        WHERE t.run_id = ANY (v_runs) AND t.ts > bp.s_ts AND t.ts <= bp.e_ts) g
		 WHERE bp.e_ts IS NOT NULL AND g.n_rows > 0
	), txr AS (
		-- per run and interval: the first start and the last end (one
		-- run: those of txi; every run: a second pass)
		SELECT v_run AS run_id, txi.i, txi.s, txi.e FROM txi WHERE v_run IS NOT NULL
		UNION ALL
		SELECT t.run_id, width_bucket(t.ts - interval '1 microsecond', v_bounds),
		       min(t.ts - coalesce(t.latency_us, 0) * interval '1 microsecond'), max(t.ts)
		  FROM chronicle.app_transaction t
		 WHERE v_run IS NULL AND t.ts > v_lo AND t.ts <= v_hi
		   AND t.run_id IN (SELECT o.run_id FROM chronicle.run o WHERE o.origin = chronicle._origin())
		 GROUP BY 1, 2
	), seg AS (
		SELECT iv.seg, min(iv.s_ts) AS first_s, max(iv.e_ts) AS last_e
		  FROM iv
		 GROUP BY iv.seg
	), span AS (
		-- Per run and recording, from the first start to the last end of
		-- its transactions; open-ended where the run has transactions of
		-- the same recording before or after the window.
		SELECT g.run_id, g.seg,
		       CASE WHEN EXISTS (SELECT FROM chronicle.app_transaction t
		                          WHERE t.run_id = g.run_id AND t.ts >= g.seg AND t.ts <= seg.first_s)
		            THEN '-infinity'::timestamptz ELSE g.s END AS s,
		       CASE WHEN (SELECT sn.segment FROM chronicle._snapshot sn
		                   WHERE sn.ts >= (SELECT min(t.ts) FROM chronicle.app_transaction t
		                                    WHERE t.run_id = g.run_id AND t.ts > seg.last_e)
		                   ORDER BY sn.ts LIMIT 1) = g.seg
		            THEN 'infinity'::timestamptz ELSE g.e END AS e
		  FROM (SELECT txr.run_id, iv.seg, min(txr.s) AS s, max(txr.e) AS e
		          FROM txr JOIN iv ON iv.i = txr.i
		         GROUP BY txr.run_id, iv.seg) g
		  JOIN seg ON seg.seg = g.seg
	), ar AS MATERIALIZED (
		-- Aggregate rows of runs without per-transaction rows that reach
		-- into the window, each spread evenly over its seconds [lo, hi)
		-- (pgbench logs no finer time).  The first of a run's unbroken
		-- sequence is partial (pgbench started within it, and does not
		-- say when): spread from the run's start when that is later.
		SELECT a.run_id, x.complete,
		       CASE WHEN NOT x.complete AND r.started > a.interval_start AND r.started < x.a_end
		            THEN r.started ELSE a.interval_start END AS lo,
		       x.a_end AS hi,
		       a.num_transactions::float8 AS n,
		       a.sum_latency_us, a.min_latency_us, a.max_latency_us, a.sum_lag_us,
		       coalesce(a.skipped, 0)::float8 AS sk,
		       (coalesce(a.serialization_failures, 0) + coalesce(a.deadlock_failures, 0))::float8 AS fl,
		       a.retries::float8 AS rt
		  FROM chronicle.app_interval a
		  JOIN chronicle.run r ON r.run_id = a.run_id
		 CROSS JOIN LATERAL (
		       SELECT a.interval_start + a.interval_secs * interval '1 second' AS a_end,
		              EXISTS (SELECT FROM chronicle.app_interval p
		                       WHERE p.run_id = a.run_id
		                         AND p.interval_start = a.interval_start - a.interval_secs * interval '1 second') AS complete) x
		 WHERE x.a_end > v_lo
		   AND a.interval_start < v_hi
		   AND (v_run IS NULL AND r.origin = chronicle._origin() OR a.run_id = v_run)
		   AND NOT EXISTS (SELECT FROM chronicle.app_transaction t WHERE t.run_id = a.run_id)
	), c0 AS (
		-- per run, the counts spread before the window: its rows ended
		-- before it, and the parts of the others before its start
		SELECT g.run_id, sum(g.n) AS n, sum(g.sk) AS sk, sum(g.fl) AS fl, sum(g.rt) AS rt
		  FROM (SELECT a.run_id, a.num_transactions::float8 AS n, coalesce(a.skipped, 0)::float8 AS sk,
		               (coalesce(a.serialization_failures, 0) + coalesce(a.deadlock_failures, 0))::float8 AS fl,
		               coalesce(a.retries, 0)::float8 AS rt
		          FROM chronicle.app_interval a
		         WHERE a.run_id IN (SELECT ar.run_id FROM ar)
		           AND a.interval_start + a.interval_secs * interval '1 second' <= v_lo
		        UNION ALL
		        SELECT ar.run_id, ar.n * f.w, ar.sk * f.w, ar.fl * f.w, coalesce(ar.rt, 0) * f.w
		          FROM ar,
		               LATERAL (SELECT (extract(epoch FROM v_lo - ar.lo) / extract(epoch FROM ar.hi - ar.lo))::float8 AS w) f
		         WHERE ar.lo < v_lo) g
		 GROUP BY g.run_id
	), ov AS (
		-- each row's share of each pair of snapshots it overlaps
		SELECT ar.*, bp.i, bp.s_ts, bp.e_ts,
		       (extract(epoch FROM least(ar.hi, bp.e_ts) - greatest(ar.lo, bp.s_ts))
		        / extract(epoch FROM ar.hi - ar.lo))::float8 AS w
		  FROM ar
		 CROSS JOIN LATERAL generate_series(greatest(width_bucket(ar.lo, v_bounds), 1),
		                                    least(width_bucket(ar.hi, v_bounds), cardinality(v_bounds) - 1)) AS g(i)
		  JOIN bp ON bp.i = g.i
		 WHERE ar.hi > ar.lo
		   AND least(ar.hi, bp.e_ts) > greatest(ar.lo, bp.s_ts)
	), agr AS (
		SELECT ov.run_id, ov.i,
		       sum(ov.n * ov.w) AS xn,
		       sum(ov.sk * ov.w) AS xsk,
		       sum(ov.fl * ov.w) AS xfl,
		       sum(coalesce(ov.rt, 0) * ov.w) AS xrt,
		       bool_or(ov.rt IS NOT NULL) AS has_rt,
		       coalesce(sum(ov.n * ov.w) FILTER (WHERE ov.complete), 0) AS xn_rate,
		       sum(ov.sum_latency_us * ov.w) AS lat_sum,
		       coalesce(sum(ov.n * ov.w) FILTER (WHERE ov.sum_latency_us IS NOT NULL), 0) AS lat_n,
		       min(ov.min_latency_us) AS lat_min,
		       max(ov.max_latency_us) AS lat_max,
		       sum(ov.sum_lag_us * ov.w) AS lag_sum,
		       coalesce(sum(ov.n * ov.w) FILTER (WHERE ov.sum_lag_us IS NOT NULL), 0) AS lag_n
		  FROM ov
		 GROUP BY ov.run_id, ov.i
	), agc AS (
		-- Whole transactions (skips, failures, retries) per pair: the
		-- rounded cumulative spread at its end minus that at its start,
		-- so that they add up to the log's counts.
		SELECT x.*,
		       floor(x.cn + 0.5) - floor(coalesce(lag(x.cn) OVER w, x.c0n) + 0.5) AS n_whole,
		       floor(x.csk + 0.5) - floor(coalesce(lag(x.csk) OVER w, x.c0sk) + 0.5) AS sk_whole,
		       floor(x.cfl + 0.5) - floor(coalesce(lag(x.cfl) OVER w, x.c0fl) + 0.5) AS fl_whole,
		       floor(x.crt + 0.5) - floor(coalesce(lag(x.crt) OVER w, x.c0rt) + 0.5) AS rt_whole
		  FROM (SELECT agr.*,
		               coalesce(c0.n, 0) AS c0n, coalesce(c0.sk, 0) AS c0sk,
		               coalesce(c0.fl, 0) AS c0fl, coalesce(c0.rt, 0) AS c0rt,
		               coalesce(c0.n, 0) + sum(agr.xn) OVER w0 AS cn,
		               coalesce(c0.sk, 0) + sum(agr.xsk) OVER w0 AS csk,
		               coalesce(c0.fl, 0) + sum(agr.xfl) OVER w0 AS cfl,
		               coalesce(c0.rt, 0) + sum(agr.xrt) OVER w0 AS crt
		          FROM agr LEFT JOIN c0 ON c0.run_id = agr.run_id
		        WINDOW w0 AS (PARTITION BY agr.run_id ORDER BY agr.i)) x
		WINDOW w AS (PARTITION BY x.run_id ORDER BY x.i)
	), agi AS (
		SELECT agc.i,
		       sum(agc.n_whole) AS n,
		       sum(agc.xn) AS xn,
		       sum(agc.xn_rate) AS n_rate,
		       sum(agc.lat_sum) AS lat_sum,
		       sum(agc.lat_n) AS lat_n,
		       min(agc.lat_min) AS lat_min,
		       max(agc.lat_max) AS lat_max,
		       sum(agc.lag_sum) AS lag_sum,
		       sum(agc.lag_n) AS lag_n,
		       sum(agc.sk_whole) AS n_skipped,
		       sum(agc.fl_whole) AS n_failed,
		       sum(agc.rt_whole) FILTER (WHERE agc.has_rt) AS n_retries
		  FROM agc
		 GROUP BY agc.i
	), piece AS (
		-- the seconds the runs were active in each interval: their
		-- transactions' span, and the complete aggregation intervals
		SELECT iv.i, greatest(sp.s, iv.s_ts) AS lo, least(sp.e, iv.e_ts) AS hi
		  FROM iv JOIN span sp ON sp.seg = iv.seg
		 WHERE sp.s < iv.e_ts AND sp.e > iv.s_ts
		UNION ALL
		SELECT ov.i, greatest(ov.lo, ov.s_ts), least(ov.hi, ov.e_ts) FROM ov WHERE ov.complete
	), cov AS (
		-- the length of the union of the pieces of each interval (exact:
		-- numeric seconds of whole microseconds)
		SELECT p.i, sum(greatest(extract(epoch FROM p.hi - greatest(p.lo, p.prev_hi)), 0)) AS secs
		  FROM (SELECT p1.*, max(p1.hi) OVER (PARTITION BY p1.i ORDER BY p1.lo, p1.hi
		                                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_hi
		          FROM piece p1) p
		 GROUP BY p.i
	), r AS (
		SELECT iv.*, txi.n AS tx_n, txi.lat_sum AS tx_lat_sum, txi.lat_min AS tx_lat_min,
		       txi.lat_max AS tx_lat_max, txi.lat_p, txi.lag_sum AS tx_lag_sum, txi.lag_n AS tx_lag_n,
		       txi.n_skipped AS tx_skipped, txi.n_failed AS tx_failed, txi.n_retries AS tx_retries,
		       txi.i IS NOT NULL AS has_tx,
		       agi.n AS ag_n, agi.xn AS ag_xn, agi.n_rate AS ag_rate, agi.lat_sum AS ag_lat_sum,
		       agi.lat_n AS ag_lat_n, agi.lat_min AS ag_lat_min, agi.lat_max AS ag_lat_max,
		       agi.lag_sum AS ag_lag_sum, agi.lag_n AS ag_lag_n, agi.n_skipped AS ag_skipped,
		       agi.n_failed AS ag_failed, agi.n_retries AS ag_retries,
		       agi.i IS NOT NULL AS has_ag,
		       coalesce(cov.secs, 0) AS covered,
		       extract(epoch FROM iv.e_ts - iv.s_ts) AS secs,
		       coalesce(txi.n, 0) + coalesce(agi.n, 0) AS n_all,
		       -- some run was active in it (an aggregation interval's
		       -- spread reaches it, if less than a whole transaction)
		       coalesce(txi.n, 0) + coalesce(agi.xn, 0) > 0 OR coalesce(cov.secs, 0) > 0 AS active
		  FROM iv
		  LEFT JOIN txi ON txi.i = iv.i
		  LEFT JOIN agi ON agi.i = iv.i
		  LEFT JOIN cov ON cov.i = iv.i
	)
	SELECT r.s_ts, r.e_ts, r.seg,
	       r.n_all::bigint,
	       -- the rate over the whole interval where the runs were active
	       -- all of it; none in part of it (partial: a rate over a part
	       -- would be a spike or a dip that did not happen); 0 where
	       -- nothing ran
	       CASE WHEN NOT r.active THEN 0
	            WHEN r.covered < r.secs THEN NULL
	            ELSE (coalesce(r.tx_n, 0) + coalesce(r.ag_rate, 0)) / r.covered::float8 END,
	       (coalesce(r.tx_lat_sum, 0) + coalesce(r.ag_lat_sum, 0))
	           / nullif(coalesce(r.tx_n, 0) + coalesce(r.ag_lat_n, 0), 0) / 1000.0,
	       CASE WHEN NOT r.has_ag THEN r.lat_p[1]::float8 / 1000.0 END,
	       CASE WHEN NOT r.has_ag THEN r.lat_p[2]::float8 / 1000.0 END,
	       CASE WHEN NOT r.has_ag THEN r.lat_p[3]::float8 / 1000.0 END,
	       greatest(r.tx_lat_max, r.ag_lat_max) / 1000.0,
	       (coalesce(r.tx_lag_sum, 0) + coalesce(r.ag_lag_sum, 0))
	           / nullif(coalesce(r.tx_lag_n, 0) + coalesce(r.ag_lag_n, 0), 0) / 1000.0,
	       (coalesce(r.tx_skipped, 0) + coalesce(r.ag_skipped, 0))::bigint,
	       (coalesce(r.tx_failed, 0) + coalesce(r.ag_failed, 0))::bigint,
	       CASE WHEN r.tx_retries IS NOT NULL OR r.ag_retries IS NOT NULL
	            THEN (coalesce(r.tx_retries, 0) + coalesce(r.ag_retries, 0))::bigint END,
	       r.covered::float8,
	       least(r.tx_lat_min, r.ag_lat_min) / 1000.0,
	       CASE WHEN r.has_tx AND r.has_ag THEN 'mixed'
	            WHEN r.has_tx THEN 'transactions'
	            WHEN r.has_ag THEN 'aggregates' END,
	       r.active AND r.covered < r.secs
	  FROM r
	 ORDER BY r.s_ts;
END;
$$;

CREATE FUNCTION chronicle.app_intervals(
	from_ts timestamptz,
	to_ts timestamptz,
	run text DEFAULT NULL)
RETURNS SETOF chronicle.app_interval_row
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_run integer;
	m chronicle.app_memo;
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.app_intervals');
	IF run IS NULL THEN
		RETURN QUERY SELECT * FROM chronicle._app_intervals(from_ts, to_ts, NULL);
		RETURN;
	END IF;
	v_run := chronicle._run_id(run, 'chronicle.app_intervals');
	IF (SELECT r.origin FROM chronicle.run r WHERE r.run_id = v_run) <> chronicle._origin() THEN
		RAISE EXCEPTION 'chronicle.app_intervals: run "%" was recorded by origin %, the history read is origin''s %',
			run, (SELECT r.origin FROM chronicle.run r WHERE r.run_id = v_run), chronicle._origin()
			USING ERRCODE = 'invalid_parameter_value',
			      HINT = 'Call chronicle.app_intervals(run) or SET chronicle.origin to the run''s origin (docs/storage.md, "Origins").';
	END IF;
	-- one run's: kept (chronicle.app_memo)
	m := chronicle._app_memo(v_run, 'intervals', from_ts, to_ts);
	IF m.run_id IS NULL THEN
		RETURN QUERY SELECT * FROM chronicle._app_intervals(from_ts, to_ts, v_run);
	ELSE
		RETURN QUERY SELECT * FROM unnest(m.intervals);
	END IF;
END;
$$;
COMMENT ON FUNCTION chronicle.app_intervals(timestamptz, timestamptz, text) IS
	'Per snapshot interval (start, end] ending in (from, to]: pgbench transactions, TPS over the interval where the runs were active all of it (partial: NULL), latency mean/min/max and nearest-rank p50/p90/p99 (ms), lag, skipped, failures; from the per-transaction log, else the aggregate log spread over its intervals';

CREATE FUNCTION chronicle.app_intervals(run text)
RETURNS SETOF chronicle.app_interval_row
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
-- the run's origin, set by run_window(), for this call only (05_origin.sql)
SET chronicle.origin = 0
AS $$
BEGIN
	PERFORM chronicle._run_id(run, 'chronicle.app_intervals');
	RETURN QUERY
	SELECT a.*
	  FROM chronicle.run_window(run) w,
	       chronicle.app_intervals(w.run_from, w.run_to, run) a;
END;
$$;
COMMENT ON FUNCTION chronicle.app_intervals(text) IS
	'chronicle.app_intervals() over the window of a run (chronicle.run_window(): the intervals ending in it), its transactions only';

-- The recordings around a run's transactions after its warm-up: each
-- segment's first and (just after) last snapshot, so that width_bucket()
-- numbers the segments and the gaps between them (_app_summary_compute):
-- thr, NULL without a snapshot; counted: some transaction counts.  Also
-- what a kept summary was computed over (_app_memo).  The run's origin is
-- the one read (_run_origin).
CREATE FUNCTION chronicle._app_summary_bounds(p_run integer, OUT counted boolean, OUT thr timestamptz[])
RETURNS record
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_first timestamptz;
	v_last timestamptz;
	v_from timestamptz;		-- the warm-up's end: transactions ending after it count
BEGIN
	SELECT CASE WHEN r.warmup > interval '0' THEN r.started + r.warmup END INTO v_from
	  FROM chronicle.run r WHERE r.run_id = p_run;
	SELECT min(t.ts), max(t.ts) INTO v_first, v_last
	  FROM chronicle.app_transaction t
	 WHERE t.run_id = p_run AND (v_from IS NULL OR t.ts > v_from);
	counted := v_first IS NOT NULL;
	IF NOT counted THEN
		RETURN;
	END IF;
	SELECT array_agg(b.ts ORDER BY b.ts) INTO thr
	  FROM (SELECT min(sn.ts) AS f, max(sn.ts) AS l
	          FROM chronicle._snapshot sn
	         WHERE sn.ts >= coalesce((SELECT s2.segment FROM chronicle._snapshot s2
	                                   WHERE s2.ts <= v_first ORDER BY s2.ts DESC LIMIT 1), v_first)
	           AND sn.ts <= coalesce((SELECT s3.ts FROM chronicle._snapshot s3
	                                   WHERE s3.ts >= v_last ORDER BY s3.ts LIMIT 1), v_last)
	         GROUP BY sn.segment) g,
	       LATERAL (VALUES (g.f), (g.l + interval '1 microsecond')) AS b(ts);
END;
$$;

-- A whole run from every transaction (never from intervals), or from its
-- aggregate log; one row, also for a run without any (0 transactions).
-- Computed, over the history of the origin the caller reads (_app_summary
-- sets the run's, and reads the result kept).
CREATE FUNCTION chronicle._app_summary_compute(p_run integer)
RETURNS SETOF chronicle.app_summary_row
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
	v_counted boolean;
	v_thr timestamptz[];
	v_from timestamptz;		-- the warm-up's end: transactions ending after it count
BEGIN
	SELECT CASE WHEN r.warmup > interval '0' THEN r.started + r.warmup END INTO v_from
	  FROM chronicle.run r WHERE r.run_id = p_run;
	SELECT b.counted, b.thr INTO v_counted, v_thr FROM chronicle._app_summary_bounds(p_run) b;
	IF v_counted THEN
		RETURN QUERY
		WITH g AS MATERIALIZED (
			-- One pass over the transactions (a hash of a few thousand
			-- groups, not a sort of every transaction): per piece (below),
			-- status (0 ok, 1 skipped, 2 failed) and distinct latency, the
			-- transactions and their lags, first start (the first end less
			-- the group's one latency) and last end.
			SELECT x.*, x.first_e - coalesce(x.l, 0) * interval '1 microsecond' AS s
			  FROM (SELECT width_bucket(t.ts, v_thr) AS wb,
			               CASE WHEN width_bucket(t.ts, v_thr) % 2 = 0 THEN t.source END AS src,
			               CASE t.status WHEN 'ok' THEN 0 WHEN 'skipped' THEN 1 ELSE 2 END AS cls,
			               t.latency_us AS l, count(*) AS n,
			               sum(t.lag_us) AS lag_sum, count(t.lag_us) AS lag_n,
			               min(t.ts) AS first_e, max(t.ts) AS e
			          FROM chronicle.app_transaction t
			         WHERE t.run_id = p_run AND (v_from IS NULL OR t.ts > v_from)
			         GROUP BY 1, 2, 3, 4) x
		), piece AS (
			-- Bucket 2k - 1 is the k-th recording, an even bucket the gap
			-- before or after one.  A gap may hold a server stop between
			-- two pgbench processes (the first one's last transactions
			-- after the last snapshot, the second one's first before the
			-- collector's first snapshot): no pgbench process outlives a
			-- stop (its connections end), so in a gap each log file's
			-- transactions are a piece of their own.
			SELECT greatest(min(g.s), v_from) AS s, max(g.e) AS e
			  FROM g
			 GROUP BY g.wb, g.src
		), span AS (
			-- the length of the union of the pieces
			SELECT sum(greatest(extract(epoch FROM p.e - greatest(p.s, p.prev_e)), 0))::float8 AS secs
			  FROM (SELECT p1.*, max(p1.e) OVER (ORDER BY p1.s, p1.e
			                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_e
			          FROM piece p1) p
		), cum AS (
			-- the completed transactions' latencies, each with how many
			-- took at most that long
			SELECT x.l, (sum(x.n) OVER (ORDER BY x.l))::float8 AS c, (sum(x.n) OVER ())::float8 AS total
			  FROM (SELECT g.l, sum(g.n) AS n FROM g WHERE g.cls = 0 AND g.l IS NOT NULL GROUP BY g.l) x
		), pct AS (
			-- nearest rank, as percentile_disc(): the least latency whose
			-- count reaches ceil(p * transactions)
			SELECT min(cum.l) FILTER (WHERE cum.c >= greatest(ceil(0.5::float8 * cum.total), 1)) AS p50,
			       min(cum.l) FILTER (WHERE cum.c >= greatest(ceil(0.9::float8 * cum.total), 1)) AS p90,
			       min(cum.l) FILTER (WHERE cum.c >= greatest(ceil(0.99::float8 * cum.total), 1)) AS p99
			  FROM cum
		), st AS (
			-- the means as avg() takes them: the numeric sum over the count
			SELECT coalesce(sum(g.n) FILTER (WHERE g.cls = 0), 0)::bigint AS n,
			       (sum(g.l * g.n) FILTER (WHERE g.cls = 0)
			        / sum(g.n) FILTER (WHERE g.cls = 0 AND g.l IS NOT NULL))::float8 AS lat_mean,
			       min(g.l) FILTER (WHERE g.cls = 0)::float8 AS lat_min,
			       max(g.l) FILTER (WHERE g.cls = 0)::float8 AS lat_max,
			       (sum(g.lag_sum) FILTER (WHERE g.cls = 0) / sum(g.lag_n) FILTER (WHERE g.cls = 0))::float8 AS lag_mean,
			       coalesce(sum(g.n) FILTER (WHERE g.cls = 1), 0)::bigint AS n_skipped,
			       coalesce(sum(g.n) FILTER (WHERE g.cls = 2), 0)::bigint AS n_failed
			  FROM g
		)
		SELECT st.n, span.secs, st.n / nullif(span.secs, 0),
		       st.lat_mean / 1000.0,
		       pct.p50::float8 / 1000.0, pct.p90::float8 / 1000.0, pct.p99::float8 / 1000.0,
		       st.lat_max / 1000.0, st.lag_mean / 1000.0,
		       st.n_skipped, st.n_failed, st.lat_min / 1000.0, 'transactions'::text
		  FROM st, span, pct;
		RETURN;
	END IF;

	IF EXISTS (SELECT FROM chronicle.app_transaction t WHERE t.run_id = p_run) THEN
		NULL;		-- every transaction is in the warm-up: none counts
	ELSIF EXISTS (SELECT FROM chronicle.app_interval a WHERE a.run_id = p_run) THEN
		RETURN QUERY
		WITH a AS (
			SELECT a1.*,
			       EXISTS (SELECT FROM chronicle.app_interval p
			                WHERE p.run_id = a1.run_id
			                  AND p.interval_start = a1.interval_start - a1.interval_secs * interval '1 second') AS complete
			  FROM chronicle.app_interval a1
			 WHERE a1.run_id = p_run
			   -- after a warm-up: the aggregates that start at or after its end
			   AND (v_from IS NULL OR a1.interval_start >= v_from)
		)
		SELECT sum(a.num_transactions)::bigint,
		       (sum(a.interval_secs) FILTER (WHERE a.complete))::float8,
		       (sum(a.num_transactions) FILTER (WHERE a.complete)
		           / nullif(sum(a.interval_secs) FILTER (WHERE a.complete), 0))::float8,
		       sum(a.sum_latency_us) / nullif(sum(a.num_transactions), 0) / 1000.0,
		       NULL::float8, NULL::float8, NULL::float8,
		       max(a.max_latency_us) / 1000.0,
		       sum(a.sum_lag_us) / nullif(sum(a.num_transactions) FILTER (WHERE a.sum_lag_us IS NOT NULL), 0) / 1000.0,
		       coalesce(sum(a.skipped), 0)::bigint,
		       coalesce(sum(coalesce(a.serialization_failures, 0) + coalesce(a.deadlock_failures, 0)), 0)::bigint,
		       min(a.min_latency_us) / 1000.0,
		       'aggregates'::text
		  FROM a;
		RETURN;
	END IF;

	RETURN QUERY SELECT 0::bigint, NULL::float8, NULL::float8, NULL::float8, NULL::float8, NULL::float8,
	                    NULL::float8, NULL::float8, NULL::float8, 0::bigint, 0::bigint, NULL::float8, NULL::text;
END;
$$;

-- ---------------------------------------------------------------------
-- Kept results.  A report reads a run's pgbench numbers several times
-- (app_intervals() of its window in slowest_intervals() and for the
-- throughput panel, app_summary() in summary() and load_profile(), the
-- latency distribution), each a pass over the run's transactions (3.5
-- million in an hour at 1,000 tps).  The first read keeps its result in
-- chronicle.app_memo; the next ones read it back as long as it is what a
-- computation would give:
--
--   epoch   chronicle.app_epoch's, moved on (in the writer's transaction)
--           by every change to app_transaction, app_interval or a run
--           (_app_epoch_next, statement triggers): new or deleted
--           transactions, a warm-up set, a run deleted or relabelled
--   bounds  the snapshots the result depends on (_app_memo_bounds): a
--           snapshot recorded, imported or deleted in them changes them
--
-- Readers (pg_monitor) do not write the history: the row is written by
-- _app_memo_put(), SECURITY DEFINER, which computes it itself (a caller
-- names what, never gives a result), one run and kind at a time (who
-- comes second waits and reads it).  One row per run and kind: the last
-- window asked.  Not kept in a read-only transaction (a standby) nor
-- under REPEATABLE READ or SERIALIZABLE (a result of the transaction's
-- snapshot): computed each time, as before.
-- Made when missing, by a fresh install and by every upgrade at this point
-- of the code (after the row types, which app_memo holds).
-- @upgrade
DO $do$
BEGIN
	IF to_regclass('chronicle.app_epoch') IS NULL THEN
		-- one row, made by the first change (none: epoch 0)
		CREATE TABLE chronicle.app_epoch (
			one   boolean PRIMARY KEY DEFAULT true CHECK (one),
			epoch bigint NOT NULL
		);
		REVOKE ALL ON chronicle.app_epoch FROM PUBLIC;
		GRANT SELECT ON chronicle.app_epoch TO pg_monitor, pg_read_all_stats;
	END IF;
	IF to_regclass('chronicle.app_memo') IS NULL THEN
		CREATE TABLE chronicle.app_memo (
			run_id    integer NOT NULL REFERENCES chronicle.run ON DELETE CASCADE,
			kind      text NOT NULL CHECK (kind IN ('intervals', 'summary', 'latencies')),
			from_ts   timestamptz NOT NULL,            -- the window ('-infinity', 'infinity': the run)
			to_ts     timestamptz NOT NULL,
			epoch     bigint NOT NULL,                 -- chronicle.app_epoch's when computed
			bounds    timestamptz[] NOT NULL,          -- the snapshots read (_app_memo_bounds)
			intervals chronicle.app_interval_row[],    -- kind intervals: app_intervals(from, to, run)
			summary   chronicle.app_summary_row[],     -- kind summary: app_summary(run), one row
			latencies bigint[],                        -- kind latencies: app_latencies(), [i][1:3]
			PRIMARY KEY (run_id, kind)
		);
		REVOKE ALL ON chronicle.app_memo FROM PUBLIC;
		GRANT SELECT ON chronicle.app_memo TO pg_monitor, pg_read_all_stats;
	END IF;
END;
$do$;
COMMENT ON TABLE chronicle.app_epoch IS
	'At most one row (none: epoch 0): moved on by every change to the pgbench log tables or the runs; a result of chronicle.app_memo counts only with the epoch it was computed at';
COMMENT ON TABLE chronicle.app_memo IS
	'Kept results of a run''s pgbench numbers (app_intervals, app_summary, app_latencies), read back while the epoch and the snapshots read are the same';

-- The epoch moves on: a statement trigger of app_transaction, app_interval
-- and run (SECURITY DEFINER: whoever loads a log or sets a warm-up).
CREATE FUNCTION chronicle._app_epoch_next()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	INSERT INTO chronicle.app_epoch AS e (epoch) VALUES (1)
	ON CONFLICT (one) DO UPDATE SET epoch = e.epoch + 1;
	RETURN NULL;
END;
$$;
CREATE TRIGGER app_epoch_next AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON chronicle.app_transaction
	FOR EACH STATEMENT EXECUTE FUNCTION chronicle._app_epoch_next();
CREATE TRIGGER app_epoch_next AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON chronicle.app_interval
	FOR EACH STATEMENT EXECUTE FUNCTION chronicle._app_epoch_next();
CREATE TRIGGER app_epoch_next AFTER UPDATE OR DELETE OR TRUNCATE ON chronicle.run
	FOR EACH STATEMENT EXECUTE FUNCTION chronicle._app_epoch_next();

-- The epoch now.
CREATE FUNCTION chronicle._app_epoch()
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce((SELECT e.epoch FROM chronicle.app_epoch e), 0)
$$;

-- The snapshots a kept result depends on, (ts, segment) by ts.  intervals:
-- those of the window from the last at or before from_ts
-- (_app_intervals's bounds), on to the first at or after the run's last
-- transaction (whether its recording goes on after the window: the
-- transactions' span); summary: _app_summary_bounds's; latencies: none.
CREATE FUNCTION chronicle._app_memo_bounds(p_run integer, p_kind text, p_from timestamptz, p_to timestamptz)
RETURNS timestamptz[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_lo timestamptz;
	v_hi timestamptz;
BEGIN
	IF p_kind = 'summary' THEN
		RETURN (SELECT CASE WHEN b.counted THEN coalesce(b.thr, '{}') ELSE '{-infinity}' END
		          FROM chronicle._app_summary_bounds(p_run) b);
	ELSIF p_kind <> 'intervals' THEN
		RETURN '{}';
	END IF;
	v_lo := coalesce((SELECT max(s.ts) FROM chronicle._snapshot s WHERE s.ts <= p_from), p_from);
	v_hi := greatest(p_to, (SELECT min(s.ts) FROM chronicle._snapshot s
	                         WHERE s.ts >= (SELECT max(t.ts) FROM chronicle.app_transaction t
	                                         WHERE t.run_id = p_run)));
	RETURN (SELECT coalesce(array_agg(v.x ORDER BY s.ts, v.k), '{}')
	          FROM chronicle._snapshot s, LATERAL (VALUES (1, s.ts), (2, s.segment)) v(k, x)
	         WHERE s.ts >= v_lo AND s.ts <= v_hi);
END;
$$;

-- The kept result of p_run, p_kind and the window if it still holds.
CREATE FUNCTION chronicle._app_memo_get(p_run integer, p_kind text, p_from timestamptz, p_to timestamptz)
RETURNS SETOF chronicle.app_memo
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT m.*
	  FROM chronicle.app_memo m
	 WHERE m.run_id = p_run AND m.kind = p_kind AND m.from_ts = p_from AND m.to_ts = p_to
	   AND m.epoch = chronicle._app_epoch()
	   AND m.bounds = chronicle._app_memo_bounds(p_run, p_kind, p_from, p_to)
$$;

-- Computes and keeps the result of p_run, p_kind and the window (or reads
-- it, kept by another session meanwhile), and returns it.  The epoch and
-- the bounds are read before the result is computed: a change that
-- commits meanwhile leaves the row with an older epoch or other bounds
-- (read again, it is computed again), never with a result older than
-- what it says.
CREATE FUNCTION chronicle._app_memo_put(p_run integer, p_kind text, p_from timestamptz, p_to timestamptz)
RETURNS chronicle.app_memo
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m chronicle.app_memo;
BEGIN
	IF p_kind IS NULL OR p_kind NOT IN ('intervals', 'summary', 'latencies')
	   OR NOT EXISTS (SELECT FROM chronicle.run r WHERE r.run_id = p_run) THEN
		RETURN NULL;
	END IF;
	-- held to the end of the caller's transaction (the statement, in
	-- autocommit), when the row is there for the next one
	PERFORM pg_advisory_xact_lock(hashtext('chronicle.app_memo ' || p_kind), p_run);
	SELECT * INTO m FROM chronicle._app_memo_get(p_run, p_kind, p_from, p_to);
	IF FOUND THEN
		RETURN m;
	END IF;
	m.run_id := p_run;
	m.kind := p_kind;
	m.from_ts := p_from;
	m.to_ts := p_to;
	m.epoch := chronicle._app_epoch();
	m.bounds := chronicle._app_memo_bounds(p_run, p_kind, p_from, p_to);
	IF p_kind = 'intervals' THEN
		m.intervals := ARRAY(SELECT a FROM chronicle._app_intervals(p_from, p_to, p_run) a);
	ELSIF p_kind = 'summary' THEN
		m.summary := ARRAY(SELECT a FROM chronicle._app_summary_compute(p_run) a);
	ELSE
		m.latencies := coalesce((SELECT array_agg(ARRAY[l.latency_us, l.transactions, l.completed]
		                                           ORDER BY l.latency_us)
		                           FROM chronicle._app_latencies(p_run, p_from, p_to) l), '{}');
	END IF;
	INSERT INTO chronicle.app_memo VALUES (m.*)
	ON CONFLICT (run_id, kind) DO UPDATE
	   SET from_ts = excluded.from_ts, to_ts = excluded.to_ts, epoch = excluded.epoch,
	       bounds = excluded.bounds, intervals = excluded.intervals, summary = excluded.summary,
	       latencies = excluded.latencies;
	RETURN m;
END;
$$;

-- The kept result (kept now if it was not), or NULL where nothing is kept
-- (the caller computes it).
CREATE FUNCTION chronicle._app_memo(p_run integer, p_kind text, p_from timestamptz, p_to timestamptz)
RETURNS chronicle.app_memo
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m chronicle.app_memo;
BEGIN
	SELECT * INTO m FROM chronicle._app_memo_get(p_run, p_kind, p_from, p_to);
	IF FOUND OR current_setting('transaction_read_only')::boolean
	   OR current_setting('transaction_isolation') <> 'read committed' THEN
		RETURN m;
	END IF;
	RETURN chronicle._app_memo_put(p_run, p_kind, p_from, p_to);
END;
$$;

-- A run's summary: kept (_app_memo), else computed.
CREATE FUNCTION chronicle._app_summary(p_run integer)
RETURNS SETOF chronicle.app_summary_row
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
-- the run's origin, set by run_window(), for this call only (05_origin.sql)
SET chronicle.origin = 0
AS $$
DECLARE
	m chronicle.app_memo;
BEGIN
	PERFORM chronicle._run_origin(p_run);
	m := chronicle._app_memo(p_run, 'summary', '-infinity', 'infinity');
	IF m.run_id IS NULL THEN
		RETURN QUERY SELECT * FROM chronicle._app_summary_compute(p_run);
	ELSE
		RETURN QUERY SELECT * FROM unnest(m.summary);
	END IF;
END;
$$;

-- The transactions of a run ending in (from, to] with a latency, per
-- distinct latency: how many, and how many completed (status ok).
CREATE FUNCTION chronicle._app_latencies(p_run integer, p_from timestamptz, p_to timestamptz)
RETURNS TABLE (latency_us bigint, transactions bigint, completed bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT t.latency_us, count(*), count(*) FILTER (WHERE t.status = 'ok')
	  FROM chronicle.app_transaction t
	 WHERE t.run_id = p_run AND t.ts > p_from AND t.ts <= p_to AND t.latency_us IS NOT NULL
	 GROUP BY t.latency_us
	 ORDER BY t.latency_us
$$;

CREATE FUNCTION chronicle.app_latencies(run text, from_ts timestamptz, to_ts timestamptz)
RETURNS TABLE (latency_us bigint, transactions bigint, completed bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_run integer;
	m chronicle.app_memo;
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, 'chronicle.app_latencies');
	v_run := chronicle._run_id(run, 'chronicle.app_latencies');
	m := chronicle._app_memo(v_run, 'latencies', from_ts, to_ts);
	IF m.run_id IS NULL THEN
		RETURN QUERY SELECT * FROM chronicle._app_latencies(v_run, from_ts, to_ts);
	ELSE
		RETURN QUERY SELECT m.latencies[i][1], m.latencies[i][2], m.latencies[i][3]
		               FROM generate_subscripts(m.latencies, 1) i
		              ORDER BY i;
	END IF;
END;
$$;
COMMENT ON FUNCTION chronicle.app_latencies(text, timestamptz, timestamptz) IS
	'The pgbench transactions of a run ending in (from, to] that have a latency, per distinct latency (us): how many, and how many completed';

CREATE FUNCTION chronicle.app_summary(run text)
RETURNS SETOF chronicle.app_summary_row
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT * FROM chronicle._app_summary(chronicle._run_id(run, 'chronicle.app_summary'));
$$;
COMMENT ON FUNCTION chronicle.app_summary(text) IS
	'Transactions, seconds (from the first transaction''s start, not across gaps), TPS, latency mean/min/max and nearest-rank percentiles of a whole run after its warm-up, from its per-transaction log, else its aggregate log';

-- Generic metrics.
CREATE FUNCTION chronicle.add_metric(name text, value float8,
									 ts timestamptz DEFAULT now(),
									 run text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF name IS NULL OR name = '' THEN
		RAISE EXCEPTION 'chronicle.add_metric: metric name must not be NULL or empty'
			USING ERRCODE = 'null_value_not_allowed', HINT = 'Name the series, e.g. ''app.orders_per_s''.';
	END IF;
	IF value IS NULL OR ts IS NULL THEN
		RAISE EXCEPTION 'chronicle.add_metric: metric value and time must not be NULL'
			USING ERRCODE = 'null_value_not_allowed', HINT = 'Leave ts out for now().';
	END IF;
	PERFORM chronicle._check_finite('chronicle.add_metric', 'ts', ts);
	INSERT INTO chronicle.app_metric (ts, name, value, run_id)
	VALUES (ts, name, value,
	        CASE WHEN run IS NOT NULL THEN chronicle._run_id(run, 'chronicle.add_metric') END);
END;
$$;
COMMENT ON FUNCTION chronicle.add_metric(text, float8, timestamptz, text) IS
	'Records one value of an application metric series, optionally tied to a run';

REVOKE ALL ON FUNCTION chronicle.add_metric(text, float8, timestamptz, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.app_run_id(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.app_intervals(timestamptz, timestamptz, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.app_intervals(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._app_summary(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._app_intervals(timestamptz, timestamptz, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._app_summary_bounds(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._app_summary_compute(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._app_epoch_next() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._app_epoch() FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._app_memo_bounds(integer, text, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._app_memo_get(integer, text, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._app_memo_put(integer, text, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._app_memo(integer, text, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle._app_latencies(integer, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.app_latencies(text, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.app_summary(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.app_run_id(text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.app_intervals(timestamptz, timestamptz, text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.app_intervals(text) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._app_summary(integer) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._app_intervals(timestamptz, timestamptz, integer) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._app_summary_bounds(integer) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._app_summary_compute(integer) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._app_epoch() TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._app_memo_bounds(integer, text, timestamptz, timestamptz) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._app_memo_get(integer, text, timestamptz, timestamptz) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._app_memo_put(integer, text, timestamptz, timestamptz) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._app_memo(integer, text, timestamptz, timestamptz) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle._app_latencies(integer, timestamptz, timestamptz) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.app_latencies(text, timestamptz, timestamptz) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.app_summary(text) TO pg_monitor, pg_read_all_stats;
