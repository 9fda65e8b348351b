#!/usr/bin/env bash
# hot-text.sh — regenerate src/hot_text.txt: the functions of the library
# that programs run, which the shared library's link puts first in its text
# (src/CMakeLists.txt, docs/design.md "Start-up memory").
#
# usage: tools/hot-text.sh [WORK_DIR [OUT]]
#   WORK_DIR  the instrumented build and its records (default /tmp/mmalloc-hot-text)
#   OUT       the list written (default src/hot_text.txt, whose header it keeps;
#             tool_hot_text, a ctest, writes one into the build directory)
#
# Builds the library once more (the project's CMake release build, in
# WORK_DIR) with -finstrument-functions and a hook (tools/hot-text-hook.c)
# that notes every function entered, runs a
# set of programs under that build (a one-malloc program; hot-text-run.c and
# hot-text-run.cc, what common C and C++ programs ask, threads and the purge
# included; ls, sort, git and Python start-up; make bench's larson, xfree,
# pipeline and realloc-grow at their smallest), and writes the function
# names after the file's header in the order the link places them: what
# the one-malloc program runs, then what the two model programs run
# (together about one 64 KiB window), then the rest, those that more of the
# programs run first.  Run it after a change that adds or renames functions
# on those paths; structure_hot_text (a ctest) fails when a name in the list
# is no longer a function of src/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/mmalloc-hot-text}
out=${2:-$root/src/hot_text.txt}
case $out in /*) ;; *) out=$PWD/$out ;; esac
mkdir -p "$work"
cd "$work"

# the library as the project builds it (its CMake release build), every
# function instrumented, the hook linked in (not instrumented itself)
gcc -c -O2 -fPIC -fvisibility=hidden -o hook.o "$root/tools/hot-text-hook.c"
cmake -S "$root" -B lib -DCMAKE_BUILD_TYPE=Release -DMM_BUILD_TESTS=OFF -DMM_BUILD_STREAM=OFF \
  -DMM_BUILD_BENCH=OFF -DMM_BUILD_TRACE=OFF -DMM_INSTALL=OFF \
  -DCMAKE_C_FLAGS=-finstrument-functions -DCMAKE_SHARED_LINKER_FLAGS="$work/hook.o" > lib.log
cmake --build lib --target mmalloc -j "$(nproc)" >> lib.log
inst=$(find "$work/lib" -name 'libmmalloc.so.*.*.*' | head -1)
printf '#include <stdlib.h>\n#include <string.h>\nint main(void) { char *volatile p = malloc(100); memset(p, 1, 100); free(p); return 0; }\n' > one.c
gcc -O2 -o one one.c
gcc -O2 -pthread -o run-c "$root/tools/hot-text-run.c"
g++ -O2 -o run-cc "$root/tools/hot-text-run.cc"

bench=$root/build/bench
rm -f entered-*.txt
n=0
run() { # each program's functions to a file of its own
  n=$((n + 1))
  LD_PRELOAD=$inst FNDUMP=$work/entered-$n.txt "$@" > /dev/null 2>&1 || true
}
run ./one
run ./run-c
run ./run-cc
run ls -la /usr/lib
run sort /etc/services
run git -C "$root" log --oneline -3
run python3 -c 'import json; json.dumps(list(range(1000)))'
if [ -x "$bench/larson" ]; then
  run "$bench/larson" threads=2 slots=500 ops=20000 rounds=2
  run "$bench/xfree" threads=2 objects=200000
  run "$bench/pipeline" threads=2 mb=4
  run "$bench/realloc-grow" threads=2 vectors=8 max=16M
else
  echo "hot-text.sh: $bench not built (cmake --preset release && cmake --build build): the list leaves out make bench's workloads" >&2
fi

# offsets from the library's start -> names (a clone such as f.constprop.0
# counts as f), kept only where the release library defines that function
nm --defined-only "$inst" | awk '$2 ~ /^[tT]$/ {print $1, $3}' > inst-syms.txt
python3 - "$work" "$out" "$root/src/hot_text.txt" <<'EOF'
import sys, glob, collections
work, out, header_from = sys.argv[1], sys.argv[2], sys.argv[3]
syms = {}
for line in open(work + "/inst-syms.txt"):
    addr, name = line.split()
    syms[int(addr, 16)] = name.split(".")[0]
runs = collections.Counter()
entered = {}
for path in glob.glob(work + "/entered-*.txt"):
    k = int(path.rsplit("-", 1)[1].split(".")[0])
    entered[k] = {syms[int(l, 16)] for l in open(path) if int(l, 16) in syms}
    runs.update(entered[k])
runs.pop("__cyg_profile_func_enter", None)
header = []
try:
    header = [l for l in open(header_from) if l.startswith("#")]
except FileNotFoundError:
    pass
# first what the one-malloc program runs (every program runs it), then
# what the C++ and the C model programs run (runs 3 and 2: together about
# 50 KiB, one 64 KiB window), then the rest, those more programs run first
first = [entered.get(1, set()), entered.get(3, set()), entered.get(2, set())]
names = sorted(runs, key=lambda f: ([f not in e for e in first], -runs[f], f))
with open(out, "w") as f:
    f.writelines(header)
    f.write("\n".join(names) + "\n")
print("hot-text.sh: %d functions -> %s" % (len(names), out))
EOF
