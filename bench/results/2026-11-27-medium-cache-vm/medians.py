#!/usr/bin/env python3
"""medians.py RESULTS.csv: per (workload, threads, allocator), the medians of
seconds, peak RSS (KiB) and minor faults."""
import csv,statistics as st,collections,sys
d=collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    d[(r['workload'],int(r['threads']),r['allocator'])].append((float(r['seconds']),int(r['maxrss_kb']),int(r['minflt'])))
for k in sorted(d):
    v=d[k]; print(k, 'sec %.4f'%st.median(x[0] for x in v), 'rss %d'%st.median(x[1] for x in v), 'flt %d'%st.median(x[2] for x in v))
