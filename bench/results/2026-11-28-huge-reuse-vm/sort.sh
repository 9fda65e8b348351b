#!/bin/sh
# sort.sh OUT REPS: GNU sort (Debian's coreutils) with a 50 MiB buffer and two
# threads on 40 MB of base64 text (30 MB of /dev/urandom, made once), under
# each allocator preloaded, allocators alternating; one line per run:
# allocator, wall seconds, peak RSS KiB.  HEADLIB: a build to compare with.
OUT=$1; REPS=${2:-5}; L=/usr/lib/x86_64-linux-gnu
[ -f /tmp/big.txt ] || head -c 30000000 /dev/urandom | base64 > /tmp/big.txt
for r in $(seq "$REPS"); do
  for a in glibc: jemalloc:$L/libjemalloc.so.2 tcmalloc:$L/libtcmalloc_minimal.so.4 \
           mimalloc:$L/libmimalloc.so.2 mmalloc:${MMLIB:-build/libmmalloc.so} ${HEADLIB:+before:$HEADLIB}; do
    name=${a%%:*}; lib=${a#*:}
    /usr/bin/time -f "$name %e %M" env LD_PRELOAD=$lib sort --parallel=2 -S 50M /tmp/big.txt 2>>"$OUT" >/dev/null
  done
done
