#!/usr/bin/env bash
# A COPY load right after initdb against the same load on a cluster that
# ran it before, compared in a repository (the talk "Visualizing Postgres
# I/O": after initdb every WAL segment is created and zero-filled first,
# WAL Init Write and WAL Init Sync, pg_stat_io's object 'wal' context
# 'init' on 18; a cluster that ran the load before recycles its segments).
#
#   client/recipes/initdb.sh
#
# RECIPE_PG_CONFIG names the build (its pg_config, pg_chronicle installed;
# default: the project's own 18, else 17, as tools/provision-pg.sh leaves
# them under ~/.cache/pg_chronicle/install).  The recipe writes a CSV of
# RECIPE_ROWS rows (default 1000000, about 60 MB) once.  Each of
# RECIPE_TRIALS trials (default 3) gets a cluster of its own: initdb into
# a temporary folder, started on a socket there with pg_chronicle and
# pg_stat_statements preloaded and everything else at the build's
# defaults, a table t; then the load, pgbench -n with RECIPE_CLIENTS
# clients (default 2) each running RECIPE_COPIES (default 4) times a
# server-side COPY t FROM the CSV, recorded as fresh-TAG#k; TRUNCATE t,
# CHECKPOINT, and the same load again on the same cluster as warm-TAG#k.
# Both runs are written to their archives when they end (bench --archive),
# the cluster is stopped and removed, the next trial's made (the trials
# interleave: fresh#1 warm#1 fresh#2 warm#2 ...).  Then the archives are
# imported into the repository, the database the PG* variables name (it
# needs the extension but no collector), and the recipe ends with the
# comparison and the report of warm against fresh.  RECIPE_ARCHIVES keeps
# the archives in that folder (default: a temporary one, removed).
# Connection and the rest: see common.sh.
recipe=initdb
. "$(dirname "$0")/common.sh"

cfg=${RECIPE_PG_CONFIG:-$(provisioned_config 18 || provisioned_config 17 || true)}
check_build "$cfg" "RECIPE_PG_CONFIG: its pg_config; 18, else 17"
rows=${RECIPE_ROWS:-1000000}
copies=${RECIPE_COPIES:-4}
clients=${RECIPE_CLIENTS:-2}
for v in rows copies clients; do
	if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then
		echo "recipe: RECIPE_${v^^} wants a number of 1 or more, got '${!v}'" >&2
		exit 2
	fi
done

top=$(mktemp -d)
at_exit "rm -rf '$top'"
archives=${RECIPE_ARCHIVES:-$top/archives}
bin=$("$cfg" --bindir)
dir=$top/cluster

say "the load: $rows rows ($top/load.csv), COPY $copies times by each of $clients clients"
awk -v n="$rows" 'BEGIN { for (i = 1; i <= n; i++)
	printf "%d,%d,row %d of the COPY load of the initdb recipe\n", i, (i * 7919) % 100000, i }' \
	>"$top/load.csv"
echo "COPY t FROM '$top/load.csv' (FORMAT csv)" >"$top/load.sql"

# on COMMAND...: COMMAND against the trial's cluster, with its programs.
on() {
	PGHOST=$dir PGPORT=5432 PGUSER=postgres PGDATABASE=postgres PSQL=$bin/psql PGBENCH=$bin/pgbench "$@"
}

F=fresh-$tag
W=warm-$tag
for k in $(seq 1 "$trials"); do
	say "trial $k: initdb ($("$bin/postgres" --version))"
	rm -rf "$dir"
	mkdir -p "$dir"
	new_cluster "$dir" "$bin"
	on sql "CREATE TABLE t (id bigint, v int, s text)"
	for label in "$F" "$W"; do
		if [ "$label" = "$W" ]; then
			on sql "TRUNCATE t"
		fi
		on sql "CHECKPOINT"
		say "run $label#$k: pgbench -c $clients -t $copies (COPY)"
		on "${PGC[@]}" bench --label "$label#$k" --archive "$archives" --meta "recipe=$recipe" \
			--meta "cluster=$([ "$label" = "$F" ] && echo fresh || echo warm)" \
			-- -n -f "$top/load.sql" -c "$clients" -j "$clients" -t "$copies"
	done
	"$bin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null
	rm -rf "$dir"
done
import_and_finish "$F" "$W"
