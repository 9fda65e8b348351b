#!/bin/sh
# run.sh — installation and linking as a user sees them (label install).
#
#   run.sh CASE BUILD_DIR WORK_DIR
#
#   cmake-package     cmake --install into a temporary prefix; a tiny C project
#                     finds it with find_package(mmalloc) and links
#                     mmalloc::mmalloc (and mmalloc::mmalloc_static); the
#                     programs run, call mm_malloc and malloc, and check that
#                     malloc's blocks are mmalloc's
#   pkg-config        the same project built with
#                     `pkg-config --cflags --libs mmalloc` (PKG_CONFIG_PATH)
#   files             the installed files, and the installed bin/mmrun runs a
#                     program on the installed library
#   symbols           libmmalloc.so exports only mm_* and the names in the
#                     allow-list below (only the lead widens it), and every
#                     entry point of the malloc family and C++ operators
#   static-namespace  libmmalloc.a defines no global name outside that list
#                     either: a program with a global of its own called
#                     `options` or `stats_print` must link statically
#   stream            the installed tree has libmmstream.a, mmalloc/stream.h and
#                     the CMake target mmalloc::mmstream: a tiny project finds
#                     it with find_package(mmalloc COMPONENTS mmstream), builds
#                     a program that passes items through an mm_queue_t, runs it
#   embed-subdir      a consumer project builds mmalloc inside its own build
#   embed-fetch       with add_subdirectory / FetchContent (from this tree),
#                     links mmalloc::mmalloc and mmalloc::mmalloc_static, runs
#                     both; mmalloc builds no tests, benchmarks or streaming
#                     module, installs nothing with the consumer, and leaves
#                     the consumer's build type alone (kept, incremental:
#                     WORK_DIR/CASE-build)
#   override-off      configures and builds the libraries alone with
#                     -DMM_OVERRIDE=OFF in WORK_DIR/override-off-build (kept, so
#                     that a second run is incremental): libmmalloc.so exports
#                     exactly the mm_ API of the default build (no malloc family,
#                     no C++ operators), libmmalloc.a defines no other global
#                     name, and override_off.c, linked with each, uses glibc's
#                     malloc and mmalloc's mm_malloc side by side.  Environment
#                     (set by CMakeLists.txt): MM_TEST_CC, MM_TEST_CXX (the
#                     compilers), MM_TEST_WERROR, MM_TEST_JOBS (default 2)
set -u   # no -e: every check reports, then the script exits with the verdict

case=$1 build=$2 work=$3

# The shared library's exports besides mm_*: the malloc family, malloc_trim,
# cfree, glibc's introspection and tuning (mallinfo2, mallinfo,
# malloc_stats, malloc_info, mallopt), glibc's own names of the family
# (__libc_malloc ...), and the C++ operators new/delete (Itanium ABI names).
ALLOWED='
malloc free calloc realloc reallocarray posix_memalign aligned_alloc memalign
valloc pvalloc malloc_usable_size malloc_trim cfree free_sized free_aligned_sized
mallinfo2 mallinfo malloc_stats malloc_info mallopt
__libc_malloc __libc_free __libc_calloc __libc_realloc __libc_memalign
__libc_valloc __libc_pvalloc
_Znwm _Znam _ZnwmRKSt9nothrow_t _ZnamRKSt9nothrow_t
_ZnwmSt11align_val_t _ZnamSt11align_val_t
_ZnwmSt11align_val_tRKSt9nothrow_t _ZnamSt11align_val_tRKSt9nothrow_t
_ZdlPv _ZdaPv _ZdlPvm _ZdaPvm _ZdlPvRKSt9nothrow_t _ZdaPvRKSt9nothrow_t
_ZdlPvSt11align_val_t _ZdaPvSt11align_val_t _ZdlPvmSt11align_val_t _ZdaPvmSt11align_val_t
_ZdlPvSt11align_val_tRKSt9nothrow_t _ZdaPvSt11align_val_tRKSt9nothrow_t
'
# Must be there: every entry point the issue lists, and the mm_ API of the header.
REQUIRED="$ALLOWED
mm_malloc mm_calloc mm_realloc mm_reallocarray mm_free mm_posix_memalign
mm_aligned_alloc mm_memalign mm_valloc mm_pvalloc mm_malloc_usable_size
mm_collect mm_stats_print mm_stats_json mm_memory mm_option_set mm_option_get mm_version
"

fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
check() { if [ "$2" -eq 0 ]; then ok "$1"; else bad "$1"; fi; }

dir=$work/$case
rm -rf "$dir"
mkdir -p "$dir"
prefix=$dir/prefix

install_prefix() {
  if cmake --install "$build" --prefix "$prefix" > "$dir/install.log" 2>&1; then
    ok "cmake --install into $prefix"
  else
    cat "$dir/install.log"
    bad "cmake --install"
    exit 1
  fi
  libdir=$(cd "$prefix" && ls -d lib lib64 lib/*-linux-gnu 2>/dev/null | while read -r d; do
    [ -e "$prefix/$d/libmmalloc.so" ] && echo "$d" && break; done)
  [ -n "$libdir" ] || { bad "libmmalloc.so installed under $prefix/lib*"; exit 1; }
  libdir=$prefix/$libdir
}

# The user's program: both APIs, and proof that malloc is mmalloc's
# (mm_malloc_usable_size aborts on a pointer mmalloc never handed out).
write_app() {
  mkdir -p "$1"
  cat > "$1/main.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mmalloc.h>
int main(void) {
  char *a = mm_malloc(100), *b = malloc(100);
  if (!a || !b) { puts("allocation failed"); return 1; }
  memset(a, 1, 100); memset(b, 2, 100);
  size_t ua = mm_malloc_usable_size(a), ub = mm_malloc_usable_size(b);
  char *c = realloc(a, 5000);              /* an mm_malloc block through realloc */
  if (!c || c[99] != 1) { puts("realloc lost the bytes"); return 1; }
  char json[64];
  size_t n = mm_stats_json(json, sizeof json);
  printf("mm_malloc usable %zu, malloc usable %zu, json %zu bytes starting %.10s\n", ua, ub, n, json);
  free(c);
  mm_free(b);
  return ua >= 100 && ub >= 100 && n > sizeof json && json[0] == '{' ? 0 : 1;
}
EOF
}

# build_user DIR WHAT: configure and build the user project in DIR against
# the installed prefix; stop the test if it does not build.
build_user() {
  if cmake -S "$1" -B "$1/build" -DCMAKE_PREFIX_PATH="$prefix" > "$dir/configure.log" 2>&1 &&
     cmake --build "$1/build" > "$dir/build.log" 2>&1; then
    ok "$2"
  else
    cat "$dir/configure.log" "$dir/build.log" 2>/dev/null | tail -30
    bad "$2"
    exit 1
  fi
}

run_app() { # run_app NAME PROGRAM [env...]
  name=$1 prog=$2
  shift 2
  if out=$(env "$@" "$prog" 2>&1); then
    ok "$name runs: $out"
  else
    echo "$out"
    bad "$name runs"
  fi
}

case $case in
cmake-package)
  install_prefix
  write_app "$dir/app"
  cat > "$dir/app/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(mmalloc_user C)
find_package(mmalloc 0.1 REQUIRED)
add_executable(app main.c)
target_link_libraries(app PRIVATE mmalloc::mmalloc)
add_executable(app_static main.c)
target_link_libraries(app_static PRIVATE mmalloc::mmalloc_static)
EOF
  build_user "$dir/app" "find_package(mmalloc) project configures and builds"
  run_app "app (mmalloc::mmalloc)" "$dir/app/build/app"
  if ldd "$dir/app/build/app" | grep -q "$libdir/libmmalloc.so"; then
    ok "app uses the installed libmmalloc.so"
  else
    ldd "$dir/app/build/app"
    bad "app uses the installed libmmalloc.so"
  fi
  run_app "app_static (mmalloc::mmalloc_static)" "$dir/app/build/app_static"
  if ldd "$dir/app/build/app_static" | grep -q libmmalloc; then
    bad "app_static does not need libmmalloc.so"
  else
    ok "app_static does not need libmmalloc.so"
  fi
  ;;
pkg-config)
  install_prefix
  write_app "$dir/app"
  export PKG_CONFIG_PATH="$libdir/pkgconfig"
  v=$(pkg-config --modversion mmalloc 2>&1) || true
  [ "$v" = "0.1.0" ]; check "pkg-config --modversion mmalloc = 0.1.0 (got '$v')" $?
  flags=$(pkg-config --cflags --libs mmalloc 2>&1) || { echo "$flags"; bad "pkg-config --cflags --libs mmalloc"; exit 1; }
  ok "pkg-config --cflags --libs mmalloc: $flags"
  # the .pc file is relocatable (prefix=${pcfiledir}/../..): compare the
  # directory -I names, resolved, with the installed include directory
  incdir=$(echo "$flags" | tr ' ' '\n' | sed -n 's/^-I//p' | head -n 1)
  [ -n "$incdir" ] && [ "$(cd "$incdir" 2>/dev/null && pwd -P)" = "$(cd "$prefix/include" && pwd -P)" ]
  check "cflags name the installed include directory ($incdir)" $?
  # shellcheck disable=SC2086
  if cc -o "$dir/app/app" "$dir/app/main.c" $flags 2> "$dir/build.log"; then
    ok "cc main.c \$(pkg-config --cflags --libs mmalloc)"
  else
    cat "$dir/build.log"
    bad "cc main.c \$(pkg-config --cflags --libs mmalloc)"
    exit 1
  fi
  run_app "app (pkg-config)" "$dir/app/app" LD_LIBRARY_PATH="$libdir"
  if LD_LIBRARY_PATH="$libdir" ldd "$dir/app/app" | grep -q "$libdir/libmmalloc.so"; then
    ok "app uses the installed libmmalloc.so"
  else
    bad "app uses the installed libmmalloc.so"
  fi
  ;;
files)
  install_prefix
  for f in include/mmalloc.h bin/mmrun; do
    [ -e "$prefix/$f" ]; check "installed $f" $?
  done
  for f in libmmalloc.so libmmalloc.so.0 libmmalloc.a pkgconfig/mmalloc.pc \
           cmake/mmalloc/mmallocConfig.cmake cmake/mmalloc/mmallocConfigVersion.cmake \
           cmake/mmalloc/mmallocTargets.cmake; do
    [ -e "$libdir/$f" ]; check "installed ${libdir#"$prefix"/}/$f" $?
  done
  [ -x "$prefix/bin/mmrun" ]; check "bin/mmrun is executable" $?
  # The installed launcher finds the installed library by itself.
  err=$(env -u MMALLOC_LIB MMALLOC_VERBOSE=1 "$prefix/bin/mmrun" /bin/true 2>&1 >/dev/null) || true
  echo "$err" | grep -q '^mmalloc [0-9.]*: heaps='
  check "installed mmrun runs a program on mmalloc (verbose line: '$err')" $?
  # The installed tracer finds its recorder by itself and writes a readable trace.
  if [ -x "$prefix/bin/mmtrace" ]; then
    env -u MMTRACE_LIB "$prefix/bin/mmtrace" record -o "$dir/ls.mmtrace" -- ls "$prefix" >/dev/null 2>&1 &&
      "$prefix/bin/mmtrace" info "$dir/ls.mmtrace" | grep -q '^ending    exit$'
    check "installed mmtrace records ls and reads the trace back" $?
  else
    bad "installed bin/mmtrace"
  fi
  # The header alone compiles as C and C++.
  printf '#include <mmalloc.h>\nint main(void) { return mm_malloc_usable_size(0) == 0 ? 0 : 1; }\n' > "$dir/h.c"
  cc -Wall -Wextra -Werror -std=c11 -I"$prefix/include" -c "$dir/h.c" -o "$dir/h.o"
  check "mmalloc.h compiles as C11 with -Wall -Wextra -Werror" $?
  c++ -Wall -Wextra -Werror -std=c++17 -x c++ -I"$prefix/include" -c "$dir/h.c" -o "$dir/hpp.o"
  check "mmalloc.h compiles as C++17" $?
  ;;
symbols)
  lib=$build/libmmalloc.so
  nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u > "$dir/exported"
  echo "$ALLOWED" | tr ' ' '\n' | sed '/^$/d' | sort -u > "$dir/allowed"
  grep -v '^mm_' "$dir/exported" | comm -23 - "$dir/allowed" > "$dir/unexpected" || true
  if [ -s "$dir/unexpected" ]; then
    echo "libmmalloc.so exports symbols outside mm_* and the allow-list:"
    sed 's/^/    /' "$dir/unexpected"
    bad "exports: only mm_* and the allow-list"
  else
    ok "exports: only mm_* and the allow-list ($(wc -l < "$dir/exported") symbols)"
  fi
  echo "$REQUIRED" | tr ' ' '\n' | sed '/^$/d' | sort -u | comm -23 - "$dir/exported" > "$dir/missing" || true
  if [ -s "$dir/missing" ]; then
    echo "libmmalloc.so does not export:"
    sed 's/^/    /' "$dir/missing"
    bad "every entry point exported"
  else
    ok "every entry point exported"
  fi
  # and they are functions (T), not data or weak aliases that lose to the C library
  nm -D --defined-only "$lib" | awk 'NF >= 3 && $2 != "T" && $3 !~ /^mm_/ { print }' > "$dir/nonfunc"
  if [ -s "$dir/nonfunc" ]; then
    sed 's/^/    /' "$dir/nonfunc"
    bad "every allow-listed export is a strong function (T)"
  else
    ok "every allow-listed export is a strong function (T)"
  fi
  ;;
static-namespace)
  lib=$build/libmmalloc.a
  nm -g --defined-only "$lib" | awk 'NF == 3 { print $3 }' | sort -u > "$dir/defined"
  echo "$ALLOWED" | tr ' ' '\n' | sed '/^$/d' | sort -u > "$dir/allowed"
  grep -v '^mm_' "$dir/defined" | comm -23 - "$dir/allowed" > "$dir/unexpected" || true
  if [ -s "$dir/unexpected" ]; then
    echo "libmmalloc.a defines $(wc -l < "$dir/unexpected") global names outside mm_* and the allow-list;"
    echo "a statically linked program that defines any of them fails to link:"
    sed 's/^/    /' "$dir/unexpected" | head -40
    bad "libmmalloc.a: no global names outside mm_* and the allow-list"
  else
    ok "libmmalloc.a: no global names outside mm_* and the allow-list"
  fi
  # The concrete failure: a program with globals of its own called `options`
  # and `stats_print`, linked with libmmalloc.a.
  cat > "$dir/user.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
int options = 42;                        /* the program's own */
void stats_print(void) { puts("the program's own stats_print"); }
int main(void) {
  char *p = malloc(10);
  free(p);
  stats_print();
  return options == 42 ? 0 : 1;
}
EOF
  if cc -o "$dir/user" "$dir/user.c" "$lib" -lpthread > "$dir/link.log" 2>&1 && "$dir/user" > /dev/null; then
    ok "a program defining its own 'options' and 'stats_print' links with libmmalloc.a and runs"
  else
    sed 's/^/    /' "$dir/link.log" | head -10
    bad "a program defining its own 'options' and 'stats_print' links with libmmalloc.a and runs"
  fi
  ;;
stream)
  install_prefix
  for f in "$libdir/libmmstream.a" "$prefix/include/mmalloc/stream.h" \
           "$libdir/cmake/mmalloc/mmstreamTargets.cmake"; do
    [ -e "$f" ]; check "installed ${f#"$prefix"/}" $?
  done
  mkdir -p "$dir/sapp"
  cat > "$dir/sapp/main.c" <<'EOF'
#include <stdint.h>
#include <stdio.h>
#include <mmalloc/stream.h>
int main(void) {
  mm_queue_t *q = mm_queue_create(MM_QUEUE_LOCKFREE, 8);
  if (!q) { puts("mm_queue_create failed"); return 1; }
  uintptr_t sum = 0;
  for (uintptr_t i = 1; i <= 5; i++)
    if (!mm_queue_try_push(q, (void *)i)) { puts("push failed"); return 1; }
  void *item;
  while (mm_queue_try_pop(q, &item)) sum += (uintptr_t)item;
  printf("%s queue passed items summing to %lu\n", mm_queue_kind_name(mm_queue_kind(q)),
         (unsigned long)sum);
  mm_queue_destroy(q);
  return sum == 15 ? 0 : 1;
}
EOF
  cat > "$dir/sapp/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(mmstream_user C)
find_package(mmalloc 0.1 REQUIRED COMPONENTS mmstream)
add_executable(sapp main.c)
target_link_libraries(sapp PRIVATE mmalloc::mmstream)
EOF
  build_user "$dir/sapp" "find_package(mmalloc COMPONENTS mmstream) project links mmalloc::mmstream and builds"
  run_app "sapp (mmalloc::mmstream)" "$dir/sapp/build/sapp"
  ;;
embed-subdir|embed-fetch)
  # A consumer project that builds mmalloc inside its own build, with
  # add_subdirectory or FetchContent (its declared repository is never
  # fetched: FETCHCONTENT_SOURCE_DIR_MMALLOC points at this tree, as a user
  # does to try a local checkout).  It links both targets, and mmalloc
  # builds only its libraries: no tests, benchmarks or streaming module,
  # nothing installed with the consumer, the consumer's build type left
  # alone.  Build tree kept (incremental): WORK_DIR/CASE-build.
  src=$(cd "$(dirname "$0")/../.." && pwd)
  ebuild=$work/$case-build
  write_app "$dir/app"
  if [ "$case" = embed-subdir ]; then
    include='add_subdirectory(${MMALLOC_DIR} mmalloc)'
    extra="-DMMALLOC_DIR=$src"
  else
    include='include(FetchContent)
FetchContent_Declare(mmalloc GIT_REPOSITORY https://example.invalid/mmalloc.git GIT_TAG main)
FetchContent_MakeAvailable(mmalloc)'
    extra="-DFETCHCONTENT_SOURCE_DIR_MMALLOC=$src -DFETCHCONTENT_FULLY_DISCONNECTED=ON"
  fi
  cat > "$dir/app/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(mmalloc_consumer C)
$include
add_executable(app main.c)
target_link_libraries(app PRIVATE mmalloc::mmalloc)
add_executable(app_static main.c)
target_link_libraries(app_static PRIVATE mmalloc::mmalloc_static)
install(TARGETS app app_static DESTINATION bin)
EOF
  if cmake -S "$dir/app" -B "$ebuild" $extra \
       ${MM_TEST_CC:+-DCMAKE_C_COMPILER="$MM_TEST_CC"} \
       ${MM_TEST_CXX:+-DCMAKE_CXX_COMPILER="$MM_TEST_CXX"} > "$dir/configure.log" 2>&1 &&
     cmake --build "$ebuild" -j "${MM_TEST_JOBS:-2}" > "$dir/build.log" 2>&1; then
    ok "$case: the consumer configures and builds mmalloc::mmalloc and mmalloc::mmalloc_static"
  else
    cat "$dir/configure.log" "$dir/build.log" 2>/dev/null | tail -40
    bad "$case: the consumer builds"
    exit 1
  fi
  run_app "$case app (mmalloc::mmalloc)" "$ebuild/app"
  run_app "$case app_static (mmalloc::mmalloc_static)" "$ebuild/app_static"
  built=$(find "$ebuild" -type f \( -name 'stress_*' -o -name 'unit_*' -o -name larson \
            -o -name 'realloc-grow' -o -name 'libmmstream*' -o -name mmsw \) | head -5)
  check "$case: no tests, benchmarks or streaming module built${built:+ (found: $built)}" \
    "$([ -z "$built" ]; echo $?)"
  grep -q '^CMAKE_BUILD_TYPE:STRING=$' "$ebuild/CMakeCache.txt"
  check "$case: the consumer's empty build type is left alone" $?
  flags=$(find "$ebuild" -path '*mmalloc_objects.dir/flags.make' | head -1)
  grep -q -- '-O3' "${flags:-/nonexistent}"
  check "$case: mmalloc itself is still compiled with -O3" $?
  cmake --install "$ebuild" --prefix "$prefix" > "$dir/install.log" 2>&1
  check "$case: the consumer installs" $?
  theirs=$(cd "$prefix" && find . -type f ! -name app ! -name app_static | head -5)
  check "$case: installing the consumer installs nothing of mmalloc${theirs:+ (found: $theirs)}" \
    "$([ -z "$theirs" ]; echo $?)"
  ;;
override-off)
  src=$(cd "$(dirname "$0")/../.." && pwd)
  obuild=$work/override-off-build
  cc=${MM_TEST_CC:-cc}
  if cmake -S "$src" -B "$obuild" -DCMAKE_BUILD_TYPE=Release -DMM_OVERRIDE=OFF \
       -DMM_BUILD_TESTS=OFF -DMM_BUILD_STREAM=OFF -DMM_BUILD_BENCH=OFF \
       -DMM_WERROR="${MM_TEST_WERROR:-OFF}" \
       ${MM_TEST_CC:+-DCMAKE_C_COMPILER="$MM_TEST_CC"} \
       ${MM_TEST_CXX:+-DCMAKE_CXX_COMPILER="$MM_TEST_CXX"} > "$dir/configure.log" 2>&1 &&
     cmake --build "$obuild" -j "${MM_TEST_JOBS:-2}" --target mmalloc mmalloc_static \
       > "$dir/build.log" 2>&1; then
    ok "libraries configured and built with -DMM_OVERRIDE=OFF in $obuild"
  else
    cat "$dir/configure.log" "$dir/build.log" 2>/dev/null | tail -40
    bad "libraries configured and built with -DMM_OVERRIDE=OFF"
    echo "(files kept in $dir)"
    exit 1
  fi
  echo "$ALLOWED" | tr ' ' '\n' | sed '/^$/d' | sort -u > "$dir/override_names"
  # The shared library: only mm_ names, and the same ones as the default build.
  nm -D --defined-only "$obuild/libmmalloc.so" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' |
    sort -u > "$dir/exported"
  grep -v '^mm_' "$dir/exported" > "$dir/unexpected" || true
  if [ -s "$dir/unexpected" ]; then
    echo "the MM_OVERRIDE=OFF libmmalloc.so exports names outside mm_*:"
    sed 's/^/    /' "$dir/unexpected"
    bad "MM_OVERRIDE=OFF libmmalloc.so: only mm_* exported"
  else
    ok "MM_OVERRIDE=OFF libmmalloc.so: only mm_* exported ($(wc -l < "$dir/exported") symbols)"
  fi
  comm -12 "$dir/exported" "$dir/override_names" > "$dir/overrides"
  [ ! -s "$dir/overrides" ]
  check "MM_OVERRIDE=OFF libmmalloc.so: no malloc family, no C++ operators ($(tr '\n' ' ' < "$dir/overrides"))" $?
  nm -D --defined-only "$build/libmmalloc.so" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' |
    grep '^mm_' | sort -u > "$dir/default_mm"
  if [ -s "$dir/default_mm" ] && cmp -s "$dir/exported" "$dir/default_mm"; then
    ok "MM_OVERRIDE=OFF libmmalloc.so exports exactly the default build's mm_ API"
  else
    diff "$dir/default_mm" "$dir/exported" | sed 's/^/    /'
    bad "MM_OVERRIDE=OFF libmmalloc.so exports exactly the default build's mm_ API (< default, > OFF)"
  fi
  # Every function mmalloc.h declares (a declaration starts its line), but
  # the static inline ones (the pool fast paths), which are not exported.
  grep -v '^static ' "$src/include/mmalloc.h" |
    sed -n 's/^[a-z][a-z_ ]*[ *]\(mm_[a-z0-9_]*\)(.*/\1/p' | sort -u > "$dir/declared"
  comm -23 "$dir/declared" "$dir/exported" > "$dir/missing"
  [ -s "$dir/declared" ] && [ ! -s "$dir/missing" ]
  check "every mm_ function of mmalloc.h exported ($(wc -l < "$dir/declared") declared; missing: $(tr '\n' ' ' < "$dir/missing"))" $?
  # The static library, after src/CMakeLists.txt's ld -r + objcopy --localize-hidden.
  nm -g --defined-only "$obuild/libmmalloc.a" | awk 'NF == 3 { print $3 }' | sort -u > "$dir/defined"
  grep -v '^mm_' "$dir/defined" > "$dir/unexpected_a" || true
  if [ -s "$dir/unexpected_a" ]; then
    echo "the MM_OVERRIDE=OFF libmmalloc.a defines global names outside mm_*:"
    sed 's/^/    /' "$dir/unexpected_a" | head -40
    bad "MM_OVERRIDE=OFF libmmalloc.a: no global names outside mm_*"
  else
    ok "MM_OVERRIDE=OFF libmmalloc.a: no global names outside mm_* ($(wc -l < "$dir/defined") names)"
  fi
  # A program using glibc's malloc and mm_malloc side by side, linked with each.
  app_src=$src/test/install/override_off.c
  if $cc -Wall -Wextra -O1 -I"$src/include" -o "$dir/app_shared" "$app_src" -L"$obuild" -lmmalloc \
       -Wl,-rpath,"$obuild" > "$dir/link.log" 2>&1; then
    ok "override_off.c links with the MM_OVERRIDE=OFF libmmalloc.so"
    run_app "override_off (shared)" "$dir/app_shared"
    if ldd "$dir/app_shared" | grep -q "$obuild/libmmalloc.so"; then
      ok "override_off (shared) uses the MM_OVERRIDE=OFF libmmalloc.so"
    else
      ldd "$dir/app_shared"
      bad "override_off (shared) uses the MM_OVERRIDE=OFF libmmalloc.so"
    fi
  else
    cat "$dir/link.log"
    bad "override_off.c links with the MM_OVERRIDE=OFF libmmalloc.so"
  fi
  if $cc -Wall -Wextra -O1 -I"$src/include" -o "$dir/app_static" "$app_src" "$obuild/libmmalloc.a" \
       -lpthread > "$dir/link_static.log" 2>&1; then
    ok "override_off.c links with the MM_OVERRIDE=OFF libmmalloc.a"
    run_app "override_off (static)" "$dir/app_static"
  else
    cat "$dir/link_static.log"
    bad "override_off.c links with the MM_OVERRIDE=OFF libmmalloc.a"
  fi
  ;;
*)
  echo "run.sh: unknown case $case" >&2
  exit 2
  ;;
esac

if [ $fail -eq 0 ]; then rm -rf "$dir"; else echo "(files kept in $dir)"; fi
exit $fail
