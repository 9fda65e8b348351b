#!/bin/bash
# make bench's workloads at 1-16 threads against the peers, on the device.
# MODE=check: a tiny run only (to try the script here).
set -u
P=$PWD/build-dev/peers
OUT=${OUT:-/tmp/out16}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$P
A=(--alloc jemalloc=$P/libjemalloc.so.2 --alloc tcmalloc=$P/libtcmalloc_minimal.so.4
   --alloc mimalloc=$P/libmimalloc.so.2 --alloc tbbmalloc=$P/libtbbmalloc_proxy.so.2)
{ date -u; nproc; lscpu; cat /etc/os-release; uname -a; free -g; python3 --version; ldd --version | head -1; cat /sys/kernel/mm/transparent_hugepage/enabled; } > "$OUT/machine.txt" 2>&1
python3 bench/run.py --build-dir build-dev --no-install --no-callgrind --no-plots --tiny \
  --threads 2 --reps 1 --workloads recycle,pipeline "${A[@]}" --out "$OUT/check" > "$OUT/check.log" 2>&1
rc=$?
tail -5 "$OUT/check.log"
wc -l "$OUT/check/results.csv"
[ $rc = 0 ] || exit 3
[ "${MODE:-}" = check ] && exit 0
S=$(date +%s)
timeout ${T1:-420} python3 bench/run.py --build-dir build-dev --no-install --no-callgrind --no-plots \
  --seed 11 --threads 1,2,4,8,16 --reps 3 "${A[@]}" --out "$OUT/sweep" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$? $(( $(date +%s) - S )) s"; tail -3 "$OUT/sweep.log"
S=$(date +%s)
timeout ${T2:-80} python3 bench/run.py --build-dir build-dev --no-install --no-callgrind --no-plots \
  --seed 12 --threads 32 --reps 5 --workloads pipeline,larson "${A[@]}" --out "$OUT/t32" > "$OUT/t32.log" 2>&1
echo "t32 rc=$? $(( $(date +%s) - S )) s"; tail -3 "$OUT/t32.log"
