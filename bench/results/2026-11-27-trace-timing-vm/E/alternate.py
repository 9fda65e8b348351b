"""Alternating comparison of E (recorder + carried rest) against HEAD's
recorder: per program, 3 rounds; each round records one trace with each
recorder, replays each (E's trace with and without the carry) on glibc and
mmalloc (--reps 1), and runs the real program on both; the order of the
variants alternates between rounds.  Prints per program and allocator the
median over the rounds of each variant's replay time over the real time of
the same round."""
import os, re, statistics, subprocess, sys
# usage: alternate.py E_BUILD HEAD_BUILD (run from the repository root; /tmp/cx/dicts.py is
# trace/overhead.py's PY_SCRIPT and /tmp/cx/cxxprog test/preload/cxxprog.cpp built with g++ -O2)
E, M = sys.argv[1], sys.argv[2]   # build dirs: E applied (with MMT_NO_DEBT read by the reader), and HEAD
ALLOCS = [("glibc", ""), ("mmalloc", M + "/libmmalloc.so")]
sys.path.insert(0, "trace")
import overhead
PY = overhead.python_binary()
PROGS = {"python": ([PY, "/tmp/cx/dicts.py"], {"PYTHONMALLOC": "malloc"}),
         "cxx": (["/tmp/cx/cxxprog", "200000"], {}),
         "recycle": ([M + "/bench/recycle", "threads=2"], {}),
         "larson": ([M + "/bench/larson", "threads=2"], {})}
def replay(mm, trace, path, env):
    r = subprocess.run([mm + "/mmtrace", "replay", trace, "--alloc", path or "glibc", "--reps", "1"], capture_output=True, text=True, env=env)
    return float(re.search(r"^\| \S+ \| ([0-9.]+) \|", r.stdout, re.M).group(1))
def real(cmd, env, path):
    e = dict(env)
    if path: e["LD_PRELOAD"] = path
    r = subprocess.run(["/usr/bin/time", "-f", "%e"] + cmd, capture_output=True, text=True, env=e)
    return float(r.stderr.strip().splitlines()[-1])
for name, (cmd, extra) in PROGS.items():
    env = dict(os.environ, **extra)
    ratios = {}
    for rnd in range(3):
        tr = {}
        for v, mm in (("E", E), ("HEAD", M)) if rnd % 2 == 0 else (("HEAD", M), ("E", E)):
            tr[v] = f"/tmp/cx/alt-{name}-{v}.mmt"
            subprocess.run([mm + "/mmtrace", "record", "-o", tr[v], "--"] + cmd, env=env, capture_output=True)
        for a, path in ALLOCS:
            modes = [("E-carry", E, tr["E"], {}), ("E-nocarry", E, tr["E"], {"MMT_NO_DEBT": "1"}), ("HEAD", M, tr["HEAD"], {})]
            if rnd % 2: modes.reverse()
            t_real = real(cmd, env, path)
            for mode, mm, t, menv in modes:
                x = replay(mm, t, path, dict(os.environ, **menv))
                ratios.setdefault((a, mode), []).append(x / t_real)
            real(cmd, env, path)   # a second real run, not used (it ran so; kept as it ran)
    for a, _ in ALLOCS:
        print(name, a, "  ".join(f"{m} {statistics.median(ratios[(a, m)]):.2f}" for m in ("E-carry", "E-nocarry", "HEAD")), flush=True)
