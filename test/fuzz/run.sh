#!/bin/sh
# run.sh — what `make fuzz` and `make test-fuzz` run (test/fuzz/README.md).
#
#   run.sh fuzz SECONDS [--merge] [--diff]
#       build build-fuzz/fuzz_ops (clang, libFuzzer, ASan+UBSan) and fuzz for
#       SECONDS, starting from test/fuzz/corpus; new inputs go to
#       build-fuzz/corpus-new, crashes to build-fuzz/artifacts/.  --merge then
#       merges the new inputs that add coverage into test/fuzz/corpus;
#       --diff compares every call with glibc (MMFUZZ_DIFFERENTIAL=1).
#   run.sh test
#       make test-fuzz: build fuzz_ops and the gcc driver (build-fuzz-gcc,
#       MM_DEBUG=2), then run libFuzzer for 60 s while ctest runs the fuzz
#       label (corpus, differential, 20 s random, mutants).  Without clang or
#       libFuzzer: the ctests and 60 s of the driver's --random instead.
#
# Environment: JOBS (build parallelism, default 2), FUZZ_FLAGS (more libFuzzer
# flags), and the target's MMFUZZ_* variables.
set -eu
cd "$(dirname "$0")/../.."

JOBS=${JOBS:-2}
CLANG_BUILD=build-fuzz
GCC_BUILD=build-fuzz-gcc
CORPUS=test/fuzz/corpus
NEW=$CLANG_BUILD/corpus-new
ARTIFACTS=$CLANG_BUILD/artifacts
LIBFUZZER_FLAGS="-max_len=2048 -rss_limit_mb=4096 -timeout=60 -print_final_stats=1
  -dict=test/fuzz/mmalloc.dict -artifact_prefix=$ARTIFACTS/"

have_libfuzzer() {
  command -v clang >/dev/null 2>&1 || return 1
  probe=$(mktemp -d)
  echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }' \
    > "$probe/probe.c"
  clang -fsanitize=fuzzer "$probe/probe.c" -o "$probe/probe" >/dev/null 2>&1
  status=$?
  rm -rf "$probe"
  return $status
}

# The two trees are the configure presets fuzz ($CLANG_BUILD: clang,
# RelWithDebInfo, ASan+UBSan) and fuzz-gcc ($GCC_BUILD: the default compiler,
# RelWithDebInfo, MM_DEBUG=2) of CMakePresets.json; their build presets name
# the targets (fuzz_ops; fuzz_driver and fuzz_mutants).
build_libfuzzer() {
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j "$JOBS"
}

build_driver() {
  cmake --preset fuzz-gcc >/dev/null
  cmake --build --preset fuzz-gcc -j "$JOBS"
}

# libfuzz SECONDS: fuzz_ops on the corpus; new inputs kept in $NEW.
libfuzz() {
  mkdir -p $NEW $ARTIFACTS
  # shellcheck disable=SC2086
  $CLANG_BUILD/fuzz_ops -max_total_time="$1" $LIBFUZZER_FLAGS ${FUZZ_FLAGS:-} $NEW $CORPUS
}

merge_new_inputs() {
  echo "run.sh: merging the new inputs that add coverage into $CORPUS"
  # shellcheck disable=SC2086
  $CLANG_BUILD/fuzz_ops -merge=1 $LIBFUZZER_FLAGS $CORPUS $NEW
}

cmd_fuzz() {
  seconds=${1:-60}
  if [ $# -gt 0 ]; then shift; fi
  merge=no
  for arg in "$@"; do
    case $arg in
      --merge) merge=yes ;;
      --diff) export MMFUZZ_DIFFERENTIAL=1 ;;
      *) echo "run.sh: unknown option $arg" >&2; exit 2 ;;
    esac
  done
  if ! have_libfuzzer; then
    echo "run.sh: make fuzz needs clang with libFuzzer (clang, libclang-rt-dev)" >&2
    exit 1
  fi
  build_libfuzzer
  libfuzz "$seconds"
  if [ $merge = yes ]; then merge_new_inputs; fi
}

cmd_test() {
  start=$(date +%s)
  if have_libfuzzer; then
    build_libfuzzer
    build_driver
    log=$CLANG_BUILD/test-fuzz.log
    echo "run.sh: libFuzzer for 60 s (log: $log), the fuzz ctests meanwhile"
    libfuzz 60 >$log 2>&1 &
    fuzzer=$!
    ctest_status=0
    ctest --preset fuzz-gcc || ctest_status=$?
    fuzzer_status=0
    wait $fuzzer || fuzzer_status=$?
    grep -E '^#[0-9]+[[:space:]]+DONE|^stat::|ERROR|SUMMARY|Test unit written' $log || tail -20 $log
    echo "run.sh: libFuzzer exit $fuzzer_status, ctest exit $ctest_status," \
      "$(($(date +%s) - start)) s in all"
    [ $fuzzer_status -eq 0 ] && [ $ctest_status -eq 0 ]
  else
    echo "run.sh: clang with libFuzzer not found: the gcc driver's --random 60 instead"
    build_driver
    ctest --preset fuzz-gcc
    $GCC_BUILD/test/fuzz_driver --random 60 $CORPUS
    echo "run.sh: $(($(date +%s) - start)) s in all"
  fi
}

case ${1:-} in
  fuzz) shift; cmd_fuzz "$@" ;;
  test) cmd_test ;;
  *) echo "usage: $0 fuzz SECONDS [--merge] [--diff] | $0 test" >&2; exit 2 ;;
esac
