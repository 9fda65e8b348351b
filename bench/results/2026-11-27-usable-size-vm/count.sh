#!/bin/bash
# count.sh LIB: instructions per call (callgrind, the whole process, a loop
# with the call against the same loop without it) of realloc that stays in
# place (64 -> 56 bytes), realloc that moves (64 -> 200 bytes, its malloc,
# copy and free included) and malloc_usable_size (64 bytes), LIB preloaded.
# Build the two loops first: gcc -O2 -o mus mus.c; gcc -O2 -o rea rea.c
here=$(cd "$(dirname "$0")" && pwd)
L=$1
tot() { LD_PRELOAD=$L valgrind --tool=callgrind --callgrind-out-file=/tmp/count.cg "$@" >/dev/null 2>&1
        callgrind_annotate /tmp/count.cg | grep "PROGRAM TOTALS" | awk '{gsub(",","",$1); print $1}'; }
b=$(tot "$here/rea" 0); s=$(tot "$here/rea" 1); m=$(tot "$here/rea" 2)
u0=$(tot "$here/mus" 0 64); u1=$(tot "$here/mus" 1 64)
python3 -c "print('realloc in place %.1f, realloc moving %.1f, malloc_usable_size %.1f' % (($s-$b)/1280000, ($m-$b)/1280000, ($u1-$u0)/2560000))"
