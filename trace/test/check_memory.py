#!/usr/bin/env python3
"""check_memory.py — the trace's memory record leaves the recorder out:
selfmem (a C program) says, just before it returns, its file-backed
resident memory and how much of it is the recorder's library; the trace's
file_kb must be the first less the second (within 32 KiB: the pages the
recorder's exit path touches after the program's last word), and the
recorder must not have brought the unwinder (libgcc_s) into the C program.
Then again with a file mapped whose path is longer than the line buffer the
recorder reads smaps with.

    check_memory.py MMTRACE SELFMEM WORKDIR
"""
import os
import re
import subprocess
import sys

from trace_check import Check


CHECK = Check("check_memory")
fail = CHECK.fail


def check(mmtrace, prog, work, mapped=None):
    trace = os.path.join(work, "selfmem.mmtrace")
    r = CHECK.run([mmtrace, "record", "-o", trace, "--", prog] + ([mapped] if mapped else []), "record")
    said = re.search(r"^files=(\d+) recorder=(\d+) unwinder=(\d)$", r.stdout, re.M)
    if not said:
        fail(f"selfmem said: {r.stdout!r}")
    files, recorder, unwinder = (int(x) for x in said.groups())
    if recorder <= 0:
        fail(f"the recorder's library has no resident pages in the traced program ({r.stdout.strip()})")
    if unwinder:
        fail("the recorder brought the unwinder (libgcc_s) into a C program that does not use it")
    d = subprocess.run([mmtrace, "dump", trace], capture_output=True, text=True)
    m = re.search(r"; memory peak_kb=(\d+) file_kb=(\d+)$", d.stdout.rstrip("\n").splitlines()[-1]) if d.stdout else None
    if d.returncode != 0 or not m:
        fail(f"dump: status {d.returncode}, no memory record: {d.stdout[-300:]} {d.stderr[-300:]}")
    peak, file_kb = int(m.group(1)), int(m.group(2))
    want = files - recorder
    if abs(file_kb - want) > 32:
        fail(f"the memory record's file_kb is {file_kb} KiB; the program had {files} KiB of files resident, "
             f"{recorder} KiB of them the recorder's library: expected {want} within 32")
    if file_kb > peak:
        fail(f"file_kb {file_kb} above peak_kb {peak}")
    print(f"check_memory: ok (files {files} KiB, the recorder's {recorder}, recorded {file_kb}; no unwinder)"
          + (f", with a {len(mapped)}-byte path mapped" if mapped else ""))


def main():
    mmtrace, prog, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    check(mmtrace, prog, work)
    # a mapping whose smaps line is longer than the recorder's buffer for it
    # (2048 bytes), before the recorder's own: skipped, and the rest read
    deep = os.path.join(os.path.abspath(work), *(["d" * 200] * 11))
    os.makedirs(deep, exist_ok=True)
    mapped = os.path.join(deep, "data")
    with open(mapped, "wb") as f:
        f.write(bytes(range(256)) * 1024)
    check(mmtrace, prog, work, mapped)


if __name__ == "__main__":
    main()
