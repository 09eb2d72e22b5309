#!/usr/bin/env python3
"""One definition per source: checks, without a server, that the analysis
description (tools/gen_deltas.py, SOURCES) follows the C column lists of the
sources (src/source_*.c), and prints TAP.

  tools/check_sources.py            (from the top of the tree; tools layer)

1. src/sql/31_deltas.sql is what tools/gen_deltas.py generates today.
2. Every source listed in src/sources.c is found in a src/source_*.c, with
   its column list (the list macro of CHRONICLE_COLUMNS(), src/source.h,
   read whole) and its number of key columns.
3. Every source of the description is a C source (its table is the view
   <source>_history), whose first nkeys columns are the described keys, in
   order and with their types; every described value and reset column is in
   the C list with the type its kind means (c: bigint counter, t: float8
   time, g: gauge, a: attribute), and every C column is described or
   listed below as recorded but not analysed.
4. Every C source is in the description or listed below as not analysed.

The SQL shape of the history is made from the same C lists when the
extension is installed or updated (chronicle._history_layout(),
src/sql/10_history.sql); test/pgtap/41_sources.sql checks it there.  So
C -> views -> description -> generated SQL is one chain.
"""

import os
import re
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(here)
sys.path.insert(0, here)
import gen_deltas  # noqa: E402  (SOURCES; main() runs only as a script)

# What is recorded for reading by hand (README, docs), not by the generated
# analysis: name it here so that a new column or source is a decision, not an
# accident.  A source: the set of its columns not analysed, or ALL.
ALL = 'all'
NOT_ANALYSED = {
    # the sampler's own state, read by chronicle.wait_sampler_status()
    'wait_sampler': {'sampler_started', 'sampler_cpu_ms', 'samples_reset'},
    # a gauge (I/Os in progress now), not a counter
    'os_disk': {'in_flight'},
    # analysed by hand: chronicle.statements_top() (40_statements.sql), which
    # follows entries across evictions
    'statements': ALL,
    # per process (a new pid is a new key): read from the view
    'os_process_io': ALL,
}

# The type OIDs a ChronicleColumn may have (src/source.h), as SQL names.
C_TYPES = {'INT8OID': 'bigint', 'INT4OID': 'integer', 'OIDOID': 'oid', 'FLOAT8OID': 'float8',
           'TEXTOID': 'text', 'BOOLOID': 'boolean', 'TIMESTAMPTZOID': 'timestamptz'}

tests = []


def check(ok, name, diag=None):
    tests.append((ok, name, diag))


def strip_comments(text):
    return re.sub(r'/\*.*?\*/|//[^\n]*', ' ', text, flags=re.S)


def enum_positions(texts):
    """{member: position in its enum} of every enum of texts (the members'
    order; a value is its position when no member before it is assigned)."""
    pos = {}
    for text in texts:
        for m in re.finditer(r'\benum\b\s*\w*\s*\{(.*?)\}', text, re.S):
            for i, member in enumerate(x.split('=')[0].strip() for x in m.group(1).split(',')):
                if member:
                    pos[member] = i
    return pos


def column_lists(text):
    """{array: (columns [(name, type)], well_formed)} of the column lists of
    text (comments stripped), and {member: position} of their enums.  A
    source declares its columns once (src/source.h): a list macro

      #define FOO_COLUMNS(C) C(FOO_A, "a", INT8OID) C(FOO_B, "b", TEXTOID) ...

    and CHRONICLE_COLUMNS(FOO_COLUMNS, foo_columns, FOO_NCOLUMNS), which
    makes of it the enum FOO_A, FOO_B, ..., FOO_NCOLUMNS and the array
    foo_columns.  Well formed: nothing in the list but its entries, each
    C(ENUM, "name", TYPEOID), with no column name twice."""
    macros = {}
    for m in re.finditer(r'^[ \t]*#[ \t]*define[ \t]+(\w+)\((\w+)\)((?:[^\n]*\\\n)*[^\n]*)', text, re.M):
        macros[m.group(1)] = (m.group(2), m.group(3))
    arrays, pos = {}, {}
    for m in re.finditer(r'\bCHRONICLE_COLUMNS\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)\s*;', text):
        listname, array, ncolumns = m.groups()
        if listname not in macros:
            continue
        param, body = macros[listname]
        entry = r'\b%s\(\s*(\w+)\s*,\s*"(\w+)"\s*,\s*(\w+)\s*\)' % re.escape(param)
        cols = []
        for i, (sym, name, typ) in enumerate(re.findall(entry, body)):
            pos[sym] = i
            cols.append((name, C_TYPES.get(typ, typ)))
        pos[ncolumns] = len(cols)
        rest = re.sub(entry, ' ', body).replace('\\\n', ' ').strip()
        names = [n for n, _ in cols]
        arrays[array] = (cols, not rest and len(set(names)) == len(names))
    return arrays, pos


def parse_sources():
    """{source: {'file', 'columns': [(name, type)], 'nkeys', 'form_ok'}} of
    the sources src/sources.c lists, from their src/source_*.c, and the
    names src/sources.c lists."""
    srcdir = os.path.join(top, 'src')
    listed = re.findall(r'^\s*&(chronicle_source_\w+),', open(os.path.join(srcdir, 'sources.c')).read(), re.M)
    headers = [strip_comments(open(os.path.join(srcdir, f)).read())
               for f in sorted(os.listdir(srcdir)) if f.endswith('.h')]
    sources = {}
    for f in sorted(os.listdir(srcdir)):
        if not (f.startswith('source_') and f.endswith('.c')):
            continue
        text = strip_comments(open(os.path.join(srcdir, f)).read())
        arrays, list_pos = column_lists(text)
        pos = enum_positions(headers + [text])
        pos.update(list_pos)
        for m in re.finditer(r'const\s+ChronicleSource\s+(\w+)\s*=\s*\{(.*?)\n\};', text, re.S):
            body = m.group(2)
            name = re.search(r'\.name\s*=\s*"(\w+)"', body)
            columns = re.search(r'\.columns\s*=\s*(\w+)', body)
            nkeys = re.search(r'\.nkeys\s*=\s*(\w+)(?:\s*\+\s*(\d+))?\s*,', body)
            if not (name and columns and columns.group(1) in arrays):
                continue
            cols, form_ok = arrays[columns.group(1)]
            k = None
            if nkeys:
                base = nkeys.group(1)
                k = int(base) if base.isdigit() else pos.get(base)
                if k is not None and nkeys.group(2):
                    k += int(nkeys.group(2))
            sources[name.group(1)] = dict(symbol=m.group(1), file=f, columns=cols, nkeys=k, form_ok=form_ok)
    return sources, listed


def main():
    gen = subprocess.run([sys.executable, os.path.join(here, 'gen_deltas.py')],
                         capture_output=True, text=True)
    committed = open(os.path.join(top, 'src', 'sql', '31_deltas.sql')).read()
    check(gen.returncode == 0 and gen.stdout == committed,
          'src/sql/31_deltas.sql is what tools/gen_deltas.py generates',
          'regenerate it: tools/gen_deltas.py > src/sql/31_deltas.sql')

    sources, listed = parse_sources()
    found = {s['symbol'] for s in sources.values()}
    missing = [x for x in listed if x not in found]
    check(len(listed) >= 13 and not missing,
          'every source of src/sources.c is read from its src/source_*.c (%d)' % len(listed),
          'not found (a ChronicleSource with .name, .nkeys and .columns made by CHRONICLE_COLUMNS(), src/source.h): %s' % ', '.join(missing))
    sources = {n: s for n, s in sources.items() if s['symbol'] in listed}
    bad = ['%s (%s)' % (n, s['file']) for n, s in sorted(sources.items())
           if not s['form_ok'] or s['nkeys'] is None or not 0 <= s['nkeys'] <= len(s['columns'])]
    check(not bad, 'every C column list is read whole (entries C(ENUM, "name", TYPEOID), no name twice), '
          'and its key count is read', 'look at: %s' % ', '.join(bad))

    kind_types = {'c': {'bigint'}, 't': {'float8'}, 'g': {'bigint', 'float8'}}
    described = set()
    for s in gen_deltas.SOURCES:
        src = s['table'][:-len('_history')] if s['table'].endswith('_history') else None
        check(src in sources, 'described source %s: the C source %s (view chronicle.%s) exists'
              % (s['name'], src, s['table']))
        if src not in sources:
            continue
        described.add(src)
        c = sources[src]
        cols = dict(c['columns'])
        bad = []
        keys = c['columns'][:c['nkeys'] or 0]
        if keys != list(s['keys']):
            bad.append('keys: (%s) in C, (%s) described'
                       % (', '.join('%s %s' % k for k in keys), ', '.join('%s %s' % k for k in s['keys'])))
        for col, kind in s['cols']:
            want = kind_types.get(kind) or {gen_deltas.attr_type(s, col)}
            if cols.get(col) not in want:
                bad.append('%s: %s in C, kind %s described' % (col, cols.get(col), kind))
        if s['reset'] and cols.get(s['reset']) != 'timestamptz':
            bad.append('reset column %s: %s in C' % (s['reset'], cols.get(s['reset'])))
        check(not bad, 'described source %s: its keys, values and reset column are the C columns of %s, with their types'
              % (s['name'], c['file']), '; '.join(bad))
        not_analysed = NOT_ANALYSED.get(src, set())
        known = ({k for k, _ in s['keys']} | {col for col, _ in s['cols']}
                 | ({s['reset']} if s['reset'] else set()) | not_analysed)
        extra = [col for col, _ in c['columns'] if col not in known]
        check(not extra, 'described source %s: every C column of %s is described' % (s['name'], c['file']),
              'not described: %s (add it to SOURCES or to NOT_ANALYSED in %s)'
              % (', '.join(extra), os.path.basename(__file__)))
        if not_analysed:
            stale = sorted(not_analysed - set(cols)) if not_analysed != ALL else ['the whole source']
            check(not stale, 'described source %s: what NOT_ANALYSED names is in its C list' % s['name'],
                  'not a column of %s: %s' % (c['file'], ', '.join(stale)))

    by_hand = sorted(set(sources) - described)
    want = sorted(n for n, v in NOT_ANALYSED.items() if v == ALL)
    check(by_hand == want, 'every other C source is listed as not analysed (%s)' % ', '.join(want),
          'in C, neither in SOURCES nor NOT_ANALYSED: %s; in NOT_ANALYSED, not a C source or described: %s'
          % (', '.join(sorted(set(by_hand) - set(want))) or 'none',
             ', '.join(sorted(set(want) - set(by_hand))) or 'none'))

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
