#!/usr/bin/env bash
# Benchmark of the collector (docs/benchmarks.md, "Collector"):
#   1. under pgbench at a fixed rate (-R RATE -c 8) for BENCH_SECONDS:
#      worker time per snapshot (p50, p99, from chronicle.snapshot.duration_ms),
#      collector CPU as a share of one core (/proc/<pid>/schedstat, or
#      utime+stime of /proc/<pid>/stat),
#      bytes of history per recorded second (pg_total_relation_size of every
#      chronicle table before/after), WAL per snapshot (snapshot.wal_bytes);
#   2. pgbench TPS with the recording on vs off as interleaved pairs (the
#      collector by chronicle.enabled, the wait sampler by
#      chronicle.wait_sample_interval = 0, both switched by reload), ratio
#      on/off per pair.
# The cluster is the standard load's (lib_bench_cluster: pg_stat_statements
# loaded, BENCH_IDLE idle sessions, default 100).
#
#   PG_CONFIG=/path/pg_config bench/collector.sh      (as root or as a normal user)
#
# Environment: BENCH_RATE (500), BENCH_SECONDS (60), BENCH_PAIRS (5),
# BENCH_PAIR_SECONDS (20), BENCH_CLIENTS (8), BENCH_SCALE (10),
# BENCH_INTERVAL (1s).
set -euo pipefail
. "$(dirname "$0")/../tools/lib.sh"
lib_bench_start bench/collector.sh "$@"
pairs=${BENCH_PAIRS:-5}
pair_seconds=${BENCH_PAIR_SECONDS:-20}
interval=${BENCH_INTERVAL:-1s}

lib_bench_cluster bench-collector "chronicle.snapshot_interval = '$interval'"
lib_idle_sessions "$tmp" "$idle"
q 'CHECKPOINT' >/dev/null
# Measure from the steady state: the collector's keyframe and a few
# snapshots after the load and its checkpoint are behind us.
t=$(q 'SELECT clock_timestamp()')
lib_poll_sql "three snapshots after the checkpoint" 60 \
	"SELECT count(*) >= 3 FROM chronicle.snapshot WHERE collector = 'worker' AND ts > '$t'"

echo "PostgreSQL: $("$LIB_PG_CONFIG" --version); cassert: $(q 'SHOW debug_assertions')"
echo "machine: $(nproc) cores, $(uname -r); shared_buffers 128MB, $idle idle sessions, pg_stat_statements loaded, interval $interval"

# --- 1. fixed rate -------------------------------------------------------
# Main forks of every table and index: what grows with each second of
# history.  pg_total_relation_size also counts the free space and
# visibility maps autovacuum adds once per partition (a fixed 24-32 kB a
# partition and day, not a per-second cost); both are reported.
hist_size() {
	q "SELECT sum(pg_relation_size(c.oid, 'main')) FROM pg_class c
	    WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relkind IN ('r', 'i')"
}
hist_total() {
	q "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
	    WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relkind = 'r'"
}
pid=$(q 'SELECT pid FROM chronicle.status()')
# CPU time of the collector: /proc/<pid>/schedstat (ns on CPU, precise) when
# the kernel has it, else utime + stime of /proc/<pid>/stat (clock ticks).
if [ -r "/proc/$pid/schedstat" ]; then
	hz=1000000000
	cpu() { awk '{print $1}' "/proc/$pid/schedstat"; }
else
	hz=$(getconf CLK_TCK)
	cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
fi

size0=$(hist_size)
total0=$(hist_total)
t0=$(q 'SELECT clock_timestamp()')
cpu0=$(cpu)
w0=$(date +%s.%N)
"$bindir/pgbench" -R "$rate" -c "$clients" -j 2 -T "$seconds" >"$tmp/fixed.out" 2>&1
w1=$(date +%s.%N)
cpu1=$(cpu)
t1=$(q 'SELECT clock_timestamp()')
q 'CHECKPOINT' >/dev/null
size1=$(hist_size)
total1=$(hist_total)

echo
echo "== 1. pgbench -R $rate -c $clients -T $seconds (TPC-B), collector at $interval"
grep -E '^tps' "$tmp/fixed.out" | sed 's/^/pgbench: /'
nsnap=$(q "SELECT count(*) FROM chronicle.snapshot WHERE collector = 'worker' AND ts BETWEEN '$t0' AND '$t1'")
awk -v c0="$cpu0" -v c1="$cpu1" -v hz="$hz" -v w0="$w0" -v w1="$w1" -v n="$nsnap" 'BEGIN {
	printf "collector CPU: %.3f s in %.1f s = %.3f %% of one core (%.2f ms of CPU per snapshot, whole loop)\n",
		(c1 - c0) / hz, w1 - w0, 100 * (c1 - c0) / hz / (w1 - w0), 1000 * (c1 - c0) / hz / n }'
"$bindir/psql" -X -q -v ON_ERROR_STOP=1 -v t0="$t0" -v t1="$t1" \
	-v size0="$size0" -v size1="$size1" -v total0="$total0" -v total1="$total1" <<'SQL'
\pset footer off
SELECT count(*) AS snapshots,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms)::numeric, 3) AS "ms p50",
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms)::numeric, 3) AS "ms p99",
       round(max(duration_ms)::numeric, 3) AS "ms max",
       round(avg(wal_bytes)) AS "WAL B/snapshot",
       round(avg(wal_bytes) FILTER (WHERE NOT keyframe)) AS "WAL B/sparse snapshot",
       round(avg(rows_written), 1) AS "rows/snapshot",
       round((:size1 - :size0) / extract(epoch FROM max(ts) - min(ts))) AS "history B/s",
       round((:total1 - :total0) / extract(epoch FROM max(ts) - min(ts))) AS "B/s incl. FSM/VM"
  FROM chronicle.snapshot
 WHERE collector = 'worker' AND ts BETWEEN :'t0' AND :'t1';
-- what the bytes are made of: rows per second and row size per table
WITH w AS (SELECT extract(epoch FROM :'t1'::timestamptz - :'t0'::timestamptz) AS secs),
r AS (
	SELECT 'snapshot' AS tbl, count(*) AS n, avg(pg_column_size(h.*)) AS sz
	  FROM chronicle.snapshot h WHERE ts BETWEEN :'t0' AND :'t1'
	UNION ALL SELECT 'io_history', count(*), avg(pg_column_size(h.*))
	  FROM chronicle.io_history h WHERE ts BETWEEN :'t0' AND :'t1'
	UNION ALL SELECT 'wal_history', count(*), avg(pg_column_size(h.*))
	  FROM chronicle.wal_history h WHERE ts BETWEEN :'t0' AND :'t1'
	UNION ALL SELECT 'checkpointer_history', count(*), avg(pg_column_size(h.*))
	  FROM chronicle.checkpointer_history h WHERE ts BETWEEN :'t0' AND :'t1'
	UNION ALL SELECT 'bgwriter_history', count(*), avg(pg_column_size(h.*))
	  FROM chronicle.bgwriter_history h WHERE ts BETWEEN :'t0' AND :'t1'
	UNION ALL SELECT 'database_history', count(*), avg(pg_column_size(h.*))
	  FROM chronicle.database_history h WHERE ts BETWEEN :'t0' AND :'t1')
SELECT tbl AS "table", round(n / secs, 2) AS "rows/s", round(sz) AS "row bytes",
       round(n / secs * (coalesce(sz, 0) + 28)) AS "~B/s incl. tuple header+pointer"
  FROM r, w ORDER BY tbl;
-- which io rows change every second
SELECT backend_type, object, context, count(*) AS rows
  FROM chronicle.io_history h JOIN chronicle.snapshot s USING (ts)
 WHERE ts BETWEEN :'t0' AND :'t1' AND NOT s.keyframe
 GROUP BY 1, 2, 3 ORDER BY rows DESC LIMIT 8;
SQL

# --- 2. TPS on vs off, interleaved pairs ---------------------------------
[ "$pairs" -gt 0 ] || exit 0
echo
echo "== 2. pgbench -c $clients -j 2 -T $pair_seconds, recording on vs off, $pairs interleaved pairs"
# off: the collector disabled and the wait sampler stopped (its interval 0),
# both by reload; on: both at their defaults
set_enabled() {
	if [ "$1" = on ]; then
		q "ALTER SYSTEM RESET chronicle.enabled" >/dev/null
		q "ALTER SYSTEM RESET chronicle.wait_sample_interval" >/dev/null
	else
		q "ALTER SYSTEM SET chronicle.enabled = off" >/dev/null
		q "ALTER SYSTEM SET chronicle.wait_sample_interval = 0" >/dev/null
	fi
	q 'SELECT pg_reload_conf()' >/dev/null
	if [ "$1" = on ]; then
		lib_poll_sql "the collector recording" 30 "SELECT state = 'recording' FROM chronicle.status()"
		lib_poll "the wait sampler sampling" 30 sampler_ticking
	else
		lib_poll_sql "the collector disabled" 30 "SELECT state LIKE 'disabled%' FROM chronicle.status()"
		lib_poll "the wait sampler stopped" 30 eval '! sampler_ticking'
	fi
}
# whether the sampler's ticks due moved in 0.3 s
sampler_ticking() {
	local a
	a=$(q 'SELECT ticks_due FROM chronicle.wait_sampler_status()')
	sleep 0.3
	[ "$a" != "$(q 'SELECT ticks_due FROM chronicle.wait_sampler_status()')" ]
}
tps() {
	"$bindir/pgbench" -c "$clients" -j 2 -T "$pair_seconds" 2>/dev/null |
		awk '/^tps/ {print $3; exit}'
}
ratios=()
for i in $(seq 1 "$pairs"); do
	# alternate which goes first, so drift does not favour one side
	if [ $((i % 2)) = 1 ]; then
		set_enabled on; on=$(tps); set_enabled off; off=$(tps)
	else
		set_enabled off; off=$(tps); set_enabled on; on=$(tps)
	fi
	r=$(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.4f", a / b}')
	ratios+=("$r")
	printf 'pair %d: on %.1f tps, off %.1f tps, on/off %s\n' "$i" "$on" "$off" "$r"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '
	{ v[NR] = $1; s += $1 }
	END { printf "on/off: mean %.4f, median %.4f, min %.4f, max %.4f (%d pairs)\n",
		s / NR, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR], NR }'
set_enabled on
