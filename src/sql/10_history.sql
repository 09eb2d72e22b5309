-- History tables, one per source (src/source_<name>.c), named
-- <name>_history.  Raw cumulative counters exactly as the view shows them,
-- written sparsely: a row only when it changed since the previous snapshot
-- of the same segment, every row in a keyframe.  A key without a row at a
-- snapshot has the value of its latest earlier row in the segment.
-- Byte counters are bigint (the views show numeric; the values are equal).

CREATE TABLE chronicle.io_history (
	ts             timestamptz NOT NULL,
	backend_type   text NOT NULL,
	object         text NOT NULL,
	context        text NOT NULL,
	reads          bigint,
	read_bytes     bigint,
	read_time      float8,
	writes         bigint,
	write_bytes    bigint,
	write_time     float8,
	writebacks     bigint,
	writeback_time float8,
	extends        bigint,
	extend_bytes   bigint,
	extend_time    float8,
	op_bytes       bigint,
	hits           bigint,
	evictions      bigint,
	reuses         bigint,
	fsyncs         bigint,
	fsync_time     float8,
	stats_reset    timestamptz
) PARTITION BY RANGE (ts);
CREATE INDEX ON chronicle.io_history USING brin (ts);
COMMENT ON TABLE chronicle.io_history IS
	'pg_stat_io, every (backend_type, object, context) row and column; *_bytes on 18+, op_bytes before 18';

CREATE TABLE chronicle.wal_history (
	ts               timestamptz NOT NULL,
	wal_records      bigint,
	wal_fpi          bigint,
	wal_bytes        bigint,
	wal_buffers_full bigint,
	wal_write        bigint,
	wal_sync         bigint,
	wal_write_time   float8,
	wal_sync_time    float8,
	stats_reset      timestamptz
) PARTITION BY RANGE (ts);
CREATE INDEX ON chronicle.wal_history USING brin (ts);
COMMENT ON TABLE chronicle.wal_history IS
	'pg_stat_wal; wal_write, wal_sync and their times before 18 (18 has them in pg_stat_io, object wal)';

CREATE TABLE chronicle.checkpointer_history (
	ts                  timestamptz NOT NULL,
	num_timed           bigint,
	num_requested       bigint,
	num_done            bigint,
	restartpoints_timed bigint,
	restartpoints_req   bigint,
	restartpoints_done  bigint,
	write_time          float8,
	sync_time           float8,
	buffers_written     bigint,
	slru_written        bigint,
	stats_reset         timestamptz
) PARTITION BY RANGE (ts);
CREATE INDEX ON chronicle.checkpointer_history USING brin (ts);
COMMENT ON TABLE chronicle.checkpointer_history IS
	'pg_stat_checkpointer; num_done and slru_written on 18+';

CREATE TABLE chronicle.bgwriter_history (
	ts               timestamptz NOT NULL,
	buffers_clean    bigint,
	maxwritten_clean bigint,
	buffers_alloc    bigint,
	stats_reset      timestamptz
) PARTITION BY RANGE (ts);
CREATE INDEX ON chronicle.bgwriter_history USING brin (ts);
COMMENT ON TABLE chronicle.bgwriter_history IS 'pg_stat_bgwriter';

CREATE TABLE chronicle.database_history (
	ts                         timestamptz NOT NULL,
	datid                      oid NOT NULL,
	datname                    text,
	xact_commit                bigint,
	xact_rollback              bigint,
	blks_read                  bigint,
	blks_hit                   bigint,
	tup_returned               bigint,
	tup_fetched                bigint,
	tup_inserted               bigint,
	tup_updated                bigint,
	tup_deleted                bigint,
	conflicts                  bigint,
	temp_files                 bigint,
	temp_bytes                 bigint,
	deadlocks                  bigint,
	checksum_failures          bigint,
	blk_read_time              float8,
	blk_write_time             float8,
	session_time               float8,
	active_time                float8,
	idle_in_transaction_time   float8,
	sessions                   bigint,
	sessions_abandoned         bigint,
	sessions_fatal             bigint,
	sessions_killed            bigint,
	parallel_workers_to_launch bigint,
	parallel_workers_launched  bigint,
	stats_reset                timestamptz
) PARTITION BY RANGE (ts);
CREATE INDEX ON chronicle.database_history USING brin (ts);
COMMENT ON TABLE chronicle.database_history IS
	'pg_stat_database per database, and datid 0 for shared objects (numbackends is not recorded)';
