#!/usr/bin/env python3
"""The fast path instruction by instruction: what callgrind counts in malloc
and free per malloc+free pair, for any allocator.

Owns the per-instruction view behind the fast-path table of bench/callgrind.py
(which gives only the totals): bench/fastpath (one thread, batches of 64
malloc then 64 free of one size) runs under callgrind with --dump-instr=yes,
the allocator preloaded; the instructions executed inside the functions named
(malloc and free by default) are listed with how often each ran per pair, in
address order, beside objdump's disassembly of the library.  The bench loop's
own instructions are not in the listing, so the sums are a few instructions
below callgrind.py's per-pair figures.

    python3 bench/fastpath_breakdown.py [--alloc NAME=PATH ...] [--size 64]
                                        [--batches 20000] [--functions malloc,free]

Without --alloc: this tree's mmalloc (build/libmmalloc.so) and mimalloc where
installed.  Needs valgrind and objdump.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import allocators  # noqa: E402
import callgrind  # noqa: E402

NAME_LINE = re.compile(r"^(fn|ob|fl|fi|fe|cfn|cob|cfi|cfl)=\((\d+)\)\s*(.*)$")
COST_LINE = re.compile(r"^(0x[0-9a-f]+|[+-]\d+|\*)\s+\S+\s+(\d+)")


def instruction_counts(path, functions):
    """{function: Counter(address: executions)} from a callgrind file written
    with --dump-instr=yes (positions: instr line); the costs of call lines
    (inclusive costs of the callee) are skipped."""
    names, counts = {}, {f: Counter() for f in functions}
    fn, last, skip = None, 0, False
    with open(path) as f:
        for line in f:
            m = NAME_LINE.match(line)
            if m:
                kind, ident, name = m.groups()
                key = kind.lstrip("c")
                key = "fl" if key in ("fi", "fe") else key
                if name:
                    names[(key, ident)] = name.strip()
                if kind == "fn":
                    fn = names.get((key, ident))
                continue
            if line.startswith("calls="):
                skip = True
                continue
            m = COST_LINE.match(line)
            if not m:
                continue
            a = m.group(1)
            addr = int(a, 16) if a.startswith("0x") else last if a == "*" else last + int(a)
            last = addr
            if skip:
                skip = False
                continue
            if fn in counts:
                counts[fn][addr] += int(m.group(2))
    return counts


def disassembly(lib):
    """{address: 'instruction'} of the library, as objdump prints it (AT&T)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", lib], capture_output=True,
                         text=True, check=True).stdout
    ins = {}
    for line in out.splitlines():
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if m:
            ins[int(m.group(1), 16)] = re.sub(r"\s+", " ", m.group(2)).strip()
    return ins


def breakdown(binary, alloc, size, batches, functions):
    """Lines of text: per function, each instruction run at least 0.05 times
    per pair, its count per pair, address and text; then the function's sum."""
    pairs = 64.0 * batches
    with tempfile.TemporaryDirectory(prefix="mm-breakdown-") as tmp:
        out = os.path.join(tmp, "cg.out")
        try:
            callgrind._run(binary, alloc, size, batches, out, 600, ["--dump-instr=yes"])
            callgrind.check_loaded(alloc, out)
        except (RuntimeError, ValueError, OSError, subprocess.SubprocessError) as e:
            raise SystemExit("fastpath_breakdown: %s: %s" % (alloc.name, e))
        counts = instruction_counts(out, functions)
    lib = os.path.realpath(alloc.path) if alloc.path else None
    ins = disassembly(lib) if lib else {}
    lines = ["## %s, %d-byte blocks (%s)" % (alloc.name, size, lib or "the C library"), ""]
    total = 0.0
    for fn in functions:
        rows = [(a, c / pairs) for a, c in sorted(counts[fn].items()) if c / pairs >= 0.05]
        s = sum(c for _, c in rows)
        total += s
        lines.append("%s: %.1f instructions per pair" % (fn, s))
        lines.append("")
        lines.append("    per pair  address  instruction")
        for a, c in rows:
            lines.append("    %8.2f  %7x  %s" % (c, a, ins.get(a, "?")[:80]))
        lines.append("")
    lines.append("%s: %.1f instructions per pair in %s" % (alloc.name, total, " and ".join(functions)))
    lines.append("")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--alloc", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--batches", type=int, default=20000)
    ap.add_argument("--functions", default="malloc,free")
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    args = ap.parse_args(argv)
    for tool in ("valgrind", "objdump"):
        if not shutil.which(tool):
            sys.stderr.write("fastpath_breakdown: %s is not installed\n" % tool)
            return 2
    binary = os.path.join(args.build_dir, "bench", "fastpath")
    if not os.path.exists(binary):
        sys.stderr.write("fastpath_breakdown: %s missing: run make first\n" % binary)
        return 2
    allocs = []
    for spec in args.alloc:
        name, _, path = spec.partition("=")
        if not path or not os.path.exists(path):
            sys.stderr.write("fastpath_breakdown: --alloc %s: no such library\n" % spec)
            return 2
        allocs.append(allocators.Allocator(name, os.path.abspath(path), origin="user"))
    if not allocs:
        mm = os.path.join(args.build_dir, "libmmalloc.so")
        if os.path.exists(mm):
            allocs.append(allocators.Allocator("mmalloc", mm, origin="mmalloc"))
        mi = allocators.find_library("libmimalloc.so.2")
        if mi:
            allocs.append(allocators.Allocator("mimalloc", mi))
    functions = [f for f in args.functions.split(",") if f]
    for a in allocs:
        print("\n".join(breakdown(binary, a, args.size, args.batches, functions)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
