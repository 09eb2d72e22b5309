#!/usr/bin/env bash
# Speed and size of pg-chronicle report over a one-hour run: 3,600 snapshot
# intervals with every source on and ~3.6 million pgbench transactions
# (bench/report_gen.sql), reported by the command a user runs.
#
#   PG_CONFIG=/path/to/pg_config bench/report.sh      (as root or as a non-root user)
#
# Installs the extension into that PostgreSQL, starts a throwaway cluster in
# $BENCH_DIR (default /tmp/report-bench) on $BENCH_PORT (default 5611),
# generates the history once, then runs `pg-chronicle report bench-1h`
# $BENCH_REPS times (default 3) and prints the wall-clock seconds of each
# (Python start, queries, index.html, every PNG and SVG; run 1 the first
# report of the run, which computes and keeps its pgbench numbers), the
# split of one more (the pictures of the panels without a chart are drawn
# while the queries run, the rest after them), and the sizes of index.html
# and of the folder.  $PYTHON (default
# python3) must have psycopg and matplotlib.
#
# BENCH_TRIALS=N: two configurations of N trials each instead, every trial an
# hour generated as above (on days $day, $day + 1, ..., interleaved A#1 B#1
# A#2 ...), and the command timed is `pg-chronicle report A --vs B` (the
# trials panel, then the comparison of the two median trials).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/tools/lib.sh"
lib_bench_hour report 5611

trials=${BENCH_TRIALS:-0}
args=(bench-1h)
if [ "$trials" -gt 0 ] && [ -z "${BENCH_REUSE:-}" ]; then
	# the hour generated above is A#1; each next one, a day later, is renamed
	# as it comes
	psql -c "UPDATE chronicle.run SET label = 'A#1' WHERE label = 'bench-1h'"
	for k in $(seq 2 $((2 * trials))); do
		cfg=$([ $((k % 2)) -eq 1 ] && echo A || echo B)
		label="$cfg#$(( (k + 1) / 2 ))"
		d=$(date -u -d "$day + $((k - 1)) days" +%F)
		echo "== generating $label on $d"
		psql -v day="$d" -f "$src/bench/report_gen.sql" >/dev/null
		psql -c "UPDATE chronicle.run SET label = '$label' WHERE label = 'bench-1h'"
	done
fi
[ "$trials" -gt 0 ] && args=(A --vs B)

# A run's pgbench numbers are kept once read (chronicle.app_memo, 0.3.0):
# emptied here, run 1 is the first report after the logs are loaded (it
# computes them), the next ones read them; BENCH_COLD=1 empties it before
# every run.
memo=$(psql -At -c "SELECT to_regclass('chronicle.app_memo') IS NOT NULL")
echo "== pg-chronicle report ${args[*]}, $reps times (seconds, wall clock)"
times=()
for i in $(seq "$reps"); do
	rm -rf "$out/r"
	if [ "$memo" = t ] && { [ "$i" -eq 1 ] || [ -n "${BENCH_COLD:-}" ]; }; then
		psql -c "DELETE FROM chronicle.app_memo"
	fi
	s=$(date +%s.%N)
	PYTHONPATH="$src/client" "$py" -m pg_chronicle report "${args[@]}" -o "$out/r" >/dev/null
	e=$(date +%s.%N)
	t=$(echo "$e - $s" | bc)
	times+=("$t")
	printf 'run %d: %.2f s\n' "$i" "$t"
done
printf 'best %.2f s, median %.2f s\n' "$(printf '%s\n' "${times[@]}" | sort -n | head -1)" \
	"$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (reps + 1) / 2 ))p")"
[ "$trials" -eq 0 ] && PYTHONPATH="$src/client" "$py" - "$out/s" <<'PY'
import pathlib, sys, time
t0 = time.monotonic()
from pg_chronicle import db
from pg_chronicle.report import write_report
conn = db.connect(None)
t1 = time.monotonic()
write_report(conn, "bench-1h", None, None, None, pathlib.Path(sys.argv[1]))
t = write_report.timings
print(f"split of one report: imports and connect {t1 - t0:.2f} s, queries {t['queries']:.2f} s, "
      f"index.html {t['html']:.2f} s, PNG and SVG after the queries {t['pictures']:.2f} s")
PY
html=$(stat -c %s "$out/r/index.html")
echo "index.html: $html bytes ($(echo "scale=2; $html / 1048576" | bc) MB); folder: $(du -sh "$out/r" | cut -f1) in $(ls "$out/r" | wc -l) files"
echo "intervals: $(psql -At -c "SELECT count(*) FROM chronicle.intervals('$day', '$day'::timestamptz + interval '3600 s')"), transactions: $(psql -At -c 'SELECT count(*) FROM chronicle.app_transaction')"
