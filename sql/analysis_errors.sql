-- Every bad input gets an error with an errcode, a message and a hint:
-- err() runs a statement and shows SQLSTATE: message / HINT: hint.
\pset null NULL
SET timezone = 'UTC';
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	st text; msg text; hint text;
BEGIN
	EXECUTE q;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
	RETURN st || ': ' || msg || ' / HINT: ' || coalesce(nullif(hint, ''), '(none)');
END
$f$;

-- Windows: NULL, reversed, empty.
SELECT pg_temp.err($$SELECT * FROM chronicle.io_deltas(NULL, now())$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.io_deltas(now(), NULL)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.wal_deltas('2024-01-02', '2024-01-01')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.wal_totals('2024-01-01', '2024-01-01')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.intervals('2024-01-02', '2024-01-01')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.timeline(NULL, NULL)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.timeline(now() - interval '1 h', now(), detail => NULL)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.wait_profile('2024-01-02', '2024-01-01')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.summary('2024-01-02', '2024-01-01')$$);

-- Unknown key names.
SELECT pg_temp.err($$SELECT * FROM chronicle.io_deltas('2024-01-01', '2024-01-02', for_backend_type => 'client backends')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.io_totals('2024-01-01', '2024-01-02', for_object => 'table')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.io_deltas('2024-01-01', '2024-01-02', for_context => 'bulk')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.database_deltas('2024-01-01', '2024-01-02', for_datname => 'no_such_database')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.wait_deltas('2024-01-01', '2024-01-02', for_wait_event_type => 'Disk')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.wait_profile('2024-01-01', '2024-01-02', for_backend_type => 'nobody')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.wait_profile('2024-01-01', '2024-01-02', include_idle => NULL)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.wait_profile_series('2024-01-01', '2024-01-02', top => 0)$$);

-- Unknown metrics, and filters that do not apply to a metric.
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.bytes', '2024-01-01', '2024-01-02')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('nonsense', '2024-01-01', '2024-01-02')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles(NULL, '2024-01-01', '2024-01-02')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.series('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', for_backend_type => 'checkpointer')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.series('io.writes_per_s', '2024-01-01', '2024-01-02', for_datname => 'postgres')$$);

-- Percentiles outside [0, 1], NULL, empty.
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', '{0.5,99}')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', '{-0.1}')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', '{0.5,NULL}')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', '{}')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', '{NaN}')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.percentiles('wal.wal_bytes_per_s', '2024-01-01', '2024-01-02', discrete => NULL)$$);

-- Runs: unknown labels, NULL labels, bad metadata, no open run.
SELECT pg_temp.err($$SELECT * FROM chronicle.compare_runs('no_such_run', 'other')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.run_summary(NULL)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.io_run_totals('no_such_run')$$);
SELECT pg_temp.err($$SELECT * FROM chronicle.run_percentiles('no_such_run', 'wal.wal_bytes_per_s')$$);
SELECT pg_temp.err($$SELECT chronicle.run_begin(NULL)$$);
SELECT pg_temp.err($$SELECT chronicle.run_begin('')$$);
SELECT pg_temp.err($$SELECT chronicle.run_begin('x', '[1, 2]')$$);
SELECT pg_temp.err($$SELECT chronicle.run_begin('x', NULL)$$);
SELECT pg_temp.err($$SELECT chronicle.run_end()$$);
SELECT pg_temp.err($$SELECT chronicle.run_end('no_such_run')$$);
SELECT pg_temp.err($$SELECT chronicle.run_label('x', '2024-01-02', '2024-01-01')$$);
SELECT pg_temp.err($$SELECT chronicle.run_label('x', NULL, '2024-01-01')$$);
SELECT pg_temp.err($$SELECT chronicle.run_delete('no_such_run')$$);

-- The internal engine refuses a table description that does not add up,
-- and a result type that is not what the description gives (rows needed).
SELECT pg_temp.err($$SELECT * FROM chronicle._deltas('chronicle.wal_history', now() - interval '1 h', now(),
	'{}', '{wal_bytes}', 'cc', '{}', NULL, '{NULL}', NULL, '{}', '{}', '{}', false) AS d(a int)$$);
INSERT INTO chronicle.snapshot (ts, segment, keyframe, collector, duration_ms, rows_written, wal_bytes, errors)
VALUES (now() - interval '2 s', now() - interval '2 s', true, 'sql', 0, 0, 0, 0),
       (now() - interval '1 s', now() - interval '2 s', false, 'sql', 0, 0, 0, 0);
INSERT INTO chronicle.wal_history (ts, wal_bytes) SELECT ts, 1 FROM chronicle.snapshot WHERE ts > now() - interval '3 s';
SELECT pg_temp.err($$SELECT * FROM chronicle._deltas('chronicle.wal_history', now() - interval '1 h', now(),
	'{}', '{wal_bytes}', 'c', '{}', NULL, '{NULL}', NULL, '{}', '{}', '{}', false) AS d(a int)$$);
SELECT pg_temp.err($$SELECT * FROM chronicle._deltas('chronicle.wal_history', now() - interval '1 h', now(),
	'{}', '{wal_bytes}', 'c', '{}', NULL, '{NULL}', NULL, '{}', '{}', '{}', false)
	AS d(s timestamptz, e timestamptz, secs float8, reset boolean, wal_bytes int, r float8)$$);
DELETE FROM chronicle.wal_history WHERE ts > now() - interval '1 h';
DELETE FROM chronicle.snapshot WHERE ts > now() - interval '1 h';
