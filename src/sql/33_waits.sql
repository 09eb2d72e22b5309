-- Analysis API, part 4: wait profiles from the sampled wait events.
--
-- A sample is one process seen at one sampler tick.  samples / ticks_taken
-- is the average number of processes in that state (average active
-- sessions); ticks_taken / ticks_due says how much of the window the
-- sampler really covered (ticks it missed are not guessed).
--
-- Not active (left out unless include_idle): idle sessions, main-loop
-- waits and throttle sleeps, as chronicle._wait_activity() says.

-- What a sample of a process in a recorded key was: 'database' (an active
-- session: a client backend, or a walsender, autovacuum worker or parallel
-- worker working for one: database time), 'background' (a background
-- process at work), or NULL (not active: an idle session; a main-loop
-- wait, i.e. class Activity, a walsender with nothing to send, an
-- extension's background worker waiting in class Extension; a sleep to
-- throttle itself or between retries).  The sampler classifies its samples
-- the same way (wait_activity() in src/sampler.c) for the active_* and
-- background_active counts; test/t/010_waits.pl checks they agree.
CREATE FUNCTION chronicle._wait_activity(backend_type text, state text,
                                         wait_event_type text, wait_event text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE
		WHEN state = 'idle' OR wait_event_type = 'Activity'
		  OR (wait_event_type = 'Timeout'
		      AND wait_event IN ('CheckpointWriteDelay', 'RecoveryApplyDelay',
		                         'RecoveryRetrieveRetryInterval', 'WalSummarizerError'))
		  OR (wait_event_type = 'Client' AND wait_event = 'WalSenderWaitForWal')
		THEN NULL
		WHEN backend_type IN ('client backend', 'walsender', 'autovacuum worker', 'parallel worker',
		                      'not initialized', 'standalone backend')
		THEN CASE WHEN backend_type = 'autovacuum worker'
		               AND wait_event_type = 'Timeout' AND wait_event = 'VacuumDelay'
		          THEN NULL ELSE 'database' END
		WHEN wait_event_type = 'Extension'
		  OR (wait_event_type = 'Timeout' AND wait_event = 'VacuumDelay')
		THEN NULL
		ELSE 'background'
	END
$$;

COMMENT ON FUNCTION chronicle._wait_activity(text, text, text, text) IS
	'database (an active session: database time), background (a background process at work) or NULL (idle, main-loop wait, throttle sleep) for a wait key';

-- The arguments wait_profile() and wait_profile_series() share, checked
-- (errors name the caller).
CREATE FUNCTION chronicle._check_wait_args(caller text, from_ts timestamptz, to_ts timestamptz,
                                           for_backend_type text, include_idle boolean)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM chronicle._check_range(from_ts, to_ts, caller);
	PERFORM chronicle._check_name(caller, 'backend_type', for_backend_type);
	IF include_idle IS NULL THEN
		RAISE EXCEPTION '%: include_idle must not be NULL', caller
			USING ERRCODE = 'null_value_not_allowed', HINT = 'Pass true or false.';
	END IF;
END;
$$;

CREATE FUNCTION chronicle.wait_profile(
	from_ts timestamptz, to_ts timestamptz,
	for_backend_type text DEFAULT NULL, include_idle boolean DEFAULT false)
RETURNS TABLE (backend_type text, wait_event_type text, wait_event text,
               samples numeric, share float8, avg_processes float8,
               ticks_due numeric, ticks_taken numeric, coverage float8)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
	due   numeric;
	taken numeric;
BEGIN
	PERFORM chronicle._check_wait_args('chronicle.wait_profile', from_ts, to_ts, for_backend_type, include_idle);
	SELECT s.ticks_due, s.ticks_taken INTO due, taken
	  FROM chronicle.wait_sampler_totals(from_ts, to_ts) s;
	RETURN QUERY
	WITH w AS (
		SELECT d.backend_type, d.wait_event_type, d.wait_event, sum(d.samples)::numeric AS n
		  FROM chronicle.wait_totals(from_ts, to_ts, for_backend_type) d
		 WHERE d.samples > 0
		   AND (include_idle
		        OR chronicle._wait_activity(d.backend_type, d.state, d.wait_event_type, d.wait_event) IS NOT NULL)
		 GROUP BY d.backend_type, d.wait_event_type, d.wait_event
	)
	SELECT w.backend_type, w.wait_event_type, w.wait_event, w.n,
	       (w.n / sum(w.n) OVER ())::float8,
	       (w.n / nullif(taken, 0))::float8,
	       due, taken, (taken / nullif(due, 0))::float8
	  FROM w
	 ORDER BY w.n DESC, w.backend_type, w.wait_event_type, w.wait_event;
END;
$$;

COMMENT ON FUNCTION chronicle.wait_profile(timestamptz, timestamptz, text, boolean) IS
	'Share of wait samples per (backend_type, wait_event_type, wait_event) over a window, with the sampler''s coverage';

-- The same per interval: only the (interval, key) pairs with samples; share
-- is of the interval's samples.  top: keep the N largest per interval.
CREATE FUNCTION chronicle.wait_profile_series(
	from_ts timestamptz, to_ts timestamptz,
	for_backend_type text DEFAULT NULL, include_idle boolean DEFAULT false,
	top integer DEFAULT NULL)
RETURNS TABLE (interval_start timestamptz, interval_end timestamptz, seconds float8,
               backend_type text, wait_event_type text, wait_event text,
               samples bigint, share float8, avg_processes float8,
               ticks_due bigint, ticks_taken bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
	PERFORM chronicle._check_wait_args('chronicle.wait_profile_series', from_ts, to_ts, for_backend_type, include_idle);
	IF top IS NOT NULL AND top < 1 THEN
		RAISE EXCEPTION 'chronicle.wait_profile_series: top must be at least 1, got %', top
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Pass NULL for every wait event.';
	END IF;
	RETURN QUERY
	WITH d AS MATERIALIZED (
		SELECT d.* FROM chronicle.wait_deltas(from_ts, to_ts, for_backend_type, changed_only => true) d
		 WHERE d.samples > 0
	), k AS (
		-- classified once per key, not per interval (OFFSET 0: not pushed
		-- below the DISTINCT)
		SELECT k.backend_type, k.state, k.wait_event_type, k.wait_event
		  FROM (SELECT DISTINCT d.backend_type, d.state, d.wait_event_type, d.wait_event FROM d OFFSET 0) k
		 WHERE include_idle
		    OR chronicle._wait_activity(k.backend_type, k.state, k.wait_event_type, k.wait_event) IS NOT NULL
	), w AS (
		SELECT d.interval_start, d.interval_end, d.seconds,
		       d.backend_type, d.wait_event_type, d.wait_event, sum(d.samples)::bigint AS n
		  FROM d JOIN k ON k.backend_type = d.backend_type AND k.state = d.state
		               AND k.wait_event_type = d.wait_event_type AND k.wait_event = d.wait_event
		 GROUP BY d.interval_start, d.interval_end, d.seconds, d.backend_type, d.wait_event_type, d.wait_event
	), r AS (
		SELECT w.*, row_number() OVER (PARTITION BY w.interval_end ORDER BY w.n DESC,
		                               w.backend_type, w.wait_event_type, w.wait_event) AS rk,
		       w.n::float8 / sum(w.n) OVER (PARTITION BY w.interval_end) AS sh
		  FROM w
	)
	SELECT r.interval_start, r.interval_end, r.seconds, r.backend_type, r.wait_event_type,
	       r.wait_event, r.n, r.sh, r.n::float8 / nullif(s.ticks_taken, 0),
	       s.ticks_due, s.ticks_taken
	  FROM r
	  LEFT JOIN chronicle.wait_sampler_deltas(from_ts, to_ts) s ON s.interval_end = r.interval_end
	 WHERE top IS NULL OR r.rk <= top
	 ORDER BY r.interval_end, r.rk;
END;
$$;

COMMENT ON FUNCTION chronicle.wait_profile_series(timestamptz, timestamptz, text, boolean, integer) IS
	'Wait samples per interval and (backend_type, wait_event_type, wait_event), with each one''s share of the interval';

CREATE FUNCTION chronicle.run_wait_profile(run text, for_backend_type text DEFAULT NULL,
                                           include_idle boolean DEFAULT false)
RETURNS TABLE (backend_type text, wait_event_type text, wait_event text,
               samples numeric, share float8, avg_processes float8,
               ticks_due numeric, ticks_taken numeric, coverage float8)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
-- the run's origin, set by run_window(), for this call only (05_origin.sql)
SET chronicle.origin = 0
AS $$
	SELECT p.* FROM chronicle.run_window(run) r,
	       chronicle.wait_profile(r.run_from, r.run_to, for_backend_type, include_idle) p
$$;

COMMENT ON FUNCTION chronicle.run_wait_profile(text, text, boolean) IS
	'chronicle.wait_profile() over the window of a run';

REVOKE ALL ON FUNCTION chronicle.wait_profile(timestamptz, timestamptz, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.wait_profile_series(timestamptz, timestamptz, text, boolean, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION chronicle.run_wait_profile(text, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle.wait_profile(timestamptz, timestamptz, text, boolean) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.wait_profile_series(timestamptz, timestamptz, text, boolean, integer) TO pg_monitor, pg_read_all_stats;
GRANT EXECUTE ON FUNCTION chronicle.run_wait_profile(text, text, boolean) TO pg_monitor, pg_read_all_stats;
REVOKE ALL ON FUNCTION chronicle._wait_activity(text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._wait_activity(text, text, text, text) TO pg_monitor, pg_read_all_stats;
REVOKE ALL ON FUNCTION chronicle._check_wait_args(text, timestamptz, timestamptz, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chronicle._check_wait_args(text, timestamptz, timestamptz, text, boolean) TO pg_monitor, pg_read_all_stats;
