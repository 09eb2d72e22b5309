#!/usr/bin/env bash
# Tests of tools/provision-pg.sh's choice of version, without the network:
# a Debian mirror is made in a temporary directory (source lists, a Release
# file from apt-ftparchive, tarballs in the pool) and served to apt and curl
# from a file:// URL.  --fetch-only stops where the build would begin.
# Prints TAP.
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

ok() {				# condition-status description
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}

# mirror NAME LISTED-VERSIONS POOL-VERSIONS [BAD-SHA-VERSION]: a mirror whose
# sid lists name postgresql-17 at LISTED-VERSIONS and whose pool holds the
# tarballs of POOL-VERSIONS; the lists give BAD-SHA-VERSION a wrong checksum.
mirror() {
	local m=$tmp/$1 v f sha pool
	pool=$m/pool/main/p/postgresql-17
	mkdir -p "$pool" "$tmp/payload/postgresql-17"
	echo "not PostgreSQL" >"$tmp/payload/postgresql-17/README"
	for v in $3; do
		tar -C "$tmp/payload" -cjf "$pool/postgresql-17_$v.orig.tar.bz2" postgresql-17
	done
	for suite in trixie sid; do
		mkdir -p "$m/dists/$suite/main/source"
		: >"$m/dists/$suite/main/source/Sources"
	done
	for v in $2; do
		f=postgresql-17_$v.orig.tar.bz2
		if [ -f "$pool/$f" ] && [ "$v" != "${4:-}" ]; then
			sha=$(sha256sum "$pool/$f" | cut -d' ' -f1)
		else
			sha=$(printf '%064d' 0)
		fi
		cat >>"$m/dists/sid/main/source/Sources" <<STANZA
Package: postgresql-17
Binary: postgresql-17
Version: $v-1
Maintainer: nobody <nobody@example.invalid>
Architecture: any
Format: 3.0 (quilt)
Directory: pool/main/p/postgresql-17
Files:
 00000000000000000000000000000000 1 postgresql-17_$v-1.dsc
Checksums-Sha256:
 $(printf '%064d' 1) 1 postgresql-17_$v-1.dsc
 $sha 1 $f

STANZA
	done
	for suite in trixie sid; do
		gzip -k "$m/dists/$suite/main/source/Sources"
		(cd "$m/dists/$suite" && apt-ftparchive -o APT::FTPArchive::Release::Suite="$suite" \
			-o APT::FTPArchive::Release::Codename="$suite" release . >Release)
	done
}

# provision NAME: run the script against mirror NAME with a cache of its own;
# stdout to $tmp/NAME.out, stderr to $tmp/NAME.err, exit status to $rc.
provision() {
	PG_CHRONICLE_CACHE=$tmp/$1.cache PG_CHRONICLE_MIRROR=file://$tmp/$1 \
		PG_CHRONICLE_APT_TRUST=trusted=yes \
		bash "$src/tools/provision-pg.sh" --fetch-only 17 >"$tmp/$1.out" 2>"$tmp/$1.err"
	rc=$?
}

said() { grep -q -- "$2" "$tmp/$1.err"; }
printed() { [ "$(tail -n 1 "$tmp/$1.out")" = "$2" ]; }

echo "1..18"

# The newest listed upload's tarball is missing; an older point release,
# no longer listed, is in the pool.
mirror newest-missing "17.12" "17.11 17.10"
provision newest-missing
ok $rc "newest listed missing: exits 0"
printed newest-missing "$tmp/newest-missing.cache/src/postgresql-17_17.11.orig.tar.bz2"
ok $? "newest listed missing: takes the next point release, 17.11"
said newest-missing "took PostgreSQL 17.11: an older point release still in the pool; 17.12 is listed but not downloadable"
ok $? "newest listed missing: says which version and why in one line"

# Everything is there: the newest listed version, its checksum checked.
mirror complete "17.12 17.11" "17.12 17.11"
provision complete
printed complete "$tmp/complete.cache/src/postgresql-17_17.12.orig.tar.bz2"
ok $? "complete mirror: takes the newest listed version"
said complete "took PostgreSQL 17.12: the newest version the lists name, SHA-256 checked"
ok $? "complete mirror: the checksum of the signed lists was checked"

# Only an older point release, several versions down, is present.
mirror only-old "17.12" "17.9"
provision only-old
printed only-old "$tmp/only-old.cache/src/postgresql-17_17.9.orig.tar.bz2"
ok $? "only an older point release present: takes 17.9"

# A tarball that does not match the lists is not used.
mirror bad-sha "17.12 17.11" "17.12 17.11" 17.12
provision bad-sha
printed bad-sha "$tmp/bad-sha.cache/src/postgresql-17_17.11.orig.tar.bz2"
ok $? "checksum mismatch: the tarball is refused, the next version taken"
said bad-sha "does not match the SHA-256 of the signed lists"
ok $? "checksum mismatch: said"
[ ! -e "$tmp/bad-sha.cache/src/postgresql-17_17.12.orig.tar.bz2" ]
ok $? "checksum mismatch: the bad tarball is not kept"

# A complete install in the cache of a listed version is reused as it is.
mirror cached-listed "17.12" ""
mkdir -p "$tmp/cached-listed.cache/install/pg17-17.12/bin"
touch "$tmp/cached-listed.cache/install/pg17-17.12/.complete"
provision cached-listed
printed cached-listed "$tmp/cached-listed.cache/install/pg17-17.12/bin/pg_config"
ok $? "cached install of the newest version: reused without downloading"

# Nothing downloadable, but an older complete install is in the cache.
mirror cached-only "17.12" ""
for v in 17.3 17.8; do
	mkdir -p "$tmp/cached-only.cache/install/pg17-$v/bin"
	touch "$tmp/cached-only.cache/install/pg17-$v/.complete"
done
mkdir -p "$tmp/cached-only.cache/install/pg17-17.10"	# incomplete: not used
provision cached-only
ok $rc "nothing downloadable, cached install: exits 0"
printed cached-only "$tmp/cached-only.cache/install/pg17-17.8/bin/pg_config"
ok $? "nothing downloadable, cached install: the newest complete one, 17.8"
said cached-only "took PostgreSQL 17.8: already built in the cache; no tarball of a newer version downloads"
ok $? "nothing downloadable, cached install: says so"

# Nothing at all: a clear error naming what was tried.
mirror nothing "17.12" ""
provision nothing
[ "$rc" != 0 ]
ok $? "nothing at all: fails"
said nothing "no PostgreSQL 17 could be fetched and nothing is cached; tried:" &&
	said nothing "pool/main/p/postgresql-17/postgresql-17_17.12.orig.tar.bz2" &&
	said nothing "pool/main/p/postgresql-17/postgresql-17_17.0.orig.tar.bz2"
ok $? "nothing at all: the error names every URL tried, 17.12 down to 17.0"

# No lists (the mirror cannot be read), a complete install in the cache.
mkdir -p "$tmp/no-lists.cache/install/pg17-17.5/bin"
touch "$tmp/no-lists.cache/install/pg17-17.5/.complete"
mkdir -p "$tmp/no-lists.cache/install/pg17-17.6-release/bin"	# other flavour
touch "$tmp/no-lists.cache/install/pg17-17.6-release/.complete"
provision no-lists
[ "$rc" = 0 ] && printed no-lists "$tmp/no-lists.cache/install/pg17-17.5/bin/pg_config"
ok $? "no lists, cached install: reused"
said no-lists "took cached 17.5: the source lists are unavailable"
ok $? "no lists, cached install: says so"

# A mirror that cannot be read at all, and nothing cached.
provision no-such-mirror
[ "$rc" != 0 ] && said no-such-mirror "no version of postgresql-17 is listed"
ok $? "no lists and no cache: fails saying the lists are unavailable"

[ "$failed" = 0 ]
