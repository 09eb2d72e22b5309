#!/usr/bin/env bash
# Speed of the analysis API over 24 hours of synthetic 1 s history
# (bench/analysis_gen.sql), of the rollups and of 30-day windows read from
# them (BENCH_SKIP_ROLLUPS=1 leaves them out), and the engine's two read
# paths side by side (BENCH_SKIP_PATHS=1 leaves them out).
# BENCH_SKIP_CALLS=1 leaves out the calls over the raw day (the rollups'
# part alone).
#
#   PG_CONFIG=/path/to/pg_config bench/analysis_bench.sh      (as root or as a non-root user)
#
# Installs the extension into that PostgreSQL, starts a throwaway cluster in
# $BENCH_DIR (default /tmp/analysis-bench) on $BENCH_PORT (default 5601),
# generates the history once, times every call (best and median of
# $BENCH_REPS runs, default 3), then stops and removes the cluster.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/tools/lib.sh"
dir=${BENCH_DIR:-/tmp/analysis-bench}
reps=${BENCH_REPS:-3}
day=2025-01-01

trap 'lib_bench_history_stop "$dir"' EXIT
lib_bench_history "$dir" "${BENCH_PORT:-5601}" "chronicle.enabled = off
shared_buffers = 512MB
work_mem = 64MB
max_parallel_workers_per_gather = 0" "$src/bench/analysis_gen.sql" "$day" "24 h of 1 s history"
psql() { "$LIB_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

psql <<'SQL'
CREATE OR REPLACE FUNCTION bench(label text, q text, reps integer) RETURNS TABLE (call text, rows bigint, best_ms numeric, median_ms numeric)
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz; ms float8[] := '{}'; n bigint;
BEGIN
	FOR i IN 1 .. reps LOOP
		t0 := clock_timestamp();
		EXECUTE 'SELECT count(*) FROM (' || q || ') s' INTO n;
		ms := ms || extract(epoch FROM clock_timestamp() - t0) * 1000;
	END LOOP;
	RETURN QUERY SELECT label, n, round(min(x)::numeric, 0),
	                    round((percentile_cont(0.5) WITHIN GROUP (ORDER BY x))::numeric, 0)
	               FROM unnest(ms) x;
END $$;
SQL

f="''$day 00:00:00+00''"; t="''$day 23:59:59+00''"; h="''$day 12:30:00+00''"; h1="''$day 01:00:00+00''"
# One call at a time, each capped by $BENCH_TIMEOUT (default 120 s).
calls=(
	"intervals|SELECT * FROM chronicle.intervals($f, $t)"
	"wal_deltas|SELECT * FROM chronicle.wal_deltas($f, $t)"
	"wal_totals|SELECT * FROM chronicle.wal_totals($f, $t)"
	"checkpointer_deltas|SELECT * FROM chronicle.checkpointer_deltas($f, $t)"
	"bgwriter_deltas|SELECT * FROM chronicle.bgwriter_deltas($f, $t)"
	"buffers_values|SELECT * FROM chronicle.buffers_values($f, $t)"
	"os_memory_deltas|SELECT * FROM chronicle.os_memory_deltas($f, $t)"
	"percentiles wal.wal_bytes_per_s|SELECT * FROM chronicle.percentiles(''wal.wal_bytes_per_s'', $f, $t)"
	"io_deltas, one key|SELECT * FROM chronicle.io_deltas($f, $t, ''client backend'', ''relation'', ''normal'')"
	"io_deltas, all keys, 1 h|SELECT * FROM chronicle.io_deltas($f, $h1)"
	"io_deltas, changed_only|SELECT * FROM chronicle.io_deltas($f, $t, changed_only => true)"
	"io_totals|SELECT * FROM chronicle.io_totals($f, $t)"
	"io_totals, 1 h|SELECT * FROM chronicle.io_totals($f, $h1)"
	"percentiles io.write_bytes_per_s client|SELECT * FROM chronicle.percentiles(''io.write_bytes_per_s'', $f, $t, for_backend_type => ''client backend'')"
	"database_deltas|SELECT * FROM chronicle.database_deltas($f, $t)"
	"database_totals|SELECT * FROM chronicle.database_totals($f, $t)"
	"wait_deltas, changed_only, 1 h|SELECT * FROM chronicle.wait_deltas($f, $h1, changed_only => true)"
	"wait_totals, 1 h|SELECT * FROM chronicle.wait_totals($f, $h1)"
	"wait_totals|SELECT * FROM chronicle.wait_totals($f, $t)"
	"io_totals, 1 h at noon + 30 min|SELECT * FROM chronicle.io_totals($h, $h::timestamptz + interval ''1 h'')"
	"statements_top|SELECT * FROM chronicle.statements_top($f, $t)"
	"wait_profile, 1 h|SELECT * FROM chronicle.wait_profile($f, $h1)"
	"wait_profile_series top 3, 1 h|SELECT * FROM chronicle.wait_profile_series($f, $h1, top => 3)"
	"series io.write_bytes_per_s client|SELECT * FROM chronicle.series(''io.write_bytes_per_s'', $f, $t, for_backend_type => ''client backend'')"
	"percentiles database.xact_commit_per_s|SELECT * FROM chronicle.percentiles(''database.xact_commit_per_s'', $f, $t)"
	"timeline, 1 h|SELECT * FROM chronicle.timeline($f, $h1)"
	"timeline, 1 h, waits => false|SELECT * FROM chronicle.timeline($f, $h1, waits => false)"
	"timeline, 1 h, detail => true|SELECT * FROM chronicle.timeline($f, $h1, detail => true)"
	"summary, 1 h|SELECT * FROM chronicle.summary($f, $h1)"
	"wait_profile|SELECT * FROM chronicle.wait_profile($f, $t)"
	"timeline, waits => false|SELECT * FROM chronicle.timeline($f, $t, waits => false)"
	"timeline|SELECT * FROM chronicle.timeline($f, $t)"
	"timeline, detail => true|SELECT * FROM chronicle.timeline($f, $t, detail => true)"
	"summary|SELECT * FROM chronicle.summary($f, $t)"
)
run_calls() {
	for c in "$@"; do
		label=${c%%|*}; q=${c#*|}
		PGOPTIONS="-c statement_timeout=${BENCH_TIMEOUT:-120}s" psql -At -F ' | ' \
			-c "SELECT * FROM bench('$label', '$q', $reps)" 2>&1 | sed 's/^ERROR:.*statement timeout/'"$label"' | > '"${BENCH_TIMEOUT:-120}"' s (timeout)/' |
			grep -v '^[[:space:]]\|^CONTEXT\|^PL/pgSQL\|^SQL statement' || true
	done
}
if [ -z "${BENCH_SKIP_CALLS:-}" ]; then
	echo "== each call over the day: call | rows | best ms | median ms"
	run_calls "${calls[@]}"
fi

# Rollups (src/sql/60_rollups.sql, docs/rollups.md): the day rolled up in
# one go, what the collector does each minute (one minute; its batch of
# ten), then 29 more days of rollups made by copying the day's, and the
# long windows read from them.
if [ -z "${BENCH_SKIP_ROLLUPS:-}" ]; then
echo "== rollups: the day rolled up once, then 30 days of rollups"
psql -At <<SQL
SELECT 'rollup of the day | ' || r.minutes || ' minutes, ' || r.hours || ' hours | '
       || round(extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1000) || ' ms'
  FROM chronicle.rollup('$day', '$day'::timestamptz + interval '1 day') r;
SELECT 'rollup bytes of the day | ' || pg_size_pretty(sum(pg_total_relation_size(c.oid))) || ' (minute '
       || pg_size_pretty(sum(pg_total_relation_size(c.oid)) FILTER (WHERE c.relname LIKE 'rollup_minute%'))
       || ', hour ' || pg_size_pretty(sum(pg_total_relation_size(c.oid)) FILTER (WHERE c.relname LIKE 'rollup_hour%'))
       || ') | rows ' || (SELECT count(*) FROM chronicle.rollup_minute) || ' + ' || (SELECT count(*) FROM chronicle.rollup_hour)
  FROM pg_class c WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relname ~ '^rollup_(minute|hour)_p';
SQL
m1="''$day 12:00:00+00''"; m2="''$day 12:01:00+00''"; m10="''$day 12:10:00+00''"
d30="''$day 00:00:00+00''::timestamptz - interval ''29 days''"; d3="''$day 00:00:00+00''::timestamptz - interval ''2 days''"
e="''$day 00:00:00+00''::timestamptz + interval ''1 day''"
run_calls "rollup of one minute (again)|SELECT * FROM chronicle.rollup($m1, $m2)" \
          "rollup of ten minutes (again)|SELECT * FROM chronicle.rollup($m1, $m10)"
psql -q <<SQL
SELECT chronicle.ensure_partitions('$day'::timestamptz - interval '29 days', '$day') >= 0 AS partitions;
INSERT INTO chronicle.rollup_minute
SELECT r.ts - k * interval '1 day', r.source, r.key, r.seconds, r.intervals, r.resets, r.vals, r.hist
  FROM chronicle.rollup_minute r, generate_series(1, 29) k WHERE r.ts >= '$day' AND r.ts < '$day'::timestamptz + interval '1 day';
INSERT INTO chronicle.rollup_hour
SELECT r.ts - k * interval '1 day', r.source, r.key, r.seconds, r.intervals, r.resets, r.vals, r.hist
  FROM chronicle.rollup_hour r, generate_series(1, 29) k WHERE r.ts >= '$day' AND r.ts < '$day'::timestamptz + interval '1 day';
VACUUM ANALYZE chronicle.rollup_minute, chronicle.rollup_hour;
SQL
run_calls "timeline, 30 d (auto: hour)|SELECT * FROM chronicle.timeline($d30, $e)" \
          "timeline, 30 d, detail => true (hour)|SELECT * FROM chronicle.timeline($d30, $e, detail => true)" \
          "timeline, 3 d (auto: hour)|SELECT * FROM chronicle.timeline($d3, $e)" \
          "timeline, 3 d, resolution => minute|SELECT * FROM chronicle.timeline($d3, $e, resolution => ''minute'')" \
          "timeline, 24 h (auto: minute)|SELECT * FROM chronicle.timeline($f, $e)" \
          "timeline, 24 h, detail => true (minute)|SELECT * FROM chronicle.timeline($f, $e, detail => true)" \
          "timeline, 24 h, waits => false (minute)|SELECT * FROM chronicle.timeline($f, $e, waits => false)" \
          "timeline, 24 h, resolution => raw|SELECT * FROM chronicle.timeline($f, $e, resolution => ''raw'')"
fi

# The engine's two read paths (src/deltas.c), interleaved in one session:
# a source's view read by decoding chronicle.history in the engine (a
# reader of chronicle.history) and through the view's SQL (a role that may
# read the views but not chronicle.history).  BENCH_SKIP_PATHS=1 leaves it
# out.
[ -n "${BENCH_SKIP_PATHS:-}" ] && exit 0
echo "== read paths over the day: call | engine decodes ms | through the view ms | ratio (median of $reps pairs)"
psql -At -F ' | ' <<SQL
DO \$\$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'bench_view_reader') THEN
		CREATE ROLE bench_view_reader;
	END IF;
END \$\$;
GRANT USAGE ON SCHEMA chronicle TO bench_view_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA chronicle TO bench_view_reader;
REVOKE SELECT ON chronicle.history FROM bench_view_reader;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA chronicle TO bench_view_reader;
CREATE OR REPLACE FUNCTION path_ms(q text) RETURNS float8 LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz := clock_timestamp(); n bigint;
BEGIN
	EXECUTE 'SELECT count(*) FROM (' || q || ') s' INTO n;
	RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END \$\$;
GRANT EXECUTE ON FUNCTION path_ms(text) TO bench_view_reader;
CREATE OR REPLACE FUNCTION paths(label text, q text, reps integer) RETURNS TABLE (call text, decoded numeric, viewed numeric, ratio numeric)
LANGUAGE plpgsql AS \$\$
DECLARE a float8[] := '{}'; b float8[] := '{}';
BEGIN
	FOR i IN 1 .. reps LOOP
		a := a || path_ms(q);
		SET LOCAL ROLE bench_view_reader;
		b := b || path_ms(q);
		RESET ROLE;
	END LOOP;
	RETURN QUERY SELECT label,
		round((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(a) x)::numeric, 0),
		round((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(b) x)::numeric, 0),
		round((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY y / x) FROM unnest(a, b) u(x, y))::numeric, 2);
END \$\$;
-- chronicle._deltas() as a <prefix>_deltas() wrapper calls it, its column
-- list the wrapper's result
CREATE OR REPLACE FUNCTION path_query(source text, wrapper regproc, changed boolean) RETURNS text
LANGUAGE sql AS \$\$
	SELECT format('SELECT * FROM chronicle._deltas(%L, %L, %L, NULL, %L, NULL, ''{}'', ''{}'', NULL) AS d(%s)',
	              source, '$day 00:00:00+00', '$day 23:59:59+00', changed,
	              substring(pg_get_function_result(wrapper) FROM '^TABLE\\((.*)\\)\$'))
\$\$;
SELECT * FROM paths('wal, every interval', path_query('wal', 'chronicle.wal_deltas', false), $reps);
SELECT * FROM paths('io, changed keys', path_query('io', 'chronicle.io_deltas', true), $reps);
SELECT * FROM paths('waits, changed keys', path_query('waits', 'chronicle.wait_deltas', true), $reps);
SQL
