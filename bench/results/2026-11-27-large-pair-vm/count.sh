#!/bin/bash
# count.sh LIB: instructions per malloc+free pair (callgrind, the whole
# process over 80,000 pairs, the loop included) of 40,000, 100,000, 300,000
# and 1,000,000 bytes, LIB preloaded.  Build first: gcc -O2 -o big big.c
here=$(cd "$(dirname "$0")" && pwd)
for n in 40000 100000 300000 1000000; do
  LD_PRELOAD=$1 valgrind --tool=callgrind --callgrind-out-file=/tmp/count-large.cg "$here/big" $n 4 >/dev/null 2>&1
  t=$(callgrind_annotate /tmp/count-large.cg | grep "PROGRAM TOTALS" | awk '{gsub(",","",$1); print $1}')
  echo "$n: $(python3 -c "print(round($t/80000,1))")"
done
