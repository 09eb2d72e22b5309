-- Operating system counters (Linux /proc; absent elsewhere).

-- /proc/meminfo (gauges, in kB as the file shows them) and /proc/vmstat
-- (cumulative counters).
CREATE VIEW chronicle.os_memory_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('os_memory', h.ts, h.os_memory) AS u(
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
		pswpout       bigint)
 WHERE h.os_memory IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.os_memory_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('os_memory');
COMMENT ON VIEW chronicle.os_memory_history IS
	'/proc/meminfo (kB, gauges) and /proc/vmstat page and swap counters (cumulative)';

-- /proc/diskstats for the devices holding the data directory and WAL:
-- everything iostat derives r/s, w/s, rkB/s, wkB/s, await, aqu-sz, %util from.
CREATE VIEW chronicle.os_disk_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('os_disk', h.ts, h.os_disk) AS u(
		device              text,
		role                text,       -- 'data', 'wal' or 'data,wal'
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
		flush_time_ms       bigint)
 WHERE h.os_disk IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.os_disk_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('os_disk');
COMMENT ON VIEW chronicle.os_disk_history IS
	'/proc/diskstats of the devices under the data directory and pg_wal (cumulative, but in_flight)';

-- /proc/pressure/{cpu,io,memory}: cumulative stall time in microseconds.
CREATE VIEW chronicle.os_pressure_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('os_pressure', h.ts, h.os_pressure) AS u(
		resource    text,     -- 'cpu', 'io', 'memory'
		some_total  bigint,
		full_total  bigint)
 WHERE h.os_pressure IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.os_pressure_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('os_pressure');
COMMENT ON VIEW chronicle.os_pressure_history IS
	'/proc/pressure stall totals in microseconds (cumulative)';

-- /proc/<pid>/io of the checkpointer, walwriter, bgwriter (cumulative per
-- process; a new pid is a new baseline).
CREATE VIEW chronicle.os_process_io_history AS
SELECT h.ts, u.*
  FROM chronicle.history h
 CROSS JOIN LATERAL chronicle._unpack('os_process_io', h.ts, h.os_process_io) AS u(
		backend_type          text,
		pid                   integer,
		rchar                 bigint,
		wchar                 bigint,
		syscr                 bigint,
		syscw                 bigint,
		read_bytes            bigint,
		write_bytes           bigint,
		cancelled_write_bytes bigint)
 WHERE h.os_process_io IS NOT NULL;
CREATE TRIGGER write INSTEAD OF INSERT OR UPDATE OR DELETE ON chronicle.os_process_io_history
	FOR EACH ROW EXECUTE FUNCTION chronicle._history_write('os_process_io');
COMMENT ON VIEW chronicle.os_process_io_history IS
	'/proc/<pid>/io of the checkpointer, walwriter and bgwriter (cumulative)';
