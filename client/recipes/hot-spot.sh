#!/usr/bin/env bash
# A hot-spot UPDATE at rising client counts: Lock waits take over the
# active sessions.
#
#   client/recipes/hot-spot.sh
#
# A custom pgbench script updates one row (pgbench_branches, bid = 1) in
# every transaction; runs of RECIPE_TIME seconds (default 30) per client
# count in RECIPE_CLIENT_COUNTS (default "1 2 4 8 16 32"), RECIPE_TRIALS
# rounds (default 3) of every count, then the report of the largest count
# against the smallest.  Expect tps to stop growing
# after a few clients while the average active sessions grow with the
# clients, nearly all of them waiting in Lock:transactionid (and tuple).
# Settings, connection and scale: see common.sh.
recipe=hot-spot
. "$(dirname "$0")/common.sh"

init_pgbench
script=$(mktemp --suffix=.sql)
at_exit "rm -f '$script'"
cat >"$script" <<'SQL'
\set delta random(-5000, 5000)
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = 1;
SQL
labels=()
for c in ${RECIPE_CLIENT_COUNTS:-1 2 4 8 16 32}; do
	labels+=("hotspot-c$c-$tag")
done
for k in $(seq 1 "$trials"); do
	for c in ${RECIPE_CLIENT_COUNTS:-1 2 4 8 16 32}; do
		bench "hotspot-c$c-$tag#$k" -n -f "$script" -c "$c" -j "$(( c < 4 ? c : 4 ))" \
			-T "${RECIPE_TIME:-30}" -P 10
	done
done
finish "${labels[0]}" "${labels[-1]}"
