#!/usr/bin/env python3
"""compare.py RESULTS.CSV: per workload and thread count, the default
build's median seconds (`mmalloc`), each secure build's median over it,
and secure over secure-before; then the geometric means over the cells."""
import collections
import csv
import math
import statistics as st
import sys

r = collections.defaultdict(list)
for row in csv.DictReader(open(sys.argv[1])):
    if row['status'] == 'ok':
        r[(row['workload'], row['threads'], row['allocator'])].append(float(row['seconds']))
cells = sorted(set((w, t) for w, t, a in r))
lb, la, lp = [], [], []
for w, t in cells:
    d = st.median(r[(w, t, 'mmalloc')])
    b = st.median(r[(w, t, 'secure-before')])
    a = st.median(r[(w, t, 'secure')])
    lb.append(math.log(b / d))
    la.append(math.log(a / d))
    lp.append(math.log(a / b))
    print(f"| {w} | {t} | {d:.4f} | {b / d:.2f} | {a / d:.2f} | {a / b:.3f} |")


def g(logs):
    return round(math.exp(sum(logs) / len(logs)), 3)


print(f"geomean over {len(cells)} cells: secure-before/default {g(lb)}, "
      f"secure/default {g(la)}, secure/secure-before {g(lp)}")
