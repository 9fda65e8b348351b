#!/usr/bin/env python3
"""medians.py RESULTS.csv: per workload and thread count, every allocator's
median time, its ratio to the fastest, and its median peak RSS in MiB,
fastest first (a markdown row per cell)."""
import csv,collections,statistics as st,sys
d=collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    if r['status']!='ok': continue
    d[(r['workload'],r['threads'],r['allocator'])].append((float(r['seconds']),int(r['maxrss_kb'])/1024,int(r['minflt'])))
cells=sorted(set((w,t) for w,t,_ in d))
for w,t in cells:
    ms={a:st.median(x[0] for x in v) for (w2,t2,a),v in d.items() if (w2,t2)==(w,t)}
    rs={a:st.median(x[1] for x in v) for (w2,t2,a),v in d.items() if (w2,t2)==(w,t)}
    best=min(ms.values()); lean=min(rs.values())
    print(f"| {w} | {t} | " + " | ".join(f"{a} {ms[a]:.3f} ({ms[a]/best:.2f}) {rs[a]:.0f}" for a in sorted(ms, key=ms.get)) + " |")
