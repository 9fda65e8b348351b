#!/usr/bin/env bash
# soak.sh — run the stress test (test/stress/stress.c) over and over with
# random parameters for a time box; keep every failure with its seed.
#
# usage: tools/soak.sh SECONDS THREADS [SANITIZER]
#   SECONDS    time box: no run starts after it (a run in progress finishes)
#   THREADS    thread counts are drawn around it (THREADS/2 .. 2*THREADS)
#   SANITIZER  none | address (ASan+UBSan, the default) | thread (TSan)
#
# Builds the stress test once, in build-soak-<sanitizer> (RelWithDebInfo,
# the allocator and stress_mm16 only), then runs
#   stress_mm16 THREADS SCALE ITER SEED      with MMALLOC_HEAPS=H
# with, for each run: threads in THREADS/2..2*THREADS, SCALE 1..4 (512 to
# 2,048 live objects per thread: their sizes, 1 B to 2 MiB, come from the
# seed), ITER drawn so that a run takes a few seconds, a 64-bit SEED, and
# H = 1, 2 or 4 local heaps.  Every run's parameters go to runs.log in the
# log directory (build-soak-<sanitizer>/soak-<date>/); a failed run (exit
# not 0, a sanitizer report, a hang past the per-run limit) keeps its whole
# output in fail-<n>.log with the command that reproduces it.  The last
# line is the summary: runs, failures and the seeds of the failed runs
# (every seed is in runs.log).  Exit 1 on any failure,
# 2 on bad usage or a failed build.
#
# Environment: SOAK_RUN_LIMIT (seconds a run may take before it counts as a
# hang, default 300), SOAK_JOBS (build jobs, default 2).
set -uo pipefail

usage() {
  echo "usage: tools/soak.sh SECONDS THREADS [none|address|thread]" >&2
  exit 2
}
[ $# -ge 2 ] && [ $# -le 3 ] || usage
secs=$1 threads=$2 san=${3:-address}
[[ $secs =~ ^[0-9]+$ ]] && [[ $threads =~ ^[1-9][0-9]*$ ]] || usage
case $san in
none) cmake_san="" ;;
address | thread) cmake_san=$san ;;
*) usage ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-soak-$san
jobs=${SOAK_JOBS:-2}
run_limit=${SOAK_RUN_LIMIT:-300}

echo "soak: building stress_mm16 in $build (sanitizer: $san)"
mkdir -p "$build" || exit 2
if ! cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMM_SANITIZE="$cmake_san" \
  -DMM_BUILD_BENCH=OFF -DMM_BUILD_STREAM=OFF -DMM_WERROR=ON >"$build/soak-configure.log" 2>&1; then
  cat "$build/soak-configure.log" >&2
  echo "soak: configure failed" >&2
  exit 2
fi
if ! cmake --build "$build" -j "$jobs" --target stress_mm16 >"$build/soak-build.log" 2>&1; then
  tail -n 30 "$build/soak-build.log" >&2
  echo "soak: build failed" >&2
  exit 2
fi
prog=$build/test/stress_mm16
[ -x "$prog" ] || { echo "soak: $prog missing" >&2; exit 2; }

logdir=$build/soak-$(date +%Y%m%d-%H%M%S)
mkdir -p "$logdir"
echo "soak: ${secs}s, threads around $threads, logs in $logdir"

# Random numbers from the kernel (seeds must differ between soaks): a
# 64-bit seed (as text: bash arithmetic is signed), and an integer in
# [lo, hi] from 31 bits.
rand64() { od -An -N8 -tu8 /dev/urandom | tr -d ' '; }
between() { echo $(( $1 + ($(od -An -N4 -tu4 /dev/urandom) & 0x7fffffff) % ($2 - $1 + 1) )); }

# Operations per run, all threads together: a run takes a few seconds on
# a loaded 2-core machine (measured: about 5,000 per second under ASan,
# where every object's bytes are written and checked; plain builds are ~3x
# faster, TSan ~3x slower).
case $san in
none) ops=30000 ;;
address) ops=10000 ;;
thread) ops=3000 ;;
esac

lo_t=$(( threads / 2 )); [ $lo_t -lt 1 ] && lo_t=1
hi_t=$(( threads * 2 ))
runs=0 failures=0 failed_seeds=""
start=$SECONDS
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1}
printf '# run  threads scale iter heaps seed  -> result seconds\n' >"$logdir/runs.log"

while [ $(( SECONDS - start )) -lt "$secs" ]; do
  runs=$((runs + 1))
  t=$(between "$lo_t" "$hi_t")
  scale=$(between 1 4)
  heaps=$(( 1 << $(between 0 2) ))
  # The run's operations split between its threads, times 0.5 .. 1.5,
  # at least 200 per thread.
  iter=$(( ops / t * $(between 5 15) / 10 ))
  [ $iter -lt 200 ] && iter=200
  seed=$(rand64)
  cmd="MMALLOC_HEAPS=$heaps $prog $t $scale $iter $seed"
  out=$logdir/run.out
  t0=$SECONDS
  MMALLOC_HEAPS=$heaps timeout -k 10 "$run_limit" "$prog" "$t" "$scale" "$iter" "$seed" \
    >"$out" 2>&1
  rc=$?
  dt=$((SECONDS - t0))
  result=ok
  if [ $rc -ne 0 ]; then
    result="FAIL(exit $rc)"
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && result="FAIL(hang: over ${run_limit}s)"
  elif grep -q -e 'ERROR: AddressSanitizer' -e 'runtime error:' -e 'WARNING: ThreadSanitizer' \
    -e 'ERROR: LeakSanitizer' "$out"; then
    result="FAIL(sanitizer report)"
  fi
  printf '%4d %8d %5d %6d %5d %s -> %s %ds\n' "$runs" "$t" "$scale" "$iter" "$heaps" "$seed" \
    "$result" "$dt" >>"$logdir/runs.log"
  if [ "$result" != ok ]; then
    failures=$((failures + 1))
    failed_seeds="$failed_seeds $seed"
    keep=$logdir/fail-$failures.log
    { echo "# $result after ${dt}s; reproduce with:"; echo "$cmd"; echo; cat "$out"; } >"$keep"
    echo "soak: run $runs FAILED ($result): $cmd  [log: $keep]"
  fi
done
rm -f "$logdir/run.out"

echo "soak: $runs runs, $failures failures${failed_seeds:+, failed seeds:$failed_seeds} (all seeds: $logdir/runs.log)" | tee -a "$logdir/runs.log"
[ $failures -eq 0 ]
