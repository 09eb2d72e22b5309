#!/usr/bin/env bash
# How the recording's cost grows with the server (docs/benchmarks.md,
# "Scale"): the standard load of bench/storage.sh, changed in one dimension
# at a time, a new cluster for each level:
#
#   statements    N more statements in pg_stat_statements, changing: N empty
#                 tables s_1 .. s_N and a second pgbench
#                 (-M simple, -R BENCH_STATEMENT_RATE, default 1000) running
#                 SELECT a FROM s_<random k>; pg_stat_statements.max is
#                 N + 1000 (levels BENCH_STATEMENTS_LEVELS, default
#                 "0 1000 5000")
#   databases     N more databases, each a copy of a template with three
#                 small tables, idle (BENCH_DATABASE_LEVELS, "0 30 100")
#   connections   IDLE/ACTIVE: IDLE idle sessions, and the load's pgbench
#                 with ACTIVE clients at the same total rate
#                 (BENCH_CONNECTION_LEVELS, "100/8 500/250 1000/500")
#   max_connections  the setting alone, the sessions those of the standard
#                 load (BENCH_MAX_CONNECTIONS_LEVELS, "200 1000"): what
#                 the slots cost that no process uses
#
#   PG_CONFIG=/path/to/release/bin/pg_config bench/scale.sh
#
# BENCH_DIMENSIONS (default all four, in that order) picks the dimensions;
# BENCH_RATE, BENCH_SCALE, BENCH_WARMUP (default 30) and BENCH_SECONDS (60)
# are as bench/storage.sh's.  Per level, over the worker's
# snapshots of the window: snapshot time p50, p99 and max
# (chronicle.snapshot.duration_ms), rows and the collector's own WAL per
# snapshot, history bytes per second (the growth of every relation of the
# schema, main forks with indexes and TOAST, whole pages), the CPU of the
# collector and of the wait sampler (/proc/<pid>/schedstat, ms a second),
# and the load's tps.
set -euo pipefail
. "$(dirname "$0")/../tools/lib.sh"
lib_bench_start bench/scale.sh "$@"
warmup=${BENCH_WARMUP:-30}
statement_rate=${BENCH_STATEMENT_RATE:-1000}
dimensions=${BENCH_DIMENSIONS:-statements databases connections max_connections}
load_clients=$clients

echo "PostgreSQL: $("$LIB_PG_CONFIG" --version); machine: $(nproc) cores, $(uname -r)"
echo "load: pgbench TPC-B -s $scale -R $rate, shared_buffers 128MB, pg_stat_statements loaded, every chronicle source at its default"
echo "window: $seconds s after $warmup s of warm-up, a new cluster a level"

# cpu_ms PID: the process's time on a CPU so far, ms (0 without one)
cpu_ms() {
	if [ -n "$1" ] && [ -r "/proc/$1/schedstat" ]; then
		awk '{printf "%.3f", $1 / 1e6}' "/proc/$1/schedstat"
	else
		echo 0
	fi
}

# history_bytes: every relation of the schema, main forks, indexes and TOAST
history_bytes() {
	q "SELECT sum(pg_relation_size(c.oid, 'main')) FROM pg_class c
	    WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relkind IN ('r', 'i', 't')
	       OR c.oid IN (SELECT t.reltoastrelid FROM pg_class t
	                     WHERE t.relnamespace = 'chronicle'::regnamespace)
	       OR c.oid IN (SELECT i.indexrelid FROM pg_index i
	                     WHERE i.indrelid IN (SELECT t.reltoastrelid FROM pg_class t
	                                           WHERE t.relnamespace = 'chronicle'::regnamespace))"
}

# level DIMENSION VALUE: one level, in a subshell (its cluster goes at its
# end); prints its row
level() (
	dim=$1
	value=$2
	idle=100
	clients=$load_clients
	conf=""
	statements=0
	databases=0
	case $dim in
	statements)
		statements=$value
		conf="pg_stat_statements.max = $((value + 1000))"
		;;
	databases)
		databases=$value
		;;
	connections)
		idle=${value%/*}
		clients=${value#*/}
		;;
	max_connections)
		# after lib_bench_cluster's own line: the later one wins
		conf="max_connections = $value"
		;;
	esac
	export BENCH_IDLE=$idle
	lib_bench_cluster scale "$conf"
	if [ "$statements" -gt 0 ]; then
		# 500 tables a transaction: the lock table holds a few thousand locks
		for from in $(seq 1 500 "$statements"); do
			q "DO \$\$ BEGIN FOR k IN $from..least($((from + 499)), $statements) LOOP
			     EXECUTE format('CREATE TABLE public.s_%s (a int)', k);
			   END LOOP; END \$\$"
		done
		printf '\\set k random(1, %d)\nSELECT a FROM s_:k;\n' "$statements" >"$tmp/statements.sql"
	fi
	if [ "$databases" -gt 0 ]; then
		q 'CREATE DATABASE scale_template'
		"$LIB_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -d scale_template \
			-c 'CREATE TABLE a AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 1000) g' \
			-c 'CREATE TABLE b (id int PRIMARY KEY, n int)' \
			-c 'CREATE TABLE c (t timestamptz DEFAULT now(), v text)' >/dev/null
		for d in $(seq 1 "$databases"); do
			q "CREATE DATABASE scale_$d TEMPLATE scale_template"
		done
	fi
	lib_idle_sessions "$tmp" "$idle"

	"$LIB_BINDIR/pgbench" -R "$rate" -c "$clients" -j 2 -T "$((warmup + seconds))" >"$tmp/load.out" 2>&1 &
	loads=($!)
	if [ "$statements" -gt 0 ]; then
		"$LIB_BINDIR/pgbench" -n -M simple -f "$tmp/statements.sql" -R "$statement_rate" -c 2 -j 1 \
			-T "$((warmup + seconds))" >"$tmp/statements.out" 2>&1 &
		loads+=($!)
	fi
	sleep "$warmup"
	collector=$(q 'SELECT pid FROM chronicle.status()')
	sampler=$(q 'SELECT pid FROM chronicle.wait_sampler_status() WHERE running')
	bytes0=$(history_bytes)
	c0=$(cpu_ms "$collector")
	s0=$(cpu_ms "$sampler")
	t0=$(q 'SELECT clock_timestamp()')
	w0=$(date +%s.%N)
	wait "${loads[@]}"
	w1=$(date +%s.%N)
	c1=$(cpu_ms "$collector")
	s1=$(cpu_ms "$sampler")
	t1=$(q 'SELECT clock_timestamp()')
	bytes1=$(history_bytes)
	tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$tmp/load.out")
	entries=$(q "SELECT count(*) FROM pg_stat_statements")
	q "SELECT format('%-12s %-9s %5s %7s %7s %7s %8s %8s %8s %7s %7s %6s %7s',
	                 '$dim', '$value', count(*),
	                 round(percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms)::numeric, 2),
	                 round(percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms)::numeric, 2),
	                 round(max(duration_ms)::numeric, 2),
	                 round(avg(rows_written), 1), round(avg(wal_bytes)),
	                 round(($bytes1 - $bytes0) / ($w1 - $w0)),
	                 round(($c1 - $c0) / ($w1 - $w0), 2), round(($s1 - $s0) / ($w1 - $w0), 2),
	                 round(${tps:-0}), $entries)
	     FROM chronicle.snapshot
	    WHERE collector = 'worker' AND ts BETWEEN '$t0' AND '$t1'"
)

printf '\n%-12s %-9s %5s %7s %7s %7s %8s %8s %8s %7s %7s %6s %7s\n' \
	dimension level snaps 'p50 ms' 'p99 ms' 'max ms' rows/snap 'WAL B' 'hist B/s' 'coll ms' 'samp ms' tps entries
for dim in $dimensions; do
	case $dim in
	statements) levels=${BENCH_STATEMENTS_LEVELS:-0 1000 5000} ;;
	databases) levels=${BENCH_DATABASE_LEVELS:-0 30 100} ;;
	connections) levels=${BENCH_CONNECTION_LEVELS:-100/8 500/250 1000/500} ;;
	max_connections) levels=${BENCH_MAX_CONNECTIONS_LEVELS:-200 1000} ;;
	*)
		echo "unknown dimension: $dim (statements, databases, connections, max_connections)" >&2
		exit 1
		;;
	esac
	for v in $levels; do
		level "$dim" "$v"
	done
done
echo
echo "(WAL B: the collector's own WAL a snapshot, wal_bytes; hist B/s: the schema's growth, whole pages;"
echo " coll ms, samp ms: the collector's and the wait sampler's CPU, ms a second; entries: pg_stat_statements at the end)"
