#!/usr/bin/env bash
# Install the Debian packages that building PostgreSQL and testing
# pg_chronicle need (bookworm's own packages only; the Python client's
# psycopg and matplotlib come from PyPI into a venv, see tools/test.sh).
# Run as root; a no-op when everything is there.
#
#   tools/install-deps.sh [PACKAGE...]   and these too (tools/valgrind.sh:
#                                        valgrind)
set -euo pipefail

pkgs=(gcc make bison flex perl libreadline-dev zlib1g-dev liblz4-dev
	libzstd-dev libipc-run-perl ccache curl bzip2 xz-utils pkg-config
	libtap-parser-sourcehandler-pgtap-perl apt-utils git pgxnclient faketime
	python3-venv chromium chromium-driver python3-selenium fonts-dejavu-core sysstat "$@")

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages: ${missing[*]} (run as root, or install them)" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
