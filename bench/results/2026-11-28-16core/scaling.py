#!/usr/bin/env python3
"""Speed-up from 1 to N threads per workload and allocator, and the peak RSS
medians at the largest thread count, from a bench/run.py results.csv.

usage: python3 scaling.py results.csv [N]
"""
import csv
import statistics
import sys
from collections import defaultdict

path = sys.argv[1]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 16
t = defaultdict(list)
rss = defaultdict(list)
allocs, works = [], []
for r in csv.DictReader(open(path)):
    if r["status"] != "ok":
        continue
    k = (r["workload"], r["allocator"], int(r["threads"]))
    t[k].append(float(r["seconds"]))
    rss[k].append(int(r["maxrss_kb"]) / 1024)
    if r["allocator"] not in allocs:
        allocs.append(r["allocator"])
    if r["workload"] not in works:
        works.append(r["workload"])
med = {k: statistics.median(v) for k, v in t.items()}
print("speed-up, median time at 1 thread / median time at %d threads" % top)
print("| workload | " + " | ".join(allocs) + " |")
print("|---" * (len(allocs) + 1) + "|")
rows = []
for w in works:
    s = [med[(w, a, 1)] / med[(w, a, top)] for a in allocs]
    rows.append((s[0], w, s))
for _, w, s in sorted(rows, reverse=True):
    print("| %s | " % w + " | ".join("%.1f" % x for x in s) + " |")
print()
print("peak RSS at %d threads, MiB, medians" % top)
print("| workload | " + " | ".join(allocs) + " |")
print("|---" * (len(allocs) + 1) + "|")
for w in works:
    print("| %s | " % w + " | ".join(
        "%.1f" % statistics.median(rss[(w, a, top)]) for a in allocs) + " |")
