#!/usr/bin/env python3
"""fidelity.py — does a replay rank allocators as the real program does?
Each program is recorded once on glibc (--record-on NAME|PATH.so: on
another allocator; a trace's gaps keep some of the cost of the allocator
it was recorded on), then run for real on every
allocator and replayed on every allocator (`mmtrace replay`, default
speed: the recorded work between calls kept), several repetitions,
allocators alternating.  Per program: Kendall's tau between the two
rankings by median time, and each allocator's replayed peak RSS against
its real one; and, as the scale for tau, how well two single repetitions
of the real runs agree with each other (real_reps.csv keeps every real
repetition's time).  Results: bench/results/<date>-<HHMM>-trace-fidelity-<host>/
(--out DIR to choose), as bench/run.py names its own: a second run the same
day does not overwrite the first.

    python3 trace/fidelity.py [--reps N] [--size tiny|quick] [--cases a,b] [--build-dir build] [--out DIR]
                              [--record-on NAME|PATH.so]

Programs: the make bench workloads at 2 threads, bwa mem -t 2, a
two-thread CPython script with PYTHONMALLOC=malloc, and a C++ program
(test/preload/cxxprog.cpp: std::map, unordered_map, strings, vectors).
"""
import argparse
import datetime
import itertools
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, HERE)

import allocators  # noqa: E402
import run  # noqa: E402
import suite  # noqa: E402
from overhead import bwa_case, python_case  # noqa: E402


def kendall_tau(a, b):
    """tau-a over the items both rankings hold: a and b map item -> value."""
    items = sorted(set(a) & set(b))
    conc = disc = 0
    for x, y in itertools.combinations(items, 2):
        s = (a[x] - a[y]) * (b[x] - b[y])
        conc += s > 0
        disc += s < 0
    pairs = len(items) * (len(items) - 1) // 2
    return (conc - disc) / pairs if pairs else 0.0


def clear_pairs(a, b, margin=1.10):
    """(pairs whose real times differ by more than margin, of them ordered
    alike by the replay): near-ties in the real runs are noise on a small
    machine, and no replay can be asked to order them."""
    n = same = 0
    for x, y in itertools.combinations(sorted(set(a) & set(b)), 2):
        if max(a[x], a[y]) < margin * min(a[x], a[y]):
            continue
        n += 1
        same += (a[x] - a[y]) * (b[x] - b[y]) > 0
    return n, same


def self_agreement(reps_by_alloc):
    """The mean tau between the rankings of two single repetitions of the
    real runs (reps_by_alloc: allocator -> the times of its repetitions, in
    order), over every pair of repetitions; None with fewer than 2.  It is
    the agreement this machine's noise leaves between two real runs of the
    same program: the scale for the replay's tau (which is measured between
    medians, so it may come out somewhat higher)."""
    n = min((len(v) for v in reps_by_alloc.values()), default=0)
    if n < 2:
        return None
    return statistics.mean(kendall_tau({a: v[i] for a, v in reps_by_alloc.items()},
                                       {a: v[j] for a, v in reps_by_alloc.items()})
                           for i, j in itertools.combinations(range(n), 2))


def write_report(out, rows, alloc_names, reps, size, host, day, noise=None, recorded_on="glibc"):
    opt = f" --record-on {recorded_on}" if recorded_on != "glibc" else ""
    lines = ["# Replay fidelity", "",
             f"`python3 trace/fidelity.py --reps {reps} --size {size}{opt}` on {host}, {day}: each program recorded "
             f"once on {recorded_on}, then run for real and replayed (default speed: the recorded work between calls "
             f"kept) on {len(alloc_names)} allocators ({', '.join(alloc_names)}), {reps} repetitions each, "
             "allocators alternating; medians.", "",
             "tau: Kendall's tau between the allocators' order by real time and by replayed time (1: the same "
             "order). Clear pairs: pairs of allocators whose real times differ by more than 10%, and how many "
             "of them the replay orders alike. RSS: replayed peak RSS / real peak RSS, per allocator (min-max), "
             "and how many allocators are within 15%. Real vs real: the mean tau between the orders of two "
             "single repetitions of the real runs, over every pair of them: how far this machine's noise lets "
             "two real runs of the program agree. Time replay/real: the replayed time over the real one, the "
             "median over the allocators (above 1, the replay's own work and the recorded work between calls "
             "add the same time to every allocator, which narrows their differences).", "",
             "| program | tau | real vs real | clear pairs ordered alike | time replay/real | RSS replay/real | "
             "within 15% | fastest real | fastest replayed |", "|---|---|---|---|---|---|---|---|---|"]
    noise = noise or {}
    taus, slows, n_all, same_all, within_all, rss_all = [], [], 0, 0, 0, 0
    for c, tau, rt, pt, rr, pr in rows:
        ratios = [pr[n] / rr[n] for n in alloc_names if n in pr and rr[n]]
        within = sum(1 for x in ratios if abs(x - 1) <= 0.15)
        n, same = clear_pairs(rt, pt)
        taus.append(tau)
        n_all, same_all, within_all, rss_all = n_all + n, same_all + same, within_all + within, rss_all + len(ratios)
        rvr = f"{noise[c]:+.2f}" if noise.get(c) is not None else "-"
        slow = statistics.median(pt[n] / rt[n] for n in alloc_names if n in pt and rt.get(n))
        slows.append(slow)
        lines.append(f"| {c} | {tau:+.2f} | {rvr} | {same}/{n} | {slow:.2f} | {min(ratios):.2f}-{max(ratios):.2f} | "
                     f"{within}/{len(ratios)} | {min(rt, key=rt.get)} | {min(pt, key=pt.get)} |")
    if taus:
        known = [noise[c] for c, *_ in rows if noise.get(c) is not None]
        rvr = f" (real runs against each other: {statistics.mean(known):+.2f})" if known else ""
        lines += ["", f"Mean tau {statistics.mean(taus):+.2f} over {len(taus)} programs{rvr}; clear pairs ordered "
                  f"alike {same_all}/{n_all}; replayed peak RSS within 15% of the real one for "
                  f"{within_all}/{rss_all} program-allocator pairs; the replay took {statistics.median(slows):.2f} "
                  f"times the real time (median over the programs; {min(slows):.2f}-{max(slows):.2f})."]
    open(os.path.join(out, "report.md"), "w").write("\n".join(lines) + "\n")
    return lines


def from_csv(out):
    """Re-renders report.md from a committed results.csv (and its header line)."""
    import csv
    rows_by = {}
    names = []
    for r in csv.DictReader(open(os.path.join(out, "results.csv"))):
        d = rows_by.setdefault(r["program"], ({}, {}, {}, {}))
        d[0][r["allocator"]] = float(r["real_s"])
        d[1][r["allocator"]] = float(r["replay_s"])
        d[2][r["allocator"]] = float(r["real_rss_mib"])
        d[3][r["allocator"]] = float(r["replay_rss_mib"])
        if r["allocator"] not in names:
            names.append(r["allocator"])
    rows = [(c, kendall_tau(d[0], d[1]), d[0], d[1], d[2], d[3]) for c, d in rows_by.items()]
    old = open(os.path.join(out, "report.md")).read()
    m = re.search(r"--reps (\d+) --size (\w+)(?: --record-on (\S+))?` on (.+?), (\d{4}-\d\d-\d\d)", old)
    return write_report(out, rows, names, m.group(1), m.group(2), m.group(4), m.group(5),
                        read_noise(os.path.join(out, "real_reps.csv")), m.group(3) or "glibc")


def read_noise(path):
    """{program: self_agreement} from a real_reps.csv (empty without one:
    runs before it was written)."""
    import csv
    if not os.path.exists(path):
        return {}
    by = {}
    for r in csv.DictReader(open(path)):
        by.setdefault(r["program"], {}).setdefault(r["allocator"], []).append((int(r["rep"]), float(r["real_s"])))
    return {c: self_agreement({a: [t for _, t in sorted(v)] for a, v in al.items()}) for c, al in by.items()}


def programs(build, tmp, size):
    out = {}
    for w in ("larson", "recycle", "xfree", "handoff", "consume", "threadtest", "knary", "barnes", "mesh",
              "align", "pipeline", "realloc-grow", "cache-scratch"):
        exe = os.path.join(build, "bench", w)
        if os.path.exists(exe):
            out[w] = ([exe, "threads=2"] + suite.args_for(w, size), {})
    bwa = bwa_case(size, "fidelity")
    if bwa:
        out["bwa"] = bwa
    out["python"] = python_case(tmp)
    cxx = os.path.join(tmp, "cxxprog")
    r = subprocess.run(["g++", "-O2", "-std=c++17", "-pthread", "-o", cxx,
                        os.path.join(ROOT, "test", "preload", "cxxprog.cpp")], capture_output=True, text=True)
    if r.returncode == 0:
        out["cxx"] = ([cxx, "200000"], {})
    else:
        print(f"fidelity: the C++ program did not build: {r.stderr[-300:]}", file=sys.stderr)
    return out


def real_run(cmd, env, alloc):
    """Wall time and peak RSS (MiB) of one run, measured as make bench does
    (peak RSS through GNU time, from a parent smaller than this Python)."""
    r = run.run_child(cmd, alloc.env(dict(os.environ, **env)), timeout=600)
    if r.get("status") != "ok":
        raise SystemExit(f"fidelity: {alloc.name}: {' '.join(cmd)} failed: {r.get('detail', r.get('stderr', ''))[-300:]}")
    return r["wall_s"], r["maxrss_kb"] / 1024.0


def replay(mmtrace, trace, allocs, reps):
    cmd = [mmtrace, "replay", trace, "--reps", str(reps)]
    for a in allocs:
        cmd += ["--alloc", a.path or "glibc"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"fidelity: replay of {trace} failed: {r.stderr[-800:]}")
    rows = re.findall(r"^\| (\S+) \| ([0-9.]+) \| [0-9.]+ \| ([0-9.]+) \| (\d+) \|$", r.stdout, re.M)
    by_path = {(a.path or "glibc"): a.name for a in allocs}
    return {by_path[n]: (float(t), float(rss)) for n, t, rss, _ in rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--size", default="tiny", choices=["tiny", "quick"])
    ap.add_argument("--cases", default="")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default="")
    ap.add_argument("--from-csv", default="", help="only re-render DIR/report.md from DIR/results.csv")
    ap.add_argument("--record-on", default="", help="record on this allocator (a name or a .so) instead of glibc")
    a = ap.parse_args()
    if a.from_csv:
        print("\n".join(from_csv(a.from_csv)))
        return
    build = os.path.abspath(a.build_dir)
    mmtrace = os.path.join(build, "mmtrace")
    allocs, missing, _ = allocators.discover(build, install=False, log=lambda m: None)
    for name, pkg, why in missing:
        print(f"fidelity: {name} left out ({why})", file=sys.stderr)
    tmp = tempfile.mkdtemp(prefix="mmtrace-fidelity-")
    progs = programs(build, tmp, a.size)
    names = [c for c in (a.cases.split(",") if a.cases else progs) if c in progs]
    rows, real_reps = [], {}
    for c in names:
        cmd, env = progs[c]
        trace = os.path.join(tmp, f"{c}.mmtrace")
        on = ["--alloc", a.record_on] if a.record_on else []
        r = subprocess.run([mmtrace, "record", "-o", trace] + on + ["--"] + cmd, env=dict(os.environ, **env),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise SystemExit(f"fidelity: recording {c} failed: {r.stderr[-500:]}")
        real = {x.name: ([], []) for x in allocs}
        for rep in range(a.reps):
            for x in (allocs if rep % 2 == 0 else list(reversed(allocs))):
                t, rss = real_run(cmd, env, x)
                real[x.name][0].append(t)
                real[x.name][1].append(rss)
        rt = {n: statistics.median(v[0]) for n, v in real.items()}
        rr = {n: statistics.median(v[1]) for n, v in real.items()}
        rep_ = replay(mmtrace, trace, allocs, a.reps)
        pt = {n: v[0] for n, v in rep_.items()}
        pr = {n: v[1] for n, v in rep_.items()}
        tau = kendall_tau(rt, pt)
        rows.append((c, tau, rt, pt, rr, pr))
        real_reps[c] = {n: v[0] for n, v in real.items()}
        print(f"{c}: tau {tau:+.2f}; real " + ", ".join(f"{n} {rt[n]:.3f}s/{rr[n]:.0f}M" for n in rt) +
              "; replay " + ", ".join(f"{n} {pt.get(n, 0):.3f}s/{pr.get(n, 0):.0f}M" for n in rt), file=sys.stderr)
    host = platform.node() or "host"
    out = a.out or os.path.join(ROOT, "bench", "results",
                                f"{datetime.datetime.now().strftime('%Y-%m-%d-%H%M')}-trace-fidelity-{host}")
    os.makedirs(out, exist_ok=True)
    alloc_names = [x.name for x in allocs]
    with open(os.path.join(out, "results.csv"), "w") as f:
        f.write("program,allocator,real_s,replay_s,real_rss_mib,replay_rss_mib\n")
        for c, tau, rt, pt, rr, pr in rows:
            for n in alloc_names:
                f.write(f"{c},{n},{rt[n]:.4f},{pt.get(n, 0):.4f},{rr[n]:.1f},{pr.get(n, 0):.1f}\n")
    with open(os.path.join(out, "real_reps.csv"), "w") as f:
        f.write("program,allocator,rep,real_s\n")
        for c, by in real_reps.items():
            for n in alloc_names:
                for i, t in enumerate(by[n]):
                    f.write(f"{c},{n},{i + 1},{t:.4f}\n")
    lines = write_report(out, rows, alloc_names, a.reps, a.size, f"{host} ({os.cpu_count()} CPUs)",
                         datetime.date.today().isoformat(), read_noise(os.path.join(out, "real_reps.csv")),
                         a.record_on or "glibc")
    print("\n".join(lines))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
