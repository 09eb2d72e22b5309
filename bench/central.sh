#!/usr/bin/env bash
# The central repository's costs (docs/central.md): what wal_level = logical
# costs a recording server, how late a snapshot reaches the central
# database, the CPU of the apply workers and walsenders, and the central
# side's bytes per server.
#
#   PG_CONFIG=/path/pg_config bench/central.sh      (as root or as a normal user)
#
# Clusters, each set up as bench/storage.sh sets its own (shared_buffers
# 128MB, pg_stat_statements loaded and created, pgbench -i -s BENCH_SCALE,
# BENCH_IDLE idle sessions, every chronicle source at its default, BENCH_CONF
# added): "replica" (wal_level = replica) and BENCH_SERVERS (default 2)
# recording servers s1, s2, ... (wal_level = logical, chronicle.publish()),
# all running all along; and "central" (pg_chronicle at its default, no load),
# which subscribes to them (chronicle.subscribe()).  All have
# track_commit_timestamp on (the lag's starting point, below).
#
# The load of bench/storage.sh (pgbench TPC-B -R BENCH_RATE -c BENCH_CLIENTS
# -j 2, lib_bench_load, in the database the history is recorded in,
# postgres, or in BENCH_LOAD_DB, a database of its own) runs on one cluster
# at a time, replica or s1, in pairs of BENCH_PAIR_SECONDS (default 30)
# windows whose order alternates, BENCH_PAIRS (default 2) pairs per stage,
# after BENCH_WARMUP (default 30) seconds on each.  No checkpoint but a
# CHECKPOINT on replica and s1 before each window (checkpoint_timeout 1h),
# and no autovacuum on the recording servers: every window's WAL has the
# same full-page images, of the pages first written after a checkpoint, and
# no vacuum of pgbench's tables falls in one window and not in another.
# Stage 0: no subscription; stage k (1 to BENCH_SERVERS): s1 to sk
# subscribed (sk just before the stage; BENCH_STAGES lists the stages run,
# default every one: "20" alone subscribes s1 to s20 and measures them
# together).  s2, s3, ... record with no load, BENCH_QUIET_IDLE idle
# sessions each (default BENCH_IDLE), no pgbench tables.  Per window:
#   - WAL of replica and s1: the server's (pg_current_wal_lsn() before and
#     after, per second) and the collector's own (chronicle.snapshot.wal_bytes
#     per snapshot);
#   - CPU (ms per second, /proc/PID/schedstat) of each subscribed server's
#     apply worker on the central (pg_stat_subscription), of its walsender
#     on its server (pg_stat_replication), and of every process of the
#     central (its postmaster's children: its own collector too);
#   - the apply lag of every snapshot committed in the window: from its
#     commit on its server (pg_xact_commit_timestamp(xmin) of its
#     chronicle.snapshot row) to its commit on the central, when the row is
#     visible there: an AFTER INSERT trigger on chronicle.archive_snapshot,
#     ENABLE ALWAYS (it fires in the apply worker), NOTIFYs, and a listener
#     (psycopg, the client's venv) notes the time each notification
#     arrives; PostgreSQL delivers a notification when the transaction that
#     sent it commits.  Same machine, same clock.
# Then per stage: WAL of logical against replica (the medians of the pairs'
# ratios), the apply CPU and lag by server, loaded or not; and the bytes of
# each server's rows on the central side per second; and the time of the
# central's rollups (chronicle._rollup_origin(), a pass a server every five
# minutes) a minute of a server's history.
set -euo pipefail
. "$(dirname "$0")/../tools/lib.sh"
lib_bench_start bench/central.sh "$@"
warmup=${BENCH_WARMUP:-30}
idle=${BENCH_IDLE:-100}
pairs=${BENCH_PAIRS:-2}
pair_seconds=${BENCH_PAIR_SECONDS:-30}
servers=${BENCH_SERVERS:-2}
stages=${BENCH_STAGES:-$(seq 0 "$servers")}
quiet_idle=${BENCH_QUIET_IDLE:-$idle}
db=${BENCH_LOAD_DB:-postgres}
venv=$(lib_client_venv)

tmp=$(mktemp -d /tmp/pg_chronicle-bench-central.XXXXXX)
[ "$(id -u)" = 0 ] && chown pgchronicle "$tmp"
sources=(replica)
for i in $(seq 1 "$servers"); do sources+=("s$i"); done
listener=
cleanup() {
	[ -n "$listener" ] && kill "$listener" 2>/dev/null
	lib_idle_stop
	for s in "${sources[@]}" central; do lib_cluster_stop "$tmp/$s" "$bindir" immediate; done
	rm -rf "$tmp"
}
trap cleanup EXIT

declare -A port
side() {
	export PGHOST=$tmp/$1 PGPORT=${port[$1]} PGUSER=postgres PGDATABASE=postgres
}
q() { "$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }
qon() { (side "$1" && q "$2"); }
conf="shared_preload_libraries = 'pg_stat_statements, pg_chronicle'
shared_buffers = '128MB'
max_connections = $((idle + clients + 20))
track_commit_timestamp = on
max_slot_wal_keep_size = '2GB'
checkpoint_timeout = '1h'
autovacuum = off
max_wal_size = '8GB'
${BENCH_CONF:-}"
for s in "${sources[@]}"; do
	port[$s]=$(lib_free_port)
	level=logical
	[ "$s" = replica ] && level=replica
	lib_cluster_start "$tmp/$s" "$bindir" "${port[$s]}" "$conf
wal_level = $level"
	q 'CREATE EXTENSION pg_stat_statements' >/dev/null
	q 'CREATE EXTENSION pg_chronicle' >/dev/null
	[ "$level" = logical ] && q 'SELECT chronicle.publish()' >/dev/null
	if [ "$s" = replica ] || [ "$s" = s1 ]; then
		if [ "$db" != postgres ]; then q "CREATE DATABASE $db" >/dev/null; fi
		"$bindir/pgbench" -i -q -s "$scale" "$db" >/dev/null 2>&1
		lib_idle_sessions "$tmp/$s" "$idle"
	elif [ "$quiet_idle" -gt 0 ]; then
		lib_idle_sessions "$tmp/$s" "$quiet_idle"
	fi
done
port[central]=$(lib_free_port)
# a replication origin a subscription: max_replication_slots counts them
# on 17, max_active_replication_origins from 18 on
origins="max_replication_slots = $((servers + 10))"
[ "$("$LIB_PG_CONFIG" --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/')" -ge 18 ] &&
	origins="max_active_replication_origins = $((servers + 10))"
lib_cluster_start "$tmp/central" "$bindir" "${port[central]}" "max_logical_replication_workers = $((servers + 2))
max_worker_processes = $((servers + 12))
$origins
wal_retrieve_retry_interval = '1s'
track_functions = 'pl'"
q 'CREATE EXTENSION pg_chronicle'
# its day partitions first (docs/central.md), then the trigger of the lag
lib_poll_sql "the central's day partitions" 60 \
	"SELECT count(*) >= 2 FROM pg_inherits WHERE inhparent = 'chronicle.history'::regclass"
"$bindir/psql" -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE FUNCTION public.bench_seen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('bench_seen', NEW.origin || ' ' || extract(epoch FROM NEW.ts));
	RETURN NULL;
END $$;
CREATE TRIGGER bench_seen AFTER INSERT ON chronicle.archive_snapshot
	FOR EACH ROW EXECUTE FUNCTION public.bench_seen();
ALTER TABLE chronicle.archive_snapshot ENABLE ALWAYS TRIGGER bench_seen;
SQL
cat >"$tmp/listen.py" <<'PY'
import sys
import time

import psycopg

conn = psycopg.connect(sys.argv[1], autocommit=True)
conn.execute("LISTEN bench_seen")
with open(sys.argv[2], "a", buffering=1) as out:
	for n in conn.notifies():
		out.write(f"{n.payload} {time.time():.6f}\n")
PY
: >"$tmp/seen"
"$venv/bin/python" "$tmp/listen.py" "host=$tmp/central port=${port[central]} user=postgres dbname=postgres" "$tmp/seen" &
listener=$!

echo "PostgreSQL: $("$LIB_PG_CONFIG" --version); cassert: $(qon replica 'SHOW debug_assertions')"
echo "date: $(date -u "+%Y-%m-%d %H:%M UTC"); machine: $(nproc) cores, $(uname -r)"
echo "tree: $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "load: pgbench TPC-B -s $scale -R $rate -c $clients -j 2 in database $db of replica or s1, one at a time, $idle idle sessions on replica and s1, shared_buffers 128MB, pg_stat_statements loaded, track_commit_timestamp on, checkpoint_timeout 1h, autovacuum off, a CHECKPOINT before each window"
echo "$servers logical servers (s2 and after: $quiet_idle idle sessions, no load), stages $(echo $stages), $pairs pairs of $pair_seconds s windows per stage, $warmup s warm-up"
[ -n "${BENCH_CONF:-}" ] && echo "extra settings: $BENCH_CONF"

# The processes whose CPU is read: "apply sN" and "walsender sN" of the
# subscribed servers, and "central" (every child of its postmaster).
subscribed=()
procs() {
	local s pid
	for s in "${subscribed[@]}"; do
		pid=$(qon central "SELECT pid FROM pg_stat_subscription WHERE subname = 'chronicle_$s' AND relid IS NULL")
		echo "apply $s ${pid:-0}"
		pid=$(qon "$s" "SELECT pid FROM pg_stat_replication WHERE application_name = 'chronicle_$s'")
		echo "walsender $s ${pid:-0}"
	done
}
# cpu_ns: "KIND SERVER PID NS" lines: the processes of procs(), and every
# child of the central's postmaster as "central all PID NS"
cpu_ns() {
	local kind s pid
	{
		procs
		ps --ppid "$(head -1 "$tmp/central/data/postmaster.pid")" -o pid= | sed 's/^ */central all /'
	} | while read -r kind s pid; do
		echo "$kind $s $pid $(cut -d' ' -f1 "/proc/$pid/schedstat" 2>/dev/null || echo -)"
	done
}
walsender_up() {
	[ -n "$(qon "$1" "SELECT pid FROM pg_stat_replication WHERE application_name = 'chronicle_$1'")" ]
}
wal_lsn() { qon "$1" 'SELECT pg_current_wal_lsn() - $$0/0$$::pg_lsn'; }

# window STAGE PAIR NAME SECONDS: the load on NAME (replica or s1) for
# SECONDS; appends to $tmp/windows, $tmp/cpu.
: >"$tmp/windows"
: >"$tmp/cpu"
win=0
window() {
	local stage=$1 pair=$2 load=$3 secs=$4 t0 t1 w0r w0s w1r w1s tps c
	win=$((win + 1))
	qon replica CHECKPOINT; qon s1 CHECKPOINT
	cpu_ns >"$tmp/cpu0"
	w0r=$(wal_lsn replica); w0s=$(wal_lsn s1)
	t0=$(date +%s.%6N)
	tps=$(side "$load" && "$bindir/pgbench" -R "$rate" -c "$clients" -j 2 -T "$secs" "$db" 2>&1 |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p')
	t1=$(date +%s.%6N)
	w1r=$(wal_lsn replica); w1s=$(wal_lsn s1)
	cpu_ns >"$tmp/cpu1"
	for c in replica s1; do
		local wb snap
		if [ "$c" = replica ]; then wb=$((w1r - w0r)); else wb=$((w1s - w0s)); fi
		snap=$(qon "$c" "SELECT coalesce(round(avg(wal_bytes)), 0) || ' ' || count(*) FROM chronicle.snapshot
		                  WHERE collector = 'worker' AND ts BETWEEN to_timestamp($t0) AND to_timestamp($t1)")
		echo "$win $stage $pair $load $c $t0 $t1 $wb $snap ${tps:-0}" >>"$tmp/windows"
	done
	# ms of CPU per second of each process that ran all along the window
	# (the central's summed)
	join -j 1 <(awk '{ print $1 "/" $2 "/" $3, $4 }' "$tmp/cpu0" | sort) \
		<(awk '{ print $1 "/" $2 "/" $3, $4 }' "$tmp/cpu1" | sort) |
		awk -v w="$win" -v st="$stage" -v ld="$load" -v t0="$t0" -v t1="$t1" '
			$2 != "-" && $3 != "-" {
				split($1, k, "/"); ms = ($3 - $2) / 1e6 / (t1 - t0)
				if (k[1] == "central") central += ms
				else printf "%d %d %s %s %s %.3f\n", w, st, ld, k[1], k[2], ms }
			END { printf "%d %d %s central all %.3f\n", w, st, ld, central }' >>"$tmp/cpu"
}
# pairs_of STAGE: BENCH_PAIRS pairs, replica first in odd pairs
pairs_of() {
	local i
	for i in $(seq 1 "$pairs"); do
		if [ $((i % 2)) = 1 ]; then
			window "$1" "$i" replica "$pair_seconds"; window "$1" "$i" s1 "$pair_seconds"
		else
			window "$1" "$i" s1 "$pair_seconds"; window "$1" "$i" replica "$pair_seconds"
		fi
		echo "stage $1 pair $i done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	done
}

echo
echo "== warm-up: $warmup s of load on replica, then on s1 (the key dictionary fills)"
window warm 0 replica "$warmup"
window warm 0 s1 "$warmup"
: >"$tmp/windows"
: >"$tmp/cpu"
echo "load average before the windows: $(cut -d' ' -f1-3 /proc/loadavg)"
for k in $stages; do
	while [ "${#subscribed[@]}" -lt "$k" ]; do
		s=s$((${#subscribed[@]} + 1))
		origin=$(qon central "SELECT chronicle.subscribe('$s', 'host=$tmp/$s port=${port[$s]} dbname=postgres user=postgres')")
		subscribed+=("$s")
		(side central && lib_poll_sql "$s's first snapshot on the central" 60 \
			"SELECT EXISTS (SELECT FROM chronicle.archive_snapshot WHERE origin = $origin)
			    AND EXISTS (SELECT FROM pg_stat_subscription WHERE subname = 'chronicle_$s' AND pid IS NOT NULL)")
		lib_poll "$s's walsender" 30 walsender_up "$s"
		echo "$s subscribed: origin $origin"
	done
	if [ "$k" = 0 ]; then echo "== stage 0: no subscription"; else echo "== stage $k: s1 to s$k subscribed"; fi
	pairs_of "$k"
done
sleep 2
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

# the snapshots' commit times on their servers
: >"$tmp/commits"
for s in "${subscribed[@]}"; do
	qon "$s" "SELECT '$s', extract(epoch FROM ts), extract(epoch FROM pg_xact_commit_timestamp(xmin))
	            FROM chronicle.snapshot WHERE collector = 'worker'" | tr '|' ' ' >>"$tmp/commits"
done
kill "$listener"
listener=

side central
"$bindir/psql" -X -q -v ON_ERROR_STOP=1 -v tmp="$tmp" <<'SQL'
\pset footer off
CREATE TEMP TABLE win (win int, stage int, pair int, loaded text, cluster text, t0 numeric, t1 numeric,
                       wal bigint, snap_wal numeric, snaps int, tps numeric);
CREATE TEMP TABLE cpu (win int, stage int, loaded text, kind text, server text, ms_per_s numeric);
CREATE TEMP TABLE seen (origin int, ts numeric, seen numeric);
CREATE TEMP TABLE commits (server text, ts numeric, committed numeric);
\set f :tmp '/windows'
COPY win FROM :'f' (DELIMITER ' ');
\set f :tmp '/cpu'
COPY cpu FROM :'f' (DELIMITER ' ');
\set f :tmp '/seen'
COPY seen FROM :'f' (DELIMITER ' ');
\set f :tmp '/commits'
COPY commits FROM :'f' (DELIMITER ' ');
CREATE FUNCTION pg_temp.med(numeric[]) RETURNS numeric LANGUAGE sql AS
	$$ SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x)::numeric FROM unnest($1) x $$;

\echo
\echo 'windows: the load on one cluster; WAL of replica and s1 (the server''s per second, the collector''s per snapshot)'
SELECT w.stage, w.pair, w.loaded AS load, round(max(w.t1 - w.t0), 1) AS secs, max(w.tps) AS tps,
       max(w.wal / (w.t1 - w.t0)) FILTER (WHERE w.cluster = 'replica')::bigint AS "replica B/s",
       max(w.wal / (w.t1 - w.t0)) FILTER (WHERE w.cluster = 's1')::bigint AS "s1 B/s",
       max(w.snap_wal) FILTER (WHERE w.cluster = 'replica') AS "replica B/snap",
       max(w.snap_wal) FILTER (WHERE w.cluster = 's1') AS "s1 B/snap",
       max(w.snaps) FILTER (WHERE w.cluster = 's1') AS "s1 snaps"
  FROM win w GROUP BY w.win, w.stage, w.pair, w.loaded ORDER BY w.win;

\echo 'WAL of wal_level = logical (s1) against replica, per stage (0: no subscription): medians over the windows'
\echo 'with the load on that cluster, and the median of the pairs'' ratios (s1 loaded / replica loaded);'
\echo 'the same with neither loaded (the other cluster has the load: the recording alone)'
WITH l AS (
	SELECT stage, pair, cluster, loaded = cluster AS busy, wal / (t1 - t0) AS bps, snap_wal FROM win),
p AS (
	SELECT a.stage, a.busy, a.bps AS r_bps, b.bps AS s_bps, a.snap_wal AS r_snap, b.snap_wal AS s_snap
	  FROM l a JOIN l b ON a.stage = b.stage AND a.pair = b.pair AND a.busy = b.busy
	 WHERE a.cluster = 'replica' AND b.cluster = 's1')
SELECT stage, CASE WHEN busy THEN 'loaded' ELSE 'recording only' END AS "cluster",
       round(pg_temp.med(array_agg(r_bps))) AS "replica WAL B/s", round(pg_temp.med(array_agg(s_bps))) AS "logical WAL B/s",
       round(pg_temp.med(array_agg(s_bps / r_bps)), 3) AS "ratio",
       round(pg_temp.med(array_agg(r_snap))) AS "replica collector B/snap",
       round(pg_temp.med(array_agg(s_snap))) AS "logical collector B/snap",
       round(pg_temp.med(array_agg(s_snap / nullif(r_snap, 0))), 3) AS "ratio ",
       count(*) AS pairs
  FROM p GROUP BY stage, busy ORDER BY stage, busy DESC;

\echo 'CPU, ms per second (/proc/PID/schedstat): median, min and max over the windows of each stage, by'
\echo 'process and whether its server had the load (only s1 ever has it); central: every process of the'
\echo 'central cluster (its own recording included)'
SELECT stage, kind, server,
       CASE WHEN kind = 'central' THEN '' WHEN server = loaded THEN 'loaded' ELSE 'recording only' END AS "load",
       count(*) AS windows, round(pg_temp.med(array_agg(ms_per_s)), 2) AS "median ms/s",
       round(min(ms_per_s), 2) AS "min", round(max(ms_per_s), 2) AS "max"
  FROM cpu GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4;

\echo 'CPU of all apply workers together and per subscribed server, ms per second, median over the windows'
SELECT stage, loaded AS load, count(DISTINCT win) AS windows,
       round(pg_temp.med(array_agg(tot)), 2) AS "apply, all",
       round(pg_temp.med(array_agg(tot / stage)), 2) AS "apply per server",
       round(pg_temp.med(array_agg(central)), 2) AS "central, all",
       round(pg_temp.med(array_agg(ws)), 2) AS "walsenders, all"
  FROM (SELECT win, stage, loaded, sum(ms_per_s) FILTER (WHERE kind = 'apply') AS tot,
               sum(ms_per_s) FILTER (WHERE kind = 'central') AS central,
               sum(ms_per_s) FILTER (WHERE kind = 'walsender') AS ws
          FROM cpu WHERE stage > 0 GROUP BY win, stage, loaded) x
 GROUP BY stage, loaded ORDER BY stage, loaded;

\echo 'apply lag: a snapshot''s commit on its server to its commit on the central (the listener''s NOTIFY),'
\echo 'ms, of the snapshots committed in the windows, by stage and whether its server had the load'
CREATE TEMP TABLE lag AS
SELECT w.stage, c.server, c.server = w.loaded AS busy, (s.seen - c.committed) * 1000 AS ms, s.seen IS NULL AS missing
  FROM commits c
  JOIN chronicle.origin o ON o.server_name = c.server AND o.kind = 'subscription'
  JOIN (SELECT DISTINCT win, stage, loaded, t0, t1 FROM win) w
    ON c.committed BETWEEN w.t0 AND w.t1 AND substr(c.server, 2)::int <= w.stage
  LEFT JOIN seen s ON s.origin = o.origin_id AND s.ts = c.ts;
SELECT stage, CASE WHEN busy THEN 'loaded' ELSE 'recording only' END AS "server", count(*) AS snapshots,
       count(*) FILTER (WHERE missing) AS "not seen",
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) AS "p50 ms",
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1) AS "p99 ms",
       round(max(ms), 1) AS "max ms", round(min(ms), 1) AS "min ms"
  FROM lag GROUP BY GROUPING SETS ((stage, busy), (busy)) ORDER BY stage NULLS LAST, busy DESC;
\echo 'the same by server (all stages):'
SELECT server, CASE WHEN busy THEN 'loaded' ELSE 'recording only' END AS "load", count(*) AS snapshots,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) AS "p50 ms",
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1) AS "p99 ms",
       round(max(ms), 1) AS "max ms"
  FROM lag GROUP BY server, busy ORDER BY server, busy DESC;
\echo 'the central''s storage per server: bytes a snapshot of its rows stored there (pg_column_size, its'
\echo 'TOAST compressed included, MAXALIGNed, + 4 B line pointer; not the indexes nor the pages'' free space), of'
\echo 'the snapshots of the windows, by whether its server had the load'
SELECT o.server_name AS server, CASE WHEN o.server_name = w.loaded THEN 'loaded' ELSE 'recording only' END AS "load",
       t.tbl AS "table", sum(t.n) AS rows, round(sum(t.b) / count(DISTINCT w.win) / avg(w.t1 - w.t0)) AS "B/s"
  FROM (SELECT DISTINCT win, stage, loaded, t0, t1 FROM win) w
  JOIN chronicle.origin o ON o.kind = 'subscription' AND substr(o.server_name, 2)::int <= w.stage
 CROSS JOIN LATERAL (
	SELECT 'archive_history', count(*), sum((pg_column_size(h.*) + 7) / 8 * 8 + 4) FROM chronicle.archive_history h
	 WHERE h.origin = o.origin_id AND h.ts BETWEEN to_timestamp(w.t0) AND to_timestamp(w.t1)
	UNION ALL
	SELECT 'archive_snapshot', count(*), sum((pg_column_size(a.*) + 7) / 8 * 8 + 4) FROM chronicle.archive_snapshot a
	 WHERE a.origin = o.origin_id AND a.ts BETWEEN to_timestamp(w.t0) AND to_timestamp(w.t1)) t(tbl, n, b)
 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
\echo 'the central''s rollups: the passes of chronicle._rollup_origin() its housekeeper ran (every 5'
\echo 'minutes, one a server and one for its own recording), their time (track_functions), and the'
\echo 'minutes they rolled up (chronicle.rollup_minute, every origin)'
SELECT f.calls AS passes, round(f.total_time::numeric) AS ms,
       round((f.total_time / nullif(f.calls, 0))::numeric, 1) AS "ms a pass",
       m.minutes AS "minutes rolled up", round((f.total_time / nullif(m.minutes, 0))::numeric, 2) AS "ms a minute"
  FROM pg_stat_user_functions f,
       (SELECT count(*) AS minutes FROM (SELECT DISTINCT origin, ts FROM chronicle.rollup_minute) d) m
 WHERE f.schemaname = 'chronicle' AND f.funcname = '_rollup_origin';
\echo 'the central''s view of each server at the end (chronicle.servers):'
SELECT server_name, streaming, snapshot_age, transfer_lag FROM chronicle.servers ORDER BY origin;
SQL
