#!/usr/bin/env python3
"""regions.py A.data B.data: perf samples in the bwa binary per 1 KiB of its
text under two allocators, the regions whose counts differ most first."""
import collections, subprocess, sys
def samples(path):
    out = subprocess.run(['perf', 'report', '-i', path, '--stdio', '--sort', 'sym', '--dsos', 'bwa'],
                         capture_output=True, text=True).stdout
    total = next(int(l.split()[-1]) for l in out.splitlines() if 'Event count' in l) / 50000  # -F 20000
    regions = collections.Counter()
    for l in out.splitlines():
        f = l.split()
        if len(f) >= 3 and f[0].endswith('%') and f[2].startswith('0x'):
            regions[int(f[2], 16) // 1024] += float(f[0][:-1]) / 100 * total
    return total, regions
ta, a = samples(sys.argv[1]); tb, b = samples(sys.argv[2])
print(f"samples: {ta:.0f} and {tb:.0f}; in bwa: {sum(a.values()):.0f} and {sum(b.values()):.0f}")
for k in sorted(set(a) | set(b), key=lambda k: -(a[k] - b[k]))[:8]:
    print(f"{k * 1024:#08x}  {a[k]:7.0f} {b[k]:7.0f}  {a[k] - b[k]:+7.0f}")
