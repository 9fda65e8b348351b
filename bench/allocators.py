"""Which allocators can be measured here, and how to bring them in.

Owns allocator discovery for the harness: mmalloc from the build directory,
the peers installed from Debian packages (found by `ldconfig -p`, then in
the usual library directories), any `--alloc NAME=PATH` given by the user,
an optional apt-get install of missing peers when running as root, and a
check that each preload library really gets loaded (ld.so only warns, and a
silently ignored LD_PRELOAD would measure glibc under another name).
"""

import glob
import os
import platform
import re
import shutil
import subprocess

# name, shared object to LD_PRELOAD, Debian package that ships it
PEERS = [
    ("glibc", None, "libc6"),
    ("jemalloc", "libjemalloc.so.2", "libjemalloc2"),
    ("tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"),
    ("mimalloc", "libmimalloc.so.2", "libmimalloc2.0"),
    ("tbbmalloc", "libtbbmalloc_proxy.so.2", "libtbbmalloc2"),
]

LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64", "/usr/local/lib", "/usr/lib", "/lib64", "/lib"]


class Allocator:
    def __init__(self, name, path, package=None, origin="peer"):
        self.name = name
        self.path = path          # None for glibc: no preload
        self.package = package
        self.origin = origin      # "mmalloc", "peer" or "user"
        self.version = ""
        self.extra_env = {}       # --alloc-env NAME:VAR=VALUE: set in this allocator's runs

    def env(self, base):
        env = dict(base)
        env.pop("LD_PRELOAD", None)
        if self.path:
            env["LD_PRELOAD"] = self.path
        env.update(self.extra_env)
        return env

    def __repr__(self):
        return "%s(%s)" % (self.name, self.path or "no preload")


def _ldconfig_paths():
    """soname -> path from the dynamic linker's cache, native arch first."""
    out = {}
    try:
        text = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True,
                              timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        try:
            text = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True,
                                  timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            return out
    want = "x86-64" if platform.machine() == "x86_64" else ""
    for line in text.splitlines():
        m = re.match(r"\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)", line)
        if not m:
            continue
        soname, flags, path = m.groups()
        native = want in flags
        if soname not in out or (native and not out[soname][1]):
            out[soname] = (path, native)
    return {k: v[0] for k, v in out.items()}


def find_library(soname, cache=None):
    cache = _ldconfig_paths() if cache is None else cache
    path = cache.get(soname)
    if path and os.path.exists(path):
        return path
    dirs = LIB_DIRS + sorted(glob.glob("/usr/lib/*-linux-gnu"))
    for d in dirs:
        p = os.path.join(d, soname)
        if os.path.exists(p):
            return p
    return None


def package_version(path, package):
    """The Debian package version of a library, or '' when unknown."""
    if not shutil.which("dpkg-query"):
        return ""
    pkg = package
    if path:
        try:
            r = subprocess.run(["dpkg-query", "-S", os.path.realpath(path)], capture_output=True,
                               text=True, timeout=20)
            if r.returncode != 0:
                r = subprocess.run(["dpkg-query", "-S", path], capture_output=True, text=True,
                                   timeout=20)
            if r.returncode == 0 and ":" in r.stdout:
                pkg = r.stdout.split(":")[0].strip()
        except (OSError, subprocess.SubprocessError):
            pass
    if not pkg:
        return ""
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True,
                           text=True, timeout=20)
        return "%s %s" % (pkg, r.stdout.strip()) if r.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def preload_works(path):
    """(ok, reason): does LD_PRELOAD=path really map the library into a child?"""
    env = dict(os.environ, LD_PRELOAD=path)
    try:
        r = subprocess.run(["cat", "/proc/self/maps"], env=env, capture_output=True, text=True,
                           timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return False, str(e)
    real = os.path.realpath(path)
    if real in r.stdout or path in r.stdout:
        return True, ""
    err = r.stderr.strip().splitlines()
    return False, err[0] if err else "library not mapped into the child"


def install_missing(packages, log):
    """apt-get install the packages (root only). Returns the ones installed."""
    if not packages or os.geteuid() != 0 or not shutil.which("apt-get"):
        return []
    log("installing missing allocators with apt-get: %s" % " ".join(packages))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-qq"] + packages
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        log("apt-get failed: %s" % (r.stderr.strip().splitlines() or ["?"])[-1])
        return []
    return packages


def apply_env(allocs, specs):
    """--alloc-env NAME:VAR=VALUE (repeatable): VAR=VALUE in the environment
    of every run of allocator NAME (for example one library measured twice,
    with and without an option).  Exits on a malformed spec or an unknown
    NAME."""
    by_name = {a.name: a for a in allocs}
    for spec in specs:
        name, sep, assign = spec.partition(":")
        var, eq, value = assign.partition("=")
        if not sep or not eq or not name or not var:
            raise SystemExit("--alloc-env wants NAME:VAR=VALUE, got %r" % spec)
        if name not in by_name:
            raise SystemExit("--alloc-env %s: no allocator %s is measured" % (spec, name))
        by_name[name].extra_env[var] = value


def discover(build_dir, extra=(), only=None, install=True, log=print):
    """Returns (allocators, missing, notes).

    missing: [(name, package, why)] for peers that cannot be measured.
    notes: lines for environment.txt (installs done, preload checks).
    """
    notes = []
    cache = _ldconfig_paths()
    found, missing = [], []
    mm = os.path.join(build_dir, "libmmalloc.so")
    if os.path.exists(mm):
        found.append(Allocator("mmalloc", os.path.abspath(mm), None, "mmalloc"))
    else:
        notes.append("mmalloc: not built (%s missing): run `make` first to include it" % mm)
    todo = []
    for name, soname, pkg in PEERS:
        if soname is None:
            found.append(Allocator(name, None, pkg))
            continue
        path = find_library(soname, cache)
        if path:
            found.append(Allocator(name, path, pkg))
        else:
            todo.append((name, soname, pkg))
    if todo and install and os.geteuid() == 0:
        done = install_missing([p for _, _, p in todo], log)
        if done:
            notes.append("installed with apt-get for this run: %s" % " ".join(done))
            cache = _ldconfig_paths()
    for name, soname, pkg in todo:
        path = find_library(soname, cache)
        if path:
            found.append(Allocator(name, path, pkg))
        else:
            missing.append((name, pkg, "%s not found; install: sudo apt-get install %s"
                            % (soname, pkg)))
    if only:
        known = {a.name for a in found} | {m[0] for m in missing} | {
            s.split("=", 1)[0] for s in extra}
        unknown = set(only) - known
        if unknown:
            raise SystemExit("--allocs: unknown allocator(s) %s" % ", ".join(sorted(unknown)))
        found = [a for a in found if a.name in only]
        missing = [m for m in missing if m[0] in only]
    for spec in extra:          # --alloc NAME=PATH: always measured
        if "=" not in spec:
            raise SystemExit("--alloc wants NAME=PATH, got %r" % spec)
        name, path = spec.split("=", 1)
        if not os.path.exists(path):
            raise SystemExit("--alloc %s: %s does not exist" % (name, path))
        found = [a for a in found if a.name != name]
        missing = [m for m in missing if m[0] != name]   # a missing peer the user supplied
        found.append(Allocator(name, os.path.abspath(path), None, "user"))
    usable = []
    for a in found:
        if a.path:
            ok, why = preload_works(a.path)
            if not ok:
                missing.append((a.name, a.package or "", "LD_PRELOAD=%s is not loaded: %s"
                                % (a.path, why)))
                continue
        if a.origin == "mmalloc":
            a.version = "mmalloc (this tree)"
        elif a.origin == "user":
            a.version = "user library %s" % a.path
        else:
            a.version = package_version(a.path, a.package) if a.path else package_version(
                None, "libc6")
        usable.append(a)
    return usable, missing, notes
