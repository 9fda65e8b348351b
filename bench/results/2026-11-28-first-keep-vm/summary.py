#!/usr/bin/env python3
"""Medians of peak RSS (MiB), seconds and minor faults per (workload,
threads, allocator) in a bench/run.py results.csv.

usage: python3 summary.py results.csv
"""
import csv
import statistics
import sys
from collections import defaultdict

v = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    if r["status"] == "ok":
        v[(r["workload"], int(r["threads"]), r["allocator"])].append(
            (int(r["maxrss_kb"]) / 1024, float(r["seconds"]), int(r["minflt"])))
print("| workload | threads | allocator | runs | peak RSS MiB | seconds | minor faults |")
print("|---|---|---|---|---|---|---|")
for k in sorted(v):
    m = [statistics.median(x[i] for x in v[k]) for i in range(3)]
    print("| %s | %d | %s | %d | %.1f | %.3f | %d |" % (k + (len(v[k]), m[0], m[1], m[2])))
