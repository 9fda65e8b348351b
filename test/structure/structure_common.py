"""structure_common.py — what the structure checks share: the command line
(CHECK_ROOT, or --self-test), the verdict of one self-test case, and the
functions src/ defines."""
import os
import re
import sys

# name(params) { ... : the parameter list may span lines, but not a ';'
DEFINITION = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(([^;{}()]|\([^;{}()]*\))*\)\s*\{")


def definitions(src):
    """Every function defined in src/*.c and src/*.h (name -> file)."""
    found = {}
    for f in sorted(os.listdir(src)):
        if f.endswith((".c", ".h")):
            for m in DEFINITION.finditer(open(os.path.join(src, f)).read()):
                found.setdefault(m.group(1), f)
    return found


def case_ok(label, got, want):
    """One self-test case: with want None the check must find nothing,
    otherwise one of its problems must contain want.  Prints the verdict."""
    ok = (not got) if want is None else any(want in p for p in got)
    print("self-test %-24s %s" % (label, "ok" if ok else "WRONG: %s" % got))
    return ok


def main(name, doc, check, self_test, clean):
    """check(root) -> problems; self_test() -> failures; clean(root) -> the
    line printed when the tree is clean.  Returns the exit status."""
    if sys.argv[1:] == ["--self-test"]:
        return 1 if self_test() else 0
    if len(sys.argv) != 2:
        print(doc.strip(), file=sys.stderr)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print("%s: %s" % (name, p), file=sys.stderr)
    if not problems:
        print("%s: %s" % (name, clean(sys.argv[1])))
    return 1 if problems else 0
