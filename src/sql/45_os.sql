-- Operating system counters (Linux /proc; absent elsewhere).

-- /proc/meminfo (gauges, in kB as the file shows them) and /proc/vmstat
-- (cumulative counters).
CREATE TABLE chronicle.os_memory_history (
	ts            timestamptz NOT NULL,
	mem_total     bigint,
	mem_free      bigint,
	mem_available bigint,
	buffers       bigint,
	cached        bigint,
	dirty         bigint,
	writeback     bigint,
	shmem         bigint,
	swap_total    bigint,
	swap_free     bigint,
	pgpgin        bigint,
	pgpgout       bigint,
	pswpin        bigint,
	pswpout       bigint
) PARTITION BY RANGE (ts);
CREATE INDEX ON chronicle.os_memory_history USING brin (ts);
COMMENT ON TABLE chronicle.os_memory_history IS
	'/proc/meminfo (kB, gauges) and /proc/vmstat page and swap counters (cumulative)';

-- /proc/diskstats for the devices holding the data directory and WAL:
-- everything iostat derives r/s, w/s, rkB/s, wkB/s, await, aqu-sz, %util from.
CREATE TABLE chronicle.os_disk_history (
	ts                  timestamptz NOT NULL,
	device              text NOT NULL,
	role                text NOT NULL,       -- 'data', 'wal' or 'data,wal'
	reads_completed     bigint,
	reads_merged        bigint,
	sectors_read        bigint,
	read_time_ms        bigint,
	writes_completed    bigint,
	writes_merged       bigint,
	sectors_written     bigint,
	write_time_ms       bigint,
	in_flight           bigint,              -- gauge
	io_time_ms          bigint,
	weighted_io_time_ms bigint,
	discards_completed  bigint,
	discards_merged     bigint,
	sectors_discarded   bigint,
	discard_time_ms     bigint,
	flushes_completed   bigint,
	flush_time_ms       bigint
) PARTITION BY RANGE (ts);
CREATE INDEX ON chronicle.os_disk_history USING brin (ts);
COMMENT ON TABLE chronicle.os_disk_history IS
	'/proc/diskstats of the devices under the data directory and pg_wal (cumulative, but in_flight)';

-- /proc/pressure/{cpu,io,memory}: cumulative stall time in microseconds.
CREATE TABLE chronicle.os_pressure_history (
	ts          timestamptz NOT NULL,
	resource    text NOT NULL,     -- 'cpu', 'io', 'memory'
	some_total  bigint,
	full_total  bigint
) PARTITION BY RANGE (ts);
CREATE INDEX ON chronicle.os_pressure_history USING brin (ts);
COMMENT ON TABLE chronicle.os_pressure_history IS
	'/proc/pressure stall totals in microseconds (cumulative)';

-- /proc/<pid>/io of the checkpointer, walwriter, bgwriter (cumulative per
-- process; a new pid is a new baseline).
CREATE TABLE chronicle.os_process_io_history (
	ts                    timestamptz NOT NULL,
	backend_type          text NOT NULL,
	pid                   integer NOT NULL,
	rchar                 bigint,
	wchar                 bigint,
	syscr                 bigint,
	syscw                 bigint,
	read_bytes            bigint,
	write_bytes           bigint,
	cancelled_write_bytes bigint
) PARTITION BY RANGE (ts);
CREATE INDEX ON chronicle.os_process_io_history USING brin (ts);
COMMENT ON TABLE chronicle.os_process_io_history IS
	'/proc/<pid>/io of the checkpointer, walwriter and bgwriter (cumulative)';
