#!/usr/bin/env python3
"""check_dlopen.py — a C program that loads a C++ library with dlopen and
RTLD_LOCAL, whose operator new[] throws bad_alloc and catches it, recorded:
the program must end as it does untraced (caught=1, status 0), and the
trace must hold the failed new[].

    check_dlopen.py MMTRACE DLTHROW THROWLIB WORKDIR
"""
import os
import re
import subprocess
import sys

from trace_check import Check


CHECK = Check("check_dlopen")
fail = CHECK.fail


def main():
    mmtrace, prog, lib, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    plain = subprocess.run([prog, lib], capture_output=True, text=True)
    if plain.returncode != 0 or "caught=1" not in plain.stdout:
        fail(f"untraced: status {plain.returncode}, {plain.stdout!r} {plain.stderr[-300:]}")
    trace = os.path.join(work, "dlthrow.mmtrace")
    r = CHECK.run([mmtrace, "record", "-o", trace, "--", prog, lib], "recorded")
    if "caught=1" not in r.stdout:
        fail(f"recorded: {r.stdout!r} {r.stderr[-500:]}")
    d = CHECK.run([mmtrace, "dump", trace], "dump")
    if not re.search(r"^\d+ T0 new\[\] size=\d+ failed$", d.stdout, re.M):
        fail(f"no failed new[] in the trace:\n{d.stdout[-1500:]}")
    print("check_dlopen: ok (operator new[] of a library loaded RTLD_LOCAL threw through the recorder)")


if __name__ == "__main__":
    main()
