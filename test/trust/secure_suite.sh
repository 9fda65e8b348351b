#!/bin/sh
# secure_suite.sh — run an existing test program with secure mode switched on
# at run time (MMALLOC_SECURE=1).
#
# usage: secure_suite.sh PROGRAM [ARGS...]
#
# Passes when PROGRAM exits 0.  One check of the API suites is exempt, because
# secure mode breaks what it asserts on purpose: "no header: successive
# malloc(n) are n bytes apart" (blocks are handed out in a random order).
# When that is PROGRAM's only failure (its FAIL lines all name it, and the
# program exited 1 rather than dying of a signal), it passes too, and the
# exempt failures are listed.  Anything else fails: another check, a
# crash, a hang (ctest's timeout).
set -u
out=$(MMALLOC_SECURE=1 "$@" 2>&1)
rc=$?
printf '%s\n' "$out" | grep -v '^ok ' | tail -n 40
[ $rc -eq 0 ] && exit 0
exempt='no header: successive malloc(n) are n bytes apart'
other=$(printf '%s\n' "$out" | grep '^FAIL ' | grep -v -F "$exempt")
if [ $rc -eq 1 ] && [ -z "$other" ] && printf '%s\n' "$out" | grep -q '^FAIL '; then
  echo "secure_suite.sh: only the exempt check failed ($exempt): secure mode randomises the order"
  exit 0
fi
echo "secure_suite.sh: FAIL: $1 under MMALLOC_SECURE=1 exited $rc"
exit 1
