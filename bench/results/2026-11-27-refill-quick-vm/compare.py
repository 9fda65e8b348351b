#!/usr/bin/env python3
"""compare.py RESULTS.CSV: per workload and thread count, the median
seconds of `base` and `quick`, their ratio, and mimalloc's time over
base's; then the geometric mean of quick/base over the cells."""
import collections
import csv
import math
import statistics as st
import sys

r = collections.defaultdict(list)
for row in csv.DictReader(open(sys.argv[1])):
    r[(row['workload'], row['threads'], row['allocator'])].append(float(row['seconds']))
logs = []
for w, t in sorted(set((w, t) for w, t, a in r)):
    b = st.median(r[(w, t, 'base')])
    q = st.median(r[(w, t, 'quick')])
    m = st.median(r[(w, t, 'mimalloc')])
    logs.append(math.log(q / b))
    print(f"| {w} | {t} | {b:.4f} | {q:.4f} | {q / b:.3f} | {m / b:.3f} |")
print("geomean quick/base", round(math.exp(sum(logs) / len(logs)), 3), "over", len(logs), "cells")
