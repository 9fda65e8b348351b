"""The benchmark suite: which workloads exist, with which arguments, per mode.

Owns the table that run.py (the harness) and tests/smoke.py (the ctest smoke
tests) share: every workload's binary, a one-line summary, and its arguments
in each mode:

  tiny   the smoke tests: a fraction of a second on one core, still enough
         objects to cross page and size-class boundaries;
  quick  `make bench`: about half a second per run on two cores;
  full   `make bench FULL=1`: several seconds per run, bigger heaps.

The thread count is not in the arguments: the harness adds threads=T.
Everything here is plain data; no side effects on import.
"""

# Thread counts: 1 and 2 are real parallelism on the 2-core reference
# machine; 8, 32 and 128 oversubscribe it, which is how a small machine asks
# the many-core question (what happens when threads outnumber cores).
THREADS_FULL = [1, 2, 8, 32, 128]
THREADS_QUICK = [1, 2, 32]
REPS_FULL = 5
REPS_QUICK = 3

# The real program: bwa mem is run with these thread counts in every mode
# (the issue asks for 2 and 8), whatever --threads says, unless --threads
# names a subset of them.
BWA_THREADS = [2, 8]

WORKLOADS = {
    # name: (summary, {mode: args})
    "recycle": (
        "Streamflow Recycle: per-thread malloc/free bursts, no sharing",
        {"tiny": "calls=200000 rate=100",
         "quick": "calls=16000000",
         "full": "calls=64000000"}),
    "larson": (
        "Larson server model: random slot replacement by generations of threads",
        {"tiny": "slots=2000 ops=200000 rounds=3",
         "quick": "slots=8000 ops=4000000 rounds=4",
         "full": "slots=20000 ops=20000000 rounds=8"}),
    "handoff": (
        "threads that allocate, hand their objects over and exit, round after round",
        {"tiny": "objects=40000 rounds=20",
         "quick": "objects=2000000 rounds=200",
         "full": "objects=16000000 rounds=400"}),
    "consume": (
        "Streamflow Consume: one producer, C consumers, every free remote",
        {"tiny": "objects=100000 batch=128",
         "quick": "objects=1500000",
         "full": "objects=8000000"}),
    "xfree": (
        "allocate-only threads and free-only threads (64 B)",
        {"tiny": "objects=200000",
         "quick": "objects=2000000",
         "full": "objects=16000000"}),
    "threadtest": (
        "Hoard threadtest: per-thread FIFO batches of 64 B objects",
        {"tiny": "iterations=10 objects=20000",
         "quick": "iterations=150 objects=100000",
         "full": "iterations=500 objects=200000"}),
    "cache-scratch": (
        "Hoard cache-scratch: passive false sharing",
        {"tiny": "iterations=20000 repetitions=20",
         "quick": "iterations=400000 repetitions=200",
         "full": "iterations=2000000 repetitions=200"}),
    "cache-thrash": (
        "Hoard cache-thrash: active false sharing",
        {"tiny": "iterations=20000 repetitions=20",
         "quick": "iterations=400000 repetitions=200",
         "full": "iterations=2000000 repetitions=200"}),
    "knary": (
        "k-ary tree built, walked and freed by work-stealing threads",
        {"tiny": "k=4 depth=7 spawn=3",
         "quick": "k=4 depth=10 spawn=4",
         "full": "k=4 depth=11 spawn=5"}),
    "barnes": (
        "Barnes-Hut n-body, octree rebuilt every step",
        {"tiny": "bodies=2000 steps=2",
         "quick": "bodies=10000 steps=4",
         "full": "bodies=40000 steps=8"}),
    "mesh": (
        "parallel Delaunay refinement, split-edge messages between neighbours",
        {"tiny": "triangles=40000 seeds=200",
         "quick": "triangles=600000",
         "full": "triangles=4000000"}),
    "align": (
        "BWA-MEM's allocation pattern: batches, fresh workers, realloc'ed vectors",
        {"tiny": "reads=600 batch=200 reflen=200000",
         "quick": "reads=10000 batch=2500",
         "full": "reads=60000 batch=10000 reflen=2000000"}),
    "pipeline": (
        "dedup-like pipeline with zlib: frees at every stage boundary",
        {"tiny": "mb=2",
         "quick": "mb=24",
         "full": "mb=128"}),
    "gcstrings": (
        "interpreter string churn under a sweeping collector (the Ruby row's pattern)",
        {"tiny": "iterations=200000 retained=60000 sweep=8192",
         "quick": "iterations=2000000",
         "full": "iterations=8000000"}),
    "mixed": (
        "mixed sizes 8 B-16 KiB, random lifetimes, batches handed across threads (rptest's pattern)",
        {"tiny": "rounds=6 ops=20000 slots=2048 batch=256",
         "quick": "rounds=10 ops=20000",
         "full": "rounds=40 ops=50000"}),
    "cover": (
        "a logic minimiser's covers: cube arrays grown by realloc, split and merged (espresso's pattern)",
        {"tiny": "passes=8 cubes=100 depth=4",
         "quick": "passes=200",
         "full": "passes=1000 cubes=1000"}),
    "realloc-grow": (
        "vectors grown by doubling realloc from 16 B to 64 MiB",
        {"tiny": "vectors=4 max=1048576",
         "quick": "vectors=12",
         "full": "vectors=64"}),
}

# bwa mem on a synthetic genome (bench/bwa_data.py makes and caches it).
BWA = {
    "summary": "the real program: bwa mem on a synthetic genome, reads from dwgsim",
    "tiny": {"genome_bp": 300_000, "pairs": 2_000},
    "quick": {"genome_bp": 2_000_000, "pairs": 10_000},
    "full": {"genome_bp": 10_000_000, "pairs": 100_000},
}

# Real programs driven by a script of bench/real/ that prints a workload's
# JSON line: in `make bench FULL=1` (and whenever named with --workloads),
# beside bwa; each needs its Debian packages (skipped, with a note, without).
REAL = {
    "redis": {
        "summary": "the real program: Debian's redis-server driven by redis-benchmark with "
                   "pipelining (strings, counters, lists pushed, popped and ranged, a set, a hash)",
        "command": ["python3", "real/redis_bench.py"],
        "tools": ["redis-server", "redis-benchmark", "redis-cli"],
        "packages": "redis-server redis-tools",
        "threads": [1],
        "args": {"tiny": "requests=2000", "quick": "requests=20000", "full": "requests=20000"},
    },
    "ruby": {
        "summary": "the real program: Debian's ruby making short strings under its garbage "
                   "collector (0-40 B, a 100 KB string every 300, 600k retained)",
        "command": ["ruby", "real/strings.rb"],
        "tools": ["ruby"],
        "packages": "ruby",
        "threads": [1, 2],
        "args": {"tiny": "iterations=64000 retained=64000", "quick": "iterations=1000000",
                 "full": "iterations=1000000"},
    },
}

# Sizes of the callgrind fast-path micro-benchmark, and batches counted.
FASTPATH_SIZES = [16, 64, 256, 4096]
FASTPATH_BATCHES = {"tiny": 200, "quick": 4000, "full": 20000}


def args_for(name, mode):
    """The workload's argument list for a mode (without threads=)."""
    return WORKLOADS[name][1][mode].split()


def all_names():
    return list(WORKLOADS) + ["bwa"] + list(REAL)


def default_names(mode):
    """What runs when --workloads is not given: the real programs of REAL
    only in the full mode."""
    return list(WORKLOADS) + ["bwa"] + (list(REAL) if mode == "full" else [])


def summary(name):
    """The one-line description of a workload, bwa or a real program."""
    if name == "bwa":
        return BWA["summary"]
    if name in REAL:
        return REAL[name]["summary"]
    return WORKLOADS.get(name, ("",))[0]
