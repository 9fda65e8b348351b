"""The tables of this directory's README from results.csv and real_reps.csv
(run from the repository root or here):
    python3 bench/results/2026-11-27-16core-trace-fidelity/summarize.py"""
import csv
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "trace"))
from fidelity import clear_pairs, kendall_tau, self_agreement  # noqa: E402

by, reps, order = {}, {}, []
for r in csv.DictReader(open(os.path.join(HERE, "results.csv"))):
    d = by.setdefault((r["run"], r["program"]), {})
    d[r["allocator"]] = tuple(float(r[k]) for k in ("real_s", "replay_s", "real_rss_mib", "replay_rss_mib"))
    if r["program"] not in order:
        order.append(r["program"])
for r in csv.DictReader(open(os.path.join(HERE, "real_reps.csv"))):
    reps.setdefault((r["run"], r["program"]), {}).setdefault(r["allocator"], []).append(float(r["real_s"]))
runs = sorted({k[0] for k in by})
print("| program | " + " | ".join(f"tau run {r}" for r in runs) + " | real vs real | clear pairs alike | "
      "replay / real time | RSS within 15% |")
print("|---|" + "---|" * (len(runs) + 4))
taus = {r: [] for r in runs}
for p in order:
    cells, rvr, n_all, same_all, slow, within, nrss = [], [], 0, 0, [], 0, 0
    for r in runs:
        d = by.get((r, p))
        if not d:
            cells.append("-")
            continue
        rt = {a: v[0] for a, v in d.items()}
        pt = {a: v[1] for a, v in d.items()}
        t = kendall_tau(rt, pt)
        taus[r].append(t)
        cells.append(f"{t:+.2f}")
        n, same = clear_pairs(rt, pt)
        n_all, same_all = n_all + n, same_all + same
        slow += [v[1] / v[0] for v in d.values()]
        within += sum(abs(v[3] / v[2] - 1) <= 0.15 for v in d.values())
        nrss += len(d)
        if (r, p) in reps:
            rvr.append(self_agreement(reps[(r, p)]))
    rv = "/".join(f"{x:+.2f}" for x in rvr)
    print(f"| {p} | " + " | ".join(cells) + f" | {rv} | {same_all}/{n_all} | "
          f"{min(slow):.1f}-{max(slow):.1f} | {within}/{nrss} |")
print()
for r in runs:
    print(f"run {r}: mean tau {statistics.mean(taus[r]):+.2f} over {len(taus[r])} programs")
