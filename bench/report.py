"""The benchmark report: report.md and the PNG plots, from the runs' rows.

Owns the statistics (median of the repetitions with min and max; ratio of
each allocator's median to the best median of the same workload and thread
count; geometric means of those ratios over all cells) and how they are
shown: a summary table, each allocator's losses stated plainly, every
failed run, the callgrind fast-path table, per-workload time and peak-RSS
tables, and three plots (time vs threads per workload, peak RSS bars, a
heat map of ratios to the best).  Can be re-run on a results.csv alone:

  python3 bench/report.py bench/results/<run>/
"""

import csv
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import suite  # noqa: E402

LOSS_TIME = 1.25     # a time ratio from which a result is listed as a loss
LOSS_RSS = 1.5       # same for peak RSS...
LOSS_RSS_MIB = 8.0   # ...when also this many MiB above the best (not start-up footprint)


def _f(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def time_of(row):
    """The time a run is judged by: the workload's own clock, else wall."""
    return _f(row.get("seconds")) or _f(row.get("wall_s"))


class Cell:
    """The runs of one (workload, threads, allocator)."""

    def __init__(self):
        self.times, self.rss, self.faults, self.bad = [], [], [], []

    def add(self, row):
        if row["status"] == "ok":
            t = time_of(row)
            if t is not None:
                self.times.append(t)
            m = _f(row.get("maxrss_kb"))
            if m is not None:
                self.rss.append(m / 1024.0)
            fl = _f(row.get("minflt"))
            if fl is not None:
                self.faults.append(fl)
        else:
            self.bad.append(row)

    @property
    def ok(self):
        return bool(self.times)

    def med(self, what="times"):
        v = getattr(self, what)
        return statistics.median(v) if v else None


def collect(rows):
    cells, workloads, threads, allocs = {}, [], {}, []
    for r in rows:
        w, a, t = r["workload"], r["allocator"], int(r["threads"])
        if w not in workloads:
            workloads.append(w)
        threads.setdefault(w, set()).add(t)
        if a not in allocs:
            allocs.append(a)
        cells.setdefault((w, t, a), Cell()).add(r)
    order = {n: i for i, n in enumerate(suite.all_names())}
    workloads.sort(key=lambda w: order.get(w, 99))
    return cells, workloads, {w: sorted(ts) for w, ts in threads.items()}, allocs


def ratios(cells, workloads, threads, allocs, what):
    """{(w, t, a): ratio to the best median} for cells with ok runs."""
    out = {}
    for w in workloads:
        for t in threads[w]:
            meds = {a: cells[(w, t, a)].med(what) for a in allocs
                    if (w, t, a) in cells and cells[(w, t, a)].med(what)}
            if not meds:
                continue
            best = min(meds.values())
            for a, m in meds.items():
                out[(w, t, a)] = m / best if best > 0 else 1.0
    return out


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def nthreads(t):
    return "1 thread" if t == 1 else "%d threads" % t


def fmt_s(x):
    if x is None:
        return "–"
    if x >= 100:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    if x >= 1:
        return "%.2f" % x
    return "%.3f" % x


def fmt_mib(x):
    return "–" if x is None else ("%.0f" % x if x >= 10 else "%.1f" % x)


def cell_text(cell, ratio, what, fmt):
    if cell is None:
        return "not run"
    n_all = len(cell.times) + len(cell.bad) if what == "times" else len(cell.rss) + len(cell.bad)
    if not cell.ok:
        kinds = sorted({b["status"] + (" " + str(b["signal"]) if b.get("signal") else "")
                        for b in cell.bad})
        return "**FAILED** (%s, %d/%d)" % (", ".join(kinds), len(cell.bad), n_all)
    v = getattr(cell, what)
    med = statistics.median(v)
    text = "%s (%s–%s)" % (fmt(med), fmt(min(v)), fmt(max(v))) if len(v) > 1 else fmt(med)
    if ratio is not None:
        text += " **×1.00**" if abs(ratio - 1) < 1e-9 else " ×%.2f" % ratio
    if cell.bad:
        text += " ⚠ %d/%d failed" % (len(cell.bad), n_all)
    return text


def write(out, rows, fast, meta, plots=True, log=print):
    cells, workloads, threads, allocs = collect(rows)
    allocs = [a for a in meta.get("allocators", []) if a in allocs] + \
        [a for a in allocs if a not in meta.get("allocators", [])]
    rt = ratios(cells, workloads, threads, allocs, "times")
    rm = ratios(cells, workloads, threads, allocs, "rss")
    L = []
    add = L.append
    env_lines = meta.get("env_text", "").splitlines()

    def env(key):
        for l in env_lines:
            if l.startswith(key + ":"):
                return l.split(":", 1)[1].strip()
        return "?"

    mode = meta.get("mode", "?")
    add("# mmalloc benchmark report")
    add("")
    add("%s, on `%s` (%s, %s cores), %s; commit `%s`. Machine details and allocator versions: "
        "[environment.txt](environment.txt); every run: [results.csv](results.csv)."
        % (env("date"), env("host"), env("cpu"), env("cores (online)"), env("kernel"),
           env("commit")[:12]))
    add("")
    wl = ", ".join(workloads)
    ts = sorted({t for w in workloads if w != "bwa" for t in threads[w]})
    add("**This run:** %s mode — workloads %s; thread counts %s (bwa: %s); %d repetitions "
        "per cell, allocators alternating inside each repetition; per-run timeout %gs; "
        "total %.0f s. %s"
        % (mode, wl, ", ".join(map(str, ts)), ", ".join(map(str, threads.get("bwa", [])))
           or "not run", meta.get("reps", 0), meta.get("timeout", 0), meta.get("elapsed", 0),
           "`make bench FULL=1` runs thread counts 1, 2, 8, 32, 128, 5 repetitions and "
           "larger inputs." if mode != "full" else "This is the whole matrix."))
    add("")
    add("Allocators: %s." % ", ".join(allocs))
    for name, pkg, why in meta.get("missing", []):
        add("Not measured: **%s** — %s." % (name, why))
    if "mmalloc" not in allocs:
        add("mmalloc is not in this run (build/libmmalloc.so did not exist or was not "
            "selected); it joins the tables once built.")
    add("")
    add("Time is the workload's own clock around its parallel phase (wall time for bwa); "
        "peak RSS and page faults are the workload process's own, from the kernel's rusage "
        "(through GNU time). Each cell shows the median "
        "of the repetitions, (min–max), and ×ratio to the best median for that workload and "
        "thread count (**×1.00** = best). Lower is better everywhere. A run whose checksum "
        "differs from the one the other allocators agree on counts as failed.")
    add("")

    # ---- summary
    add("## Summary")
    add("")
    add("| allocator | time: geometric mean of ratio to best | peak RSS: geometric mean of "
        "ratio to best | fastest in | cells failed | runs failed |")
    add("|---|---|---|---|---|---|")
    summary = {}
    for a in allocs:
        keys = [(w, t) for w in workloads for t in threads[w]]
        gt = geomean([rt.get((w, t, a)) for w, t in keys])
        gm = geomean([rm.get((w, t, a)) for w, t in keys])
        wins = sum(1 for w, t in keys if rt.get((w, t, a)) == 1.0)
        failed_cells = sum(1 for w, t in keys if (w, t, a) in cells and not cells[(w, t, a)].ok)
        failed_runs = sum(len(cells[(w, t, a)].bad) for w, t in keys if (w, t, a) in cells)
        summary[a] = (gt, gm)
        add("| %s | %s | %s | %d of %d | %d | %d |"
            % (a, "%.2f" % gt if gt else "–", "%.2f" % gm if gm else "–", wins, len(keys),
               failed_cells, failed_runs))
    add("")
    add("Geometric means are over the (workload, threads) cells in which the allocator "
        "finished; a failed cell is left out of its mean and counted in 'cells failed', so "
        "an allocator with failures looks better in the mean than it is.")
    add("")

    # ---- losses
    add("## Losses, stated plainly")
    add("")
    add("Every cell where an allocator takes at least %.2f× the best time, or has at least "
        "%.1f× the best peak RSS and %g MiB more (below that, RSS differences are mostly each "
        "allocator's fixed start-up footprint; they still count in the geometric means), worst "
        "first; then every cell with failed runs." % (LOSS_TIME, LOSS_RSS, LOSS_RSS_MIB))
    add("")
    for a in allocs:
        lt = sorted(((rt[(w, t, a)], w, t) for w in workloads for t in threads[w]
                     if rt.get((w, t, a), 0) >= LOSS_TIME), reverse=True)
        lm = sorted(((rm[(w, t, a)], w, t) for w in workloads for t in threads[w]
                     if rm.get((w, t, a), 0) >= LOSS_RSS and
                     cells[(w, t, a)].med("rss") * (1 - 1 / rm[(w, t, a)]) >= LOSS_RSS_MIB),
                    reverse=True)
        fails = [(w, t) for w in workloads for t in threads[w]
                 if (w, t, a) in cells and cells[(w, t, a)].bad]
        if not lt and not lm and not fails:
            add("- **%s**: never more than %.2f× the best time nor %.1f× (and %g MiB above) "
                "the best peak RSS, no failures." % (a, LOSS_TIME, LOSS_RSS, LOSS_RSS_MIB))
            continue
        parts = []
        for r, w, t in lt[:6]:
            best_a = min((x for x in allocs if (w, t, x) in rt), key=lambda x: rt[(w, t, x)])
            parts.append("%s at %s: %.2f× the time of %s (%s s vs %s s)"
                         % (w, nthreads(t), r, best_a, fmt_s(cells[(w, t, a)].med()),
                            fmt_s(cells[(w, t, best_a)].med())))
        if len(lt) > 6:
            parts.append("and %d more cells slower than %.2f×" % (len(lt) - 6, LOSS_TIME))
        for r, w, t in lm[:4]:
            best_a = min((x for x in allocs if (w, t, x) in rm), key=lambda x: rm[(w, t, x)])
            parts.append("%s at %s: %.1f× the peak RSS of %s (%s MiB vs %s MiB)"
                         % (w, nthreads(t), r, best_a, fmt_mib(cells[(w, t, a)].med("rss")),
                            fmt_mib(cells[(w, t, best_a)].med("rss"))))
        if len(lm) > 4:
            parts.append("and %d more cells above %.1f× the best RSS" % (len(lm) - 4, LOSS_RSS))
        if lt and not lm:
            parts.append("peak RSS never %.1f× and %g MiB above the best" % (LOSS_RSS,
                                                                            LOSS_RSS_MIB))
        for w, t in fails:
            c = cells[(w, t, a)]
            b = c.bad[0]
            how = b["status"] + (" %s" % b["signal"] if b.get("signal") else
                                 " exit %s" % b["exit_code"] if b.get("exit_code") else "")
            parts.append("%s at %s: %d of %d runs FAILED (%s)"
                         % (w, nthreads(t), len(c.bad), len(c.bad) + len(c.times), how))
        add("- **%s**: %s." % (a, "; ".join(parts)))
    add("")

    # ---- failures
    bad = [r for r in rows if r["status"] != "ok"]
    add("## Failed runs")
    add("")
    if not bad:
        add("None: every run exited 0, printed its result and agreed on the checksum.")
    else:
        add("| workload | allocator | threads | rep | status | exit | signal | detail |")
        add("|---|---|---|---|---|---|---|---|")
        for r in bad:
            add("| %s | %s | %s | %s | %s | %s | %s | %s |"
                % (r["workload"], r["allocator"], r["threads"], r["rep"], r["status"],
                   r.get("exit_code", ""), r.get("signal", ""),
                   (r.get("detail") or "").replace("|", "/")[:160]))
    add("")

    # ---- fast path
    add("## Fast path: instructions per malloc+free pair (callgrind)")
    add("")
    if fast:
        sizes = sorted({s for d in fast.values() for s in d})
        add("One thread, batches of 64 malloc then 64 free of one size, counted by `valgrind "
            "--tool=callgrind` with a zero-batch run subtracted (loop overhead, about 13 "
            "instructions, included). Deterministic: the same on every run of the same "
            "binaries.")
        add("")
        add("| allocator | " + " | ".join("%d B" % s for s in sizes) + " |")
        add("|---|" + "---|" * len(sizes))
        for a in allocs:
            if a not in fast:
                continue
            vals = []
            for s in sizes:
                v = fast[a].get(s)
                vals.append("%.0f" % v if isinstance(v, float) else str(v or "–")[:60])
            add("| %s | %s |" % (a, " | ".join(vals)))
    else:
        add("Not measured in this run (valgrind missing or --no-callgrind).")
    add("")

    # ---- plots
    pngs = []
    if plots:
        try:
            pngs = make_plots(out, cells, workloads, threads, allocs, rt, rm)
        except ImportError:
            log("matplotlib not installed: no plots (pip install matplotlib)")
            add("Plots skipped: matplotlib is not installed (`pip install matplotlib`).")
            add("")
    if pngs:
        add("## Plots")
        add("")
        for name, title in pngs:
            add("**%s**" % title)
            add("")
            add("![%s](%s)" % (title, name))
            add("")

    # ---- per workload
    add("## Per workload")
    add("")
    for w in workloads:
        summary_line = suite.BWA["summary"] if w == "bwa" else suite.WORKLOADS.get(
            w, ("",))[0]
        add("### %s" % w)
        add("")
        args = next((r["args"] for r in rows if r["workload"] == w), "")
        add("%s. Arguments: `%s`. Described in [bench/README.md](../../README.md#%s)."
            % (summary_line[0].upper() + summary_line[1:], args, w))
        add("")
        for what, label, fmt, rat in (("times", "time (s)", fmt_s, rt),
                                      ("rss", "peak RSS (MiB)", fmt_mib, rm)):
            add("| %s | %s |" % (label, " | ".join("%d threads" % t for t in threads[w])))
            add("|---|" + "---|" * len(threads[w]))
            for a in allocs:
                add("| %s | %s |" % (a, " | ".join(
                    cell_text(cells.get((w, t, a)), rat.get((w, t, a)), what, fmt)
                    for t in threads[w])))
            add("")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    return summary


def make_plots(out, cells, workloads, threads, allocs, rt, rm):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {a: plt.get_cmap("tab10")(i % 10) for i, a in enumerate(allocs)}
    if "mmalloc" in colors:   # the subject of the report stands out
        colors["mmalloc"] = "black"
    made = []
    n = len(workloads)
    cols = 4 if n > 6 else max(1, n)
    rows_ = (n + cols - 1) // cols

    # time vs threads
    fig, axes = plt.subplots(rows_, cols, figsize=(4.2 * cols, 3.2 * rows_), squeeze=False)
    for i, w in enumerate(workloads):
        ax = axes[i // cols][i % cols]
        for a in allocs:
            xs, ys, lo, hi = [], [], [], []
            for t in threads[w]:
                c = cells.get((w, t, a))
                if c and c.ok:
                    m = c.med()
                    xs.append(t)
                    ys.append(m)
                    lo.append(m - min(c.times))
                    hi.append(max(c.times) - m)
            if xs:
                ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", ms=3, lw=1.4 if a == "mmalloc"
                            else 1.0, capsize=2, color=colors[a], label=a)
            failed = [t for t in threads[w] if (w, t, a) in cells and not cells[(w, t, a)].ok]
            for t in failed:
                ax.axvline(t, color=colors[a], ls=":", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xticks(threads[w])
        ax.set_xticklabels([str(t) for t in threads[w]])
        ax.set_title(w, fontsize=10)
        ax.set_xlabel("threads", fontsize=8)
        ax.set_ylabel("time (s)", fontsize=8)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for j in range(n, rows_ * cols):
        axes[j // cols][j % cols].axis("off")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.suptitle("Time vs threads (median, bars min–max; dotted line: runs failed)", y=0.995,
                 fontsize=11)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.975),
               ncol=len(allocs), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(os.path.join(out, "time_vs_threads.png"), dpi=90)
    plt.close(fig)
    made.append(("time_vs_threads.png", "Time vs threads, per workload"))

    # peak RSS bars, at the largest thread count of each workload
    fig, axes = plt.subplots(rows_, cols, figsize=(4.2 * cols, 3.0 * rows_), squeeze=False)
    for i, w in enumerate(workloads):
        ax = axes[i // cols][i % cols]
        t = max(threads[w])
        vals = [cells[(w, t, a)].med("rss") if (w, t, a) in cells and cells[(w, t, a)].rss
                else 0 for a in allocs]
        bars = ax.bar(range(len(allocs)), vals, color=[colors[a] for a in allocs])
        for b, v in zip(bars, vals):
            ax.text(b.get_x() + b.get_width() / 2, v, fmt_mib(v) if v else "fail",
                    ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(allocs)))
        ax.set_xticklabels(allocs, rotation=30, ha="right", fontsize=7)
        ax.set_title("%s (%d threads)" % (w, t), fontsize=10)
        ax.set_ylabel("peak RSS (MiB)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.margins(y=0.15)
    for j in range(n, rows_ * cols):
        axes[j // cols][j % cols].axis("off")
    fig.suptitle("Peak RSS (median of repetitions) at each workload's largest thread count",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(os.path.join(out, "rss.png"), dpi=90)
    plt.close(fig)
    made.append(("rss.png", "Peak RSS per workload"))

    # heat map of ratios to the best (geometric mean over thread counts)
    fig, axes = plt.subplots(2, 1, figsize=(1.0 * (n + 1) + 2.5, 1.1 * len(allocs) * 2 + 2.2))
    cmap = plt.get_cmap("RdYlGn_r").copy()
    cmap.set_bad("lightgrey")
    for ax, rat, title in ((axes[0], rt, "time"), (axes[1], rm, "peak RSS")):
        grid = []
        for a in allocs:
            row = []
            for w in workloads:
                row.append(geomean([rat.get((w, t, a)) for t in threads[w]]))
            row.append(geomean([rat.get((w, t, a)) for w in workloads for t in threads[w]]))
            grid.append(row)
        data = [[v if v is not None else float("nan") for v in row] for row in grid]
        im = ax.imshow(data, cmap=cmap, vmin=1.0, vmax=3.0, aspect="auto")
        ax.set_xticks(range(n + 1))
        ax.set_xticklabels(workloads + ["ALL"], rotation=35, ha="right", fontsize=8)
        ax.set_yticks(range(len(allocs)))
        ax.set_yticklabels(allocs, fontsize=9)
        for y, row in enumerate(grid):
            for x, v in enumerate(row):
                ax.text(x, y, "%.2f" % v if v is not None else "fail", ha="center",
                        va="center", fontsize=7)
        ax.set_title("%s: ratio to the best (geometric mean over thread counts; 1.00 = best)"
                     % title, fontsize=10)
        fig.colorbar(im, ax=ax, fraction=0.02, pad=0.01)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "heatmap.png"), dpi=90)
    plt.close(fig)
    made.append(("heatmap.png", "Ratios to the best, per workload and allocator"))
    return made


def main(argv):
    """Rebuilds report.md and the plots of a finished run from its CSV files."""
    if len(argv) != 2:
        sys.stderr.write("usage: report.py RESULTS_DIR\n")
        return 2
    out = argv[1]
    with open(os.path.join(out, "results.csv")) as f:
        rows = list(csv.DictReader(f))
    fast = {}
    fp = os.path.join(out, "fastpath.csv")
    if os.path.exists(fp):
        with open(fp) as f:
            for r in csv.DictReader(f):
                v = _f(r["instructions_per_pair"])
                fast.setdefault(r["allocator"], {})[int(r["size"])] = (
                    v if v is not None else r["instructions_per_pair"])
    env_text = ""
    ep = os.path.join(out, "environment.txt")
    if os.path.exists(ep):
        with open(ep) as f:
            env_text = f.read()
    meta = {"env_text": env_text, "mode": "?", "reps": max(int(r["rep"]) for r in rows),
            "allocators": [], "missing": []}
    in_allocs = False
    for line in env_text.splitlines():
        if line.startswith("allocators:"):
            in_allocs = True
            continue
        if in_allocs and line.startswith("  "):
            name, rest = line.split(None, 1)
            if rest.startswith("MISSING:"):
                meta["missing"].append((name, "", rest.split(":", 1)[1].strip()))
            else:
                meta["allocators"].append(name)
            continue
        in_allocs = False
        if line.startswith("mode:"):
            meta["mode"] = line.split(":")[1].split(";")[0].strip()
            try:
                meta["timeout"] = float(line.split("timeout:")[1].strip().rstrip("s"))
            except (IndexError, ValueError):
                pass
        if line.startswith("total time:"):
            meta["elapsed"] = float(line.split(":")[1].split()[0])
    write(out, rows, fast, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
