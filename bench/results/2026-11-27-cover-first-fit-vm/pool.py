#!/usr/bin/env python3
"""pool.py — realloc-grow at 32 threads over realloc-grow-a.csv and
realloc-grow-b.csv together: per build, runs, median and quartiles of peak
RSS (MiB) and median page faults."""
import csv, collections, statistics as st, os
here = os.path.dirname(os.path.abspath(__file__))
d = collections.defaultdict(list)
for f in ("realloc-grow-a.csv", "realloc-grow-b.csv"):
    for r in csv.DictReader(open(os.path.join(here, f))):
        if r["workload"] == "realloc-grow" and r["threads"] == "32" and r["status"] == "ok":
            d[r["allocator"]].append((int(r["maxrss_kb"]) / 1024, int(r["minflt"]), float(r["seconds"])))
print("| build | runs | peak RSS median (MiB) | quartiles | faults median | seconds median |")
print("|---|---|---|---|---|---|")
for k in sorted(d):
    v = d[k]
    rss = sorted(x[0] for x in v)
    print("| %s | %d | %.1f | %.1f-%.1f | %d | %.4f |" % (k, len(v), st.median(rss), rss[len(v) // 4],
          rss[3 * len(v) // 4], st.median(x[1] for x in v), st.median(x[2] for x in v)))
