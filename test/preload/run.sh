#!/bin/sh
# run.sh — real programs on mmalloc through LD_PRELOAD (label preload).
#
#   run.sh CASE LIBMMALLOC MMRUN WORKDIR [CXXPROG]
#
# CASE is one of python-dict, python-threads, git, gcc, sort, cxx.  Each case
# prepares its input without mmalloc (generated, fixed seeds), then runs the
# same workload three times:
#   base     plain, on the C library's malloc
#   preload  LD_PRELOAD=LIBMMALLOC MMALLOC_VERBOSE=1
#   mmrun    MMALLOC_LIB=LIBMMALLOC MMALLOC_VERBOSE=1 MMRUN ...
# The workload runs under sh, so every process it starts (the shell, python,
# git and the helpers it spawns, gcc's cc1/as/ld, sort) runs on mmalloc.
# Checks: every run exits 0; the mmalloc runs print mmalloc's verbose line
# (so mmalloc was loaded) and no other mmalloc message; their stdout equals
# the base run's, and so does their stderr once the verbose lines are taken
# out.  Outputs are digests and listings, never timestamps.
#
#   run.sh --workload CASE DIR [CXXPROG]   the workload alone (used by the above)
set -eu

PY=/usr/bin/python3   # Debian's interpreter, not a pyenv shim
VERBOSE_RE='^mmalloc [0-9][0-9.]*: heaps='

# ---------------------------------------------------------------------------
# Workloads: read their input from $dir/input (prepared once), write their
# results on stdout; run in a scratch directory $dir/$mode.
workload() {
  case=$1 dir=$2 cxxprog=${3:-}
  export PYTHONHASHSEED=0 LC_ALL=C
  case $case in
  python-dict)
    "$PY" -I "$dir/input/dict.py"
    ;;
  python-threads)
    "$PY" -I "$dir/input/threads.py"
    ;;
  git)
    export HOME="$PWD/home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
    export GIT_AUTHOR_NAME=Test GIT_AUTHOR_EMAIL=test@example.org
    export GIT_COMMITTER_NAME=Test GIT_COMMITTER_EMAIL=test@example.org
    mkdir -p home
    cp -R "$dir/input/tree" repo
    cd repo
    git init -q -b main .
    git config gc.auto 0
    git config pack.threads 2
    git add -A
    GIT_AUTHOR_DATE='2020-01-01T00:00:00Z' GIT_COMMITTER_DATE='2020-01-01T00:00:00Z' \
      git commit -q -m 'first: generated tree'
    # change a third of the files, delete some, add some: deltas for gc
    i=0
    for f in $(git ls-files | sort); do
      i=$((i + 1))
      case $((i % 9)) in
        0) git rm -q "$f" ;;
        1|2|3) printf 'changed line %d\n' "$i" >> "$f" ;;
      esac
    done
    mkdir -p added
    for i in $(seq 1 40); do printf 'new file %d\n' "$i" > "added/n$i.txt"; done
    git add -A
    GIT_AUTHOR_DATE='2020-01-02T00:00:00Z' GIT_COMMITTER_DATE='2020-01-02T00:00:00Z' \
      git commit -q -m 'second: edits'
    git branch side HEAD~1
    git gc -q
    git repack -q -a -d -f --window=50 --depth=50
    git fsck --full --strict
    git log --format='%H %T %an %ad %s' --date=iso-strict main side
    git cat-file -p HEAD
    git ls-tree -r HEAD | sha256sum
    git diff --stat HEAD~1 HEAD | tail -n 1
    git diff HEAD~1 HEAD | sha256sum
    git rev-list --objects --all | sort | sha256sum
    git archive HEAD | sha256sum
    ;;
  gcc)
    cp "$dir/input/prog.c" prog.c
    gcc -O2 -c prog.c -o prog.o
    gcc -O2 prog.o -o prog
    ./prog
    sha256sum prog.o
    gcc -O0 -fsyntax-only -Wall prog.c
    ;;
  sort)
    sort "$dir/input/data.txt" | sha256sum
    sort -u -t, -k3,3 -k2,2n "$dir/input/data.txt" | sha256sum
    ;;
  cxx)
    "$cxxprog" 200000
    ;;
  *)
    echo "run.sh: unknown case $case" >&2
    exit 2
    ;;
  esac
}

if [ "${1:-}" = "--workload" ]; then
  shift
  workload "$@"
  exit $?
fi

# ---------------------------------------------------------------------------
# Inputs, made once without mmalloc.
prepare() {
  case=$1 in=$2/input
  mkdir -p "$in"
  case $case in
  python-dict)
    cat > "$in/dict.py" <<'EOF'
# dict/list/str-heavy work with a fixed seed; prints digests only
import hashlib, json, random
random.seed(20240531)
words = ["".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(2, 12)))
         for _ in range(20000)]
index = {}
for i in range(300000):
    w = words[random.randrange(len(words))]
    index.setdefault(w, []).append(i)
    if i % 7 == 0:
        index[w] = index[w][-50:]
freq = sorted(((len(v), k) for k, v in index.items()), reverse=True)
blob = json.dumps({k: v[:5] for k, v in index.items()}, sort_keys=True)
nested = {i: {str(j): [j] * (j % 5) for j in range(i % 40)} for i in range(20000)}
text = " ".join(words[i % len(words)] for i in range(200000))
parts = text.split(" ")
joined = "|".join(sorted(set(parts)))
h = hashlib.sha256()
h.update(blob.encode())
h.update(repr(freq[:1000]).encode())
h.update(joined.encode())
h.update(repr(sum(len(v) for v in nested.values())).encode())
print("words", len(words), "keys", len(index), "unique", len(set(parts)))
print("digest", h.hexdigest())
EOF
    ;;
  python-threads)
    cat > "$in/threads.py" <<'EOF'
# 8 threads take jobs from a queue, build lists/dicts/strings, hand results back
import hashlib, queue, random, threading
jobs, results = queue.Queue(), queue.Queue()
def worker():
    while True:
        job = jobs.get()
        if job is None:
            break
        n, seed = job
        rnd = random.Random(seed)
        d = {}
        for i in range(n):
            k = "k%d" % rnd.randrange(n // 3 + 1)
            d.setdefault(k, []).append("v" * (i % 17) + str(i))
        s = sorted((k, len(v), v[-1]) for k, v in d.items())
        results.put((seed, hashlib.sha256(repr(s).encode()).hexdigest()))
threads = [threading.Thread(target=worker) for _ in range(8)]
for t in threads:
    t.start()
for seed in range(400):
    jobs.put((2000 + seed * 7 % 1500, seed))
for _ in threads:
    jobs.put(None)
for t in threads:
    t.join()
out = sorted(results.get() for _ in range(400))
print("results", len(out))
print("digest", hashlib.sha256(repr(out).encode()).hexdigest())
EOF
    ;;
  git)
    "$PY" -I - "$in/tree" <<'EOF'
import os, random, sys
random.seed(7)
root = sys.argv[1]
vocab = ["alpha", "beta", "gamma", "delta", "static", "int", "return", "struct", "void", "for"]
for i in range(320):
    d = os.path.join(root, "dir%02d" % (i % 23), "sub%d" % (i % 4))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "file%03d.txt" % i), "w") as f:
        for line in range(random.randint(5, 120)):
            f.write(" ".join(random.choice(vocab) for _ in range(random.randint(1, 12))) + "\n")
EOF
    ;;
  gcc)
    "$PY" -I - "$in/prog.c" <<'EOF'
import random, sys
random.seed(11)
out = ["#include <stdio.h>", "#include <string.h>", "#include <stdlib.h>"]
for i in range(150):
    a, b, c = random.randint(1, 97), random.randint(1, 89), random.randint(2, 13)
    out.append("static unsigned long f%d(unsigned long x) {" % i)
    out.append("  unsigned long t[%d]; for (int k = 0; k < %d; k++) t[k] = x * %d + k;" % (c, c, a))
    out.append("  for (int k = 1; k < %d; k++) t[k] ^= t[k - 1] >> %d;" % (c, b % 31 + 1))
    out.append("  return t[%d] + %s;" % (c - 1, "f%d(x ^ %d)" % (i - 1, b) if i else "x"))
    out.append("}")
out.append("struct rec { char name[32]; unsigned long v; };")
out.append("static int cmp(const void *a, const void *b) { return strcmp(((const struct rec *)a)->name, ((const struct rec *)b)->name); }")
out.append("int main(void) {")
out.append("  struct rec *r = calloc(5000, sizeof *r); unsigned long sum = 0;")
out.append("  for (int i = 0; i < 5000; i++) { r[i].v = f149((unsigned long)i); snprintf(r[i].name, sizeof r[i].name, \"n%lx\", r[i].v); }")
out.append("  qsort(r, 5000, sizeof *r, cmp);")
out.append("  for (int i = 0; i < 5000; i++) sum = sum * 31 + r[i].v + (unsigned char)r[i].name[1];")
out.append("  printf(\"checksum %lu\\n\", sum); free(r); return 0;")
out.append("}")
open(sys.argv[1], "w").write("\n".join(out) + "\n")
EOF
    ;;
  sort)
    "$PY" -I - "$in/data.txt" <<'EOF'
import random, sys
random.seed(3)
letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
pool = ["".join(random.choices(letters, k=random.randint(2, 20))) for _ in range(5000)]
lines, size = [], 0
while size < 30 * 1024 * 1024:
    line = "%s%s,%d,k%d\n" % (random.choice(pool), random.choice(pool),
                              random.randint(-10**9, 10**9), random.randint(0, 200000))
    lines.append(line)
    size += len(line)
open(sys.argv[1], "w").write("".join(lines))
EOF
    ;;
  cxx) ;;
  esac
}

# ---------------------------------------------------------------------------
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

fail=0
check() { # check NAME CONDITION-EXIT-STATUS
  if [ "$2" -eq 0 ]; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi
}

main() {
  case=$1 lib=$2 mmrun=$3 work=$4 cxxprog=${5:-}
  script=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
  [ -x "$PY" ] || { echo "SKIP: $PY not found"; exit 77; }
  case $case in
    git) need=git ;;
    gcc) need=gcc ;;
    sort) need=sort ;;
    *) need=sh ;;
  esac
  command -v "$need" > /dev/null || { echo "SKIP: $need not found"; exit 77; }
  [ -e "$lib" ] || { echo "FAIL: $lib not found"; exit 1; }
  for v in $(env | sed -n 's/^\(MMALLOC_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
  unset LD_PRELOAD || true
  dir=$work/$case
  rm -rf "$dir"
  mkdir -p "$dir"
  t0=$(date +%s.%N)
  prepare "$case" "$dir"
  times="prepare $(elapsed "$t0")s"
  for mode in base preload mmrun; do
    mkdir -p "$dir/$mode"
    t0=$(date +%s.%N)
    set +e
    case $mode in
    base)
      (cd "$dir/$mode" && sh "$script" --workload "$case" "$dir" "$cxxprog") \
        > "$dir/$mode.out" 2> "$dir/$mode.err" ;;
    preload)
      (cd "$dir/$mode" && LD_PRELOAD="$lib" MMALLOC_VERBOSE=1 \
        sh "$script" --workload "$case" "$dir" "$cxxprog") > "$dir/$mode.out" 2> "$dir/$mode.err" ;;
    mmrun)
      (cd "$dir/$mode" && MMALLOC_LIB="$lib" MMALLOC_VERBOSE=1 \
        "$mmrun" sh "$script" --workload "$case" "$dir" "$cxxprog") > "$dir/$mode.out" 2> "$dir/$mode.err" ;;
    esac
    echo $? > "$dir/$mode.rc"
    set -e
    times="$times, $mode $(elapsed "$t0")s"
  done
  echo "== $case: wall times (information only): $times"
  set +e   # from here on every check reports

  echo "== $case: base stdout"
  cat "$dir/base.out"
  check "base run exits 0" "$(cat "$dir/base.rc")"
  [ -s "$dir/base.out" ]; check "base run prints results" $?
  for mode in preload mmrun; do
    check "$mode run exits 0 (got $(cat "$dir/$mode.rc"))" "$(cat "$dir/$mode.rc")"
    n=$(grep -c "$VERBOSE_RE" "$dir/$mode.err" || true)
    [ "$n" -ge 2 ]; check "$mode: mmalloc's verbose line from the shell and the program ($n lines)" $?
    grep -v "$VERBOSE_RE" "$dir/$mode.err" > "$dir/$mode.err.rest" || true
    if grep -q 'mmalloc' "$dir/$mode.err.rest"; then
      echo "  mmalloc messages in $mode stderr:"; grep 'mmalloc' "$dir/$mode.err.rest" | head -5
      check "$mode: no mmalloc message besides the verbose lines" 1
    else
      check "$mode: no mmalloc message besides the verbose lines" 0
    fi
    if cmp -s "$dir/base.out" "$dir/$mode.out"; then
      check "$mode: stdout identical to the base run" 0
    else
      diff "$dir/base.out" "$dir/$mode.out" | head -20
      check "$mode: stdout identical to the base run" 1
    fi
    if cmp -s "$dir/base.err" "$dir/$mode.err.rest"; then
      check "$mode: stderr identical to the base run (verbose lines aside)" 0
    else
      diff "$dir/base.err" "$dir/$mode.err.rest" | head -20
      check "$mode: stderr identical to the base run (verbose lines aside)" 1
    fi
  done
  if [ $fail -eq 0 ]; then rm -rf "$dir"; else echo "(outputs kept in $dir)"; fi
  exit $fail
}

main "$@"
