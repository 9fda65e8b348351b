#!/usr/bin/env python3
"""check_fdreuse.py — a program that puts its own file at every open
descriptor number (fdreuse.c), recorded: its file must hold exactly the
lines it wrote (no chunk of the trace in it), descriptor 3 must have been
free at its start, and the trace must hold every call it made (the
recorder opened its file again by name and went on).

    check_fdreuse.py MMTRACE FDREUSE WORKDIR
"""
import os
import re
import sys

from trace_check import Check

ROUNDS, LINES = 200, 100


CHECK = Check("check_fdreuse")
fail = CHECK.fail


def main():
    mmtrace, prog, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    out, trace = os.path.join(work, "program-output.txt"), os.path.join(work, "fdreuse.mmtrace")
    CHECK.run([mmtrace, "record", "-o", trace, "--", prog, out], "record")
    with open(out, "rb") as f:
        data = f.read()
    want = b"a line of the program's own\n" * LINES
    if data != want:
        fail(f"the program's file holds {len(data)} bytes, not its {len(want)}: the trace was written into it")
    s = CHECK.run([mmtrace, "stats", trace], "stats")
    for op in ("malloc", "free"):
        m = re.search(r'"%s": \[(\d+), (\d+)\]' % op, s.stdout)
        if not m or int(m.group(1)) < ROUNDS * 1000:
            fail(f"the trace holds {m.group(1) if m else 'no'} {op} calls, the program made {ROUNDS * 1000}")
    print(f"check_fdreuse: ok (the program's file intact, every call in the trace)")


if __name__ == "__main__":
    main()
