#!/usr/bin/env bash
# Client scaling on this machine: a read-only (-S) sweep over clients.
#
#   client/recipes/client-scaling.sh
#
# `pg-chronicle sweep` of pgbench -S over RECIPE_CLIENT_COUNTS clients
# (default "1 2 4 8 16 32"), RECIPE_TIME seconds a point (default 30),
# RECIPE_TRIALS trials of each point (default 3; the sweep records a
# point's trials one after the other), then the sweep's table and its
# page (tps, latency and the average active sessions by wait class against
# the clients).  Expect tps to be highest at about the number of CPU cores
# (nproc) and no higher beyond, latency to grow with the clients from
# there on, the average active sessions to rise with the clients (CPU)
# towards the core count, and the time the server's processes wait for a
# CPU (load profile) to rise far past it: a -S backend in the run queue
# shows idle in Client:ClientRead until it runs and reads its statement,
# so the sampler does not count it.  pgbench runs on the same machine and
# takes its share of the cores.  Settings, connection and scale: see
# common.sh.
recipe=client-scaling
. "$(dirname "$0")/common.sh"

read -ra counts <<<"${RECIPE_CLIENT_COUNTS:-1 2 4 8 16 32}"
list=$(IFS=,; echo "${counts[*]}")
init_pgbench
say "cores (nproc): $(nproc)"
sql "CHECKPOINT"
say "sweep scaling-$tag: pgbench -S over clients $list"
"${PGC[@]}" sweep --label "scaling-$tag" --clients "$list" --trials "$trials" \
	--meta "recipe=$recipe" -o "${RECIPE_OUT:-./$recipe-$tag}" -- -S -T "${RECIPE_TIME:-30}" -P 10
