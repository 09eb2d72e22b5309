#!/usr/bin/env bash
# The collector's snapshot time, this tree against another commit, side by
# side (docs/storage.md, "Snapshot time"):
#
#   PG_CONFIG=/path/pg_config BENCH_BASE_PG_CONFIG=/other/pg_config bench/snapshot_ab.sh
#
# This tree is built and installed into the PostgreSQL of PG_CONFIG, the
# commit BENCH_BASE (default main, from the tree's git history) into that
# of BENCH_BASE_PG_CONFIG: two installations of the same server version.
# Each gets a cluster set up as bench/storage.sh sets its own (shared_buffers
# 128MB, pg_stat_statements loaded and created, BENCH_IDLE idle sessions,
# every chronicle source at its default, BENCH_CONF added, and to the base's
# alone BENCH_BASE_CONF: with BENCH_BASE=HEAD, what a setting costs), and
# both run all along.  The load of bench/storage.sh (pgbench TPC-B
# -R BENCH_RATE -c BENCH_CLIENTS, lib_bench_load) runs on one cluster at a
# time: BENCH_WARMUP seconds on each first, then BENCH_PAIRS pairs of
# BENCH_PAIR_SECONDS windows, which of the two goes first alternating, so
# that the machine's other work (noise, drift) falls on both.  Prints, per
# window, p50 / p99 of the worker's chronicle.snapshot.duration_ms; per
# pair, this / base of each; and the medians.
set -euo pipefail
. "$(dirname "$0")/../tools/lib.sh"
lib_as_pgchronicle bench/snapshot_ab.sh "$@"
base_ref=${BENCH_BASE:-main}
base_config=${BENCH_BASE_PG_CONFIG:?set BENCH_BASE_PG_CONFIG to a second installation of the server}
lib_install
bindir=$LIB_BINDIR
[ "$("$base_config" --version)" = "$("$LIB_PG_CONFIG" --version)" ] ||
	{ echo "PG_CONFIG and BENCH_BASE_PG_CONFIG are different versions" >&2; exit 1; }
[ "$("$base_config" --bindir)" != "$bindir" ] ||
	{ echo "BENCH_BASE_PG_CONFIG must be another installation than PG_CONFIG" >&2; exit 1; }

lib_bench_load
warmup=${BENCH_WARMUP:-60}
idle=${BENCH_IDLE:-100}
pairs=${BENCH_PAIRS:-6}
pair_seconds=${BENCH_PAIR_SECONDS:-60}

tmp=$(mktemp -d /tmp/pg_chronicle-bench-ab.XXXXXX)
[ "$(id -u)" = 0 ] && chown pgchronicle "$tmp"
cleanup() {
	lib_idle_stop
	lib_cluster_stop "$tmp/this" "$bindir" immediate
	lib_cluster_stop "$tmp/base" "$("$base_config" --bindir)" immediate
	rm -rf "$tmp"
}
trap cleanup EXIT

mkdir "$tmp/src"
git -C "$LIB_ROOT" archive "$base_ref" | tar -C "$tmp/src" -xf -
base_commit=$(git -C "$LIB_ROOT" rev-parse --short "$base_ref")
(cd "$tmp/src" && lib_build_install "$base_config")

# side NAME: the environment of cluster NAME (this, base) for psql and pgbench.
conf="shared_preload_libraries = 'pg_stat_statements, pg_chronicle'
shared_buffers = '128MB'
max_connections = $((idle + clients + 20))
${BENCH_CONF:-}"
declare -A port bin
for s in this base; do
	if [ "$s" = this ]; then bin[$s]=$bindir; else bin[$s]=$("$base_config" --bindir); fi
	port[$s]=$(lib_free_port)
	c=$conf
	[ "$s" = base ] && c+=$'\n'${BENCH_BASE_CONF:-}
	lib_cluster_start "$tmp/$s" "${bin[$s]}" "${port[$s]}" "$c"
	"$LIB_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION pg_stat_statements' \
		-c 'CREATE EXTENSION pg_chronicle'
	"$LIB_BINDIR/pgbench" -i -q -s "$scale" >/dev/null 2>&1
	lib_idle_sessions "$tmp/$s" "$idle"
done
side() {
	export PGHOST=$tmp/$1 PGPORT=${port[$1]}
	LIB_BINDIR=${bin[$1]}
}
q() { "$LIB_BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }

echo "PostgreSQL: $("$LIB_PG_CONFIG" --version); cassert: $(q 'SHOW debug_assertions')"
echo "machine: $(nproc) cores, $(uname -r); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "this: $(git -C "$LIB_ROOT" rev-parse --short HEAD)$(git -C "$LIB_ROOT" diff --quiet HEAD -- src sql 2>/dev/null || echo ' + changes') ($LIB_PG_CONFIG)"
echo "base: $base_ref $base_commit ($base_config)"
echo "load: pgbench TPC-B -s $scale -R $rate -c $clients -j 2 on one cluster at a time, $idle idle sessions on each, shared_buffers 128MB, pg_stat_statements loaded"
[ -n "${BENCH_CONF:-}" ] && echo "extra settings: $BENCH_CONF"
[ -n "${BENCH_BASE_CONF:-}" ] && echo "base only: $BENCH_BASE_CONF"

# window NAME SECONDS: the load on NAME for SECONDS; prints "p50 p99 n" of
# its worker's snapshots in that time.
window() {
	local t0 t1
	side "$1"
	t0=$(q 'SELECT clock_timestamp()')
	"$LIB_BINDIR/pgbench" -R "$rate" -c "$clients" -j 2 -T "$2" >/dev/null 2>&1
	t1=$(q 'SELECT clock_timestamp()')
	q "SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms)::numeric, 3),
	          round(percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms)::numeric, 3),
	          count(*)
	     FROM chronicle.snapshot
	    WHERE collector = 'worker' AND ts BETWEEN '$t0' AND '$t1'" | tr '|' ' '
}

echo
echo "== warm-up: $warmup s of load on each (the key dictionary fills)"
window base "$warmup" >/dev/null
window this "$warmup" >/dev/null

echo "== $pairs pairs of $pair_seconds s windows, snapshot time (chronicle.snapshot.duration_ms, ms)"
printf '%-6s %-6s %8s %8s %5s   %8s %8s %5s   %10s %10s\n' pair first "base p50" "p99" n "this p50" "p99" n "p50 ratio" "p99 ratio"
: >"$tmp/pairs"
for i in $(seq 1 "$pairs"); do
	if [ $((i % 2)) = 1 ]; then
		first=base; b=$(window base "$pair_seconds"); t=$(window this "$pair_seconds")
	else
		first=this; t=$(window this "$pair_seconds"); b=$(window base "$pair_seconds")
	fi
	read -r b50 b99 bn <<<"$b"
	read -r t50 t99 tn <<<"$t"
	echo "$b50 $b99 $t50 $t99" >>"$tmp/pairs"
	awk -v i="$i" -v f="$first" -v b50="$b50" -v b99="$b99" -v bn="$bn" \
		-v t50="$t50" -v t99="$t99" -v tn="$tn" 'BEGIN {
		printf "%-6d %-6s %8.3f %8.3f %5d   %8.3f %8.3f %5d   %10.3f %10.3f\n",
			i, f, b50, b99, bn, t50, t99, tn, t50 / b50, t99 / b99 }'
done
# medians of each column and of the per-pair ratios
awk 'function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	{ b50[NR] = $1; b99[NR] = $2; t50[NR] = $3; t99[NR] = $4; r50[NR] = $3 / $1; r99[NR] = $4 / $2 }
	END { printf "median over %d pairs: base p50 %.3f p99 %.3f, this p50 %.3f p99 %.3f; this/base p50 %.3f, p99 %.3f\n",
		NR, med(b50, NR), med(b99, NR), med(t50, NR), med(t99, NR), med(r50, NR), med(r99, NR) }' "$tmp/pairs"
