#!/usr/bin/env python3
"""check_replay.py — `mmtrace replay` on two recorded patterns, on glibc and
on mmalloc (whose free reports any pointer it did not hand out, and in the
MM_DEBUG=3 tree checks every structure), also as three copies side by
side (--copies), folded onto 1 and 2 threads and doubled (--threads K; a
K that is neither is refused): every replay must finish with the threads
asked for, every
release must find its block (no release of NULL where the trace had a
block), and every call must have the outcome it had in the trace; with
--speed 1 a replay must take at least the recorded time of its busiest
thread's short gaps of work between its calls (`dump --times`), which it
spins.  And the replay's peak RSS is the program's: a C program holding
300,000 small blocks (LIVE) is replayed on glibc within 15% + 0.5 MiB of
its real peak RSS, which it was not while the replayer's own table of the
blocks (12 bytes each) and the C++ library counted; and so is the same
program with a 32 MiB file mapped and read (memory that is no block, as a
program's code and libraries are: the trace's memory record carries it to
the replay, which counts it in place of the replayer's own code).  A
buffer grown by realloc (live grow) replays with its real peak on glibc
and on mmalloc, which grows it in place; so do 128 blocks of 256 KiB held
at once and 2,000 blocks of 64 KiB each freed before the next (live
blocks: the plain calls the replay makes by its own fast path, which must
write each new block and free each block when the program did).  Two
threads that share nothing (live threads) replay without either waiting
for the other's blocks.  A program of plain calls with 5 us of work before
each free (live spin) replays at --speed 1 in at least that work.

And a worker whose calls end long before the main thread's blocked wait
for it does (SILENT: the rest of the wait is no thread's op) is replayed
with that wait, whichever thread comes to it first.

    check_replay.py MMTRACE CALLS LIBMMALLOC WORKDIR LIVE SILENT
"""
import os
import re
import shutil
import subprocess
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def replay(mmtrace, trace, lib, extra=(), threads=None):
    r = run([mmtrace, "replay", trace, "--alloc", "glibc", "--alloc", lib, "--reps", "1"] + list(extra or ["--speed", "0"]))
    if r.returncode != 0:
        fail(f"replay of {trace}: status {r.returncode}: {r.stderr[-800:]}")
    runs = re.findall(r"^rep \d+ +(\S+) .* (\d+) threads  (\d+) outcomes differ from the trace, "
                      r"(\d+) releases of a refused block$", r.stderr, re.M)
    if len(runs) != 2:
        fail(f"replay of {trace}: expected 2 runs, got: {r.stderr[-800:]}")
    for name, nthreads, differ, nulls in runs:
        if differ != "0" or nulls != "0":
            fail(f"replay of {trace} on {name}: {differ} outcomes differ, {nulls} releases of NULL")
        if threads is not None and int(nthreads) != threads:
            fail(f"replay of {trace} on {name}: ran {nthreads} threads, not {threads}")
    rows = re.findall(r"^\| (\S+) \| ([0-9.]+) \|", r.stdout, re.M)
    if [n for n, _ in rows if n != "allocator"] != ["glibc", lib]:
        fail(f"replay table rows: {rows}")
    return {n: float(t) for n, t in rows if n != "allocator"}


def real_peak_kb(args, preload=None, reps=3):
    """The median peak RSS (KiB) of `reps` real runs of args, run with the
    library preload preloaded (None: the C library's malloc)."""
    peaks = []
    for _ in range(reps):
        pid = os.fork()
        if pid == 0:
            os.environ.pop("LD_PRELOAD", None)
            if preload:
                os.environ["LD_PRELOAD"] = preload
            os.execv(args[0], args)
        _, status, ru = os.wait4(pid, 0)
        if status != 0:
            fail(f"{' '.join(args)} ({preload or 'glibc'}): status {status}")
        peaks.append(ru.ru_maxrss)
    return sorted(peaks)[len(peaks) // 2]


def check_live_rss(mmtrace, live, work, mapped=None):
    n = "300000"
    args = [n] + ([mapped] if mapped else [])
    trace = os.path.join(work, "live-mapped.mmtrace" if mapped else "live.mmtrace")
    r = run([mmtrace, "record", "-o", trace, "--", live] + args)
    if r.returncode != 0:
        fail(f"record live: {r.stderr}")
    real_mib = real_peak_kb([live] + args) / 1024
    r = run([mmtrace, "replay", trace, "--alloc", "glibc", "--reps", "3"])
    m = re.search(r"^\| glibc \| [0-9.]+ \| [0-9.]+ \| ([0-9.]+) \|", r.stdout, re.M)
    own = re.findall(r"the replayer's tables, (\d+) KiB, not counted", r.stderr)
    if r.returncode != 0 or not m or len(own) != 3:
        fail(f"replay of live: status {r.returncode}: {r.stdout[-400:]} {r.stderr[-400:]}")
    replay_mib = float(m.group(1))
    if min(int(k) for k in own) < 300000 * 12 / 1024 * 0.9:
        fail(f"the replayer's tables of 300,000 blocks were counted as {own} KiB")
    what = "a C program holding 300,000 blocks" + (" and a 32 MiB file it mapped and read" if mapped else "")
    if abs(replay_mib - real_mib) > 0.15 * real_mib + 0.5:
        fail(f"{what}: replayed peak RSS {replay_mib:.1f} MiB, real {real_mib:.1f} MiB")
    print(f"ok: {what}: real peak RSS {real_mib:.1f} MiB, replayed {replay_mib:.1f} "
          f"MiB (the replayer's own {int(own[0]) / 1024:.1f} MiB not counted)")


def check_peak(mmtrace, args, lib, work, name, what):
    """The program `args` recorded, run for real and replayed on glibc and
    on mmalloc: each allocator's replayed peak RSS within 15% + 0.5 MiB of
    its real one."""
    trace = os.path.join(work, name + ".mmtrace")
    r = run([mmtrace, "record", "-o", trace, "--"] + args)
    if r.returncode != 0:
        fail(f"record {what}: {r.stderr}")
    real = {"glibc": real_peak_kb(args), lib: real_peak_kb(args, lib)}
    r = run([mmtrace, "replay", trace, "--alloc", "glibc", "--alloc", lib, "--reps", "3"])
    if r.returncode != 0:
        fail(f"replay of {what}: status {r.returncode}: {r.stderr[-400:]}")
    for name in real:
        m = re.search(r"^\| " + re.escape(name) + r" \| [0-9.]+ \| [0-9.]+ \| ([0-9.]+) \|", r.stdout, re.M)
        if not m:
            fail(f"replay of {what}: no row for {name}: {r.stdout[-400:]}")
        real_mib, replay_mib = real[name] / 1024, float(m.group(1))
        if abs(replay_mib - real_mib) > 0.15 * real_mib + 0.5:
            fail(f"{what} on {os.path.basename(name)}: replayed peak RSS {replay_mib:.1f} MiB, "
                 f"real {real_mib:.1f} MiB")
        print(f"ok: {what} on {os.path.basename(name)}: real peak RSS "
              f"{real_mib:.1f} MiB, replayed {replay_mib:.1f} MiB")


def check_grow_rss(mmtrace, live, lib, work):
    """One buffer grown by realloc to 48 MiB, a MiB at a time, each new MiB
    written: on glibc and on mmalloc (which grows it in place from 1 MiB
    up), the replay's peak RSS as the real one's (a replay that wrote only
    the blocks a realloc moved showed mmalloc at a few MiB)."""
    check_peak(mmtrace, [live, "grow", "48"], lib, work, "grow", "a buffer grown to 48 MiB by realloc")


def check_blocks_rss(mmtrace, live, lib, work):
    """Plain mallocs and frees (the replay's own fast path): 128 blocks of
    256 KiB all held at once, and 2,000 blocks of 64 KiB each freed before
    the next is made (beside a 32 MiB block), a byte written in every page
    of each: the replay's
    peak RSS as the real one's, which it is only if the replay writes every
    new block's pages (the first pattern: blocks of 256 KiB are mapped
    untouched) and frees each block when the program did (the second)."""
    check_peak(mmtrace, [live, "blocks", "128", "256", "hold"], lib, work, "hold",
               "128 blocks of 256 KiB held at once")
    check_peak(mmtrace, [live, "blocks", "2000", "64", "churn"], lib, work, "churn64",
               "2,000 blocks of 64 KiB, each freed before the next")


def check_apart(mmtrace, live, lib, work):
    """Two threads that share nothing (live threads 2 N) are replayed
    without either waiting for a block of the other: a new block never
    takes a slot another thread released moments before (it took the
    oldest released slot of any thread, and the replays of two independent
    threads waited for each other's frees)."""
    trace = os.path.join(work, "apart.mmtrace")
    r = run([mmtrace, "record", "-o", trace, "--", live, "threads", "2", "400000"])
    if r.returncode != 0:
        fail(f"record live threads: {r.stderr}")
    r = run([mmtrace, "replay", trace, "--alloc", "glibc", "--alloc", lib, "--reps", "2"])
    waits = re.findall(r"^rep \d+ +(\S+) .*  (\d+) waits for a block  \d+ threads  0 outcomes differ", r.stderr, re.M)
    if r.returncode != 0 or len(waits) != 4:
        fail(f"replay of live threads: status {r.returncode}: {r.stderr[-600:]}")
    if any(int(n) for _, n in waits):
        fail(f"two threads that share nothing waited for each other's blocks in the replay: {waits}")
    print(f"ok: two threads that share nothing replay without waiting for each other ({len(waits)} runs)")


def check_silent(mmtrace, silent, lib, work):
    trace = os.path.join(work, "silent.mmtrace")
    r = run([mmtrace, "record", "-o", trace, "--", silent])
    if r.returncode != 0 or r.stdout != "done\n":
        fail(f"record silent: status {r.returncode}: {r.stderr[-400:]}")
    # the main thread's wait: its longest gap; the worker's last call
    waits, last = [], {}
    for line in run([mmtrace, "dump", "--times", trace]).stdout.splitlines():
        m = re.match(r"(\d+) T(\d+) .* gap=(\d+) ", line)
        if m:
            last[m.group(2)] = int(m.group(1))
            if m.group(2) == "0":
                waits.append(int(m.group(3)))
    if not waits or max(waits) < 250e6 or last.get("1", 1e18) > 100e6:
        fail(f"silent: main's longest gap {max(waits or [0]) / 1e6:.0f} ms, the worker's last call at "
             f"{last.get('1', 0) / 1e6:.0f} ms: not the pattern")
    wait_s = max(waits) / 1e9
    took = replay(mmtrace, trace, lib, ["--speed", "1"])
    if min(took.values()) < 0.9 * wait_s:
        fail(f"silent: a replay took {min(took.values()):.3f} s, under main's recorded wait of {wait_s:.3f} s")
    print(f"ok: the silent worker's trace replays in {min(took.values()):.3f} s or more; main waited "
          f"{wait_s:.3f} s for it; the worker's last call was at {last['1'] / 1e6:.0f} ms")


def main():
    mmtrace, calls, lib, work, live, silent = sys.argv[1:7]
    os.makedirs(work, exist_ok=True)
    check_silent(mmtrace, silent, lib, work)
    check_live_rss(mmtrace, live, work)
    mapped = os.path.join(work, "mapped.bin")     # the program's own memory that is no block
    with open(mapped, "wb") as f:
        f.write(bytes(range(256)) * (32 << 12))
    check_live_rss(mmtrace, live, work, mapped)
    check_grow_rss(mmtrace, live, lib, work)
    check_blocks_rss(mmtrace, live, lib, work)
    check_apart(mmtrace, live, lib, work)
    for mode in ("churn", "calls"):
        trace = os.path.join(work, f"{mode}.mmtrace")
        r = run([mmtrace, "record", "-o", trace, "--", calls, os.path.join(work, f"{mode}.expect"), mode])
        if r.returncode != 0:
            fail(f"record {mode}: {r.stderr}")
        replay(mmtrace, trace, lib)
        print(f"ok: the {mode} trace replays on glibc and {os.path.basename(lib)}, every call as in the trace")
    trace = os.path.join(work, "churn.mmtrace")
    # the thread programs on disk: compact ops, at most 32 bytes a call
    keep = os.path.join(work, "churn-keep")
    shutil.rmtree(keep, ignore_errors=True)
    r = run([mmtrace, "replay", trace, "--alloc", "glibc", "--reps", "1", "--speed", "0", "--keep", keep])
    m = re.search(r"^mmtrace replay: (\d+) calls in", r.stderr, re.M)
    if r.returncode != 0 or not m:
        fail(f"replay --keep: status {r.returncode}: {r.stderr[-500:]}")
    disk = sum(os.path.getsize(os.path.join(keep, f)) for f in os.listdir(keep) if f.endswith(".ops"))
    if disk > 32 * int(m.group(1)):
        fail(f"the thread programs take {disk} bytes for {m.group(1)} calls, over 32 a call")
    print(f"ok: the thread programs take {disk / int(m.group(1)):.1f} bytes a call")
    # the trace's times order every release after its block's allocation
    # (the replay trusts them to order its threads only then): a release of
    # another thread's block is always stamped, and each chunk's clock pair
    # is read so that its two clocks agree
    with open(os.path.join(keep, "threads")) as f:
        skew = re.match(r"slots \d+ skewed (\d+) ", f.readline())
    if not skew or int(skew.group(1)) != 0:
        fail(f"the churn trace has releases dated before their allocations: {skew and skew.group(0)}")
    foreign = 0
    for line in run([mmtrace, "dump", "--times", trace]).stdout.splitlines():
        m = re.match(r"\d+ T(\d+) \S+ (\d+)\.\d+ ", line)
        if m and m.group(1) != m.group(2):
            foreign += 1
            if " unstamped " in line:
                fail(f"a release of another thread's block is unstamped: {line}")
    if not foreign:
        fail("the churn trace has no release of another thread's block")
    print(f"ok: no release dated before its allocation; the {foreign} releases of another thread's block are stamped")
    replay(mmtrace, trace, lib, ["--speed", "0", "--copies", "3"], threads=15)
    print("ok: three copies of the churn trace's threads side by side, every call as in the trace")
    # --threads K: the 5 traced threads folded onto fewer (their calls
    # merged in the trace's time order), or a multiple of them as copies
    for mode in ("churn", "calls"):
        for k in (1, 2):
            replay(mmtrace, os.path.join(work, f"{mode}.mmtrace"), lib,
                   ["--speed", "1" if mode == "churn" else "0", "--threads", str(k)], threads=k)
    print("ok: the churn and calls traces folded onto 1 and 2 threads, every call as in the trace")
    replay(mmtrace, trace, lib, ["--speed", "0", "--threads", "10"], threads=10)
    print("ok: --threads 10 on a 5-thread trace runs two copies")
    r = run([mmtrace, "replay", trace, "--threads", "7", "--reps", "1"])
    if r.returncode != 2 or "must be a multiple" not in r.stderr:
        fail(f"--threads 7 on a 5-thread trace: status {r.returncode}, {r.stderr[-300:]}")
    r = run([mmtrace, "replay", trace, "--threads", "2", "--copies", "2"])
    if r.returncode != 2 or "usage" not in r.stderr:
        fail(f"--threads with --copies: status {r.returncode}, {r.stderr[-300:]}")
    print("ok: --threads 7 (not a multiple of 5) and --threads with --copies are refused")
    check_work(mmtrace, trace, lib, "the churn trace")
    spin = os.path.join(work, "spin.mmtrace")      # plain calls 5 us apart: the replay's fast path
    r = run([mmtrace, "record", "-o", spin, "--", live, "spin", "4000", "5"])
    if r.returncode != 0:
        fail(f"record live spin: {r.stderr}")
    check_work(mmtrace, spin, lib, "4,000 blocks, 5 us of work before each free")


def check_work(mmtrace, trace, lib, what):
    """The program's own time before each call, as the replay waits it: CPU
    work when short (long gaps may become waits for other threads).  With
    --speed 1 a replay takes at least the busiest thread's short gaps."""
    work_by_thread = {}
    for line in run([mmtrace, "dump", "--times", trace]).stdout.splitlines():
        m = re.search(r" work=(\d+)$", line)
        if m and int(m.group(1)) < 200000:
            t = line.split(" ")[1]
            work_by_thread[t] = work_by_thread.get(t, 0) + int(m.group(1))
    work_s = max(work_by_thread.values()) / 1e9
    took = replay(mmtrace, trace, lib, ["--speed", "1"])
    if min(took.values()) < 0.95 * work_s:
        fail(f"{what}: with --speed 1 a replay took {min(took.values()):.4f} s, under the busiest thread's "
             f"recorded work of {work_s:.4f} s")
    print(f"ok: {what}: --speed 1 replays take {min(took.values()):.4f} s or more; the busiest thread's "
          f"recorded work between calls is {work_s:.4f} s")

if __name__ == "__main__":
    main()
