#!/usr/bin/env bash
# Run every test layer of pg_chronicle against every provisioned PostgreSQL:
#   0. once: META.json, the documentation against the code and its links
#      (tools/check-docs.py), tools/provision-pg.sh's choice of version,
#   1. pg_regress (sql/, expected/) on a temporary instance,
#   2. pgTAP suites (test/pgtap/) with pg_prove on a temporary instance,
#   3. Perl TAP tests (test/t/) with PostgreSQL::Test::Cluster (those marked
#      "# one_version:" against the last server only),
#   4. the Python client (client/) with pytest against a server it starts,
#      in a venv under ~/.cache/pg_chronicle/venv-client (pip from PyPI);
#      the tests marked one_version against the last server only, with
#      PG_CHRONICLE_OTHER_PG_CONFIG naming the other server's pg_config
#      (run archives across versions; skipped with one server),
#   5. not by default: every benchmark of bench/ run once, briefly, to see
#      that it still runs (run_bench; PG_CHRONICLE_LAYERS=bench).
# Ends with "N passed, N failed, N skipped" and exits non-zero on any failure.
#
#   tools/test.sh                       PostgreSQL 17 and 18, provisioned
#   PG_CONFIG=/path/pg_config tools/test.sh   that server only, nothing built
#   PG_CHRONICLE_VERSIONS="18" tools/test.sh  only 18
#   PG_CHRONICLE_LAYERS="regress tap" tools/test.sh   some layers only
#                                       (tools, regress, pgtap, tap, client;
#                                       bench, not by default)
#   PG_CHRONICLE_PYTEST_ARGS="-k bench" tools/test.sh   some client tests only
#   PROVE_TESTS=test/t/001_worker.pl tools/test.sh    some TAP files only
#   PG_CHRONICLE_PROVE_JOBS=1 tools/test.sh   TAP files one at a time
#                                       (default 2: they mostly wait)
#
# initdb refuses to run as root: as root, this script installs the system
# packages it needs, creates the unprivileged user "pgchronicle" and runs
# itself as that user on a copy of the tree.
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)

if [ "$(id -u)" = 0 ]; then
	"$src/tools/install-deps.sh" || exit 1
	exec "$src/tools/as-pgchronicle.sh" tools/test.sh "$@"
fi

cd "$src"
. tools/lib.sh
layers=${PG_CHRONICLE_LAYERS:-tools regress pgtap tap client}
passed=0
failed=0
skipped=0
summary=()

server_layers=$(tr ' ' '\n' <<<"$layers" | grep -vx -e tools -e '' || true)
if [ -z "$server_layers" ]; then
	configs=()
elif [ -n "${PG_CONFIG:-}" ]; then
	configs=("$PG_CONFIG")
else
	"$src/tools/install-deps.sh" || exit 1
	configs=()
	for v in ${PG_CHRONICLE_VERSIONS:-17 18}; do
		if cfg=$("$src/tools/provision-pg.sh" "$v" | tail -n 1) && [ -x "$cfg" ]; then
			configs+=("$cfg")
		else
			fail "pg$v: provisioning failed"
		fi
	done
fi

# count_tap FILE: add the ok / not ok lines of TAP output to the totals.
count_tap() {
	local p f s w
	p=$(grep -cE '^[[:space:]]*ok [0-9]+' "$1" || true)
	f=$(grep -cE '^[[:space:]]*not ok [0-9]+' "$1" || true)
	s=$(grep -cE '^[[:space:]]*ok [0-9]+.*# *(skip|SKIP)' "$1" || true)
	# A whole TAP file skipped (skip_all): prove says "file .. skipped: why".
	w=$(grep -cE '^[^[:space:]].*\.\. skipped: ' "$1" || true)
	echo "$((p - s)) $f $((s + w))"
}

# tally NAME RC PASSED FAILED SKIPPED: add a layer's counts to the totals
# and its line to the summary; a runner that failed (RC not 0) without a
# failing test line still counts as one failure.
tally() {
	local name=$1 rc=$2 p=$3 f=$4 s=$5
	if [ "$rc" -ne 0 ] && [ "$f" = 0 ]; then
		f=1
	fi
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	summary+=("$name: $p passed, $f failed, $s skipped")
}

# fail SUMMARY: one failure that is not a test's (provisioning, the build).
fail() {
	echo "FAILED: $1" >&2
	failed=$((failed + 1))
	summary+=("$1")
}

# count_pytest FILE: the same from pytest -v (an ERROR, in a fixture, fails).
count_pytest() {
	local p f s
	p=$(grep -cE '::[^ ]+ PASSED' "$1" || true)
	f=$(grep -cE '::[^ ]+ (FAILED|ERROR)' "$1" || true)
	s=$(grep -cE '::[^ ]+ (SKIPPED|XFAIL|XPASS)' "$1" || true)
	echo "$p $f $s"
}

# failures LAYER FILE: the failing tests of a layer's output, a line each
# (the summary names them: CI keeps only the end of the output).
failures() {
	case $1 in
		client)
			grep -oE '^[^ ]+::[^ ]+ (FAILED|ERROR)' "$2" ;;
		tap)
			awk '/^[^ #].*\.pl \.+ *$/ { file = $1 }
				 /^[[:space:]]*not ok [0-9]+/ { sub(/^[[:space:]]*/, ""); print file ": " $0 }' "$2" ;;
		*)
			grep -E '^[[:space:]]*not ok [0-9]+' "$2" | sed 's/^[[:space:]]*//' ;;
	esac | head -n 20
}

# run_client PG_CONFIG [PYTEST_ARGS...]
run_client() {
	local cfg=$1 venv
	shift
	venv=$(lib_client_venv) || { echo "FAILED: could not set up the client's venv" >&2; return 1; }
	(cd client && PG_CONFIG="$cfg" PATH="$venv/bin:$PATH" \
		"$venv/bin/python" -m pytest -v -p no:cacheprovider "$@" ${PG_CHRONICLE_PYTEST_ARGS:-})
}

# run_bench PG_CONFIG: every script of bench/ once, briefly (a few seconds
# of load, one round, small inputs), against that server: a TAP line each,
# ok when it ran to its end.  It checks that the benchmarks still run, not
# their figures (a cassert build, short windows); the tail of a failing
# one's output follows its line.  snapshot_ab.sh compares this tree with
# itself, its base in a copy of the installation; PYTHON is the client's
# venv.  Left out for time: analysis_bench.sh's rollup of a generated day
# (BENCH_SKIP_ROLLUPS), rollup_catchup.sh's generated backlog (BENCH_DAYS=0:
# the collector's own history).
run_bench() (			# pg_config
	cfg=$1
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	cp -a "$("$cfg" --bindir)/.." "$tmp/base"
	short="BENCH_WARMUP=5 BENCH_SECONDS=10 BENCH_IDLE=10"
	venv=$(lib_client_venv) || { echo "FAILED: could not set up the client's venv" >&2; return 1; }
	pairs="BENCH_PAIRS=1 BENCH_PAIR_SECONDS=5"
	n=0
	bad=0
	while IFS='|' read -r script env; do
		n=$((n + 1))
		# shellcheck disable=SC2086  # env: words of NAME=value
		if env PG_CONFIG="$cfg" PGBIN="$("$cfg" --bindir)" PYTHON="$venv/bin/python" $env \
			bash -c "$script" >"$tmp/out" 2>&1; then
			echo "ok $n - $script"
		else
			echo "not ok $n - $script ($env)"
			tail -n 30 "$tmp/out" | sed 's/^/# /'
			bad=1
		fi
	done <<LIST
bench/storage.sh|$short
bench/collector.sh|BENCH_SECONDS=10 $pairs
bench/snapshot_ab.sh|BENCH_BASE=HEAD BENCH_BASE_PG_CONFIG=$tmp/base/bin/pg_config $short $pairs
bench/peers.sh|BENCH_PEERS=pg_chronicle BENCH_ROUNDS=1 $short
bench/central.sh|BENCH_SERVERS=1 $short $pairs
bench/central_backfill.sh|BENCH_REPS=1
bench/report.sh|BENCH_REPS=1
bench/archive.sh|BENCH_REPS=1
bench/analysis_bench.sh|BENCH_REPS=1 BENCH_SKIP_ROLLUPS=1
bench/rollup_catchup.sh|BENCH_DAYS=0 BENCH_AFTER=10 BENCH_IDLE=10
bench/scale.sh|BENCH_WARMUP=3 BENCH_SECONDS=5 BENCH_SCALE=1 BENCH_STATEMENTS_LEVELS=100 BENCH_DATABASE_LEVELS=2 BENCH_CONNECTION_LEVELS=20/4
bench/pgbench_log_load.sh|LINES=100000 REPEAT=1 PORT=$(lib_free_port)
bench/unpack_memory.sh|BENCH_ROWS=100000
bench/sampling.sh buffers|
bench/sampling.sh accuracy|ROUNDS=1 SLEEPS=0.5
bench/sampling.sh lost|DURATION=3
cc -O2 -o $tmp/wakeup_floor bench/wakeup_floor.c && $tmp/wakeup_floor|
LIST
	echo "1..$n"
	return $bad
)

# In a subshell: the cluster's PG* variables stay in it.
run_pgtap() (			# pg_config
	cfg=$1
	bindir=$("$cfg" --bindir)
	if [ ! -f "$("$cfg" --sharedir)/extension/pgtap.control" ]; then
		echo "SKIPPED: pgTAP is not installed in $("$cfg" --sharedir)" >&2
		return 3
	fi
	if ! command -v pg_prove >/dev/null; then
		echo "SKIPPED: pg_prove not found" >&2
		return 3
	fi
	tmp=$(mktemp -d)
	lib_cluster_start "$tmp" "$bindir" "$(lib_free_port)" "chronicle.database = 'chronicle_tap'
chronicle.enabled = off" || return 1
	"$bindir/createdb" chronicle_tap
	"$bindir/psql" -X -q -d chronicle_tap \
		-c 'CREATE EXTENSION pgtap' -c 'CREATE EXTENSION pg_chronicle'
	out=$tmp/pg_prove.out
	PATH="$bindir:$PATH" pg_prove -v -h "$PGHOST" -p "$PGPORT" -U postgres -d chronicle_tap \
		test/pgtap/*.sql >"$out" 2>&1
	rc=$?
	cat "$out"
	lib_cluster_stop "$tmp" "$bindir"
	cp "$out" pgtap.out
	rm -rf "$tmp"
	return $rc
)

# The checks that do not depend on the server, once: META.json, the
# documentation, and the choice of version of tools/provision-pg.sh against
# a mirror made on disk.
run_once() {			# name command...
	local name=$1 out rc p f s
	shift
	out=$(mktemp)
	"$@" >"$out" 2>&1
	rc=$?
	cat "$out"
	read -r p f s < <(count_tap "$out")
	tally "$name" "$rc" "$p" "$f" "$s"
	rm -f "$out"
}
if [[ " $layers " == *" tools "* ]]; then
	run_once META.json python3 tools/check-meta.py META.json pg_chronicle.control
	run_once docs python3 tools/check-docs.py
	run_once provision-pg.sh test/tools/provision.sh
fi

for cfg in "${configs[@]}"; do
	ver=$("$cfg" --version)
	echo "=== $ver ($cfg)"
	if ! lib_build_install "$cfg" 2>&1; then
		fail "$ver: build failed"
		continue
	fi
	grep -E 'warning:' build.log && echo "(compiler warnings above)"

	for layer in $layers; do
		[ "$layer" = tools ] && continue
		out=$(mktemp)
		case $layer in
			regress)
				make PG_CONFIG="$cfg" TAP_TESTS= installcheck >"$out" 2>&1
				rc=$?
				cat "$out"
				[ $rc -ne 0 ] && [ -f regression.diffs ] && cat regression.diffs
				;;
			pgtap)
				run_pgtap "$cfg" >"$out" 2>&1
				rc=$?
				cat "$out"
				;;
			tap)
				# the files marked "# one_version:" (what they check does not
				# depend on the server's version) against the last server only
				tests=${PROVE_TESTS:-}
				if [ -z "$tests" ] && [ "$cfg" != "${configs[-1]}" ]; then
					tests=$(grep -L '^# one_version:' test/t/*.pl | tr '\n' ' ')
				fi
				make PG_CONFIG="$cfg" tapcheck ${tests:+PROVE_TESTS="$tests"} \
					PROVE_FLAGS="-v -j${PG_CHRONICLE_PROVE_JOBS:-2}" >"$out" 2>&1
				rc=$?
				cat "$out"
				if [ $rc -ne 0 ]; then
					for f in tmp_check/log/regress_log_*; do
						[ -f "$f" ] && { echo "--- $f (last 60 lines)"; tail -n 60 "$f"; }
					done
				fi
				;;
			bench)
				run_bench "$cfg" >"$out" 2>&1
				rc=$?
				cat "$out"
				;;
			client)
				# the tests whose checks do not depend on the server's version
				# (one_version: lint, recipes, pages in a browser) against
				# the last server only
				# (PG_CHRONICLE_OTHER_PG_CONFIG: the other version, built and
				# installed above, for what crosses versions: run archives)
				if [ "$cfg" = "${configs[-1]}" ]; then
					PG_CHRONICLE_OTHER_PG_CONFIG=${PG_CHRONICLE_OTHER_PG_CONFIG:-$(
						[ ${#configs[@]} -gt 1 ] && echo "${configs[0]}")} \
						run_client "$cfg" >"$out" 2>&1
				else
					run_client "$cfg" -m "not one_version" >"$out" 2>&1
				fi
				rc=$?
				cat "$out"
				;;
		esac
		if [ "$layer" = client ]; then
			read -r p f s < <(count_pytest "$out")
		else
			read -r p f s < <(count_tap "$out")
		fi
		if [ "$rc" = 3 ]; then
			skipped=$((skipped + 1))
			summary+=("$ver $layer: SKIPPED")
		else
			tally "$ver $layer" "$rc" "$p" "$f" "$s"
			while IFS= read -r line; do
				summary+=("    $line")
			done < <(failures "$layer" "$out")
		fi
		rm -f "$out"
	done
done

echo
echo "=== summary"
for line in "${summary[@]}"; do
	echo "  $line"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
