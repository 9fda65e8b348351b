"""survey.py OUT.csv REPS [NAMES...]: real programs (Debian's) under each
allocator preloaded, allocators alternating, one CSV line per run:
program, allocator, repetition, wall seconds, peak RSS KiB (of the largest
process), minor faults, an md5 of stdout (8 hex digits), exit status.
ALLOCS=a,b limits the allocators; EXTRA="name=lib ..." adds builds;
MMLIB is mmalloc's library (default build/libmmalloc.so); the peers are
found as make bench finds them (bench/allocators.py).  The data
(big.json: 300,000 random JSON objects, seed 7; big.txt: one per line) is
made once in SURVEY_DIR (default /tmp/survey), with this directory's
scripts copied there.  `python3 table.py OUT.csv` gives the medians."""
import subprocess, sys, os, time, statistics, hashlib, csv, json, random, shutil
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '../../..'))  # the repository
sys.path.insert(0, os.path.join(ROOT, 'bench'))
import allocators  # make bench's discovery: mmalloc's build and the installed peers
extra = os.environ.get('EXTRA', '').split()
if os.environ.get('MMLIB'): extra.append('mmalloc=' + os.environ['MMLIB'])
only = os.environ.get('ALLOCS')
found, missing, _ = allocators.discover(os.path.join(ROOT, 'build'), extra=extra,
                                        only=only.split(',') if only else None, install=False)
for name, _, why in missing: print('survey: %s left out: %s' % (name, why), file=sys.stderr)
ALLOCS = {a.name: a for a in found}
S = os.environ.get('SURVEY_DIR', '/tmp/survey').rstrip('/') + '/'


def make_data():
    """The data and scripts in S (made once)."""
    os.makedirs(S, exist_ok=True)
    for f in ('p.pl', 'py.py', 'n.js', 't.tcl', 's.sql', 'heavy.cpp', 'aw.awk'):
        shutil.copy(os.path.join(HERE, f), S + f)
    if os.path.exists(S + 'big.json'):
        return
    random.seed(7)
    data = [{"a": random.randint(0, 10), "b": "".join(random.choice("abcdefgh") for _ in range(random.randint(3, 40))),
             "c": [random.random() for _ in range(random.randint(0, 8))], "d": {"x": i, "y": str(i)}}
            for i in range(300000)]
    json.dump(data, open(S + 'big.json', 'w'))
    with open(S + 'big.txt', 'w') as f:
        for o in data: f.write(json.dumps(o) + '\n')


CMDS = {
 'sqlite': f'sqlite3 :memory: < {S}s.sql',
 'perl': f'perl {S}p.pl',
 'python': f'PYTHONMALLOC=malloc python3 {S}py.py',
 'node': f'node {S}n.js',
 'jq': f"jq '[.[] | select(.a > 5) | {{b, c}}] | length' {S}big.json",
 'g++': f'g++ -std=c++17 -O2 -c {S}heavy.cpp -o /dev/null',
 'clang++': f'clang++ -std=c++17 -O2 -c {S}heavy.cpp -o /dev/null',
 'tcl': f'tclsh {S}t.tcl',
 'xz': f'xz -T2 -6 -c {S}big.json | md5sum',
 'zstd': f'zstd -T2 -12 -c {S}big.json | md5sum',
 'compileall': f'PYTHONMALLOC=malloc python3 -m compileall -f -q -j1 /usr/lib/python3.11/email /usr/lib/python3.11/json /usr/lib/python3.11/asyncio > /dev/null',
 'gitlog': f'git -C {ROOT} log -p --stat | md5sum',
 'awk': f'awk -f {S}aw.awk {S}big.txt',
 'cc': f'cd {ROOT}/src && gcc -O2 -c alloc.c -o /dev/null && clang -O2 -c free.c -o /dev/null',
 'sort1': f'LC_ALL=C sort {S}big.json | md5sum',
 'sort': f'LC_ALL=C sort --parallel=2 -S 30M {S}big.txt | md5sum',
}


def run(cmds, out, reps, names):
    """Runs each named command reps times under every allocator, alternating."""
    w = csv.writer(open(out, 'a'))
    for name in names:
        for r in range(reps):
            for a, alloc in ALLOCS.items():
                env = alloc.env(os.environ)
                t0 = time.time()
                p = subprocess.run(['/usr/bin/time', '-f', '%M %F %R %e', 'sh', '-c', cmds[name]], env=env, capture_output=True, text=True)
                wall = time.time() - t0
                last = p.stderr.strip().splitlines()[-1].split()
                rss = int(last[0]); minf = int(last[2])
                h = hashlib.md5(p.stdout.encode()).hexdigest()[:8]
                w.writerow([name, a, r, f'{wall:.3f}', rss, minf, h, p.returncode])
                print(name, a, r, f'{wall:.3f}', rss, minf, h, p.returncode, flush=True)


if __name__ == '__main__':
    make_data()
    run(CMDS, sys.argv[1], int(sys.argv[2]), sys.argv[3:] or list(CMDS))
