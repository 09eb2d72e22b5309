#!/usr/bin/env python3
"""Part of bench/storage.sh: reads pg_waldump's output on stdin and prints,
tab-separated, one line per relfilenode of the first block reference of a
record: relfilenode, records, bytes (total record length, FPIs included),
FPI bytes; and one line "xact <records> <bytes> 0" for the records without
a block reference (commit, subtransaction assignment, ...) of every
transaction that touched one of the relfilenodes named on the command line.
"""
import re
import sys

wanted = set(sys.argv[1:])
by_rel = {}
xact_of = {}          # xid -> [records, bytes] of records without a block reference
touching = set()      # xids that touched a wanted relation
line_re = re.compile(r'len \(rec/tot\):\s*(\d+)/\s*(\d+), tx:\s*(\d+),')
rel_re = re.compile(r'blkref #0: rel \d+/\d+/(\d+)')
fpi_re = re.compile(r'FPW|FPI')
for line in sys.stdin:
    m = line_re.search(line)
    if not m:
        continue
    tot, xid = int(m.group(2)), m.group(3)
    r = rel_re.search(line)
    if r:
        rel = r.group(1)
        e = by_rel.setdefault(rel, [0, 0, 0])
        e[0] += 1
        e[1] += tot
        if fpi_re.search(line):
            e[2] += tot - int(m.group(1))
        if rel in wanted:
            touching.add(xid)
    else:
        e = xact_of.setdefault(xid, [0, 0])
        e[0] += 1
        e[1] += tot
for rel, (n, b, f) in by_rel.items():
    if rel in wanted:
        print('%s\t%d\t%d\t%d' % (rel, n, b, f))
n = sum(xact_of[x][0] for x in touching if x in xact_of)
b = sum(xact_of[x][1] for x in touching if x in xact_of)
print('xact\t%d\t%d\t0' % (n, b))
