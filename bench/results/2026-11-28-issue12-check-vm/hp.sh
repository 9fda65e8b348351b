#!/bin/sh
# realloc-grow (quick, 1 and 2 threads) on mmalloc with transparent huge
# pages for big blocks (MMALLOC_HUGEPAGES=2, the default) and without (0),
# alternating, N rounds: seconds, system seconds, minor faults, peak RSS.
# Run from the repository root after building build/.
N=${1:-10}
for i in $(seq "$N"); do
  for t in 1 2; do
    for hp in 2 0; do
      MMALLOC_HUGEPAGES=$hp LD_PRELOAD=build/libmmalloc.so /usr/bin/time -f "threads=$t hp=$hp %e s %S sys %R faults %M KB" \
        build/bench/realloc-grow threads=$t vectors=12 >/dev/null
    done
  done
done
