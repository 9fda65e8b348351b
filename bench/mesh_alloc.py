#!/usr/bin/env python3
"""The mesh workload in the four configurations of the mesh-generation
allocator study: malloc (on every allocator found), the application's own
custom pools (blocks from mmap), the same pools on mmalloc's page blocks
(custom+pageman), and mmalloc's object pools (pool; pool with
mm_pool_free_unchecked; pool with MMALLOC_HUGEPAGES=0, whose big pools'
2 MiB blocks are not advised huge).

Runs <build>/bench/mesh (alloc=0, each allocator preloaded) and
<build>/bench/mesh-mm (linked with mmalloc: alloc=1 to 4), every
configuration once per repetition, in an order that rotates from one
repetition to the next, and prints a Markdown table of medians: wall time,
its ratio to `custom` at the same thread count, peak RSS, and minor page
faults (from the child's rusage).  Every run's checksum must equal the
others' at the same thread count (the mesh does not depend on where its
objects come from).  Not part of `make bench`; the committed figures came
from

    python3 bench/mesh_alloc.py --reps 5 --out bench/results/<dir>/mesh_alloc.md

usage: mesh_alloc.py [--build-dir build] [--threads 1,2,32]
                     [--triangles 1000000] [--reps 5] [--allocs a,b] [--out FILE]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import allocators  # noqa: E402

MM_MODES = [(1, "custom"), (2, "custom+pageman"), (3, "pool"), (4, "pool, unchecked free")]


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--threads", default="1,2,32")
    ap.add_argument("--triangles", type=int, default=1000000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--allocs", help="comma-separated subset for the malloc rows")
    ap.add_argument("--out", help="also write the table here")
    return ap.parse_args(argv)


def run_measured(cmd, env):
    """One run with its rusage: (JSON dict, minor faults)."""
    r, w = os.pipe()
    e = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(w, 1)
        os.dup2(e[1], 2)
        os.close(r)
        os.close(e[0])
        try:
            os.execve(cmd[0], cmd, env)
        finally:
            os._exit(127)
    os.close(w)
    os.close(e[1])
    with os.fdopen(r) as f, os.fdopen(e[0]) as g:
        out = f.read()
        err = g.read()
    _, status, ru = os.wait4(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        raise RuntimeError("%s: status %d: %s" % (" ".join(cmd), status, err.strip()))
    return json.loads(out.strip().splitlines()[-1]), ru.ru_minflt


def emit(title, lines, out):
    """Print the table under its title, and write it to out (if given)."""
    text = title + "\n\n" + "\n".join(lines) + "\n"
    print(text)
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            f.write(text)


def configs(build, allocs):
    """[(label, argv prefix, alloc value, environment)]."""
    out = []
    mesh = os.path.join(build, "bench", "mesh")
    mesh_mm = os.path.join(build, "bench", "mesh-mm")
    for a in allocs:
        out.append(("malloc: %s" % a.name, mesh, 0, a.env(os.environ)))
    base = dict(os.environ)
    base.pop("LD_PRELOAD", None)
    for value, name in MM_MODES:
        out.append((name + " (mmalloc)", mesh_mm, value, base))
    # the pools without their 2 MiB blocks advised huge: what the advice buys
    out.append(("pool, MMALLOC_HUGEPAGES=0 (mmalloc)", mesh_mm, 3,
                dict(base, MMALLOC_HUGEPAGES="0")))
    return out


def main(argv):
    args = parse_args(argv)
    build = os.path.abspath(args.build_dir)
    only = args.allocs.split(",") if args.allocs else None
    allocs, missing, _ = allocators.discover(build, only=only, install=False,
                                             log=lambda m: print(m, file=sys.stderr))
    for name, _, why in missing:
        print("not measured: %s (%s)" % (name, why), file=sys.stderr)
    cfgs = configs(build, allocs)
    threads = [int(t) for t in args.threads.split(",")]
    results = {}
    sums = {}
    for rep in range(args.reps):
        for t in threads:
            k = rep % len(cfgs)
            for label, binary, value, env in cfgs[k:] + cfgs[:k]:
                cmd = [binary, "threads=%d" % t, "triangles=%d" % args.triangles,
                       "alloc=%d" % value]
                r, faults = run_measured(cmd, env)
                if sums.setdefault(t, r["checksum"]) != r["checksum"]:
                    raise RuntimeError("%s: checksum %s, others %s" % (label, r["checksum"], sums[t]))
                results.setdefault((label, t), []).append((r["seconds"], r["maxrss_kb"], faults))
        print("repetition %d of %d done" % (rep + 1, args.reps), file=sys.stderr)
    lines = ["| configuration | threads | time (s) | / custom | peak RSS (MiB) | minor faults |",
             "|---|---|---|---|---|---|"]
    for t in threads:
        ref = statistics.median(s for s, _, _ in results[("custom (mmalloc)", t)])
        for label, _, _, _ in cfgs:
            runs = results[(label, t)]
            sec = statistics.median(s for s, _, _ in runs)
            rss = statistics.median(m for _, m, _ in runs) / 1024
            flt = statistics.median(f for _, _, f in runs)
            lines.append("| %s | %d | %.3f | %.2f | %.1f | %.0f |" % (label, t, sec, sec / ref,
                                                                      rss, flt))
    emit("mesh, %d triangles in all, medians of %d repetitions" % (args.triangles, args.reps),
         lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
