#!/bin/bash
# SciPy's own test suite (pip's scipy and numpy in a venv: python3 -m venv V
# && V/bin/pip install numpy scipy pytest hypothesis), every Python object
# through malloc, on glibc or under bin/mmrun; prints pytest's summary line,
# the skips (-rs) and the failures.
#   bench/results/2026-11-28-scipy-vm/scipy.sh V [bin/mmrun]
V=$1; shift
PYTHONMALLOC=malloc "$@" "$V/bin/python" -m pytest --pyargs scipy -q -rs -p no:cacheprovider \
  --continue-on-collection-errors -W ignore 2>&1 | grep -E "^SKIPPED|^FAILED|^ERROR| passed"
