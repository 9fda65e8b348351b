#!/usr/bin/env python3
"""The idle probe on every allocator: how much of a freed burst each one
still holds while the program makes no allocator call at all.

Runs <build>/bench/idle (bench/idle.c) under each allocator that
bench/allocators.py finds, allocators alternating inside each repetition,
and prints a Markdown table of the medians: resident MiB at the burst's
peak and at each idle time after the last free.  Not part of `make bench`
(its times are sleeps, not work); the committed figures came from

    python3 bench/idle.py --reps 3 --out bench/results/<dir>/idle.md

usage: idle.py [--build-dir build] [--mib 1024] [--at 200,1000,5000]
               [--reps 3] [--allocs a,b] [--alloc NAME=PATH] [--out FILE]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import allocators  # noqa: E402


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--at", default="200,1000,5000", help="idle times in ms")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--allocs", help="comma-separated subset")
    ap.add_argument("--alloc", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--out", help="also write the table here")
    return ap.parse_args(argv)


def run_once(binary, alloc, mib, at):
    """One run: the probe's JSON line as a dict (raises on failure)."""
    r = subprocess.run([binary, "mib=%d" % mib, "at=%s" % at], env=alloc.env(os.environ),
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (alloc.name, r.returncode, r.stderr.strip()))
    return json.loads(r.stdout.strip().splitlines()[-1])


def table(results, times):
    """Markdown: one row per allocator, medians over the repetitions."""
    head = "| allocator | peak | " + " | ".join("%d ms" % t for t in times) + " |"
    lines = [head, "|" + "---|" * (2 + len(times))]
    for name, runs in results.items():
        cells = ["%.0f" % statistics.median(r["rss_peak_mib"] for r in runs)]
        for t in times:
            cells.append("%.0f" % statistics.median(r["rss_%dms_mib" % t] for r in runs))
        lines.append("| %s | %s |" % (name, " | ".join(cells)))
    return "\n".join(lines) + "\n"


def main(argv):
    args = parse_args(argv)
    binary = os.path.join(args.build_dir, "bench", "idle")
    if not os.path.exists(binary):
        sys.exit("idle.py: %s not found (run make first)" % binary)
    extra = args.alloc
    only = args.allocs.split(",") if args.allocs else None
    found, missing, _ = allocators.discover(args.build_dir, extra=extra, only=only,
                                            install=False, log=lambda s: None)
    for name, _, why in missing:
        print("idle.py: %s not measured: %s" % (name, why), file=sys.stderr)
    times = [int(t) for t in args.at.split(",")]
    results = {a.name: [] for a in found}
    for rep in range(args.reps):
        for a in found:
            results[a.name].append(run_once(binary, a, args.mib, args.at))
            print("rep %d %s done" % (rep + 1, a.name), file=sys.stderr)
    text = ("Resident MiB of the idle probe (bench/idle.c: %d MiB in mixed objects, all "
            "freed, then no allocator call), medians of %d runs:\n\n" % (args.mib, args.reps))
    text += table(results, times)
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
