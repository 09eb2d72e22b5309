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
