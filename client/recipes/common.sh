# Shared by the recipes (sourced): settings, runs and the final comparison.
#
# Environment (all optional):
#   PGHOST, PGPORT, PGUSER, PGDATABASE ...  the server (libpq's variables);
#                     pgbench and psql use them too
#   RECIPE_OUT        folder of the comparison report (default ./<recipe>-<tag>)
#   RECIPE_TAG        suffix of the run labels (default: the UTC time)
#   RECIPE_SCALE      pgbench scale; if set, pgbench -i -s RECIPE_SCALE first
#                     (default: use the tables there are)
#   RECIPE_TIME       seconds per run (each recipe has its default)
#   RECIPE_TRIALS     trials per configuration (default 3), interleaved:
#                     A#1 B#1 A#2 B#2 ... (see docs/client.md#trials)
#   RECIPE_CLIENTS    pgbench clients (each recipe has its default)
#   PG_CHRONICLE      the client command (default: pg-chronicle; from a
#                     checkout: "python3 -m pg_chronicle" in client/)
#   PGBENCH, PSQL     the programs (default: in PATH)
set -euo pipefail

read -ra PGC <<<"${PG_CHRONICLE:-pg-chronicle}"
PSQL=${PSQL:-psql}
PGBENCH=${PGBENCH:-pgbench}
export PGBENCH
tag=${RECIPE_TAG:-$(date -u +%Y%m%d-%H%M%S)}
trials=${RECIPE_TRIALS:-3}
if ! [[ $trials =~ ^[1-9][0-9]*$ ]]; then
	echo "recipe: RECIPE_TRIALS wants a number of 1 or more, got '$trials'" >&2
	exit 2
fi
changed=()

say() { printf '\n=== %s\n' "$*" >&2; }

sql() { "$PSQL" -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }

# set_setting NAME VALUE: ALTER SYSTEM and reload; reset when the recipe ends.
set_setting() {
	say "$1 = $2"
	sql "ALTER SYSTEM SET $1 = '$2'" && sql "SELECT pg_reload_conf()" >/dev/null
	[[ " ${changed[*]} " == *" $1 "* ]] || changed+=("$1")
	# a reload is asynchronous: wait until this session's new backends see it
	for _ in $(seq 1 100); do
		[ "$(sql "SHOW $1")" = "$2" ] && return 0
		sleep 0.1
	done
	echo "recipe: $1 did not become $2 after the reload" >&2
	return 1
}

restore_settings() {
	local n
	for n in "${changed[@]}"; do
		sql "ALTER SYSTEM RESET $n" || true
	done
	[ ${#changed[@]} -eq 0 ] || sql "SELECT pg_reload_conf()" >/dev/null || true
}

# at_exit COMMAND: run COMMAND (eval'd) when the recipe ends, also on failure
# or Ctrl-C, latest first, before the settings are reset.
exit_commands=()
at_exit() { exit_commands=("$1" "${exit_commands[@]}"); }
on_exit() {
	local c
	for c in "${exit_commands[@]}"; do
		eval "$c" || true
	done
	restore_settings
}
trap on_exit EXIT

# start_proxy VAR DELAY_MS: a delay_proxy.py in front of the server (stopped
# when the recipe ends); sets VAR to the port it listens on (127.0.0.1),
# after checking that a query goes through it.  The server:
# PGHOST:PGPORT when PGHOST is a host name, else its Unix socket (PGHOST or
# the server's first unix_socket_directories).
start_proxy() {
	local target dir port ready pid
	port=$(sql "SHOW port")
	if [ -n "${PGHOST:-}" ] && [[ $PGHOST != /* ]]; then
		target="$PGHOST:$port"
	else
		dir=${PGHOST:-$(sql "SELECT split_part(current_setting('unix_socket_directories'), ',', 1)")}
		target="$dir/.s.PGSQL.$port"
	fi
	ready=$(mktemp)
	rm -f "$ready"
	"${PYTHON:-python3}" "$(dirname "${BASH_SOURCE[0]}")/delay_proxy.py" \
		--delay-ms "$2" --target "$target" --ready-file "$ready" >/dev/null &
	pid=$!
	at_exit "kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f '$ready'"
	for _ in $(seq 1 100); do
		if [ -s "$ready" ]; then
			printf -v "$1" '%s' "$(cat "$ready")"
			say "proxy to $target, one-way delay $2 ms: 127.0.0.1:${!1}"
			PGHOST=127.0.0.1 PGPORT=${!1} sql "SELECT 1" >/dev/null
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "recipe: the delay proxy did not start" >&2
	return 1
}

# The project's own builds, as tools/provision-pg.sh leaves them.
install=${XDG_CACHE_HOME:-$HOME/.cache}/pg_chronicle/install

# provisioned_config VERSION: the pg_config of the provisioned build of
# VERSION (not its -release nor -valgrind variants); fails when there is none.
provisioned_config() {
	local d
	for d in "$install"/pg"$1"-*; do
		[[ $d == *-release || $d == *-valgrind ]] && continue
		[ -x "$d/bin/pg_config" ] && { echo "$d/bin/pg_config"; return 0; }
	done
	return 1
}

# check_build PG_CONFIG WHAT: exits (2) unless PG_CONFIG is a pg_config with
# pg_chronicle installed; WHAT says which variable names it, for the message.
check_build() {
	if [ -z "$1" ] || [ ! -x "$1" ]; then
		echo "recipe: no build ($2; default: tools/provision-pg.sh's builds under $install)" >&2
		exit 2
	fi
	if [ ! -f "$("$1" --sharedir)/extension/pg_chronicle.control" ]; then
		echo "recipe: pg_chronicle is not installed in $("$1" --sharedir) (make PG_CONFIG=$1 install)" >&2
		exit 2
	fi
}

# new_cluster DIR BINDIR: initdb into DIR/data and start it on a socket in
# DIR, port 5432, with pg_chronicle and pg_stat_statements preloaded and
# created in postgres, everything else at the build's defaults; stopped
# when the recipe ends if still running.
new_cluster() {
	local dir=$1 bin=$2
	"$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync >/dev/null
	cat >>"$dir/data/postgresql.conf" <<-EOF
		port = 5432
		listen_addresses = ''
		unix_socket_directories = '$dir'
		shared_preload_libraries = 'pg_chronicle,pg_stat_statements'
		chronicle.database = 'postgres'
	EOF
	"$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
	at_exit "[ ! -f '$dir/data/postmaster.pid' ] || '$bin/pg_ctl' -D '$dir/data' -m fast stop >/dev/null"
	PGHOST=$dir PGPORT=5432 PGUSER=postgres PGDATABASE=postgres PSQL=$bin/psql \
		sql "CREATE EXTENSION pg_stat_statements; CREATE EXTENSION pg_chronicle" >/dev/null
}

init_pgbench() {
	if [ -n "${RECIPE_SCALE:-}" ]; then
		say "pgbench -i -s $RECIPE_SCALE"
		"$PGBENCH" -i -q -s "$RECIPE_SCALE" >&2
	fi
}

# bench LABEL [PGBENCH_ARGS...]: one recorded run, after a checkpoint so
# that every run starts with the same full-page-image debt.  A trial is
# labelled CONFIGURATION#k: the recipes run the trials of their
# configurations interleaved (for k: A#k, B#k), so that whatever drifts
# while they run (table growth, caches, the machine's other load) falls on
# every configuration alike instead of on whichever ran last.
# bench_meta: more --meta KEY=VALUE options of the runs that follow (what
# the configuration is when no setting says it).
bench_meta=()
bench() {
	local label=$1
	shift
	sql "CHECKPOINT"
	say "run $label: pgbench $*"
	"${PGC[@]}" bench --label "$label" --meta "recipe=$recipe" "${bench_meta[@]}" -- "$@"
}

# finish A B: the comparison in the terminal and the report of B against A
# (A and B: runs, or configurations of trials).
finish() {
	local a=$1 b=$2 out=${RECIPE_OUT:-./$recipe-$tag}
	say "compare $a $b"
	"${PGC[@]}" compare "$a" "$b"
	say "report $b --vs $a"
	"${PGC[@]}" report "$b" --vs "$a" -o "$out"
}

# import_and_finish A B: the archives of A#k and B#k (k = 1 .. trials, in
# the folder $archives, as bench --archive names them) imported into the
# repository (the PG* database), then finish A B.
import_and_finish() {
	local files=() k
	say "import into the repository ($(sql "SELECT current_database()"))"
	for k in $(seq 1 "$trials"); do
		files+=("$archives/${1}_$k.pgca" "$archives/${2}_$k.pgca")
	done
	"${PGC[@]}" import "${files[@]}"
	finish "$1" "$2"
}
