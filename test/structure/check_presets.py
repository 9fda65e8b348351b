#!/usr/bin/env python3
"""check_presets.py — the trust build preset builds every program the trust
tests run.

The trust and secure presets of CMakePresets.json name their build targets
one by one (the trust tree is a full configure, but building all of it would
double make test's time); a test whose program is not in that list is "Not
Run" in make test, which fails CI only after the fact.  This check reads the
targets that test/trust/CMakeLists.txt defines (mm_test(NAME ...) and
add_executable(NAME ...)) and fails on any that the trust build preset does
not build.

usage: check_presets.py REPO_ROOT     check the tree
       check_presets.py --self-test   a target missing from the preset must be
                                      caught, and a complete list pass
"""
import json
import os
import re
import sys
import tempfile

import structure_common

DEFINE = re.compile(r"^\s*(?:mm_test|add_executable)\(\s*([A-Za-z0-9_]+)", re.M)


def check(root):
    with open(os.path.join(root, "CMakePresets.json")) as f:
        presets = json.load(f)
    built = None
    for b in presets.get("buildPresets", []):
        if b.get("name") == "trust":
            built = set(b.get("targets", []))
    if built is None:
        return ["CMakePresets.json has no build preset named trust"]
    with open(os.path.join(root, "test", "trust", "CMakeLists.txt")) as f:
        defined = DEFINE.findall(f.read())
    if not defined:
        return ["test/trust/CMakeLists.txt defines no target (the pattern no longer matches?)"]
    return ["the trust build preset does not build %s (defined in test/trust/CMakeLists.txt)" % t
            for t in defined if t not in built]


def self_test():
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "test", "trust"))
        with open(os.path.join(tmp, "test", "trust", "CMakeLists.txt"), "w") as f:
            f.write("mm_test(trust_a SOURCES a.c)\nif(X)\n  add_executable(trust_b b.c)\nendif()\n")
        for targets, want, label in ((["trust_a", "trust_b"], None, "complete list"),
                                     (["trust_a"], "trust_b", "a missing target")):
            with open(os.path.join(tmp, "CMakePresets.json"), "w") as f:
                json.dump({"buildPresets": [{"name": "trust", "targets": targets}]}, f)
            failures += not structure_common.case_ok(label, check(tmp), want)
    return failures


if __name__ == "__main__":
    sys.exit(structure_common.main("check_presets", __doc__, check, self_test,
                                   lambda root: "the trust preset builds every trust target"))
