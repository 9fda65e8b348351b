#!/usr/bin/env python3
"""check_replay.py — `mmtrace replay` on two recorded patterns, on glibc and
on mmalloc (whose free reports any pointer it did not hand out, and in the
MM_DEBUG=3 tree checks every structure), also as three copies side by
side (--copies), folded onto 1 and 2 threads and doubled (--threads K; a
K that is neither is refused): every replay must finish with the threads
asked for, every
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


def replay(mmtrace, trace, lib, extra=(), threads=None):
    r = run([mmtrace, "replay", trace, "--alloc", "glibc", "--alloc", lib, "--reps", "1"] + list(extra or ["--speed", "0"]))
    if r.returncode != 0:
        fail(f"replay of {trace}: status {r.returncode}: {r.stderr[-800:]}")
    runs = re.findall(r"^rep \d+ +(\S+) .* (\d+) threads  (\d+) outcomes differ from the trace, "
                      r"(\d+) releases of a refused block$", r.stderr, re.M)
    if len(runs) != 2:
        fail(f"replay of {trace}: expected 2 runs, got: {r.stderr[-800:]}")
    for name, nthreads, differ, nulls in runs:
        if differ != "0" or nulls != "0":
            fail(f"replay of {trace} on {name}: {differ} outcomes differ, {nulls} releases of NULL")
        if threads is not None and int(nthreads) != threads:
            fail(f"replay of {trace} on {name}: ran {nthreads} threads, not {threads}")
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
    replay(mmtrace, trace, lib, ["--speed", "0", "--copies", "3"], threads=15)
    print("ok: three copies of the churn trace's threads side by side, every call as in the trace")
    # --threads K: the 5 traced threads folded onto fewer (their calls
    # merged in the trace's time order), or a multiple of them as copies
    for mode in ("churn", "calls"):
        for k in (1, 2):
            replay(mmtrace, os.path.join(work, f"{mode}.mmtrace"), lib,
                   ["--speed", "1" if mode == "churn" else "0", "--threads", str(k)], threads=k)
    print("ok: the churn and calls traces folded onto 1 and 2 threads, every call as in the trace")
    replay(mmtrace, trace, lib, ["--speed", "0", "--threads", "10"], threads=10)
    print("ok: --threads 10 on a 5-thread trace runs two copies")
    r = run([mmtrace, "replay", trace, "--threads", "7", "--reps", "1"])
    if r.returncode != 2 or "must be a multiple" not in r.stderr:
        fail(f"--threads 7 on a 5-thread trace: status {r.returncode}, {r.stderr[-300:]}")
    r = run([mmtrace, "replay", trace, "--threads", "2", "--copies", "2"])
    if r.returncode != 2 or "usage" not in r.stderr:
        fail(f"--threads with --copies: status {r.returncode}, {r.stderr[-300:]}")
    print("ok: --threads 7 (not a multiple of 5) and --threads with --copies are refused")
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
