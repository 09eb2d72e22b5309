# Shell helpers of tools/test.sh, tools/demo.sh and bench/*.sh: build and
# install, a free port, a temporary cluster with pg_chronicle preloaded, and
# polls instead of fixed sleeps.  Source it:
#
#   . "$src/tools/lib.sh"
#
# A cluster lives in a directory of its own: DIR/data, its socket in DIR,
# its log in DIR/server.log.  As root, the server's programs run as user
# "pgchronicle" (initdb refuses root); that user must be able to write DIR.

LIB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# lib_pg_config: $PG_CONFIG, or else the pg_config of PostgreSQL 18 as
# tools/provision-pg.sh provisions it.
lib_pg_config() {
	if [ -n "${PG_CONFIG:-}" ]; then
		echo "$PG_CONFIG"
	else
		"$LIB_ROOT/tools/provision-pg.sh" 18 | tail -n 1
	fi
}

# lib_as_pgchronicle SCRIPT [ARGS...]: as root, run SCRIPT (relative to the
# tree) instead as user pgchronicle on a copy of the tree
# (tools/as-pgchronicle.sh), and never return; as anyone else, return.
lib_as_pgchronicle() {
	if [ "$(id -u)" = 0 ]; then
		exec "$LIB_ROOT/tools/as-pgchronicle.sh" "$@"
	fi
}

# lib_install: a clean build of the tree installed into the server of
# lib_pg_config (lib_build_install, in the tree); sets LIB_PG_CONFIG and
# LIB_BINDIR to that server's pg_config and programs.
lib_install() {
	LIB_PG_CONFIG=$(lib_pg_config) || return 1
	LIB_BINDIR=$("$LIB_PG_CONFIG" --bindir)
	(cd "$LIB_ROOT" && lib_build_install "$LIB_PG_CONFIG")
}

# lib_run CMD...: CMD, as user pgchronicle when we are root.
lib_run() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u pgchronicle -- "$@"
	else
		"$@"
	fi
}

# lib_free_port: a TCP port nobody listens on now.
lib_free_port() {
	python3 - <<'PY' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
PY
}

# lib_client_venv: the Python client's venv (prints its directory):
# bookworm's python3 (3.11) with its system packages visible
# (python3-selenium), the client of this tree and its dependencies from PyPI.
lib_client_venv() {
	local venv=${XDG_CACHE_HOME:-$HOME/.cache}/pg_chronicle/venv-client
	if [ ! -x "$venv/bin/python" ]; then
		/usr/bin/python3 -m venv --system-site-packages "$venv" >&2 || return 1
	fi
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$LIB_ROOT/client[test]" >&2 ||
		return 1
	echo "$venv"
}

# lib_build_install PG_CONFIG: a clean build of the tree we are in,
# installed into that server.  Its output goes to build.log; on a failure
# the log is shown and the function fails.
lib_build_install() {
	local cfg=$1
	make -s clean PG_CONFIG="$cfg" >/dev/null 2>&1 || true
	if ! make -s PG_CONFIG="$cfg" >build.log 2>&1 ||
		! make -s PG_CONFIG="$cfg" install >>build.log 2>&1; then
		cat build.log >&2
		return 1
	fi
}

# lib_cluster_start DIR BINDIR PORT [CONF]: initdb DIR/data (superuser
# postgres), configure it (port, the socket in DIR, no TCP, pg_chronicle
# preloaded, then the lines of CONF) and start it.  Exports PGHOST, PGPORT,
# PGUSER and PGDATABASE (postgres) for the psql and pgbench that follow;
# LIB_BINDIR is BINDIR.
lib_cluster_start() {
	local dir=$1 bindir=$2 port=$3 conf=${4:-}
	mkdir -p "$dir"
	[ "$(id -u)" = 0 ] && chown pgchronicle "$dir"
	if ! lib_run "$bindir/initdb" -D "$dir/data" -U postgres --no-sync >"$dir/initdb.log" 2>&1; then
		cat "$dir/initdb.log" >&2
		return 1
	fi
	lib_run tee -a "$dir/data/postgresql.conf" >/dev/null <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$dir'
shared_preload_libraries = 'pg_chronicle'
$conf
CONF
	if ! lib_run "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null; then
		cat "$dir/server.log" >&2
		return 1
	fi
	export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=postgres
	LIB_BINDIR=$bindir
}

# lib_cluster_stop DIR BINDIR [MODE]: stop the cluster in DIR if it runs
# (MODE fast by default).
lib_cluster_stop() {
	local dir=$1 bindir=$2 mode=${3:-fast}
	[ -f "$dir/data/postmaster.pid" ] || return 0
	lib_run "$bindir/pg_ctl" -D "$dir/data" -m "$mode" -w stop >/dev/null 2>&1 || true
}

# lib_tmp_cluster NAME CONF: a throwaway cluster of the server lib_install
# installed into (LIB_BINDIR), started by lib_cluster_start with CONF on a
# free port, in a new directory /tmp/pg_chronicle-NAME.XXXXXX (LIB_TMP).
# At exit the command LIB_AT_EXIT (if set) runs, then the cluster is
# stopped (immediate) and its directory removed, unless LIB_KEEP is set.
lib_tmp_cluster() {
	LIB_TMP=$(mktemp -d "/tmp/pg_chronicle-$1.XXXXXX")
	trap lib_tmp_cluster_exit EXIT
	lib_cluster_start "$LIB_TMP" "$LIB_BINDIR" "$(lib_free_port)" "$2"
}
lib_tmp_cluster_exit() {
	[ -n "${LIB_AT_EXIT:-}" ] && $LIB_AT_EXIT
	lib_cluster_stop "$LIB_TMP" "$LIB_BINDIR" immediate
	if [ -z "${LIB_KEEP:-}" ]; then
		rm -rf "$LIB_TMP"
	else
		echo "cluster kept in $LIB_TMP" >&2
	fi
}

# lib_bench_load: the pgbench load of bench/collector.sh and
# bench/storage.sh, from the environment: sets rate (BENCH_RATE, 500
# transactions a second), seconds (BENCH_SECONDS, 60), clients
# (BENCH_CLIENTS, 8) and scale (BENCH_SCALE, 10).
lib_bench_load() {
	rate=${BENCH_RATE:-500}
	seconds=${BENCH_SECONDS:-60}
	clients=${BENCH_CLIENTS:-8}
	scale=${BENCH_SCALE:-10}
}

# lib_bench_start SCRIPT [ARGS...]: the start of a benchmark of the standard
# load (bench/storage.sh and the others): as root, SCRIPT runs again as user
# pgchronicle (lib_as_pgchronicle); the tree built and installed
# (lib_install), src and bindir set to the tree and the server's programs,
# and the load read from the environment (lib_bench_load).
lib_bench_start() {
	lib_as_pgchronicle "$@"
	lib_install
	src=$LIB_ROOT
	bindir=$LIB_BINDIR
	lib_bench_load
}

# lib_bench_cluster NAME [CONF]: the cluster of the standard load
# (bench/storage.sh, bench/rollup_catchup.sh), after lib_bench_load:
# lib_tmp_cluster NAME with pg_stat_statements and pg_chronicle preloaded,
# shared_buffers 128MB, connections for BENCH_IDLE (default 100) idle
# sessions and the load's clients, then CONF and BENCH_CONF; both
# extensions created and pgbench's tables of scale $scale.  Sets idle,
# tmp (LIB_TMP) and q() (psql -At of one statement, stopping at an error);
# lib_idle_stop at exit.
lib_bench_cluster() {
	idle=${BENCH_IDLE:-100}
	LIB_AT_EXIT=lib_idle_stop
	# The later shared_preload_libraries line wins over lib_cluster_start's.
	lib_tmp_cluster "$1" "shared_preload_libraries = 'pg_stat_statements, pg_chronicle'
shared_buffers = '128MB'
max_connections = $((idle + clients + 20))
${2:-}
${BENCH_CONF:-}"
	tmp=$LIB_TMP
	q() { "$LIB_BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }
	q 'CREATE EXTENSION pg_stat_statements'
	q 'CREATE EXTENSION pg_chronicle'
	"$LIB_BINDIR/pgbench" -i -q -s "$scale" >/dev/null 2>&1
}

# lib_bench_history DIR PORT CONF GEN DAY WHAT: the cluster of a benchmark over
# generated history (bench/analysis_bench.sh, bench/report.sh), in DIR on
# PORT, with $PG_CONFIG's programs (LIB_BINDIR).  Unless BENCH_REUSE is set:
# the tree built and installed, a new cluster with CONF (see
# lib_cluster_start), pg_chronicle created and the history generated by the
# SQL file GEN (psql -v day=DAY), saying that it generates WHAT and how
# long that took.  With
# BENCH_REUSE, the cluster a previous run left in DIR (BENCH_KEEP).
# Exports PGHOST, PGPORT, PGUSER and PGDATABASE either way.
lib_bench_history() {
	local dir=$1 port=$2 conf=$3 gen=$4 day=$5 what=$6 start
	LIB_BINDIR=$("${PG_CONFIG:?set PG_CONFIG}" --bindir)
	if [ -n "${BENCH_REUSE:-}" ]; then
		export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=postgres
		return 0
	fi
	(cd "$LIB_ROOT" && lib_build_install "$PG_CONFIG" && make -s clean PG_CONFIG="$PG_CONFIG") || return 1
	lib_cluster_stop "$dir" "$LIB_BINDIR"
	rm -rf "$dir"
	lib_cluster_start "$dir" "$LIB_BINDIR" "$port" "$conf" || return 1
	"$LIB_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION pg_chronicle' || return 1
	echo "== generating $what"
	start=$(date +%s)
	"$LIB_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -v day="$day" -f "$gen" || return 1
	echo "generated in $(($(date +%s) - start)) s"
}

# lib_bench_hour NAME PORT: lib_bench_history's cluster holding one hour of
# 1 s history with every source on and its pgbench log, the run bench-1h on
# day (bench/report_gen.sql): what bench/report.sh and bench/archive.sh time.
# Sets what both scripts use: dir (BENCH_DIR, default /tmp/NAME-bench), reps
# (BENCH_REPS, 3), py (PYTHON, python3), day (2025-01-01) and out (a new
# temporary folder; at exit it is removed and the cluster stopped, see
# lib_bench_history_stop); the cluster is on BENCH_PORT (default PORT), and
# psql() is LIB_BINDIR's, quiet, stopping at the first error.  BENCH_HOUR_CONF:
# lines added to the cluster's configuration.
lib_bench_hour() {
	dir=${BENCH_DIR:-/tmp/$1-bench}
	reps=${BENCH_REPS:-3}
	py=${PYTHON:-python3}
	day=2025-01-01
	out=$(mktemp -d "/tmp/$1-bench-out.XXXXXX")
	trap 'rm -rf "$out"; lib_bench_history_stop "$dir"' EXIT
	psql() { "$LIB_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
	lib_bench_history "$dir" "${BENCH_PORT:-$2}" "chronicle.enabled = off
shared_buffers = 512MB
work_mem = 64MB
max_wal_size = 8GB
max_parallel_workers_per_gather = 0
${BENCH_HOUR_CONF:-}" "$LIB_ROOT/bench/report_gen.sql" "$day" \
		"one hour of 1 s history and its pgbench log"
}

# lib_bench_history_stop DIR: stop and remove lib_bench_history's cluster,
# unless BENCH_KEEP is set (BENCH_REUSE=1 then times it again).
lib_bench_history_stop() {
	[ -n "${BENCH_KEEP:-}" ] && return 0
	lib_cluster_stop "$1" "$LIB_BINDIR"
	rm -rf "$1"
}

# lib_idle_sessions DIR N: N idle sessions on the cluster of PGHOST and
# PGPORT (psql of LIB_BINDIR, each waiting on its input: the FIFO DIR/idle,
# held open by a sleep), once pg_stat_activity shows them.  Their pids are
# added to LIB_IDLE_PIDS; lib_idle_stop ends them all.
LIB_IDLE_PIDS=()
lib_idle_sessions() {
	local dir=$1 n=$2
	mkfifo "$dir/idle"
	for _ in $(seq 1 "$n"); do
		"$LIB_BINDIR/psql" -X -q <"$dir/idle" >/dev/null 2>&1 &
		LIB_IDLE_PIDS+=($!)
	done
	sleep infinity >"$dir/idle" &
	LIB_IDLE_PIDS+=($!)
	lib_poll_sql "$n idle sessions" 60 \
		"SELECT count(*) >= $n FROM pg_stat_activity WHERE backend_type = 'client backend' AND state = 'idle'"
}
lib_idle_stop() {
	local p
	for p in "${LIB_IDLE_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	LIB_IDLE_PIDS=()
}

# lib_poll WHAT SECONDS CMD...: run CMD until it succeeds, at most SECONDS
# seconds (every 0.1 s); when it never does, say what was awaited and fail.
lib_poll() {
	local what=$1 seconds=$2 deadline
	shift 2
	deadline=$(($(date +%s) + seconds))
	until "$@"; do
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "timed out after ${seconds}s waiting for $what" >&2
			return 1
		fi
		sleep 0.1
	done
}

# lib_poll_sql WHAT SECONDS QUERY: lib_poll until QUERY prints t, on the
# cluster lib_cluster_start started last.
lib_poll_sql() {
	lib_poll "$1" "$2" lib_sql_true "$3"
}
lib_sql_true() {
	[ "$("$LIB_BINDIR/psql" -X -At -c "$1" 2>/dev/null)" = t ]
}
