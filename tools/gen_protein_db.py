#!/usr/bin/env python3
"""gen_protein_db.py — synthetic protein databases for the Smith-Waterman
test-bed (build/mmsw) and its benchmark (bench/sw/run.py).

Owns: a deterministic (fixed-seed) generator of FASTA protein databases that
look like Swiss-Prot where it matters for a database scan:

  - residues drawn from Swiss-Prot's amino-acid background frequencies
    (A 8.25%, R 5.53, N 4.06, D 5.45, C 1.37, Q 3.93, E 6.75, G 7.07,
    H 2.27, I 5.96, L 9.66, K 5.84, M 2.42, F 3.86, P 4.70, S 6.56, T 5.34,
    W 1.08, Y 2.92, V 6.87);
  - lengths log-normal (median ~300, mean ~360) plus a long tail: 1 in 200
    sequences is drawn from a Pareto tail (1500 .. 35000 residues); no
    sequence is shorter than 8 or longer than 35000;
  - families: about a third of the sequences are mutated copies of an
    earlier one (substitutions 5-40%, insertions and deletions 0.5-4% each),
    so a query taken from a family aligns long with its relatives.

Invariants: the same arguments give byte-identical output (Python's
random.Random with an explicit seed; no other source of randomness); names
are "synNNNNNNN" (unique, in database order) with "fam=F" on the header.

Usage:
  gen_protein_db.py -n 20000 --seed 1 -o db.fa
      a database of 20000 sequences
  gen_protein_db.py -n 20000 --seed 1 --query 500 -o q500.fa
      a query of exactly 500 residues: a lightly mutated piece of a family
      member of that same database (so some alignments are long)
"""
import argparse
import math
import random
import sys

AMINO = "ARNDCQEGHILKMFPSTWYV"
FREQ = [8.25, 5.53, 4.06, 5.45, 1.37, 3.93, 6.75, 7.07, 2.27, 5.96,
        9.66, 5.84, 2.42, 3.86, 4.70, 6.56, 5.34, 1.08, 2.92, 6.87]

LEN_MIN = 8
LEN_CAP = 35000
LOGNORMAL_MU = math.log(300.0)   # median 300
LOGNORMAL_SIGMA = 0.6            # mean = 300 * exp(0.18) ~ 359
TAIL_FRACTION = 0.005            # long tail: Pareto from 1500
TAIL_MIN = 1500
TAIL_ALPHA = 1.6
FAMILY_FRACTION = 0.33
LINE_WIDTH = 60


def random_length(rng):
    if rng.random() < TAIL_FRACTION:
        n = int(TAIL_MIN * (1.0 - rng.random()) ** (-1.0 / TAIL_ALPHA))
    else:
        n = int(round(rng.lognormvariate(LOGNORMAL_MU, LOGNORMAL_SIGMA)))
    return max(LEN_MIN, min(LEN_CAP, n))


def random_residues(rng, n):
    return "".join(rng.choices(AMINO, weights=FREQ, k=n))


def mutate(rng, seq, subst, indel):
    """A copy of seq with substitutions (rate subst) and insertions and
    deletions (rate indel each, lengths 1-5 with a geometric bias)."""
    out = []
    i = 0
    n = len(seq)
    while i < n:
        r = rng.random()
        if r < indel:  # deletion
            i += 1 + min(4, int(rng.expovariate(0.9)))
            continue
        if r < 2 * indel:  # insertion before this residue
            out.append(random_residues(rng, 1 + min(4, int(rng.expovariate(0.9)))))
        if rng.random() < subst:
            out.append(rng.choices(AMINO, weights=FREQ, k=1)[0])
        else:
            out.append(seq[i])
        i += 1
    s = "".join(out)
    if len(s) < LEN_MIN:
        s += random_residues(rng, LEN_MIN - len(s))
    return s[:LEN_CAP]


def generate(n, seed):
    """Yields (name, family, sequence) for n sequences."""
    rng = random.Random(seed)
    seqs = []      # sequences so far (parents of later copies)
    families = []
    next_family = 0
    for k in range(n):
        if seqs and rng.random() < FAMILY_FRACTION:
            parent = rng.randrange(len(seqs))
            seq = mutate(rng, seqs[parent], rng.uniform(0.05, 0.40),
                         rng.uniform(0.005, 0.04))
            fam = families[parent]
        else:
            seq = random_residues(rng, random_length(rng))
            fam = next_family
            next_family += 1
        seqs.append(seq)
        families.append(fam)
        yield "syn%07d" % (k + 1), fam, seq


def write_fasta(out, name, header_extra, seq):
    out.write(">%s %s\n" % (name, header_extra))
    for i in range(0, len(seq), LINE_WIDTH):
        out.write(seq[i:i + LINE_WIDTH])
        out.write("\n")


def make_query(n, seed, qlen):
    """A query of exactly qlen residues from a family of the database made
    by (n, seed): a piece of the longest member of the largest family whose
    members are long enough (or of the longest sequence), lightly mutated,
    padded with random residues when no sequence is that long."""
    members = {}
    longest = None
    for name, fam, seq in generate(n, seed):
        members.setdefault(fam, []).append((name, seq))
        if longest is None or len(seq) > len(longest[1]):
            longest = (name, seq, fam)
    best = None
    for fam, ms in members.items():
        if len(ms) < 2:
            continue
        name, seq = max(ms, key=lambda m: len(m[1]))
        if len(seq) >= qlen and (best is None or len(ms) > best[0]):
            best = (len(ms), name, seq, fam)
    if best is None:
        _, name, seq, fam = (1,) + longest
    else:
        _, name, seq, fam = best
    rng = random.Random(seed * 1000003 + qlen)
    start = rng.randrange(max(1, len(seq) - qlen + 1))
    piece = mutate(rng, seq[start:start + qlen], 0.05, 0.005)
    if len(piece) < qlen:
        piece += random_residues(rng, qlen - len(piece))
    piece = piece[:qlen]
    return "query%d" % qlen, "from=%s fam=%d start=%d len=%d" % (name, fam, start, qlen), piece


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--sequences", type=int, required=True,
                    help="number of database sequences")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--query", type=int, metavar="LEN",
                    help="write a query of LEN residues taken from a family of "
                         "the database (same -n and --seed) instead of the database")
    ap.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    args = ap.parse_args(argv)
    if args.sequences < 1:
        ap.error("-n must be at least 1")
    if args.query is not None and args.query < 1:
        ap.error("--query must be at least 1")
    out = sys.stdout if args.output == "-" else open(args.output, "w")
    try:
        if args.query is not None:
            name, extra, seq = make_query(args.sequences, args.seed, args.query)
            write_fasta(out, name, extra, seq)
        else:
            for name, fam, seq in generate(args.sequences, args.seed):
                write_fasta(out, name, "fam=%d len=%d" % (fam, len(seq)), seq)
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
