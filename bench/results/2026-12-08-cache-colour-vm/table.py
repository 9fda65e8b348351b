"""table.py OUT.csv: median CPU seconds per (N, S) and allocator, and each
over the fastest."""
import csv, collections, statistics, sys
d = collections.defaultdict(lambda: collections.defaultdict(list))
order = []
for n, s, a, r, cpu, offs in csv.reader(open(sys.argv[1])):
    d[(int(n), int(s))][a].append(float(cpu))
    if a not in order: order.append(a)
print('| arrays x size | ' + ' | '.join(order) + ' |')
print('|---' * (len(order) + 1) + '|')
for (n, s), m in d.items():
    med = {a: statistics.median(v) for a, v in m.items()}
    best = min(med.values())
    print(f'| {n} x {s // 1024} KiB | ' + ' | '.join(f'{med[a]:.2f} s ({med[a] / best:.2f})' for a in order) + ' |')
