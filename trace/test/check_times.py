#!/usr/bin/env python3
"""check_times.py — the times a version 2 trace gives (times.c makes them
known): the program's own time before a call, how much of a long gap the
thread computed and how much it was blocked, and which calls carry their
measured duration (calls on blocks of 64 KiB or more) and which the
thread's sampled average.

    check_times.py MMTRACE TIMES_PROGRAM WORKDIR
"""
import os
import re
import subprocess
import sys

MS = 1000000


def fail(msg):
    print(f"check_times: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    mmtrace, prog, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, "times.mmtrace")
    if os.path.exists(trace):
        os.unlink(trace)
    r = subprocess.run([mmtrace, "record", "-o", trace, "--", prog], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"record: status {r.returncode}: {r.stderr[-500:]}")
    d = subprocess.run([mmtrace, "dump", "--times", trace], capture_output=True, text=True)
    if d.returncode != 0:
        fail(f"dump: status {d.returncode}: {d.stderr[-500:]}")
    if "# mmtrace version 2" not in d.stdout:
        fail("the trace is not format version 2")
    calls = []
    for line in d.stdout.splitlines():
        m = re.match(r"\d+ T0 (\S+) .*?(?:size=(\d+))?.* gap=(\d+) dur([=~])(\d+)(?: cpu=(\d+))? work=(\d+)$", line)
        if m:
            op, size, gap, mark, dur, cpu, work = m.groups()
            calls.append({"op": op, "size": int(size) if size else None, "gap": int(gap), "timed": mark == "=",
                          "dur": int(dur), "cpu": None if cpu is None else int(cpu), "work": int(work),
                          "line": line})
    small = [i for i, c in enumerate(calls) if c["op"] == "malloc" and c["size"] == 64]
    if len(small) < 3:
        fail(f"expected three 64-byte mallocs, found {len(small)}:\n{d.stdout[-2000:]}")
    a, b, c = (calls[i] for i in small[-3:])
    # after 40 ms of computing: a long gap, nearly all of it on the CPU
    if b["gap"] < 38 * MS or b["cpu"] is None or b["cpu"] < 30 * MS or b["cpu"] > b["gap"]:
        fail(f"the call after 40 ms of computing: {b['line']}")
    if not b["timed"]:
        fail(f"the call after a long gap is not timed: {b['line']}")
    # after 40 ms asleep: a long gap, nearly none of it on the CPU
    if c["gap"] < 38 * MS or c["cpu"] is None or c["cpu"] > 10 * MS:
        fail(f"the call after 40 ms asleep: {c['line']}")
    print(f"ok: after 40 ms computing, gap {b['gap'] / MS:.1f} ms of which {b['cpu'] / MS:.1f} on the CPU; "
          f"after 40 ms asleep, gap {c['gap'] / MS:.1f} ms of which {c['cpu'] / MS:.1f}")
    rest = calls[small[-1] + 1:]
    want = [("malloc", True), ("free", True), ("calloc", True), ("free", True),
            ("free", False), ("free", False), ("free", False)]
    got = [(x["op"], x["timed"]) for x in rest[:len(want)]]
    if got != want:
        fail(f"calls after the third malloc and whether timed: {got}, expected {want}")
    # the free of the 1 MiB block follows its memset (page faults: a gap
    # that may be long); every other gap here is short, the time a call
    # took not counted in it
    if any(x["cpu"] is not None for k, x in enumerate(rest[:len(want)]) if k != 1):
        fail("a call after a short gap has a cpu time:\n" + "\n".join(x["line"] for x in rest[:len(want)]))
    if a["timed"]:
        fail(f"a 64-byte malloc after a short gap is timed: {a['line']}")
    print("ok: calls on blocks of 1 MiB and 128 KiB carry their duration, small ones the thread's average")


if __name__ == "__main__":
    main()
