#!/usr/bin/env bash
# wal_compression off vs lz4: WAL bytes and full-page images per transaction.
#
#   client/recipes/wal-compression.sh
#
# TPC-B runs of RECIPE_TIME seconds (default 60) with RECIPE_CLIENTS
# clients (default 8), each right after a checkpoint (so each writes every
# page's first full-page image): RECIPE_TRIALS trials (default 3) of each
# setting, interleaved (off#1 lz4#1 off#2 lz4#2 ...), then `pg-chronicle
# compare` of the two configurations and the report of lz4 against off.  Expect full-page images per transaction about equal
# and WAL bytes per transaction several times smaller with lz4.
# Settings, connection and scale: see common.sh.
recipe=wal-compression
. "$(dirname "$0")/common.sh"

if [ "$(sql "SELECT 'lz4' = ANY (enumvals) FROM pg_settings WHERE name = 'wal_compression'")" != t ]; then
	echo "recipe: this server was built without lz4 (wal_compression has no lz4)" >&2
	exit 2
fi
init_pgbench
for k in $(seq 1 "$trials"); do
	set_setting wal_compression off
	bench "walcomp-off-$tag#$k" -c "${RECIPE_CLIENTS:-8}" -T "${RECIPE_TIME:-60}" -P 10
	set_setting wal_compression lz4
	bench "walcomp-lz4-$tag#$k" -c "${RECIPE_CLIENTS:-8}" -T "${RECIPE_TIME:-60}" -P 10
done
finish "walcomp-off-$tag" "walcomp-lz4-$tag"
