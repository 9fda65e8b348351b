#!/usr/bin/env python3
"""check_times.py — the times a version 2 trace gives (times.c makes them
known): the program's own time before a call, how much of a long gap the
thread computed and how much it was blocked, and which calls carry their
measured duration (calls on blocks of 64 KiB or more) and which the
thread's sampled average; a thread made by pthread_create is registered
when it starts, and the exiting thread ends at exit.

    check_times.py MMTRACE TIMES_PROGRAM WORKDIR
"""
import os
import re
import sys

from trace_check import Check

MS = 1000000


CHECK = Check("check_times")
fail = CHECK.fail


def main():
    mmtrace, prog, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, "times.mmtrace")
    if os.path.exists(trace):
        os.unlink(trace)
    CHECK.run([mmtrace, "record", "-o", trace, "--", prog], "record")
    d = CHECK.run([mmtrace, "dump", "--times", trace], "dump")
    version = re.search(r"^# mmtrace version (\d+)$", d.stdout, re.M)
    if not version or int(version.group(1)) < 2:
        fail("the trace is not format version 2 or later (version 3 adds only the memory record)")
    calls = []
    for line in d.stdout.splitlines():
        m = re.match(r"\d+ T0 (\S+) .* gap=(\d+) dur([=~])(\d+)(?: cpu=(\d+))? work=(\d+)$", line)
        if m:
            op, gap, mark, dur, cpu, work = m.groups()
            size = re.search(r" size=(\d+)", line)
            size = size.group(1) if size else None
            calls.append({"op": op, "size": int(size) if size else None, "gap": int(gap), "timed": mark == "=",
                          "dur": int(dur), "cpu": None if cpu is None else int(cpu), "work": int(work),
                          "stamped": " unstamped " not in line, "line": line})
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
    want = [("malloc", 1 << 20), ("free", None), ("calloc", 8), ("free", None),
            ("free", None), ("free", None), ("free", None)]
    got = [(x["op"], x["size"]) for x in rest[:len(want)]]
    if got != want:
        fail(f"calls after the third malloc: {got}, expected {want}")
    # blocks of 64 KiB or more: timed (their alloc and their free); small
    # ones: timed only after a long gap, which carries the thread's CPU time
    for k, x in enumerate(rest[:len(want)]):
        large = k < 4
        if x["timed"] != (large or x["cpu"] is not None):
            fail(f"a call on a {'large' if large else 'small'} block, timed {x['timed']}: {x['line']}")
    # a gap of 100 us or more always gets a CPU time (the recorder's bound
    # is 100 us, or fewer ticks than that until it knows the counter's rate)
    for x in calls:
        if x["gap"] >= 100000 and x["cpu"] is None:
            fail(f"a gap of {x['gap']} ns without the thread's CPU time: {x['line']}")
        if x["cpu"] is not None and not x["timed"]:
            fail(f"a call with a CPU time is not timed: {x['line']}")
    # unstamped calls (the clock not read: a dense burst): untimed, gap 0,
    # never more than 7 in a row; the burst of 128 small calls has them
    run = 0
    for x in calls:
        if x["stamped"]:
            run = 0
            continue
        run += 1
        if run > 7:
            fail(f"more than 7 unstamped calls in a row: {x['line']}")
        if x["timed"] or x["gap"] != 0:
            fail(f"an unstamped call that is timed or has a gap: {x['line']}")
    start = next((i for i, x in enumerate(calls) if x["size"] == 32), None)
    if start is None:
        fail("the burst of 32-byte mallocs is missing")
    burst = calls[start:start + 128]
    unstamped = sum(not x["stamped"] for x in burst)
    if unstamped < 64:
        fail(f"the dense burst of 128 calls has {unstamped} unstamped calls, expected 7 in 8")
    # 20 ms of computing after the burst: the gap shows at the first of the
    # next eight mallocs that is stamped, the ones before it unstamped
    after = [x for x in calls if x["op"] == "malloc" and x["size"] == 48]
    if len(after) != 8:
        fail(f"expected eight 48-byte mallocs, found {len(after)}")
    first = next((x for x in after if x["stamped"]), None)
    if first is None or first["gap"] < 18 * MS or first["cpu"] is None or first["cpu"] < 12 * MS:
        fail(f"20 ms of computing after a dense burst: {[x['line'] for x in after]}")
    print(f"ok: a burst of 128 calls, {unstamped} unstamped; the 20 ms after it shows at the "
          f"{after.index(first) + 1}th call after it, gap {first['gap'] / MS:.1f} ms of which {first['cpu'] / MS:.1f} on the CPU")
    # the thread that only computed: registered when it started, its
    # 30 ms in the gap before its thread_end, on the CPU
    other = [l for l in d.stdout.splitlines() if re.match(r"\d+ T[1-9]", l)]
    ops = [l.split(" ")[2] for l in other]
    if ops != ["thread_begin", "thread_end"]:
        fail(f"the thread that makes no call: {other}")
    m = re.search(r" gap=(\d+) .* cpu=(\d+) ", other[1])
    if not m or int(m.group(1)) < 28 * MS or int(m.group(2)) < 20 * MS:
        fail(f"the thread that computed 30 ms: {other[1]}")
    last = [l for l in d.stdout.splitlines() if re.match(r"\d+ T0 ", l)][-1]
    if " thread_end " not in last:
        fail(f"the main thread's last event is not its end at exit: {last}")
    print(f"ok: a thread that only computed runs from its start to its end, "
          f"gap {int(m.group(1)) / MS:.1f} ms of which {int(m.group(2)) / MS:.1f} on the CPU; the main thread ends at exit")
    print("ok: calls on blocks of 1 MiB and 128 KiB carry their duration, small ones the thread's average")


if __name__ == "__main__":
    main()
