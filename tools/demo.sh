#!/usr/bin/env bash
# Record a short pgbench run with pg_chronicle on a throwaway cluster and
# print what was recorded: per-second commits, WAL bytes, reads, writes and
# extends, the I/O of each backend type over the run, and what the
# collector itself cost.
#
#   tools/demo.sh                          PostgreSQL 18, provisioned
#   PG_CONFIG=/path/pg_config tools/demo.sh   that server (must be writable for make install)
#
# Environment: DEMO_SECONDS (20), DEMO_CLIENTS (4), DEMO_SCALE (10),
# DEMO_INTERVAL (1s, chronicle.snapshot_interval), DEMO_KEEP=1 keeps the
# cluster's directory.
#
# initdb refuses to run as root: as root, this script installs what it
# needs, creates the unprivileged user "pgchronicle" (as tools/test.sh
# does) and runs itself as that user on a copy of the tree.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)

if [ "$(id -u)" = 0 ]; then
	"$src/tools/install-deps.sh" >&2 || exit 1
	exec "$src/tools/as-pgchronicle.sh" tools/demo.sh "$@"
fi

seconds=${DEMO_SECONDS:-20}
clients=${DEMO_CLIENTS:-4}
scale=${DEMO_SCALE:-10}
interval=${DEMO_INTERVAL:-1s}

log() { echo "demo: $*" >&2; }

cd "$src"
. tools/lib.sh
cfg=$(lib_pg_config)
bindir=$("$cfg" --bindir)
log "building and installing pg_chronicle into $("$cfg" --pkglibdir)"
lib_build_install "$cfg"

tmp=$(mktemp -d /tmp/pg_chronicle-demo-data.XXXXXX)
cleanup() {
	lib_cluster_stop "$tmp" "$bindir" immediate
	if [ -z "${DEMO_KEEP:-}" ]; then rm -rf "$tmp"; else log "cluster kept in $tmp"; fi
}
trap cleanup EXIT

lib_cluster_start "$tmp" "$bindir" "$(lib_free_port)" "chronicle.snapshot_interval = '$interval'
shared_buffers = '128MB'
track_io_timing = on
track_wal_io_timing = on"
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

psql -c 'CREATE EXTENSION pg_chronicle'
log "pgbench -i -s $scale"
"$bindir/pgbench" -i -q -s "$scale" >/dev/null 2>&1
t0=$(psql -At -c 'SELECT clock_timestamp()')
log "recording pgbench -T $seconds -c $clients, one snapshot every $interval"
"$bindir/pgbench" -T "$seconds" -c "$clients" -j 2 -P 5 2>&1 | sed 's/^/  pgbench: /' >&2
# The collector's two next snapshots close the run's last interval.
tend=$(psql -At -c 'SELECT clock_timestamp()')
lib_poll_sql "two snapshots after pgbench" 60 \
	"SELECT count(*) >= 2 FROM chronicle.snapshot WHERE collector = 'worker' AND ts > '$tend'"
t1=$(psql -At -c 'SELECT clock_timestamp()')

psql -v t0="$t0" -v t1="$t1" <<'SQL'
\pset footer off
\echo
\echo '== Recorded: per snapshot interval (rates per second; all backends for I/O)'
-- The value of a key at a snapshot is its latest row at or before it in the
-- same segment (history is sparse); deltas with lag() within a segment.
WITH s AS (
	SELECT ts, segment FROM chronicle.snapshot
	 WHERE collector = 'worker' AND ts BETWEEN :'t0' AND :'t1'),
db AS (
	SELECT s.ts, h.xact_commit, h.xact_rollback FROM s CROSS JOIN LATERAL (
		SELECT xact_commit, xact_rollback FROM chronicle.database_history h
		 WHERE h.datname = current_database() AND h.ts <= s.ts AND h.ts >= s.segment
		 ORDER BY h.ts DESC LIMIT 1) h),
wal AS (
	SELECT s.ts, h.wal_bytes, h.wal_fpi FROM s CROSS JOIN LATERAL (
		SELECT wal_bytes, wal_fpi FROM chronicle.wal_history h
		 WHERE h.ts <= s.ts AND h.ts >= s.segment ORDER BY h.ts DESC LIMIT 1) h),
keys AS (
	SELECT DISTINCT backend_type, object, context FROM chronicle.io_history
	 WHERE ts >= (SELECT min(segment) FROM s)),
io AS (
	SELECT s.ts, sum(h.reads) AS reads, sum(h.writes) AS writes, sum(h.extends) AS extends
	  FROM s CROSS JOIN keys k CROSS JOIN LATERAL (
		SELECT reads, writes, extends FROM chronicle.io_history h
		 WHERE h.backend_type = k.backend_type AND h.object = k.object
		   AND h.context = k.context AND h.ts <= s.ts AND h.ts >= s.segment
		 ORDER BY h.ts DESC LIMIT 1) h
	 GROUP BY s.ts),
v AS (
	SELECT s.ts, s.segment,
	       extract(epoch FROM s.ts - lag(s.ts) OVER w) AS secs,
	       db.xact_commit - lag(db.xact_commit) OVER w AS commits,
	       db.xact_rollback - lag(db.xact_rollback) OVER w AS rollbacks,
	       wal.wal_bytes - lag(wal.wal_bytes) OVER w AS wal_bytes,
	       wal.wal_fpi - lag(wal.wal_fpi) OVER w AS wal_fpi,
	       io.reads - lag(io.reads) OVER w AS reads,
	       io.writes - lag(io.writes) OVER w AS writes,
	       io.extends - lag(io.extends) OVER w AS extends
	  FROM s JOIN db USING (ts) JOIN wal USING (ts) JOIN io USING (ts)
	WINDOW w AS (PARTITION BY s.segment ORDER BY s.ts))
SELECT to_char(ts AT TIME ZONE 'UTC', 'HH24:MI:SS.MS') AS "time (UTC)",
       round(commits / secs) AS "commits/s",
       round(wal_bytes / secs / 1024) AS "WAL kB/s",
       round(wal_fpi / secs) AS "FPI/s",
       round(reads / secs) AS "reads/s",
       round(writes / secs) AS "writes/s",
       round(extends / secs) AS "extends/s"
  FROM v WHERE secs IS NOT NULL ORDER BY ts;

\echo
\echo '== I/O by backend type and object over the run (pg_stat_io, first to last snapshot)'
WITH s AS (
	SELECT min(ts) AS t_first, max(ts) AS t_last, min(segment) AS segment
	  FROM chronicle.snapshot WHERE collector = 'worker' AND ts BETWEEN :'t0' AND :'t1'),
keys AS (
	SELECT DISTINCT backend_type, object, context FROM chronicle.io_history, s
	 WHERE ts >= s.segment),
at AS (
	SELECT k.backend_type, k.object, k.context, f.reads AS r0, f.writes AS w0,
	       f.extends AS e0, f.hits AS h0, f.evictions AS ev0, f.fsyncs AS fs0,
	       l.reads AS r1, l.writes AS w1, l.extends AS e1, l.hits AS h1,
	       l.evictions AS ev1, l.fsyncs AS fs1
	  FROM keys k CROSS JOIN s
	  CROSS JOIN LATERAL (
		SELECT * FROM chronicle.io_history h
		 WHERE (h.backend_type, h.object, h.context) = (k.backend_type, k.object, k.context)
		   AND h.ts <= s.t_first AND h.ts >= s.segment ORDER BY h.ts DESC LIMIT 1) f
	  CROSS JOIN LATERAL (
		SELECT * FROM chronicle.io_history h
		 WHERE (h.backend_type, h.object, h.context) = (k.backend_type, k.object, k.context)
		   AND h.ts <= s.t_last AND h.ts >= s.segment ORDER BY h.ts DESC LIMIT 1) l)
SELECT backend_type, object,
       sum(r1 - r0) AS reads, sum(w1 - w0) AS writes, sum(e1 - e0) AS extends,
       sum(h1 - h0) AS hits, sum(ev1 - ev0) AS evictions, sum(fs1 - fs0) AS fsyncs
  FROM at GROUP BY backend_type, object
HAVING coalesce(sum(r1 - r0), 0) + coalesce(sum(w1 - w0), 0) + coalesce(sum(e1 - e0), 0)
     + coalesce(sum(h1 - h0), 0) + coalesce(sum(fs1 - fs0), 0) > 0
 ORDER BY backend_type, object;

\echo
\echo '== What the recording cost (chronicle.status(), chronicle.snapshot)'
SELECT snapshots, ticks_due, ticks_missed, snapshot_errors AS errors,
       round(snapshot_ms_p50::numeric, 3) AS "ms p50", round(snapshot_ms_p99::numeric, 3) AS "ms p99",
       round(snapshot_ms_max::numeric, 3) AS "ms max",
       round(wal_bytes_per_snapshot::numeric) AS "WAL bytes/snapshot",
       rows_written
  FROM chronicle.status();
SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) AS "on disk (all partitions of 3 days, mostly empty pages)",
       (SELECT count(*) FROM chronicle.snapshot) AS "snapshots stored"
  FROM pg_class c
 WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relkind = 'r';
SQL
echo
log "done (server log: $tmp/server.log)"
