#!/usr/bin/env python3
"""count.py NAME=LIB ... — instructions per malloc+free pair (callgrind,
bench/fastpath: one thread, batches of 64 malloc then 64 free of one size)
at 16 B to 32 KiB, for each preloaded library (NAME= with no library:
the C library's own malloc).  Run from the repository root after
`cmake --build build`."""
import os, sys
sys.path.insert(0, "bench")
import allocators, callgrind

SIZES = [16, 64, 256, 1024, 2048, 4096, 8192, 16384, 32768]
print("| allocator | " + " | ".join(str(s) for s in SIZES) + " |")
print("|---" * (len(SIZES) + 1) + "|")
for spec in sys.argv[1:]:
    name, lib = spec.split("=", 1)
    r = callgrind.measure("build/bench/fastpath", allocators.Allocator(name, os.path.abspath(lib) if lib else None), SIZES, 2000)
    print(f"| {name} | " + " | ".join(f"{r[s]:.1f}" for s in SIZES) + " |")
