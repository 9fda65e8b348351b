#!/bin/sh
# valgrind.sh — memcheck reports the same errors on mmalloc as on glibc.
#
# usage: valgrind.sh MODE LIBMMALLOC PROG WORKDIR
#   MODE        uaf | uaf_reuse | leak | overread | clean | clean_aligned |
#               aligned_huge (see vgprog.c)
#   LIBMMALLOC  a libmmalloc.so built with -DMM_VALGRIND=ON
#   PROG        trust_vgprog (linked to neither allocator)
#
# Runs PROG MODE under `valgrind --tool=memcheck --leak-check=full` twice:
# on glibc's malloc (which memcheck replaces with its own), and with
# LIBMMALLOC preloaded.  For the second run memcheck is told not to replace
# the malloc of any library but libc (--soname-synonyms=
# somalloc=nouserintercepts): by default it replaces every exported malloc,
# mmalloc's too, and the MM_VALGRIND client requests would never run.
# PROG's "allocator:" line proves which allocator served it.
#
# aligned_huge runs on mmalloc only: valgrind's own malloc (the glibc run)
# aborts on alignments above 16 MiB, so there is nothing to compare with.
#
# Checked:
#   - each report is what MODE promises (error kinds, sizes, counts, leak
#     summary; see expect below), on glibc and on mmalloc alike;
#   - the two reports are the same once stack frames, addresses, PIDs and
#     the total-bytes-allocated line are taken out;
#   - valgrind's exit code (--error-exitcode=99) is the same, 99 exactly
#     when errors are expected;
#   - warnings memcheck prints for the mmalloc run only are shown (NOTE),
#     not counted: they are not errors.
# Exit 77 (ctest: skipped) only when valgrind is not installed and this is
# not CI; in CI (CI set, as .ci/run runs after installing valgrind) a
# missing valgrind is a failure.
set -u
mode=$1 lib=$2 prog=$3 work=$4

if ! command -v valgrind >/dev/null 2>&1; then
  if [ -n "${CI:-}" ]; then
    echo "valgrind.sh: FAIL: valgrind is not installed (CI must run this test)"
    exit 1
  fi
  echo "valgrind.sh: SKIPPED: valgrind is not installed (tools/install-deps.sh installs it)"
  exit 77
fi
[ -f "$lib" ] || { echo "valgrind.sh: FAIL: no library $lib"; exit 1; }
mkdir -p "$work" || exit 1
fail=0
say_fail() { echo "valgrind.sh: FAIL ($mode): $*"; fail=1; }

# run NAME [ENV...]: valgrind on PROG MODE; report in $work/NAME.log,
# stdout in $work/NAME.out, exit code in $work/NAME.rc.
run() {
  name=$1
  shift
  env "$@" valgrind --tool=memcheck --leak-check=full --error-exitcode=99 \
    --soname-synonyms=somalloc=nouserintercepts --log-file="$work/$mode-$name.log" \
    "$prog" "$mode" >"$work/$mode-$name.out" 2>"$work/$mode-$name.err"
  echo $? >"$work/$mode-$name.rc"
}

# The report without what may legitimately differ: PIDs, stack frames
# (at/by lines), addresses, the banner, and the bytes-allocated total.
# Warnings go to a file of their own.
normalise() {
  sed -n 's/^==[0-9]*== //p' "$1" |
    grep -v -e '^   *at ' -e '^   *by ' -e '^Memcheck, a memory error detector' \
      -e '^Copyright' -e '^Using Valgrind' -e '^Command:' -e '^Parent PID' \
      -e '^For lists of detected' -e '^For counts of detected' -e 'total heap usage:' \
      -e '^WARNING' -e '^   \[[0-9]*\] ' -e '^$' |
    sed -e 's/0x[0-9A-Fa-f]*/ADDR/g'
}

# On glibc the program runs as it is (memcheck's malloc replaces glibc's).
sides="glibc mmalloc"
[ "$mode" = aligned_huge ] && sides=mmalloc
case " $sides " in *" glibc "*) run glibc ;; esac
run mmalloc LD_PRELOAD="$lib" MMALLOC_VERBOSE=1

for side in $sides; do
  normalise "$work/$mode-$side.log" >"$work/$mode-$side.norm"
done

case " $sides " in
*" glibc "*)
  grep -q '^allocator: other$' "$work/$mode-glibc.out" ||
    say_fail "the glibc run did not report 'allocator: other'" ;;
esac
grep -q '^allocator: mmalloc$' "$work/$mode-mmalloc.out" ||
  say_fail "the mmalloc run was not served by mmalloc (is malloc intercepted by valgrind?)"
grep -q 'fast paths off' "$work/$mode-mmalloc.err" ||
  say_fail "mmalloc did not see valgrind (no 'fast paths off' in MMALLOC_VERBOSE output:" \
    "not an MM_VALGRIND build?)"

# What MODE promises, as memcheck words it on glibc (valgrind 3.19).
case $mode in
uaf)
  expect_rc=99
  expect="Invalid read of size 8
 Address ADDR is 8 bytes inside a block of size 24 free'd
Invalid read of size 8
 Address ADDR is 4,096 bytes inside a block of size 100,000 free'd
All heap blocks were freed -- no leaks are possible
ERROR SUMMARY: 2 errors from 2 contexts (suppressed: 0 from 0)" ;;
uaf_reuse)
  expect_rc=99
  expect="Invalid read of size 8
 Address ADDR is 8 bytes inside a block of size 24 free'd
All heap blocks were freed -- no leaks are possible
ERROR SUMMARY: 1 errors from 1 contexts (suppressed: 0 from 0)" ;;
leak)
  expect_rc=99
  expect="40 bytes in 1 blocks are definitely lost in loss record 1 of 2
70,000 bytes in 1 blocks are definitely lost in loss record 2 of 2
   definitely lost: 70,040 bytes in 2 blocks
   indirectly lost: 0 bytes in 0 blocks
     possibly lost: 0 bytes in 0 blocks
   still reachable: 0 bytes in 0 blocks
ERROR SUMMARY: 2 errors from 2 contexts (suppressed: 0 from 0)" ;;
overread)
  expect_rc=99
  expect="Invalid read of size 1
 Address ADDR is 0 bytes after a block of size 13 alloc'd
Invalid read of size 1
 Address ADDR is 0 bytes after a block of size 100,000 alloc'd
All heap blocks were freed -- no leaks are possible
ERROR SUMMARY: 2 errors from 2 contexts (suppressed: 0 from 0)" ;;
clean | clean_aligned | aligned_huge)
  expect_rc=0
  expect="    in use at exit: 0 bytes in 0 blocks
All heap blocks were freed -- no leaks are possible
ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 0 from 0)" ;;
*)
  echo "valgrind.sh: unknown mode $mode"
  exit 2 ;;
esac

# Every expected line is in the report, in order (other lines may sit in
# between: "Block was alloc'd at", the summaries' headers).
printf '%s\n' "$expect" >"$work/$mode.expect"
for side in $sides; do
  rc=$(cat "$work/$mode-$side.rc")
  [ "$rc" = "$expect_rc" ] || say_fail "$side: valgrind exit $rc, expected $expect_rc"
  if ! awk 'NR == FNR { want[++n] = $0; next }
            i < n && $0 == want[i + 1] { i++ }
            END { if (i < n) { print "  missing from here on: " want[i + 1]; exit 1 } }' \
       "$work/$mode.expect" "$work/$mode-$side.norm"; then
    say_fail "$side: the report is not what '$mode' promises (see $work/$mode-$side.log)"
  fi
  n_err=$(grep -c -e '^Invalid ' -e '^Conditional jump' -e '^Use of uninitialised' \
    -e '^Mismatched' -e '^Syscall param' -e '^Source and destination overlap' \
    "$work/$mode-$side.norm")
  want_err=$(grep -c -e '^Invalid ' "$work/$mode.expect")
  [ "$n_err" = "$want_err" ] || say_fail "$side: $n_err errors in user code, expected $want_err"
done

if [ "$sides" = "glibc mmalloc" ]; then
  # The two reports agree line for line.
  if ! diff -u "$work/$mode-glibc.norm" "$work/$mode-mmalloc.norm" >"$work/$mode.diff"; then
    say_fail "memcheck reports differ between glibc and mmalloc:"
    cat "$work/$mode.diff"
  fi
  # Warnings only the mmalloc run has: shown, not counted.
  for side in glibc mmalloc; do
    grep '^==[0-9]*== WARNING' "$work/$mode-$side.log" | sed 's/^==[0-9]*== //' |
      sort -u >"$work/$mode-$side.warn"
  done
  if ! cmp -s "$work/$mode-glibc.warn" "$work/$mode-mmalloc.warn"; then
    echo "valgrind.sh: NOTE ($mode): memcheck warnings on mmalloc only (not errors):"
    grep -A4 '^==[0-9]*== WARNING: exiting program' "$work/$mode-mmalloc.log" |
      sed 's/^==[0-9]*== /  /'
  fi
fi

if [ $fail -ne 0 ]; then
  echo "valgrind.sh: reports in $work/$mode-*.log"
  exit 1
fi
echo "valgrind.sh: $mode: memcheck reports what it should ($sides)"
exit 0
