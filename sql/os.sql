-- Operating system sources on captured /proc files (test/data/proc).
\set VERBOSITY terse
\getenv abs_srcdir PG_ABS_SRCDIR
\set proc_root :abs_srcdir '/test/data/proc'
SET chronicle.proc_root = :'proc_root';
-- vda as on this VM, sda (14 fields: no discard/flush columns), sda1 (18
-- fields: no flush columns), and a device diskstats does not list.
SET chronicle.os_disks = 'vda=data+wal, sda=wal,sda1, nvme9n1=data';

SELECT chronicle.snapshot() AS ts \gset
SELECT errors FROM chronicle.snapshot WHERE ts = :'ts';

-- /proc/meminfo in kB as the file shows it, /proc/vmstat counters.
SELECT mem_total, mem_free, mem_available, buffers, cached, dirty, writeback,
       shmem, swap_total, swap_free, pgpgin, pgpgout, pswpin, pswpout
  FROM chronicle.os_memory_history WHERE ts = :'ts';

-- diskstats: every field of the listed devices; missing fields NULL.
SELECT device, role, reads_completed, reads_merged, sectors_read, read_time_ms,
       writes_completed, writes_merged, sectors_written, write_time_ms,
       in_flight, io_time_ms, weighted_io_time_ms
  FROM chronicle.os_disk_history WHERE ts = :'ts' ORDER BY device, role;
SELECT device, role, discards_completed, discards_merged, sectors_discarded,
       discard_time_ms, flushes_completed, flush_time_ms
  FROM chronicle.os_disk_history WHERE ts = :'ts' ORDER BY device, role;

-- pressure: total= of the some and full lines, in microseconds.
SELECT resource, some_total, full_total
  FROM chronicle.os_pressure_history WHERE ts = :'ts' ORDER BY resource;

-- No <pid>/io under the captured root: the source is not available.
SELECT count(*) AS process_io_rows
  FROM chronicle.os_process_io_history WHERE ts = :'ts';

-- Without /proc (or on another OS) the sources record nothing, no error.
SET chronicle.proc_root = '/nonexistent';
SELECT chronicle.snapshot() AS ts2 \gset
SELECT errors FROM chronicle.snapshot WHERE ts = :'ts2';
SELECT (SELECT count(*) FROM chronicle.os_memory_history WHERE ts = :'ts2') AS memory,
       (SELECT count(*) FROM chronicle.os_disk_history WHERE ts = :'ts2') AS disk,
       (SELECT count(*) FROM chronicle.os_pressure_history WHERE ts = :'ts2') AS pressure;

-- The real /proc: the auxiliary processes' io, one row each, own pids.
RESET chronicle.proc_root;
RESET chronicle.os_disks;
SELECT chronicle.snapshot() AS ts3 \gset
SELECT h.backend_type, count(*) AS rows, bool_and(a.pid IS NOT NULL) AS pid_matches,
       bool_and(h.syscr IS NOT NULL AND h.rchar IS NOT NULL) AS counters
  FROM chronicle.os_process_io_history h
  LEFT JOIN pg_stat_activity a ON a.pid = h.pid AND a.backend_type = h.backend_type
 WHERE h.ts = :'ts3'
 GROUP BY 1 ORDER BY 1;
SELECT mem_total > 0 AND mem_available > 0 AS memory_read
  FROM chronicle.os_memory_history WHERE ts = :'ts3';

-- Only superusers point the sources elsewhere.
CREATE ROLE chronicle_os_user;
SET ROLE chronicle_os_user;
SET chronicle.proc_root = '/tmp';
SET chronicle.os_disks = 'sda';
RESET ROLE;
DROP ROLE chronicle_os_user;
