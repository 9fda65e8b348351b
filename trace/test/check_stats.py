#!/usr/bin/env python3
"""check_stats.py — `mmtrace stats` against a second, independent reading
of the same trace: this script recomputes every figure from `mmtrace dump`
(one line per event) and the two must agree exactly; then `mmtrace report`
must write its report and plots.

    check_stats.py MMTRACE TRACE OUTDIR [--partial]
"""
import json
import os
import re
import subprocess
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def bucket(v):
    return v.bit_length()


def hist(values):
    h = [0] * 65
    for v in values:
        h[bucket(v)] += 1
    while h and not h[-1]:
        h.pop()
    return h


def main():
    mmtrace, trace, out = sys.argv[1:4]
    extra = sys.argv[4:]
    d = subprocess.run([mmtrace, "dump"] + extra + [trace], capture_output=True, text=True)
    st = subprocess.run([mmtrace, "stats"] + extra + [trace], capture_output=True, text=True)
    if d.returncode or st.returncode:
        fail(f"dump {d.returncode} / stats {st.returncode}: {d.stderr}{st.stderr}")
    s = json.loads(st.stdout)
    calls, failed = {}, {}
    live = {}                 # id -> (time, size)
    early = {}                # id -> free time, for frees read before the allocation
    sizes, life_ns, life_allocs, bins = [], [], [], {}
    allocs_of = {}            # thread -> allocations so far
    releases = remote = unknown = nulls = 0
    per_thread = {}
    pairs = {}
    grow = shrink = same = inplace = moved = 0
    end = 0

    def binadd(ns, delta):
        bins[ns // 1000000] = bins.get(ns // 1000000, 0) + delta

    for line in d.stdout.splitlines():
        if line.startswith("#"):
            continue
        f = line.split(" ")
        ns, t, op, rest = int(f[0]), int(f[1][1:]), f[2], f[3:]
        end = max(end, ns)
        calls[op] = calls.get(op, 0) + 1
        if "failed" in rest:
            failed[op] = failed.get(op, 0) + 1
        th = per_thread.setdefault(t, {"allocations": 0, "bytes": 0, "frees": 0, "remote_frees": 0})
        kv = dict(x.split("=", 1) for x in rest if "=" in x)
        new = re.search(r"-> (\d+)\.(\d+)", line)
        ref = None
        if op in ("realloc", "reallocarray", "free") or op.startswith("delete"):
            ref = rest[0]
        old_size = None
        if ref and re.fullmatch(r"\d+\.\d+", ref) and op in ("realloc", "reallocarray"):
            o = tuple(map(int, ref.split(".")))
            if o in live:
                old_size = live[o][1]
        if ref == "NULL" and not new and op in ("free",) or (ref == "NULL" and op.startswith("delete")):
            nulls += 1
        if ref and ref.startswith("unknown:"):
            unknown += 1
        released = ref and re.fullmatch(r"\d+\.\d+", ref) and "kept" not in rest
        if released:
            o = tuple(map(int, ref.split(".")))
            releases += 1
            th["frees"] += 1
            if o[0] != t:
                remote += 1
                th["remote_frees"] += 1
                pairs[(o[0], t)] = pairs.get((o[0], t), 0) + 1
            else:
                life_allocs.append(allocs_of.get(t, 0) - 1 - o[1])
            if o in live:
                at, size = live.pop(o)
                life_ns.append(max(0, ns - at))
                binadd(ns, -size)
            else:
                early[o] = ns
        if new:
            n = tuple(map(int, new.groups()))
            size = int(kv.get("size", 0)) * (int(kv["nmemb"]) if "nmemb" in kv else 1)
            sizes.append(size)
            allocs_of[t] = allocs_of.get(t, 0) + 1
            th["allocations"] += 1
            th["bytes"] += size
            binadd(ns, size)
            if n in early:
                fa = early.pop(n)
                life_ns.append(max(0, fa - ns))
                binadd(fa, -size)
            else:
                live[n] = (ns, size)
            if old_size is not None:
                if size > old_size:
                    grow += 1
                elif size < old_size:
                    shrink += 1
                else:
                    same += 1
                if "inplace" in rest:
                    inplace += 1
                else:
                    moved += 1
    mem = re.search(r"; memory peak_kb=(\d+) file_kb=(\d+)$", d.stdout.rstrip("\n").splitlines()[-1])
    checks = {
        "memory": ({"peak_rss_bytes": int(mem.group(1)) << 10, "file_bytes": int(mem.group(2)) << 10}
                   if mem else None, s["memory"]),
        "calls": ({k: [v, failed.get(k, 0)] for k, v in calls.items()}, s["calls"]),
        "allocations": (len(sizes), s["allocations"]),
        "allocated_bytes": (sum(sizes), s["allocated_bytes"]),
        "releases": (releases, s["releases"]),
        "remote_releases": (remote, s["remote_releases"]),
        "unknown_releases": (unknown, s["unknown_releases"]),
        "null_frees": (nulls, s["null_frees"]),
        "live_at_end": (len(live), s["live_at_end"]),
        "size_count": (hist(sizes), s["size_count"]),
        "lifetime_ns": (hist(life_ns), s["lifetime_ns"]),
        "lifetime_own_allocations": (hist(life_allocs), s["lifetime_own_allocations"]),
        "realloc": ({"grow": grow, "shrink": shrink, "same": same, "inplace": inplace, "moved": moved},
                    s["realloc"]),
        "duration_ns": (end, s["duration_ns"]),
        "frees_by_owner_and_freer": (sorted([o, f, c] for (o, f), c in pairs.items()),
                                     sorted(s["frees_by_owner_and_freer"])),
    }
    acc, series = 0, []
    for b in range(max(bins) + 1 if bins else 0):
        acc += bins.get(b, 0)
        series.append(acc)
    checks["ms_live_bytes"] = (series, s["ms_live_bytes"])
    checks["peak_live_bytes"] = (max([0] + series), s["peak_live_bytes"])
    for t, v in per_thread.items():
        got = s["threads"][t]
        checks[f"thread {t}"] = (v, {k: got[k] for k in v})
    bad = [f"{k}: dump says {a}, stats says {b}" for k, (a, b) in checks.items() if a != b]
    if bad:
        fail("; ".join(x[:300] for x in bad))
    print(f"ok: stats agrees with the dump on {len(checks)} figures ({len(sizes)} allocations, "
          f"{releases} releases, {remote} remote)")
    r = subprocess.run([mmtrace, "report"] + extra + [trace, "-o", out], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"report: status {r.returncode}: {r.stderr}")
    md = open(os.path.join(out, "report.md")).read()
    for want in ("# Allocation pattern of", "## Calls", "## What the pattern stresses", "## Phases", "## Threads",
                 f"{len(sizes)} allocations"):
        if want not in md:
            fail(f"report.md lacks '{want}'")
    pngs = re.findall(r"\]\(([^)]+\.png)\)", md)
    try:
        import matplotlib  # noqa: F401
        if len(pngs) < 5:
            fail(f"matplotlib is there but the report has {len(pngs)} plots")
    except ImportError:
        pass
    for p in pngs:
        if os.path.getsize(os.path.join(out, p)) < 1000:
            fail(f"plot {p} is empty")
    print(f"ok: report.md with {len(pngs)} plots")


if __name__ == "__main__":
    main()
