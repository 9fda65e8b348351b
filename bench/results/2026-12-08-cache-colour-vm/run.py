"""run.py OUT.csv REPS name=LIB ...: alias.c (built here as ./alias) under
each allocator (LIB empty: glibc; VAR=VALUE after a comma sets the
environment too: mmalloc-off=<lib>,MMALLOC_CACHE_COLOUR=0), allocators
alternating, for N arrays of S bytes (the grid below); one CSV line per
run: N, S, allocator, repetition, user+sys CPU seconds, the page offsets'
OR.  Medians: python3 table.py OUT.csv."""
import csv, os, resource, subprocess, sys
GRID = [(4, 65536), (8, 65536), (12, 65536), (16, 65536), (24, 65536), (16, 1 << 20)]
out, reps = sys.argv[1], int(sys.argv[2])
allocs = []
for spec in sys.argv[3:]:
    name, rest = spec.split('=', 1)
    lib, *env = rest.split(',')
    allocs.append((name, lib, dict(e.split('=', 1) for e in env)))
w = csv.writer(open(out, 'a'))
for n, s in GRID:
    passes = max(1, 48000 * 65536 // (n * s))  # about the same work per cell
    for r in range(reps):
        for name, lib, extra in (allocs if r % 2 == 0 else allocs[::-1]):
            env = dict(os.environ, LD_PRELOAD=lib, **extra)
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            p = subprocess.run(['./alias', str(n), str(s), str(passes)], env=env, capture_output=True, text=True, check=True)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
            offs = p.stdout.split('offsets-or=')[1].split()[0]
            w.writerow([n, s, name, r, f'{cpu:.3f}', offs])
            print(n, s, name, r, f'{cpu:.3f}', offs, flush=True)
