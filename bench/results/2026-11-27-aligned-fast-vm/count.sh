#!/bin/bash
# count.sh LIB [SIZE]: instructions per allocation+free pair (callgrind, the
# whole process over 1,280,000 pairs, the loop included) of malloc, calloc,
# posix_memalign(64), aligned_alloc(32) and memalign(16) of SIZE bytes
# (default 64), LIB preloaded ("" for glibc).  Build the loop first:
# gcc -O2 -o loop loop.c
here=$(cd "$(dirname "$0")" && pwd)
L=$1; n=${2:-64}
tot() { LD_PRELOAD=$L valgrind --tool=callgrind --callgrind-out-file=/tmp/count-aligned.cg "$@" >/dev/null 2>&1
        callgrind_annotate /tmp/count-aligned.cg | grep "PROGRAM TOTALS" | awk '{gsub(",","",$1); print $1}'; }
out=""
for m in 0 1 2 3 4; do t=$(tot "$here/loop" $m $n); out="$out $(python3 -c "print(round($t/1280000,1))")"; done
echo "malloc calloc posix_memalign(64) aligned_alloc(32) memalign(16):$out"
