#!/bin/sh
# bigfree at 512 MiB and 2 GiB on every allocator and on the build before
# the limit (OLD=<its libmmalloc.so>); from the repository root.
D=bench/results/2026-11-28-huge-cache-limit-vm
gcc -O2 -o /tmp/bigfree $D/bigfree.c || exit 1
for n in 512 2048; do
  for a in glibc jemalloc tcmalloc mimalloc tbbmalloc mmalloc; do
    echo "== $a, $n MiB"; bin/mmrun --alloc $a /tmp/bigfree $n
  done
  if [ -n "$OLD" ]; then echo "== mmalloc before the limit, $n MiB"; MMALLOC_LIB=$OLD bin/mmrun /tmp/bigfree $n; fi
done
