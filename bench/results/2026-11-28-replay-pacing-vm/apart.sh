#!/bin/bash
# apart.sh BUILD N: N times, with two CPU hogs running, record the test
# pattern of trace_replay's "threads that share nothing" check (BUILD's
# trace_live threads 2 400000) and replay it twice on glibc and on BUILD's
# mmalloc with the replayer in $OLD and with BUILD's own; print each
# replay's "waits for a block" and, at the end, how many were not 0.
# Needs OLD (an mmtrace binary of the replayer before) and WORK (a
# scratch directory) in the environment.
B=$1; N=$2; fo=0; fn=0
yes > /dev/null & h1=$!; yes > /dev/null & h2=$!
for i in $(seq $N); do
  $B/mmtrace record -o $WORK/apart.mmtrace -- $B/trace_live threads 2 400000 >/dev/null 2>&1
  o=$($OLD replay $WORK/apart.mmtrace --alloc glibc --alloc $B/libmmalloc.so --reps 2 2>&1 | grep -oE "[0-9]+ waits for a block" | awk '{print $1}' | tr '\n' ' ')
  n=$($B/mmtrace replay $WORK/apart.mmtrace --alloc glibc --alloc $B/libmmalloc.so --reps 2 2>&1 | grep -oE "[0-9]+ waits for a block" | awk '{print $1}' | tr '\n' ' ')
  echo "old: $o new: $n"
  for w in $o; do [ "$w" != 0 ] && fo=$((fo+1)); done
  for w in $n; do [ "$w" != 0 ] && fn=$((fn+1)); done
done
kill $h1 $h2
echo "nonzero old $fo new $fn"
