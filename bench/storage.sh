#!/usr/bin/env bash
# Storage benchmark (docs/storage.md): what one second of history costs
# under a realistic load, table by table.
#
#   PG_CONFIG=/path/pg_config bench/storage.sh      (as root or as a normal user)
#
# Load: pgbench TPC-B at a fixed rate (-R BENCH_RATE, default 500, -c 8) for
# BENCH_WARMUP (default 60) then BENCH_SECONDS (default 60, the measured
# window), plus BENCH_IDLE (default 100) idle sessions,
# pg_stat_statements preloaded and created, every chronicle source at its
# default.  Prints, over the worker's snapshots of that window:
#   - history bytes per recorded second of every chronicle table (its
#     partitions summed), split heap / index / TOAST (main forks: FSM and
#     VM are a fixed cost per partition and day, printed apart),
#   - rows per snapshot of every table and history view with a ts column,
#   - WAL per snapshot (chronicle.snapshot.wal_bytes, the collector's own
#     WAL as pgWalUsage counts it) and snapshot time p50 / p99 / max
#     (chronicle.snapshot.duration_ms),
#   - WAL per snapshot by table and fork, from pg_waldump over the window
#     (bench/wal_by_relation.py),
#   - the rollups of the window (docs/rollups.md): its whole minutes rolled
#     up again (chronicle.rollup(from, to)), their rows copied into plain
#     tables of the same shape and indexes, and their bytes per second of
#     recording (heap, index, TOAST), rows per minute and bytes per row, by
#     table and by source; the hour rows are those of the window's minutes
#     merged into one hour, per 3600 s (the keys of a partial hour: a lower
#     bound).  Set BENCH_SECONDS to 180 or more for whole minutes, 600 for
#     figures not dominated by the first pages of the tables.
# BENCH_CONF adds lines to postgresql.conf (e.g. "chronicle.collect_waits = off").
set -euo pipefail
. "$(dirname "$0")/../tools/lib.sh"
lib_bench_start bench/storage.sh "$@"
warmup=${BENCH_WARMUP:-60}
lib_bench_cluster bench-storage
lib_idle_sessions "$tmp" "$idle"
q 'CHECKPOINT' >/dev/null
sleep 3

echo "PostgreSQL: $("$LIB_PG_CONFIG" --version); cassert: $(q 'SHOW debug_assertions')"
echo "machine: $(nproc) cores, $(uname -r); shared_buffers 128MB, $idle idle sessions, pg_stat_statements loaded"
[ -n "${BENCH_CONF:-}" ] && echo "extra settings: $BENCH_CONF"

# Sizes of every chronicle relation, per table (partitions summed into
# their root), recorded before and after the load in a table of public.
sizes() {
	q "INSERT INTO public.bench_sizes
	   SELECT '$1', coalesce(pg_partition_root(c.oid), c.oid)::regclass::text,
	          sum(pg_relation_size(c.oid, 'main')),
	          sum((SELECT coalesce(sum(pg_relation_size(i.indexrelid, 'main')), 0)
	                 FROM pg_index i WHERE i.indrelid = c.oid)),
	          sum(coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)),
	          sum(pg_relation_size(c.oid, 'fsm') + pg_relation_size(c.oid, 'vm'))
	     FROM pg_class c
	    WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relkind = 'r'
	    GROUP BY 2"
}
q 'CREATE TABLE public.bench_sizes (at text, tbl text, heap bigint, idx bigint, toast bigint, fsm_vm bigint)'
# The load runs BENCH_WARMUP seconds before the window: the key dictionary
# fills with the keys of the load (new wait event x query id combinations
# keep appearing for a while), as it has in a recording that stays on.
"$bindir/pgbench" -R "$rate" -c "$clients" -j 2 -T "$((warmup + seconds))" >"$tmp/fixed.out" 2>&1 &
pgbench_pid=$!
sleep "$warmup"
sizes before
lsn0=$(q 'SELECT pg_current_wal_lsn()')
t0=$(q 'SELECT clock_timestamp()')
wait "$pgbench_pid"
t1=$(q 'SELECT clock_timestamp()')
lsn1=$(q 'SELECT pg_current_wal_lsn()')
# The WAL of the window by relation (pg_waldump, before any checkpoint
# recycles it): which chronicle table and which of its forks, indexes and
# TOAST wrote how much, and the records without a block (commits,
# subtransaction assignments) of the transactions that wrote them.
q "CREATE TABLE public.bench_rel AS
   SELECT x.relfilenode::text AS relfilenode, coalesce(pg_partition_root(c.oid), c.oid)::regclass::text AS tbl, x.kind
     FROM pg_class c
    CROSS JOIN LATERAL (
	SELECT c.relfilenode, 'heap' AS kind
	UNION ALL SELECT i.relfilenode, 'index' FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid WHERE ix.indrelid = c.oid
	UNION ALL SELECT t.relfilenode, 'TOAST' FROM pg_class t WHERE t.oid = c.reltoastrelid
	UNION ALL SELECT i.relfilenode, 'TOAST' FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid WHERE ix.indrelid = c.reltoastrelid) x
    WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relkind = 'r' AND x.relfilenode <> 0"
"$bindir/pg_waldump" -p "$tmp/data/pg_wal" -s "$lsn0" -e "$lsn1" 2>/dev/null |
	python3 "$src/bench/wal_by_relation.py" $(q 'SELECT relfilenode FROM public.bench_rel') >"$tmp/wal.tsv" || true
q 'CREATE TABLE public.bench_wal (relfilenode text, records bigint, bytes bigint, fpi_bytes bigint)'
"$bindir/psql" -X -q -v ON_ERROR_STOP=1 -c "\\copy public.bench_wal FROM '$tmp/wal.tsv'"
q 'CHECKPOINT' >/dev/null
sizes after
echo "idle sessions at the end: $(q "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND state = 'idle'")"

echo
echo "== pgbench -R $rate -c $clients -T $((warmup + seconds)) (TPC-B) + $idle idle sessions, collector at 1s; the window: the last $seconds s"
grep -E '^tps' "$tmp/fixed.out" | sed 's/^/pgbench: /'
"$bindir/psql" -X -q -v ON_ERROR_STOP=1 -v t0="$t0" -v t1="$t1" \
	<<'SQL'
\pset footer off
CREATE TEMP TABLE w AS
SELECT count(*) AS n, extract(epoch FROM max(ts) - min(ts)) + 1 AS secs,
       min(ts) AS lo, max(ts) AS hi
  FROM chronicle.snapshot WHERE collector = 'worker' AND ts BETWEEN :'t0' AND :'t1';
\echo 'snapshots of the worker in the window, and their own cost:'
SELECT count(*) AS snapshots,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms)::numeric, 3) AS "ms p50",
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms)::numeric, 3) AS "ms p99",
       round(max(duration_ms)::numeric, 3) AS "ms max",
       round(avg(wal_bytes)) AS "WAL B/snapshot",
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY wal_bytes)::numeric) AS "WAL B p50",
       round(avg(rows_written), 1) AS "rows/snapshot",
       count(*) FILTER (WHERE keyframe) AS keyframes
  FROM chronicle.snapshot
 WHERE collector = 'worker' AND ts BETWEEN :'t0' AND :'t1';
\echo 'bytes per second of history (main forks; FSM+VM apart), per table:'
SELECT a.tbl AS "table",
       round((a.heap - coalesce(b.heap, 0)) / w.secs) AS "heap B/s",
       round((a.idx - coalesce(b.idx, 0)) / w.secs) AS "index B/s",
       round((a.toast - coalesce(b.toast, 0)) / w.secs) AS "TOAST B/s",
       round((a.heap + a.idx + a.toast - coalesce(b.heap + b.idx + b.toast, 0)) / w.secs) AS "total B/s",
       round((a.fsm_vm - coalesce(b.fsm_vm, 0)) / w.secs) AS "FSM+VM B/s"
  FROM public.bench_sizes a
  LEFT JOIN public.bench_sizes b ON b.tbl = a.tbl AND b.at = 'before'
 CROSS JOIN w
 WHERE a.at = 'after'
   AND a.heap + a.idx + a.toast + a.fsm_vm > coalesce(b.heap + b.idx + b.toast + b.fsm_vm, 0)
UNION ALL
SELECT 'TOTAL',
       round(sum(a.heap - coalesce(b.heap, 0)) / min(w.secs)),
       round(sum(a.idx - coalesce(b.idx, 0)) / min(w.secs)),
       round(sum(a.toast - coalesce(b.toast, 0)) / min(w.secs)),
       round(sum(a.heap + a.idx + a.toast - coalesce(b.heap + b.idx + b.toast, 0)) / min(w.secs)),
       round(sum(a.fsm_vm - coalesce(b.fsm_vm, 0)) / min(w.secs))
  FROM public.bench_sizes a
  LEFT JOIN public.bench_sizes b ON b.tbl = a.tbl AND b.at = 'before'
 CROSS JOIN w
 WHERE a.at = 'after'
 ORDER BY 5 DESC;
\echo 'rows per snapshot, bytes per row (pg_column_size of the row, tuple header included) and'
\echo 'the heap bytes per second they make (+4 B line pointer; free space at page ends not counted):'
CREATE FUNCTION pg_temp.rows_in(t regclass, lo timestamptz, hi timestamptz, OUT n numeric, OUT sz numeric)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('SELECT count(*), avg(pg_column_size(h.*)) FROM %s h WHERE ts BETWEEN $1 AND $2', t)
	   INTO n, sz USING lo, hi;
END $$;
SELECT c.oid::regclass AS "table",
       round(x.n / w.n, 2) AS "rows/snapshot",
       round(x.sz) AS "row B",
       round(x.n * (x.sz + 4) / w.secs) AS "~heap B/s"
  FROM pg_class c
 CROSS JOIN w
 CROSS JOIN LATERAL pg_temp.rows_in(c.oid::regclass, w.lo, w.hi) x
 WHERE c.relnamespace = 'chronicle'::regnamespace
   AND c.relkind IN ('p', 'v')
   AND EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'ts' AND NOT a.attisdropped)
   AND x.n > 0
 ORDER BY 2 DESC, 1;
\echo 'the history row by part (per snapshot, B/s): each source''s packed value (the share of the'
\echo 'snapshots that have one, its mean length and its stored size, pg_column_size: varlena header'
\echo 'and compression included); the other columns; the tuple header with its NULL bitmap and the'
\echo 'padding that aligns the columns; the line pointer and the padding to the next tuple (MAXALIGN):'
CREATE FUNCTION pg_temp.history_parts(lo timestamptz, hi timestamptz,
	OUT part text, OUT present numeric, OUT len numeric, OUT stored numeric)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
	a record;
	cols numeric := 0;
BEGIN
	FOR a IN SELECT attname, atttypid = 'bytea'::regtype AS packed FROM pg_attribute
	          WHERE attrelid = 'chronicle.history'::regclass AND attnum > 0 AND NOT attisdropped
	          ORDER BY attnum LOOP
		part := a.attname;
		EXECUTE format('SELECT count(%1$I)::numeric / count(*), avg(%2$s),'
		               ' sum(coalesce(pg_column_size(%1$I), 0))::numeric / count(*)'
		               ' FROM chronicle.history WHERE ts BETWEEN $1 AND $2',
		               a.attname, CASE WHEN a.packed THEN format('octet_length(%I)', a.attname) ELSE 'NULL::int' END)
		   INTO present, len, stored USING lo, hi;
		cols := cols + stored;
		RETURN NEXT;
	END LOOP;
	len := NULL;
	present := 1;
	-- the tuple as stored (pg_column_size of the row) less its columns
	part := '(tuple header, NULL bitmap, alignment)';
	EXECUTE 'SELECT avg(pg_column_size(h.*)) FROM chronicle.history h WHERE ts BETWEEN $1 AND $2'
	   INTO stored USING lo, hi;
	stored := stored - cols;
	RETURN NEXT;
	part := '(line pointer, MAXALIGN padding)';
	EXECUTE 'SELECT avg(4 + (8 - pg_column_size(h.*) % 8) % 8) FROM chronicle.history h WHERE ts BETWEEN $1 AND $2'
	   INTO stored USING lo, hi;
	RETURN NEXT;
END $$;
CREATE TEMP TABLE hp AS SELECT p.* FROM w CROSS JOIN LATERAL pg_temp.history_parts(w.lo, w.hi) p;
SELECT p.part, round(p.present, 2) AS "share with a value", round(p.len) AS "mean length",
       round(p.stored, 1) AS "stored B/snapshot", round(p.stored * w.n / w.secs) AS "B/s"
  FROM hp p CROSS JOIN w
UNION ALL
SELECT 'TOTAL', NULL, NULL, round(sum(p.stored), 1), round(sum(p.stored) * min(w.n) / min(w.secs))
  FROM hp p CROSS JOIN w
 ORDER BY 4 DESC NULLS LAST;
\echo 'the snapshot row by column (stored size, pg_column_size) and its tuple header:'
SELECT x.col AS "column", round(avg(x.sz), 1) AS "B/snapshot"
  FROM chronicle.snapshot s
 CROSS JOIN LATERAL (VALUES ('ts', pg_column_size(s.ts)), ('segment', pg_column_size(s.segment)),
                            ('keyframe', pg_column_size(s.keyframe)), ('collector', pg_column_size(s.collector)),
                            ('duration_ms', pg_column_size(s.duration_ms)), ('rows_written', pg_column_size(s.rows_written)),
                            ('wal_bytes', pg_column_size(s.wal_bytes)), ('errors', pg_column_size(s.errors)),
                            ('system_identifier', pg_column_size(s.system_identifier)), ('server_name', pg_column_size(s.server_name)),
                            ('(row: header, alignment, columns)', pg_column_size(s.*))) x(col, sz)
 CROSS JOIN w
 WHERE s.collector = 'worker' AND s.ts BETWEEN w.lo AND w.hi
 GROUP BY x.col
 ORDER BY 2 DESC;
\echo 'page fill: tuples per heap page of the window''s rows (the pages between its first and last;'
\echo 'the pages'' free space is what "by pages" adds to "by rows"), and the heap B/s by pages that'
\echo 'rate gives (resolution: a fraction of a tuple, not 68 B/s):'
CREATE FUNCTION pg_temp.page_fill(t regclass, lo timestamptz, hi timestamptz, OUT pages bigint, OUT per_page numeric, OUT free_b numeric)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format($q$
		WITH p AS (SELECT tableoid, (ctid::text::point)[0] AS page, count(*) AS n, sum(pg_column_size(h.*)) AS sz,
		                  sum((pg_column_size(h.*) + 7) / 8 * 8 + 4) AS used
		             FROM %s h WHERE ts BETWEEN $1 AND $2 GROUP BY 1, 2),
		     inner_p AS (SELECT * FROM p
		                  WHERE page > (SELECT min(q.page) FROM p q WHERE q.tableoid = p.tableoid)
		                    AND page < (SELECT max(q.page) FROM p q WHERE q.tableoid = p.tableoid))
		SELECT (SELECT count(*) FROM inner_p), (SELECT avg(n) FROM inner_p), (SELECT avg(8192 - 24 - used) FROM inner_p)$q$, t)
	   INTO pages, per_page, free_b USING lo, hi;
END $$;
SELECT t AS "table", f.pages AS "inner pages", round(f.per_page, 2) AS "tuples/page",
       round(f.free_b) AS "free B/page", round(8192 / f.per_page * x.n / w.secs) AS "heap B/s by pages"
  FROM (VALUES ('chronicle.history'::regclass), ('chronicle.snapshot'::regclass)) v(t)
 CROSS JOIN w
 CROSS JOIN LATERAL pg_temp.page_fill(v.t, w.lo, w.hi) f
 CROSS JOIN LATERAL pg_temp.rows_in(v.t, w.lo, w.hi) x;
\echo 'WAL per snapshot by table (pg_waldump of the window; "commit etc.": the records without a block of the transactions that wrote chronicle tables):'
SELECT CASE WHEN grouping(r.tbl) = 1 THEN 'TOTAL' ELSE coalesce(r.tbl, 'commit etc.') END AS "table", coalesce(r.kind, '') AS kind,
       round(sum(b.records) / min(w.n), 1) AS "records/snapshot",
       round(sum(b.bytes) / min(w.n)) AS "WAL B/snapshot",
       round(sum(b.fpi_bytes) / min(w.n)) AS "of it FPI"
  FROM public.bench_wal b
  LEFT JOIN public.bench_rel r USING (relfilenode)
 CROSS JOIN w
 GROUP BY GROUPING SETS ((r.tbl, r.kind), ())
 ORDER BY grouping(r.tbl) DESC, 4 DESC;
SQL

# BENCH_SAVE=DIR: the window's history and snapshot rows, the key dictionary
# and the column lists, copied (COPY text) into DIR for offline study
# (encodings, compression: docs/storage.md).
if [ -n "${BENCH_SAVE:-}" ]; then
	mkdir -p "$BENCH_SAVE"
	for t in history snapshot; do
		"$bindir/psql" -X -q -v ON_ERROR_STOP=1 -c "\\copy (SELECT * FROM chronicle.$t WHERE ts BETWEEN '$t0' AND '$t1' ORDER BY ts) TO '$BENCH_SAVE/$t.copy'"
	done
	"$bindir/psql" -X -q -v ON_ERROR_STOP=1 -c "\\copy chronicle.history_key TO '$BENCH_SAVE/history_key.copy'"
	"$bindir/psql" -X -q -v ON_ERROR_STOP=1 -c "\\copy (SELECT * FROM chronicle._source_columns()) TO '$BENCH_SAVE/source_columns.copy'"
	echo "saved the window's rows in $BENCH_SAVE"
fi

# The rollups of the window: its whole minutes, once the last is complete
# (ended 10 s ago, as the collector waits).
lo=$(q "SELECT date_trunc('minute', '$t0'::timestamptz) + interval '1 minute'")
hi=$(q "SELECT date_trunc('minute', '$t1'::timestamptz)")
echo
if [ "$(q "SELECT '$lo'::timestamptz < '$hi'::timestamptz")" != t ]; then
	echo "rollups: no whole minute in the window (BENCH_SECONDS=$seconds); skipped"
	exit 0
fi
lib_poll_sql "the window's last minute complete" 90 \
	"SELECT date_trunc('minute', now() - interval '10 s') >= '$hi'::timestamptz"
"$bindir/psql" -X -q -v ON_ERROR_STOP=1 -v lo="$lo" -v hi="$hi" -v tmp="$tmp" <<'SQL'
\pset footer off
SET client_min_messages = warning;
SELECT minutes AS "minutes rolled up", hours AS "hours rolled up" FROM chronicle.rollup(:'lo', :'hi');
-- plain tables shaped as a day partition (created LIKE the default one,
-- indexes included, docs/storage.md)
CREATE TABLE public.bench_rollup_minute (LIKE chronicle.rollup_minute_default INCLUDING ALL);
CREATE TABLE public.bench_rollup_hour (LIKE chronicle.rollup_hour_default INCLUDING ALL);
INSERT INTO public.bench_rollup_minute
SELECT * FROM chronicle.rollup_minute WHERE ts >= :'lo' AND ts < :'hi' ORDER BY ts;
-- the hours of the window's minutes alone: _rollup_hours() reads
-- rollup_minute, so the other minutes are deleted in a transaction rolled
-- back, the hours written out to a file first (by the server: we are its
-- superuser, and it runs as we do)
\set hours_file :tmp '/rollup_hours.copy'
BEGIN;
DELETE FROM chronicle.rollup_minute WHERE ts < :'lo' OR ts >= :'hi';
COPY (SELECT * FROM chronicle._rollup_hours(ARRAY(SELECT DISTINCT date_trunc('hour', ts) FROM public.bench_rollup_minute))
       ORDER BY ts) TO :'hours_file';
ROLLBACK;
COPY public.bench_rollup_hour FROM :'hours_file';
VACUUM ANALYZE public.bench_rollup_minute, public.bench_rollup_hour;
CREATE TEMP TABLE rw AS
SELECT count(*) AS minutes, sum(seconds) AS secs, count(DISTINCT date_trunc('hour', ts)) AS hours
  FROM public.bench_rollup_minute WHERE source = 'intervals';
\echo 'rollups of the window''s whole minutes: bytes per second of recording (heap, index, TOAST;'
\echo 'hour: the window''s keys over 3600 s), rows per minute, bytes per row (pg_column_size):'
SELECT t.tbl AS "table", t.buckets AS buckets, round(t.per) AS seconds,
       round(pg_relation_size(t.tbl::regclass) / t.per) AS "heap B/s",
       round(pg_indexes_size(t.tbl::regclass) / t.per) AS "index B/s",
       round(coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) / t.per) AS "TOAST B/s",
       round((pg_relation_size(t.tbl::regclass) + pg_indexes_size(t.tbl::regclass)
              + coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)) / t.per) AS "total B/s",
       round(x.n / t.buckets, 1) AS "rows/bucket",
       round(x.sz) AS "row B"
  FROM rw
 CROSS JOIN LATERAL (VALUES ('public.bench_rollup_minute', rw.secs, rw.minutes),
                            ('public.bench_rollup_hour', 3600 * rw.hours, rw.hours)) t(tbl, per, buckets)
  JOIN pg_class c ON c.oid = t.tbl::regclass
 CROSS JOIN LATERAL (SELECT count(*) AS n, avg(pg_column_size(r.*)) AS sz
                       FROM public.bench_rollup_minute r WHERE t.tbl = 'public.bench_rollup_minute'
                     UNION ALL
                     SELECT count(*), avg(pg_column_size(r.*))
                       FROM public.bench_rollup_hour r WHERE t.tbl = 'public.bench_rollup_hour') x
 WHERE x.n > 0;
\echo 'the minute rows by source:'
SELECT r.source, round(count(*) / min(rw.minutes), 1) AS "rows/minute",
       round(avg(pg_column_size(r.*))) AS "row B", round(avg(pg_column_size(r.vals))) AS "vals B",
       round(sum(pg_column_size(r.*) + 4) / min(rw.secs)) AS "~heap B/s"
  FROM public.bench_rollup_minute r CROSS JOIN rw
 GROUP BY r.source
 ORDER BY 5 DESC;
SQL
