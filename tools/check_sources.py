#!/usr/bin/env python3
"""One definition per source: checks, without a server, that what is
committed follows from the sources' description (tools/gen_deltas.py,
SOURCES), and prints TAP.

  tools/check_sources.py            (from the top of the tree; tools layer)

1. src/sql/31_deltas.sql is what tools/gen_deltas.py generates today.
2. Every source of the description has its history table in src/sql/*.sql,
   with every key and value column it names, of the type its kind means
   (c: bigint counter, t: float8 time, g: gauge, a: attribute), and its
   reset column (timestamptz); every column of the table is either in the
   description or listed below as recorded but not analysed.
3. The (key, ts) index of 30_analysis.sql is on exactly the described keys.

The C column list of each source is checked against the installed tables
by test/pgtap/41_sources.sql (chronicle._source_columns()), so the chain
C -> table -> description -> generated SQL is closed.
"""

import os
import re
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(here)
sys.path.insert(0, here)
import gen_deltas  # noqa: E402  (SOURCES; main() runs only as a script)

# Columns recorded for reading by hand (README, docs), not by the generated
# analysis: name them here so that a new column is a decision, not an accident.
NOT_ANALYSED = {
    # the sampler's own state, read by chronicle.wait_sampler_status()
    'wait_sampler_history': {'sampler_started', 'sampler_cpu_ms', 'samples_reset'},
    # a gauge (I/Os in progress now), not a counter
    'os_disk_history': {'in_flight'},
}

tests = []


def check(ok, name, diag=None):
    tests.append((ok, name, diag))


def parse_tables():
    """{view: [(column, type)]} of every CREATE VIEW chronicle.*_history: ts and
    the column definition list of its chronicle._unpack() call."""
    tables = {}
    sqldir = os.path.join(top, 'src', 'sql')
    for f in sorted(os.listdir(sqldir)):
        if not f.endswith('.sql'):
            continue
        text = open(os.path.join(sqldir, f)).read()
        for m in re.finditer(r'CREATE VIEW chronicle\.(\w+_history) AS\n.*? AS u\(\n(.*?)\)\n WHERE', text, re.S):
            body = re.sub(r'--[^\n]*', '', m.group(2))
            cols = [('ts', 'timestamptz')]
            for part in body.split(','):
                words = part.split()
                if len(words) >= 2:
                    cols.append((words[0], words[1].lower()))
            tables[m.group(1)] = cols
    return tables


def main():
    gen = subprocess.run([sys.executable, os.path.join(here, 'gen_deltas.py')],
                         capture_output=True, text=True)
    committed = open(os.path.join(top, 'src', 'sql', '31_deltas.sql')).read()
    check(gen.returncode == 0 and gen.stdout == committed,
          'src/sql/31_deltas.sql is what tools/gen_deltas.py generates',
          'regenerate it: tools/gen_deltas.py > src/sql/31_deltas.sql')

    tables = parse_tables()
    check(len(tables) >= 13, 'the history tables are found in src/sql (%d)' % len(tables))
    analysis = open(os.path.join(top, 'src', 'sql', '30_analysis.sql')).read()
    kind_types = {'c': {'bigint'}, 't': {'float8'}, 'g': {'bigint', 'float8'}}
    described = set()
    for s in gen_deltas.SOURCES:
        t = s['table']
        described.add(t)
        cols = dict(tables.get(t, []))
        check(t in tables, 'source %s: table chronicle.%s is defined' % (s['name'], t))
        if t not in tables:
            continue
        bad = []
        for k, typ in s['keys']:
            if cols.get(k) != {'oid': 'oid'}.get(typ, typ):
                bad.append('key %s: %s in the table, %s described' % (k, cols.get(k), typ))
        for c, kind in s['cols']:
            want = kind_types.get(kind) or {gen_deltas.attr_type(s, c)}
            if cols.get(c) not in want:
                bad.append('%s: %s in the table, kind %s described' % (c, cols.get(c), kind))
        if s['reset'] and cols.get(s['reset']) != 'timestamptz':
            bad.append('reset column %s: %s' % (s['reset'], cols.get(s['reset'])))
        check(not bad, 'source %s: the described columns are in chronicle.%s with their types'
              % (s['name'], t), '; '.join(bad))
        known = ({'ts'} | {k for k, _ in s['keys']} | {c for c, _ in s['cols']}
                 | ({s['reset']} if s['reset'] else set()) | NOT_ANALYSED.get(t, set()))
        extra = [c for c, _ in tables[t] if c not in known]
        check(not extra, 'source %s: every column of chronicle.%s is described' % (s['name'], t),
              'not described: %s (add it to SOURCES or to NOT_ANALYSED in %s)'
              % (', '.join(extra), os.path.basename(__file__)))
        if s['keys']:
            m = re.search(r'CREATE INDEX \w+ ON chronicle\.%s \(([^)]*)\)' % t, analysis)
            if m:
                idx = [c.strip() for c in m.group(1).split(',')]
                want = [k for k, _ in s['keys']] + ['ts']
                check(idx == want, 'source %s: its (key, ts) index is on (%s)' % (s['name'], ', '.join(want)),
                      'the index is on (%s)' % ', '.join(idx))
    # Tables analysed by hand (statements: 40_statements.sql; os_process_io:
    # 45_os.sql) are the only ones outside the description.
    by_hand = sorted(set(tables) - described)
    check(by_hand == ['os_process_io_history', 'statements_history'],
          'every other history table is in the description',
          'outside it: %s' % ', '.join(by_hand))

    print('1..%d' % len(tests))
    failed = 0
    for i, (ok, name, diag) in enumerate(tests, 1):
        print('%sok %d - %s' % ('' if ok else 'not ', i, name))
        if not ok:
            failed += 1
            if diag:
                print('# ' + diag)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
