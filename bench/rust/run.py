#!/usr/bin/env python3
"""run.py — the Rust benchmark: the workload of src/lib.rs under four global
allocators (Rust's default, i.e. glibc's malloc; the mimalloc crate; the
tikv-jemallocator crate; the mmalloc crate), alternating in a shuffled order
each repetition, medians reported.

usage: python3 bench/rust/run.py [--threads 2,8] [--reps 7] [--out DIR]
                                 [--args "requests=200000 ..."]

Builds the four binaries with `cargo build --release` first (crates.io must
be reachable the first time).  Writes DIR/results.csv (one row per run) and
DIR/report.md (medians, min-max, ratios to the best), and prints the report.
Time is the workload's own clock around both phases; peak RSS is the
process's, from the kernel's rusage.  A run whose checksum differs from the
others' is reported as failed.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import random
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ALLOCATORS = ["system", "mimalloc", "jemalloc", "mmalloc"]
NAMES = {"system": "system (glibc malloc)", "mimalloc": "mimalloc crate",
         "jemalloc": "tikv-jemallocator crate", "mmalloc": "mmalloc crate"}


def build():
    subprocess.run(["cargo", "build", "--release", "--locked", "--quiet"], cwd=HERE, check=True)


def run_one(alloc, threads, extra):
    exe = os.path.join(HERE, "target", "release", "rb_" + alloc)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(w, 1)
        os.close(r)
        os.execv(exe, [exe, "threads=%d" % threads] + extra)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    _, status, ru = os.wait4(pid, 0)
    row = {"allocator": alloc, "threads": threads, "status": "ok" if status == 0 else "failed",
           "maxrss_mib": ru.ru_maxrss / 1024.0, "minflt": ru.ru_minflt}
    try:
        row.update(json.loads(out.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        row["status"] = "failed"
    return row


def med(rows, key):
    v = [r[key] for r in rows]
    return statistics.median(v), min(v), max(v)


def report(rows, threads_list, reps, extra):
    lines = ["# Rust benchmark", "",
             "The workload of bench/rust/src/lib.rs (a channel-connected service of "
             "producers, workers and a collector, then a rayon parallel transform) under "
             "each global allocator; %d repetitions, allocators in a shuffled order each "
             "repetition; median (min–max) and ×ratio to the best median. Arguments: "
             "`threads=T %s`. Machine: %s, %d CPUs." % (reps, " ".join(extra) or "(defaults)",
                                                          platform.node() or "?", os.cpu_count()),
             ""]
    for key, title, unit in (("seconds", "time (s), both phases", "%.3f"),
                             ("service_s", "service phase (s)", "%.3f"),
                             ("transform_s", "transform phase (s)", "%.3f"),
                             ("maxrss_mib", "peak RSS (MiB)", "%.1f")):
        lines += ["| %s | %s |" % (title, " | ".join("%d threads" % t for t in threads_list)),
                  "|---|" + "---|" * len(threads_list)]
        best = {}
        for t in threads_list:
            ok = [r for r in rows if r["threads"] == t and r["status"] == "ok"]
            best[t] = min(med([r for r in ok if r["allocator"] == a], key)[0]
                          for a in ALLOCATORS if any(r["allocator"] == a for r in ok))
        for a in ALLOCATORS:
            cells = []
            for t in threads_list:
                mine = [r for r in rows if r["threads"] == t and r["allocator"] == a and r["status"] == "ok"]
                if not mine:
                    cells.append("failed")
                    continue
                m, lo, hi = med(mine, key)
                ratio = m / best[t] if best[t] else 1.0
                cell = (unit + " (" + unit + "–" + unit + ") ×%.2f") % (m, lo, hi, ratio)
                cells.append("**" + cell + "**" if abs(ratio - 1.0) < 1e-9 else cell)
            lines.append("| %s | %s |" % (NAMES[a], " | ".join(cells)))
        lines.append("")
    failed = [r for r in rows if r["status"] != "ok"]
    lines.append("Failed runs: %d." % len(failed))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", default="2,8")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--args", default="", help="extra key=value arguments for the workload")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "results",
                                                  datetime.date.today().isoformat() + "-rust"))
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    threads_list = [int(t) for t in a.threads.split(",")]
    extra = a.args.split()
    build()
    rng = random.Random(a.seed)
    rows = []
    for rep in range(a.reps):
        for t in threads_list:
            order = ALLOCATORS[:]
            rng.shuffle(order)
            for alloc in order:
                r = run_one(alloc, t, extra)
                r["rep"] = rep
                rows.append(r)
                print("rep %d T=%d %-9s %s %.3f s %.1f MiB" % (rep, t, alloc, r["status"],
                      r.get("seconds", 0), r["maxrss_mib"]), file=sys.stderr)
    sums = {}
    for r in rows:
        if r["status"] == "ok":
            sums.setdefault(r["threads"], set()).add(r["checksum"])
    for t, s in sums.items():
        if len(s) != 1:
            for r in rows:
                if r["threads"] == t:
                    r["status"] = "failed"  # the allocators disagree: nobody's result counts
            print("checksums differ at %d threads: %s" % (t, sorted(s)), file=sys.stderr)
    os.makedirs(a.out, exist_ok=True)
    keys = ["allocator", "threads", "rep", "status", "seconds", "service_s", "transform_s",
            "maxrss_mib", "minflt", "checksum"]
    with open(os.path.join(a.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    text = report(rows, threads_list, a.reps, extra)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(text)
    print(text)
    return 1 if any(r["status"] != "ok" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
