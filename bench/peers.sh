#!/usr/bin/env bash
# pg_chronicle side by side with the recorders users pick today
# (docs/benchmarks.md, "Side by side with the peers"):
#
#   PG_CONFIG=/path/pg_config bench/peers.sh     (as root or as a normal user)
#
# Each recorder runs alone in a fresh cluster of the same server, under the
# load of bench/storage.sh (pg_stat_statements loaded and created, pgbench
# TPC-B -R BENCH_RATE -c BENCH_CLIENTS -j 2, BENCH_IDLE idle sessions,
# shared_buffers 128MB; BENCH_WARMUP seconds, default 60, then the measured
# window of BENCH_SECONDS, default 60), in interleaved rounds (A B C D A B
# C D ...; BENCH_ROUNDS, default 3).  Recorders (BENCH_PEERS, a
# space-separated subset, default all):
#   pg_chronicle      the tree, every setting at its default (1 s snapshots)
#   powa              powa-archivist in local mode (its background worker,
#                     database "powa"), powa.frequency at its 5 s minimum,
#                     pg_stat_statements only (the stats extensions it
#                     supports are optional)
#   pg_statviz        the SQL extension; it has no worker of its own, so a
#                     session calls pgstatviz.snapshot() every second
#                     (psql \watch 1), as the figures of DESIGN.md did
#   pg_wait_sampling  its collector at its defaults (10 ms), no history
# Per run: CPU of the recorder's own processes (utime + stime of
# /proc/PID/stat over the window, % of one core), history bytes per second
# (growth of its tables: main forks of heap and indexes, TOAST, partitions
# summed), its own WAL per second (pg_waldump of the window, the records of
# its relations plus the commits of the transactions that wrote them:
# bench/wal_by_relation.py) and pgbench's tps (warm-up and window).  Then one table: median and
# min-max of the rounds per recorder.
#
# The peers are built with PGXS from Debian's source packages (the private
# apt configuration of tools/provision-pg.sh; never the system's sources)
# and installed into $PG_CONFIG's tree; the tarballs are kept in
# ~/.cache/pg_chronicle/peers.  A tarball the lists name is checked against
# their SHA-256.  When no source tarball of a package downloads, the
# binary package of Debian for this major version is unpacked instead (only
# pg_wait_sampling needs that: the mirror lacks its tarballs), and said so.
# A peer that cannot be had is skipped with the reason, and the script then
# exits 1 after its table.
set -euo pipefail
. "$(dirname "$0")/../tools/lib.sh"
lib_bench_start bench/peers.sh "$@"
pgc=$LIB_PG_CONFIG
idle=${BENCH_IDLE:-100}
rounds=${BENCH_ROUNDS:-3}
warmup=${BENCH_WARMUP:-60}
recorders=${BENCH_PEERS:-pg_chronicle powa pg_statviz pg_wait_sampling}
port=${BENCH_PORT:-$(lib_free_port)}
cache=${PG_CHRONICLE_CACHE:-$HOME/.cache/pg_chronicle}
peers=$cache/peers
mkdir -p "$peers"
pgver=$("$pgc" --version | awk '{print $2}')
major=${pgver%%.*}
pkglib=$("$pgc" --pkglibdir)
extdir=$("$pgc" --sharedir)/extension
log() { echo "peers: $*" >&2; }

# ---------------------------------------------------------------- fetching
# The private apt configuration and source lists of tools/provision-pg.sh
# (it writes them; running it with --fetch-only refreshes them).
aptdir=$cache/apt
if [ ! -f "$aptdir/etc/sources.list" ] || [ -n "$(find "$aptdir/lists/.updated" -mmin +60 2>/dev/null)" ]; then
	"$src/tools/provision-pg.sh" --fetch-only "$major" >/dev/null 2>&1 || true
fi
aptopts=(-o "Dir::Etc::SourceList=$aptdir/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$aptdir/lists" -o "Dir::Cache=$aptdir/cache"
	-o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)")
mirror=$(awk '{for (i = 1; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' "$aptdir/etc/sources.list" 2>/dev/null || true)

# stanzas PKG: "version directory sha256 file" of every upstream tarball of
# source package PKG the lists name, newest version first.
stanzas() {
	apt-cache "${aptopts[@]}" showsrc "$1" 2>/dev/null | awk -v want="$1" '
		function flush() { if (pkg == want) for (i = 0; i < n; i++) print ver, dir, f[i]; n = 0; pkg = "" }
		/^$/ { flush(); next }
		/^Package:/ { pkg = $2 } /^Version:/ { ver = $2 } /^Directory:/ { dir = $2 }
		/^[^ ]/ { insha = ($1 == "Checksums-Sha256:"); next }
		insha && $3 ~ /\.orig\.tar\./ { f[n++] = $1 " " $3 }
		END { flush() }' | sort -k1,1Vr -u
}

# fetch_orig PKG [UPSTREAM]: the path of the newest upstream tarball of PKG
# (of version UPSTREAM if given) that is cached or downloads and matches
# the SHA-256 of the lists.
fetch_orig() {
	local pkg=$1 want=${2:-} ver dir sha file
	while read -r ver dir sha file; do
		[ -n "$file" ] || continue
		[ -z "$want" ] || [ "${ver%-*}" = "$want" ] || continue
		if [ ! -f "$peers/$file" ]; then
			curl -sSf -o "$peers/$file.part" "$mirror/$dir/$file" 2>/dev/null || { rm -f "$peers/$file.part"; continue; }
			if [ "$(sha256sum <"$peers/$file.part" | cut -d' ' -f1)" != "$sha" ]; then
				log "$file does not match the SHA-256 of the lists; ignored"
				rm -f "$peers/$file.part"
				continue
			fi
			mv "$peers/$file.part" "$peers/$file"
		fi
		echo "$peers/$file"
		return 0
	done <<<"$(stanzas "$pkg")"
	return 1
}

# fetch_deb PKG: Debian's binary package postgresql-MAJOR-<PKG> of a version
# the source lists name (newest first).  The binary lists are not fetched, so
# it is checked by dpkg-deb only.
fetch_deb() {
	local bin=postgresql-$major-$1 arch ver dir sha file deb
	arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
	while read -r ver dir sha file; do
		[ -n "$ver" ] || continue
		deb=${bin}_${ver}_$arch.deb
		if [ ! -f "$peers/$deb" ]; then
			curl -sSf -o "$peers/$deb.part" "$mirror/$dir/$deb" 2>/dev/null || { rm -f "$peers/$deb.part"; continue; }
			dpkg-deb --info "$peers/$deb.part" >/dev/null 2>&1 || { rm -f "$peers/$deb.part"; continue; }
			mv "$peers/$deb.part" "$peers/$deb"
		fi
		echo "$peers/$deb"
		return 0
	done <<<"$(stanzas "$1")"
	return 1
}

# pgxs_install NAME TARBALL [SUBDIR]: build and install with PGXS the
# extension of TARBALL (in SUBDIR of it); the log is in the cache.
pgxs_install() {
	local name=$1 tb=$2 sub=${3:-} dir=$peers/build-$1
	rm -rf "$dir"
	mkdir -p "$dir"
	if [ -n "$sub" ]; then
		tar -xf "$tb" -C "$dir" --strip-components=1 --wildcards "*/$sub/*"
	else
		tar -xf "$tb" -C "$dir" --strip-components=1
	fi
	dir=$dir/$sub
	[ -n "${PATCH_SQL:-}" ] && $PATCH_SQL "$dir"
	make -C "$dir" USE_PGXS=1 PG_CONFIG="$pgc" install >"$peers/$name.log" 2>&1 ||
		{ tail -n 20 "$peers/$name.log" >&2; return 1; }
}

# pg_statviz 0.7 (the newest the mirror serves; sid's 1.2.1 tarball is
# missing) reads pg_stat_wal's wal_write, wal_sync, wal_write_time and
# wal_sync_time, which PostgreSQL 18 moved to pg_stat_io: on 18 its
# snapshot_wal() stores NULL for them, as its later releases do.
statviz_pg18() {
	[ "$major" -ge 18 ] || return 0
	if grep -q 'FROM pg_stat_wal;' "$1"/pg_statviz--*.sql; then
		sed -i 's/FROM pg_stat_wal;/FROM (SELECT w.*, NULL::bigint AS wal_write, NULL::bigint AS wal_sync, NULL::float8 AS wal_write_time, NULL::float8 AS wal_sync_time FROM pg_stat_wal w) pg_stat_wal;/' \
			"$1"/pg_statviz--*.sql
		log "pg_statviz: snapshot_wal() patched for PostgreSQL 18 (the wal_write/wal_sync columns it reads left pg_stat_wal)"
	fi
}

declare -A skip=() version=()
have() { [ -f "$extdir/$1.control" ] && { [ -z "${2:-}" ] || [ -f "$pkglib/$2.so" ]; }; }
ctl_version() { sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$extdir/$1.control"; }

prepare() {
	local tb deb tmp
	case $1 in
	pg_chronicle)
		version[$1]=$(ctl_version pg_chronicle) ;;
	powa)
		# powa requires btree_gist, a contrib module: built with PGXS from
		# the server's own source tarball.
		if ! have btree_gist btree_gist; then
			tb=$(ls "$cache"/src/postgresql-"${major}"_"$pgver".orig.tar.* 2>/dev/null | head -n 1)
			[ -n "$tb" ] || tb=$(fetch_orig "postgresql-$major" "$pgver") ||
				{ skip[$1]="no source tarball of PostgreSQL $pgver for btree_gist, which powa requires"; return; }
			pgxs_install btree_gist "$tb" contrib/btree_gist ||
				{ skip[$1]="btree_gist (required by powa) failed to build: $peers/btree_gist.log"; return; }
		fi
		if ! have powa powa; then
			tb=$(fetch_orig powa-archivist) ||
				{ skip[$1]="no tarball of Debian's source package powa-archivist downloads from $mirror"; return; }
			pgxs_install powa "$tb" || { skip[$1]="powa-archivist failed to build: $peers/powa.log"; return; }
		fi
		version[$1]=$(ctl_version powa) ;;
	pg_statviz)
		# PyPI's pg_statviz is the Python client only: neither its sdist
		# nor its wheel ships the extension's SQL.  Debian's source does.
		if ! have pg_statviz; then
			tb=$(fetch_orig pg-statviz) ||
				{ skip[$1]="no tarball of Debian's source package pg-statviz downloads from $mirror (PyPI's pg_statviz has no extension SQL)"; return; }
			PATCH_SQL=statviz_pg18 pgxs_install pg_statviz "$tb" ||
				{ skip[$1]="pg_statviz failed to build: $peers/pg_statviz.log"; return; }
		fi
		version[$1]=$(ctl_version pg_statviz) ;;
	pg_wait_sampling)
		if ! have pg_wait_sampling pg_wait_sampling; then
			if tb=$(fetch_orig pg-wait-sampling); then
				pgxs_install pg_wait_sampling "$tb" ||
					{ skip[$1]="pg_wait_sampling failed to build: $peers/pg_wait_sampling.log"; return; }
			elif deb=$(fetch_deb pg-wait-sampling); then
				log "pg_wait_sampling: no source tarball downloads from $mirror; unpacking Debian's binary package ${deb##*/} (built against Debian's PostgreSQL $major)"
				tmp=$peers/deb-pg_wait_sampling
				rm -rf "$tmp"
				dpkg-deb -x "$deb" "$tmp"
				install -m 755 "$tmp"/usr/lib/postgresql/"$major"/lib/pg_wait_sampling.so "$pkglib/"
				install -m 644 "$tmp"/usr/share/postgresql/"$major"/extension/pg_wait_sampling* "$extdir/"
			else
				skip[$1]="neither a source tarball nor postgresql-$major-pg-wait-sampling downloads from $mirror"
				return
			fi
		fi
		version[$1]=$(ctl_version pg_wait_sampling) ;;
	*)
		skip[$1]="unknown recorder (BENCH_PEERS: pg_chronicle powa pg_statviz pg_wait_sampling)" ;;
	esac
}
run=()
for r in $recorders; do
	prepare "$r"
	if [ -n "${skip[$r]:-}" ]; then
		log "skipping $r: ${skip[$r]}"
	else
		run+=("$r")
	fi
done
[ ${#run[@]} -gt 0 ] || { log "nothing to measure"; exit 1; }

# ---------------------------------------------------------------- one run
dir=
driver=
cleanup() {
	[ -n "$driver" ] && kill "$driver" 2>/dev/null || true
	lib_idle_stop
	driver=
	if [ -n "$dir" ]; then
		lib_cluster_stop "$dir" "$bindir" immediate
		[ -n "${LIB_KEEP:-}" ] || rm -rf "$dir"
	fi
	dir=
}
trap cleanup EXIT
trap 'exit 130' INT TERM

results=$(mktemp /tmp/pg_chronicle-peers-results.XXXXXX)
hz=$(getconf CLK_TCK)
# cpu_ticks PID...: utime + stime of the processes, in clock ticks.
cpu_ticks() {
	local p t=0
	for p in "$@"; do
		t=$((t + $(awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$p/stat")))
	done
	echo "$t"
}

# recorder_pids RECORDER TITLE: the processes of the recorder, children of
# the postmaster whose title is "postgres: TITLE" (pg_chronicle's sampler
# has no database connection and so no row in pg_stat_activity); for
# pg_statviz, the backend of its snapshot session (application_name).
# Fails when there is none.
recorder_pids() {
	local pm p out=
	pm=$(head -n 1 "$dir/data/postmaster.pid")
	if [ "$1" = pg_statviz ]; then
		out=$("$bindir/psql" -X -At -c "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity WHERE application_name = 'pg_statviz snapshots'" 2>/dev/null)
	else
		for p in $(ps -o pid= --ppid "$pm"); do
			grep -qE "^postgres: ($2)\b" "/proc/$p/cmdline" 2>/dev/null && out="$out $p"
		done
	fi
	[ -n "${out// /}" ] && echo $out
}

# run_one RECORDER ROUND: one measurement, appended to $results.
run_one() {
	local rec=$1 round=$2 conf db=postgres schema= title bench pids t0 t1 c0 c1 lsn0 lsn1 s0=0 s1=0 rels wal=0 tps
	case $rec in
	pg_chronicle)
		conf="shared_preload_libraries = 'pg_stat_statements, pg_chronicle'"
		schema=chronicle title='pg_chronicle (collector|sampler)' ;;
	powa)
		conf="shared_preload_libraries = 'pg_stat_statements, powa'
powa.frequency = '5s'"
		db=powa schema=public title='powa' ;;
	pg_statviz)
		conf="shared_preload_libraries = 'pg_stat_statements'"
		schema=pgstatviz title= ;;
	pg_wait_sampling)
		conf="shared_preload_libraries = 'pg_stat_statements, pg_wait_sampling'"
		title='pg_wait_sampling collector' ;;
	esac
	dir=$(mktemp -d /tmp/pg_chronicle-peers.XXXXXX)
	lib_cluster_start "$dir" "$bindir" "$port" "$conf
shared_buffers = '128MB'
max_connections = $((idle + clients + 20))"
	q() { "$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
	q -c 'CREATE EXTENSION pg_stat_statements'
	case $rec in
	pg_chronicle) q -c 'CREATE EXTENSION pg_chronicle' ;;
	powa)
		# Its worker connects to database powa (powa.database) and
		# exits while that lacks the extension: restart once it has it.
		q -c 'CREATE DATABASE powa'
		q -d powa -c 'CREATE EXTENSION pg_stat_statements' -c 'CREATE EXTENSION btree_gist' -c 'CREATE EXTENSION powa'
		lib_run "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w restart >/dev/null ;;
	pg_statviz)
		q -c 'CREATE EXTENSION pg_statviz'
		echo 'SELECT pgstatviz.snapshot() \watch 1' |
			PGAPPNAME='pg_statviz snapshots' "$bindir/psql" -X -q >/dev/null 2>&1 &
		driver=$! ;;
	pg_wait_sampling) q -c 'CREATE EXTENSION pg_wait_sampling' ;;
	esac
	"$bindir/pgbench" -i -q -s "$scale" >/dev/null 2>&1
	lib_idle_sessions "$dir" "$idle"
	lib_poll "the processes of $rec" 60 recorder_pids "$rec" "$title" >/dev/null
	q -c 'CHECKPOINT' >/dev/null
	sleep 3
	pids=$(recorder_pids "$rec" "$title")
	# Sizes: main forks of its tables and their indexes, and their TOAST.
	local size_sql="SELECT coalesce(sum(pg_relation_size(c.oid)
	        + (SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0) FROM pg_index i WHERE i.indrelid = c.oid)
	        + coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)), 0)
	   FROM pg_class c WHERE c.relnamespace = '$schema'::regnamespace AND c.relkind IN ('r', 'm')"
	local rel_sql="SELECT x.f FROM pg_class c CROSS JOIN LATERAL (
	        SELECT c.relfilenode AS f
	        UNION ALL SELECT i.relfilenode FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid WHERE ix.indrelid IN (c.oid, c.reltoastrelid)
	        UNION ALL SELECT t.relfilenode FROM pg_class t WHERE t.oid = c.reltoastrelid) x
	   WHERE c.relnamespace = '$schema'::regnamespace AND c.relkind IN ('r', 'm') AND x.f <> 0"
	# The load runs BENCH_WARMUP seconds before the window, as in
	# bench/storage.sh (a recording that stays on has seen its keys).
	"$bindir/pgbench" -R "$rate" -c "$clients" -j 2 -T "$((warmup + seconds))" >"$dir/pgbench.out" 2>&1 &
	bench=$!
	sleep "$warmup"
	if [ -n "$schema" ]; then
		s0=$(q -d "$db" -c "$size_sql")
		rels=$(q -d "$db" -c "$rel_sql")
	fi
	lsn0=$(q -c 'SELECT pg_current_wal_lsn()')
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086
	c0=$(cpu_ticks $pids)
	wait "$bench"
	# shellcheck disable=SC2086
	c1=$(cpu_ticks $pids) || { log "$rec: a process of it ended during the window"; c1=$c0; }
	t1=$(date +%s.%N)
	lsn1=$(q -c 'SELECT pg_current_wal_lsn()')
	if [ -n "$schema" ]; then
		# Relations made or rewritten in the window (new partitions, TRUNCATE) too.
		rels=$(printf '%s\n%s\n' "$rels" "$(q -d "$db" -c "$rel_sql")" | sort -u)
		# shellcheck disable=SC2086
		wal=$("$bindir/pg_waldump" -p "$dir/data/pg_wal" -s "$lsn0" -e "$lsn1" 2>/dev/null |
			python3 "$src/bench/wal_by_relation.py" $rels | awk '{s += $3} END {print s + 0}')
		s1=$(q -d "$db" -c "$size_sql")
	fi
	tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$dir/pgbench.out" | head -n 1)
	awk -v r="$round" -v rec="$rec" -v n="$(wc -w <<<"$pids")" -v c="$((c1 - c0))" -v hz="$hz" \
		-v t0="$t0" -v t1="$t1" -v s="$((s1 - s0))" -v w="$wal" -v tps="${tps:-0}" 'BEGIN {
		secs = t1 - t0
		printf "%d\t%s\t%d\t%.3f\t%.2f\t%.2f\t%.1f\t%.1f\n", r, rec, n, 100 * c / hz / secs, s / secs / 1024, w / secs / 1024, tps, secs
	}' | tee -a "$results" >&2
	cleanup
}

echo "peers side by side, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "PostgreSQL $pgver ($pgc); machine: $(nproc) cores, $(uname -r)"
echo "load: pgbench TPC-B -s $scale -R $rate -c $clients -j 2 -T $((warmup + seconds)) (window: the last $seconds s) + $idle idle sessions, shared_buffers 128MB, pg_stat_statements loaded and created"
for r in "${run[@]}"; do echo "recorder: $r ${version[$r]}"; done
for r in "${!skip[@]}"; do echo "skipped: $r: ${skip[$r]}"; done
log "round recorder processes cpu% hist_KB/s wal_KB/s tps secs"
for round in $(seq 1 "$rounds"); do
	for r in "${run[@]}"; do
		run_one "$r" "$round"
	done
done
# Debug assertions of the server (one more short-lived cluster is not needed:
# pg_config says how it was configured).
case $("$pgc" --configure) in *enable-cassert*) build=cassert ;; *) build=release ;; esac
echo "build: $build; $rounds interleaved rounds of ${run[*]}"
echo
echo "per run (round, recorder, processes measured, CPU % of one core, history KB/s, own WAL KB/s, tps, window s):"
sed 's/^/  /' "$results"
echo
python3 - "$results" <<'PY'
import statistics
import sys

runs = {}
for line in open(sys.argv[1]):
    f = line.split('\t')
    runs.setdefault(f[1], []).append([float(x) for x in f[3:7]])

def cell(vals, fmt):
    med = statistics.median(vals)
    return (fmt % med) + ' (' + (fmt % min(vals)) + '-' + (fmt % max(vals)) + ')'

print('medians of the rounds (min-max); CPU of the recorder\'s processes, % of one core;')
print('history: its tables\' growth; WAL: pg_waldump of the window, its relations + their commits')
hdr = ('recorder', 'CPU %', 'history KB/s', 'own WAL KB/s', 'tps')
rows = [hdr]
for rec, v in runs.items():
    cols = list(zip(*v))
    rows.append((rec, cell(cols[0], '%.2f'), cell(cols[1], '%.2f'), cell(cols[2], '%.2f'), cell(cols[3], '%.0f')))
w = [max(len(r[i]) for r in rows) for i in range(len(hdr))]
for r in rows:
    print('  '.join(r[i].ljust(w[i]) if i == 0 else r[i].rjust(w[i]) for i in range(len(hdr))))
PY
rm -f "$results"
if [ ${#skip[@]} -gt 0 ]; then
	for r in "${!skip[@]}"; do log "NOT MEASURED: $r: ${skip[$r]}"; done
	exit 1
fi
