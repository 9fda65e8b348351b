#!/usr/bin/env python3
"""paired.py RESULTS.CSV BASE — per allocator: median peak RSS (MiB) with its
quartiles, the median over repetitions of its ratio to BASE's in the same
repetition, median minor faults and seconds."""
import csv, sys, statistics as st
rows = list(csv.DictReader(open(sys.argv[1])))
base = sys.argv[2]
by = {}
for r in rows:
    key = (r['workload'], r['threads'])
    by.setdefault(key, {}).setdefault(r['allocator'], {})[r['rep']] = (
        int(r['maxrss_kb']) / 1024, int(r['minflt']), float(r['seconds']))
for (w, t), allocs in sorted(by.items()):
    for a, v in sorted(allocs.items()):
        rss = [x[0] for x in v.values()]
        q = st.quantiles(rss)
        common = [k for k in v if k in allocs[base]]
        paired = st.median(v[k][0] / allocs[base][k][0] for k in common)
        print(f"{w} {t} {a:9s} rss med {st.median(rss):5.1f} [q1 {q[0]:5.1f} q3 {q[2]:5.1f}] "
              f"paired/{base} {paired:.3f} faults {st.median(x[1] for x in v.values()):6.0f} "
              f"s {st.median(x[2] for x in v.values()):.3f}")
