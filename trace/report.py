#!/usr/bin/env python3
"""report.py — `mmtrace report TRACE [-o DIR]`: a markdown report with PNG
plots of a program's allocation pattern, from `mmtrace stats` (one
streaming pass over the trace, in C), and what each finding means for the
choice of allocator.

    report.py --mmtrace PATH TRACE [-o DIR] [--partial]

DIR (default TRACE.report/) gets report.md, stats.json and the plots.
Plots need matplotlib; without it the report is written without them and
says so.
"""
import argparse
import json
import os
import subprocess
import sys

KIB, MIB = 1024, 1024 * 1024


def human(n):
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def seconds(ns):
    ns = float(ns)
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.1f} us"
    if ns < 1e9:
        return f"{ns / 1e6:.1f} ms"
    return f"{ns / 1e9:.2f} s"


def bucket_label(i, unit=human):
    """log2 bucket i holds [2^(i-1), 2^i); 0 holds 0."""
    return "0" if i == 0 else unit(2 ** (i - 1))


def share(part, whole):
    return 100.0 * part / whole if whole else 0.0


def quantile_bucket(counts, q):
    total = sum(counts)
    if not total:
        return 0
    acc = 0
    for i, c in enumerate(counts):
        acc += c
        if acc >= q * total:
            return i
    return len(counts) - 1


def findings(s):
    """(title, text, property) for each pattern worth naming."""
    out = []
    allocs, rel = s["allocations"], s["releases"]
    small = sum(s["size_count"][:7])          # below 64 bytes
    if allocs and share(small, allocs) >= 50:
        out.append(("Small objects dominate",
                    f"{share(small, allocs):.0f}% of the {allocs} allocations are under 64 bytes.",
                    "the small-object fast path: per-thread size classes, no header, few instructions per pair"))
    large = sum(s["size_bytes"][21:])          # 1 MiB and above
    if s["allocated_bytes"] and share(large, s["allocated_bytes"]) >= 30:
        out.append(("Large blocks carry the bytes",
                    f"{share(large, s['allocated_bytes']):.0f}% of the bytes allocated come in blocks of 1 MiB "
                    "or more.",
                    "large-block and huge-page handling: mapping reuse, page-fault cost, purge"))
    if rel and share(s["remote_releases"], rel) >= 5:
        pairs = sorted(s["frees_by_owner_and_freer"], key=lambda p: -p[2])[:3]
        names = ", ".join(f"thread {o} -> {f} ({c})" for o, f, c in pairs)
        out.append(("Remote frees",
                    f"{share(s['remote_releases'], rel):.0f}% of the frees release another thread's block; "
                    f"the busiest owner -> freer pairs: {names}.",
                    "remote frees: allocators that batch them per owner and return them without a lock win; "
                    "a producer/consumer pair stresses the owner's inbox"))
    th = s["threads"]
    if len(th) > 8:
        lives = sorted(t["end_ns"] - t["begin_ns"] for t in th)
        med = lives[len(lives) // 2]
        if med < 0.2 * max(s["duration_ns"], 1):
            out.append(("Thread churn",
                        f"{len(th)} threads called the allocator; half of them lived under {seconds(med)} "
                        f"of a {seconds(s['duration_ns'])} run.",
                        "thread churn: heap creation and teardown, reuse of an exited thread's memory"))
    r = s["realloc"]
    grows = r["grow"]
    if grows >= 1000 or (allocs and share(grows, allocs) >= 5):
        out.append(("Buffers grown by realloc",
                    f"{grows} reallocs grow a block ({r['inplace']} of {r['inplace'] + r['moved']} reallocs kept "
                    "their address).",
                    "realloc growth: growing in place, or remapping large blocks instead of copying"))
    peak, end_live = s["peak_live_bytes"], (s["ms_live_bytes"][-1] if s["ms_live_bytes"] else 0)
    if peak and peak > 4 * max(end_live, 1) and peak > 16 * MIB:
        out.append(("Bursts",
                    f"The live set peaks at {human(peak)} ({s['peak_ms']} ms into the run) and falls to "
                    f"{human(end_live)}.",
                    "memory return: how soon freed memory goes back to the OS (purge delay, decay)"))
    life = s["lifetime_ns"]
    if sum(life):
        short = sum(life[:11])                 # under about 1 us
        longl = sum(life[31:])                 # over about 1 s
        if share(longl, sum(life)) >= 10 and share(short, sum(life)) >= 30:
            out.append(("Mixed lifetimes",
                        f"{share(short, sum(life)):.0f}% of the freed blocks lived under a microsecond and "
                        f"{share(longl, sum(life)):.0f}% over a second.",
                        "fragmentation: long-lived blocks pin pages that short-lived ones filled"))
    if s["unknown_releases"]:
        out.append(("Pointers the trace never saw",
                    f"{s['unknown_releases']} releases name a pointer that was not returned in this trace "
                    "(allocated before tracing started, inherited across fork, or released twice).",
                    "none: a replay skips them"))
    return out


PHASE_STRESS = {
    "growth": "memory taken from the OS: page faults on fresh memory, how cheaply the allocator reserves "
              "and commits (huge pages pay for a big heap)",
    "steady": "churn at a stable live set: the fast path, and reusing freed blocks without fragmenting "
              "over time",
    "release": "memory return: how soon the resident set follows the live set down (purge delay, decay)",
    "idle": "no allocation at all: only an allocator that purges without being called (a background "
            "thread or a timer) gives memory back here",
}


def phases(live, allocs, min_share=0.03, tol=0.20):
    """The run cut into phases from its per-millisecond live bytes and
    allocations: [(kind, first_ms, end_ms)] with kind growth, steady,
    release or idle, end_ms exclusive, covering the run in order.

    First the idle stretches: at least min_share of the run (and 2 ms)
    without an allocation or a change in live bytes.  Each stretch between
    them is cut where the live set turns: a stretch whose live bytes stray
    from the straight line between its ends by more than tol of the peak
    live set is split at the farthest point, and its halves likewise.  A
    piece whose live set rises (falls) by more than tol of the peak is
    growth (release), any other steady.  Pieces shorter than min_share of
    the run go into the piece before them (the first into the next), taking
    its kind (a spike on a plateau stays plateau), and neighbours of one
    kind are joined."""
    n = len(live)
    if n == 0:
        return []
    peak = max(max(live), 1)
    small = max(int(min_share * n), 2)

    def at(i):                    # live bytes before ms i
        return live[i - 1] if i else 0

    # idle stretches
    quiet = [allocs[i] == 0 and live[i] == at(i) for i in range(n)]
    cuts, i = [], 0
    while i < n:
        j = i
        while j < n and quiet[j] == quiet[i]:
            j += 1
        cuts.append(["idle" if quiet[i] and j - i >= small else None, i, j])
        i = j
    spans = []
    for k in cuts:                # short quiet stretches belong to the activity around them
        if spans and k[0] is None and spans[-1][0] is None:
            spans[-1][2] = k[2]
        elif spans and k[0] == "idle" and spans[-1][0] == "idle":
            spans[-1][2] = k[2]
        else:
            spans.append(k)

    def kind_of(a, b):            # an active span by its net change
        change = live[b - 1] - at(a)
        return "growth" if change > tol * peak else "release" if change < -tol * peak else "steady"

    def split(a, b, out):         # [a, b) active: cut where the live set turns
        if b - a >= 2:
            la, lb = at(a), live[b - 1]
            worst, where = 0.0, None
            for m in range(a + 1, b):
                line = la + (lb - la) * (m - a) / (b - a)
                d = abs(at(m) - line)
                if d > worst:
                    worst, where = d, m
            if worst > tol * peak and where is not None:
                split(a, where, out)
                split(where, b, out)
                return
        out.append([kind_of(a, b), a, b])

    pieces = []
    for kind, a, b in spans:
        if kind == "idle":
            pieces.append([kind, a, b])
        else:
            split(a, b, pieces)

    def join(ps):
        out = []
        for k in ps:
            if out and out[-1][0] == k[0]:
                out[-1][2] = k[2]
            else:
                out.append(k)
        return out

    pieces = join(pieces)
    while len(pieces) > 1:
        i = next((i for i, (_, a, b) in enumerate(pieces) if b - a < small), None)
        if i is None:
            break
        into = i - 1 if i else 1
        pieces[into][1] = min(pieces[i][1], pieces[into][1])
        pieces[into][2] = max(pieces[i][2], pieces[into][2])
        del pieces[i]
        pieces = join(pieces)
    return [tuple(k) for k in pieces]


def phase_rows(s):
    """[(kind, from_ms, to_ms, allocations, live at start, live at end, live peak)]."""
    live, allocs = s["ms_live_bytes"], s["ms_allocations"]
    rows = []
    for kind, a, b in phases(live, allocs):
        rows.append((kind, a, b, sum(allocs[a:b]), live[a - 1] if a else 0, live[b - 1], max(live[a:b])))
    return rows


def plots(s, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "matplotlib is not installed (pip install matplotlib): no plots"
    made = []

    def save(fig, name, title):
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=90)
        plt.close(fig)
        made.append((name, title))

    calls = {k: v[0] for k, v in s["calls"].items() if k not in ("thread_begin", "thread_end")}
    if calls:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        names = sorted(calls, key=lambda k: -calls[k])
        ax.bar(names, [calls[k] for k in names])
        ax.set_ylabel("calls")
        ax.tick_params(axis="x", rotation=45)
        save(fig, "calls.png", "Calls per function")
    for key, name, title, unit in (("size_count", "sizes.png", "Allocation sizes (count)", human),
                                   ("size_bytes", "size_bytes.png", "Allocation sizes (bytes)", human),
                                   ("lifetime_ns", "lifetimes.png", "Lifetimes of freed blocks (time)", seconds),
                                   ("lifetime_own_allocations", "lifetime_allocs.png",
                                    "Lifetimes of blocks freed by their owner (owner's allocations between)",
                                    lambda v: f"{v:.0f}"),
                                   ("realloc_growth_factor", "realloc_growth.png", "realloc growth factor",
                                    lambda v: f"{v:.0f}x"),
                                   ("alignment", "alignments.png", "Requested alignments", human)):
        v = s[key]
        if not sum(v):
            continue
        fig, ax = plt.subplots(figsize=(7, 3.2))
        ax.bar(range(len(v)), v)
        ticks = [i for i in range(len(v)) if v[i]] if len(v) < 12 else list(range(0, len(v), max(1, len(v) // 10)))
        ax.set_xticks(ticks)
        ax.set_xticklabels([bucket_label(i, unit) for i in ticks], rotation=45)
        ax.set_xlabel("at least")
        save(fig, name, title)
    live = s["ms_live_bytes"]
    if live:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        ax.plot([i / 1000 for i in range(len(live))], [v / MIB for v in live], label="live MiB")
        ax.set_xlabel("seconds")
        ax.set_ylabel("live MiB")
        ax2 = ax.twinx()
        rate = s["ms_allocations"]
        ax2.plot([i / 1000 for i in range(len(rate))], rate, color="tab:orange", alpha=0.5, linewidth=0.7)
        ax2.set_ylabel("allocations per ms", color="tab:orange")
        shade = {"growth": "tab:green", "steady": "tab:blue", "release": "tab:red", "idle": "tab:gray"}
        for kind, a, b, *_ in phase_rows(s):
            ax.axvspan(a / 1000, b / 1000, color=shade[kind], alpha=0.08, linewidth=0)
            ax.text((a + b) / 2000, ax.get_ylim()[1] * 0.97, kind, ha="center", va="top", fontsize=7)
        save(fig, "live.png", "Live bytes and allocation rate over time, with the phases")
    th = s["threads"]
    if th:
        fig, ax = plt.subplots(figsize=(7, min(8, 1 + 0.2 * len(th))))
        for t in th[:200]:
            ax.plot([t["begin_ns"] / 1e9, max(t["end_ns"], t["begin_ns"] + 1) / 1e9], [t["thread"]] * 2,
                    linewidth=3)
        ax.set_xlabel("seconds")
        ax.set_ylabel("thread")
        save(fig, "threads.png", "Threads: when each called the allocator" +
             (" (first 200)" if len(th) > 200 else ""))
    pairs = s["frees_by_owner_and_freer"]
    if pairs:
        busiest = sorted({p[0] for p in pairs} | {p[1] for p in pairs},
                         key=lambda t: -sum(c for o, f, c in pairs if t in (o, f)))[:32]
        idx = {t: i for i, t in enumerate(sorted(busiest))}
        m = [[0] * len(idx) for _ in idx]
        for o, f, c in pairs:
            if o in idx and f in idx:
                m[idx[o]][idx[f]] = c
        fig, ax = plt.subplots(figsize=(5, 4.5))
        im = ax.imshow(m, cmap="viridis")
        ax.set_xlabel("freeing thread")
        ax.set_ylabel("owning thread")
        labels = sorted(idx)
        if len(labels) <= 16:
            ax.set_xticks(range(len(labels)))
            ax.set_xticklabels(labels)
            ax.set_yticks(range(len(labels)))
            ax.set_yticklabels(labels)
        fig.colorbar(im)
        save(fig, "remote.png", "Remote frees: owner x freer" + (" (32 busiest threads)" if len(idx) == 32 else ""))
    return made, None


def memory_line(s):
    """The traced run's resident memory (the trace's memory record) beside
    the live set."""
    m = s.get("memory")
    if not m:
        return ("- The trace does not say how much memory the run had resident (an older trace, or the "
                "program was killed or exec'd).")
    return (f"- The traced run's peak RSS was {human(m['peak_rss_bytes'])}, {human(m['file_bytes'])} of it code, "
            "libraries and mapped files when it ended (the program's own, and about 0.3-0.5 MiB of "
            "the recorder's); the rest is the heap (the blocks' touched pages and the allocator's free memory), "
            "the program's other memory (stacks, its own mappings) and the recorder's buffers and its shadow "
            "of the blocks (8 bytes per 16 bytes of heap), which a replay does not hold. The live set "
            f"peaked at {human(s['peak_live_bytes'])} (a block's untouched pages are not resident).")


def write_report(s, out, made, note):
    allocs = s["allocations"]
    calls = s["calls"]
    n_calls = sum(v[0] for k, v in calls.items() if k not in ("thread_begin", "thread_end"))
    failed = sum(v[1] for v in calls.values())
    lines = [f"# Allocation pattern of `{os.path.basename(s['program'] or '?')}`", "",
             f"Trace `{s['trace']}`: {' '.join(s['args'])}", "",
             f"- {n_calls} calls in {len(s['threads'])} thread{'' if len(s['threads']) == 1 else 's'} over {seconds(s['duration_ns'])} "
             f"(the run ended: {s['ending']}); {failed} failed; allocator under the trace: "
             f"{s['preload'] or 'the C library'}; recorded on {s['host']} ({s['cpus']} CPUs).",
             f"- {allocs} allocations, {human(s['allocated_bytes'])} in all; median size bucket from "
             f"{bucket_label(quantile_bucket(s['size_count'], 0.5))}, 99th percentile from "
             f"{bucket_label(quantile_bucket(s['size_count'], 0.99))}.",
             f"- Peak live set {human(s['peak_live_bytes'])} ({s['peak_ms']} ms in, per-millisecond resolution); "
             f"{s['live_at_end']} blocks still live at the end.",
             memory_line(s),
             f"- {s['releases']} releases of traced blocks, {share(s['remote_releases'], s['releases']):.1f}% "
             f"by another thread; {s['null_frees']} frees of NULL; {s['unknown_releases']} of pointers the "
             "trace never saw.",
             f"- realloc: {s['realloc']['grow']} grow, {s['realloc']['shrink']} shrink, "
             f"{s['realloc']['same']} same size; {s['realloc']['inplace']} in place, {s['realloc']['moved']} moved.",
             f"- Trace: {s['bytes']} bytes, {s['bytes'] / max(1, s['events']):.2f} bytes per event.", "",
             "## Calls", "", "| function | calls | failed |", "|---|---|---|"]
    for k, (n, f) in sorted(calls.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| `{k}` | {n} | {f} |")
    lines += ["", "## What the pattern stresses", ""]
    fs = findings(s)
    if not fs:
        lines.append("Nothing stands out: a small, single-phase pattern that any allocator serves alike.")
    for title, text, prop in fs:
        lines += [f"**{title}.** {text} Stresses: {prop}.", ""]
    rows = phase_rows(s)
    lines += ["## Phases", "",
              "The run cut where its live set turns (per millisecond): growth (the live set rises by "
              "more than a fifth of its peak), release (it falls as much), steady (it allocates at a "
              "live set within that), idle (no allocation for at least 3% of the run). Phases shorter "
              "than 3% of the run are folded into their neighbour.", "",
              "| phase | kind | from | to | allocations | per ms | live at start | at end | peak |",
              "|---|---|---|---|---|---|---|---|---|"]
    for i, (kind, a, b, n_alloc, l0, l1, lp) in enumerate(rows):
        lines.append(f"| {i + 1} | {kind} | {a} ms | {b} ms | {n_alloc} | {n_alloc / max(1, b - a):.0f} | "
                     f"{human(l0)} | {human(l1)} | {human(lp)} |")
    lines.append("")
    for kind in dict.fromkeys(k for k, *_ in rows):
        lines += [f"**{kind.capitalize()}** ({sum(b - a for k, a, b, *_ in rows if k == kind)} ms of "
                  f"{len(s['ms_live_bytes'])}). Stresses: {PHASE_STRESS[kind]}.", ""]
    lines += ["## Threads", "", "| thread | OS tid | from | to | allocations | bytes | frees | of them remote |",
              "|---|---|---|---|---|---|---|---|"]
    for t in s["threads"][:64]:
        lines.append(f"| {t['thread']} | {t['tid']} | {seconds(t['begin_ns'])} | {seconds(t['end_ns'])} | "
                     f"{t['allocations']} | {human(t['bytes'])} | {t['frees']} | {t['remote_frees']} |")
    if len(s["threads"]) > 64:
        lines.append(f"| ... | {len(s['threads']) - 64} more | | | | | | |")
    lines += ["", "## Plots", ""]
    if note:
        lines.append(note)
    for name, title in made:
        lines += [f"### {title}", "", f"![{title}]({name})", ""]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mmtrace", required=True)
    ap.add_argument("trace")
    ap.add_argument("-o", dest="out")
    ap.add_argument("--partial", action="store_true")
    a = ap.parse_args()
    out = a.out or a.trace + ".report"
    r = subprocess.run([a.mmtrace, "stats"] + (["--partial"] if a.partial else []) + [a.trace],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        return r.returncode
    s = json.loads(r.stdout)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "stats.json"), "w") as f:
        f.write(r.stdout)
    made, note = plots(s, out)
    write_report(s, out, made, note)
    print(f"mmtrace: wrote {os.path.join(out, 'report.md')} ({len(made)} plots)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
