#!/usr/bin/env python3
"""Dropping a large pointer structure whole: <build>/bench/release
(bench/release.c) with each way of dropping it, free() of every object,
mm_pool_release, mm_heap_destroy, and mm_heap_free of every object, the
modes alternating inside each repetition (rotating the order), and a
Markdown table of medians: the drop time, its speed-up over free(), the
build time, peak RSS and minor faults.  Every run's checksum must be the
same (the structure does not depend on where it lives).  Not part of
`make bench`; the committed figures came from

    python3 bench/release.py --reps 5 --out bench/results/<dir>/release.md

usage: release.py [--build-dir build] [--threads 1,2] [--objects 1000000]
                  [--tasks 3] [--reps 5] [--out FILE]
"""

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mesh_alloc import emit, run_measured  # noqa: E402

MODES = [(0, "free() each"), (1, "mm_pool_release"), (2, "mm_heap_destroy"),
         (3, "mm_heap_free each")]


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--objects", type=int, default=1000000)
    ap.add_argument("--tasks", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", help="also write the table here")
    return ap.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    binary = os.path.join(os.path.abspath(args.build_dir), "bench", "release")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    threads = [int(t) for t in args.threads.split(",")]
    results, sums = {}, {}
    for rep in range(args.reps):
        for t in threads:
            k = rep % len(MODES)
            for value, name in MODES[k:] + MODES[:k]:
                cmd = [binary, "threads=%d" % t, "objects=%d" % args.objects,
                       "tasks=%d" % args.tasks, "drop=%d" % value]
                r, faults = run_measured(cmd, env)
                if sums.setdefault(t, r["checksum"]) != r["checksum"]:
                    raise RuntimeError("%s: checksum %s, others %s" % (name, r["checksum"], sums[t]))
                results.setdefault((name, t), []).append(
                    (r["seconds"], r["build_seconds"], r["maxrss_kb"], faults))
        print("repetition %d of %d done" % (rep + 1, args.reps), file=sys.stderr)
    lines = ["| drop | threads | drop time (s) | speed-up over free() | build time (s) | "
             "peak RSS (MiB) | minor faults |", "|---|---|---|---|---|---|---|"]
    for t in threads:
        ref = statistics.median(r[0] for r in results[("free() each", t)])
        for _, name in MODES:
            runs = results[(name, t)]
            med = [statistics.median(r[i] for r in runs) for i in range(4)]
            lines.append("| %s | %d | %.4f | %.0fx | %.2f | %.1f | %.0f |" % (
                name, t, med[0], ref / med[0], med[1], med[2] / 1024, med[3]))
    emit("release: %d tasks per thread, each a tree of %d nodes (two allocations each), "
         "medians of %d repetitions" % (args.tasks, args.objects, args.reps), lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
