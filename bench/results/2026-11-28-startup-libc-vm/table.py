#!/usr/bin/env python3
"""table.py maxrss.txt: medians per program and allocator of maxrss.sh's
lines: the peak (getrusage), and at exit libc's text and the whole process."""
import collections, statistics, sys
d = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] not in order: order.append(f[0])
    d[(f[0], f[1])].append((int(f[2]), int(f[4]), int(f[6])))
med = lambda n, a, i: statistics.median(r[i] for r in d[(n, a)])
print("| program | peak: glibc / before / after | at exit, libc text: glibc / before / after | at exit, all: glibc / before / after (after - before) |")
print("|---|---|---|---|")
for n in order:
    cells = []
    for i in range(3):
        g, b, a = (med(n, x, i) for x in ("glibc", "before", "after"))
        cells.append("%d / %d / %d" % (g, b, a) + (" (%+d)" % (a - b) if i == 2 else ""))
    print("| %s | %s |" % (n, " | ".join(cells)))
