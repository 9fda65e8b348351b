#!/usr/bin/env bash
# Installs what mmalloc's build, tests and benchmarks need on Debian 12, and
# does nothing when it is all there (a second run takes a second).
# As root (or with password-less sudo) it installs what is missing; otherwise
# it prints the command to run and carries on (exit 0), so `make` still works
# on a machine where the build tools are there but a peer allocator is not.
#   tools/install-deps.sh [--strict]   --strict: fail when something is missing
set -uo pipefail
strict=0
[ "${1:-}" = "--strict" ] && strict=1
pkgs=(build-essential cmake clang libclang-rt-14-dev llvm valgrind gdb git python3 python3-pip
      zlib1g-dev libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0 libtbbmalloc2
      hyperfine bwa dwgsim samtools parasail libparasail-dev time procps pkg-config
      dpkg-dev debhelper lintian man-db)
# The real programs of `make bench FULL=1` (redis, ruby): installed by a call
# of their own, so that a failure there (a service that will not start in a
# container) never keeps the packages the tests need from being installed.
bench_pkgs=(redis-server redis-tools ruby)
# Rust: any cargo will do (rustup's or Debian's); Debian's when there is none.
command -v cargo >/dev/null 2>&1 || pkgs+=(cargo)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO="none"; fi
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$SUDO" = "none" ]; then
    echo "install-deps: missing ${missing[*]}"
    echo "install-deps: run: sudo apt-get install -y ${missing[*]}"
    [ $strict -eq 1 ] && exit 1
  else
    echo "install-deps: installing ${missing[*]}"
    $SUDO apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null ||
      { echo "install-deps: apt-get install failed"; [ $strict -eq 1 ] && exit 1; }
  fi
fi
bench_missing=()
for p in "${bench_pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || bench_missing+=("$p")
done
if [ ${#bench_missing[@]} -gt 0 ] && [ "$SUDO" != "none" ]; then
  echo "install-deps: installing ${bench_missing[*]} (real programs of make bench FULL=1)"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${bench_missing[@]}" >/dev/null ||
    echo "install-deps: apt-get install ${bench_missing[*]} failed (make bench FULL=1 skips them)"
fi
if ! python3 -c 'import matplotlib' 2>/dev/null; then
  echo "install-deps: installing matplotlib from PyPI"
  python3 -m pip install -q matplotlib 2>/dev/null ||
    python3 -m pip install -q --break-system-packages matplotlib 2>/dev/null ||
    { echo "install-deps: pip install matplotlib failed (plots will be skipped)"; [ $strict -eq 1 ] && exit 1; }
fi
exit 0
