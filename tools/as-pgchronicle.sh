#!/usr/bin/env bash
# Run one of the project's scripts as the unprivileged user "pgchronicle",
# on a copy of the tree that user can write in.  initdb refuses to run as
# root, and CI and these machines run everything as root.
#
#   tools/as-pgchronicle.sh SCRIPT [ARGS...]     (SCRIPT relative to the tree)
#
# The settings of the project's scripts pass through (PG_CONFIG,
# PG_CHRONICLE_*, BENCH_*, DEMO_*, PROVE_TESTS).  The copy is removed after
# a successful run and kept (its path printed) after a failure or when
# PG_CHRONICLE_KEEP is set.  The copy includes .git: the upgrade test builds
# the 0.1.0 release from history, and make dist archives a commit.
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
script=${1:?usage: as-pgchronicle.sh SCRIPT [ARGS...]}
shift

id pgchronicle >/dev/null 2>&1 ||
	useradd --system --create-home --home-dir /var/lib/pgchronicle \
		--shell /bin/bash pgchronicle
home=$(getent passwd pgchronicle | cut -d: -f6)
work=$(mktemp -d /tmp/pg_chronicle-run.XXXXXX)
tar -C "$src" --exclude='*.o' --exclude='*.so' \
	--exclude=tmp_check --exclude=tmp_check_regress --exclude=./results -cf - . |
	tar -C "$work" -xf -
# The history comes along (tests build the 0.1.0 release and the dist zip
# with git archive).  A worktree's .git is a file naming a repository that
# this user neither owns nor may share: clone it instead (--no-local: no
# hard links, which the chown below would reach), with HEAD at the same
# commit and the index read from it, so that git sees the same changes.
if [ -f "$work/.git" ] && command -v git >/dev/null; then
	rm -f "$work/.git"
	if git clone -q --no-local --bare "$src" "$work/.git" 2>/dev/null; then
		git -C "$work" config core.bare false
		git -C "$work" update-ref --no-deref HEAD "$(git -C "$src" rev-parse HEAD)"
		git -C "$work" read-tree HEAD
	else
		rm -rf "$work/.git"
		echo "as-pgchronicle: could not clone the history of $src; running without it" >&2
	fi
fi
chown -R pgchronicle: "$work"

passenv=()
while IFS= read -r name; do
	passenv+=("$name=${!name}")
done < <(compgen -e | grep -E '^(PG_CONFIG|PG_CHRONICLE_[A-Z_]+|BENCH_[A-Z_]+|DEMO_[A-Z_]+|PROVE_TESTS)$')

runuser -u pgchronicle -- env HOME="$home" PATH="$PATH" ${CI:+CI="$CI"} \
	"${passenv[@]}" bash "$work/$script" "$@"
rc=$?
if [ $rc -eq 0 ] && [ -z "${PG_CHRONICLE_KEEP:-}" ]; then
	rm -rf "$work"
else
	echo "tree of this run kept in $work" >&2
fi
exit $rc
