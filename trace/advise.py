#!/usr/bin/env python3
"""advise.py — `mmtrace advise TRACE`: which allocator, with which settings,
suits the recorded program.  It replays the trace on every allocator this
machine has and on a small grid of mmalloc settings (purge delay, one local
heap, transparent huge pages), allocators alternating, and recommends the
fastest, the leanest and the balanced choice (the lowest product of time
and peak RSS, each relative to the best), with the reasons in terms of the
pattern (`mmtrace stats`).  Next to the fastest and the leanest it names
the configurations the runs do not tell apart from them (one of whose runs
did as well as the pick's worst run), so that a choice made on a noisy
machine, or on one run, says so.

    advise.py --mmtrace PATH TRACE [--reps N] [--speed S] [--partial] [-o FILE]

FILE (default TRACE.advice.md) gets the advice and the whole table.
"""
import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

MMALLOC_GRID = [
    ("MMALLOC_PURGE_DELAY_MS=0", "gives freed memory back at once"),
    ("MMALLOC_PURGE_DELAY_MS=1000", "keeps freed memory for a second before giving it back"),
    ("MMALLOC_HEAPS=1", "one local heap for all threads"),
    ("MMALLOC_HUGEPAGES=0", "no transparent huge pages"),
    ("MMALLOC_HUGEPAGES=1", "transparent huge pages for all heap memory"),
]


def load_report():
    for name in ("report.py", "mmtrace_report.py"):
        p = os.path.join(HERE, name)
        if os.path.exists(p):
            spec = importlib.util.spec_from_file_location("mmtrace_report", p)
            m = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(m)
            return m
    return None


def runs_of(replay_stderr):
    """Each configuration's runs, from the replay's line per run on stderr:
    {config: [(seconds, peak RSS MiB), ...]} (the figures its table's
    medians are taken from)."""
    runs = {}
    for m in re.finditer(r"^rep \d+ (\S+)\s+([0-9.]+) s  (\d+) KiB", replay_stderr, re.M):
        runs.setdefault(m.group(1), []).append((float(m.group(2)), int(m.group(3)) / 1024))
    return runs


SHOWN = {"time": 3, "rss": 1}  # decimals the advice shows seconds and MiB with


def not_told_apart(rows, pick, key):
    """The rows other than pick whose best run (lowest `key`: "time" or
    "rss") is no worse than pick's worst, as the table shows them: the runs
    do not show pick to be better than them."""
    worst = round(max(pick[key + "_runs"]), SHOWN[key])
    return [x for x in rows if x is not pick and round(min(x[key + "_runs"]), SHOWN[key]) <= worst]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mmtrace", required=True)
    ap.add_argument("trace")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--speed", default="1")
    ap.add_argument("--partial", action="store_true")
    ap.add_argument("-o", dest="out")
    a = ap.parse_args()
    out = a.out or a.trace + ".advice.md"
    partial = ["--partial"] if a.partial else []
    st = subprocess.run([a.mmtrace, "stats"] + partial + [a.trace], capture_output=True, text=True)
    if st.returncode != 0:
        sys.stderr.write(st.stderr)
        return st.returncode
    s = json.loads(st.stdout)
    have = subprocess.run([a.mmtrace, "allocators"], capture_output=True, text=True).stdout.split("\n")
    names = [line.split(" ", 1)[0] for line in have if line.strip()]
    specs = list(names)
    if "mmalloc" in names:
        specs += [f"mmalloc[{setting}]" for setting, _ in MMALLOC_GRID]
    cmd = [a.mmtrace, "replay", a.trace, "--reps", str(a.reps), "--speed", a.speed] + partial
    for sp in specs:
        cmd += ["--alloc", sp]
    print(f"mmtrace advise: replaying on {len(specs)} configurations, {a.reps} times each", file=sys.stderr)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr[-2000:])
        return r.returncode
    rows = []
    for m in re.finditer(r"^\| (\S+) \| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+) \| (\d+) \|$", r.stdout, re.M):
        rows.append({"config": m.group(1), "time": float(m.group(2)), "rss": float(m.group(4)),
                     "faults": int(m.group(5))})
    if not rows:
        sys.stderr.write("mmtrace advise: the replay gave no table\n" + r.stdout + r.stderr[-1000:])
        return 1
    runs = runs_of(r.stderr)
    for x in rows:
        got = runs.get(x["config"], [])
        if len(got) != a.reps:
            sys.stderr.write(f"mmtrace advise: {len(got)} runs of {x['config']} in the replay's output, "
                             f"not {a.reps}\n")
            return 1
        x["time_runs"] = [t for t, _ in got]
        x["rss_runs"] = [m for _, m in got]
    best_t = min(x["time"] for x in rows)
    best_r = min(x["rss"] for x in rows)
    for x in rows:
        x["score"] = (x["time"] / best_t) * (x["rss"] / best_r)
    fastest = min(rows, key=lambda x: (x["time"], x["rss"]))
    leanest = min(rows, key=lambda x: (x["rss"], x["time"]))
    balanced = min(rows, key=lambda x: x["score"])

    def describe(x):
        c = x["config"]
        m = re.match(r"(\S+?)\[(.*)\]$", c)
        if not m:
            return f"`{c}` with its default settings"
        what = dict(MMALLOC_GRID).get(m.group(2), m.group(2))
        return f"`{m.group(1)}` with `{m.group(2)}` ({what})"

    def figures(x):
        return (f"{x['time']:.3f} s ({x['time'] / best_t:.2f}x the fastest), peak RSS {x['rss']:.1f} MiB "
                f"({x['rss'] / best_r:.2f}x the leanest)")

    rep = load_report()
    found = rep.findings(s) if rep else []
    prog = os.path.basename(s.get("program") or "?")
    nth = len(s['threads'])
    threads = f"{nth} thread" + ("" if nth == 1 else "s")
    lines = [f"# Allocator advice for `{prog}`", "",
             f"From `{a.trace}`: {s['events']} events in {threads}, replayed on {len(rows)} "
             f"configurations, {a.reps} run{'' if a.reps == 1 else 's'} each, allocators alternating, medians (speed {a.speed}: "
             + ("the program's recorded work between calls kept" if a.speed != "0" else "calls back to back")
             + ").", "",
             f"- **Fastest:** {describe(fastest)}: {figures(fastest)}.",
             f"- **Leanest:** {describe(leanest)}: {figures(leanest)}.",
             f"- **Balanced** (lowest time x RSS, each against the best): {describe(balanced)}: {figures(balanced)}.",
             ""]
    if a.reps == 1:
        lines += ["One run each: how much a configuration's runs vary is not known here, so a difference "
                  "of a few percent may be noise. Use `--reps 3` or more before choosing on these figures.", ""]
    else:
        for what, key, pick, unit in (("fastest", "time", fastest, "s"), ("leanest", "rss", leanest, "MiB")):
            tied = not_told_apart(rows, pick, key)
            if not tied:
                lines += [f"The {what}'s worst run beat every other configuration's best: the runs tell it apart.", ""]
                continue
            worst = max(pick[key + "_runs"])
            names = ", ".join(f"`{x['config']}` ({min(x[key + '_runs']):.{SHOWN[key]}f})"
                              for x in sorted(tied, key=lambda x: min(x[key + "_runs"])))
            lines += [f"Not told apart from the {what} (its worst run, {worst:.{SHOWN[key]}f} {unit}, "
                      f"is no better than their best): {names}. Among these the choice is within this "
                      f"machine's noise; more runs (`--reps`) or a quieter machine may separate them.", ""]
    spread_t = max(x["time"] for x in rows) / best_t
    spread_r = max(x["rss"] for x in rows) / best_r
    if spread_t < 1.05:
        lines.append(f"The times are within {100 * (spread_t - 1):.0f}% of each other: for time, the choice of "
                     "allocator hardly matters to this program (it spends little of its time in allocation).")
    if spread_r < 1.05:
        lines.append("Peak RSS is within 5% across the configurations.")
    lines += ["", "## Why: the pattern", ""]
    if not found:
        lines.append("No pattern stands out (see `mmtrace report` for the whole picture).")
    for title, text, prop in found:
        lines.append(f"- **{title}.** {text} This stresses {prop}.")
    remote = s["remote_releases"] / s["releases"] if s["releases"] else 0
    lines += ["", f"Remote frees are {100 * remote:.1f}% of the releases; {threads}; "
              f"peak live set {s['peak_live_bytes'] / 1048576:.1f} MiB.", "",
              "## All configurations", "", "| configuration | time s | vs fastest | peak RSS MiB | vs leanest | "
              "page faults | time, best-worst run s | peak RSS, best-worst run MiB |", "|---|---|---|---|---|---|---|---|"]
    for x in sorted(rows, key=lambda x: x["score"]):
        lines.append(f"| `{x['config']}` | {x['time']:.3f} | {x['time'] / best_t:.2f} | {x['rss']:.1f} | "
                     f"{x['rss'] / best_r:.2f} | {x['faults']} | {min(x['time_runs']):.3f}-{max(x['time_runs']):.3f} | "
                     f"{min(x['rss_runs']):.1f}-{max(x['rss_runs']):.1f} |")
    lines += ["", "A replay repeats the calls with their threads and the program's recorded work between "
              "them; it does not repeat the program's own memory (code, stacks, mapped files), so its RSS is "
              "the allocator's part. Confirm the choice on the real program: `mmrun --alloc NAME program`."]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[:8]))
    print(f"mmtrace: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
