#!/usr/bin/env bash
# Network latency: pgbench over TCP through a proxy adding a one-way delay,
# against the same proxy adding none.
#
#   client/recipes/network-latency.sh
#
# This machine's kernel has no netem (tc qdisc ... netem: "Specified qdisc
# kind is unknown"), so the delay is added by delay_proxy.py (next to this
# script; Python's asyncio): two proxies in front of the server, one adding
# RECIPE_DELAY_MS milliseconds each way (default 1, a round trip of 2 ms),
# the other none, and pgbench connects to 127.0.0.1 through one or the
# other.  TPC-B runs of RECIPE_TIME seconds (default 60) with RECIPE_CLIENTS
# clients (default 4): RECIPE_TRIALS trials (default 3) of each,
# interleaved, then the report of the delay against none.  Expect each
# transaction longer by about its round trips (TPC-B: 7 statements, each
# one) times the added round trip, tps lower by the ratio of the latencies,
# and the client backends' active time in Client:ClientRead (idle in
# transaction, waiting for the next statement).  The proxy needs python3
# (PYTHON).  Settings, connection and scale: see common.sh.
recipe=network-latency
. "$(dirname "$0")/common.sh"

delay=${RECIPE_DELAY_MS:-1}
init_pgbench
start_proxy direct 0
start_proxy delayed "$delay"
# the round trip through each proxy as measured: pgbench's average latency
# of SELECT 1, one client (the proxy's timers wake up late, see delay_proxy.py)
select1=$(mktemp --suffix=.sql)
at_exit "rm -f '$select1'"
echo "SELECT 1;" >"$select1"
rtt() {
	"$PGBENCH" -n -f "$select1" -h 127.0.0.1 -p "$1" -t 500 2>/dev/null |
		sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p'
}
rtt_direct=$(rtt "$direct")
rtt_delayed=$(rtt "$delayed")
say "SELECT 1 through the proxies: $rtt_direct ms (no delay), $rtt_delayed ms ($delay ms each way)"
args=(-h 127.0.0.1 -c "${RECIPE_CLIENTS:-4}" -T "${RECIPE_TIME:-60}" -P 10)
for k in $(seq 1 "$trials"); do
	bench_meta=(--meta proxy_delay_ms=0 --meta "select1_ms=$rtt_direct")
	bench "netlat-0ms-$tag#$k" -p "$direct" "${args[@]}"
	bench_meta=(--meta "proxy_delay_ms=$delay" --meta "select1_ms=$rtt_delayed")
	bench "netlat-${delay}ms-$tag#$k" -p "$delayed" "${args[@]}"
done
finish "netlat-0ms-$tag" "netlat-${delay}ms-$tag"
