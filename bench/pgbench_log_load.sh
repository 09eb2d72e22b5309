#!/usr/bin/env bash
# Loading a pgbench per-transaction log of LINES lines (default 10 million),
# server side (chronicle.load_pgbench_log, COPY) and client side
# (tools/pgbench-log-load, psql \copy), in rows per second.
#
#   PG_CONFIG=/path/to/pg_config bench/pgbench_log_load.sh
#   LINES=1000000 PORT=5603 REPEAT=2 bench/pgbench_log_load.sh   (PORT: a free one)
#
# Builds and installs nothing: pg_chronicle must be installed in PG_CONFIG's
# server.  Starts a throwaway cluster in a temporary directory (as user
# pgchronicle when run as root), generates the log synthetically (4 threads'
# files, 2 clients each, latencies 0.5-20 ms, one line per transaction as
# pgbench -l writes them), and loads it REPEAT times each way, alternating,
# each into a fresh run.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/tools/lib.sh"
PG_CONFIG=${PG_CONFIG:-pg_config}
LINES=${LINES:-10000000}
PORT=${PORT:-$(lib_free_port)}
REPEAT=${REPEAT:-2}

if [ "$(id -u)" = 0 ]; then
	exec runuser -u pgchronicle -- env PATH="$PATH" PG_CONFIG="$PG_CONFIG" LINES="$LINES" \
		PORT="$PORT" REPEAT="$REPEAT" bash "$0" "$@"
fi

bin=$("$PG_CONFIG" --bindir)
work=$(mktemp -d /tmp/chronicle-bench-log.XXXXXX)
trap 'lib_cluster_stop "$work" "$bin" immediate; rm -rf "$work"' EXIT

lib_cluster_start "$work" "$bin" "$PORT" "chronicle.database = 'postgres'
shared_buffers = '512MB'
max_wal_size = '8GB'
checkpoint_timeout = '30min'"
"$bin/psql" -X -q -c 'CREATE EXTENSION pg_chronicle'

# The log: 4 files (pgbench -j 4), LINES lines in all, time increasing.
per=$((LINES / 4))
for t in 0 1 2 3; do
	f="$work/pgbench_log.4242"
	[ $t -gt 0 ] && f="$f.$t"
	awk -v n="$per" -v t="$t" 'BEGIN {
		srand(42 + t); s = 1790000000; us = 0;
		for (i = 0; i < n; i++) {
			c = t * 2 + (i % 2);
			lat = 500 + int(rand() * 19500);
			us += 100 + int(rand() * 100);
			if (us >= 1000000) { s += int(us / 1000000); us = us % 1000000 }
			printf "%d %d %d 0 %d %d\n", c, int(i / 2), lat, s, us
		}
	}' > "$f"
done
echo "log: $LINES lines, $(du -ch "$work"/pgbench_log.4242* | tail -1 | cut -f1)"

secs() { date +%s.%N; }
for r in $(seq 1 "$REPEAT"); do
	t0=$(secs)
	"$bin/psql" -X -q -c "SELECT sum(lines) FROM chronicle.load_pgbench_log('server$r', '$work/pgbench_log.4242', create_run => true)" >/dev/null
	t1=$(secs)
	PATH="$bin:$PATH" "$src/tools/pgbench-log-load" -q -c "client$r" "$work/pgbench_log.4242"
	t2=$(secs)
	awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$LINES" -v r="$r" 'BEGIN {
		printf "round %d: server side %.1f s, %.0f rows/s; client side %.1f s, %.0f rows/s\n",
			r, b - a, n / (b - a), c - b, n / (c - b) }'
done
"$bin/psql" -X -A -t -c "SELECT 'rows loaded: ' || count(*) FROM chronicle.app_transaction"
t0=$(secs)
"$bin/psql" -X -q -c "SELECT count(*) FROM chronicle.app_intervals('2026-01-01', '2026-01-02')" >/dev/null
t1=$(secs)
"$bin/psql" -X -q -c "SELECT * FROM chronicle.app_summary('server1')" >/dev/null
t2=$(secs)
awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$LINES" 'BEGIN {
	printf "app_summary over %d transactions: %.1f s\n", n, c - b }'
