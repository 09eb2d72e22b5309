#!/usr/bin/env bash
# Benchmarks of the wait sampler and the buffer cache scan
# (docs/benchmarks.md, "Wait sampler and buffer scan").
#
#   bench/sampling.sh cpu      sampler CPU at 10 ms with 0, 100 and 1000 sessions
#   bench/sampling.sh lost     ticks due - taken while pgbench runs and the
#                              collector writes snapshots (SNAPSHOT_INTERVAL,
#                              default 1s; COLLECTOR=off for the control run)
#   bench/sampling.sh buffers  buffer scan ns per buffer at 128MB, 1GB, 4GB
#   bench/sampling.sh accuracy samples of one pg_sleep(S) session against its
#                              wall time at 10 ms (S in SLEEPS, "0.5 5"; ROUNDS
#                              rounds, with LOAD=1 pgbench running beside it)
#
# Environment: PG_CONFIG or PGBIN (the server to measure), PORT (5602),
# DURATION (seconds per measurement, 60), ROUNDS (cpu rounds, 3).  Run as root (the cluster runs
# as user pgchronicle) or as a normal user.  pg_chronicle must be installed
# into PGBIN's prefix (make install).  The cluster lives in BENCH_DIR
# (/tmp/waits-bench).
set -euo pipefail

. "$(dirname "$0")/../tools/lib.sh"
PGBIN=${PGBIN:-$("${PG_CONFIG:?set PG_CONFIG (or PGBIN)}" --bindir)}
PORT=${PORT:-5602}
DURATION=${DURATION:-60}
DIR=${BENCH_DIR:-/tmp/waits-bench}

psql() { "$PGBIN/psql" -X -Atq "$@"; }

start() {		# extra postgresql.conf lines
	stop
	rm -rf "$DIR"
	lib_cluster_start "$DIR" "$PGBIN" "$PORT" "chronicle.database = 'postgres'
$1"
	psql -c 'CREATE EXTENSION pg_chronicle'
}

stop() {
	lib_cluster_stop "$DIR" "$PGBIN"
}
trap stop EXIT

# CPU time of a process in ns, from /proc/<pid>/schedstat (the scheduler's
# exact runtime; utime/stime are sampled at the 100 Hz tick, which a process
# waking every 10 ms aliases with).
proc_ns() { awk '{print $1}' "/proc/$1/schedstat"; }

sleepers() {	# n: start n sessions sleeping in pg_sleep (one pgbench process)
	echo 'SELECT pg_sleep(3600);' >/tmp/waits-bench-sleep.sql
	chmod 644 /tmp/waits-bench-sleep.sql
	bash -c "ulimit -n 4096; exec '$PGBIN/pgbench' -n -c $1 -j 2 \
		-T 3600 -f /tmp/waits-bench-sleep.sql" >/dev/null 2>&1 &
	SLEEPERS_PID=$!
	lib_poll_sql "$1 sessions in pg_sleep" 300 \
		"SELECT count(*) >= $1 FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
}

no_sleepers() {
	kill "$SLEEPERS_PID" 2>/dev/null || true
	psql -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE wait_event = 'PgSleep'" >/dev/null
	wait "$SLEEPERS_PID" 2>/dev/null || true
	lib_poll_sql "no session in pg_sleep" 60 \
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
}

cpu_share() {	# label
	local pid t0 t1 s0 s1 procs
	pid=$(psql -c 'SELECT pid FROM chronicle.wait_sampler_status()')
	s0=$(psql -c 'SELECT ticks_due || $$ $$ || ticks_taken FROM chronicle.wait_sampler_status()')
	t0=$(proc_ns "$pid")
	sleep "$DURATION"
	t1=$(proc_ns "$pid")
	s1=$(psql -c 'SELECT ticks_due || $$ $$ || ticks_taken FROM chronicle.wait_sampler_status()')
	procs=$(psql -c "SELECT count(*) FROM pg_stat_activity")
	awk -v l="$1" -v p="$procs" -v t0="$t0" -v t1="$t1" -v d="$DURATION" \
		-v s0="$s0" -v s1="$s1" 'BEGIN {
		split(s0, a, " "); split(s1, b, " ");
		printf "%-34s processes %5d  %.3f%% of a core  %.1f us per tick  ticks taken/due %d/%d\n",
			l, p, 100 * (t1 - t0) / 1e9 / d, (t1 - t0) / 1000 / (b[2] - a[2]),
			b[2] - a[2], b[1] - a[1] }'
}

# Rounds of 0, 100 and 1000 sessions, interleaved: the machine is shared,
# so compare within a round and look at the spread across rounds.
bench_cpu() {
	start "max_connections = 1100
chronicle.wait_sample_interval = '10ms'"
	for r in $(seq "${ROUNDS:-3}"); do
		cpu_share "round $r: 10 ms, no sessions"
		for n in 100 1000; do
			sleepers "$n"
			cpu_share "round $r: 10 ms, $n sessions in pg_sleep"
			no_sleepers
		done
	done
	stop
}

bench_lost() {
	start "chronicle.snapshot_interval = '${SNAPSHOT_INTERVAL:-1s}'
chronicle.enabled = ${COLLECTOR:-on}
max_connections = 100"
	"$PGBIN/pgbench" -i -q -s 10 postgres >/dev/null 2>&1
	local s0 s1 n0 n1
	s0=$(psql -c 'SELECT ticks_due || $$ $$ || ticks_taken FROM chronicle.wait_sampler_status()')
	n0=$(psql -c 'SELECT count(*) FROM chronicle.snapshot')
	"$PGBIN/pgbench" -n -c "${CLIENTS:-8}" -j 2 -T "$DURATION" postgres |
		grep -E '^tps' || true
	s1=$(psql -c 'SELECT ticks_due || $$ $$ || ticks_taken FROM chronicle.wait_sampler_status()')
	n1=$(psql -c 'SELECT count(*) FROM chronicle.snapshot')
	awk -v s0="$s0" -v s1="$s1" -v n="$((n1 - n0))" -v c="${CLIENTS:-8}" -v on="${COLLECTOR:-on}" 'BEGIN {
		split(s0, a, " "); split(s1, b, " ");
		due = b[1] - a[1]; taken = b[2] - a[2];
		printf "pgbench %d clients, collector %s: %d snapshots written, ticks due %d, taken %d, lost %d (%.3f%%)\n",
			c, on, n, due, taken, due - taken, 100 * (due - taken) / due }'
	stop
}

bench_buffers() {
	for sb in 128MB 1GB 4GB; do
		start "shared_buffers = '$sb'"
		# Some data in the cache, so that valid and invalid buffers mix.
		"$PGBIN/pgbench" -i -q -s 20 postgres >/dev/null 2>&1
		psql -c 'SELECT count(*) FROM pgbench_accounts' >/dev/null
		psql -c "DO \$\$
			DECLARE t0 timestamptz; t1 timestamptz; n int := 200; nb bigint; used bigint;
			BEGIN
				PERFORM chronicle.buffers_summary();
				t0 := clock_timestamp();
				FOR i IN 1..n LOOP PERFORM chronicle.buffers_summary(); END LOOP;
				t1 := clock_timestamp();
				SELECT buffers_total, buffers_used INTO nb, used FROM chronicle.buffers_summary();
				RAISE NOTICE 'shared_buffers % (% buffers, % used): % ms per scan, % ns per buffer',
					'$sb', nb, used,
					round((extract(epoch FROM t1 - t0) * 1000 / n)::numeric, 3),
					round((extract(epoch FROM t1 - t0) * 1e9 / n / nb)::numeric, 2);
			END \$\$" 2>&1 | sed 's/^.*NOTICE:  //'
		stop
	done
}

# How many 10 ms samples one session sleeping in pg_sleep(S) gets, against
# its wall time (clock_timestamp() - statement_timestamp() around the
# sleep) at 100 Hz: the sampler's own count (chronicle.wait_samples()),
# with the ticks due and taken over the same stretch.
bench_accuracy() {
	start "chronicle.wait_sample_interval = '10ms'
chronicle.enabled = off
max_connections = 100"
	local load_pid=
	if [ -n "${LOAD:-}" ]; then
		"$PGBIN/pgbench" -i -q -s 10 postgres >/dev/null 2>&1
		"$PGBIN/pgbench" -n -c "${CLIENTS:-8}" -j 2 -T 3600 postgres >/dev/null 2>&1 &
		load_pid=$!
	fi
	local samples="SELECT coalesce(sum(samples), 0) FROM chronicle.wait_samples()
	                WHERE backend_type = 'client backend' AND wait_event = 'PgSleep'"
	local ticks='SELECT ticks_due || $$ $$ || ticks_taken FROM chronicle.wait_sampler_status()'
	local r s n0 n1 t0 t1 wall
	for r in $(seq "${ROUNDS:-3}"); do
		for s in ${SLEEPS:-0.5 5}; do
			n0=$(psql -c "$samples")
			t0=$(psql -c "$ticks")
			wall=$(psql -c "SELECT extract(epoch FROM clock_timestamp() - statement_timestamp()) FROM pg_sleep($s)")
			t1=$(psql -c "$ticks")
			n1=$(psql -c "$samples")
			awk -v r="$r" -v s="$s" -v w="$wall" -v n="$((n1 - n0))" -v t0="$t0" -v t1="$t1" \
				-v load="${LOAD:+, pgbench beside}" 'BEGIN {
				split(t0, a, " "); split(t1, b, " ");
				printf "round %d%s: pg_sleep(%s) %.3f s = %.1f ticks at 100 Hz, %d samples (%+.1f), ticks taken/due %d/%d\n",
					r, load, s, w, w * 100, n, n - w * 100, b[2] - a[2], b[1] - a[1] }'
		done
	done
	[ -n "$load_pid" ] && { kill "$load_pid" 2>/dev/null; wait "$load_pid" 2>/dev/null || true; }
	stop
}

case "${1:-all}" in
	cpu) bench_cpu ;;
	lost) bench_lost ;;
	buffers) bench_buffers ;;
	accuracy) bench_accuracy ;;
	all) bench_buffers; bench_lost; bench_accuracy; bench_cpu ;;
	*) echo "usage: $0 [cpu|lost|buffers|accuracy|all]" >&2; exit 2 ;;
esac
