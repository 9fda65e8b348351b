#!/usr/bin/env python3
"""overhead.py — what tracing costs: each program run untraced, under
`mmtrace record` and under heaptrack, alternating, several repetitions;
median wall time, the ratio to the untraced run, and the trace's bytes per
call, and each mode's paired ratio (the median over the repetitions of
its time over the untraced run's in the same repetition, which cancels a
machine's slower and faster stretches).  Results:
bench/results/<date>-<HHMM>-trace-overhead-<host>/
(results.csv, report.md; --out DIR to choose), as bench/run.py names its
own: a second run the same day does not overwrite the first.

    python3 trace/overhead.py [--reps N] [--build-dir build] [--cases a,b] [--out DIR]
                              [--recorder NAME=BUILD_DIR]... [--no-heaptrack]

--recorder adds another build's recorder (another commit's, built in
BUILD_DIR) as one more mode, mmtrace-NAME, alternating with the others: a
before/after comparison in one run.

Cases: python (a two-thread CPython script with PYTHONMALLOC=malloc, every
object through malloc), bwa (bwa mem -t 2 on the quick synthetic genome of
make bench), and the pure allocation loops of make bench at 2 threads
(larson, recycle, xfree, quick sizes): the worst case, nothing but calls.
"""
import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "bench"))

PY_SCRIPT = r'''
import json, threading
def work(seed):
    d = {}
    for i in range(300000):
        k = str((i * 7919 + seed) % 5000)
        d[k] = [i, k * 3, {"k": i, "s": k}]
    json.dumps(sorted(d.items())[:2000])
ts = [threading.Thread(target=work, args=(s,)) for s in range(2)]
[t.start() for t in ts]
[t.join() for t in ts]
'''


def python_binary():
    """The interpreter itself, as it names itself (sys.executable): the
    python3.11 on PATH may be a wrapper script (pyenv's shims are bash
    scripts that run several programs before the interpreter), which would
    be timed and traced with it."""
    for py in (shutil.which("python3.11"), shutil.which("python3"), "/usr/bin/python3"):
        if not py:
            continue
        r = subprocess.run([py, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True)
        exe = r.stdout.strip()
        if r.returncode == 0 and exe and os.access(exe, os.X_OK):
            return os.path.realpath(exe)
    raise SystemExit("overhead: no python3 interpreter found")


def python_case(tmp):
    """The CPython program (PY_SCRIPT in tmp): (command, environment)."""
    script = os.path.join(tmp, "dicts.py")
    with open(script, "w") as f:
        f.write(PY_SCRIPT)
    return [python_binary(), script], {"PYTHONMALLOC": "malloc"}


def bwa_case(size, who):
    """bwa mem -t 2 on make bench's genome of that size (made and cached
    by bench/bwa_data.py): (command, environment), or None without bwa."""
    import bwa_data
    import suite
    try:
        if bwa_data.tools_missing():
            return None
        q = suite.BWA[size]
        ref, r1, r2 = bwa_data.prepare(os.path.join(ROOT, "bench", "data"), q["genome_bp"], q["pairs"],
                                       log=lambda m: print(m, file=sys.stderr))
        return bwa_data.command(2, ref, r1, r2), {}
    except Exception as e:  # the other cases still run
        print(f"{who}: bwa left out: {e}", file=sys.stderr)
        return None


def cases(build, tmp):
    import suite
    out = {"python": python_case(tmp)}
    bwa = bwa_case("quick", "overhead")
    if bwa:
        out["bwa"] = bwa
    for w in ("larson", "recycle", "xfree"):
        out[w] = ([os.path.join(build, "bench", w), "threads=2"] + suite.args_for(w, "quick"), {})
    return out


def run_once(cmd, env, mode, builds, tmp):
    """builds: mode -> the build directory whose mmtrace records it."""
    e = dict(os.environ, **env)
    if mode in builds:
        cmd = [os.path.join(builds[mode], "mmtrace"), "record", "-o", os.path.join(tmp, "t.mmtrace"), "--"] + cmd
    elif mode == "heaptrack":
        cmd = ["heaptrack", "-o", os.path.join(tmp, "h")] + cmd
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"overhead: {mode} {' '.join(cmd)} failed ({r.returncode}): {r.stderr[-500:]}")
    return dt


def trace_size(build, tmp):
    """(bytes, calls) over every file of the last recording."""
    total_b = total_n = 0
    for f in os.listdir(tmp):
        if not f.startswith("t.mmtrace"):
            continue
        p = os.path.join(tmp, f)
        info = subprocess.run([os.path.join(build, "mmtrace"), "info", "--partial", p],
                              capture_output=True, text=True).stdout
        for line in info.splitlines():
            if line.startswith("events"):
                parts = line.split()
                total_n += int(parts[1])
                total_b += int(parts[3])
    return total_b, total_n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--cases", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--recorder", action="append", default=[], metavar="NAME=BUILD_DIR")
    ap.add_argument("--no-heaptrack", action="store_true")
    a = ap.parse_args()
    build = os.path.abspath(a.build_dir)
    builds = {"mmtrace": build}
    for spec in a.recorder:
        name, sep, d = spec.partition("=")
        if not sep or not name or not os.path.exists(os.path.join(d, "mmtrace")):
            ap.error(f"--recorder {spec}: NAME=BUILD_DIR, with BUILD_DIR/mmtrace built")
        builds[f"mmtrace-{name}"] = os.path.abspath(d)
    modes = ["plain"] + list(builds)
    if not a.no_heaptrack:
        if shutil.which("heaptrack"):
            modes.append("heaptrack")
        else:
            print("overhead: heaptrack is not installed (apt-get install heaptrack): left out", file=sys.stderr)
    tmp = tempfile.mkdtemp(prefix="mmtrace-overhead-")
    all_cases = cases(build, tmp)
    names = [c for c in (a.cases.split(",") if a.cases else all_cases) if c in all_cases]
    times = {(c, m): [] for c in names for m in modes}
    sizes = {}
    for rep in range(a.reps):
        for c in names:
            cmd, env = all_cases[c]
            for m in (modes if rep % 2 == 0 else list(reversed(modes))):
                for f in os.listdir(tmp):
                    if f.startswith(("t.mmtrace", "h.")):
                        os.unlink(os.path.join(tmp, f))
                times[(c, m)].append(run_once(cmd, env, m, builds, tmp))
                if m == "mmtrace" and c not in sizes:
                    sizes[c] = trace_size(build, tmp)
            print(f"rep {rep + 1}/{a.reps} {c}: " + ", ".join(f"{m} {times[(c, m)][-1]:.2f} s" for m in modes),
                  file=sys.stderr)
    host = platform.node() or "host"
    out = a.out or os.path.join(ROOT, "bench", "results",
                                f"{datetime.datetime.now().strftime('%Y-%m-%d-%H%M')}-trace-overhead-{host}")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.csv"), "w") as f:
        f.write("case,mode,rep,seconds\n")
        for (c, m), ts in times.items():
            for i, t in enumerate(ts):
                f.write(f"{c},{m},{i},{t:.4f}\n")
    others = [m for m in modes if m not in ("plain", "mmtrace")]
    command = " ".join(["python3 trace/overhead.py", f"--reps {a.reps}"]
                       + ([f"--cases {a.cases}"] if a.cases else [])
                       + [f"--recorder {r.partition('=')[0]}=..." for r in a.recorder]
                       + (["--no-heaptrack"] if a.no_heaptrack else []))
    lines = ["# Tracing overhead", "",
             f"`{command}` on {host} ({os.cpu_count()} CPUs), "
             f"{datetime.date.today().isoformat()}. Median wall time of {a.reps} runs, modes alternating; "
             "ratio: of the medians, to the untraced run's; paired: the median over the repetitions of each "
             "run's time over the untraced run's in the same repetition (which cancels the machine's slower "
             "and faster stretches); trace bytes per recorded call."
             + (f" The python case runs `{all_cases['python'][0][0]}`." if "python" in names else ""), "",
             "| case | untraced s | mmtrace s | ratio | paired | " + "".join(f"{m} s | ratio | paired | " for m in others)
             + "calls | bytes/call |",
             "|---|---|---|---|---|" + "---|---|---|" * len(others) + "---|---|"]

    def paired(c, m):
        return statistics.median(t / u for t, u in zip(times[(c, m)], times[(c, "plain")]))

    for c in names:
        med = {m: statistics.median(times[(c, m)]) for m in modes}
        b, n = sizes.get(c, (0, 0))
        rest = "".join(f"{med[m]:.2f} | {med[m] / med['plain']:.2f} | {paired(c, m):.2f} | " for m in others)
        lines.append(f"| {c} | {med['plain']:.2f} | {med['mmtrace']:.2f} | {med['mmtrace'] / med['plain']:.2f} | "
                     f"{paired(c, 'mmtrace'):.2f} | {rest}{n} | {b / n if n else 0:.2f} |")
    open(os.path.join(out, "report.md"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
