#!/usr/bin/env python3
"""check_advise.py — `mmtrace advise` on a recorded trace: the advice file
must name a fastest, a leanest and a balanced configuration that are rows
of its own table, the table must hold every allocator `mmtrace allocators`
lists plus mmalloc's settings, and the three choices must be right for the
table's own figures.  Run with three runs each, the advice must name, next
to the fastest and the leanest, exactly the configurations whose best run
(the table's best-worst columns) is no better than the pick's worst; run
once, it must say that the spread is not known.

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
    if "One run each" not in open(out).read():
        fail("one run each, and the advice does not say that the spread is not known")
    r = subprocess.run([mmtrace, "advise", trace, "--reps", "3", "-o", out], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"advise: status {r.returncode}: {r.stderr[-800:]}")
    text = open(out).read()
    rows, ranges = {}, {}
    for m in re.finditer(r"^\| `([^`]+)` \| ([0-9.]+) \| [0-9.]+ \| ([0-9.]+) \| [0-9.]+ \| \d+ \| "
                         r"([0-9.]+)-([0-9.]+) \| ([0-9.]+)-([0-9.]+) \|$", text, re.M):
        rows[m.group(1)] = (float(m.group(2)), float(m.group(3)))
        ranges[m.group(1)] = {"time": (float(m.group(4)), float(m.group(5))),
                              "rss": (float(m.group(6)), float(m.group(7)))}
        for key, median in (("time", rows[m.group(1)][0]), ("rss", rows[m.group(1)][1])):
            lo, hi = ranges[m.group(1)][key]
            if not lo <= median <= hi:
                fail(f"{m.group(1)}: median {key} {median} outside its runs' {lo}-{hi}")
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
    for what, key in (("fastest", "time"), ("leanest", "rss")):
        pick = picks["Fastest" if key == "time" else "Leanest"]
        worst = ranges[pick][key][1]
        want_tied = {c for c in rows if c != pick and ranges[c][key][0] <= worst}
        m = re.search(r"^Not told apart from the " + what + r" .*?: (.*)\. Among these", text, re.M)
        said = set(re.findall(r"`([^`]+)`", m.group(1))) if m else set()
        if not m and f"The {what}'s worst run beat every other" not in text:
            fail(f"neither the configurations not told apart from the {what} nor that there are none")
        if said != want_tied:
            fail(f"not told apart from the {what} ({pick}, worst {worst}): the advice says {sorted(said)}, "
                 f"the table's ranges give {sorted(want_tied)}")
    if "## Why: the pattern" not in text:
        fail("no reasons")
    print(f"ok: {len(rows)} configurations; fastest {picks['Fastest']}, leanest {picks['Leanest']}, "
          f"balanced {picks['Balanced']}")


if __name__ == "__main__":
    main()
