#!/usr/bin/env python3
"""check_replay.py — `mmtrace replay` on two recorded patterns, on glibc and
on mmalloc (whose free reports any pointer it did not hand out, and in the
MM_DEBUG=3 tree checks every structure), also as three copies side by
side (--copies): every replay must finish, every
release must find its block (no release of NULL where the trace had a
block), and every call must have the outcome it had in the trace; with
--speed 1 a replay must take at least the recorded time of its busiest
thread's short gaps of work between its calls (`dump --times`), which it
spins.

    check_replay.py MMTRACE CALLS LIBMMALLOC WORKDIR
"""
import os
import re
import subprocess
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def replay(mmtrace, trace, lib, extra=()):
    r = run([mmtrace, "replay", trace, "--alloc", "glibc", "--alloc", lib, "--reps", "1"] + list(extra or ["--speed", "0"]))
    if r.returncode != 0:
        fail(f"replay of {trace}: status {r.returncode}: {r.stderr[-800:]}")
    runs = re.findall(r"^rep \d+ +(\S+) .* (\d+) outcomes differ from the trace, (\d+) releases of a refused block$",
                      r.stderr, re.M)
    if len(runs) != 2:
        fail(f"replay of {trace}: expected 2 runs, got: {r.stderr[-800:]}")
    for name, differ, nulls in runs:
        if differ != "0" or nulls != "0":
            fail(f"replay of {trace} on {name}: {differ} outcomes differ, {nulls} releases of NULL")
    rows = re.findall(r"^\| (\S+) \| ([0-9.]+) \|", r.stdout, re.M)
    if [n for n, _ in rows if n != "allocator"] != ["glibc", lib]:
        fail(f"replay table rows: {rows}")
    return {n: float(t) for n, t in rows if n != "allocator"}


def main():
    mmtrace, calls, lib, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    for mode in ("churn", "calls"):
        trace = os.path.join(work, f"{mode}.mmtrace")
        r = run([mmtrace, "record", "-o", trace, "--", calls, os.path.join(work, f"{mode}.expect"), mode])
        if r.returncode != 0:
            fail(f"record {mode}: {r.stderr}")
        replay(mmtrace, trace, lib)
        print(f"ok: the {mode} trace replays on glibc and {os.path.basename(lib)}, every call as in the trace")
    trace = os.path.join(work, "churn.mmtrace")
    replay(mmtrace, trace, lib, ["--speed", "0", "--copies", "3"])
    print("ok: three copies of the churn trace's threads side by side, every call as in the trace")
    # the program's own time before each call, as the replay waits it: CPU
    # work when short (long gaps may become waits for other threads)
    work_by_thread = {}
    for line in run([mmtrace, "dump", "--times", trace]).stdout.splitlines():
        m = re.search(r" work=(\d+)$", line)
        if m and int(m.group(1)) < 200000:
            t = line.split(" ")[1]
            work_by_thread[t] = work_by_thread.get(t, 0) + int(m.group(1))
    work_s = max(work_by_thread.values()) / 1e9
    took = replay(mmtrace, trace, lib, ["--speed", "1"])
    if min(took.values()) < 0.95 * work_s:
        fail(f"with --speed 1 a replay took {min(took.values()):.4f} s, under the busiest thread's "
             f"recorded work of {work_s:.4f} s")
    print(f"ok: --speed 1 replays take {min(took.values()):.4f} s or more; the busiest thread's recorded "
          f"work between calls is {work_s:.4f} s")


if __name__ == "__main__":
    main()
