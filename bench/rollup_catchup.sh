#!/usr/bin/env bash
# Rollups catching up a backlog (docs/benchmarks.md, "Rollups"): BENCH_DAYS
# (default 7) days of 1 s history that were never rolled up, as after an
# upgrade from 0.1.0 (which had no rollups), then the collector started
# under the standard load.  Prints how long the housekeeper takes to roll
# the backlog up (chronicle.rollup_state.done_until past its last day), the
# minutes it rolled up a second, and the snapshot times
# (chronicle.snapshot.duration_ms p50 / p99) while it did and over
# BENCH_AFTER seconds (default 300) after it.
#
#   PG_CONFIG=/path/pg_config bench/rollup_catchup.sh      (as root or as a normal user)
#
# The backlog: bench/analysis_gen.sql's synthetic day (waits of 100
# processes, 128 io keys, the single-row sources), once for each of the
# BENCH_DAYS days before today, into a cluster set up as bench/storage.sh
# sets its own (shared_buffers 128MB, pg_stat_statements loaded and
# created, pgbench -i -s BENCH_SCALE, BENCH_IDLE idle sessions, every
# chronicle source at its default, chronicle.retention long enough to keep
# it, BENCH_CONF added) with chronicle.enabled off; then the load of
# bench/storage.sh (pgbench -R BENCH_RATE -c BENCH_CLIENTS) starts and
# chronicle.enabled goes on (a reload): the collector and its housekeeper
# start.  BENCH_TIMEOUT (default 3600) bounds the wait.
set -euo pipefail
. "$(dirname "$0")/../tools/lib.sh"
lib_bench_start bench/rollup_catchup.sh "$@"
days=${BENCH_DAYS:-7}
after=${BENCH_AFTER:-300}
timeout=${BENCH_TIMEOUT:-3600}
lib_bench_cluster bench-catchup "chronicle.enabled = off
chronicle.retention = '$((days + 2)) days'"

echo "PostgreSQL: $("$LIB_PG_CONFIG" --version); cassert: $(q 'SHOW debug_assertions')"
echo "machine: $(nproc) cores, $(uname -r); shared_buffers 128MB, $idle idle sessions, pg_stat_statements loaded"
[ -n "${BENCH_CONF:-}" ] && echo "extra settings: $BENCH_CONF"
start=$(date +%s)
for d in $(seq "$days" -1 1); do
	"$bindir/psql" -X -q -v ON_ERROR_STOP=1 -v day="$(date -u -d "today - $d days" +%F)" \
		-f "$src/bench/analysis_gen.sql" >/dev/null
done
today=$(date -u +%F)
echo "== $days days of history generated in $(( $(date +%s) - start )) s: $(q 'SELECT count(*) FROM chronicle.snapshot') snapshots, none rolled up ($(q 'SELECT count(*) FROM chronicle.rollup_minute') minute rows)"

lib_idle_sessions "$tmp" "$idle"
q 'CHECKPOINT' >/dev/null
"$bindir/pgbench" -n -R "$rate" -c "$clients" -j 2 -T "$((timeout + after + 120))" >"$tmp/pgbench.out" 2>&1 &
pgbench_pid=$!
q "ALTER SYSTEM SET chronicle.enabled = on"
q 'SELECT pg_reload_conf()' >/dev/null
t0=$(q 'SELECT clock_timestamp()')
echo "== the collector on at $t0, under pgbench -R $rate -c $clients"

# done_until past the generated days: every minute before today rolled up
# (none to roll up with BENCH_DAYS=0)
caught=
for _ in $(seq 1 $((timeout / 10))); do
	sleep 10
	if [ "$(q "SELECT NOT EXISTS (SELECT FROM chronicle.snapshot WHERE ts < '$today')
	                  OR coalesce(max(done_until) >= timestamptz '$today 00:00+00', false)
	             FROM chronicle.rollup_state WHERE origin = 0")" = t ]; then
		caught=$(q 'SELECT clock_timestamp()')
		break
	fi
	echo "  $(date -u +%T) rolled up until $(q 'SELECT max(done_until) FROM chronicle.rollup_state WHERE origin = 0')"
done
if [ -z "$caught" ]; then
	echo "not caught up within $timeout s"
	kill "$pgbench_pid" 2>/dev/null || true
	exit 1
fi
secs=$(q "SELECT round(extract(epoch FROM timestamptz '$caught' - timestamptz '$t0'))")
minutes=$(q "SELECT count(*) FROM chronicle.rollup_minute WHERE source = 'intervals' AND ts < '$today'")
echo "== caught up in $secs s (within 10 s): $minutes minutes rolled up, $(q "SELECT round($minutes / $secs::numeric, 1)") a second"
sleep "$after"
kill "$pgbench_pid" 2>/dev/null || true
wait "$pgbench_pid" 2>/dev/null || true

echo "== snapshot time (chronicle.snapshot.duration_ms of the collector), ms"
echo "window | snapshots | p50 | p99 | max"
"$bindir/psql" -X -q -At -F ' | ' -v ON_ERROR_STOP=1 -c "SELECT w, count(*), round(percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms)::numeric, 2),
          round(percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms)::numeric, 2),
          round(max(duration_ms)::numeric, 2)
     FROM (SELECT CASE WHEN ts <= '$caught' THEN 'catching up' ELSE 'after ($after s)' END AS w, duration_ms
             FROM chronicle.snapshot
            WHERE collector = 'worker' AND ts > timestamptz '$t0' + interval '30 s'
              AND ts <= timestamptz '$caught' + interval '$after s') s
    GROUP BY w ORDER BY w DESC"
echo "pgbench: $(grep -E '^tps' "$tmp/pgbench.out" || tail -n 1 "$tmp/pgbench.out")"
