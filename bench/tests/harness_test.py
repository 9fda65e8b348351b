#!/usr/bin/env python3
"""Test of the harness, bench/run.py (ctest label "bench"; not a benchmark).

Runs run.py in tiny mode on two workloads (recycle, xfree), two real
allocators (glibc and the first peer found) and the deliberately broken
allocator, two thread counts, two repetitions, into a temporary directory;
then checks that results.csv, environment.txt, report.md (and the plots
when matplotlib is installed) exist and agree with each other:
  - one CSV row per run, none dropped, the broken allocator's runs recorded
    as failed with their exit status, and listed in the report;
  - the real allocators' runs ok, with one checksum per (workload, threads);
  - the allocators alternate: each repetition starts with another one;
  - the report's median for each cell is the median of the CSV's times;
  - the per-run timeout kills a child and says so;
  - on this tree's mmalloc, the scaling counters are recorded and tabled,
    and the real program ruby runs (or is skipped with a note without it);
  - --alloc-env reaches an allocator's runs (the broken allocator with
    BROKEN_EVERY=0 is not broken), is listed in environment.txt, and a
    malformed or unknown one is refused;
  - a peer given by --alloc is not also listed as missing.
Prints a 'N passed, N failed' line; exit status 0 when all pass.
"""

import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, BENCH)

import run as harness  # noqa: E402
import report  # noqa: E402
import allocators  # noqa: E402
import callgrind  # noqa: E402
from smoke import Checks, second_allocator  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the output directory")
    a = ap.parse_args()
    c = Checks()
    out = tempfile.mkdtemp(prefix="mm-bench-harness-")
    peer, _ = second_allocator()
    allocs = ["glibc"] + ([peer] if peer else [])
    broken = os.path.join(a.build_dir, "bench", "libbroken_alloc.so")
    cmd = [sys.executable, os.path.join(BENCH, "run.py"), "--tiny", "--build-dir", a.build_dir,
           "--out", out, "--workloads", "recycle,xfree", "--allocs", ",".join(allocs),
           "--alloc", "broken=" + broken, "--threads", "1,2", "--reps", "2", "--no-install"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        c.check("run.py exits 0", r.returncode == 0, r.stderr[-500:])
        c.check("a progress line per run on stderr",
                r.stderr.count(" rep ") == 2 * 2 * 2 * (len(allocs) + 1), r.stderr[-300:])
        for f in ("results.csv", "environment.txt", "report.md"):
            c.check("%s written" % f, os.path.exists(os.path.join(out, f)))
        if not os.path.exists(os.path.join(out, "results.csv")):
            raise SystemExit(1)
        with open(os.path.join(out, "results.csv")) as f:
            rows = list(csv.DictReader(f))
        n_alloc = len(allocs) + 1
        c.check("one CSV row per run", len(rows) == 2 * 2 * 2 * n_alloc, "%d rows" % len(rows))
        real = [x for x in rows if x["allocator"] != "broken"]
        bad = [x for x in rows if x["allocator"] == "broken"]
        c.check("real allocators' runs are ok", all(x["status"] == "ok" for x in real),
                str([(x["workload"], x["allocator"], x["status"], x["detail"]) for x in real
                     if x["status"] != "ok"]))
        c.check("the broken allocator's runs are recorded as failed, with exit status",
                len(bad) == 8 and all(x["status"] != "ok" and (x["exit_code"] or x["signal"])
                                      for x in bad),
                str([(x["status"], x["exit_code"], x["signal"]) for x in bad]))
        for w in ("recycle", "xfree"):
            for t in ("1", "2"):
                sums = {x["checksum"] for x in real if x["workload"] == w and x["threads"] == t}
                c.check("%s T=%s: one checksum across allocators and repetitions" % (w, t),
                        len(sums) == 1 and all(x["checksum_ok"] == "yes" for x in real
                                               if x["workload"] == w and x["threads"] == t),
                        str(sums))
        c.check("rusage recorded", all(float(x["wall_s"]) > 0 and int(x["maxrss_kb"]) > 0 and
                                       int(x["minflt"]) > 0 for x in real))
        firsts = {(x["workload"], x["threads"], x["rep"]): x["allocator"] for x in rows
                  if x["order"] == "1"}
        c.check("allocators alternate between repetitions",
                all(firsts[(w, t, "1")] != firsts[(w, t, "2")] for w in ("recycle", "xfree")
                    for t in ("1", "2")), str(firsts))
        with open(os.path.join(out, "report.md")) as f:
            md = f.read()
        with open(os.path.join(out, "environment.txt")) as f:
            env = f.read()
        for needle in ("## Summary", "## Losses, stated plainly", "## Failed runs",
                       "### recycle", "### xfree", "## Fast path"):
            c.check("report has %r" % needle, needle in md)
        for al in allocs + ["broken"]:
            c.check("report names %s" % al, "| %s |" % al in md)
        c.check("report lists the broken runs as failures",
                md.count("| broken | ") >= 8 + 2 * 2 and "**FAILED**" in md)
        for w in ("recycle", "xfree"):
            for t in ("1", "2"):
                for al in allocs:
                    ts = [float(x["seconds"]) for x in real
                          if x["workload"] == w and x["threads"] == t and x["allocator"] == al]
                    med = report.fmt_s(statistics.median(ts))
                    sec = md.split("### %s" % w)[1].split("###")[0]
                    line = next((l for l in sec.splitlines() if l.startswith("| %s |" % al)),
                                "")
                    col = line.split("|")[1 + int(t)] if line else ""
                    c.check("report median of %s %s T=%s equals the CSV's" % (w, al, t),
                            col.strip().startswith(med + " "), "%r vs %s" % (col, med))
        by_t = (md.split("Time by thread count")[1].split("\n\n")[1]
                if "Time by thread count" in md else "")
        c.check("the summary gives time by thread count, a column per count (1 and 2)",
                "| 1 threads | 2 threads |" in by_t and "| glibc | " in by_t, by_t[:300])
        for needle in ("commit:", "cpu:", "kernel:", "glibc:", "compiler:", "allocators:"):
            c.check("environment.txt has %r" % needle, needle in env)
        try:
            import matplotlib  # noqa: F401
            for png in ("time_vs_threads.png", "rss.png", "heatmap.png"):
                p = os.path.join(out, png)
                ok = os.path.exists(p) and open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
                c.check("%s is a PNG" % png, ok)
        except ImportError:
            print("SKIP: plots (matplotlib not installed)")
        if shutil.which("valgrind"):
            c.check("fast-path table measured", os.path.exists(os.path.join(out, "fastpath.csv"))
                    and "| glibc | " in md.split("## Fast path")[1].split("##")[0])
        if shutil.which("valgrind") and shutil.which("objdump"):
            breakdown_listing(c, a.build_dir)
        scaling_and_real(c, a.build_dir)
        alloc_env(c, a.build_dir, broken)
        alloc_replaces_missing(c, a.build_dir, broken)
        t = harness.run_child(["sleep", "5"], dict(os.environ), 0.5)
        c.check("a run over its timeout is killed and recorded as timeout",
                t["status"] == "timeout" and t["wall_s"] < 4, str(t.get("status")))
        t = harness.run_child(["sh", "-c", "kill -SEGV $$"], dict(os.environ), 10)
        c.check("a crash is recorded with its signal",
                t["status"] == "crash" and t["signal"] == "SIGSEGV", str(t.get("signal")))
    finally:
        if a.keep:
            print("output kept in %s" % out)
        else:
            shutil.rmtree(out, ignore_errors=True)
    print("%d passed, %d failed" % (c.passed, c.failed))
    return 1 if c.failed else 0


def alloc_env(c, build_dir, broken):
    """--alloc-env NAME:VAR=VALUE: the broken allocator told not to break
    (BROKEN_EVERY=0) runs ok; bad specs exit with a message."""
    out = tempfile.mkdtemp(prefix="mm-bench-env-")
    base = [sys.executable, os.path.join(BENCH, "run.py"), "--tiny", "--build-dir", build_dir,
            "--out", out, "--workloads", "recycle", "--allocs", "glibc", "--alloc",
            "broken=" + broken, "--threads", "1", "--reps", "1", "--no-install",
            "--no-callgrind", "--no-plots"]
    try:
        r = subprocess.run(base + ["--alloc-env", "broken:BROKEN_EVERY=0"], capture_output=True,
                           text=True, timeout=300)
        c.check("run.py with --alloc-env exits 0", r.returncode == 0, r.stderr[-500:])
        rows = []
        if os.path.exists(os.path.join(out, "results.csv")):
            with open(os.path.join(out, "results.csv")) as f:
                rows = [x for x in csv.DictReader(f) if x["allocator"] == "broken"]
        c.check("--alloc-env reaches the runs (the broken allocator told not to break runs ok)",
                len(rows) == 1 and rows[0]["status"] == "ok", str(rows))
        env_txt = open(os.path.join(out, "environment.txt")).read() if rows else ""
        c.check("environment.txt lists the allocator's environment", "env: BROKEN_EVERY=0" in env_txt)
        for spec, why in (("broken=BROKEN_EVERY", "wants NAME:VAR=VALUE"),
                          ("nosuch:X=1", "no allocator nosuch")):
            r = subprocess.run(base + ["--alloc-env", spec], capture_output=True, text=True,
                               timeout=120)
            c.check("--alloc-env %s is refused" % spec, r.returncode != 0 and why in r.stderr,
                    r.stderr[-300:])
    finally:
        shutil.rmtree(out, ignore_errors=True)


def alloc_replaces_missing(c, build_dir, broken):
    """--alloc NAME=PATH for a peer that is not installed (as on a machine
    the peers' libraries were carried to) measures it and does not also list
    it as missing; the peers not supplied are still listed."""
    real = allocators.find_library
    allocators.find_library = lambda soname, cache=None: None
    try:
        found, missing, _ = allocators.discover(build_dir, ["jemalloc=" + broken], None,
                                                install=False, log=lambda *a: None)
    finally:
        allocators.find_library = real
    names = [m[0] for m in missing]
    c.check("a peer given by --alloc is measured", any(a.name == "jemalloc" and a.origin == "user"
                                                       for a in found), str(found))
    c.check("a peer given by --alloc is not listed as missing", "jemalloc" not in names, str(names))
    c.check("the peers not given are listed as missing", "tcmalloc" in names, str(names))
    env = ("allocators:\n  jemalloc   /x/libjemalloc.so.2   user library\n"
           "  jemalloc   MISSING: libjemalloc.so.2 not found\n"
           "  tcmalloc   MISSING: libtcmalloc_minimal.so.4 not found\n")
    meta = report.meta_from_environment(env, [{"rep": "1"}])
    c.check("a report redrawn from such an environment.txt lists only the peer not measured",
            [m[0] for m in meta["missing"]] == ["tcmalloc"], str(meta["missing"]))


def breakdown_listing(c, build_dir):
    """fastpath_breakdown.py on this tree's mmalloc: malloc and free listed,
    free starting with the slot base table, their sum a little below the
    callgrind pair count (which includes the bench loop); a missing library
    is one line and exit 2."""
    tool = os.path.join(BENCH, "fastpath_breakdown.py")
    lib = os.path.join(build_dir, "libmmalloc.so")
    r = subprocess.run([sys.executable, tool, "--build-dir", build_dir, "--alloc", "mm=" + lib,
                        "--batches", "200"], capture_output=True, text=True, timeout=600)
    c.check("fastpath_breakdown.py exits 0", r.returncode == 0, r.stderr[-300:])
    m = re.search(r"mm: ([0-9.]+) instructions per pair in malloc and free", r.stdout)
    c.check("fastpath_breakdown.py gives the malloc+free sum", m is not None, r.stdout[-300:])
    c.check("free's listing reads the slot base table", "<mm_xslot_base>" in r.stdout,
            r.stdout[-500:])
    if m:
        pair = callgrind.measure(os.path.join(build_dir, "bench", "fastpath"),
                                 allocators.Allocator("mm", lib), [64], 200)[64]
        c.check("the listing's sum is the pair count less the bench loop (0 to 20 fewer)",
                isinstance(pair, float) and 0 <= pair - float(m.group(1)) <= 20,
                "%s vs %s" % (m.group(1), pair))
    r = subprocess.run([sys.executable, tool, "--alloc", "x=/nonexistent.so"],
                       capture_output=True, text=True, timeout=60)
    c.check("fastpath_breakdown.py: a missing library is one line, exit 2",
            r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "/nonexistent.so" in r.stderr,
            r.stderr[-300:])


def scaling_and_real(c, build_dir):
    """This tree's mmalloc on xfree and on the real program ruby (tiny): its
    scaling counters recorded in the CSV and tabled in the report; ruby's
    runs ok with one checksum, or skipped with a note where ruby is not
    installed."""
    out = tempfile.mkdtemp(prefix="mm-bench-harness-mm-")
    try:
        cmd = [sys.executable, os.path.join(BENCH, "run.py"), "--tiny", "--build-dir", build_dir,
               "--out", out, "--workloads", "xfree,ruby", "--allocs", "mmalloc,glibc",
               "--threads", "2", "--reps", "1", "--no-install", "--no-callgrind", "--no-plots"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        c.check("run.py with mmalloc and ruby exits 0", r.returncode == 0, r.stderr[-500:])
        with open(os.path.join(out, "results.csv")) as f:
            rows = list(csv.DictReader(f))
        with open(os.path.join(out, "report.md")) as f:
            md = f.read()
        mm = [x for x in rows if x["allocator"] == "mmalloc" and x["workload"] == "xfree"]
        c.check("mmalloc's scaling counters recorded for its runs",
                mm and all(x["mm_lock_acquisitions"] and int(x["mm_remote_batches"]) > 0
                           for x in mm), str([x.get("mm_remote_batches") for x in mm]))
        glibc = [x for x in rows if x["allocator"] == "glibc"]
        c.check("no scaling counters for other allocators",
                all(not x["mm_lock_acquisitions"] for x in glibc))
        c.check("report has mmalloc's scaling counters",
                "## mmalloc's scaling counters" in md and "| xfree | 2 |" in md)
        line = next((l for l in md.splitlines() if l.startswith("| xfree | 2 |")), "")
        waits = statistics.median(int(x["mm_lock_waits"]) for x in mm) if mm else -1
        c.check("the scaling table ends with the operations and the waits in all",
                line.split("|")[-3:-1] == [" %s " % mm[0]["ops"], " %.0f " % waits] if mm else False,
                line)
        rep = subprocess.run([sys.executable, os.path.join(BENCH, "report.py"), out + "-missing"],
                             capture_output=True, text=True, timeout=60)
        c.check("report.py on a directory without results.csv: exit 2, one line naming it",
                rep.returncode == 2 and "results.csv" in rep.stderr and
                len(rep.stderr.splitlines()) == 1, rep.stderr[-300:])
        rb = [x for x in rows if x["workload"] == "ruby"]
        if shutil.which("ruby"):
            c.check("ruby runs ok on both allocators, one checksum",
                    len(rb) == 2 and all(x["status"] == "ok" for x in rb) and
                    len({x["checksum"] for x in rb}) == 1, str([(x["status"], x["detail"]) for x in rb]))
        else:
            c.check("without ruby its runs are skipped with a note",
                    not rb and "ruby skipped" in md + r.stderr)
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
