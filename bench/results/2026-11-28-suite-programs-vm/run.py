#!/usr/bin/env python3
"""run.py OUT.csv REPS [names...]: each program of cmds.txt (beside this file;
$MB in it is the directory the programs were built in, default /tmp/mb, with
bin/ and the ruby script) under each allocator, allocators alternating (their
order rotated each repetition); one CSV row per run: name, allocator, rep,
exit status, score, wall s, max RSS KiB, minor faults.  The score is the
program's own time-like figure where it prints one (the timed programs run
for a fixed time: xmalloc-test's rtime, larson's relative time, 10^7 over
rptest's operations per CPU second, 10^9 over glibc-thread's iterations,
alloc-test's seconds), else the wall time; lower is better.
ALLOCS=a,b picks allocators; MMLIB is mmalloc's library."""
import subprocess, sys, re, os, csv, time
L = "/usr/lib/x86_64-linux-gnu/"
ALLOCS = {"glibc": None, "jemalloc": L+"libjemalloc.so.2", "tcmalloc": L+"libtcmalloc_minimal.so.4",
          "mimalloc": L+"libmimalloc.so.2", "tbbmalloc": L+"libtbbmalloc_proxy.so.2",
          "mmalloc": os.environ.get("MMLIB", "/work/main/build/libmmalloc.so")}
for kv in os.environ.get("EXTRA", "").split():
    k, v = kv.split("="); ALLOCS[k] = v
only = os.environ.get("ALLOCS")
if only: ALLOCS = {k: ALLOCS[k] for k in only.split(",")}
MB = os.environ.get("MB", "/tmp/mb")
here = os.path.dirname(os.path.abspath(__file__))
cmds = [l.rstrip("\n").replace("$MB", MB).split("\t") for l in open(os.path.join(here, "cmds.txt")) if l.strip()]
out, reps = sys.argv[1], int(sys.argv[2]); names = sys.argv[3:]
if names: cmds = [c for c in cmds if c[0] in names]
def score(name, text, wall):
    m = re.search(r"rtime: ([\d.]+)", text)
    if m: return float(m.group(1))
    m = re.search(r"relative time: ([\d.]+)s", text)
    if m: return float(m.group(1))
    m = re.search(r"(\d+) memory ops/CPU second", text)
    if m: return 1e7 / float(m.group(1))
    m = re.search(r"^(\d+) iterations", text, re.M)
    if m: return 1e9 / float(m.group(1))
    m = re.search(r"operations in (\d+) ms", text)
    if m: return float(m.group(1)) / 1000
    return wall
f = open(out, "a"); w = csv.writer(f)
an = list(ALLOCS)
for r in range(reps):
    for name, cmd in cmds:
        order = an[r % len(an):] + an[:r % len(an)]
        for a in order:
            env = dict(os.environ)
            if ALLOCS[a]: env["LD_PRELOAD"] = ALLOCS[a]
            t0 = time.time()
            p = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M %R", "timeout", "120"] + cmd.split(),
                               env=env, cwd=os.path.join(MB, "run"), capture_output=True, text=True)
            wall = time.time() - t0
            m = re.search(r"TIME ([\d.]+) (\d+) (\d+)", p.stderr)
            rss = int(m.group(2)) if m else -1; flt = int(m.group(3)) if m else -1
            s = score(name, p.stdout + p.stderr, wall)
            w.writerow([name, a, r, p.returncode, f"{s:.4f}", f"{wall:.3f}", rss, flt]); f.flush()
