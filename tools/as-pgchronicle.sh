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
