#!/bin/sh
# sort.sh OUT REPS [BUFFER]: GNU sort (Debian's coreutils) with a BUFFER
# (default 30M) buffer and two threads on 40 MB of base64 text (30 MB of
# /dev/urandom, made once), under each allocator preloaded, allocators
# alternating; one line per run: allocator, buffer, wall seconds, peak RSS
# KiB, minor page faults.  HEADLIB: a build to compare with.
OUT=$1; REPS=${2:-5}; BUF=${3:-30M}; L=/usr/lib/x86_64-linux-gnu
[ -f /tmp/big.txt ] || head -c 30000000 /dev/urandom | base64 > /tmp/big.txt
for r in $(seq "$REPS"); do
  for a in glibc: jemalloc:$L/libjemalloc.so.2 tcmalloc:$L/libtcmalloc_minimal.so.4 \
           mimalloc:$L/libmimalloc.so.2 mmalloc:${MMLIB:-build/libmmalloc.so} ${HEADLIB:+before:$HEADLIB}; do
    name=${a%%:*}; lib=${a#*:}
    /usr/bin/time -f "$name $BUF %e %M %R" env LD_PRELOAD=$lib sort --parallel=2 -S "$BUF" /tmp/big.txt 2>>"$OUT" >/dev/null
  done
done
