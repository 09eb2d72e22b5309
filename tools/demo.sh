#!/usr/bin/env bash
# Record a short pgbench run with pg_chronicle on a throwaway cluster and
# print what was recorded: the client's summary of the run (tps, latency,
# WAL per transaction, top waits), per-second commits, WAL bytes, reads,
# writes and extends, the I/O of each backend type over the run and what
# the collector itself cost; ends with the path of the run's report
# (pg-chronicle report: one index.html, PNG and SVG per panel).
#
#   tools/demo.sh                          PostgreSQL 18, provisioned
#   PG_CONFIG=/path/pg_config tools/demo.sh   that server (must be writable for make install)
#
# Environment: DEMO_SECONDS (20), DEMO_CLIENTS (4), DEMO_SCALE (10),
# DEMO_INTERVAL (1s, chronicle.snapshot_interval), DEMO_REPORT (the report's
# directory, /tmp/pg_chronicle-demo-report), DEMO_KEEP=1 keeps the cluster's
# directory.
#
# initdb refuses to run as root: as root, this script installs what it
# needs, creates the unprivileged user "pgchronicle" (as tools/test.sh
# does) and runs itself as that user on a copy of the tree.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" = 0 ]; then
	"$LIB_ROOT/tools/install-deps.sh" >&2 || exit 1
fi
lib_as_pgchronicle tools/demo.sh "$@"

log() { echo "demo: $*" >&2; }
log "building and installing pg_chronicle"
lib_install
log "installed into $("$LIB_PG_CONFIG" --pkglibdir)"
bindir=$LIB_BINDIR

seconds=${DEMO_SECONDS:-20}
clients=${DEMO_CLIENTS:-4}
scale=${DEMO_SCALE:-10}
interval=${DEMO_INTERVAL:-1s}

LIB_KEEP=${DEMO_KEEP:-}
# pg_stat_statements too, as a benchmarker runs it: the report's statements
# and where the WAL came from (the later shared_preload_libraries line wins
# over lib_cluster_start's)
lib_tmp_cluster demo-data "shared_preload_libraries = 'pg_stat_statements, pg_chronicle'
chronicle.snapshot_interval = '$interval'
shared_buffers = '128MB'
track_io_timing = on
track_wal_io_timing = on"
tmp=$LIB_TMP
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

psql -c 'CREATE EXTENSION pg_stat_statements' -c 'CREATE EXTENSION pg_chronicle'
log "pgbench -i -s $scale"
"$bindir/pgbench" -i -q -s "$scale" >/dev/null 2>&1
log "setting up the client (tools/lib.sh: a venv with pip install ./client)"
venv=$(lib_client_venv)
report=${DEMO_REPORT:-/tmp/pg_chronicle-demo-report}
log "recording pgbench -T $seconds -c $clients as run \"demo\", one snapshot every $interval"
# bench: run_begin, pgbench with its per-transaction log, the log loaded,
# run_end, a one-screen summary, and the report of the run.
PATH="$bindir:$PATH" "$venv/bin/pg-chronicle" bench --label demo --report "$report" -- \
	-T "$seconds" -c "$clients" -j 2 -P 5
IFS='|' read -r t0 t1 < <(psql -At -F '|' -c "SELECT run_from, run_to FROM chronicle.run_window('demo')")

psql -v t0="$t0" -v t1="$t1" <<'SQL'
\pset footer off
\echo
\echo '== Recorded: per snapshot interval (chronicle.timeline(); rates per second, all backends for I/O)'
SELECT to_char(interval_end AT TIME ZONE 'UTC', 'HH24:MI:SS.MS') AS "time (UTC)",
       round(commits_per_s) AS "commits/s",
       round(wal_bytes_per_s / 1024) AS "WAL kB/s",
       round(wal_fpi_per_s) AS "FPI/s",
       round(reads_per_s) AS "reads/s",
       round(writes_per_s) AS "writes/s",
       round(extends_per_s) AS "extends/s"
  FROM chronicle.timeline(:'t0', :'t1', waits => false)
 ORDER BY interval_end;

\echo
\echo '== I/O by backend type and object over the run (chronicle.io_run_totals())'
SELECT backend_type, object,
       sum(reads) AS reads, sum(writes) AS writes, sum(extends) AS extends,
       sum(hits) AS hits, sum(evictions) AS evictions, sum(fsyncs) AS fsyncs
  FROM chronicle.io_run_totals('demo')
 GROUP BY backend_type, object
HAVING coalesce(sum(reads), 0) + coalesce(sum(writes), 0) + coalesce(sum(extends), 0)
     + coalesce(sum(hits), 0) + coalesce(sum(fsyncs), 0) > 0
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
log "the report of the run: $report/index.html"
