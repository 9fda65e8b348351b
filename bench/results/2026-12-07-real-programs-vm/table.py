import csv, sys, statistics, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
hs = collections.defaultdict(set)
for row in csv.reader(open(sys.argv[1])):
    n, a, r, t, rss, mf, h, rc = row
    d[n][a].append((float(t), int(rss)/1024, int(mf)))
    hs[n].add(h)
allocs = []
for n in d:
    for a in d[n]:
        if a not in allocs: allocs.append(a)
print('| prog | ' + ' | '.join(allocs) + ' | mm/best t | mm/lean rss |')
print('|---' * (len(allocs) + 3) + '|')
for n in d:
    med = {a: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for a, v in d[n].items()}
    bt = min(m[0] for m in med.values()); br = min(m[1] for m in med.values())
    cells = [f'{med[a][0]:.2f}s {med[a][1]:.1f}' if a in med else '-' for a in allocs]
    mm = med.get('mmalloc')
    print(f'| {n} | ' + ' | '.join(cells) + f' | {mm[0]/bt:.2f} | {mm[1]/br:.2f} |' + ('' if len(hs[n]) == 1 else ' outputs differ'))
