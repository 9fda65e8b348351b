#!/usr/bin/env python3
"""check_advise.py — `mmtrace advise` on a recorded trace: the advice file
must name a fastest, a leanest and a balanced configuration that are rows
of its own table, the table must hold every allocator `mmtrace allocators`
lists plus mmalloc's settings, and the three choices must be right for the
table's own figures.

    check_advise.py MMTRACE TRACE OUT
"""
import re
import subprocess
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    mmtrace, trace, out = sys.argv[1:4]
    r = subprocess.run([mmtrace, "advise", trace, "--reps", "1", "-o", out], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"advise: status {r.returncode}: {r.stderr[-800:]}")
    text = open(out).read()
    rows = {m.group(1): (float(m.group(2)), float(m.group(3)))
            for m in re.finditer(r"^\| `([^`]+)` \| ([0-9.]+) \| [0-9.]+ \| ([0-9.]+) \|", text, re.M)}
    have = [line.split(" ", 1)[0] for line in
            subprocess.run([mmtrace, "allocators"], capture_output=True, text=True).stdout.splitlines()]
    want = set(have) | ({f"mmalloc[{s}]" for s in ("MMALLOC_PURGE_DELAY_MS=0", "MMALLOC_PURGE_DELAY_MS=1000",
                                                     "MMALLOC_HEAPS=1", "MMALLOC_HUGEPAGES=0",
                                                     "MMALLOC_HUGEPAGES=1")} if "mmalloc" in have else set())
    if set(rows) != want:
        fail(f"the table holds {sorted(rows)}, not {sorted(want)}")
    picks = {}
    for kind in ("Fastest", "Leanest", "Balanced"):
        m = re.search(r"^- \*\*" + kind + r"[:*].*?`([^`]+)`( with `([^`]+)`)?", text, re.M)
        if not m:
            fail(f"no {kind} line")
        picks[kind] = m.group(1) + (f"[{m.group(3)}]" if m.group(3) else "")
    best_t = min(t for t, _ in rows.values())
    best_r = min(r for _, r in rows.values())
    if rows[picks["Fastest"]][0] != best_t:
        fail(f"fastest is {picks['Fastest']} but the table's fastest time is {best_t}")
    if rows[picks["Leanest"]][1] != best_r:
        fail(f"leanest is {picks['Leanest']} but the table's lowest RSS is {best_r}")
    score = {k: (t / best_t) * (r / best_r) for k, (t, r) in rows.items()}
    if abs(score[picks["Balanced"]] - min(score.values())) > 0.02:
        fail(f"balanced is {picks['Balanced']} (score {score[picks['Balanced']]:.3f}), "
             f"the best score is {min(score.values()):.3f}")
    if "## Why: the pattern" not in text:
        fail("no reasons")
    print(f"ok: {len(rows)} configurations; fastest {picks['Fastest']}, leanest {picks['Leanest']}, "
          f"balanced {picks['Balanced']}")


if __name__ == "__main__":
    main()
