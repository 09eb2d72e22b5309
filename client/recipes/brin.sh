#!/usr/bin/env bash
# BRIN against B-tree: range queries on a time-ordered table larger than
# shared_buffers.
#
#   client/recipes/brin.sh
#
# Makes the table recipe_brin (one row per second of time, in time order;
# RECIPE_TABLE_FACTOR times shared_buffers, default 2; dropped when the
# recipe ends), then runs a custom pgbench script of range queries (the
# rows of RECIPE_RANGE_ROWS seconds, default 1000, about 20 pages, at a
# random time) with RECIPE_CLIENTS clients (default 4) for RECIPE_TIME
# seconds (default 60), with an index on the time column that is a B-tree
# in one configuration and a BRIN index (default pages_per_range, 128) in
# the other, rebuilt before each trial: RECIPE_TRIALS trials (default 3)
# of each, interleaved, then the report of BRIN against B-tree.  Expect
# BRIN to read many more bytes per query (whole block ranges, rechecked)
# with an index of a few pages, B-tree to read the pages of the range plus
# its index's; both read in pg_stat_io's "normal" context (neither is a
# sequential scan, the only reader of the "bulkread" ring).  On PostgreSQL
# 18 BRIN's bitmap heap scan reads through a read stream, so its reads are
# larger (several blocks each, sequential) where the B-tree index scan
# reads one block at a time.  Settings, connection and scale: see
# common.sh (RECIPE_SCALE is not used: the recipe makes its own table).
recipe=brin
. "$(dirname "$0")/common.sh"

factor=${RECIPE_TABLE_FACTOR:-2}
range=${RECIPE_RANGE_ROWS:-1000}
if ! [[ $factor =~ ^[0-9]+([.][0-9]+)?$ && $range =~ ^[1-9][0-9]*$ ]]; then
	echo "recipe: RECIPE_TABLE_FACTOR wants a number, RECIPE_RANGE_ROWS a whole number of 1 or more" >&2
	exit 2
fi
at_exit 'sql "SET client_min_messages = warning; DROP TABLE IF EXISTS recipe_brin"'
sql "SET client_min_messages = warning; DROP TABLE IF EXISTS recipe_brin"
sql "CREATE TABLE recipe_brin (ts timestamptz NOT NULL, id bigint NOT NULL, val int NOT NULL,
	filler text NOT NULL) WITH (autovacuum_enabled = off)"
# rows per page from a first batch, then as many rows as make the table
# RECIPE_TABLE_FACTOR times shared_buffers
ins() {
	sql "INSERT INTO recipe_brin SELECT '2026-01-01'::timestamptz + make_interval(secs => i), i,
		(i * 7919 % 1000)::int, repeat('x', 100) FROM generate_series($1::bigint, $2) i"
}
ins 1 10000
rows=$(sql "SELECT ceil($factor * setting::numeric * pg_size_bytes(unit)
	/ pg_relation_size('recipe_brin') * 10000)::bigint FROM pg_settings WHERE name = 'shared_buffers'")
say "recipe_brin: $rows rows"
ins 10001 "$rows"
sql "VACUUM (ANALYZE) recipe_brin"
say "recipe_brin: $(sql "SELECT pg_size_pretty(pg_relation_size('recipe_brin')) || ', shared_buffers '
	|| current_setting('shared_buffers')")"
if [ "$(sql "SELECT pg_relation_size('recipe_brin') > setting::numeric * pg_size_bytes(unit)
	FROM pg_settings WHERE name = 'shared_buffers'")" != t ]; then
	echo "recipe: recipe_brin is not larger than shared_buffers (RECIPE_TABLE_FACTOR=$factor)" >&2
	exit 2
fi

# query T: the range query of the rows of RECIPE_RANGE_ROWS seconds from second T
query() {
	echo "SELECT count(*), sum(val) FROM recipe_brin
 WHERE ts >= '2026-01-01'::timestamptz + make_interval(secs => $1)
   AND ts < '2026-01-01'::timestamptz + make_interval(secs => $1 + $range);"
}
script=$(mktemp --suffix=.sql)
at_exit "rm -f '$script'"
printf '\\set t random(1, %s)\n%s\n' "$((rows - range))" "$(query :t)" >"$script"

# use_index KIND: the table's only index is one of KIND on ts
use_index() {
	say "index: $1"
	sql "SET client_min_messages = warning; DROP INDEX IF EXISTS recipe_brin_ts"
	sql "CREATE INDEX recipe_brin_ts ON recipe_brin USING $1 (ts)"
	say "index recipe_brin_ts: $(sql "SELECT pg_size_pretty(pg_relation_size('recipe_brin_ts'))"); plan:
$(sql "EXPLAIN (COSTS OFF) $(query 1)")"
	bench_meta=(--meta "index=$1")
}
args=(-n -f "$script" -c "${RECIPE_CLIENTS:-4}" -T "${RECIPE_TIME:-60}" -P 10)
for k in $(seq 1 "$trials"); do
	use_index btree
	bench "brin-btree-$tag#$k" "${args[@]}"
	use_index brin
	bench "brin-brin-$tag#$k" "${args[@]}"
done
finish "brin-btree-$tag" "brin-brin-$tag"
