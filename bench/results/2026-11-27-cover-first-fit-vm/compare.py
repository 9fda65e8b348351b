#!/usr/bin/env python3
"""compare.py RESULTS.csv A B: per workload and thread count, medians of
B's time, A/B time, peak RSS and faults of both, and the fastest and
leanest of the other allocators in the file (a markdown table), and the
geometric means of A/B over the cells."""
import csv,statistics as st,collections,sys
f=sys.argv[1]; a=sys.argv[2]; b=sys.argv[3]
d=collections.defaultdict(list)
for r in csv.DictReader(open(f)):
    if r['status']!='ok': continue
    d[(r['workload'],int(r['threads']),r['allocator'])].append((float(r['seconds']),int(r['maxrss_kb']),int(r['minflt'])))
cells=sorted(set((w,t) for w,t,_ in d))
ratios=[]
print("| workload | T | %s s | %s/%s time | RSS MiB %s | %s | faults %s | %s | best peer time | leanest peer RSS |"%(b,a,b,b,a,b,a))
print("|---|---|---|---|---|---|---|---|---|---|")
for w,t in cells:
    m={al:(st.median(x[0] for x in v),st.median(x[1] for x in v),st.median(x[2] for x in v)) for (w2,t2,al),v in d.items() if (w2,t2)==(w,t)}
    peers={k:v for k,v in m.items() if k not in (a,b)}
    bt=min(peers.items(), key=lambda kv: kv[1][0]) if peers else None
    br=min(peers.items(), key=lambda kv: kv[1][1]) if peers else None
    if a not in m or b not in m: continue
    ratios.append((m[a][0]/m[b][0], m[a][1]/m[b][1]))
    print("| %s | %d | %.4f | %.3f | %.1f | %.1f | %d | %d | %s | %s |"%(w,t,m[b][0],m[a][0]/m[b][0],m[b][1]/1024,m[a][1]/1024,m[b][2],m[a][2],
          "%s %.4f"%(bt[0],bt[1][0]) if bt else "-", "%s %.1f"%(br[0],br[1][1]/1024) if br else "-"))
if ratios:
    import math
    g=lambda xs: math.exp(sum(math.log(x) for x in xs)/len(xs))
    print("\n%d cells: %s/%s geometric mean time %.3f, peak RSS %.3f"%(len(ratios),a,b,g([r[0] for r in ratios]),g([r[1] for r in ratios])))
