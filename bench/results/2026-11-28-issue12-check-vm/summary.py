#!/usr/bin/env python3
"""summary.py RESULTS.csv...: per workload, thread count and allocator, the
median seconds [min-max], peak RSS MiB, minor faults and minor faults per
operation (for realloc-grow an operation is one realloc call), and each
cell's ratio to the fastest and to the leanest allocator (markdown)."""
import csv, statistics as st, sys, collections
d = collections.defaultdict(list)
for f in sys.argv[1:]:
    for r in csv.DictReader(open(f)):
        if r['status'] != 'ok':
            continue
        d[(r['workload'], int(r['threads']), r['allocator'])].append(
            (float(r['seconds']), int(r['maxrss_kb']) / 1024, int(r['minflt']), int(r['ops'] or 0)))
cells = sorted({(w, t) for w, t, _ in d})
print("| workload | threads | allocator | seconds [min-max] | / fastest | peak RSS MiB | / leanest | minor faults | faults per op |")
print("|---|---|---|---|---|---|---|---|---|")
for w, t in cells:
    m = {a: v for (w2, t2, a), v in d.items() if (w2, t2) == (w, t)}
    med = {a: (st.median(x[0] for x in v), st.median(x[1] for x in v), st.median(x[2] for x in v),
               st.median(x[3] for x in v)) for a, v in m.items()}
    best = min(x[0] for x in med.values()); lean = min(x[1] for x in med.values())
    for a in sorted(med, key=lambda a: med[a][0]):
        s, rss, flt, ops = med[a]
        lo = min(x[0] for x in m[a]); hi = max(x[0] for x in m[a])
        print(f"| {w} | {t} | {a} | {s:.3f} [{lo:.3f}-{hi:.3f}] | {s / best:.2f} | {rss:.1f} | {rss / lean:.2f} | {flt:.0f} | {flt / ops if ops else 0:.1f} |")
