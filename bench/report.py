"""The benchmark report: report.md and the PNG plots, from the runs' rows.

Owns the statistics (median of the repetitions with min and max; ratio of
each allocator's median to the best median of the same workload and thread
count; geometric means of those ratios over all cells) and how they are
shown: a summary table, each allocator's losses stated plainly, every
failed run, the callgrind fast-path table, per-workload time and peak-RSS
tables, and three plots (time vs threads per workload, peak RSS bars, a
heat map of ratios to the best).  write() puts report.md together from one
function per section, in the order they appear (title_section ...
per_workload_section), each returning its lines; Matrix holds what they
share (cells, orders, ratios); make_plots() draws the plots, one function
each.  Can be re-run on a results.csv alone:

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

# mmalloc's counters of the slow-path events that decide scaling (its
# statistics' "total" object; run.py records them for this tree's mmalloc)
SCALING_COUNTERS = ["lock_acquisitions", "lock_waits", "lock_try_failures", "remote_batches",
                    "remote_cas_retries", "pages_abandoned", "pages_adopted", "pages_taken_over"]


def _f(x):
    """x as a float, None when it is not a number."""
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
        """Files a run: its measurements when ok, the row itself when not."""
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
        """Whether some run of the cell finished with a time."""
        return bool(self.times)

    def med(self, what="times"):
        """Median of the times (or of what: 'rss', 'faults'); None when empty."""
        v = getattr(self, what)
        return statistics.median(v) if v else None


def collect(rows):
    """The rows grouped into Cells; with the workloads, thread counts and allocators seen."""
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
    """Geometric mean of the positive values of xs, None when there are none."""
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def nthreads(t):
    """'1 thread', 'N threads'."""
    return "1 thread" if t == 1 else "%d threads" % t


def fmt_s(x):
    """Seconds with three significant digits or so; '–' for None."""
    if x is None:
        return "–"
    if x >= 100:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    if x >= 1:
        return "%.2f" % x
    return "%.3f" % x


def fmt_kfaults(x):
    """Page faults in thousands, whole from 10 up, one decimal below; '–' for None."""
    return "–" if x is None else ("%.0f" % (x / 1000) if x >= 10000 else "%.1f" % (x / 1000))


def fmt_mib(x):
    """MiB, whole from 10 up, one decimal below; '–' for None."""
    return "–" if x is None else ("%.0f" % x if x >= 10 else "%.1f" % x)


def cell_text(cell, ratio, what, fmt):
    """One table cell: median (min–max) ×ratio, failures flagged; 'not run' for None."""
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


class Matrix:
    """A run's cells, the order the report shows them in, and their ratios to the best."""

    def __init__(self, rows, listed):
        self.cells, self.workloads, self.threads, allocs = collect(rows)
        # the allocators in the order the harness listed them, then any others
        self.allocs = [a for a in listed if a in allocs] + [a for a in allocs if a not in listed]
        self.rt = ratios(self.cells, self.workloads, self.threads, self.allocs, "times")
        self.rm = ratios(self.cells, self.workloads, self.threads, self.allocs, "rss")
        self.rf = ratios(self.cells, self.workloads, self.threads, self.allocs, "faults")

    def keys(self):
        """Every (workload, threads) pair, workloads in suite order, threads ascending."""
        return [(w, t) for w in self.workloads for t in self.threads[w]]

    def best(self, rat, w, t):
        """The allocator with the best median of (w, t) by the ratios rat."""
        return min((x for x in self.allocs if (w, t, x) in rat), key=lambda x: rat[(w, t, x)])


# --------------------------------------------------------------------------
# report.md, one section at a time; each returns its lines
# --------------------------------------------------------------------------

def write(out, rows, fast, meta, plots=True, log=print):
    """Writes out/report.md (and the plots); returns {allocator: (time, RSS geometric means)}."""
    m = Matrix(rows, meta.get("allocators", []))
    totals = {a: allocator_totals(m, a) for a in m.allocs}
    L = title_section(meta) + run_section(m, meta) + reading_note()
    L += summary_section(m, totals) + losses_section(m) + failures_section(rows)
    L += fastpath_section(fast, m.allocs) + plots_section(out, m, plots, log)
    L += scaling_section(m, rows) + per_workload_section(m, rows)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    return {a: t[:2] for a, t in totals.items()}


def env_field(env_text, key):
    """The value of environment.txt's 'key: value' line, '?' when there is none."""
    for l in env_text.splitlines():
        if l.startswith(key + ":"):
            return l.split(":", 1)[1].strip()
    return "?"


def title_section(meta):
    """The title, and the line naming date, machine and commit."""
    env_text = meta.get("env_text", "")

    def env(key):
        return env_field(env_text, key)

    return ["# mmalloc benchmark report", "",
            "%s, on `%s` (%s, %s cores), %s; commit `%s`. Machine details and allocator "
            "versions: [environment.txt](environment.txt); every run: "
            "[results.csv](results.csv)."
            % (env("date"), env("host"), env("cpu"), env("cores (online)"), env("kernel"),
               env("commit")[:12]), ""]


def run_section(m, meta):
    """What this run covered: mode, workloads, thread counts, repetitions, allocators."""
    mode = meta.get("mode", "?")
    ts = sorted({t for w in m.workloads if w != "bwa" for t in m.threads[w]})
    L = ["**This run:** %s mode — workloads %s; thread counts %s (bwa: %s); %d repetitions "
         "per cell, allocators alternating inside each repetition; per-run timeout %gs; "
         "total %.0f s. %s"
         % (mode, ", ".join(m.workloads), ", ".join(map(str, ts)),
            ", ".join(map(str, m.threads.get("bwa", []))) or "not run", meta.get("reps", 0),
            meta.get("timeout", 0), meta.get("elapsed", 0),
            "`make bench FULL=1` runs thread counts 1, 2, 8, 32, 128, 5 repetitions and "
            "larger inputs." if mode != "full" else "This is the whole matrix."), ""]
    L.append("Allocators: %s." % ", ".join(m.allocs))
    for name, pkg, why in meta.get("missing", []):
        L.append("Not measured: **%s** — %s." % (name, why))
    if "mmalloc" not in m.allocs:
        L.append("mmalloc is not in this run (build/libmmalloc.so did not exist or was not "
                 "selected); it joins the tables once built.")
    L.append("")
    return L


def reading_note():
    """How to read a cell: which time, which RSS, median (min–max) ×ratio."""
    return ["Time is the workload's own clock around its parallel phase (wall time for bwa); "
            "peak RSS and page faults are the workload process's own, from the kernel's rusage "
            "(through GNU time). Each cell shows the median "
            "of the repetitions, (min–max), and ×ratio to the best median for that workload "
            "and thread count (**×1.00** = best). Lower is better everywhere. A run whose "
            "checksum differs from the one the other allocators agree on counts as failed.",
            ""]


def allocator_totals(m, a):
    """One allocator over all cells: time and RSS geometric means, wins, failed cells and runs."""
    keys = m.keys()
    gt = geomean([m.rt.get((w, t, a)) for w, t in keys])
    gm = geomean([m.rm.get((w, t, a)) for w, t in keys])
    wins = sum(1 for w, t in keys if m.rt.get((w, t, a)) == 1.0)
    failed_cells = sum(1 for w, t in keys if (w, t, a) in m.cells and not m.cells[(w, t, a)].ok)
    failed_runs = sum(len(m.cells[(w, t, a)].bad) for w, t in keys if (w, t, a) in m.cells)
    return gt, gm, wins, failed_cells, failed_runs


def summary_section(m, totals):
    """The summary table: one line of allocator_totals per allocator."""
    L = ["## Summary", "",
         "| allocator | time: geometric mean of ratio to best | peak RSS: geometric mean of "
         "ratio to best | fastest in | cells failed | runs failed |",
         "|---|---|---|---|---|---|"]
    for a in m.allocs:
        gt, gm, wins, failed_cells, failed_runs = totals[a]
        L.append("| %s | %s | %s | %d of %d | %d | %d |"
                 % (a, "%.2f" % gt if gt else "–", "%.2f" % gm if gm else "–", wins,
                    len(m.keys()), failed_cells, failed_runs))
    L += ["",
          "Geometric means are over the (workload, threads) cells in which the allocator "
          "finished; a failed cell is left out of its mean and counted in 'cells failed', so "
          "an allocator with failures looks better in the mean than it is.", ""]
    counts = sorted({t for _, t in m.keys()})
    if len(counts) > 1:
        L += ["Time by thread count (geometric mean of the ratio to the best over the cells of "
              "that count; fastest in):", "",
              "| allocator | " + " | ".join("%d threads" % t for t in counts) + " |",
              "|---|" + "---|" * len(counts)]
        for a in m.allocs:
            row = []
            for t in counts:
                keys = [(w, u) for w, u in m.keys() if u == t]
                g = geomean([m.rt.get((w, u, a)) for w, u in keys])
                wins = sum(1 for w, u in keys if m.rt.get((w, u, a)) == 1.0)
                row.append("%.2f (%d of %d)" % (g, wins, len(keys)) if g else "–")
            L.append("| %s | %s |" % (a, " | ".join(row)))
        L.append("")
    return L


def losses_section(m):
    """Each allocator's losses stated plainly: slow cells, big cells, failed cells."""
    L = ["## Losses, stated plainly", "",
         "Every cell where an allocator takes at least %.2f× the best time, or has at least "
         "%.1f× the best peak RSS and %g MiB more (below that, RSS differences are mostly each "
         "allocator's fixed start-up footprint; they still count in the geometric means), "
         "worst first; then every cell with failed runs." % (LOSS_TIME, LOSS_RSS, LOSS_RSS_MIB),
         ""]
    L += [loss_line(m, a) for a in m.allocs]
    L.append("")
    return L


def loss_line(m, a):
    """One allocator's bullet of the losses section."""
    lt, lm, fails = time_losses(m, a), rss_losses(m, a), cells_with_failures(m, a)
    if not lt and not lm and not fails:
        return ("- **%s**: never more than %.2f× the best time nor %.1f× (and %g MiB above) "
                "the best peak RSS, no failures." % (a, LOSS_TIME, LOSS_RSS, LOSS_RSS_MIB))
    parts = time_loss_parts(m, a, lt) + rss_loss_parts(m, a, lt, lm) + failure_parts(m, a, fails)
    return "- **%s**: %s." % (a, "; ".join(parts))


def time_losses(m, a):
    """[(ratio, workload, threads)] of the cells where a is LOSS_TIME× the best, worst first."""
    return sorted(((m.rt[(w, t, a)], w, t) for w, t in m.keys()
                   if m.rt.get((w, t, a), 0) >= LOSS_TIME), reverse=True)


def rss_losses(m, a):
    """Same for peak RSS: LOSS_RSS× the best and LOSS_RSS_MIB above it, worst first."""
    return sorted(((m.rm[(w, t, a)], w, t) for w, t in m.keys()
                   if m.rm.get((w, t, a), 0) >= LOSS_RSS and
                   m.cells[(w, t, a)].med("rss") * (1 - 1 / m.rm[(w, t, a)]) >= LOSS_RSS_MIB),
                  reverse=True)


def cells_with_failures(m, a):
    """[(workload, threads)] of the cells where some run of a failed."""
    return [(w, t) for w, t in m.keys() if (w, t, a) in m.cells and m.cells[(w, t, a)].bad]


def time_loss_parts(m, a, lt):
    """The phrases for the six worst time losses, and how many more there are."""
    parts = []
    for r, w, t in lt[:6]:
        best_a = m.best(m.rt, w, t)
        parts.append("%s at %s: %.2f× the time of %s (%s s vs %s s)"
                     % (w, nthreads(t), r, best_a, fmt_s(m.cells[(w, t, a)].med()),
                        fmt_s(m.cells[(w, t, best_a)].med())))
    if len(lt) > 6:
        parts.append("and %d more cells slower than %.2f×" % (len(lt) - 6, LOSS_TIME))
    return parts


def rss_loss_parts(m, a, lt, lm):
    """The phrases for the four worst peak-RSS losses (or that there are none besides time)."""
    parts = []
    for r, w, t in lm[:4]:
        best_a = m.best(m.rm, w, t)
        parts.append("%s at %s: %.1f× the peak RSS of %s (%s MiB vs %s MiB)"
                     % (w, nthreads(t), r, best_a, fmt_mib(m.cells[(w, t, a)].med("rss")),
                        fmt_mib(m.cells[(w, t, best_a)].med("rss"))))
    if len(lm) > 4:
        parts.append("and %d more cells above %.1f× the best RSS" % (len(lm) - 4, LOSS_RSS))
    if lt and not lm:
        parts.append("peak RSS never %.1f× and %g MiB above the best" % (LOSS_RSS,
                                                                        LOSS_RSS_MIB))
    return parts


def failure_parts(m, a, fails):
    """The phrases for the cells with failed runs: how many, and how the first one failed."""
    parts = []
    for w, t in fails:
        c = m.cells[(w, t, a)]
        b = c.bad[0]
        how = b["status"] + (" %s" % b["signal"] if b.get("signal") else
                             " exit %s" % b["exit_code"] if b.get("exit_code") else "")
        parts.append("%s at %s: %d of %d runs FAILED (%s)"
                     % (w, nthreads(t), len(c.bad), len(c.bad) + len(c.times), how))
    return parts


def failures_section(rows):
    """The table of every run that was not ok."""
    bad = [r for r in rows if r["status"] != "ok"]
    L = ["## Failed runs", ""]
    if not bad:
        L.append("None: every run exited 0, printed its result and agreed on the checksum.")
    else:
        L.append("| workload | allocator | threads | rep | status | exit | signal | detail |")
        L.append("|---|---|---|---|---|---|---|---|")
        for r in bad:
            L.append("| %s | %s | %s | %s | %s | %s | %s | %s |"
                     % (r["workload"], r["allocator"], r["threads"], r["rep"], r["status"],
                        r.get("exit_code", ""), r.get("signal", ""),
                        (r.get("detail") or "").replace("|", "/")[:160]))
    L.append("")
    return L


def fastpath_section(fast, allocs):
    """The callgrind table: instructions per malloc+free pair, per allocator and size."""
    L = ["## Fast path: instructions per malloc+free pair (callgrind)", ""]
    if not fast:
        return L + ["Not measured in this run (valgrind missing or --no-callgrind).", ""]
    sizes = sorted({s for d in fast.values() for s in d})
    L += ["One thread, batches of 64 malloc then 64 free of one size, counted by `valgrind "
          "--tool=callgrind` with a zero-batch run subtracted (loop overhead, about 13 "
          "instructions, included). Deterministic: the same on every run of the same "
          "binaries.", "",
          "| allocator | " + " | ".join("%d B" % s for s in sizes) + " |",
          "|---|" + "---|" * len(sizes)]
    for a in allocs:
        if a in fast:
            L.append("| %s | %s |" % (a, " | ".join(fastpath_value(fast[a].get(s))
                                                     for s in sizes)))
    L.append("")
    return L


def fastpath_value(v):
    """One fast-path count as shown: a whole number, or the (shortened) error text."""
    return "%.0f" % v if isinstance(v, float) else str(v or "–")[:60]


def plots_section(out, m, plots, log):
    """Draws the plots (unless told not to) and returns the lines that show them."""
    L, pngs = [], []
    if plots:
        try:
            pngs = make_plots(out, m)
        except ImportError:
            log("matplotlib not installed: no plots (pip install matplotlib)")
            L += ["Plots skipped: matplotlib is not installed (`pip install matplotlib`).", ""]
    if pngs:
        L += ["## Plots", ""]
        for name, title in pngs:
            L += ["**%s**" % title, "", "![%s](%s)" % (title, name), ""]
    return L


def scaling_section(m, rows):
    """mmalloc's slow-path events per million operations, per workload and
    thread count (medians of the repetitions): what would contend on a
    machine with many more cores than this one."""
    per = {}
    for r in rows:
        ops = _f(r.get("ops"))
        if r.get("allocator") != "mmalloc" or r.get("status") != "ok" or not ops:
            continue
        vals = [_f(r.get("mm_" + k)) for k in SCALING_COUNTERS]
        if None in vals:
            continue
        per.setdefault((r["workload"], int(r["threads"])), []).append(
            [v * 1e6 / ops for v in vals] + [ops, vals[1]])
    if not per:
        return []
    names = ["local heap locks", "of them waited", "failed try-locks", "remote batches",
             "inbox CAS retries", "pages abandoned", "pages adopted", "pages taken over"]
    L = ["## mmalloc's scaling counters", "",
         "Slow-path events of mmalloc per million operations of the workload (medians of the "
         "repetitions; the statistics' `total` object at exit, `MMALLOC_STATS=2`): local-heap lock "
         "acquisitions and how many found the lock held (waited) or gave up a try-lock, remote-free "
         "batches handed to other threads' inboxes and the CAS retries that took, pages left "
         "without owner (abandoned), adopted, and taken over from idle threads. On a machine with "
         "many cores, waits, retries and hand-overs are where threads would meet; a workload whose "
         "lock count per operation is high would queue on its local heap's lock. The last two "
         "columns are absolute: the operations a run counts (a workload that counts few, large "
         "ones, such as pipeline's chunks, shows big rates from a handful of events) and the "
         "lock waits of the whole run.", "",
         "| workload | threads | " + " | ".join(names) + " | operations | waits in all |",
         "|---|---|" + "---|" * (len(names) + 2)]
    for w in m.workloads:
        for t in m.threads[w]:
            runs = per.get((w, t))
            if not runs:
                continue
            med = [statistics.median(run[i] for run in runs) for i in range(len(names) + 2)]
            L.append("| %s | %d | %s | %.0f | %.0f |" % (w, t, " | ".join(
                ("%.0f" % v) if v >= 10 else ("%.1f" % v) if v >= 0.1 else ("%.2g" % v if v else "0")
                for v in med[:-2]), med[-2], med[-1]))
    L.append("")
    return L


def per_workload_section(m, rows):
    """Each workload's description, arguments, and its time, peak-RSS and page-fault tables."""
    L = ["## Per workload", ""]
    for w in m.workloads:
        summary_line = suite.summary(w) or "?"
        args = next((r["args"] for r in rows if r["workload"] == w), "")
        L += ["### %s" % w, "",
              "%s. Arguments: `%s`. Described in [bench/README.md](../../README.md#%s)."
              % (summary_line[0].upper() + summary_line[1:], args, w), ""]
        L += workload_table(m, w, "times", "time (s)", fmt_s, m.rt)
        L += workload_table(m, w, "rss", "peak RSS (MiB)", fmt_mib, m.rm)
        L += workload_table(m, w, "faults", "minor page faults (thousands)", fmt_kfaults, m.rf)
    return L


def workload_table(m, w, what, label, fmt, rat):
    """One workload's table of what ('times', 'rss' or 'faults'): allocators by thread counts."""
    L = ["| %s | %s |" % (label, " | ".join("%d threads" % t for t in m.threads[w])),
         "|---|" + "---|" * len(m.threads[w])]
    for a in m.allocs:
        L.append("| %s | %s |" % (a, " | ".join(
            cell_text(m.cells.get((w, t, a)), rat.get((w, t, a)), what, fmt)
            for t in m.threads[w])))
    L.append("")
    return L


# --------------------------------------------------------------------------
# the plots
# --------------------------------------------------------------------------

def make_plots(out, m):
    """Draws the three PNGs into out; returns [(file, title)]. ImportError without matplotlib."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {a: plt.get_cmap("tab10")(i % 10) for i, a in enumerate(m.allocs)}
    if "mmalloc" in colors:   # the subject of the report stands out
        colors["mmalloc"] = "black"
    return [time_plot(plt, out, m, colors), rss_plot(plt, out, m, colors),
            heatmap_plot(plt, out, m)]


def panel_grid(plt, n, height):
    """A figure with one panel per workload, at most 4 a row; returns (fig, axes, cols)."""
    cols = 4 if n > 6 else max(1, n)
    rows_ = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows_, cols, figsize=(4.2 * cols, height * rows_), squeeze=False)
    for j in range(n, rows_ * cols):
        axes[j // cols][j % cols].axis("off")
    return fig, axes, cols


def time_plot(plt, out, m, colors):
    """time_vs_threads.png: a panel per workload, a line per allocator."""
    fig, axes, cols = panel_grid(plt, len(m.workloads), 3.2)
    for i, w in enumerate(m.workloads):
        time_panel(axes[i // cols][i % cols], m, w, colors)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.suptitle("Time vs threads (median, bars min–max; dotted line: runs failed)", y=0.995,
                 fontsize=11)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.975),
               ncol=len(m.allocs), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(os.path.join(out, "time_vs_threads.png"), dpi=90)
    plt.close(fig)
    return ("time_vs_threads.png", "Time vs threads, per workload")


def time_panel(ax, m, w, colors):
    """One workload's time vs threads: median with min–max bars, failed cells dotted."""
    for a in m.allocs:
        xs, ys, lo, hi = [], [], [], []
        for t in m.threads[w]:
            c = m.cells.get((w, t, a))
            if c and c.ok:
                med = c.med()
                xs.append(t)
                ys.append(med)
                lo.append(med - min(c.times))
                hi.append(max(c.times) - med)
        if xs:
            ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", ms=3, lw=1.4 if a == "mmalloc"
                        else 1.0, capsize=2, color=colors[a], label=a)
        for t in m.threads[w]:
            if (w, t, a) in m.cells and not m.cells[(w, t, a)].ok:
                ax.axvline(t, color=colors[a], ls=":", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(m.threads[w])
    ax.set_xticklabels([str(t) for t in m.threads[w]])
    ax.set_title(w, fontsize=10)
    ax.set_xlabel("threads", fontsize=8)
    ax.set_ylabel("time (s)", fontsize=8)
    ax.set_ylim(bottom=0)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)


def rss_plot(plt, out, m, colors):
    """rss.png: peak RSS bars at each workload's largest thread count."""
    fig, axes, cols = panel_grid(plt, len(m.workloads), 3.0)
    for i, w in enumerate(m.workloads):
        rss_panel(axes[i // cols][i % cols], m, w, colors)
    fig.suptitle("Peak RSS (median of repetitions) at each workload's largest thread count",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(os.path.join(out, "rss.png"), dpi=90)
    plt.close(fig)
    return ("rss.png", "Peak RSS per workload")


def rss_panel(ax, m, w, colors):
    """One workload's bars: each allocator's median peak RSS, 'fail' where none finished."""
    t = max(m.threads[w])
    vals = [m.cells[(w, t, a)].med("rss") if (w, t, a) in m.cells and m.cells[(w, t, a)].rss
            else 0 for a in m.allocs]
    bars = ax.bar(range(len(m.allocs)), vals, color=[colors[a] for a in m.allocs])
    for b, v in zip(bars, vals):
        ax.text(b.get_x() + b.get_width() / 2, v, fmt_mib(v) if v else "fail",
                ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(m.allocs)))
    ax.set_xticklabels(m.allocs, rotation=30, ha="right", fontsize=7)
    ax.set_title("%s (%d threads)" % (w, t), fontsize=10)
    ax.set_ylabel("peak RSS (MiB)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.margins(y=0.15)


def heatmap_plot(plt, out, m):
    """heatmap.png: time and peak-RSS ratios to the best, allocator by workload."""
    n = len(m.workloads)
    fig, axes = plt.subplots(2, 1, figsize=(1.0 * (n + 1) + 2.5, 1.1 * len(m.allocs) * 2 + 2.2))
    cmap = plt.get_cmap("RdYlGn_r").copy()
    cmap.set_bad("lightgrey")
    for ax, rat, title in ((axes[0], m.rt, "time"), (axes[1], m.rm, "peak RSS")):
        heatmap_panel(fig, ax, cmap, m, ratio_grid(m, rat), title)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "heatmap.png"), dpi=90)
    plt.close(fig)
    return ("heatmap.png", "Ratios to the best, per workload and allocator")


def ratio_grid(m, rat):
    """Rows of geometric-mean ratios per allocator: one per workload, then over all (ALL)."""
    grid = []
    for a in m.allocs:
        row = [geomean([rat.get((w, t, a)) for t in m.threads[w]]) for w in m.workloads]
        row.append(geomean([rat.get((w, t, a)) for w, t in m.keys()]))
        grid.append(row)
    return grid


def heatmap_panel(fig, ax, cmap, m, grid, title):
    """One heat map of a ratio_grid, each square labelled with its ratio or 'fail'."""
    data = [[v if v is not None else float("nan") for v in row] for row in grid]
    im = ax.imshow(data, cmap=cmap, vmin=1.0, vmax=3.0, aspect="auto")
    ax.set_xticks(range(len(m.workloads) + 1))
    ax.set_xticklabels(m.workloads + ["ALL"], rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(len(m.allocs)))
    ax.set_yticklabels(m.allocs, fontsize=9)
    for y, row in enumerate(grid):
        for x, v in enumerate(row):
            ax.text(x, y, "%.2f" % v if v is not None else "fail", ha="center",
                    va="center", fontsize=7)
    ax.set_title("%s: ratio to the best (geometric mean over thread counts; 1.00 = best)"
                 % title, fontsize=10)
    fig.colorbar(im, ax=ax, fraction=0.02, pad=0.01)


# --------------------------------------------------------------------------
# re-rendering a finished run (python3 bench/report.py RESULTS_DIR)
# --------------------------------------------------------------------------

def main(argv):
    """Rebuilds report.md and the plots of a finished run from its CSV files."""
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        sys.stderr.write("usage: report.py RESULTS_DIR (a directory bench/run.py wrote)\n")
        return 0 if len(argv) == 2 else 2
    out = argv[1]
    try:
        with open(os.path.join(out, "results.csv")) as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.stderr.write("report.py: %s: %s\n" % (os.path.join(out, "results.csv"), e.strerror))
        return 2
    fast = read_fastpath(os.path.join(out, "fastpath.csv"))
    env_text = ""
    ep = os.path.join(out, "environment.txt")
    if os.path.exists(ep):
        with open(ep) as f:
            env_text = f.read()
    write(out, rows, fast, meta_from_environment(env_text, rows))
    return 0


def read_fastpath(path):
    """fastpath.csv as {allocator: {size: count or error text}}; {} when there is none."""
    fast = {}
    if os.path.exists(path):
        with open(path) as f:
            for r in csv.DictReader(f):
                v = _f(r["instructions_per_pair"])
                fast.setdefault(r["allocator"], {})[int(r["size"])] = (
                    v if v is not None else r["instructions_per_pair"])
    return fast


def meta_from_environment(env_text, rows):
    """The meta write() needs, recovered from environment.txt and the rows."""
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
    # a run before b39f771 listed a peer given by --alloc as missing too
    meta["missing"] = [m for m in meta["missing"] if m[0] not in meta["allocators"]]
    return meta


if __name__ == "__main__":
    sys.exit(main(sys.argv))
