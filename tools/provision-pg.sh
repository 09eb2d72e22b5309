#!/usr/bin/env bash
# Provision a PostgreSQL install for building and testing pg_chronicle.
#
# usage: tools/provision-pg.sh MAJOR        (MAJOR = 17 or 18)
#
# Prints the path of the provisioned pg_config on its last line of stdout.
#
# PostgreSQL is built from the upstream tarball that Debian ships in its
# source package (postgresql-17 from trixie, postgresql-18 from sid), fetched
# with "apt-get source" through a private apt configuration kept in the cache
# folder: the system's apt sources are never touched.  Debian's own patches
# are not applied; they only adapt paths to Debian's packaging.  pgTAP and
# pg_cron are built into the same install.  The result is cached, keyed by
# the full version, so a second run costs a few seconds.
#
# Environment:
#   PG_CHRONICLE_CACHE   cache folder (default ~/.cache/pg_chronicle)
#   PG_CHRONICLE_JOBS    make -j (default: number of cores + 1)
#   PG_CHRONICLE_BUILD   "debug" (default: assertions on, what the tests use)
#                        or "release" (no assertions, what benchmarks measure;
#                        installed beside it as pg<MAJOR>-<version>-release)
set -euo pipefail

major=${1:?usage: provision-pg.sh MAJOR}
cache=${PG_CHRONICLE_CACHE:-$HOME/.cache/pg_chronicle}
jobs=${PG_CHRONICLE_JOBS:-$(( $(nproc) + 1 ))}
mkdir -p "$cache"/{apt/lists/partial,apt/cache/archives/partial,apt/etc,src,build,install,logs}

log() { echo "provision-pg[$major]: $*" >&2; }

flavour=${PG_CHRONICLE_BUILD:-debug}
case "$flavour" in
	debug) suffix= ; assert=--enable-cassert ;;
	release) suffix=-release; assert= ;;
	*) log "PG_CHRONICLE_BUILD must be debug or release, not $flavour"; exit 2 ;;
esac

case "$major" in
	17) suite=trixie ;;
	18) suite=sid ;;
	*) log "unsupported major version $major (17 or 18)"; exit 2 ;;
esac

# The private apt configuration.  The mirror is the one the system already
# uses, read from its own sources, so nothing here names a host.
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list 2>/dev/null || true)
aptdir=$cache/apt
cat > "$aptdir/etc/sources.list" <<SRC
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror sid main
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

# Current version of the source package in the suite.
srcversion() {
	apt-cache "${aptopts[@]}" showsrc "$1" 2>/dev/null |
		awk -v want="$1" '/^Package:/ {p = $2} /^Version:/ && p == want {print $2}' |
		sort -V | tail -n 1
}

debver=$(srcversion "postgresql-$major" || true)
if [ -z "$debver" ]; then
	# Offline or lists missing: fall back to the newest cached install.
	prefix=$(ls -d "$cache/install/pg$major-"* 2>/dev/null | grep -E -- "-[0-9.]+$suffix\$" | sort -V | tail -n 1 || true)
	if [ -n "$prefix" ] && [ -f "$prefix/.complete" ]; then
		log "source lists unavailable; reusing $prefix"
		echo "$prefix/bin/pg_config"
		exit 0
	fi
	log "cannot find source package postgresql-$major"; exit 1
fi
upver=${debver%%-*}
prefix=$cache/install/pg$major-$upver$suffix

if [ -f "$prefix/.complete" ]; then
	log "reusing cached PostgreSQL $upver in $prefix"
	echo "$prefix/bin/pg_config"
	exit 0
fi

cd "$cache/src"
tarball=postgresql-${major}_$upver.orig.tar.bz2
if [ ! -f "$tarball" ]; then
	log "downloading postgresql-$major $debver source"
	apt-get "${aptopts[@]}" -qq source --download-only "postgresql-$major=$debver" >&2
fi

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
		CC="$cc" CFLAGS="-O2"
	make -j"$jobs"
	make install
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
