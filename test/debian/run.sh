#!/bin/sh
# run.sh — the Debian packages, end to end, as a user of them meets them
# (make test-debian; part of make test).
#
#   test/debian/run.sh [WORK_DIR]          (default: build-debian)
#
# 1. copies the source tree (the files git knows) to WORK_DIR/src and builds
#    the binary packages there: dpkg-buildpackage -us -uc -b;
# 2. lintian on them: no error and no warning that debian/*.lintian-overrides
#    does not explain;
# 3. installs them (dpkg -i), then, as a user would: compiles a C and a C++
#    program with `pkg-config --cflags --libs mmalloc` and with
#    find_package(mmalloc) in CMake (the shared and the static target), runs
#    all four, and runs
#    `mmrun python3 -c ...`, which must have mmalloc loaded, and mmtrace
#    (record, info and report of `ls /`, and its man page); removes and
#    purges them and checks that nothing of them is left; all of step 3
#    twice in a row.
#
# It installs packages on the machine, so it runs only as root and only when
# no mmalloc package is installed already; without root, dpkg-buildpackage,
# debhelper or lintian it says what it skipped and passes (exit 0).
# tools/install-deps.sh installs the tools.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${1:-$root/build-debian}
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
skip() { echo "test-debian: SKIPPED: $1"; exit 0; }

[ "$(id -u)" -eq 0 ] || skip "not root (the test installs the packages with dpkg)"
for t in dpkg-buildpackage dh lintian cmake pkg-config c++ python3 git; do
  command -v $t >/dev/null 2>&1 || skip "no $t (tools/install-deps.sh installs it)"
done
for p in libmmalloc0 libmmalloc-dev mmalloc-tools mmtrace; do
  if dpkg -s $p >/dev/null 2>&1; then skip "$p is installed on this machine already (not touched)"; fi
done

rm -rf "$work"
mkdir -p "$work/src"
# The tree as git knows it (committed or not, ignored files left out); the
# Rust crates' links to src/ and include/ are not needed here.
(cd "$root" && git ls-files -z --cached --others --exclude-standard) |
  (cd "$root" && tar --null -T - -cf -) | tar -xf - -C "$work/src" 2>/dev/null
[ -f "$work/src/debian/control" ] || { echo "FAIL could not copy the tree to $work/src"; exit 1; }

# ---- 1. build ------------------------------------------------------------------
if (cd "$work/src" && dpkg-buildpackage -us -uc -b) > "$work/build.log" 2>&1; then
  ok "dpkg-buildpackage -us -uc -b: $(cd "$work" && ls ./*.deb | tr '\n' ' ')"
else
  tail -40 "$work/build.log"
  echo "FAIL dpkg-buildpackage"
  exit 1
fi
debs=$(ls "$work"/libmmalloc0_*.deb "$work"/libmmalloc-dev_*.deb "$work"/mmalloc-tools_*.deb \
          "$work"/mmtrace_*.deb 2>/dev/null)
[ $(echo "$debs" | wc -w) -eq 4 ] && ok "four packages: libmmalloc0, libmmalloc-dev, mmalloc-tools, mmtrace" ||
  bad "four packages (got: $debs)"

# ---- 2. lintian ----------------------------------------------------------------
lintian --allow-root --show-overrides --fail-on none "$work"/mmalloc_*.changes > "$work/lintian.log" 2>&1
grep -E '^(E|W):' "$work/lintian.log" > "$work/lintian.bad"
if [ -s "$work/lintian.bad" ]; then
  cat "$work/lintian.bad"
  bad "lintian: errors or warnings not explained in debian/*.lintian-overrides"
else
  ok "lintian: no error, no unexplained warning ($(grep -c "^O:" "$work/lintian.log") tags overridden, each explained in debian/*.lintian-overrides)"
fi

# ---- 3. as a user, twice ---------------------------------------------------------
mkdir -p "$work/user"
cat > "$work/user/main.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mmalloc.h>
int main(void) {
  char *a = malloc(1000), *b = mm_malloc(1000);
  if (!a || !b) return 1;
  memset(a, 1, 1000);
  /* mm_malloc_usable_size aborts on a block mmalloc never handed out */
  size_t ua = mm_malloc_usable_size(a);
  printf("C: malloc is mmalloc's (usable %zu), version %d\n", ua, mm_version());
  free(a);
  mm_free(b);
  return ua >= 1000 && mm_version() == MM_VERSION ? 0 : 1;
}
EOF
cat > "$work/user/main.cpp" <<'EOF'
#include <cstdio>
#include <list>
#include <map>
#include <string>
#include <vector>
#include <mmalloc.h>
#include <mmalloc/pool.hpp>
int main() {
  // the packaged C++ header: nodes from a pool, a pmr vector in a heap
  std::list<int, mmalloc::pool_allocator<int>> nodes(1000, 7);
  mmalloc::heap_resource heap("packaged");
  std::pmr::vector<long> pv(&heap);
  for (long i = 0; i < 1000; i++) pv.push_back(i);
  if (nodes.size() != 1000 || pv[999] != 999 || heap.stats().live_objects == 0) return 1;
  std::map<int, std::string> m;
  std::vector<std::string *> keep;
  for (int i = 0; i < 10000; i++) {
    m[i] = std::string(i % 100 + 20, 'x');
    keep.push_back(new std::string("kept"));
  }
  size_t u = mm_malloc_usable_size(keep[0]); // new's block is mmalloc's
  for (auto *s : keep) delete s;
  char json[256];
  size_t n = mm_stats_json(json, sizeof json);
  std::printf("C++: %zu entries, new is mmalloc's (usable %zu), stats %zu bytes, pool.hpp works\n",
              m.size(), u, n);
  return m.size() == 10000 && u >= sizeof(std::string) && n > 100 ? 0 : 1;
}
EOF
cat > "$work/user/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(packaged_user C CXX)
find_package(mmalloc 0.1 REQUIRED)
add_executable(app_cxx main.cpp)
target_link_libraries(app_cxx PRIVATE mmalloc::mmalloc)
add_executable(app_c main.c)
target_link_libraries(app_c PRIVATE mmalloc::mmalloc_static)
EOF

for round in 1 2; do
  if dpkg -i $debs > "$work/install$round.log" 2>&1; then
    ok "round $round: dpkg -i installs the four packages"
  else
    cat "$work/install$round.log"
    bad "round $round: dpkg -i"
    break
  fi
  for lang in c cpp; do
    compiler=cc
    [ $lang = cpp ] && compiler=c++
    if $compiler "$work/user/main.$lang" -o "$work/user/pc_$lang" $(pkg-config --cflags --libs mmalloc) \
         > "$work/cc$round.log" 2>&1; then
      out=$("$work/user/pc_$lang" 2>&1) && ok "round $round: pkg-config, main.$lang: $out" ||
        bad "round $round: pkg-config main.$lang runs ($out)"
    else
      cat "$work/cc$round.log"
      bad "round $round: $compiler main.$lang \$(pkg-config --cflags --libs mmalloc)"
    fi
  done
  rm -rf "$work/user/build"
  if cmake -S "$work/user" -B "$work/user/build" > "$work/cmake$round.log" 2>&1 &&
     cmake --build "$work/user/build" >> "$work/cmake$round.log" 2>&1; then
    out=$("$work/user/build/app_cxx" 2>&1) && ok "round $round: find_package, main.cpp (mmalloc::mmalloc): $out" ||
      bad "round $round: find_package main.cpp runs ($out)"
    out=$("$work/user/build/app_c" 2>&1) && ok "round $round: find_package, main.c (mmalloc::mmalloc_static): $out" ||
      bad "round $round: find_package main.c runs ($out)"
  else
    tail -20 "$work/cmake$round.log"
    bad "round $round: find_package(mmalloc) project builds"
  fi
  out=$(mmrun python3 -c 'import sys; m = open("/proc/self/maps").read(); x = [bytes(1000) for i in range(10000)]; print("mmrun python3: libmmalloc loaded" if "libmmalloc.so" in m else "NOT LOADED"); sys.exit(0 if "libmmalloc.so" in m else 1)' 2>&1)
  [ $? -eq 0 ] && ok "round $round: $out" || bad "round $round: mmrun python3 ($out)"
  man -w mmrun >/dev/null 2>&1 && ok "round $round: man mmrun finds the page" || bad "round $round: man page"
  # mmtrace as installed: the recorder found beside the command, the report script in /usr/share
  rm -rf "$work/user/ls.mmtrace" "$work/user/ls-report"
  if mmtrace record -o "$work/user/ls.mmtrace" -- ls / > /dev/null 2> "$work/mmtrace$round.log" &&
     mmtrace info "$work/user/ls.mmtrace" > "$work/user/ls.info" 2>> "$work/mmtrace$round.log" &&
     grep -Eq '^ +malloc +[1-9]' "$work/user/ls.info" &&
     mmtrace report "$work/user/ls.mmtrace" -o "$work/user/ls-report" >> "$work/mmtrace$round.log" 2>&1 &&
     grep -q '^# Allocation pattern of' "$work/user/ls-report/report.md"; then
    ok "round $round: mmtrace record, info and report on ls ($(grep -E '^ +malloc ' "$work/user/ls.info" | tr -s ' '))"
  else
    cat "$work/mmtrace$round.log"
    bad "round $round: mmtrace record, info and report"
  fi
  man -w mmtrace >/dev/null 2>&1 && ok "round $round: man mmtrace finds the page" || bad "round $round: man mmtrace"
  if dpkg -P mmtrace mmalloc-tools libmmalloc-dev libmmalloc0 > "$work/remove$round.log" 2>&1; then
    ok "round $round: dpkg -P removes and purges them"
  else
    cat "$work/remove$round.log"
    bad "round $round: dpkg -P"
  fi
  left=$(ls /usr/include/mmalloc.h /usr/lib/*/libmmalloc* /usr/lib/*/pkgconfig/mmalloc.pc \
           /usr/lib/*/cmake/mmalloc /usr/bin/mmrun /usr/bin/mmtrace /usr/lib/*/mmtrace \
           /usr/share/mmalloc 2>/dev/null)
  [ -z "$left" ] && ok "round $round: nothing of them is left" || bad "round $round: left behind: $left"
done

[ $fail -eq 0 ] && echo "test-debian: passed" || echo "test-debian: FAILED (files in $work)"
exit $fail
