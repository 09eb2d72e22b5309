#!/usr/bin/env bash
# Provision a PostgreSQL install for building and testing pg_chronicle.
#
# usage: tools/provision-pg.sh [--fetch-only] MAJOR        (MAJOR = 17 or 18)
#
# Prints the path of the provisioned pg_config on its last line of stdout
# (with --fetch-only: the source tarball it would build, or the pg_config of
# the cached install it would reuse, and nothing is built).  One line on
# stderr says which version it took and why.
#
# PostgreSQL is built from the upstream tarball that Debian ships in its
# source package (postgresql-17 from trixie, postgresql-18 from sid), found
# through a private apt configuration kept in the cache folder: the system's
# apt sources are never touched.  The newest version whose tarball can be
# had is taken: the newest upload a mirror lists is not always complete, so
# older point releases still in the pool follow, and a complete install in
# the cache serves when nothing downloads.  Debian's own patches are not
# applied; they only adapt paths to Debian's packaging.  pgTAP and pg_cron
# are built into the same install.  The result is cached, keyed by the full
# version, so a second run costs a few seconds.
#
# Environment:
#   PG_CHRONICLE_CACHE   cache folder (default ~/.cache/pg_chronicle)
#   PG_CHRONICLE_JOBS    make -j (default: number of cores + 1)
#   PG_CHRONICLE_BUILD   "debug" (default: assertions on, what the tests use)
#                        or "release" (no assertions, what benchmarks measure;
#                        installed beside it as pg<MAJOR>-<version>-release)
#                        or "valgrind" (assertions on, -DUSE_VALGRIND, -O1 with
#                        frame pointers, PostgreSQL's src/tools/valgrind.supp
#                        installed as <sharedir>/valgrind.supp: what
#                        tools/valgrind.sh runs; pg<MAJOR>-<version>-valgrind)
#   PG_CHRONICLE_MIRROR  Debian mirror (default: the one the system uses)
#   PG_CHRONICLE_APT_TRUST  apt's option for that mirror (default: signed by
#                        Debian's archive key)
set -euo pipefail

fetch_only=
if [ "${1:-}" = --fetch-only ]; then
	fetch_only=1
	shift
fi
major=${1:?usage: provision-pg.sh [--fetch-only] MAJOR}
cache=${PG_CHRONICLE_CACHE:-$HOME/.cache/pg_chronicle}
jobs=${PG_CHRONICLE_JOBS:-$(( $(nproc) + 1 ))}
mkdir -p "$cache"/{apt/lists/partial,apt/cache/archives/partial,apt/etc,src,build,install,logs}

log() { echo "provision-pg[$major]: $*" >&2; }

flavour=${PG_CHRONICLE_BUILD:-debug}
case "$flavour" in
	debug) suffix= ; assert=--enable-cassert; cflags=-O2 ;;
	release) suffix=-release; assert= ; cflags=-O2 ;;
	# Memcheck knows PostgreSQL's memory contexts (USE_VALGRIND); -O1 and
	# frame pointers keep its stacks close to the source.
	valgrind) suffix=-valgrind; assert=--enable-cassert
		cflags="-O1 -fno-omit-frame-pointer -DUSE_VALGRIND" ;;
	*) log "PG_CHRONICLE_BUILD must be debug, release or valgrind, not $flavour"; exit 2 ;;
esac

case "$major" in
	17) suite=trixie ;;
	18) suite=sid ;;
	*) log "unsupported major version $major (17 or 18)"; exit 2 ;;
esac

# The private apt configuration.  The mirror is the one the system already
# uses, read from its own sources, so nothing here names a host.
# PG_CHRONICLE_MIRROR and PG_CHRONICLE_APT_TRUST replace them (the tests of
# this script serve a mirror from a local directory, which apt trusts with
# PG_CHRONICLE_APT_TRUST=trusted=yes).
mirror=${PG_CHRONICLE_MIRROR:-}
[ -n "$mirror" ] || mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list 2>/dev/null || true)
trust=${PG_CHRONICLE_APT_TRUST:-signed-by=/usr/share/keyrings/debian-archive-keyring.gpg}
aptdir=$cache/apt
cat > "$aptdir/etc/sources.list" <<SRC
deb-src [$trust] $mirror trixie main
deb-src [$trust] $mirror sid main
SRC
aptopts=(-o "Dir::Etc::SourceList=$aptdir/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$aptdir/lists" -o "Dir::Cache=$aptdir/cache"
	-o Debug::NoLocking=1 -o APT::Sandbox::User=$(id -un))

# Refresh the source lists at most once an hour.
stamp=$aptdir/lists/.updated
if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +60 2>/dev/null)" ]; then
	if apt-get "${aptopts[@]}" -qq update >"$cache/logs/apt-update.log" 2>&1; then
		touch "$stamp"
	else
		log "apt-get update failed (see $cache/logs/apt-update.log); using cached lists"
	fi
fi

# Which PostgreSQL to build.  The lists name the newest upload of the
# source package, but a mirror may list an upload whose files it does not
# (yet, or any longer) serve, while the tarballs of older point releases of
# the same major stay in the pool.  So the candidates are the upstream
# versions the lists name, newest first, then every older point release of
# the same major; the first one that is already installed in the cache, or
# whose upstream tarball is here or downloads, is taken.  A tarball the
# lists name is checked against their SHA-256 (the lists are signed); an
# older point release the lists no longer name cannot be checked that way
# and is only tested for integrity.  Only the upstream tarball is needed:
# Debian's patches are not applied.
showsrc=$(apt-cache "${aptopts[@]}" showsrc "postgresql-$major" 2>/dev/null || true)
listed=$(awk -v want="postgresql-$major" '/^Package:/ {p = $2} /^Version:/ && p == want {v = $2; sub(/-[^-]*$/, "", v); print v}' <<<"$showsrc" | sort -Vru)
candidates=$listed
newest=$(head -n 1 <<<"$listed")
if [[ $newest =~ ^$major\.([0-9]+)$ ]]; then
	for ((m = BASH_REMATCH[1] - 1; m >= 0; m--)); do
		grep -qx "$major.$m" <<<"$listed" || candidates+=$'\n'"$major.$m"
	done
fi

# sha256 of FILE as the lists give it, empty when they do not name it.
listed_sha256() {
	awk -v f="$1" '/^Checksums-Sha256:/ {c = 1; next} /^[^ ]/ {c = 0} c && $3 == f {print $1; exit}' <<<"$showsrc"
}

tried=()
upver=
reason=
for v in $candidates; do
	if [ -f "$cache/install/pg$major-$v$suffix/.complete" ]; then
		upver=$v
		reason="already built in the cache"
		[ "$v" = "$newest" ] || reason+="; no tarball of a newer version downloads"
		break
	fi
	tarball=postgresql-${major}_$v.orig.tar.bz2
	url=$mirror/pool/main/p/postgresql-$major/$tarball
	sha=$(listed_sha256 "$tarball")
	if [ ! -f "$cache/src/$tarball" ]; then
		if ! curl -sSfL --retry 2 -o "$cache/src/$tarball.part" "$url" 2>/dev/null; then
			rm -f "$cache/src/$tarball.part"
			tried+=("$url")
			continue
		fi
		if [ -n "$sha" ] && ! sha256sum --quiet -c <<<"$sha  $cache/src/$tarball.part" >/dev/null 2>&1; then
			log "$url does not match the SHA-256 of the signed lists; skipped"
			rm -f "$cache/src/$tarball.part"
			tried+=("$url (checksum mismatch)")
			continue
		fi
		if ! bzip2 -tq "$cache/src/$tarball.part" 2>/dev/null; then
			rm -f "$cache/src/$tarball.part"
			tried+=("$url (corrupt)")
			continue
		fi
		mv "$cache/src/$tarball.part" "$cache/src/$tarball"
	fi
	upver=$v
	if [ "$v" = "$newest" ]; then
		reason="the newest version the lists name"
	elif grep -qx "$v" <<<"$listed"; then
		reason="listed; the tarball of ${newest} is not on the mirror"
	else
		reason="an older point release still in the pool; ${newest:-no version} is listed but not downloadable"
	fi
	[ -n "$sha" ] && reason+=", SHA-256 checked" || reason+=", not in the lists: integrity checked only"
	break
done

if [ -z "$upver" ]; then
	# Nothing listed is available: the newest complete install in the
	# cache, if any, is better than no test run.
	prefix=$(ls -d "$cache/install/pg$major-"* 2>/dev/null | grep -E -- "/pg$major-[0-9.]+$suffix\$" | sort -V | tail -n 1 || true)
	if [ -n "$prefix" ] && [ -f "$prefix/.complete" ]; then
		log "took cached ${prefix##*/pg$major-}: ${newest:+no tarball of $newest or older could be downloaded}${newest:-the source lists are unavailable}"
		echo "$prefix/bin/pg_config"
		exit 0
	fi
	if [ -z "$newest" ]; then
		log "no version of postgresql-$major is listed on $mirror (see $cache/logs/apt-update.log) and nothing is cached"
	else
		log "no PostgreSQL $major could be fetched and nothing is cached; tried:"
		printf '  %s\n' "${tried[@]}" >&2
	fi
	exit 1
fi

prefix=$cache/install/pg$major-$upver$suffix
log "took PostgreSQL $upver: $reason"
if [ -f "$prefix/.complete" ]; then
	echo "$prefix/bin/pg_config"
	exit 0
fi
if [ -n "$fetch_only" ]; then
	echo "$cache/src/$tarball"
	exit 0
fi

cd "$cache/src"
build=$cache/build/pg$major-$upver$suffix
rm -rf "$build"
mkdir -p "$build"
tar -xjf "$tarball" -C "$build" --strip-components=1
cd "$build"

cc=gcc
command -v ccache >/dev/null 2>&1 && cc="ccache gcc"
log "configuring PostgreSQL $upver (log: $cache/logs/pg$major$suffix-build.log)"
{
	./configure --prefix="$prefix" $assert --enable-debug \
		--enable-tap-tests --without-icu --with-lz4 --with-zstd \
		CC="$cc" CFLAGS="$cflags"
	make -j"$jobs"
	make install
	if [ "$flavour" = valgrind ]; then
		install -m 644 src/tools/valgrind.supp "$("$prefix/bin/pg_config" --sharedir)/valgrind.supp"
	fi
	for m in pg_stat_statements pg_buffercache; do
		make -C "contrib/$m" install
	done
	make -C src/test/perl install
	make -C src/test/regress install
} >"$cache/logs/pg$major$suffix-build.log" 2>&1 || {
	log "build failed; last lines of the log:"
	tail -n 30 "$cache/logs/pg$major$suffix-build.log" >&2
	exit 1
}
export PATH=$prefix/bin:$PATH

# pgTAP: upstream tarball from Debian's pgtap source package.  The .dsc of
# the newest upload may be missing from the mirror while its tarball is
# there, so try the tarballs of every version the lists know, newest first.
fetch_orig() {			# package basename-glob
	local pkg=$1 v f
	for v in $(apt-cache "${aptopts[@]}" showsrc "$pkg" 2>/dev/null |
		awk '/^Version:/ {print $2}' | sed 's/-[^-]*$//' | sort -Vru); do
		for f in "${pkg}_$v.orig.tar.gz" "${pkg}_$v.orig.tar.xz" "${pkg}_$v.orig.tar.bz2"; do
			[ -f "$f" ] && { echo "$f"; return 0; }
			if curl -sSf -o "$f.part" "$mirror/pool/main/${pkg:0:1}/$pkg/$f" 2>/dev/null; then
				mv "$f.part" "$f"; echo "$f"; return 0
			fi
			rm -f "$f.part"
		done
	done
	# Versions that left the lists but whose tarball stays in the pool.
	for f in "${@:2}"; do
		[ -f "$f" ] && { echo "$f"; return 0; }
		if curl -sSf -o "$f.part" "$mirror/pool/main/${pkg:0:1}/$pkg/$f" 2>/dev/null; then
			mv "$f.part" "$f"; echo "$f"; return 0
		fi
		rm -f "$f.part"
	done
	return 1
}

build_ext() {			# name tarball
	local name=$1 tb=$2 dir=$cache/build/$1-pg$major$suffix
	rm -rf "$dir"; mkdir -p "$dir"
	tar -xf "$cache/src/$tb" -C "$dir" --strip-components=1
	log "building $name from $tb"
	if ! make -C "$dir" PG_CONFIG="$prefix/bin/pg_config" USE_PGXS=1 install \
		>"$cache/logs/$name-pg$major$suffix.log" 2>&1; then
		log "$name failed to build; tests that need it will be skipped (log: $cache/logs/$name-pg$major$suffix.log)"
		return 1
	fi
}

cd "$cache/src"
if tb=$(fetch_orig pgtap); then
	build_ext pgtap "$tb" || true
else
	log "no pgTAP source tarball could be fetched; pgTAP tests will be skipped"
fi
if tb=$(fetch_orig pg-cron pg-cron_1.6.7.orig.tar.gz); then
	build_ext pg_cron "$tb" || true
else
	log "no pg_cron source tarball could be fetched; pg_cron tests will be skipped"
fi

touch "$prefix/.complete"
log "PostgreSQL $upver ready in $prefix"
echo "$prefix/bin/pg_config"
