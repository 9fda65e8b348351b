"""Instructions per malloc+free pair, counted by callgrind.

Owns the fast-path micro-benchmark's method (docs/design.md, "How we know
it works": the fast path is measured in instructions per malloc+free pair,
counted by callgrind, a count that machine noise does not change): run
bench/fastpath (one thread, batches of 64 malloc then 64 free of one size)
under callgrind twice, with N batches and with none, the allocator
preloaded; the difference of the two instruction totals divided
by 64 N is the cost of one pair, the loop's own few instructions included.

Valgrind passes LD_PRELOAD from its environment on to the client (after its
own preloads), so the allocator is set in the environment of valgrind
itself.  To be sure the counted malloc is the preloaded one, the callgrind
output of each preloaded run must name the library among the objects it
executed; a run where it does not is reported as an error, not a number.
"""

import os
import re
import shutil
import subprocess
import tempfile


def available():
    return shutil.which("valgrind") is not None


def _total(path):
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise ValueError("no totals in %s" % path)


def _objects(path):
    objs = set()
    with open(path) as f:
        for line in f:
            m = re.match(r"c?ob=(?:\(\d+\)\s*)?(\S+)", line)
            if m:
                objs.add(os.path.basename(m.group(1)))
    return objs


def _run(binary, alloc, size, batches, out, timeout, options=()):
    env = alloc.env(os.environ)
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + list(options) + [
        binary, "size=%d" % size, "batches=%d" % batches]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("valgrind exit %d: %s" % (r.returncode, r.stderr.strip()[-200:]))
    return _total(out)


def check_loaded(alloc, out):
    """Raises RuntimeError unless the callgrind output names the preloaded library."""
    if alloc.path:
        want = os.path.basename(os.path.realpath(alloc.path)).split(".so")[0]
        if not any(o.startswith(want) for o in _objects(out)):
            raise RuntimeError("%s not among the executed objects" % want)


def measure(binary, alloc, sizes, batches, timeout=600):
    """{size: instructions per pair} or {size: 'error: ...'} for one allocator."""
    result = {}
    with tempfile.TemporaryDirectory(prefix="mm-callgrind-") as tmp:
        for size in sizes:
            try:
                base = os.path.join(tmp, "base.out")
                full = os.path.join(tmp, "full.out")
                ir0 = _run(binary, alloc, size, 0, base, timeout)
                ir1 = _run(binary, alloc, size, batches, full, timeout)
                check_loaded(alloc, full)
                result[size] = (ir1 - ir0) / (64.0 * batches)
            except (RuntimeError, ValueError, OSError, subprocess.SubprocessError) as e:
                result[size] = "error: %s" % e
    return result
