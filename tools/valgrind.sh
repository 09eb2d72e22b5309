#!/usr/bin/env bash
# The Perl TAP tests of the collector, the wait sampler, housekeeping and the
# fuzz families with every postgres process under valgrind's memcheck, then
# a summary of what memcheck found (docs/development.md, "Valgrind").
#
#   tools/valgrind.sh                       PostgreSQL 18 built with USE_VALGRIND
#                                           (tools/provision-pg.sh, flavour valgrind)
#   PROVE_TESTS="test/t/001_worker.pl" tools/valgrind.sh   other TAP files
#   PG_CONFIG=/path/pg_config tools/valgrind.sh   your server (built with
#                                           -DUSE_VALGRIND, installed under one
#                                           root, valgrind.supp in its sharedir)
#   tools/valgrind.sh --scan DIR            the summary of an earlier run again
#
# The installation is copied (the copy's postgres becomes a wrapper that
# execs valgrind on postgres.orig, so the postmaster and every process it
# forks run under memcheck, one log per process); the cache is not touched.
# Without --error-exitcode: a process with an error goes on, so the test
# goes on to the code after it (with --error-exitcode=128, as PostgreSQL's
# buildfarm runs, the postmaster takes the process's exit for a crash and
# the test's node stops there); the logs say what it found.
# initdb runs once, without valgrind, for a template that the tests' nodes
# copy (INITDB_TEMPLATE): the bootstrap is PostgreSQL's, not ours.
#
# Environment:
#   PG_CHRONICLE_VALGRIND_OUT      the run's directory (default: a new
#                                  /tmp/pg_chronicle-valgrind.XXXXXX): per test
#                                  its prove output, its server logs and one
#                                  valgrind log per process
#   PG_CHRONICLE_VALGRIND_TIMEOUT  seconds for PG_TEST_TIMEOUT_DEFAULT (the polls
#                                  of the tests) and PGCTLTIMEOUT (default 600)
#   PG_CHRONICLE_VALGRIND_OPTS     more valgrind options (--leak-check=full,
#                                  --error-exitcode=128)
#   PG_CHRONICLE_FUZZ_CALLS, PG_CHRONICLE_FUZZ_ROUNDS, PG_CHRONICLE_FUZZ_SEED
#                                  the fuzz tests' own settings; here the calls
#                                  default to 50 and the rounds to 30
#
# Ends with "valgrind: N errors in M processes (...)".  Exit status: 1 when
# memcheck found an error with a frame of pg_chronicle in its stack (or in
# the stack that allocated or created the bad value), 2 when the run could
# not be made (provisioning, the build), else 0.  Errors only in
# PostgreSQL's own frames are listed apart and do not fail the run; nor do
# the tests' failures, listed per test: at memcheck's speed (10 to 50 times
# slower) their timing assertions do not hold.
#
# As root it installs valgrind (tools/install-deps.sh) and runs itself as
# user pgchronicle on a copy of the tree (tools/as-pgchronicle.sh).
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)

default_tests="test/t/001_worker.pl test/t/010_waits.pl test/t/011_deltas_fuzz.pl
test/t/013_faults.pl test/t/014_fuzz_inputs.pl test/t/024_housekeeping_repeat.pl
test/t/025_untrusted_inputs.pl"

# scan DIR: the summary of the run in DIR (exit status as above).
scan() {
	python3 - "$1" <<'PY'
import collections, glob, os, re, sys

out = sys.argv[1]
def read(name, default=''):
    try:
        with open(os.path.join(out, name), errors='replace') as f:
            return f.read()
    except OSError:
        return default

tree = read('tree').strip()
symbols = set(read('pg_chronicle.symbols').split())
frame_re = re.compile(r'^\s+(at|by) 0x[0-9A-Fa-f]+: (.*?) \((.*)\)$')

def ours(fn, loc):
    if 'pg_chronicle.so' in loc:
        return True
    if tree and loc.startswith(tree + '/'):
        return True
    return fn in symbols

def short(loc):
    if tree and loc.startswith(tree + '/'):
        return loc[len(tree) + 1:]
    return re.sub(r'^.*/build/pg\d+-[^/]+/', '', loc)

def parse(path):
    """The error records of one valgrind log, and any other lines."""
    records, other, cur = [], [], None
    with open(path, errors='replace') as f:
        for line in f:
            m = re.match(r'^(==|--)\d+\1 ?(.*)$', line.rstrip('\n'))
            if not m:
                continue
            text = m.group(2)
            if text == 'VALGRINDERROR-BEGIN':
                cur = []
            elif text == 'VALGRINDERROR-END':
                if cur:
                    records.append(cur)
                cur = None
            elif cur is not None:
                if text.strip():
                    cur.append(text)
            elif text.strip():
                other.append(text)
    return records, other

class Record:
    def __init__(self, lines):
        self.lines = lines
        self.kind = re.sub(r'0x[0-9A-Fa-f]+', '0x...', lines[0].strip())
        self.main, self.aux = [], []
        stack = self.main
        for l in lines[1:]:
            m = frame_re.match(l)
            if m:
                stack.append((m.group(2), m.group(3)))
            else:
                stack = self.aux
        if any(ours(*f) for f in self.main):
            self.owner = 'pg_chronicle'
        elif any(ours(*f) for f in self.aux):
            self.owner = 'pg_chronicle'   # our allocation or our uninitialised value
        else:
            self.owner = 'PostgreSQL'
        # (byte and record counts vary between occurrences of one leak)
        self.key = (re.sub(r'\d+', 'N', self.kind),) + tuple(f[0] for f in self.main[:4])

    def text(self, indent):
        """The record, each stack cut after 12 frames, or 3 after
        pg_chronicle's first frame when that comes later."""
        res, n, cap = [], 0, 12
        for l in self.lines:
            m = frame_re.match(l)
            if not m:
                n, cap = 0, 12
                res.append(indent + l)
                continue
            n += 1
            if ours(m.group(2), m.group(3)):
                cap = max(cap, n + 3)
            if n <= cap:
                res.append(indent + '   %s %s (%s)' % (m.group(1), m.group(2), short(m.group(3))))
            elif n == cap + 1:
                res.append(indent + '   ...')
        return '\n'.join(res)

# The tests: name, prove's exit status, seconds.
tests = []
for line in read('tests.tsv').splitlines():
    name, rc, secs = line.split('\t')
    tests.append((name, int(rc), int(secs)))

groups = collections.OrderedDict()
errors = {'pg_chronicle': 0, 'PostgreSQL': 0}
procs_with = {'pg_chronicle': set(), 'PostgreSQL': set()}
procs, procs_err, nerr = 0, set(), 0
signals = collections.Counter()
warnings = collections.Counter()
for name, _, _ in tests:
    for path in sorted(glob.glob(os.path.join(out, name, 'valgrind', '*.log'))):
        procs += 1
        records, other = parse(path)
        for o in other:
            m = re.match(r'Process terminating with default action of signal (\d+ \(\w+\))', o)
            if m:
                signals[(name, m.group(1))] += 1
            elif o.lstrip().lower().startswith('warning:'):
                warnings[re.sub(r'0x[0-9A-Fa-f]+|\d+', 'N', o.strip())] += 1
        for lines in records:
            r = Record(lines)
            nerr += 1
            procs_err.add(path)
            errors[r.owner] += 1
            procs_with[r.owner].add(path)
            g = groups.setdefault((r.owner,) + r.key,
                                  {'first': r, 'path': path, 'n': 0, 'procs': set(), 'tests': set()})
            g['n'] += 1
            g['procs'].add(path)
            g['tests'].add(name)

print('=== tests under valgrind (%s; logs in %s)' % (read('server').strip(), out))
total = 0
for name, rc, secs in tests:
    total += secs
    prove = read(os.path.join(name, 'prove.out'))
    ok = len(re.findall(r'^\s*ok \d+', prove, re.M))
    bad = re.findall(r'^\s*not ok \d+ - (.*)$', prove, re.M)
    state = 'passed' if rc == 0 else 'FAILED'
    print('  %-28s %-6s %4d ok, %3d not ok  %5d s' % (name, state, ok, len(bad), secs))
    for seed in re.findall(r'^# (fuzz seed .*)$', prove, re.M):
        print('      %s' % seed)
    for b in bad[:8]:
        print('      not ok: %s' % b)
    if len(bad) > 8:
        print('      ... and %d more' % (len(bad) - 8))
    if rc != 0 and not bad:
        died = re.findall(r'^(?:Bail out!|# Looks like|stopping:).*$', prove, re.M)
        for d in died[:3]:
            print('      %s' % d)
print('  %d tests in %d s (%d min)' % (len(tests), total, round(total / 60)))

for owner, title in (('pg_chronicle', "in pg_chronicle's code"),
                     ('PostgreSQL', "only in PostgreSQL's own frames (not pg_chronicle's; they do not fail the run)")):
    gs = [g for k, g in groups.items() if k[0] == owner]
    print()
    print('=== valgrind errors %s: %d in %d processes, %d distinct'
          % (title, errors[owner], len(procs_with[owner]), len(gs)))
    for i, g in enumerate(gs, 1):
        r = g['first']
        print('  [%d] %s: %d times, %d processes, in %s' % (i, r.kind, g['n'], len(g['procs']),
                                                        ', '.join(sorted(g['tests']))))
        mine = [f for f in r.main + r.aux if ours(*f)]
        if mine:
            print("      pg_chronicle's first frame: %s (%s)" % (mine[0][0], short(mine[0][1])))
        print('      first in %s:' % os.path.relpath(g['path'], out))
        print(r.text('      '))

if signals:
    print()
    print('=== processes valgrind saw end by a signal')
    for (name, sig), n in sorted(signals.items()):
        print('  %s: %d by signal %s' % (name, n, sig))
if warnings:
    print()
    print("=== valgrind's warnings (not errors)")
    for w, n in warnings.most_common(10):
        print('  %5d  %s' % (n, w))

print()
print('valgrind: %d errors in %d processes (%d in pg_chronicle\'s code, %d only in PostgreSQL\'s); '
      '%d processes ran under valgrind' % (nerr, len(procs_err), errors['pg_chronicle'],
                                           errors['PostgreSQL'], procs))
sys.exit(1 if errors['pg_chronicle'] else 0)
PY
}

if [ "${1:-}" = --scan ]; then
	scan "${2:?usage: tools/valgrind.sh --scan DIR}"
	exit
fi

if [ "$(id -u)" = 0 ]; then
	"$src/tools/install-deps.sh" valgrind || exit 2
	exec "$src/tools/as-pgchronicle.sh" tools/valgrind.sh "$@"
fi

cd "$src"
. tools/lib.sh
started=$(date +%s)
command -v valgrind >/dev/null ||
	{ echo "valgrind.sh: valgrind is not installed (run as root, or apt-get install valgrind)" >&2; exit 2; }

if [ -n "${PG_CONFIG:-}" ]; then
	cfg=$PG_CONFIG
else
	"$src/tools/install-deps.sh" valgrind || exit 2
	cfg=$(PG_CHRONICLE_BUILD=valgrind tools/provision-pg.sh 18 | tail -n 1)
	[ -x "$cfg" ] || { echo "valgrind.sh: provisioning failed" >&2; exit 2; }
fi
"$cfg" --cflags --cppflags | grep -q -- -DUSE_VALGRIND ||
	echo "valgrind.sh: $cfg was not built with -DUSE_VALGRIND: memcheck will not see inside memory contexts (pfree'd chunks, palloc'd padding)" >&2
supp=$("$cfg" --sharedir)/valgrind.supp
if [ ! -f "$supp" ]; then
	echo "valgrind.sh: no $supp (copy PostgreSQL's src/tools/valgrind.supp there)" >&2
	exit 2
fi

out=${PG_CHRONICLE_VALGRIND_OUT:-$(mktemp -d /tmp/pg_chronicle-valgrind.XXXXXX)}
mkdir -p "$out"
echo "valgrind.sh: the run's logs go to $out"

# A copy of the installation (relocatable: its programs find their
# directories from where they are), with postgres wrapped.
root=$(dirname "$("$cfg" --bindir)")
for what in pkglibdir sharedir; do
	case "$(readlink -f "$("$cfg" --$what)")/" in
		"$(readlink -f "$root")"/*) ;;
		*) echo "valgrind.sh: $cfg's $what is not under $root: the installation cannot be copied" >&2
		   exit 2 ;;
	esac
done
rm -rf "$out/install"
cp -a "$root" "$out/install"
cfg=$out/install/bin/pg_config
bindir=$out/install/bin
if [ -f "$bindir/postgres.orig" ]; then
	mv "$bindir/postgres.orig" "$bindir/postgres"	# a copy of a wrapped install
fi
echo "$("$cfg" --version), CFLAGS $("$cfg" --cflags | tr ' ' '\n' | grep -E '^-(O|g|D|fno-omit)' | xargs)" >"$out/server"

if ! lib_build_install "$cfg"; then
	echo "valgrind.sh: the build failed" >&2
	exit 2
fi
nm --defined-only "$("$cfg" --pkglibdir)/pg_chronicle.so" |
	awk '$2 ~ /^[tTwWiI]$/ {print $3}' >"$out/pg_chronicle.symbols"
echo "$src" >"$out/tree"

PG_CHRONICLE_VALGRIND_OFF=1
export PG_CHRONICLE_VALGRIND_OFF
mv "$bindir/postgres" "$bindir/postgres.orig"
cat >"$bindir/postgres" <<WRAPPER
#!/bin/sh
# tools/valgrind.sh: the postmaster and every process it forks under
# memcheck, one log per process in \$PG_CHRONICLE_VALGRIND_LOGS.
[ -n "\${PG_CHRONICLE_VALGRIND_OFF:-}" ] && exec "$bindir/postgres.orig" "\$@"
exec valgrind --quiet --trace-children=yes --track-origins=yes \\
	--read-var-info=yes --num-callers=30 --fullpath-after= \\
	--error-markers=VALGRINDERROR-BEGIN,VALGRINDERROR-END \\
	--suppressions="$supp" ${PG_CHRONICLE_VALGRIND_OPTS:-} \\
	--log-file="\${PG_CHRONICLE_VALGRIND_LOGS:-/tmp}/%p.log" \\
	"$bindir/postgres.orig" "\$@"
WRAPPER
chmod 755 "$bindir/postgres"

# The nodes' initdb, once, without valgrind.
rm -rf "$out/initdb-template"
if ! "$bindir/initdb" --no-sync --auth trust --pgdata "$out/initdb-template" \
	>"$out/initdb.log" 2>&1; then
	cat "$out/initdb.log" >&2
	exit 2
fi
unset PG_CHRONICLE_VALGRIND_OFF
export INITDB_TEMPLATE=$out/initdb-template
export PG_TEST_TIMEOUT_DEFAULT=${PG_CHRONICLE_VALGRIND_TIMEOUT:-600}
export PGCTLTIMEOUT=$PG_TEST_TIMEOUT_DEFAULT
export PG_CHRONICLE_FUZZ_CALLS=${PG_CHRONICLE_FUZZ_CALLS:-50}
export PG_CHRONICLE_FUZZ_ROUNDS=${PG_CHRONICLE_FUZZ_ROUNDS:-30}

: >"$out/tests.tsv"
for t in ${PROVE_TESTS:-$default_tests}; do
	name=$(basename "$t" .pl)
	mkdir -p "$out/$name/valgrind"
	echo "=== $name ($(date +%T))"
	t0=$(date +%s)
	PG_CHRONICLE_VALGRIND_LOGS=$out/$name/valgrind \
		make -s PG_CONFIG="$cfg" tapcheck PROVE_TESTS="$t" PROVE_FLAGS=-v \
		>"$out/$name/prove.out" 2>&1
	rc=$?
	secs=$(($(date +%s) - t0))
	grep -E '^[[:space:]]*(not )?ok [0-9]+|^# (fuzz|Looks)|^Result:' "$out/$name/prove.out" | tail -n 3
	echo "    exit $rc after $secs s"
	rm -rf "$out/$name/log"
	[ -d tmp_check/log ] && cp -a tmp_check/log "$out/$name/log"
	printf '%s\t%s\t%s\n' "$name" "$rc" "$secs" >>"$out/tests.tsv"
done
# The tests' data directories stay in tmp_check; the install copy goes.
rm -rf "$out/install" "$out/initdb-template"

echo
echo "valgrind.sh: $(( ($(date +%s) - started) / 60 )) min in all"
scan "$out"
