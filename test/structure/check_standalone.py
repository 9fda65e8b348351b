#!/usr/bin/env python3
"""check_standalone.py — the repository stands alone: nothing in it sends a
reader to a document outside the clone, and every relative link in a
Markdown file leads to a file that exists.

Outside documents are the project's planning notes and the source papers'
texts, which live beside the repository on the developers' machines, not
in it: paths into a sibling "shared" directory, the seed texts, and the
planning notes by name.  docs/sources.md cites the papers instead; docs/
holds the design and the conventions.

usage: check_standalone.py REPO_ROOT      check the tree (files under .git
                                          and build directories are skipped)
       check_standalone.py --self-test    a planted reference and a broken
                                          link must both be caught
"""
import os
import re
import sys
import tempfile

import structure_common

# Spelled in pieces so that this file does not match itself.
OUTSIDE = [re.compile(p) for p in (
    r"\.\./" + "shared\\b", r"\b" + "shared/" + "seeds", r"\bshared/" + "[A-Z]+\\.md",
    r"\b" + "STYLE" + r"\.md", r"\b" + "DESIGN" + r"\.md", r"\b" + "SOURCES" + r"\.md")]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s#]+)(?:#[^)]*)?\)")
# Markdown makes no link inside a code span (`new[](nothrow)` names an
# operator) or a fenced block: those are blanked before links are sought.
CODE = re.compile(r"^```.*?^```|`[^`\n]*`", re.S | re.M)
SKIP_DIRS = {".git", "__pycache__"}
TEXT = (".c", ".h", ".cpp", ".py", ".sh", ".md", ".txt", ".cmake", ".in", ".json", ".rs",
        ".toml", "Makefile", "CMakeLists.txt", "run", ".dict")


def files(root):
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith("build")]
        for n in names:
            if n.endswith(TEXT):
                yield os.path.join(d, n)


def check(root):
    problems = []
    for path in files(root):
        rel = os.path.relpath(path, root)
        try:
            text = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for p in OUTSIDE:
                if p.search(line):
                    problems.append("%s:%d: refers outside the repository: %s"
                                    % (rel, n, line.strip()[:100]))
        if path.endswith(".md"):
            for m in LINK.finditer(CODE.sub("", text)):
                target = m.group(1)
                if re.match(r"[a-z]+:", target):
                    continue  # a URL
                if not os.path.exists(os.path.join(os.path.dirname(path), target)):
                    problems.append("%s: link to %s, which does not exist" % (rel, target))
    return problems


def self_test():
    failures = 0
    cases = {"clean": ("see [the design](docs/design.md)\n", None),
             "outside": ("the plan: " + "../" + "shared/" + "DESIGN" + ".md\n", "outside"),
             "broken link": ("see [gone](docs/nothing.md)\n", "does not exist"),
             "code span": ("the operator `new[](nothrow)` is no link\n", None),
             "broken link after code": ("`a[](b)` then [gone](nothing.md)\n", "does not exist")}
    for name, (readme, want) in cases.items():
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "docs"))
            open(os.path.join(d, "docs", "design.md"), "w").write("# design\n")
            open(os.path.join(d, "README.md"), "w").write(readme)
            failures += not structure_common.case_ok(name, check(d), want)
    return failures


if __name__ == "__main__":
    sys.exit(structure_common.main(
        "check_standalone", __doc__, check, self_test,
        lambda root: "no reference leaves the repository; every Markdown link resolves"))
