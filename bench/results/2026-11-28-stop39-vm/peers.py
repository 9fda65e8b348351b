#!/usr/bin/env python3
"""peers.py RESULTS.csv: mmalloc against the best peer of each cell (glibc,
jemalloc, tcmalloc, mimalloc, tbbmalloc; other builds in the file are left
out): the cells where its median time is over 1.05x the fastest peer's or
its median peak RSS over 1.3x the leanest peer's, then the geometric means
of both ratios over every cell and the cells where it is the fastest."""
import csv, collections, statistics as st, math, sys
d = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    if r['status'] != 'ok':
        continue
    d[(r['workload'], r['threads'], r['allocator'])].append((float(r['seconds']), int(r['maxrss_kb']) / 1024))
peers = ['glibc', 'jemalloc', 'tcmalloc', 'mimalloc', 'tbbmalloc']
rt, rr = [], []
for w, t in sorted(set((w, t) for w, t, _ in d)):
    m = {a: st.median(x[0] for x in d[(w, t, a)]) for a in peers + ['mmalloc'] if (w, t, a) in d}
    r = {a: st.median(x[1] for x in d[(w, t, a)]) for a in peers + ['mmalloc'] if (w, t, a) in d}
    ps = [a for a in peers if a in m]
    bp = min(ps, key=lambda a: m[a]); lp = min(ps, key=lambda a: r[a])
    tr, rs = m['mmalloc'] / m[bp], r['mmalloc'] / r[lp]
    rt.append(tr); rr.append(rs)
    if tr > 1.05 or rs > 1.3:
        print(f"{w:13s} {t:>3s} time {tr:.2f} (fastest peer {bp} {m[bp]:.3f} s, mmalloc {m['mmalloc']:.3f}) "
              f"peak RSS {rs:.2f} (leanest peer {lp} {r[lp]:.1f} MiB, mmalloc {r['mmalloc']:.1f})")
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
print(f"{len(rt)} cells: time {g(rt):.3f}x the fastest peer's, peak RSS {g(rr):.3f}x the leanest peer's "
      f"(geometric means); the fastest in {sum(1 for x in rt if x <= 1.0)}")
