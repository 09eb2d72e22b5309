#!/usr/bin/env bash
# The same pgbench on two PostgreSQL builds (17 against 18 by default), each
# in a fresh initdb, compared in a repository.
#
#   client/recipes/versions.sh
#
# RECIPE_PG_CONFIG_A and RECIPE_PG_CONFIG_B name the builds (their
# pg_config, pg_chronicle installed in both; default: the project's own, as
# tools/provision-pg.sh leaves them, ~/.cache/pg_chronicle/install/pg17-*
# and pg18-*).  Each gets a cluster of its own: initdb into a temporary
# folder, started on a socket there with pg_chronicle and
# pg_stat_statements preloaded and everything else at the build's defaults,
# pgbench -i -s RECIPE_SCALE (default 10).  Then RECIPE_TRIALS trials
# (default 3) of RECIPE_TIME seconds (default 60) with RECIPE_CLIENTS
# clients (default 8), interleaved (A#1 B#1 A#2 B#2 ...), each written to
# its run archive when it ends (bench --archive); the clusters are stopped
# and removed, and the archives imported into the repository: the database
# the PG* variables name, which needs the extension but no collector.  Ends
# with the comparison (the settings that differ list the server version
# and the defaults that changed between the versions) and the report of B
# against A.  RECIPE_ARCHIVES keeps the archives in that folder (default:
# a temporary one, removed).  Settings, connection and scale: see
# common.sh.
recipe=versions
. "$(dirname "$0")/common.sh"

cfg_a=${RECIPE_PG_CONFIG_A:-$(provisioned_config 17 || true)}
cfg_b=${RECIPE_PG_CONFIG_B:-$(provisioned_config 18 || true)}
for c in "$cfg_a" "$cfg_b"; do
	check_build "$c" "RECIPE_PG_CONFIG_A, RECIPE_PG_CONFIG_B: pg_config of each; 17 and 18"
done

top=$(mktemp -d)
at_exit "rm -rf '$top'"
archives=${RECIPE_ARCHIVES:-$top/archives}
scale=${RECIPE_SCALE:-10}

# cluster NAME PG_CONFIG: initdb and start it in $top/NAME, stopped when
# the recipe ends; its socket folder is $top/NAME, its port 5432.
cluster() {
	local dir=$top/$1 bin
	bin=$("$2" --bindir)
	say "$1: initdb ($("$bin/postgres" --version))"
	new_cluster "$dir" "$bin"
	on "$1" "$bin/pgbench" -i -q -s "$scale" >&2
}

# on NAME COMMAND...: COMMAND against cluster NAME, with its programs.
on() {
	local dir=$top/$1
	shift
	PGHOST=$dir PGPORT=5432 PGUSER=postgres PGDATABASE=postgres PSQL="$(cat "$dir/bindir")/psql" \
		PGBENCH="$(cat "$dir/bindir")/pgbench" "$@"
}

for side in a b; do
	c=cfg_$side
	mkdir -p "$top/$side"
	"${!c}" --bindir >"$top/$side/bindir"
	cluster "$side" "${!c}"
done
va=$(on a sql "SHOW server_version_num" | cut -c1-2)
vb=$(on b sql "SHOW server_version_num" | cut -c1-2)
A=pg$va-$tag
B=pg$vb-$tag
for k in $(seq 1 "$trials"); do
	for side in a b; do
		label=$A
		[ $side = b ] && label=$B
		on $side sql "CHECKPOINT"
		say "run $label#$k: pgbench -c ${RECIPE_CLIENTS:-8} -T ${RECIPE_TIME:-60}"
		on $side "${PGC[@]}" bench --label "$label#$k" --archive "$archives" --meta "recipe=$recipe" \
			-- -c "${RECIPE_CLIENTS:-8}" -T "${RECIPE_TIME:-60}" -P 10
	done
done
import_and_finish "$A" "$B"
