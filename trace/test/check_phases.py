#!/usr/bin/env python3
"""check_phases.py — the report's phase detector (report.phases) on made-up
runs whose phases are known: a ramp, a plateau with noise and a short
spike, a fall and a silence must come out as growth, steady, release and
idle with their edges within 2 ms; a run with two bursts as two growth /
release pairs; a flat run as one steady phase; an empty run as none; and
every answer covers the run in order without gaps.

    check_phases.py REPORT_DIR     (the directory holding report.py)
"""
import random
import sys

MIB = 1 << 20


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def covers(ph, n):
    if n == 0:
        return ph == []
    if not ph or ph[0][1] != 0 or ph[-1][2] != n:
        return False
    return all(ph[i][2] == ph[i + 1][1] and ph[i][0] != ph[i + 1][0] for i in range(len(ph) - 1))


def expect(name, ph, n, want):
    if not covers(ph, n):
        fail(f"{name}: the phases do not cover the run in order: {ph}")
    kinds = [k for k, _, _ in ph]
    if kinds != [k for k, _ in want]:
        fail(f"{name}: phases {ph}, expected kinds {[k for k, _ in want]}")
    for (k, a, b), (_, edge) in zip(ph, want):
        if abs(a - edge) > 2:
            fail(f"{name}: phase {k} starts at {a} ms, expected about {edge}")
    print(f"ok: {name}: {ph}")


def main():
    sys.path.insert(0, sys.argv[1])
    import report
    rng = random.Random(7)
    # 0-100 ms growth to 100 MiB, 100-300 steady (+-3% noise, a 3 ms spike
    # of +30 MiB at 200), 300-350 release to 10 MiB, 350-500 idle
    live, allocs = [], []
    for ms in range(500):
        if ms < 100:
            v, a = (ms + 1) * MIB, 1000
        elif ms < 300:
            v, a = 100 * MIB + rng.randint(-3 * MIB, 3 * MIB), 800
            if 200 <= ms < 203:
                v += 30 * MIB
        elif ms < 350:
            v, a = (100 - (ms - 299) * 90 // 50) * MIB, 50
        else:
            v, a = live[-1], 0
        live.append(v)
        allocs.append(a)
    expect("ramp, plateau, fall, silence", report.phases(live, allocs), 500,
           [("growth", 0), ("steady", 100), ("release", 300), ("idle", 350)])
    # two bursts: up 0-50, down 50-100, up 100-150, down 150-200
    live = [(m % 100 if m % 100 < 50 else 100 - m % 100) * MIB for m in range(200)]
    expect("two bursts", report.phases(live, [10] * 200), 200,
           [("growth", 0), ("release", 50), ("growth", 100), ("release", 150)])
    # flat with churn
    expect("flat", report.phases([5 * MIB] * 300, [100] * 300), 300, [("steady", 0)])
    # a pause too short to be a phase (2 ms of 300) stays in the activity
    allocs = [100] * 300
    allocs[150:152] = [0, 0]
    expect("a short pause", report.phases([5 * MIB] * 300, allocs), 300, [("steady", 0)])
    expect("empty", report.phases([], []), 0, [])


if __name__ == "__main__":
    main()
