#!/usr/bin/env python3
"""table.py FILE...: medians per allocator and buffer of sort.sh's lines."""
import sys, statistics as st, collections
d = collections.defaultdict(list)
for f in sys.argv[1:]:
    for line in open(f):
        a, buf, t, rss, flt = line.split()
        d[(buf, a)].append((float(t), int(rss) / 1024, int(flt)))
print("| buffer | allocator | wall s | peak RSS MiB | page faults |\n|---|---|---|---|---|")
for (buf, a), v in sorted(d.items()):
    print(f"| {buf} | {a} | {st.median(x[0] for x in v):.2f} | {st.median(x[1] for x in v):.1f} | {st.median(x[2] for x in v):,.0f} |")
