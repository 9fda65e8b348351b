#!/usr/bin/env python3
"""Per thread count: each allocator's geometric mean of its median time over
the cell's best median, and the cells where it is fastest, over the
workloads given (default all) and the allocators given (default all).

usage: python3 bythreads.py results.csv [--workloads a,b] [--allocs x,y]
"""
import argparse
import csv
import math
import statistics
from collections import defaultdict

ap = argparse.ArgumentParser()
ap.add_argument("csv")
ap.add_argument("--workloads", type=lambda s: s.split(","))
ap.add_argument("--allocs", type=lambda s: s.split(","))
ap.add_argument("--metric", default="seconds", help="seconds or maxrss_kb")
a = ap.parse_args()
v = defaultdict(list)
for r in csv.DictReader(open(a.csv)):
    if r["status"] != "ok":
        continue
    if a.workloads and r["workload"] not in a.workloads:
        continue
    if a.allocs and r["allocator"] not in a.allocs:
        continue
    v[(r["workload"], int(r["threads"]), r["allocator"])].append(float(r[a.metric]))
med = {k: statistics.median(x) for k, x in v.items()}
allocs = sorted({k[2] for k in med})
threads = sorted({k[1] for k in med})
cells = sorted({(k[0], k[1]) for k in med})
print("| allocator | " + " | ".join("%d threads" % t for t in threads) + " | all |")
print("|---" * (len(threads) + 2) + "|")
for al in allocs:
    out, lall = [], []
    for t in threads:
        logs, wins, n = [], 0, 0
        for w, tt in cells:
            if tt != t or (w, t, al) not in med:
                continue
            best = min(med[(w, t, x)] for x in allocs if (w, t, x) in med)
            logs.append(math.log(med[(w, t, al)] / best))
            wins += med[(w, t, al)] == best
            n += 1
        lall += logs
        out.append("%.2f (%d of %d)" % (math.exp(sum(logs) / len(logs)), wins, n))
    print("| %s | " % al + " | ".join(out) + " | %.2f |" % math.exp(sum(lall) / len(lall)))
