#!/usr/bin/env python3
"""check_version.py — one version number: the CMake project's, and the same
in every other place that states it.

  CMakeLists.txt        project(mmalloc VERSION X.Y.Z ...)   (the source)
  include/mmalloc.h     MM_VERSION_MAJOR / _MINOR / _PATCH
  CHANGELOG.md          the first "## X.Y.Z" heading
  rust/*/Cargo.toml     version = "X.Y.Z" of each crate, and the version a
                        crate asks of another crate of this repository
  rust/*/src/lib.rs     MM_VERSION_MAJOR / _MINOR / _PATCH constants
  docs/mmrun.1          the man page's .TH line ("mmalloc X.Y.Z")
  debian/changelog      the first entry's upstream version (X.Y.Z-N)

The pkg-config file and the CMake package are generated from the project's
version by the build and need no check.  A place that exists must agree; a
place that does not exist yet (no rust/, no debian/) is reported as absent,
while the first three are required.

usage: check_version.py REPO_ROOT     check the tree
       check_version.py --self-test   a planted mismatch in each place must
                                      be caught, and an agreeing tree pass
"""
import glob
import os
import re
import shutil
import sys
import tempfile

import structure_common


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def versions(root):
    """(place, version or None) for every place that states the version."""
    out = []
    m = re.search(r"project\(\s*mmalloc\s+VERSION\s+(\d+\.\d+\.\d+)", read(os.path.join(root, "CMakeLists.txt")))
    out.append(("CMakeLists.txt project()", m.group(1) if m else None))
    h = read(os.path.join(root, "include", "mmalloc.h"))
    parts = [re.search(r"#define MM_VERSION_%s (\d+)" % k, h) for k in ("MAJOR", "MINOR", "PATCH")]
    out.append(("include/mmalloc.h MM_VERSION_*",
                ".".join(p.group(1) for p in parts) if all(parts) else None))
    m = re.search(r"^## \[?(\d+\.\d+\.\d+)", read(os.path.join(root, "CHANGELOG.md")), re.M)
    out.append(("CHANGELOG.md first entry", m.group(1) if m else None))
    for toml in sorted(glob.glob(os.path.join(root, "rust", "*", "Cargo.toml"))):
        text = read(toml)
        rel = os.path.relpath(toml, root)
        m = re.search(r'^\[package\][^\[]*?^version\s*=\s*"([^"]+)"', text, re.M | re.S)
        out.append((rel + " [package] version", m.group(1) if m else None))
        for dep, ver in re.findall(r'^(mmalloc[-\w]*)\s*=\s*\{[^}]*version\s*=\s*"=?([^"]+)"', text, re.M):
            out.append((rel + " dependency " + dep, ver))
    for lib in sorted(glob.glob(os.path.join(root, "rust", "*", "src", "lib.rs"))):
        text = read(lib)
        parts = [re.search(r"pub const MM_VERSION_%s: u32 = (\d+);" % k, text) for k in ("MAJOR", "MINOR", "PATCH")]
        if any(parts):
            out.append((os.path.relpath(lib, root) + " MM_VERSION_*",
                        ".".join(p.group(1) for p in parts) if all(parts) else None))
    man = os.path.join(root, "docs", "mmrun.1")
    if os.path.exists(man):
        m = re.search(r'^\.TH .*"mmalloc (\d+\.\d+\.\d+)"', read(man), re.M)
        out.append(("docs/mmrun.1 .TH", m.group(1) if m else None))
    deb = os.path.join(root, "debian", "changelog")
    if os.path.exists(deb):
        m = re.match(r"\S+ \((?:\d+:)?([^-)]+)", read(deb))
        out.append(("debian/changelog first entry", m.group(1) if m else None))
    return out


def check(root):
    """Every place that disagrees with CMakeLists.txt, or states nothing."""
    vs = versions(root)
    want = vs[0][1]
    return ["%s states %s, CMakeLists.txt states %s" % (place, v or "nothing", want)
            for place, v in vs if v is None or v != want]


def clean(root):
    vs = versions(root)
    absent = [p for p in ("rust/*/Cargo.toml", "debian/changelog")
              if not glob.glob(os.path.join(root, p))]
    return "%d places state %s%s" % (len(vs), vs[0][1],
                                      " (absent: %s)" % ", ".join(absent) if absent else "")


def self_test():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        def fresh():
            t = os.path.join(tmp, "tree")
            shutil.rmtree(t, ignore_errors=True)
            os.makedirs(os.path.join(t, "include"))
            for f in ("CMakeLists.txt", "CHANGELOG.md", os.path.join("include", "mmalloc.h")):
                shutil.copy(os.path.join(root, f), os.path.join(t, f))
            want = versions(t)[0][1]
            os.makedirs(os.path.join(t, "rust", "a"))
            with open(os.path.join(t, "rust", "a", "Cargo.toml"), "w") as f:
                f.write('[package]\nname = "a"\nversion = "%s"\n\n[dependencies]\n'
                        'mmalloc-sys = { path = "../b", version = "=%s" }\n' % (want, want))
            os.makedirs(os.path.join(t, "debian"))
            with open(os.path.join(t, "debian", "changelog"), "w") as f:
                f.write("mmalloc (%s-1) unstable; urgency=medium\n" % want)
            return t

        failures += not structure_common.case_ok("agreeing tree", check(fresh()), None)
        plants = [
            (os.path.join("include", "mmalloc.h"), "include/mmalloc.h"),
            ("CHANGELOG.md", "CHANGELOG.md"),
            (os.path.join("rust", "a", "Cargo.toml"), "[package] version"),
            (os.path.join("rust", "a", "Cargo.toml"), "dependency mmalloc-sys"),
            (os.path.join("debian", "changelog"), "debian/changelog"),
        ]
        for path, want in plants:
            t = fresh()
            p = os.path.join(t, path)
            text = read(p)
            if path.endswith("mmalloc.h"):
                text = re.sub(r"#define MM_VERSION_PATCH \d+", "#define MM_VERSION_PATCH 9", text)
            elif path == "CHANGELOG.md":
                text = text.replace("## ", "## 9.9.9 (planted)\n\n## ", 1)
            elif want == "dependency mmalloc-sys":
                text = text.replace('version = "=', 'version = "=9.9.', 1)
            elif path.endswith("Cargo.toml"):
                text = text.replace('version = "', 'version = "9.9.9"\nx = "', 1)
            else:
                text = text.replace("(", "(9.9.9-1) x (", 1)
            with open(p, "w") as f:
                f.write(text)
            failures += not structure_common.case_ok("mismatch in " + want, check(t), want)
    return failures


if __name__ == "__main__":
    sys.exit(structure_common.main("check_version", __doc__, check, self_test, clean))
