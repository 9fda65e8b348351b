#!/usr/bin/env python3
"""test_mmsw.py — build/mmsw end to end (ctest sw_mmsw, label "stream").

1. Scores: on a generated database (tools/gen_protein_db.py, fixed seed) and
   a hand-made one with B Z X U O * and lower case, the output of mmsw —
   farm with lock-free and mutex queues, 1, 2 and 4 workers, on-demand and
   round-robin scheduling, SSE2 and AVX2 (when the CPU has it), and --serial
   — equals, byte for byte, the scalar reference scan (sw_scan_ref), for
   both matrices and several gap costs.
2. The precision ladder through the program: a long self-similar pair
   (16-bit and 32-bit rungs) still scores as the reference, and the summary
   counts it.
3. Errors: every malformed input (database or query) and every bad option
   ends with exit status 2 and one line "mmsw: ..." on stderr, FASTA errors
   with "FILE:LINE:".
Not a benchmark: nothing here is timed.
"""
import argparse
import os
import re
import subprocess
import sys

FAILED = []
CHECKS = [0]


def check(name, ok, detail=""):
    CHECKS[0] += 1
    if not ok:
        FAILED.append(name)
        print("FAIL %s %s" % (name, detail), file=sys.stderr)


def run(cmd):
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=240)
    return p.returncode, p.stdout, p.stderr


def avx2_supported():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx2" in f.read()
    except OSError:
        return False


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mmsw", required=True)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    W = lambda name: os.path.join(a.work, name)

    # ---- data -----------------------------------------------------------
    db = W("db.fa")
    subprocess.run([sys.executable, a.gen, "-n", "400", "--seed", "5", "-o", db], check=True)
    queries = {}
    for n in (1, 33, 250):
        queries[n] = W("q%d.fa" % n)
        subprocess.run([sys.executable, a.gen, "-n", "400", "--seed", "5", "--query", str(n),
                        "-o", queries[n]], check=True)
    odd_db = write(W("odd.fa"),
                   ">odd1 all the letters\nARNDCQEGHILKMFPSTWYVBZX*\n"
                   ">odd2\nuuuooo\nbzx**\n>odd3\nw\n\n>odd4 lower\nacdefghiklmnpqrstvwy\n"
                   ">odd5\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQ\n")
    odd_q = write(W("oddq.fa"), ">oddq\nMKTAYIAKQRQISFVKSHFSRQxxbzuLEERLGLIEVQ*PILSRVGDGTQDNL\n")

    isas = ["sse2"] + (["avx2"] if avx2_supported() else [])
    configs = [["--serial"]]
    for isa in isas:
        for queue in ("lockfree", "mutex"):
            for t in ("1", "2", "4"):
                configs.append(["--isa", isa, "--queue", queue, "-t", t])
        configs.append(["--isa", isa, "--queue", "lockfree", "-t", "3", "--sched", "rr"])
        configs.append(["--isa", isa, "--queue", "mutex", "-t", "2", "--sched", "rr"])

    # ---- 1. scores equal the scalar reference ---------------------------
    cases = [(queries[250], db, "blosum50", 10, 2), (queries[33], db, "blosum62", 11, 1),
             (queries[1], db, "blosum50", 10, 2), (queries[250], db, "blosum62", 5, 2),
             (odd_q, odd_db, "blosum50", 10, 2), (odd_q, odd_db, "blosum62", 3, 5)]
    for q, d, m, o, e in cases:
        rc, want, err = run([a.ref, q, d, m, str(o), str(e)])
        check("reference ran", rc == 0, err)
        nseq = want.count("\n")
        for cfg in configs:
            rc, out, err = run([a.mmsw, "-q", q, "-d", d, "-m", m, "-o", str(o), "-e", str(e)] + cfg)
            tag = "%s %s %s %d/%d %s" % (os.path.basename(q), os.path.basename(d), m, o, e,
                                         " ".join(cfg))
            check("exit 0: " + tag, rc == 0, err)
            check("scores equal the scalar reference: " + tag, out == want,
                  "(%d lines vs %d)" % (out.count("\n"), nseq))
            check("summary line: " + tag,
                  re.search(r"^mmsw: %d sequences, \d+ residues, query \d+, cells [0-9.e+]+, "
                            r"[0-9.]+ s, [0-9.]+ GCUPS \(" % nseq, err, re.M) is not None, err)
    # The defaults are BLOSUM50, open 10, extend 2.
    rc, want, _ = run([a.ref, queries[250], db, "blosum50", "10", "2"])
    rc, out, _ = run([a.mmsw, "-q", queries[250], "-d", db])
    check("defaults are blosum50 10/2", out == want)

    # ---- 2. the precision ladder through the program ---------------------
    long_q = W("long_q.fa")
    subprocess.run([sys.executable, a.gen, "-n", "400", "--seed", "5", "--query", "6000",
                    "-o", long_q], check=True)
    with open(long_q) as f:
        body = "".join(f.read().split("\n")[1:])
    ladder_db = write(W("ladder.fa"),
                      ">self\n%s\n>half\n%s\n>short\n%s\n" % (body, body[:1500], body[:20]))
    rc, want, _ = run([a.ref, long_q, ladder_db, "blosum50", "10", "2"])
    scores = [int(l.split("\t")[0]) for l in want.splitlines()]
    check("ladder data: one score beyond 16 bits, one beyond 8",
          scores[0] > 32767 and 255 < scores[1] < 32000 and scores[2] < 250, str(scores))
    for cfg in (["--serial"], ["-t", "2"], ["-t", "2", "--isa", "sse2"]):
        rc, out, err = run([a.mmsw, "-q", long_q, "-d", ladder_db] + cfg)
        check("ladder scores: " + " ".join(cfg), out == want, out + err)
        check("ladder counted: " + " ".join(cfg),
              "8-bit 33.33%, 16-bit 33.33%, 32-bit 1;" in err, err)

    # ---- 3. errors: exit status 2, one line --------------------------------
    good_q = queries[33]

    def expect_error(tag, args, pattern, one_line=True):
        rc, out, err = run([a.mmsw] + args)
        lines = err.strip("\n").split("\n")
        check("exit 2: " + tag, rc == 2, "rc=%d err=%s" % (rc, err))
        if one_line:
            check("one line: " + tag, len(lines) == 1, err)
        check("message: " + tag, re.search(pattern, lines[0]) is not None,
              "%r !~ %r" % (lines[0], pattern))

    bad = {
        "no '>' first": ("ACDE\n>a\nAC\n", r"^mmsw: %s:1: not a FASTA file"),
        "empty name": (">a\nAC\n>\nAC\n", r"^mmsw: %s:3: empty sequence name"),
        "invalid character": (">a\nAC\n>b\nACDE\nAC9\n", r"^mmsw: %s:5: invalid character '9' at column 3 of sequence 'b'"),
        "empty sequence": (">a\nAC\n>b\n>c\nAC\n", r"^mmsw: %s:3: sequence 'b' is empty"),
        "empty file": ("", r"^mmsw: %s: no FASTA record"),
    }
    for tag, (text, pattern) in bad.items():
        path = write(W("bad.fa"), text)
        for cfg in (["--serial"], ["-t", "2"], ["-t", "2", "--queue", "mutex"]):
            expect_error("db %s %s" % (tag, cfg), ["-q", good_q, "-d", path] + cfg,
                         pattern % re.escape(path))
        expect_error("query " + tag, ["-q", path, "-d", db], pattern % re.escape(path))
    missing = W("does-not-exist.fa")
    expect_error("missing db", ["-q", good_q, "-d", missing],
                 r"^mmsw: %s: cannot open: No such file" % re.escape(missing))
    expect_error("missing query", ["-q", missing, "-d", db],
                 r"^mmsw: %s: cannot open: No such file" % re.escape(missing))
    two = write(W("two.fa"), ">a\nAC\n>b\nAC\n")
    expect_error("two queries", ["-q", two, "-d", db],
                 r"^mmsw: %s:3: a second sequence 'b'" % re.escape(two))
    expect_error("bad matrix", ["-q", good_q, "-d", db, "-m", "pam250"], r"^mmsw: -m wants")
    expect_error("bad open", ["-q", good_q, "-d", db, "-o", "-1"], r"^mmsw: -o wants")
    expect_error("bad extend", ["-q", good_q, "-d", db, "-e", "x"], r"^mmsw: -e wants")
    expect_error("bad threads", ["-q", good_q, "-d", db, "-t", "0"], r"^mmsw: -t wants")
    expect_error("bad queue", ["-q", good_q, "-d", db, "--queue", "carrier-pigeon"],
                 r"^mmsw: --queue wants")
    expect_error("bad isa", ["-q", good_q, "-d", db, "--isa", "neon"], r"^mmsw: --isa wants")
    expect_error("no db", ["-q", good_q], r"^mmsw: -q QUERY.fa and -d DB.fa are required",
                 one_line=False)  # followed by the usage text
    rc, out, _ = run([a.mmsw, "--help"])
    check("--help exits 0 and states the gap convention",
          rc == 0 and "GAP_OPEN + (k - 1) * GAP_EXTEND" in out)

    print("test_mmsw: %d checks, %d failed" % (CHECKS[0], len(FAILED)), file=sys.stderr)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
