#!/usr/bin/env bash
# wal_compression off vs lz4: WAL bytes and full-page images per transaction.
#
#   client/recipes/wal-compression.sh
#
# Two TPC-B runs of RECIPE_TIME seconds (default 60) with RECIPE_CLIENTS
# clients (default 8), each right after a checkpoint (so both write every
# page's first full-page image), then `pg-chronicle compare` and the report
# of lz4 against off.  Expect full-page images per transaction about equal
# and WAL bytes per transaction several times smaller with lz4.
# Settings, connection and scale: see common.sh.
recipe=wal-compression
. "$(dirname "$0")/common.sh"

if [ "$(sql "SELECT 'lz4' = ANY (enumvals) FROM pg_settings WHERE name = 'wal_compression'")" != t ]; then
	echo "recipe: this server was built without lz4 (wal_compression has no lz4)" >&2
	exit 2
fi
init_pgbench
set_setting wal_compression off
bench "walcomp-off-$tag" -c "${RECIPE_CLIENTS:-8}" -T "${RECIPE_TIME:-60}" -P 10
set_setting wal_compression lz4
bench "walcomp-lz4-$tag" -c "${RECIPE_CLIENTS:-8}" -T "${RECIPE_TIME:-60}" -P 10
finish "walcomp-off-$tag" "walcomp-lz4-$tag"
