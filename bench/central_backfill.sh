#!/usr/bin/env bash
# What chronicle.subscribe(backfill => ...) costs for a server that recorded a
# one-hour run before the subscription (docs/central.md): the cluster of
# bench/report.sh (lib_bench_hour: one hour of 1 s history with every source
# on and its pgbench log, ~3.5 million transactions, the run bench-1h) with
# wal_level = logical publishes (chronicle.publish()); a second cluster, the
# central database, subscribes to it BENCH_REPS times (default 3), each time
# into a fresh extension (DROP and CREATE EXTENSION, the slot dropped), and
# prints the wall-clock seconds of the subscribe() call, which backfills the
# hour's snapshots and history (an hour per query: _publisher_backfill) and
# the run with its pgbench rows (read with the slot's snapshot:
# _publisher_prepare), the time of each of those two (track_functions), how
# long the publisher's snapshot was held (its DEBUG1 message), and the rows
# it stored.
#
#   PG_CONFIG=/path/to/pg_config bench/central_backfill.sh   (as root or a normal user)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/tools/lib.sh"
BENCH_HOUR_CONF="wal_level = logical" lib_bench_hour central-backfill 5621
pub_host=$PGHOST pub_port=$PGPORT
psql -c 'SELECT chronicle.publish()' >/dev/null

cdir=$dir-central
lib_cluster_stop "$cdir" "$LIB_BINDIR"
rm -rf "$cdir"
trap 'rm -rf "$out"; lib_cluster_stop "$cdir" "$LIB_BINDIR"; rm -rf "$cdir"; lib_bench_history_stop "$dir"' EXIT
lib_cluster_start "$cdir" "$LIB_BINDIR" $((PGPORT + 1)) "work_mem = 64MB
track_functions = all"
since=$(psql -h "$pub_host" -p "$pub_port" -At -c "SELECT ceil(extract(epoch FROM now() - min(ts)) / 86400) + 1 FROM chronicle.snapshot")
echo "== chronicle.subscribe() with a backfill of $since days (the generated hour on $day), $reps times"
for i in $(seq "$reps"); do
	psql -c 'DROP EXTENSION IF EXISTS pg_chronicle CASCADE' -c 'CREATE EXTENSION pg_chronicle' \
		-c 'SELECT pg_stat_reset()' >/dev/null
	lib_poll_sql "a snapshot of the central's own" 60 "SELECT count(*) > 0 FROM chronicle.snapshot"
	s=$(date +%s.%N)
	held=$(psql -c 'SET client_min_messages = debug1' -c "SELECT chronicle.subscribe('src',
	           'host=$pub_host port=$pub_port dbname=postgres user=postgres', backfill => '$since days')" 2>&1 \
		| sed -n "s/.*the publisher's snapshot was held for \([0-9.]*\) s.*/\1/p")
	e=$(date +%s.%N)
	printf 'run %d: %.2f s (%s; the publisher'"'"'s snapshot held %s s); stored: %s\n' "$i" "$(echo "$e - $s" | bc)" "$(psql -At -c "
		SELECT string_agg(format('%s %s s', funcname, round((total_time / 1000)::numeric, 2)), ', ' ORDER BY funcname)
		  FROM pg_stat_user_functions WHERE funcname IN ('_publisher_prepare', '_publisher_backfill')")" "$held" "$(psql -At -F ', ' -c "
		SELECT (SELECT count(*) FROM chronicle.archive_snapshot) || ' snapshots',
		       (SELECT count(*) FROM chronicle.archive_history) || ' history rows',
		       (SELECT count(*) FROM chronicle.run WHERE origin <> 0) || ' runs',
		       (SELECT count(*) FROM chronicle.app_transaction) || ' pgbench transactions'")"
	psql -c "SELECT chronicle.unsubscribe('src')" >/dev/null
done
