#!/bin/sh
# count.sh LIB [ENV=VALUE]: instructions per malloc+free pair of bench/fastpath
# (batches of 64, one thread) at 16, 64, 256, 1024 and 4096 bytes, the library
# preloaded: callgrind's total with batches=1000 less batches=0, over 64,000.
# Run from the repository root after `cmake --build build`.
lib=$1; shift
for s in 16 64 256 1024 4096; do
  for b in 1000 0; do
    env "$@" LD_PRELOAD="$lib" valgrind --tool=callgrind --callgrind-out-file=/tmp/count.cg.$b \
      build/bench/fastpath size=$s batches=$b >/dev/null 2>&1
  done
  a=$(callgrind_annotate /tmp/count.cg.1000 | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
  z=$(callgrind_annotate /tmp/count.cg.0 | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
  printf '%s ' $(( (a - z) / 64000 ))
done
echo
