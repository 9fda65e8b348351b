#!/usr/bin/env python3
"""Smoke tests of the bench workloads (ctest label "bench"; not a benchmark).

  smoke.py --build-dir B --workload W   runs W with its tiny arguments on glibc
      (no preload) at 1 and 3 threads and checks the JSON line: fields,
      types, and the checksum against the expected value.  The expected
      value is computed here independently where the checksum has a closed
      form (recycle, consume, xfree, threadtest, knary, cache-thrash, handoff), and
      otherwise read from expected.json, recorded from an earlier run; in
      both cases the same run on a second allocator (the first of jemalloc,
      mimalloc, tcmalloc found) must give the same checksum, and workloads
      whose result does not depend on the thread count must give the same
      checksum at 1 and 3 threads.
  smoke.py --build-dir B --broken       runs every workload on a deliberately
      broken allocator (tests/broken_alloc.c: hands out the same block twice)
      and checks that none of them reports success with the right checksum.
  smoke.py --build-dir B --update       rewrites expected.json (only after a
      deliberate change to what a workload computes).

Exit status 0 when every check passes; prints one line per check and a
'N passed, N failed' summary.
"""

import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import allocators  # noqa: E402
import suite  # noqa: E402

EXPECTED = os.path.join(HERE, "expected.json")
THREADS = [1, 3]
# the checksum of these does not depend on the thread count
THREAD_INDEPENDENT = {"recycle", "consume", "xfree", "threadtest", "knary", "barnes", "align",
                      "pipeline", "cache-thrash", "handoff", "gcstrings"}
# knobs of the broken allocator per workload (defaults: after 2000 calls, every 97th)
BROKEN_ENV = {"realloc-grow": {"BROKEN_AFTER": "0", "BROKEN_EVERY": "2"},
              "barnes": {"BROKEN_AFTER": "200", "BROKEN_EVERY": "31"},
              "align": {"BROKEN_AFTER": "200", "BROKEN_EVERY": "31"},
              # most of its mallocs are temporary cubes, freed at once
              "cover": {"BROKEN_AFTER": "200", "BROKEN_EVERY": "31"}}
# one live object per thread: a block handed out twice never overlaps live data
BROKEN_SKIP = {"cache-scratch": "one live object per thread at a time: a duplicate hand-out "
                                "cannot overlap live data",
               "cache-thrash": "one live object per thread at a time: a duplicate hand-out "
                               "cannot overlap live data"}

M64 = (1 << 64) - 1


def mix64(x):
    x = (x + 0x9e3779b97f4a7c15) & M64
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M64
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M64
    return x ^ (x >> 31)


def verified(id_):
    """What tag_verify() folds into a checksum for object `id_`."""
    return mix64(id_ ^ 0xC0FFEE)


def kv(args):
    return {k: int(v) for k, v in (a.split("=") for a in args)}


def sized_sum(n, lo, hi, salt):
    """Objects 0..n-1, each folding its verified tag and its size, drawn as
    lo + mix64(id ^ salt) % (hi - lo)."""
    s = 0
    for i in range(n):
        s += verified(i) + lo + mix64(i ^ (salt & M64)) % (hi - lo)
    return s & M64


def closed_form(name, p, threads):
    """The checksum computed here from the arguments alone, or None."""
    if name == "recycle":
        return sized_sum(p["calls"], p.get("min", 16), p.get("max", 128), p.get("seed", 1) << 32)
    if name == "consume":
        return sized_sum(p["objects"], p.get("min", 16), p.get("max", 256), p.get("seed", 7) << 24)
    if name == "handoff":
        return sized_sum(p["objects"], p.get("min", 16), p.get("max", 256), p.get("seed", 13) << 32)
    if name == "xfree":
        seed = p.get("seed", 3)
        return sum(verified(i + seed) for i in range(p["objects"])) & M64
    if name == "threadtest":
        seed = p.get("seed", 11)
        n = p.get("iterations", 100) * p.get("objects", 100000)
        return sum(verified(seed + i) for i in range(n)) & M64
    if name == "knary":
        k, depth = p.get("k", 4), p.get("depth", 10)
        s, level_first, level_size = 0, 0, 1
        for d in range(depth + 1):
            for i in range(level_first, level_first + level_size):
                s += verified(i) + d
            level_first += level_size
            level_size *= k
        return (2 * s) & M64   # traversal and free both fold every node
    if name == "cache-thrash":
        seed, reps = p.get("seed", 5), p.get("repetitions", 100)
        return sum(mix64(seed + i) + (reps & 0xFF) for i in range(p["iterations"])) & M64
    return None


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        detail = " / ".join(str(detail).split("\n")).strip()
        show = detail and (not ok or name.endswith("does not pass for a result"))
        print("%s: %s%s" % ("PASS" if ok else "FAIL", name, (" — " + detail) if show else ""))
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok


def run(binary, args, preload=None, extra_env=None, timeout=120):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload
    env.update(extra_env or {})
    r = subprocess.run([binary] + args, env=env, capture_output=True, text=True,
                       timeout=timeout)
    data = None
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                pass
    return r, data


def second_allocator():
    cache = allocators._ldconfig_paths()
    for name, soname, _ in allocators.PEERS[1:4]:
        path = allocators.find_library(soname, cache)
        if path:
            return name, path
    return None, None


def smoke(bindir, name, c):
    binary = os.path.join(bindir, name)
    tiny = suite.args_for(name, "tiny")
    expected = {}
    if os.path.exists(EXPECTED):
        with open(EXPECTED) as f:
            expected = json.load(f)
    peer, peer_path = second_allocator()
    sums = {}
    for t in THREADS:
        args = ["threads=%d" % t] + tiny
        tag = "%s threads=%d" % (name, t)
        r, data = run(binary, args)
        if not c.check(tag + ": exits 0", r.returncode == 0,
                       "exit %d: %s" % (r.returncode, r.stderr.strip()[-200:])):
            continue
        if not c.check(tag + ": prints one JSON line", data is not None, r.stdout[-200:]):
            continue
        fields = {"workload": str, "threads": int, "ops": int, "seconds": (int, float),
                  "ops_per_sec": (int, float), "checksum": str, "maxrss_kb": int,
                  "params": dict}
        bad = [k for k, ty in fields.items() if not isinstance(data.get(k), ty)]
        c.check(tag + ": JSON fields and types", not bad, "bad: %s" % bad)
        c.check(tag + ": names itself and its threads",
                data.get("workload") == name and data.get("threads") == t)
        c.check(tag + ": did work", data.get("ops", 0) > 0 and data.get("seconds", -1) >= 0)
        c.check(tag + ": echoes its arguments",
                all(data["params"].get(k) == v for k, v in kv(args).items()))
        cs = data.get("checksum", "")
        if not c.check(tag + ": checksum is 16 hex digits", bool(re.fullmatch(r"[0-9a-f]{16}", cs)),
                       cs):
            continue
        sums[t] = cs
        cf = closed_form(name, kv(args), t)
        if cf is not None:
            c.check(tag + ": checksum equals the closed form computed here",
                    cs == "%016x" % cf, "%s vs %016x" % (cs, cf))
        else:
            key = "%s threads=%d" % (name, t)
            c.check(tag + ": checksum equals the recorded value (tests/expected.json)",
                    expected.get(key) == cs, "%s vs recorded %s" % (cs, expected.get(key)))
        if peer_path:
            r2, d2 = run(binary, args, preload=peer_path)
            c.check(tag + ": same checksum on %s" % peer,
                    r2.returncode == 0 and d2 is not None and d2.get("checksum") == cs,
                    "exit %d, %s" % (r2.returncode, d2 and d2.get("checksum")))
    if name in THREAD_INDEPENDENT and len(sums) == len(THREADS):
        c.check("%s: checksum independent of the thread count" % name,
                len(set(sums.values())) == 1, str(sums))


def update(bindir):
    rec = {}
    for name in suite.WORKLOADS:
        for t in THREADS:
            r, data = run(os.path.join(bindir, name), ["threads=%d" % t] +
                          suite.args_for(name, "tiny"))
            if r.returncode != 0 or not data:
                raise SystemExit("%s threads=%d failed: %s" % (name, t, r.stderr))
            if closed_form(name, kv(["threads=%d" % t] + suite.args_for(name, "tiny")), t) is None:
                rec["%s threads=%d" % (name, t)] = data["checksum"]
    with open(EXPECTED, "w") as f:
        json.dump(rec, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote %s (%d values)" % (EXPECTED, len(rec)))


def broken(bindir, c):
    lib = os.path.join(bindir, "libbroken_alloc.so")
    if not c.check("broken allocator built", os.path.exists(lib), lib):
        return
    for name in suite.WORKLOADS:
        if name in BROKEN_SKIP:
            print("SKIP: %s — %s" % (name, BROKEN_SKIP[name]))
            continue
        args = ["threads=2"] + suite.args_for(name, "tiny")
        _, good = run(os.path.join(bindir, name), args)
        r, data = run(os.path.join(bindir, name), args, preload=lib,
                      extra_env=BROKEN_ENV.get(name))
        if r.returncode == 3:
            how = "caught: %s" % r.stderr.strip().splitlines()[-1][:120]
        elif r.returncode < 0:
            how = "crashed (signal %d)" % -r.returncode
        elif r.returncode != 0:
            how = "failed (exit %d)" % r.returncode
        elif data and good and data.get("checksum") != good.get("checksum"):
            how = "wrong checksum (the harness marks it)"
        else:
            how = "NOT caught: exit 0 and the right checksum"
        c.check("%s on a broken allocator does not pass for a result" % name,
                not how.startswith("NOT"), how)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--workload")
    ap.add_argument("--broken", action="store_true")
    ap.add_argument("--update", action="store_true")
    a = ap.parse_args()
    bindir = os.path.join(a.build_dir, "bench")
    if a.update:
        update(bindir)
        return 0
    c = Checks()
    if a.broken:
        broken(bindir, c)
    elif a.workload:
        if a.workload not in suite.WORKLOADS:
            raise SystemExit("unknown workload %s" % a.workload)
        smoke(bindir, a.workload, c)
    else:
        for name in suite.WORKLOADS:
            smoke(bindir, name, c)
    print("%d passed, %d failed" % (c.passed, c.failed))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
