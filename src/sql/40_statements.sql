-- pg_stat_statements, when installed: the statements whose counters changed,
-- top N by total time per snapshot.  Cumulative counters as the view shows
-- them; an entry evicted and re-added shows as counters going backwards.
CREATE TABLE chronicle.statements_history (
	ts                  timestamptz NOT NULL,
	userid              oid NOT NULL,
	dbid                oid NOT NULL,
	queryid             bigint NOT NULL,
	toplevel            boolean NOT NULL,
	plans               bigint,
	total_plan_time     float8,
	calls               bigint,
	total_exec_time     float8,
	rows                bigint,
	shared_blks_hit     bigint,
	shared_blks_read    bigint,
	shared_blks_dirtied bigint,
	shared_blks_written bigint,
	local_blks_hit      bigint,
	local_blks_read     bigint,
	local_blks_dirtied  bigint,
	local_blks_written  bigint,
	temp_blks_read      bigint,
	temp_blks_written   bigint,
	blk_read_time       float8,    -- shared_blk_read_time on 17+
	blk_write_time      float8,    -- shared_blk_write_time on 17+
	wal_records         bigint,
	wal_fpi             bigint,
	wal_bytes           bigint,
	stats_since         timestamptz,
	-- added with the source: pg_stat_statements 1.11 (PG17) and 1.12 (PG18)
	local_blk_read_time  float8,
	local_blk_write_time float8,
	temp_blk_read_time   float8,
	temp_blk_write_time  float8,
	wal_buffers_full     bigint,               -- 1.12+
	parallel_workers_to_launch bigint,         -- 1.12+
	parallel_workers_launched  bigint          -- 1.12+
) PARTITION BY RANGE (ts);
CREATE INDEX ON chronicle.statements_history USING brin (ts);
COMMENT ON TABLE chronicle.statements_history IS
	'pg_stat_statements counters of the statements that changed (top N by total time), cumulative';

-- Query text, stored once per (dbid, queryid).
CREATE TABLE chronicle.statements_text (
	dbid       oid NOT NULL,
	queryid    bigint NOT NULL,
	query      text NOT NULL,
	first_seen timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (dbid, queryid)
);
COMMENT ON TABLE chronicle.statements_text IS 'Query text of recorded statements, once per (dbid, queryid)';
