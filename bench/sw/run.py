#!/usr/bin/env python3
"""bench/sw/run.py — GCUPS of the Smith-Waterman test-bed (build/mmsw) on
the farm, after the FastFlow paper's Figure 4 ([FastFlow] in
docs/sources.md, section 3.2: SWPS3 on pipes vs on FastFlow queues).

What it measures, on one synthetic Swiss-Prot-like database made by
tools/gen_protein_db.py (fixed seed), for queries of 100, 500, 1000 and
5000 residues taken from families of that database:

  - mmsw on the farm: -t 1, 2, 4, 8 workers (this machine has 2 cores, so
    4 and 8 are oversubscribed; the farm adds an emitter and a collector
    thread) x --queue lockfree / mutex;
  - mmsw --serial: the same kernel with no farm and no queue (the baseline
    a farm has to beat);
  - parasail_aligner (Debian's parasail, OpenMP) on the same files:
    sw_striped_profile_sat (8-bit striped, 16-bit on saturation, one
    profile per query: the closest to mmsw), -t 1, 2, and the machine's
    oversubscribed 4.

GCUPS = query length x database residues / seconds.  Two clocks: "wall" is
the whole process, start to exit, for every program (parasail reads the
whole database before aligning, mmsw streams it); "run" is mmsw's own
figure (from its summary line: farm start to farm end, which includes
reading the database, as the emitter reads it while workers align).
Each configuration runs --reps times; the runs are interleaved (one round
over all configurations, then the next) so that a noisy neighbour hurts
every configuration alike, and the median is reported.

Output (--out, default bench/results/sw-YYYYMMDD-HHMM/): results.csv (every
run), summary.csv (medians), report.md (tables + machine), gcups.png.

  python3 bench/sw/run.py --quick      # ~2-3 minutes
  python3 bench/sw/run.py              # the full run, ~10-15 minutes
Needs: build/mmsw (make), python3; matplotlib for the plot (skipped with a
note if missing); parasail_aligner for the reference rows (skipped with a
note if missing).
"""
import argparse
import csv
import datetime
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(ROOT, "tools", "gen_protein_db.py")

SUMMARY_RE = re.compile(
    r"mmsw: (\d+) sequences, (\d+) residues, query (\d+), cells ([0-9.e+]+), "
    r"([0-9.]+) s, ([0-9.]+) GCUPS \((\w+), 8-bit ([0-9.]+)%")


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout.strip()
    except OSError:
        return ""


def machine_description():
    lines = []
    model = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2")
    lines.append("cpu: %s" % model.strip())
    lines.append("online cpus: %s" % os.cpu_count())
    flags = sh("grep -m1 flags /proc/cpuinfo")
    lines.append("simd: %s" % " ".join(f for f in ("sse2", "avx2", "avx512bw")
                                       if " %s" % f in flags))
    lines.append("kernel: %s" % platform.release())
    lines.append("load average at start: %s" % " ".join(str(round(x, 2)) for x in os.getloadavg()))
    lines.append("commit: %s%s" % (sh("git -C %s rev-parse --short HEAD" % ROOT),
                                   " (+ uncommitted changes)" if sh(
                                       "git -C %s status --porcelain" % ROOT) else ""))
    lines.append("parasail: %s" % (sh("dpkg-query -W -f '${Version}' parasail") or "absent"))
    lines.append("date: %s" % datetime.datetime.now().isoformat(timespec="seconds"))
    return lines


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_mmsw(mmsw, query, db, args):
    c0 = children_cpu()
    t0 = time.perf_counter()
    p = subprocess.run([mmsw, "-q", query, "-d", db] + args, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    cpu = children_cpu() - c0
    if p.returncode != 0:
        raise RuntimeError("mmsw failed: %s" % p.stderr)
    m = SUMMARY_RE.search(p.stderr)
    if not m:
        raise RuntimeError("no summary line in: %s" % p.stderr)
    cells = float(m.group(4))
    return {"cells": cells, "wall_s": wall, "run_s": float(m.group(5)), "cpu_s": cpu,
            "isa": m.group(7), "pct8": float(m.group(8))}


def run_parasail(parasail, query, db, threads, cells, work):
    out_csv = os.path.join(work, "parasail.csv")
    c0 = children_cpu()
    t0 = time.perf_counter()
    # An open, empty stdin: parasail_aligner polls stdin for an extra input.
    p = subprocess.Popen([parasail, "-x", "-a", "sw_striped_profile_sat", "-m", "blosum50",
                          "-o", "10", "-e", "2", "-t", str(threads), "-f", db, "-q", query,
                          "-g", out_csv], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    _, err = p.communicate()
    wall = time.perf_counter() - t0
    cpu = children_cpu() - c0
    if p.returncode != 0:
        raise RuntimeError("parasail_aligner failed: %s" % err)
    return {"cells": cells, "wall_s": wall, "run_s": float("nan"), "cpu_s": cpu,
            "isa": "parasail",
            "pct8": float("nan")}


def main():
    ap = argparse.ArgumentParser(description="GCUPS of build/mmsw (farm vs mutex queues)")
    ap.add_argument("--quick", action="store_true", help="small database, 2 reps (~2-3 min)")
    ap.add_argument("--mmsw", default=os.path.join(ROOT, "build", "mmsw"))
    ap.add_argument("--out", help="output directory (default bench/results/sw-DATE)")
    ap.add_argument("--sequences", type=int, help="database sequences (quick 5000, full 20000)")
    ap.add_argument("--reps", type=int, help="runs per configuration (quick 2, full 3)")
    ap.add_argument("--queries", default="100,500,1000,5000")
    ap.add_argument("--threads", default="1,2,4,8")
    ap.add_argument("--parasail-threads", default="1,2,4")
    args = ap.parse_args()
    nseq = args.sequences or (5000 if args.quick else 20000)
    reps = args.reps or (2 if args.quick else 3)
    qlens = [int(x) for x in args.queries.split(",")]
    threads = [int(x) for x in args.threads.split(",")]
    pthreads = [int(x) for x in args.parasail_threads.split(",")]
    if not os.access(args.mmsw, os.X_OK):
        sys.exit("bench/sw: %s not found: build it first (make)" % args.mmsw)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M")
    out = args.out or os.path.join(ROOT, "bench", "results", "sw-" + stamp)
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="mmsw-bench-")  # the data: not kept
    parasail = shutil.which("parasail_aligner")
    if parasail is None:
        print("bench/sw: parasail_aligner not installed: no reference rows", file=sys.stderr)

    # ---- data ------------------------------------------------------------
    seed = 2009  # the year of the paper
    db = os.path.join(work, "db.fa")
    subprocess.run([sys.executable, GEN, "-n", str(nseq), "--seed", str(seed), "-o", db],
                   check=True)
    queries = {}
    for q in qlens:
        queries[q] = os.path.join(work, "q%d.fa" % q)
        subprocess.run([sys.executable, GEN, "-n", str(nseq), "--seed", str(seed),
                        "--query", str(q), "-o", queries[q]], check=True)
    residues = 0
    with open(db) as f:
        for line in f:
            if not line.startswith(">"):
                residues += len(line) - 1
    print("bench/sw: database %d sequences, %d residues; queries %s; %d reps"
          % (nseq, residues, qlens, reps), file=sys.stderr)

    # ---- configurations ----------------------------------------------------
    configs = []  # (program, queue, threads, args)
    configs.append(("mmsw", "serial", 1, ["--serial"]))
    for t in threads:
        for queue in ("lockfree", "mutex"):
            configs.append(("mmsw", queue, t, ["-t", str(t), "--queue", queue]))
    if parasail:
        for t in pthreads:
            configs.append(("parasail", "openmp", t, None))

    rows = []
    csv_path = os.path.join(out, "results.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["program", "queue", "threads", "query", "rep", "cells", "wall_s", "run_s",
                    "cpu_s", "gcups_wall", "gcups_run", "gcells_per_cpu_s", "isa", "pct_8bit",
                    "loadavg1"])
        t_start = time.time()
        loads = []
        for rep in range(reps):
            for q in qlens:
                for prog, queue, t, a in configs:
                    cells = float(q) * residues
                    if prog == "mmsw":
                        r = run_mmsw(args.mmsw, queries[q], db, a)
                    else:
                        r = run_parasail(parasail, queries[q], db, t, cells, work)
                    row = {"program": prog, "queue": queue, "threads": t, "query": q,
                           "rep": rep, "cells": r["cells"], "wall_s": r["wall_s"],
                           "run_s": r["run_s"], "gcups_wall": r["cells"] / r["wall_s"] * 1e-9,
                           "gcups_run": r["cells"] / r["run_s"] * 1e-9 if r["run_s"] == r["run_s"]
                           else float("nan"), "cpu_s": r["cpu_s"],
                           "gcells_per_cpu_s": r["cells"] / r["cpu_s"] * 1e-9,
                           "isa": r["isa"], "pct_8bit": r["pct8"],
                           "loadavg1": round(os.getloadavg()[0], 2)}
                    rows.append(row)
                    w.writerow([row[k] for k in ("program", "queue", "threads", "query", "rep",
                                                 "cells", "wall_s", "run_s", "cpu_s",
                                                 "gcups_wall", "gcups_run", "gcells_per_cpu_s",
                                                 "isa", "pct_8bit", "loadavg1")])
                    f.flush()
            loads.append(os.getloadavg()[0])
            print("bench/sw: round %d/%d done (%.0f s, load average %.2f)"
                  % (rep + 1, reps, time.time() - t_start, loads[-1]), file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)

    # ---- medians -------------------------------------------------------------
    med = {}
    for r in rows:
        med.setdefault((r["program"], r["queue"], r["threads"], r["query"]), []).append(r)
    summary = {}
    for key, rs in med.items():
        summary[key] = {
            "gcups_wall": statistics.median(x["gcups_wall"] for x in rs),
            "gcups_run": statistics.median(x["gcups_run"] for x in rs),
            "wall_s": statistics.median(x["wall_s"] for x in rs),
            "gcells_per_cpu_s": statistics.median(x["gcells_per_cpu_s"] for x in rs),
            "n": len(rs), "isa": rs[0]["isa"], "pct8": rs[0]["pct_8bit"]}
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["program", "queue", "threads", "query", "median_gcups_wall",
                    "median_gcups_run", "median_wall_s", "median_gcells_per_cpu_s", "runs"])
        for key in sorted(summary):
            s = summary[key]
            w.writerow(list(key) + ["%.3f" % s["gcups_wall"], "%.3f" % s["gcups_run"],
                                    "%.3f" % s["wall_s"], "%.3f" % s["gcells_per_cpu_s"],
                                    s["n"]])

    # ---- report ----------------------------------------------------------------
    def g(prog, queue, t, q, clock="gcups_run"):
        s = summary.get((prog, queue, t, q))
        return s[clock] if s else float("nan")

    lines = ["# mmsw: Smith-Waterman GCUPS, farm (lock-free) vs mutex queues", ""]
    lines.append("Database: %d synthetic sequences, %d residues (tools/gen_protein_db.py, "
                 "seed %d); BLOSUM50, gap open 10, extend 2 (a gap of length k costs "
                 "10 + 2(k-1)); median of %d interleaved runs." % (nseq, residues, seed, reps))
    isa = next((s["isa"] for k, s in summary.items() if k[0] == "mmsw"), "?")
    lines.append("mmsw kernel: %s. Load average (1 min) after each round: %s "
                 "(this machine has 2 cores; anything above ~2 means other programs were "
                 "running and the GCUPS below are lower and noisier than on a quiet "
                 "machine). Machine:" % (isa, ", ".join("%.1f" % x for x in loads)))
    lines.append("")
    lines += ["    " + l for l in machine_description()]
    lines.append("")
    lines.append("## mmsw GCUPS (its own clock: farm start to end, database reading included)")
    lines.append("")
    hdr = "| workers | queue | " + " | ".join("q%d" % q for q in qlens) + " |"
    lines.append(hdr)
    lines.append("|" + "---|" * (2 + len(qlens)))
    lines.append("| - | serial (no farm) | " + " | ".join(
        "%.2f" % g("mmsw", "serial", 1, q) for q in qlens) + " |")
    for t in threads:
        for queue in ("lockfree", "mutex"):
            lines.append("| %d | %s | " % (t, queue) + " | ".join(
                "%.2f" % g("mmsw", queue, t, q) for q in qlens) + " |")
    lines.append("")
    lines.append("## lock-free / mutex (ratio of the GCUPS above)")
    lines.append("")
    lines.append("| workers | " + " | ".join("q%d" % q for q in qlens) + " |")
    lines.append("|" + "---|" * (1 + len(qlens)))
    for t in threads:
        lines.append("| %d | " % t + " | ".join(
            "%.2f" % (g("mmsw", "lockfree", t, q) / g("mmsw", "mutex", t, q)) for q in qlens)
            + " |")
    lines.append("")
    lines.append("## Cell updates per CPU-second (G): the CPU the farm burns beyond aligning")
    lines.append("")
    lines.append("Cells / (user + system CPU time of the process).  The serial row is the "
                 "kernel plus FASTA reading; a farm row below it spends the difference on "
                 "queues, waiting (spinning) and scheduling.  Less sensitive to other load "
                 "on the machine than GCUPS.")
    lines.append("")
    lines.append("| workers | queue | " + " | ".join("q%d" % q for q in qlens) + " |")
    lines.append("|" + "---|" * (2 + len(qlens)))
    lines.append("| - | serial (no farm) | " + " | ".join(
        "%.2f" % g("mmsw", "serial", 1, q, "gcells_per_cpu_s") for q in qlens) + " |")
    for t in threads:
        for queue in ("lockfree", "mutex"):
            lines.append("| %d | %s | " % (t, queue) + " | ".join(
                "%.2f" % g("mmsw", queue, t, q, "gcells_per_cpu_s") for q in qlens) + " |")
    if parasail:
        for t in pthreads:
            lines.append("| %d | parasail (OpenMP) | " % t + " | ".join(
                "%.2f" % g("parasail", "openmp", t, q, "gcells_per_cpu_s") for q in qlens)
                + " |")
    lines.append("")
    lines.append("## Whole-process wall clock: mmsw vs parasail_aligner")
    lines.append("")
    lines.append("parasail_aligner -x -a sw_striped_profile_sat -m blosum50 -o 10 -e 2 -t N "
                 "(OpenMP; it reads the whole database before aligning).")
    lines.append("")
    lines.append("| program | threads | " + " | ".join("q%d" % q for q in qlens) + " |")
    lines.append("|" + "---|" * (2 + len(qlens)))
    lines.append("| mmsw --serial | 1 | " + " | ".join(
        "%.2f" % g("mmsw", "serial", 1, q, "gcups_wall") for q in qlens) + " |")
    for t in threads:
        lines.append("| mmsw lockfree | %d | " % t + " | ".join(
            "%.2f" % g("mmsw", "lockfree", t, q, "gcups_wall") for q in qlens) + " |")
    if parasail:
        for t in pthreads:
            lines.append("| parasail | %d | " % t + " | ".join(
                "%.2f" % g("parasail", "openmp", t, q, "gcups_wall") for q in qlens) + " |")
    lines.append("")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))

    # ---- plot --------------------------------------------------------------------
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench/sw: matplotlib missing: no plot", file=sys.stderr)
        return 0
    fig, grid = plt.subplots(2, len(qlens), figsize=(4 * len(qlens), 7), squeeze=False)
    rows_spec = (("gcups_run", "GCUPS", "parasail (wall)", "gcups_wall"),
                 ("gcells_per_cpu_s", "G cells per CPU-second", "parasail", "gcells_per_cpu_s"))
    for row, (clock, ylabel, plabel, pclock) in enumerate(rows_spec):
        axes = grid[row]
        for ax, q in zip(axes, qlens):
            for queue, style in (("lockfree", "o-"), ("mutex", "s--")):
                ax.plot(threads, [g("mmsw", queue, t, q, clock) for t in threads], style,
                        label="farm, %s queues" % queue)
            ax.axhline(g("mmsw", "serial", 1, q, clock), color="grey", lw=1, ls=":",
                       label="mmsw --serial")
            if parasail:
                ax.plot(pthreads, [g("parasail", "openmp", t, q, pclock) for t in pthreads],
                        "^-.", color="tab:green", label=plabel)
            ax.set_title("query %d" % q)
            ax.set_xlabel("workers (2 cores)")
            ax.set_xscale("log", base=2)
            ax.set_xticks(threads)
            ax.set_xticklabels([str(t) for t in threads])
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        axes[0].set_ylabel(ylabel)
        axes[-1].legend(fontsize=7, loc="lower right")
    fig.suptitle("mmsw Smith-Waterman (%s, BLOSUM50 10/2): %d sequences, %.1fM residues; "
                 "load average %s" % (isa, nseq, residues / 1e6,
                                      "/".join("%.0f" % x for x in loads)))
    fig.tight_layout()
    fig.savefig(os.path.join(out, "gcups.png"), dpi=110)
    print("bench/sw: results in %s" % out, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
