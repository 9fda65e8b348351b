#!/bin/sh
# avg.sh [VAR=VALUE ...]: the mean number of libc text pages present after
# one malloc (./present libc.so), over 40 runs with address randomisation
# on (where libc lands decides which 64 KiB windows a call falls in).
t=0
for i in $(seq 40); do
  n=$(env "$@" ./present libc.so | grep r-xp | sed 's/.*(\([0-9]*\) pages).*/\1/')
  t=$((t + n))
done
echo "scale=1; $t / 40" | bc
