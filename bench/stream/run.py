#!/usr/bin/env python3
"""bench/stream/run.py — runs the streaming module's micro-benchmarks and
writes CSV, PNG plots and a markdown report.

Owns the benchmark grid of mmstream_bench (bench/stream/stream_bench.c):
  queue   put/get cost, lock-free vs mutex queue, 2 threads and uncontended;
  farm    speedup vs task grain (0.5, 5, 50 us) for 1..N workers, including
          oversubscribed counts, lock-free vs mutex (the FastFlow paper's
          Figure 3);
  alloc   allocation over queues: MM_ALLOC_RETURN vs MM_ALLOC_PLAIN on the
          same farm workload, on glibc and every peer allocator installed,
          and on mmalloc (build/libmmalloc.so) when it exists, each brought
          in by LD_PRELOAD.

Every configuration runs --reps times; runs of the compared variants are
interleaved inside each repetition so that machine noise hits them alike;
tables report medians.  The 1-minute load average is recorded with every
run: on a shared machine, read speedups with it.

Usage:
  python3 bench/stream/run.py [--quick | --full] [--out DIR] [--bin PATH]
         [--only queue,farm,alloc] [--reps N] [--alloc NAME=PATH ...]
         [--allocators glibc,jemalloc,...] [--mmalloc PATH]
  python3 bench/stream/run.py --plot-only DIR     # redo plots/report from CSV

Output (default bench/results/stream-YYYYMMDD-HHMM/): queue.csv, farm.csv,
alloc.csv (one row per run), summary_*.csv (medians), queue.png,
farm_speedup.png, alloc.png, report.md, machine.txt.  Needs Python 3 and
matplotlib (plots are skipped with a note when matplotlib is missing).
"""

import argparse
import csv
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

PEERS = [  # name, preload library (None: the C library's malloc)
    ("glibc", None),
    ("jemalloc", "libjemalloc.so.2"),
    ("tcmalloc", "libtcmalloc_minimal.so.4"),
    ("mimalloc", "libmimalloc.so.2"),
    ("tbbmalloc", "libtbbmalloc_proxy.so.2"),
]
LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/local/lib", "/usr/lib"]

GRAINS = [0.5, 5.0, 50.0]


def find_bin(explicit):
    cands = [explicit] if explicit else [
        os.path.join(ROOT, d, "bench", "mmstream_bench")
        for d in ("build", "build-stream", "build-release")]
    for c in cands:
        if c and os.access(c, os.X_OK):
            return c
    sys.exit("mmstream_bench not found (build it: cmake --build build "
             "--target mmstream_bench), or pass --bin")


def find_allocators(args):
    allocs = []
    wanted = set(args.allocators.split(",")) if args.allocators else None
    for name, lib in PEERS:
        if wanted and name not in wanted:
            continue
        if lib is None:
            allocs.append((name, None))
            continue
        path = next((os.path.join(d, lib) for d in LIB_DIRS
                     if os.path.exists(os.path.join(d, lib))), None)
        if path:
            allocs.append((name, path))
        else:
            print("note: %s not installed (%s), skipped" % (name, lib), file=sys.stderr)
    mm = args.mmalloc or os.path.join(ROOT, "build", "libmmalloc.so")
    if (not wanted or "mmalloc" in wanted) and os.path.exists(mm):
        allocs.append(("mmalloc", os.path.abspath(mm)))
    for spec in args.alloc or []:
        name, _, path = spec.partition("=")
        allocs.append((name, os.path.abspath(path)))
    return allocs


def loadavg():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def run(binary, argv, preload=None, timeout=600):
    """One run: the JSON line, plus load and status; None fields on failure."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload
    load = loadavg()
    try:
        p = subprocess.run([binary] + argv, env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "load1": load}
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"status": "crash rc=%d" % p.returncode, "load1": load,
                "stderr": p.stderr.strip()[-300:]}
    row = json.loads(lines[-1])
    row["status"] = "ok" if row.get("ok", 1) else "bad"
    if preload and not row.get("preload_mapped", 1):
        row["status"] = "preload not loaded"
    row["load1"] = load
    return row


def write_csv(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def median(vals):
    vals = [float(v) for v in vals if v not in ("", None)]
    return statistics.median(vals) if vals else float("nan")


def progress(msg):
    print(msg, file=sys.stderr, flush=True)


# ---- the grid ------------------------------------------------------------------

def bench_queue(binary, p, reps):
    rows = []
    for rep in range(reps):
        for cap in p["queue_caps"]:
            for kind in ("lockfree", "mutex"):
                r = run(binary, ["queue", "--kind", kind, "--items", str(p["queue_items"]),
                                 "--capacity", str(cap)])
                r.update(rep=rep, kind=kind, capacity=cap)
                rows.append(r)
                progress("queue %-8s cap %5d rep %d: %s ns/item" %
                         (kind, cap, rep, r.get("ns_per_item", r["status"])))
    return rows


def bench_farm(binary, p, reps):
    rows = []
    for rep in range(reps):
        for grain in GRAINS:
            tasks = max(1000, int(p["farm_work_s"] * 1e6 / grain))
            for n in p["workers"]:
                for kind in ("lockfree", "mutex"):
                    r = run(binary, ["farm", "--kind", kind, "--workers", str(n),
                                     "--grain-us", str(grain), "--tasks", str(tasks),
                                     "--sched", "rr"])
                    r.update(rep=rep, kind=kind, workers=n, grain_us=grain)
                    rows.append(r)
                    progress("farm %-8s grain %5.1f n=%d rep %d: speedup %s (load %.1f)" %
                             (kind, grain, n, rep, r.get("speedup", r["status"]), r["load1"]))
    return rows


def bench_alloc(binary, p, reps, allocators):
    rows = []
    for rep in range(reps):
        for name, lib in allocators:
            for n in p["alloc_workers"]:
                for cf in (0, 1):
                    for mode in ("return", "plain"):
                        r = run(binary, ["alloc", "--mode", mode, "--kind", "lockfree",
                                         "--workers", str(n), "--tasks", str(p["alloc_tasks"]),
                                         "--grain-us", str(p["alloc_grain"]),
                                         "--min", "64", "--max", "512",
                                         "--collector-frees", str(cf)], preload=lib)
                        r.update(rep=rep, allocator=name, mode=mode, workers=n,
                                 collector_frees=cf)
                        rows.append(r)
                        progress("alloc %-9s %-6s n=%d coll=%d rep %d: %s Mtasks/s" %
                                 (name, mode, n, cf, rep, r.get("mtasks_per_s", r["status"])))
    return rows


QUEUE_FIELDS = ["rep", "kind", "capacity", "items", "ns_per_item", "put_ns", "get_ns",
                "status", "load1"]
FARM_FIELDS = ["rep", "kind", "sched", "workers", "grain_us", "tasks", "seq_s", "farm_s",
               "speedup", "us_per_task", "cpu_s", "parks", "status", "load1"]
ALLOC_FIELDS = ["rep", "allocator", "mode", "workers", "collector_frees", "tasks",
                "grain_us", "seconds", "ns_per_task", "cpu_ns_per_task", "parks",
                "mtasks_per_s", "max_rss_kb",
                "returned", "freed", "status", "load1", "stderr"]


# ---- summaries, plots, report ---------------------------------------------------

def ok_rows(rows):
    return [r for r in rows if r.get("status") == "ok"]


def paired_ratio(rows, key):
    """Median over repetitions of return/plain throughput, each pair run back
    to back (same allocator, workers, collector): slow drift of the machine's
    load cancels out of each ratio.  Only on the "return" row."""
    if key[3] != "return":
        return ""
    by = {}
    for r in ok_rows(rows):
        if (r["allocator"], int(r["workers"]), int(r["collector_frees"])) == key[:3]:
            by.setdefault(r["rep"], {})[r["mode"]] = float(r["mtasks_per_s"])
    ratios = [d["return"] / d["plain"] for d in by.values()
              if "return" in d and d.get("plain")]
    return statistics.median(ratios) if ratios else float("nan")


def summarize(out):
    q = ok_rows(read_csv(os.path.join(out, "queue.csv")))
    f = ok_rows(read_csv(os.path.join(out, "farm.csv")))
    a = read_csv(os.path.join(out, "alloc.csv"))
    sq, sf, sa = [], [], []
    for key in sorted({(r["kind"], int(r["capacity"])) for r in q}):
        rs = [r for r in q if (r["kind"], int(r["capacity"])) == key]
        sq.append({"kind": key[0], "capacity": key[1], "runs": len(rs),
                   "ns_per_item": median(r.get("ns_per_item") for r in rs),
                   "put_ns": median(r.get("put_ns") for r in rs),
                   "get_ns": median(r.get("get_ns") for r in rs)})
    for key in sorted({(r["kind"], float(r["grain_us"]), int(r["workers"])) for r in f}):
        rs = [r for r in f if (r["kind"], float(r["grain_us"]), int(r["workers"])) == key]
        sf.append({"kind": key[0], "grain_us": key[1], "workers": key[2], "runs": len(rs),
                   "speedup": median(r.get("speedup") for r in rs),
                   "us_per_task": median(r.get("us_per_task") for r in rs),
                   "load1": median(r.get("load1") for r in rs)})
    keys = []
    for r in a:
        k = (r["allocator"], int(r["workers"]), int(r["collector_frees"]), r["mode"])
        if k not in keys:
            keys.append(k)
    for k in keys:
        rs = [r for r in a if (r["allocator"], int(r["workers"]),
                               int(r["collector_frees"]), r["mode"]) == k]
        good = ok_rows(rs)
        sa.append({"allocator": k[0], "workers": k[1], "collector_frees": k[2], "mode": k[3],
                   "runs": len(good), "failed": len(rs) - len(good),
                   "mtasks_per_s": median(r.get("mtasks_per_s") for r in good),
                   "ns_per_task": median(r.get("ns_per_task") for r in good),
                   "cpu_ns_per_task": median(r.get("cpu_ns_per_task") for r in good),
                   "max_rss_kb": median(r.get("max_rss_kb") for r in good),
                   "paired_ratio": paired_ratio(a, k),
                   "failures": "; ".join(sorted({r["status"] for r in rs if r["status"] != "ok"}))})
    write_csv(os.path.join(out, "summary_queue.csv"), sq, list(sq[0]) if sq else ["kind"])
    write_csv(os.path.join(out, "summary_farm.csv"), sf, list(sf[0]) if sf else ["kind"])
    write_csv(os.path.join(out, "summary_alloc.csv"), sa, list(sa[0]) if sa else ["allocator"])
    return sq, sf, sa


def plot(out, sq, sf, sa):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib missing: no plots"
    if sq:
        caps = sorted({r["capacity"] for r in sq})
        fig, ax = plt.subplots(figsize=(7, 4))
        labels, width = ["2 threads\n(per item)", "put\n(uncontended)", "get\n(uncontended)"], 0.2
        i = 0
        for kind, hatch in (("lockfree", ""), ("mutex", "//")):
            for cap in caps:
                r = next((x for x in sq if x["kind"] == kind and x["capacity"] == cap), None)
                if not r:
                    continue
                vals = [r["ns_per_item"], r["put_ns"], r["get_ns"]]
                ax.bar([j + i * width for j in range(3)], vals, width, hatch=hatch,
                       label="%s, capacity %d" % (kind, cap))
                i += 1
        ax.set_xticks([j + width * (i - 1) / 2 for j in range(3)])
        ax.set_xticklabels(labels)
        ax.set_ylabel("ns")
        ax.set_title("Queue put/get cost: lock-free SPSC vs mutex + condvar")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "queue.png"), dpi=120)
        plt.close(fig)
    if sf:
        fig, ax = plt.subplots(figsize=(7, 5))
        colors = {0.5: "tab:red", 5.0: "tab:blue", 50.0: "tab:green"}
        maxw = max(r["workers"] for r in sf)
        for kind, style in (("lockfree", "-o"), ("mutex", "--s")):
            for g in GRAINS:
                rs = sorted((r for r in sf if r["kind"] == kind and r["grain_us"] == g),
                            key=lambda r: r["workers"])
                if rs:
                    ax.plot([r["workers"] for r in rs], [r["speedup"] for r in rs], style,
                            color=colors[g], label="%s, %g us" % (kind, g))
        ncpu = os.cpu_count() or 1
        xs = sorted({r["workers"] for r in sf})
        ax.plot(xs, [min(x, ncpu) for x in xs], ":", color="gray",
                label="ideal: min(workers, CPUs)")
        ax.axvline(ncpu, color="gray", lw=0.8)
        ax.text(ncpu, 0.1, " %d CPUs" % ncpu, fontsize=8, color="gray")
        ax.set_xlabel("workers (plus emitter thread)")
        ax.set_ylabel("speedup vs sequential")
        ax.set_title("Farm speedup vs task grain (cf. FastFlow Fig. 3)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8, ncol=2)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "farm_speedup.png"), dpi=120)
        plt.close(fig)
    if sa:
        allocs = []
        for r in sa:
            if r["allocator"] not in allocs:
                allocs.append(r["allocator"])
        ws = sorted({r["workers"] for r in sa})
        cfs = sorted({r["collector_frees"] for r in sa})
        fig, axes = plt.subplots(len(cfs), len(ws), figsize=(3.6 * len(ws), 3.4 * len(cfs)),
                                 squeeze=False)
        for row, cf in enumerate(cfs):
            for col, n in enumerate(ws):
                ax = axes[row][col]
                for j, mode in enumerate(("return", "plain")):
                    vals = []
                    for al in allocs:
                        r = next((x for x in sa if x["allocator"] == al and x["workers"] == n
                                  and x["collector_frees"] == cf and x["mode"] == mode), None)
                        vals.append(r["mtasks_per_s"] if r and r["runs"] else 0)
                    ax.bar([i + j * 0.4 for i in range(len(allocs))], vals, 0.4,
                           label="return channels" if mode == "return" else "plain free")
                ax.set_xticks([i + 0.2 for i in range(len(allocs))])
                ax.set_xticklabels(allocs, rotation=40, fontsize=8)
                ax.set_title("%d worker%s, %s" % (n, "s" if n > 1 else "",
                                                  "collector frees half" if cf
                                                  else "workers free"), fontsize=9)
                if col == 0:
                    ax.set_ylabel("Mtasks/s (median)")
        axes[0][0].legend(fontsize=8)
        fig.suptitle("Allocation over queues: emitter allocates 64-512 B, others free")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "alloc.png"), dpi=120)
        plt.close(fig)
    return ""


def report(out, sq, sf, sa, note):
    lines = ["# Streaming module micro-benchmarks", ""]
    mach = os.path.join(out, "machine.txt")
    if os.path.exists(mach):
        lines += ["```", open(mach).read().strip(), "```", ""]
    if note:
        lines += ["Note: " + note, ""]
    if sq:
        lines += ["## Queue put/get (ns, medians)", "",
                  "| kind | capacity | 2 threads, per item | put (uncontended) | get (uncontended) |",
                  "|---|---|---|---|---|"]
        for r in sq:
            lines.append("| %s | %d | %.1f | %.1f | %.1f |" % (
                r["kind"], r["capacity"], r["ns_per_item"], r["put_ns"], r["get_ns"]))
        lines.append("")
    if sf:
        ws = sorted({r["workers"] for r in sf})
        lines += ["## Farm speedup vs grain (medians; load = 1-min load average)", "",
                  "| kind | grain (us) | " + " | ".join("n=%d" % w for w in ws) + " | load |",
                  "|---|---|" + "---|" * (len(ws) + 1)]
        for kind in ("lockfree", "mutex"):
            for g in GRAINS:
                rs = {r["workers"]: r for r in sf if r["kind"] == kind and r["grain_us"] == g}
                if rs:
                    lines.append("| %s | %g | %s | %.1f |" % (
                        kind, g, " | ".join("%.2f" % rs[w]["speedup"] if w in rs else "-"
                                            for w in ws),
                        median(r.get("load1") for r in rs.values())))
        lines.append("")
    if sa:
        lines += ["## Allocation over queues (Mtasks/s, medians)", "",
                  "| allocator | workers | collector frees half | return channels | plain free "
                  "| return/plain (paired median) | failures |",
                  "|---|---|---|---|---|---|---|"]
        seen = []
        for r in sa:
            k = (r["allocator"], r["workers"], r["collector_frees"])
            if k in seen:
                continue
            seen.append(k)
            ret = next((x for x in sa if (x["allocator"], x["workers"], x["collector_frees"]) == k
                        and x["mode"] == "return"), None)
            pl = next((x for x in sa if (x["allocator"], x["workers"], x["collector_frees"]) == k
                       and x["mode"] == "plain"), None)
            rv = ret["mtasks_per_s"] if ret and ret["runs"] else float("nan")
            pv = pl["mtasks_per_s"] if pl and pl["runs"] else float("nan")
            fails = "; ".join(x["failures"] for x in (ret, pl) if x and x["failures"])
            ratio = ret.get("paired_ratio") if ret else None
            ratio = float(ratio) if ratio not in ("", None) else float("nan")
            lines.append("| %s | %d | %s | %.3f | %.3f | %.2f | %s |" % (
                k[0], k[1], "yes" if k[2] else "no", rv, pv, ratio, fails))
        lines.append("")
        lines += ["Per allocator, geometric mean of the paired ratios over all "
                  "configurations (> 1: return channels faster):", ""]
        allocs = []
        for r in sa:
            if r["allocator"] not in allocs:
                allocs.append(r["allocator"])
        for al in allocs:
            rs = [float(r["paired_ratio"]) for r in sa if r["allocator"] == al and
                  r["mode"] == "return" and r.get("paired_ratio") not in ("", None)]
            rs = [x for x in rs if x == x and x > 0]
            if rs:
                gm = 1.0
                for x in rs:
                    gm *= x
                gm **= 1.0 / len(rs)
                lines.append("- %s: %.2f (%d configurations)" % (al, gm, len(rs)))
        lines.append("")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines))


def machine(out, binary):
    info = ["date: %s" % datetime.datetime.now().isoformat(timespec="seconds"),
            "host: %s %s" % (platform.node(), platform.platform()),
            "cpus: %d" % (os.cpu_count() or 0)]
    try:
        model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                     if l.startswith("model name"))
        info.append("cpu: " + model)
    except (OSError, StopIteration):
        pass
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain"],
                               capture_output=True, text=True).stdout.strip()
        info.append("commit: %s%s" % (commit, " (+ uncommitted changes)" if dirty else ""))
    except OSError:
        pass
    info.append("binary: %s" % binary)
    info.append("load average at start: %.2f" % loadavg())
    with open(os.path.join(out, "machine.txt"), "w") as f:
        f.write("\n".join(info) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a couple of minutes (default)")
    ap.add_argument("--full", action="store_true", help="more tasks and repetitions")
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--bin", help="path of mmstream_bench")
    ap.add_argument("--only", default="queue,farm,alloc")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--allocators", help="comma list among glibc,jemalloc,tcmalloc,"
                    "mimalloc,tbbmalloc,mmalloc (default: all found)")
    ap.add_argument("--mmalloc", help="libmmalloc.so (default build/libmmalloc.so)")
    ap.add_argument("--alloc", action="append", help="extra allocator NAME=PATH")
    ap.add_argument("--plot-only", metavar="DIR", help="redo summaries/plots/report")
    args = ap.parse_args()

    if args.plot_only:
        sq, sf, sa = summarize(args.plot_only)
        report(args.plot_only, sq, sf, sa, plot(args.plot_only, sq, sf, sa))
        print(args.plot_only)
        return

    binary = find_bin(args.bin)
    ncpu = os.cpu_count() or 2
    if args.full:
        p = dict(queue_items=5000000, queue_caps=[64, 1024], farm_work_s=0.5,
                 workers=sorted({1, 2, 3, 4, ncpu, 2 * ncpu, 4 * ncpu}),
                 alloc_tasks=1000000, alloc_workers=[1, 2, 4, 8], alloc_grain=0)
        reps = args.reps or 5
    else:
        p = dict(queue_items=1000000, queue_caps=[512], farm_work_s=0.1,
                 workers=sorted({1, 2, 3, 4, 4 * ncpu}),
                 alloc_tasks=200000, alloc_workers=[1, 2, 4], alloc_grain=0)
        reps = args.reps or 3
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M")
    out = args.out or os.path.join(ROOT, "bench", "results", "stream-" + stamp)
    os.makedirs(out, exist_ok=True)
    machine(out, binary)
    only = set(args.only.split(","))
    if "queue" in only:
        write_csv(os.path.join(out, "queue.csv"), bench_queue(binary, p, reps), QUEUE_FIELDS)
    if "farm" in only:
        write_csv(os.path.join(out, "farm.csv"), bench_farm(binary, p, reps), FARM_FIELDS)
    if "alloc" in only:
        allocs = find_allocators(args)
        write_csv(os.path.join(out, "alloc.csv"), bench_alloc(binary, p, reps, allocs),
                  ALLOC_FIELDS)
    sq, sf, sa = summarize(out)
    report(out, sq, sf, sa, plot(out, sq, sf, sa))
    with open(os.path.join(out, "machine.txt"), "a") as f:
        f.write("load average at end: %.2f\n" % loadavg())
    print(out)


if __name__ == "__main__":
    main()
