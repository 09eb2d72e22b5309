#!/usr/bin/env bash
# checkpoint_completion_target 0.9 vs 0.1 under a fixed rate: the
# checkpoint's write burst and the latency spike it causes.
#
#   client/recipes/checkpoint-spread.sh
#
# TPC-B runs at a fixed rate (pgbench -R RECIPE_RATE, default 500 tps) of
# RECIPE_TIME seconds (default 300) with RECIPE_CLIENTS clients (default 8),
# checkpoint_timeout = RECIPE_CHECKPOINT_TIMEOUT (default 60s) so that
# several checkpoints happen in each: RECIPE_TRIALS trials (default 3) of
# each setting, interleaved, then the report of 0.1 against 0.9.
# Expect with 0.1 the checkpointer's writes in short bursts at the start of
# each checkpoint, dirty buffers falling steeply, and the p99 latency of
# the intervals during a burst well above the rest (the slowest intervals
# table names them).  Settings, connection and scale: see common.sh.
recipe=checkpoint-spread
. "$(dirname "$0")/common.sh"

init_pgbench
set_setting checkpoint_timeout "${RECIPE_CHECKPOINT_TIMEOUT:-60s}"
args=(-c "${RECIPE_CLIENTS:-8}" -R "${RECIPE_RATE:-500}" -T "${RECIPE_TIME:-300}" -P 10)
for k in $(seq 1 "$trials"); do
	set_setting checkpoint_completion_target 0.9
	bench "ckpt-0.9-$tag#$k" "${args[@]}"
	set_setting checkpoint_completion_target 0.1
	bench "ckpt-0.1-$tag#$k" "${args[@]}"
done
finish "ckpt-0.9-$tag" "ckpt-0.1-$tag"
