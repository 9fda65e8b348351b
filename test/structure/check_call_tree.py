#!/usr/bin/env python3
"""check_call_tree.py — the call tree at the top of src/thread_heap.h names
only functions that exist.

The tree lies between the lines "---- call tree ----" and "---- end of call
tree ----".  Every lower-case identifier in it with an underscore (a file
name such as alloc.c aside) must be a function defined in src/: a line of a
.c or .h file where the name is followed by a parameter list and a body.  A
map that names a function nobody can find is how the first version of this
tree misled its readers; this test keeps it from happening again.

usage: check_call_tree.py SRC_DIR      check src/thread_heap.h's tree
       check_call_tree.py --self-test  a tree naming a missing function
                                       must fail, a good one pass
"""
import os
import re
import sys
import tempfile

import structure_common

NAME = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w]*\.[ch]\b)")


def tree_names(header):
    text = open(header).read()
    try:
        start = text.index("---- call tree ----")
        end = text.index("---- end of call tree ----")
    except ValueError:
        return None
    return sorted(set(NAME.findall(text[start:end])))


def check(src):
    names = tree_names(os.path.join(src, "thread_heap.h"))
    if names is None:
        return ["src/thread_heap.h has no call tree between the two rules"]
    defined = structure_common.definitions(src)
    missing = [n for n in names if n not in defined]
    return ["the call tree in src/thread_heap.h names %s, which is defined nowhere in src/" % n
            for n in missing]


def self_test():
    tree = ("/* ---- call tree ----\n *   malloc   thread_heap_malloc_fast  alloc.c\n"
            " *   └ %s\n * ---- end of call tree ---- */\n")
    body = "static void thread_heap_malloc_fast(int a,\n  int b) { }\nint real_one(void) {}\n"
    failures = 0
    for name, expect_ok in (("real_one", True), ("thread_heap_alloc_class", False)):
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "thread_heap.h"), "w").write(tree % name)
            open(os.path.join(d, "alloc.c"), "w").write(body)
            failures += not structure_common.case_ok(
                name, check(d), None if expect_ok else "defined nowhere")
    return failures


if __name__ == "__main__":
    sys.exit(structure_common.main(
        "check_call_tree", __doc__, check, self_test,
        lambda src: "every one of %d names in the call tree is defined"
        % len(tree_names(os.path.join(src, "thread_heap.h")))))
