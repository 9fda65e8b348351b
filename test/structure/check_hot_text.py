#!/usr/bin/env python3
"""check_hot_text.py — src/hot_text.txt names only functions of src/, and
the shared library's text puts them first.

src/hot_text.txt lists the functions programs run (tools/hot-text.sh
writes it); the library's link puts them at the start of its text
(src/CMakeLists.txt).  A name that is no longer defined in src/ (renamed,
removed) would silently fall out of that order, so every name must be a
function defined in src/*.c or src/*.h.  Given the built library as well,
the check also reads its symbol table: malloc, free and the start-up
function must lie below every function the list leaves out (mm_stats_print,
which no program runs unless asked, stands for them).

With --tool, it runs tools/hot-text.sh into a list of its own (WORK_DIR,
OUT in the build directory) and checks that list instead: every name a
function of src/, and malloc, free and the start-up among the first 200
(what the one-malloc program runs comes first).  It also checks that
src/hot_text.txt names every function the tool's one-malloc program ran:
one left out (a function added to the start-up and the list not written
again) lies at the far end of the text, and every program maps that
window too (thread_heap_stash_init did: 48 KiB more text after one malloc).

usage: check_hot_text.py SRC_DIR [LIBMMALLOC]
       check_hot_text.py --tool SRC_DIR WORK_DIR
       check_hot_text.py --self-test
"""
import os
import subprocess
import sys
import tempfile

import structure_common


def listed(src, path=None):
    return [l.strip() for l in open(path or os.path.join(src, "hot_text.txt"))
            if l.strip() and not l.startswith("#")]


def check_names(src, path=None):
    defined = structure_common.definitions(src)
    names = listed(src, path)
    problems = ["src/hot_text.txt names %s, which is defined nowhere in src/ (rerun "
                "tools/hot-text.sh)" % n for n in names if n not in defined]
    if len(set(names)) != len(names):
        problems.append("src/hot_text.txt names a function twice")
    return problems


def check_library(lib):
    out = subprocess.run(["nm", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
    addr = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "tT":
            addr.setdefault(f[2], int(f[0], 16))
    want_first = ["malloc", "free", "thread_heap_process_init"]
    missing = [n for n in want_first + ["mm_stats_print"] if n not in addr]
    if missing:
        return ["%s defines no %s" % (lib, ", ".join(missing))]
    return ["%s: %s lies above mm_stats_print: the hot functions are not first in its text"
            % (lib, n) for n in want_first if addr[n] > addr["mm_stats_print"]]


def self_test():
    failures = 0
    body = "static int alloc_one(int a,\n  int b) { return a; }\nvoid *_Znam(size_t n) { }\n"
    for label, lines, want in (("all defined", "alloc_one\n_Znam\n", None),
                               ("renamed function", "alloc_one\nalloc_two\n", "alloc_two"),
                               ("named twice", "alloc_one\nalloc_one\n", "twice")):
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "alloc.c"), "w").write(body)
            open(os.path.join(d, "hot_text.txt"), "w").write("# header\n" + lines)
            failures += not structure_common.case_ok(label, check_names(d), want)
    return failures


def check_tool(src, work):
    """Run tools/hot-text.sh into WORK/hot_text.txt and check what it wrote."""
    out = os.path.join(work, "hot_text.txt")
    tool = os.path.join(os.path.dirname(os.path.abspath(src)), "tools", "hot-text.sh")
    r = subprocess.run(["bash", tool, work, out], capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(out):
        return ["tools/hot-text.sh failed (status %d): %s" % (r.returncode, r.stderr[-2000:])]
    names = listed(src, out)
    problems = check_names(src, out)
    problems += ["tools/hot-text.sh's list puts %s past the first 200 names, or leaves "
                 "it out" % n for n in ("malloc", "free", "thread_heap_process_init")
                 if n not in names[:200]]
    return problems + ["src/hot_text.txt leaves out %s, which a program that calls malloc once "
                       "runs (rerun tools/hot-text.sh)" % n
                       for n in sorted(one_malloc_functions(work) - set(listed(src)))]


def one_malloc_functions(work):
    """The functions tools/hot-text.sh's first run (its one-malloc program)
    entered, by name: its entered-1.txt addresses through inst-syms.txt."""
    syms = {}
    for line in open(os.path.join(work, "inst-syms.txt")):
        addr, name = line.split()
        syms[int(addr, 16)] = name.split(".")[0]
    entered = {syms.get(int(l, 16)) for l in open(os.path.join(work, "entered-1.txt"))}
    return entered - {None, "__cyg_profile_func_enter"}


if __name__ == "__main__":
    # --tool SRC WORK, or SRC LIB: the extra argument is taken out before
    # the common command line (SRC, or --self-test) is read
    work = lib = None
    if len(sys.argv) == 4 and sys.argv[1] == "--tool":
        work = sys.argv.pop(3)
        sys.argv.pop(1)
    elif len(sys.argv) == 3:
        lib = sys.argv.pop(2)
    if work:
        check, clean = (lambda src: check_tool(src, work),
                        lambda src: "tools/hot-text.sh wrote %d names, each a function of src/, "
                        "malloc, free and the start-up among the first 200; src/hot_text.txt "
                        "names the %d functions a one-malloc program runs"
                        % (len(listed(src, os.path.join(work, "hot_text.txt"))),
                           len(one_malloc_functions(work))))
    else:
        check, clean = (lambda src: check_names(src) + (check_library(lib) if lib else []),
                        lambda src: "every one of %d names in src/hot_text.txt is a function of "
                        "src/%s" % (len(listed(src)), ", and they come first in the library's "
                                    "text" if lib else ""))
    sys.exit(structure_common.main("check_hot_text", __doc__, check, self_test, clean))
