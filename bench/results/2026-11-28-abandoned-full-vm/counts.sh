#!/bin/bash
# counts.sh LIB...: local heap lock acquisitions and page adoptions in one
# run of the handoff workload at 32 threads (quick size), each LIB
# preloaded, from MMALLOC_STATS=2's JSON at exit.  Run from the
# repository root after `cmake --build build`.
for lib in "$@"; do
  MMALLOC_STATS=2 LD_PRELOAD=$lib build/bench/handoff threads=32 2>&1 >/dev/null |
    python3 -c "
import sys, json
t = sys.stdin.read()
tot = json.loads(t[t.index('{'):])['total']
print('$lib', {k: tot[k] for k in ('lock_acquisitions', 'lock_waits', 'pages_abandoned', 'pages_adopted')})
"
done
