#!/bin/bash
# numpy's own test suite (pip's numpy in a venv: python3 -m venv V &&
# V/bin/pip install numpy pytest hypothesis), every object through malloc,
# on glibc or under bin/mmrun; prints pytest's summary line and the skips.
#   bench/results/2026-11-28-huge-cache-limit-vm/numpy.sh V [bin/mmrun]
V=$1; shift
PYTHONMALLOC=malloc "$@" "$V/bin/python" -m pytest --pyargs numpy -q -rs -p no:cacheprovider \
  --continue-on-collection-errors -W ignore 2>&1 | grep -E "^SKIPPED|passed"
