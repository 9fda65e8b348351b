#!/usr/bin/env bash
# Installs what mmalloc's build, tests and benchmarks need on Debian 12.
# Safe to run again; does nothing that is already done.  Needs root (or sudo).
set -euo pipefail
pkgs=(build-essential cmake clang libclang-rt-14-dev llvm valgrind gdb git python3 python3-pip
      zlib1g-dev libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0 libtbbmalloc2
      hyperfine bwa dwgsim samtools parasail time procps)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
if ! python3 -c 'import matplotlib' 2>/dev/null; then
  echo "install-deps: installing matplotlib from PyPI"
  python3 -m pip install -q matplotlib 2>/dev/null ||
    python3 -m pip install -q --break-system-packages matplotlib
fi
