#!/usr/bin/env bash
# Size and speed of a run archive (pg-chronicle export / import, docs/runs.md
# "Run archives") of a one-hour run: 3,600 snapshot intervals with every
# source on and ~3.6 million pgbench transactions (bench/report_gen.sql, the
# hour of bench/report.sh), exported and imported by the commands a user runs.
#
#   PG_CONFIG=/path/to/pg_config bench/archive.sh      (as root or as a non-root user)
#
# Installs the extension into that PostgreSQL, starts a throwaway cluster in
# $BENCH_DIR (default /tmp/archive-bench) on $BENCH_PORT (default 5621),
# generates the hour once, then $BENCH_REPS times (default 3): exports the run
# and imports the archive into two new databases of the same cluster
# (repositories that do not record), one of them with a trigger of its own on
# chronicle.app_transaction, which makes the import check the foreign key of
# each pgbench row by its trigger (as imports did before they checked it
# once), in turn first, printing the wall-clock seconds of each; and times
# the server's export, chronicle.run_export(), written to a file by psql.
# Then the bytes: the archive, each member before compression, the hour's
# history as stored (chronicle.history and chronicle.snapshot, which hold
# that hour only) and the run's pgbench log as pgbench -l writes it,
# compressed with xz -6.  $PYTHON (default python3) must have psycopg.
# BENCH_KEEP=1 keeps the cluster, BENCH_REUSE=1 times it again.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/tools/lib.sh"
lib_as_pgchronicle bench/archive.sh "$@"
lib_bench_hour archive 5621
# (from $out: python -m puts the current directory first on its path, and a
# built tree's pg_chronicle.so there would be taken for the client)
pgc() { (cd "$out" && PYTHONPATH="$src/client" "$py" -m pg_chronicle "$@"); }
secs() { echo "$2 - $1" | bc; }

echo "== export and import of bench-1h, $reps times (seconds, wall clock)"
# Each archive is imported twice, in turn first: into archive_repo, and into
# archive_checked, whose app_transaction has a trigger of its own (a no-op
# for each statement), so that chronicle._import_run() inserts the pgbench
# rows with the foreign key checked by its trigger, once per row (39_import.sql).
for i in $(seq "$reps"); do
	for db in archive_repo archive_checked; do
		psql -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
		PGDATABASE=$db psql -c 'CREATE EXTENSION pg_chronicle'
	done
	PGDATABASE=archive_checked psql -c '
		CREATE FUNCTION public.bench_noop() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
		CREATE TRIGGER bench_noop AFTER INSERT ON chronicle.app_transaction
			FOR EACH STATEMENT EXECUTE FUNCTION public.bench_noop()'
	rm -f "$out/run.pgca"
	s=$(date +%s.%N)
	pgc export bench-1h -o "$out/run.pgca" >/dev/null
	e=$(date +%s.%N)
	line=$(printf 'run %d: export %.2f s' "$i" "$(secs "$s" "$e")")
	# the server's export, written by psql as docs/runs.md says
	s=$(date +%s.%N)
	psql -At -c "SELECT encode(chronicle.run_export('bench-1h'), 'base64')" | base64 -d > "$out/sql.pgca"
	e=$(date +%s.%N)
	line+=$(printf ', run_export %.2f s' "$(secs "$s" "$e")")
	order="archive_repo archive_checked"
	[ $((i % 2)) -eq 0 ] && order="archive_checked archive_repo"
	for db in $order; do
		s=$(date +%s.%N)
		PGDATABASE=$db pgc import "$out/run.pgca" >/dev/null
		e=$(date +%s.%N)
		line+=$(printf ', import into %s %.2f s' "$db" "$(secs "$s" "$e")")
	done
	echo "$line"
done
same=$(PGDATABASE=archive_repo psql -At -c "SELECT (SELECT count(*) FROM chronicle.app_transaction),
       (SELECT count(*) FROM chronicle.archive_snapshot)")
checked=$(PGDATABASE=archive_checked psql -At -c "SELECT (SELECT count(*) FROM chronicle.app_transaction),
       (SELECT count(*) FROM chronicle.archive_snapshot)")
echo "imported: transactions|snapshots $same, checked per row $checked; origin: $(psql -At -c "SELECT (SELECT count(*) FROM chronicle.app_transaction),
       (SELECT count(*) FROM chronicle.snapshot)")"

echo "== bytes"
archive=$(stat -c %s "$out/run.pgca")
echo "archive: $archive bytes; run_export's (not compressed): $(stat -c %s "$out/sql.pgca") bytes"
"$py" - "$out/run.pgca" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1], "r:xz") as tar:
    for m in tar.getmembers():
        print(f"  member {m.name}: {m.size} bytes")
PY
history=$(psql -At -c "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
                        WHERE c.relnamespace = 'chronicle'::regnamespace AND c.relkind = 'r'
                          AND (c.relname ~ '^history_p' OR c.relname ~ '^snapshot_p')")
echo "history of the hour as stored (history and snapshot, with indexes and TOAST): $history bytes"
# the pgbench log of the run: client_id transaction_no time script_no
# time_epoch time_us, as pgbench -l writes it
psql -At -c "COPY (SELECT t.client_id || ' ' || t.tx_no || ' ' || t.latency_us || ' ' || t.script_no || ' '
                          || floor(extract(epoch FROM t.ts))::bigint || ' '
                          || extract(microseconds FROM t.ts)::bigint % 1000000
                     FROM chronicle.app_transaction t ORDER BY t.ts) TO STDOUT" > "$out/pgbench.log"
log=$(stat -c %s "$out/pgbench.log")
s=$(date +%s.%N)
xz -6 -T1 -k "$out/pgbench.log"
e=$(date +%s.%N)
logxz=$(stat -c %s "$out/pgbench.log.xz")
echo "pgbench log: $log bytes, xz -6: $logxz bytes in $(secs "$s" "$e") s"
echo "target (history + log compressed): $((history + logxz)) bytes; archive / target: $(echo "scale=3; $archive / ($history + $logxz)" | bc)"
