#!/bin/sh
# Issue 12's measurements again, at one commit, on this machine: the idle
# probe, realloc-grow (quick and full, 1/2/32 threads) and peak RSS at 32
# threads (larson, pipeline). Run from the repository root after
# `cmake --preset release && cmake --build build -j2`; writes next to itself.
set -e
D=bench/results/2026-11-28-issue12-check-vm
python3 bench/idle.py --reps 3 --out $D/idle.md
python3 bench/run.py --workloads realloc-grow --threads 1,2,32 --reps 7 \
  --no-callgrind --no-plots --no-install --seed 51 --out $D/grow-quick
python3 bench/run.py --workloads realloc-grow --threads 1,2,32 --reps 5 --full \
  --no-callgrind --no-plots --no-install --seed 52 --out $D/grow-full
python3 bench/run.py --workloads larson,pipeline --threads 32 --reps 21 \
  --no-callgrind --no-plots --no-install --seed 53 --out $D/rss32
