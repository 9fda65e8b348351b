"""Recorders and readers compared by how near a replay's time comes to the
real program's, alternating.  Per program, ROUNDS rounds; each round
records one trace with each variant's recorder, runs the real program on
each allocator, and replays each variant's trace with that variant's
mmtrace on the same allocator (--reps 1); the variants' order reverses
every round.  Prints, per program and allocator, the median over the rounds
of each variant's replay time over the real time of the same round, and
writes every figure to raw.csv.

    python3 alternate.py OUT_DIR ROUNDS NAME=BUILD_DIR ...
(run from the repository root; the programs and mmalloc come from build/)
"""
import csv, os, re, statistics, subprocess, sys
sys.path.insert(0, "trace")
sys.path.insert(0, "bench")
import overhead, suite

out, rounds = sys.argv[1], int(sys.argv[2])
variants = [a.split("=", 1) for a in sys.argv[3:]]
ALLOCS = [("glibc", ""), ("mmalloc", os.path.abspath("build/libmmalloc.so"))]
tmp = os.path.join(out, "tmp")
os.makedirs(tmp, exist_ok=True)
subprocess.run(["g++", "-O2", "-std=c++17", "-pthread", "-o", tmp + "/cxxprog", "test/preload/cxxprog.cpp"], check=True)
with open(tmp + "/dicts.py", "w") as f:
    f.write(overhead.PY_SCRIPT)
PROGS = {"python": ([overhead.python_binary(), tmp + "/dicts.py"], {"PYTHONMALLOC": "malloc"}),
         "cxx": ([tmp + "/cxxprog", "200000"], {})}
for w in ("larson", "recycle", "consume", "xfree"):
    PROGS[w] = (["build/bench/" + w, "threads=2"] + suite.args_for(w, "quick"), {})


def replay(mm, trace, path):
    r = subprocess.run([mm + "/mmtrace", "replay", trace, "--alloc", path or "glibc", "--reps", "1"],
                       capture_output=True, text=True)
    return float(re.search(r"^\| \S+ \| ([0-9.]+) \|", r.stdout, re.M).group(1))


def real(cmd, env, path):
    e = dict(env)
    if path:
        e["LD_PRELOAD"] = path
    r = subprocess.run(["/usr/bin/time", "-f", "%e"] + cmd, capture_output=True, text=True, env=e)
    return float(r.stderr.strip().splitlines()[-1])


rows = []
for name, (cmd, extra) in PROGS.items():
    env = dict(os.environ, **extra)
    ratios = {}
    for rnd in range(rounds):
        order = variants if rnd % 2 == 0 else variants[::-1]
        tr = {}
        for v, b in order:
            tr[v] = f"{tmp}/{name}-{v}.mmt"
            subprocess.run([b + "/mmtrace", "record", "-o", tr[v], "--"] + cmd, env=env, capture_output=True, check=True)
        for a, path in ALLOCS:
            t_real = real(cmd, env, path)
            rows.append((name, a, rnd, "real", t_real))
            for v, b in order:
                x = replay(b, tr[v], path)
                rows.append((name, a, rnd, v, x))
                ratios.setdefault((a, v), []).append(x / t_real)
    for a, _ in ALLOCS:
        print(name, a, "  ".join(f"{v} {statistics.median(ratios[(a, v)]):.2f}" for v, _ in variants), flush=True)
with open(os.path.join(out, "raw.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["program", "allocator", "round", "what", "seconds"])
    w.writerows(rows)
