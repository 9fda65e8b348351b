#!/usr/bin/env python3
"""check_burst.py — burst.c traced over failalloc.c: every call of its four
rounds in order, the failed allocations recorded as failed (malloc of 77
bytes, calloc of 7 x 11) with no block, each free naming the block its
allocation got (free NULL for the failed ones), and enough of the failures
unstamped that the recorder's fast path is known to have recorded them.

    check_burst.py MMTRACE BURST_PROGRAM FAILALLOC_SO WORKDIR
    check_burst.py --write-failure MMTRACE BURST_PROGRAM FAILALLOC_SO WORKDIR
    check_burst.py --new MMTRACE BURST_NEW_PROGRAM FAILALLOC_SO WORKDIR

--new: burst_new.cpp's operators new and delete, some new[] throwing
std::bad_alloc: every call in order (each throw a failed new[] and then the
free of the exception object, a pointer the trace never saw), the deletes
naming their blocks, and enough of the throws unstamped that the recorder's
fast path (and the guard that leaves the traced call as it unwinds) is
known to have recorded them.

--write-failure: the trace's file may not grow past 64 KiB (RLIMIT_FSIZE,
SIGXFSZ ignored), and the program makes about 1 MiB of trace in a thread
that then exits: the recorder says once that writing failed, the program
runs to its end and exits 0, and the file holds the whole chunks written
before the failure (the one being written is cut away) and nothing after
it (the exiting thread's last chunk would follow one of its chunks that
is missing), so that the reader's --partial takes it all.
"""
import os
import resource
import signal
import subprocess
import sys


def fail(msg):
    print(f"check_burst: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def write_failure(mmtrace, prog, shim, work):
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, "full.mmtrace")
    if os.path.exists(trace):
        os.unlink(trace)
    limit = 64 << 10

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    r = subprocess.run([mmtrace, "record", "-o", trace, "--alloc", shim, "--", prog, "2000", "thread"], capture_output=True, text=True,
                       preexec_fn=limited)
    if r.returncode != 0:
        fail(f"the program under a full file: status {r.returncode}: {r.stderr.strip()}")
    said = [l for l in r.stderr.splitlines() if "mmtrace: writing the trace failed" in l]
    if len(said) != 1:
        fail(f"expected one line saying the write failed, got: {r.stderr.strip()!r}")
    size = os.path.getsize(trace)
    if size > limit:
        fail(f"the trace is {size} bytes, past the {limit}-byte limit")
    d = subprocess.run([mmtrace, "dump", "--partial", trace], capture_output=True, text=True)
    if d.returncode != 0:
        fail(f"dump --partial of the cut trace: status {d.returncode}: {d.stderr.strip()}")
    events = [l for l in d.stdout.splitlines() if not l.startswith("#")]
    if len(events) < 1000:
        fail(f"only {len(events)} events read back from the {size} bytes written before the failure")
    print(f"ok: writing failed at {size} bytes; said once, the program ran to its end, "
          f"{len(events)} events read back with --partial")


def record_dump(mmtrace, prog, shim, work, name, via_env=False):
    """The program recorded over the shim (named by --alloc, or via_env: by
    the environment's LD_PRELOAD, as a user who preloads an allocator
    already would): the dump --times lines of its calls, as (op, rest,
    unstamped, line).  The trace's header must name the shim as the
    allocator under the tracer either way."""
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, name)
    if os.path.exists(trace):
        os.unlink(trace)
    env = dict(os.environ, LD_PRELOAD=shim) if via_env else None
    r = subprocess.run([mmtrace, "record", "-o", trace] + ([] if via_env else ["--alloc", shim]) + ["--", prog],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        fail(f"record: status {r.returncode}: {r.stderr.strip()}")
    d = subprocess.run([mmtrace, "dump", "--times", trace], capture_output=True, text=True)
    if d.returncode != 0:
        fail(f"dump: status {d.returncode}: {d.stderr.strip()}")
    if f"# preload={shim}\n" not in d.stdout:
        head = [x for x in d.stdout.splitlines() if x.startswith("#")]
        fail(f"the trace's header does not name {shim} as the allocator under the tracer: {head}")
    calls = []
    for line in d.stdout.splitlines():
        if line.startswith("#"):
            continue
        parts = line.split(" ")
        if parts[2] not in ("thread_begin", "thread_end"):
            calls.append((parts[2], " ".join(parts[3:]), " unstamped " in line, line))
    return calls


def check_new(mmtrace, prog, shim, work):
    calls = record_dump(mmtrace, prog, shim, work, "new.mmtrace")
    start = next((k for k, c in enumerate(calls) if c[0] == "new" and c[1].startswith("size=40 ")), None)
    if start is None:
        fail("no new of 40 bytes in the trace")
    k = start

    def take(want_op, want_rest, what):
        nonlocal k
        if k >= len(calls):
            fail(f"the trace ends before {what}")
        op, rest, unstamped, line = calls[k]
        k += 1
        if op != want_op or not rest.startswith(want_rest):
            fail(f"{what}: expected {want_op} {want_rest}..., got: {line}")
        return rest, unstamped

    thrown = thrown_unstamped = 0
    for rnd in range(4):
        ids = {}
        for i in range(64):
            if i % 8 == 3:
                _, unstamped = take("new[]", "size=77 failed ", f"round {rnd} allocation {i}")
                take("free", "unknown:", f"round {rnd}, the exception object of allocation {i}")
                thrown += 1
                thrown_unstamped += unstamped
            elif i % 2:
                rest, _ = take("new[]", f"size={100 + i} -> ", f"round {rnd} allocation {i}")
                ids[i] = rest.split(" -> ")[1].split(" ")[0]
            else:
                rest, _ = take("new", f"size={40 + i} -> ", f"round {rnd} allocation {i}")
                ids[i] = rest.split(" -> ")[1].split(" ")[0]
        for i in range(63, -1, -1):
            if i not in ids:
                continue
            what = f"round {rnd} delete of allocation {i}"
            if i % 4 == 1:
                take("delete[]", f"{ids[i]} ", what)
            elif i % 4 == 3:
                take("delete[](size)", f"{ids[i]} size={100 + i} ", what)
            elif i % 4 == 0:
                take("delete", f"{ids[i]} ", what)
            else:
                take("delete(size)", f"{ids[i]} size={40 + i} ", what)
    if thrown_unstamped < 8:
        fail(f"only {thrown_unstamped} of the {thrown} throwing new[] calls are unstamped: "
             "the fast path's unwinding was not recorded often enough to be tested")
    print(f"ok: 4 rounds of 64 news and their deletes match, {thrown} new[] threw "
          f"({thrown_unstamped} unstamped, on the fast path)")


def main():
    if sys.argv[1] == "--new":
        check_new(*sys.argv[2:6])
        return
    if sys.argv[1] == "--write-failure":
        write_failure(*sys.argv[2:6])
        return
    mmtrace, prog, shim, work = sys.argv[1:5]
    for via_env in (False, True):
        check_rounds(record_dump(mmtrace, prog, shim, work, "burst.mmtrace", via_env),
                     "LD_PRELOAD" if via_env else "--alloc")


def check_rounds(calls, how):
    # the first round starts at the first malloc of 16 bytes
    start = next((k for k, c in enumerate(calls) if c[0] == "malloc" and c[1].startswith("size=16 ")), None)
    if start is None:
        fail("no malloc of 16 bytes in the trace")
    k = start
    failed_unstamped = failed = 0
    for rnd in range(4):
        ids = []
        for i in range(96):
            if k >= len(calls):
                fail(f"the trace ends in round {rnd} at allocation {i}")
            op, rest, unstamped, line = calls[k]
            k += 1
            if i % 8 == 3:
                want = ("malloc", "size=77 failed")
            elif i % 8 == 5:
                want = ("calloc", "nmemb=7 size=11 failed")
            else:
                want = ("malloc", f"size={16 + i} -> ")
            if op != want[0] or not rest.startswith(want[1]):
                fail(f"round {rnd} allocation {i}: expected {want[0]} {want[1]}..., got: {line}")
            if want[1].endswith("failed"):
                failed += 1
                failed_unstamped += unstamped
                ids.append(None)
            else:
                ids.append(rest.split(" -> ")[1].split(" ")[0])
        for i in range(95, -1, -1):
            op, rest, unstamped, line = calls[k]
            k += 1
            want = "NULL" if ids[i] is None else ids[i]
            if op != "free" or rest.split(" ")[0] != want:
                fail(f"round {rnd} free of allocation {i}: expected free {want}, got: {line}")
    if failed_unstamped < 8:
        fail(f"only {failed_unstamped} of the {failed} failed allocations are unstamped: "
             "the fast path's failure was not recorded often enough to be tested")
    print(f"ok ({how}): 4 rounds of 96 allocations and 96 frees match, {failed} failed "
          f"({failed_unstamped} unstamped, on the fast path)")


if __name__ == "__main__":
    main()
