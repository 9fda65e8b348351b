"""table.py RESULTS.csv: per program, each allocator's median score over the
fastest allocator's (and its median peak RSS in MiB), then mmalloc's ratio
to the fastest and to the leanest (markdown)."""
import csv, sys, statistics as st, collections
d = collections.defaultdict(list)
for row in csv.reader(open(sys.argv[1])):
    n, a, r, rc, s, wall, rss, flt = row
    if rc != "0": print("FAIL", row); continue
    d[(n, a)].append((float(s), int(rss) / 1024))
names = list(dict.fromkeys(n for n, a in d)); allocs = list(dict.fromkeys(a for n, a in d))
print("| bench | " + " | ".join(allocs) + " | mm/best t | mm/lean rss |")
print("|---" * (len(allocs) + 3) + "|")
for n in names:
    med = {a: (st.median(x[0] for x in d[(n, a)]), st.median(x[1] for x in d[(n, a)])) for a in allocs if (n, a) in d}
    bt = min(v[0] for v in med.values()); br = min(v[1] for v in med.values())
    cells = [f"{med[a][0]/bt:.2f} ({med[a][1]:.1f})" if a in med else "-" for a in allocs]
    mm = med.get("mmalloc")
    print(f"| {n} | " + " | ".join(cells) + f" | {mm[0]/bt:.2f} | {mm[1]/br:.2f} |")
