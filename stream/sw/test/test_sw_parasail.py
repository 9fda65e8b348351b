#!/usr/bin/env python3
"""test_sw_parasail.py — build/mmsw against Debian's parasail (ctest
sw_parasail, label "stream"; registered only when parasail_aligner is
installed, see CMakeLists.txt).

On a database made by tools/gen_protein_db.py (fixed seed; families, so some
alignments are long) plus a long self-similar record (so mmsw's 16-bit and
32-bit rungs answer too), every score printed by mmsw equals the score of
parasail_aligner's exact 32-bit striped Smith-Waterman (sw_striped_32, no
suffix-array filter; its scalar "sw" when open <= extend, see below), for queries of several lengths, both matrices and
several gap costs, given to both programs as the same -o/-e numbers: this is
also the test that our gap convention is parasail's.
Not a benchmark: nothing here is timed.
"""
import argparse
import os
import subprocess
import sys

FAILED = []
CHECKS = [0]


def check(name, ok, detail=""):
    CHECKS[0] += 1
    if not ok:
        FAILED.append(name)
        print("FAIL %s %s" % (name, detail), file=sys.stderr)


def parasail_scores(parasail, func, query, db, matrix, o, e, out_csv):
    # parasail_aligner reads standard input as an extra input when it has
    # data (it polls it), so give it an empty pipe that stays open until it
    # is done (neither /dev/null nor a closed pipe will do).
    p = subprocess.Popen([parasail, "-x", "-a", func, "-m", matrix,
                          "-o", str(o), "-e", str(e), "-t", "2", "-f", db, "-q", query,
                          "-g", out_csv],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    out, _ = p.communicate(timeout=240)
    if p.returncode != 0:
        return None, out
    scores = {}
    with open(out_csv) as f:
        for line in f:
            # query index, database index, query length, db length, score, ...
            fields = line.split(",")
            scores[int(fields[1])] = (int(fields[4]), int(fields[3]))
    return scores, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mmsw", required=True)
    ap.add_argument("--parasail", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    W = lambda name: os.path.join(a.work, name)

    n, seed = 1500, 11
    db = W("db.fa")
    subprocess.run([sys.executable, a.gen, "-n", str(n), "--seed", str(seed), "-o", db],
                   check=True)
    queries = []
    for qlen in (7, 120, 700, 3000):
        q = W("q%d.fa" % qlen)
        subprocess.run([sys.executable, a.gen, "-n", str(n), "--seed", str(seed),
                        "--query", str(qlen), "-o", q], check=True)
        queries.append(q)
    # A long query whose copy is in the database: its score needs 32 bits.
    with open(queries[-1]) as f:
        body = "".join(f.read().split("\n")[1:])
    long_q = W("q_long.fa")
    with open(long_q, "w") as f:
        f.write(">qlong\n%s\n" % (body * 2))
    with open(db, "a") as f:
        f.write(">selfcopy\n%s\n>halfcopy\n%s\n" % (body * 2, body[:1000]))
    lengths = []
    with open(db) as f:
        for line in f:
            if line.startswith(">"):
                lengths.append(0)
            else:
                lengths[-1] += len(line.strip())

    # parasail's vector routines assume open > extend: with open <= extend
    # its striped (and scan) routines disagree with its own scalar "sw" on
    # some pairs; mmsw agrees with the scalar one, so those cases (short
    # queries only: "sw" is slow) are compared with "sw".
    cases = [(q, "blosum50", 10, 2, "sw_striped_32") for q in queries]
    cases += [(queries[1], "blosum62", 11, 1, "sw_striped_32"),
              (queries[2], "blosum62", 10, 1, "sw_striped_32"),
              (queries[2], "blosum50", 5, 2, "sw_striped_32"),
              (queries[1], "blosum62", 12, 0, "sw_striped_32"),
              (long_q, "blosum50", 10, 2, "sw_striped_32"),
              (queries[1], "blosum50", 1, 1, "sw"),
              (queries[0], "blosum62", 3, 5, "sw"),
              (queries[1], "blosum50", 3, 5, "sw")]
    widths_seen = set()
    for q, m, o, e, func in cases:
        tag = "%s %s -o %d -e %d (parasail %s)" % (os.path.basename(q), m, o, e, func)
        want, log = parasail_scores(a.parasail, func, q, db, m, o, e, W("parasail.csv"))
        check("parasail ran: " + tag, want is not None, log)
        if want is None:
            continue
        check("parasail scored every sequence: " + tag, len(want) == len(lengths))
        p = subprocess.run([a.mmsw, "-q", q, "-d", db, "-m", m, "-o", str(o), "-e", str(e),
                            "-t", "2"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=240)
        check("mmsw ran: " + tag, p.returncode == 0, p.stderr)
        ours = [int(l.split("\t")[0]) for l in p.stdout.splitlines()]
        check("one line per sequence: " + tag, len(ours) == len(lengths))
        diff = [(i, ours[i], want.get(i)) for i in range(min(len(ours), len(lengths)))
                if want.get(i, (None,))[0] != ours[i] or want[i][1] != lengths[i]]
        check("every score equals parasail's: " + tag, not diff, str(diff[:5]))
        print("test_sw_parasail: %s: %d scores equal, best %d" % (tag, len(ours) - len(diff),
              max(ours) if ours else -1), file=sys.stderr)
        for w in ("16-bit 0.00%", "32-bit 0;"):
            if w not in p.stderr:
                widths_seen.add(w.split("-")[0])
    check("the 16-bit and 32-bit rungs were exercised", widths_seen == {"16", "32"},
          str(widths_seen))

    print("test_sw_parasail: %d checks, %d failed" % (CHECKS[0], len(FAILED)), file=sys.stderr)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
