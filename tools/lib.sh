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
