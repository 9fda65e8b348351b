#!/usr/bin/env python3
"""roundtrip.py — records test/calls.cpp under the tracer and checks that the
trace decodes to exactly the calls the program says it made.

    roundtrip.py MMTRACE CALLS WORKDIR MODE

MODE calls: four threads make every malloc-family call and C++ operator,
hand blocks round a ring (remote frees and reallocs), and fail on purpose;
the main thread's operator new throws.  calls writes what it did
(calls.cpp); each thread's span between its start marker and the marker's
free must be that list, event for event, with block ids mapped through one
thread-name-to-index bijection.
MODE fork, exec, abort, kill, exitthread: the process events (see each
check below).
"""
import itertools
import os
import re
import signal
import subprocess
import sys
import time

MARKER = 999983


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def record(mmtrace, calls, work, mode, status=0, messages=None):
    """Records `calls EXPECT mode` into WORK/MODE.mmtrace; the trace's path,
    after checking record's exit status (the program's).  messages: a list
    that gets record's standard error lines."""
    trace = os.path.join(work, f"{mode}.mmtrace")
    r = run([mmtrace, "record", "-o", trace, "--", calls, os.path.join(work, f"{mode}.expect"), mode])
    if r.returncode != status:
        fail(f"record {mode}: status {r.returncode}, not {status}: {r.stderr}")
    if messages is not None:
        messages.extend(r.stderr.splitlines())
    return trace


def dump(mmtrace, path, partial=False):
    r = run([mmtrace, "dump"] + (["--partial"] if partial else []) + [path])
    if r.returncode != 0:
        fail(f"mmtrace dump {path}: status {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def events(text):
    """(thread, op, rest) per event line, in file order."""
    out = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        _, t, op, *rest = line.split(" ")
        out.append((int(t[1:]), op, " ".join(rest)))
    return out


def ending(text):
    last = text.rstrip("\n").splitlines()[-1]
    m = re.match(r"# end: (.*?); (\d+) events", last)
    if not m:
        fail(f"no end line in the dump: {last!r}")
    return m.group(1)


def memory(text):
    """The end line's memory record: (peak_kb, file_kb), or None."""
    m = re.search(r"; memory peak_kb=(\d+) file_kb=(\d+)$", text.rstrip("\n").splitlines()[-1])
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_memory(text, who):
    """An image that ended by exit or a signal says how much memory it had:
    a peak of at least 1 MiB (a C++ program and its libraries), of which its
    code and files are a part, at least 256 KiB (the C library alone)."""
    mem = memory(text)
    if not mem:
        fail(f"{who}: the trace has no memory record")
    peak, files = mem
    if not (peak >= 1024 and 256 <= files <= peak):
        fail(f"{who}: memory record peak {peak} KiB, files {files} KiB")
    return mem


def check_unstamped(mmtrace, trace):
    """The calls just matched include unstamped mallocs, callocs and frees
    (the recorder's fast path: dense calls on small blocks the thread owns),
    so the match covered that path's events and block ids.  Each worker
    makes a burst of 16 mallocs, 8 callocs and 24 frees of that kind; the
    recorder stamps one dense call in 8, a loaded machine more."""
    r = run([mmtrace, "dump", "--times", trace])
    if r.returncode != 0:
        fail(f"mmtrace dump --times: status {r.returncode}: {r.stderr.strip()}")
    count = {"malloc": 0, "calloc": 0, "free": 0}
    for line in r.stdout.splitlines():
        parts = line.split(" ")
        if not line.startswith("#") and len(parts) > 2 and parts[2] in count and " unstamped " in line:
            count[parts[2]] += 1
    least = {"malloc": 16, "calloc": 4, "free": 16}
    for op, n in least.items():
        if count[op] < n:
            fail(f"only {count[op]} unstamped {op} calls in the trace, expected {n} or more: {count}")
    print(f"ok: unstamped calls in the trace: {count}")


def check_calls(mmtrace, calls, work):
    trace, expect = record(mmtrace, calls, work, "calls"), os.path.join(work, "calls.expect")
    text = dump(mmtrace, trace)
    if ending(text) != "exit":
        fail("the trace of a normal exit does not end with exit")
    check_memory(text, "calls")
    evs = events(text)
    # each trace thread's marked span, ids rewritten <thread>.<k from the marker>
    spans, base, closed = {}, {}, set()
    for t, op, rest in evs:
        if op == "malloc" and rest.startswith(f"size={MARKER} -> "):
            if t in base:
                fail(f"thread {t} has two start markers")
            base[t] = int(rest.split(" -> ")[1].split(".")[1])
            spans[t] = ["begin"]
        elif t in spans and t not in closed:
            if op == "free" and rest == f"{t}.{base[t]}":
                closed.add(t)
            else:
                spans[t].append(f"{op} {rest}".strip())

    def rebase(line):
        def sub(m):
            owner, n = int(m.group(1)), int(m.group(2))
            if owner not in base:
                return f"?{owner}.{n}"
            return f"T{owner}.{n - base[owner] - 1}"
        return re.sub(r"\b(\d+)\.(\d+)\b", sub, line)

    got = {}
    for t, lines in spans.items():
        if t not in closed:
            fail(f"thread {t}'s span has no end (marker never freed)")
        got[t] = [rebase(l) for l in lines]
    want = {}
    with open(expect) as f:
        for line in f:
            name, rest = line.rstrip("\n").split(" ", 1)
            want.setdefault(name, []).append(rest)
    if len(want) != len(got):
        fail(f"{len(want)} threads in the program's list, {len(got)} marked spans in the trace")
    names, threads = sorted(want), sorted(got)

    def pattern(line, mapping):
        line = re.sub(r"\b([a-z]\d*)\.(\d+)\b",
                      lambda m: f"T{mapping[m.group(1)]}.{m.group(2)}" if m.group(1) in mapping else m.group(0),
                      line)
        return "^" + re.escape(line).replace(r"\*", r"[^ ]+") + "$"

    def matches(mapping):
        for name in names:
            w, g = want[name], got[mapping[name]]
            if len(w) != len(g):
                return f"{name}: {len(w)} calls listed, {len(g)} in the trace"
            for i, (a, b) in enumerate(zip(w, g)):
                if not re.match(pattern(a, mapping), b):
                    return f"{name} call {i}: the program made '{a}', the trace says '{b}'"
        return None

    best = None
    for perm in itertools.permutations(threads):
        mapping = dict(zip(names, perm))
        err = matches(mapping)
        if err is None:
            total = sum(len(v) for v in want.values())
            print(f"ok: {total} calls in {len(names)} threads match the trace")
            check_unstamped(mmtrace, trace)
            return
        best = best or err
    fail(f"no thread mapping makes the trace match the calls; first difference: {best}")


def check_fork(mmtrace, calls, work):
    trace = record(mmtrace, calls, work, "fork")
    child = int(open(os.path.join(work, "fork.expect")).read().split()[1])
    parent_text = dump(mmtrace, trace)
    child_path = f"{trace}.{child}"
    if not os.path.exists(child_path):
        fail(f"the forked child wrote no {child_path}")
    child_text = dump(mmtrace, child_path)
    pe, ce = events(parent_text), events(child_text)
    if not any(op == "fork" and rest == f"pid={child}" for _, op, rest in pe):
        fail("no fork event with the child's pid in the parent's trace")
    m = [rest for _, op, rest in pe if op == "malloc" and rest.startswith("size=555 -> ")]
    if len(m) != 1 or ("free", m[0].split(" -> ")[1]) not in [(op, rest) for _, op, rest in pe]:
        fail("the parent's block of 555 bytes is not allocated and freed in the parent's trace")
    parent_pid = re.search(r"^# pid=(\d+)$", parent_text, re.M).group(1)
    if f"# forked_from={parent_pid}" not in child_text.splitlines():
        fail("the child's header does not name the parent it was forked from")
    if not any(op == "free" and rest.startswith("unknown:") for _, op, rest in ce):
        fail("the child's free of the inherited block is not an unknown pointer")
    cm = [rest for _, op, rest in ce if op == "malloc" and rest.startswith("size=666 -> ")]
    if len(cm) != 1 or not cm[0].endswith(" -> 0." + cm[0].split(".")[-1]):
        fail("the child's own block is not in its trace, numbered from thread 0")
    if any(op == "malloc" and rest.startswith("size=555") for _, op, rest in ce):
        fail("the parent's events leaked into the child's trace")
    if ending(parent_text) != "exit" or ending(child_text) != "exit":
        fail("parent or child trace does not end with exit")
    check_memory(parent_text, "fork's parent")
    check_memory(child_text, "fork's child")
    print(f"ok: parent and child {child} traced apart")


def check_exec(mmtrace, calls, work):
    said = []
    trace = record(mmtrace, calls, work, "exec", messages=said)
    first = dump(mmtrace, trace)
    others = [f for f in os.listdir(work) if f.startswith("exec.mmtrace.")]
    if len(others) != 1:
        fail(f"the exec'd image wrote {len(others)} files, not 1: {others}")
    # record names the largest file (a wrapper's program is rarely the first image)
    sizes = {p: os.path.getsize(p) for p in (trace, os.path.join(work, others[0]))}
    named = [m for m in said if m.startswith("mmtrace: the largest is ")]
    if len(named) != 1:
        fail(f"record did not name the largest of its two files once: {said}")
    path = named[0][len("mmtrace: the largest is "):].split(" (")[0]
    if os.path.realpath(path) not in {os.path.realpath(p) for p in sizes} or \
            os.path.getsize(path) != max(sizes.values()) or f"({max(sizes.values())} bytes)" not in named[0]:
        fail(f"record named {named[0]!r} as the largest; the sizes are {sizes}")
    # a wrapper: the shell's own file comes first, the program's is the largest by far
    wrap = os.path.join(work, "wrap.mmtrace")
    r = run([mmtrace, "record", "-o", wrap, "--", "/bin/sh", "-c",
             f"'{calls}' '{os.path.join(work, 'wrap.expect')}' calls; exit 0"])
    files = [os.path.join(work, f) for f in os.listdir(work) if f.startswith("wrap.mmtrace")]
    biggest = max(files, key=os.path.getsize)
    if r.returncode != 0 or len(files) < 2 or biggest == wrap:
        fail(f"record of a shell running the program: status {r.returncode}, files {files}: {r.stderr}")
    if f"mmtrace: the largest is {biggest} ({os.path.getsize(biggest)} bytes)" not in r.stderr:
        fail(f"record of a shell did not name {biggest} as the largest: {r.stderr}")
    second = dump(mmtrace, os.path.join(work, others[0]))
    if "1 exec" not in first.splitlines()[-1]:
        fail("the first image's trace has no exec record")
    if ending(first) != "exec" or ending(second) != "exit":
        fail(f"the images end with '{ending(first)}' and '{ending(second)}', not exec and exit")
    if memory(first):
        fail("the exec'd image's trace has a memory record (its memory went on in the next image)")
    check_memory(second, "the exec'd program")
    if "size=444" not in first or "size=777" not in second:
        fail("each image's own allocation is not in its own trace")
    if "size=777" in first:
        fail("the exec'd image's events are in the first image's trace")
    print("ok: both images traced, the first marked as exec'd")


def check_abort(mmtrace, calls, work):
    trace = record(mmtrace, calls, work, "abort", status=128 + signal.SIGABRT)
    text = dump(mmtrace, trace)
    if ending(text) != f"signal {int(signal.SIGABRT)}":
        fail(f"an aborted program's trace ends with '{ending(text)}'")
    if "malloc size=333" not in text:
        fail("the block allocated before abort() is not in the trace")
    check_memory(text, "the aborted program")
    print("ok: abort flushed, ending 'signal 6', with its memory")


def check_kill(mmtrace, calls, work):
    trace, ready = os.path.join(work, "kill.mmtrace"), os.path.join(work, "kill.ready")
    if os.path.exists(ready):
        os.unlink(ready)
    p = subprocess.Popen([mmtrace, "record", "-o", trace, "--", calls, os.path.join(work, "kill.expect"),
                          "kill", ready], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not os.path.exists(ready):
        if time.time() > deadline or p.poll() is not None:
            p.kill()
            fail("the program never became ready")
        time.sleep(0.05)
    pid = int(open(ready).read())     # the traced process wrote its pid there
    os.kill(pid, signal.SIGKILL)
    _, err = p.communicate(timeout=60)
    if p.returncode != 128 + signal.SIGKILL:
        fail(f"record should exit 137 for a killed program, got {p.returncode}")
    r = run([mmtrace, "dump", trace])
    if r.returncode != 2 or f"{trace}: byte " not in r.stderr or "without an end record" not in r.stderr:
        fail(f"a killed program's trace read without --partial: status {r.returncode}, {r.stderr.strip()!r}")
    text = dump(mmtrace, trace, partial=True)
    n = sum(1 for _, op, _ in events(text) if op == "malloc")
    if n < 1000 or ending(text) != "partial":
        fail(f"only {n} mallocs survive the kill (each full buffer is written as it fills)")
    if memory(text):
        fail("a killed program's trace has a memory record")
    print(f"ok: killed with SIGKILL, {n} mallocs readable with --partial, an error without")


def check_exitthread(mmtrace, calls, work):
    trace = record(mmtrace, calls, work, "exitthread")
    evs = events(dump(mmtrace, trace))
    t = [t for t, op, rest in evs if op == "malloc" and rest.startswith("size=4000")]
    if len(t) != 1:
        fail("the exited thread's block is not in the trace")
    ops = [op for tt, op, _ in evs if tt == t[0]]
    if ops[0] != "thread_begin" or ops[-1] != "thread_end":
        fail(f"the exited thread's events do not run from thread_begin to thread_end: {ops}")
    main_after = sum(1 for tt, op, _ in evs if tt == 0 and op == "malloc")
    if main_after < 1000:
        fail("the main thread's calls after the thread exited are missing")
    print("ok: the exited thread is complete, begin to end")


def main():
    mmtrace, calls, work, mode = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    checks = {"calls": check_calls, "fork": check_fork, "exec": check_exec, "abort": check_abort,
              "kill": check_kill, "exitthread": check_exitthread}
    checks[mode](mmtrace, calls, work)


if __name__ == "__main__":
    main()
