#!/usr/bin/env python3
"""make_corpus.py — writes the fuzzer's seed corpus (test/fuzz/corpus/), its
dictionary (test/fuzz/mmalloc.dict) and the minimised reproducers of the bugs
it found (test/fuzz/crashes/), deterministically: the same files every run.

Each corpus file is a small program in fuzz_ops.c's input format that covers
one kind of operation (every op code, every size range, the boundaries, the
impossible sizes, the bad alignments, the helper thread, bursts, collection);
the mixed-* files are longer programs from a seeded generator.  The encoders
below mirror the decoder in fuzz_ops.c: keep the two in step.

usage: make_corpus.py [OUTDIR]   (default: the directory of this script)
"""
import os
import random
import sys

KiB = 1 << 10
MiB = 1 << 20
SIZE_MAX = (1 << 64) - 1
PTRDIFF_MAX = (1 << 63) - 1

OPS = {name: code for code, name in enumerate([
    "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "usable",
    "helper", "new_helper", "collect", "burst", "free_all", "purge_delay",
    "pool", "heap"])}
POOL_ACTIONS = ["alloc", "free", "release", "stats"]
POOL_SIZES = [16, 24, 56, 100, 256, 1000, 4096, 32768]
HEAP_ACTIONS = ["malloc", "calloc", "realloc", "aligned", "free", "destroy", "usable", "stats"]

# fuzz_ops.c's tables, in the same order.
BOUNDARY = [0, 1, 16, 17, 64, 65, 128, 1024, 1025, 4096, 4097, 8192, 32 * KiB,
            32 * KiB + 1, 64 * KiB, 1 * MiB, 2 * MiB, 33030144, 32 * MiB, 64 * MiB]
IMPOSSIBLE = [SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 4095, PTRDIFF_MAX + 1, PTRDIFF_MAX,
              1 << 62, 1 << 56, 1 << 50]
ODD_ALIGN = [0, 2, 3, 4, 12, 24, 48, 1000, 4097, 12288, 1 << 31, 1 << 33, 1 << 47,
             1 << 62, 1 << 63, (1 << 62) + 1, (1 << 63) | 1, SIZE_MAX]
ELEMS = [1, 2, 3, 8, 16, 24, 100, 4096, 65536]
N_OVERFLOW_PAIRS = 8


# ---- sizes ----------------------------------------------------------------

def boundary(index, delta=None):
    """BOUNDARY[index], or BOUNDARY[index] + delta (-128..127)."""
    if delta is None:
        return bytes([0xC0 | index])
    return bytes([0xC0 | (20 + index), delta + 128])


def huge(n):
    """16 MiB + k KiB, k < 65536."""
    k = (n - 16 * MiB) // KiB
    assert 0 <= k < 65536
    return bytes([0xC0 | 40, k & 255, k >> 8])


def impossible(value):
    return bytes([0xC0 | (44 + IMPOSSIBLE.index(value))])


def size(n):
    """An encoding of n bytes: exact, except odd large sizes above 2 MiB
    (one less) and huge sizes away from a boundary (whole KiB)."""
    if n in BOUNDARY:
        return boundary(BOUNDARY.index(n))
    if n in IMPOSSIBLE:
        return impossible(n)
    if n < 64:
        return bytes([n])
    if n <= 33 * KiB:
        v = n - 64
        return bytes([0x40, v & 255, v >> 8])
    if n <= 32 * KiB + 4 * MiB:
        d = n - 32 * KiB
        e, m = (6, d) if d < (1 << 21) else (7, d // 2)
        v = e << 21 | m
        return bytes([0x80, v & 255, (v >> 8) & 255, v >> 16])
    for i, b in enumerate(BOUNDARY):
        if -128 <= n - b <= 127:
            return boundary(i, n - b)
    return huge(n)


# ---- alignments and arrays --------------------------------------------------

def align(a):
    if a & (a - 1) == 0 and 1 <= a <= 4096:
        return bytes([a.bit_length() - 1])
    if a & (a - 1) == 0 and 8192 <= a <= 1 << 28:
        return bytes([128 + a.bit_length() - 1 - 13])
    i = ODD_ALIGN.index(a)
    return bytes([192 + (i - 192) % len(ODD_ALIGN)])


def elem(e):
    return bytes([ELEMS.index(e)])


ZERO_COUNT = bytes([9])


def overflow(k):
    return bytes([0xF0 + k])


# ---- operations ----------------------------------------------------------------

def malloc(slot, n):
    return bytes([OPS["malloc"], slot]) + size(n)


def calloc(slot, n, how=elem(1)):
    return bytes([OPS["calloc"], slot]) + size(n) + how


def realloc(slot, n):
    return bytes([OPS["realloc"], slot]) + size(n)


def reallocarray(slot, n, how=elem(1)):
    return bytes([OPS["reallocarray"], slot]) + size(n) + how


def free(slot):
    return bytes([OPS["free"], slot])


def aligned(op, slot, a, n):
    return bytes([OPS[op], slot]) + align(a) + size(n)


def valloc(slot, n):
    return bytes([OPS["valloc"], slot]) + size(n)


def pvalloc(slot, n):
    return bytes([OPS["pvalloc"], slot]) + size(n)


def usable(slot):
    return bytes([OPS["usable"], slot])


def on_helper(op_bytes):
    return bytes([OPS["helper"]]) + op_bytes


def new_helper():
    return bytes([OPS["new_helper"]])


def collect(on_helper_thread=False):
    return bytes([OPS["collect"], int(on_helper_thread)])


def burst(count, n, helper_allocates=False, helper_frees=False, zeroed=False, reverse=False):
    mode = helper_allocates | helper_frees << 1 | zeroed << 2 | reverse << 3
    return bytes([OPS["burst"], count - 1]) + size(n) + bytes([mode])


def free_all(who=0):
    return bytes([OPS["free_all"], who])


def purge_delay(ms):
    return bytes([OPS["purge_delay"], [0, 1, 10, 100].index(ms)])


def pool(obj, action, which=0, object_size=16, by_helper=False):
    """op 17: `action` on pool `which` (made with object_size on first use)."""
    how = POOL_ACTIONS.index(action) | which << 2 | by_helper << 3 | POOL_SIZES.index(object_size) << 4
    return bytes([OPS["pool"], obj, how])


def heap(obj, action, n=0, a=16, by_helper=False):
    """op 18: `action` on the input's heap; malloc..aligned take a size (aligned also an
    alignment first)."""
    k = HEAP_ACTIONS.index(action)
    out = bytes([OPS["heap"], obj, k | by_helper << 3])
    if k == 3:
        out += align(a)
    if k < 4:
        out += size(n)
    return out


def program(*steps):
    return b"".join(steps)


# ---- the corpus ----------------------------------------------------------------

def tiny_sizes():
    return program(*[malloc(i, n) for i, n in enumerate([0, 1, 8, 15, 16, 17, 33, 63])],
                   free(3), free(0), malloc(3, 24), free_all())


def corpus():
    files = {}
    files["malloc-tiny"] = tiny_sizes()
    files["malloc-small"] = program(*[malloc(i, n) for i, n in enumerate(
        [64, 100, 129, 1000, 1024, 1025, 3000, 4096, 8000, 16 * KiB, 32 * KiB, 33 * KiB])])
    files["malloc-large"] = program(
        *[malloc(i, n) for i, n in enumerate(
            [33 * KiB, 40 * KiB, 64 * KiB, 200 * KiB, 1 * MiB, 3 * MiB + 5, 4 * MiB])],
        free(2), malloc(2, 60 * KiB), free(4), free(5), malloc(4, 2 * MiB))
    files["malloc-huge"] = program(
        malloc(0, 33030144), malloc(1, 40 * MiB), free(0), malloc(2, 20 * MiB),
        malloc(0, 33030144 - 1), free(1), malloc(1, 72 * MiB))
    files["malloc-boundaries"] = program(
        *[malloc(i, BOUNDARY[i]) for i in range(17)],
        *[malloc(20 + i, BOUNDARY[i] + 5) for i in range(17)],
        *[bytes([OPS["malloc"], 40 + i]) + boundary(i, -1) for i in range(1, 17)])
    files["malloc-impossible"] = program(
        malloc(0, 100), *[malloc(1 + i, v) for i, v in enumerate(IMPOSSIBLE)], malloc(10, 100))
    files["malloc-reuse-slot"] = program(*[malloc(5, n) for n in [10, 5000, 100 * KiB, 10, 0]])
    files["calloc-small"] = program(
        calloc(0, 10), calloc(1, 1000, elem(8)), calloc(2, 32 * KiB, elem(4096)),
        calloc(3, 64, elem(16)))
    # dirty memory first: calloc must zero what it recycles
    files["calloc-recycled"] = program(
        malloc(0, 200 * KiB), malloc(1, 5000), malloc(2, 40), free(0), free(1), free(2),
        calloc(3, 200 * KiB), calloc(4, 5000, elem(100)), calloc(5, 40, elem(8)),
        malloc(6, 40 * MiB), free(6), calloc(7, 40 * MiB, elem(4096)))
    files["calloc-overflow"] = program(
        *[calloc(i, 10, overflow(i)) for i in range(N_OVERFLOW_PAIRS)],
        calloc(9, SIZE_MAX), calloc(10, SIZE_MAX, elem(3)))
    files["calloc-zero-count"] = program(
        calloc(0, 100, ZERO_COUNT), calloc(1, SIZE_MAX, ZERO_COUNT), calloc(2, 0))
    files["realloc-grow-shrink"] = program(
        malloc(0, 10), realloc(0, 100), realloc(0, 5000), realloc(0, 40 * KiB),
        realloc(0, 1 * MiB), realloc(0, 40 * MiB), realloc(0, 60 * MiB), realloc(0, 2 * MiB),
        realloc(0, 100 * KiB), realloc(0, 3000), realloc(0, 20), realloc(0, 1))
    files["realloc-in-place"] = program(
        malloc(0, 100 * KiB), realloc(0, 150 * KiB), realloc(0, 120 * KiB), realloc(0, 300 * KiB),
        malloc(1, 64), realloc(1, 48), realloc(1, 64), realloc(1, 20))
    files["realloc-null-zero"] = program(
        realloc(0, 100), realloc(1, 0), realloc(0, 0), malloc(2, 50 * KiB), realloc(2, 0),
        malloc(3, 40 * MiB), realloc(3, 0), realloc(4, 40 * KiB))
    files["realloc-impossible"] = program(
        malloc(0, 100), malloc(1, 100 * KiB), malloc(2, 40 * MiB),
        *[realloc(s, v) for s in range(3) for v in IMPOSSIBLE[:4]],
        realloc(0, 200), realloc(1, 200 * KiB))
    files["reallocarray"] = program(
        reallocarray(0, 1000, elem(8)), reallocarray(0, 100 * KiB, elem(24)),
        *[reallocarray(0, 10, overflow(k)) for k in range(7)],
        reallocarray(0, 10, ZERO_COUNT), reallocarray(1, 64, ZERO_COUNT))
    files["free-null"] = program(free(0), free(63), malloc(0, 10), free(0), free(0))
    files["posix-memalign"] = program(
        *[aligned("posix_memalign", i, 1 << (3 + i), 100 + 1000 * i) for i in range(18)])
    files["posix-memalign-bad"] = program(
        *[aligned("posix_memalign", i, a, 100) for i, a in enumerate(ODD_ALIGN)],
        aligned("posix_memalign", 20, 3, SIZE_MAX),
        aligned("posix_memalign", 21, 64, 1 << 50),
        aligned("posix_memalign", 22, 4096, SIZE_MAX))
    files["aligned-alloc"] = program(
        *[aligned("aligned_alloc", i, 1 << i, 10 + 100 * i) for i in range(21)],
        aligned("aligned_alloc", 30, 64, 4 * MiB),
        aligned("aligned_alloc", 31, 1 << 21, 40 * MiB))
    files["aligned-alloc-bad"] = program(
        *[aligned("aligned_alloc", i, a, 100) for i, a in enumerate(ODD_ALIGN)],
        aligned("aligned_alloc", 20, 64, SIZE_MAX))
    files["memalign"] = program(
        *[aligned("memalign", i, a, 1000 + i) for i, a in enumerate(ODD_ALIGN)],
        aligned("memalign", 20, 1 << 16, 100 * KiB),
        aligned("memalign", 21, 1 << 28, 64),
        aligned("memalign", 22, 8192, 33030144))
    files["valloc-pvalloc"] = program(
        valloc(0, 0), valloc(1, 1), valloc(2, 5000), valloc(3, 1 * MiB), valloc(4, SIZE_MAX),
        pvalloc(5, 0), pvalloc(6, 1), pvalloc(7, 4097), pvalloc(8, 100 * KiB),
        pvalloc(9, SIZE_MAX), pvalloc(10, SIZE_MAX - 4095), pvalloc(11, PTRDIFF_MAX + 1))
    files["usable"] = program(
        usable(0), malloc(0, 17), usable(0), malloc(1, 40 * KiB + 3), usable(1),
        realloc(0, 100), realloc(1, 100 * KiB), usable(1), realloc(1, 10 * KiB),
        aligned("aligned_alloc", 2, 4096, 5000), usable(2), realloc(2, 9000))
    files["helper-remote-free"] = program(
        *[malloc(i, 24 + i * 8) for i in range(40)],
        *[on_helper(free(i)) for i in range(40)],
        *[malloc(i, 24) for i in range(8)])
    files["helper-allocates"] = program(
        *[on_helper(malloc(i, 100 * (i + 1))) for i in range(20)],
        on_helper(malloc(20, 200 * KiB)), on_helper(calloc(21, 5000)),
        on_helper(aligned("posix_memalign", 22, 4096, 300)),
        *[free(i) for i in range(23)])
    files["helper-realloc"] = program(
        malloc(0, 100), on_helper(realloc(0, 200)), on_helper(realloc(0, 50 * KiB)),
        realloc(0, 60), on_helper(malloc(1, 40)), realloc(1, 5000),
        on_helper(usable(0)), on_helper(realloc(1, 0)))
    files["helper-exits"] = program(
        *[on_helper(malloc(i, 16 + 16 * (i % 8))) for i in range(30)],
        on_helper(malloc(30, 100 * KiB)), new_helper(),
        *[free(i) for i in range(0, 31, 2)],
        *[malloc(i, 32) for i in range(0, 30, 2)],
        new_helper(), *[on_helper(free(i)) for i in range(1, 31, 2)],
        collect(True), collect(False))
    files["burst-remote"] = program(
        burst(200, 48, helper_frees=True), burst(256, 16),
        burst(100, 3000, helper_allocates=True, reverse=True),
        burst(40, 1000, helper_allocates=True, helper_frees=True, zeroed=True),
        burst(33, 64, helper_frees=True))
    files["burst-big"] = program(
        burst(8, 1 * MiB, helper_frees=True), burst(2, 4 * MiB, zeroed=True),
        burst(1, 40 * MiB, helper_allocates=True))
    files["collect"] = program(
        malloc(0, 1 * MiB), malloc(1, 100), free(0), collect(), malloc(2, 1 * MiB),
        on_helper(malloc(3, 64)), free(3), collect(True), calloc(4, 1 * MiB))
    files["purge-delay"] = program(
        purge_delay(0), malloc(0, 2 * MiB), malloc(1, 100 * KiB), free(0), malloc(2, 1 * MiB),
        realloc(1, 300 * KiB), free(2), calloc(3, 2 * MiB), purge_delay(100), free_all())
    files["free-all"] = program(
        *[malloc(i, 100 * i) for i in range(64)], free_all(2),
        *[on_helper(malloc(i, 10)) for i in range(10)], free_all(1))
    files["live-cap"] = program(
        *[malloc(i, 60 * MiB) for i in range(6)], realloc(0, 70 * MiB), free(1),
        malloc(1, 50 * MiB))
    files["pool-basic"] = program(
        *[pool(i, "alloc", 0, 56) for i in range(20)],
        *[pool(i, "free") for i in range(0, 20, 3)], pool(0, "stats"),
        *[pool(20 + i, "alloc", 1, 4096, by_helper=i % 2 == 1) for i in range(10)],
        *[pool(20 + i, "free", 1, by_helper=i % 3 == 0) for i in range(10)],
        pool(0, "stats", 1), pool(1, "release"), pool(2, "alloc"), pool(0, "stats"))
    files["pool-remote-release"] = program(
        *[pool(i, "alloc", 0, 16, by_helper=True) for i in range(60)],
        *[pool(i, "free") for i in range(30)], new_helper(),
        *[pool(i, "alloc") for i in range(30)], pool(0, "stats"), pool(0, "release"),
        *[pool(i, "alloc", 1, 32768) for i in range(5)], pool(0, "release", 1))
    files["heap-basic"] = program(
        *[heap(i, "malloc", n) for i, n in enumerate([0, 1, 16, 17, 1000, 32 * KiB, 32 * KiB + 1,
                                                        200 * KiB, 3 * MiB])],
        heap(9, "calloc", 5000), heap(10, "aligned", 3000, 256), heap(11, "aligned", 100, 4096),
        heap(12, "aligned", 100, 24), heap(13, "aligned", 100, 8192), heap(14, "malloc", SIZE_MAX),
        heap(15, "malloc", 64 * MiB + 1), heap(0, "usable"), heap(0, "stats"),
        heap(1, "realloc", 5000), heap(2, "realloc", 100 * KiB), heap(7, "realloc", 10),
        heap(3, "realloc", 0), heap(4, "realloc", SIZE_MAX), heap(5, "free"), heap(0, "stats"),
        heap(6, "destroy"), heap(0, "malloc", 40), heap(0, "stats"))
    files["heap-helper"] = program(
        *[heap(i, "malloc", 24 + 40 * i, by_helper=True) for i in range(30)],
        *[heap(i, "free") for i in range(15)],
        *[heap(i, "realloc", 9000, by_helper=True) for i in range(15, 30)], new_helper(),
        *[heap(i, "calloc", 300) for i in range(15)], heap(0, "stats"),
        pool(40, "alloc", 0, 100), heap(41, "malloc", 100), burst(50, 100), heap(0, "destroy"))
    for k in range(6):
        files["mixed-%d" % k] = mixed(random.Random(1000 + k), 60 + 20 * k)
    return files


def random_size(rnd):
    kind = rnd.random()
    if kind < 0.45:
        return rnd.randrange(64)
    if kind < 0.75:
        return rnd.randrange(64, 33 * KiB)
    if kind < 0.93:
        return rnd.randrange(32 * KiB, 2 * MiB)
    if kind < 0.97:
        return rnd.choice(BOUNDARY[:17])
    return rnd.choice(IMPOSSIBLE[:4])


def random_step(rnd):
    slot = rnd.randrange(16)
    op = rnd.choice(["malloc", "malloc", "realloc", "realloc", "free", "free", "calloc",
                     "aligned", "helper", "helper", "usable", "burst", "misc"])
    if op == "malloc":
        return malloc(slot, random_size(rnd))
    if op == "realloc":
        return realloc(slot, random_size(rnd))
    if op == "free":
        return free(slot)
    if op == "calloc":
        return calloc(slot, random_size(rnd), elem(rnd.choice(ELEMS[:7])))
    if op == "aligned":
        kind = rnd.choice(["posix_memalign", "aligned_alloc", "memalign"])
        return aligned(kind, slot, 1 << rnd.randrange(13), random_size(rnd))
    if op == "helper":
        return on_helper(rnd.choice([free(slot), malloc(slot, random_size(rnd)),
                                     realloc(slot, random_size(rnd))]))
    if op == "usable":
        return usable(slot)
    if op == "burst":
        return burst(rnd.randrange(1, 80), rnd.randrange(1, 2000), rnd.random() < 0.5,
                     rnd.random() < 0.5, rnd.random() < 0.3, rnd.random() < 0.5)
    return rnd.choice([new_helper(), collect(rnd.random() < 0.5), free_all(rnd.randrange(3)),
                       purge_delay(rnd.choice([0, 1, 10, 100]))])


def mixed(rnd, steps):
    return program(*[random_step(rnd) for _ in range(steps)])


# ---- the dictionary: operation fragments libFuzzer may splice in --------------

def dictionary():
    entries = {
        "op_helper_free_slot0": on_helper(free(0)),
        "op_helper_malloc": on_helper(malloc(0, 64)),
        "op_new_helper": new_helper(),
        "op_collect_helper": collect(True),
        "op_purge_now": purge_delay(0),
        "op_burst_remote": burst(64, 32, helper_frees=True),
        "op_realloc_zero": realloc(0, 0),
        "op_realloc_large": realloc(0, 300 * KiB),
        "op_realloc_huge": realloc(0, 40 * MiB),
        "op_calloc_large": calloc(1, 200 * KiB),
        "op_usable": usable(0),
        "size_huge_min": boundary(17),
        "size_huge_min_minus": boundary(17, -1),
        "size_small_max": boundary(12),
        "size_small_max_plus": boundary(13),
        "size_page": boundary(9),
        "align_page": align(4096),
        "align_1m": align(1 << 20),
        "align_bad": align(24),
    }
    for i, v in enumerate(IMPOSSIBLE):
        entries["size_impossible_%d" % i] = impossible(v)
    for k in range(N_OVERFLOW_PAIRS):
        entries["calloc_overflow_%d" % k] = calloc(0, 10, overflow(k))
    lines = ["# mmalloc.dict — libFuzzer dictionary for fuzz_ops (written by make_corpus.py):",
             "# operation fragments in fuzz_ops.c's input format."]
    for name, data in entries.items():
        lines.append('%s="%s"' % (name, "".join("\\x%02x" % b for b in data)))
    return "\n".join(lines) + "\n"


# ---- crashes: minimised inputs of the bugs found (not part of the corpus) ------

def crashes():
    return {
        # A large block grows in place (realloc) into the free extent behind
        # it after a refused huge request made mmalloc unmap that extent
        # (relieve_pressure): the block's tail is not mapped, SIGSEGV on use.
        "realloc-grows-into-unmapped-extent": program(
            malloc(0, 100 * KiB), malloc(1, 2 * MiB), free(1), malloc(2, 1 << 50),
            realloc(0, 1 * MiB)),
    }


def write_files(directory, files):
    os.makedirs(directory, exist_ok=True)
    for name, data in sorted(files.items()):
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    write_files(os.path.join(out, "corpus"), corpus())
    write_files(os.path.join(out, "crashes"), crashes())
    with open(os.path.join(out, "mmalloc.dict"), "w") as f:
        f.write(dictionary())
    print("make_corpus.py: %d corpus files, %d crash reproducers in %s"
          % (len(corpus()), len(crashes()), out))


if __name__ == "__main__":
    main()
