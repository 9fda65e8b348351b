#!/bin/bash
# maxrss.sh BEFORE.so AFTER.so [REPS]: peak RSS (KiB, /usr/bin/time %M) of the
# suite's small programs (../2026-11-28-suite-programs-vm/cmds.txt, built in
# $MB, default /tmp/mb) and of Python start-up, under glibc and the two
# libraries, alternating, REPS (default 3) runs each; one line per run:
# program, allocator, peak KiB, and with EXIT_RSS_SO=<exit-rss.so> (a
# second run, that library preloaded too) libc's text and the whole
# process's resident KiB at exit.
before=$1 after=$2 reps=${3:-3} MB=${MB:-/tmp/mb}
here=$(cd "$(dirname "$0")" && pwd)
progs="cfrac glibc-simple glibc-thread glibc-thread-1 mleak10 cache-scratch-1 cache-thrash-1"
py=$(python3 -c 'import sys; print(sys.executable)')
at_exit() { # LIB CMD...: "libc_text K total K" at exit, or nothing
  [ -n "$EXIT_RSS_SO" ] || return 0
  local lib=$1 tmp
  shift
  tmp=$(mktemp)
  EXIT_RSS=$tmp LD_PRELOAD="$lib $EXIT_RSS_SO" "$@" >/dev/null 2>&1
  head -1 "$tmp"
  rm -f "$tmp"
}
for r in $(seq "$reps"); do
  while IFS=$'\t' read -r name cmd; do
    case " $progs " in *" $name "*) ;; *) continue ;; esac
    cmd=${cmd//\$MB/$MB}
    for a in glibc before after; do
      case $a in glibc) lib= ;; before) lib=$before ;; after) lib=$after ;; esac
      kib=$(LD_PRELOAD=$lib /usr/bin/time -f %M $cmd 2>&1 >/dev/null | tail -1)
      echo "$name $a $kib $(at_exit "$lib" $cmd)"
    done
  done < "$here/../2026-11-28-suite-programs-vm/cmds.txt"
  for a in glibc before after; do
    case $a in glibc) lib= ;; before) lib=$before ;; after) lib=$after ;; esac
    kib=$(PYTHONHASHSEED=0 LD_PRELOAD=$lib /usr/bin/time -f %M "$py" -c pass 2>&1 | tail -1)
    echo "python-start $a $kib $(PYTHONHASHSEED=0 at_exit "$lib" "$py" -c pass)"
  done
done
