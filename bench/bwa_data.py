"""Input data for the real-program benchmark: `bwa mem` on a synthetic genome.

Owns the reference genome generator (random bases with a fixed seed, plus
repeats: tandem copies and interspersed copies with 1% mutations, so that
some reads map to several places as in real genomes), the simulated reads
(dwgsim, fixed seed via -z), the bwa index, and the cache of all three in
bench/data/<genome>-<pairs>/ (gitignored).  Everything is deterministic: the
same sizes give byte-identical files on every machine.

Also owns the checksum of a bwa run: a hash of the SAM body (the header
holds the command line, which names the thread count), which with `-K` (a
fixed batch size) is identical for every thread count and allocator.
"""

import hashlib
import os
import random
import shutil
import subprocess

SEED = 20240601
DWGSIM_SEED = 11
READ_LEN = 100


def tools_missing():
    return [t for t in ("bwa", "dwgsim") if shutil.which(t) is None]


def make_genome(path, length, seed=SEED):
    """Writes a FASTA of `length` bases in two chromosomes, with repeats."""
    rng = random.Random(seed)
    table = bytes.maketrans(bytes(range(256)), b"ACGT" * 64)
    seq = bytearray(rng.randbytes(length).translate(table))
    # interspersed repeats: ~8% of the genome copied elsewhere, 1% mutated
    copied = 0
    while copied < length * 0.08:
        n = rng.randint(300, 6000)
        src, dst = rng.randrange(length - n), rng.randrange(length - n)
        piece = bytearray(seq[src:src + n])
        for _ in range(n // 100):
            piece[rng.randrange(n)] = b"ACGT"[rng.randrange(4)]
        seq[dst:dst + n] = piece
        copied += n
    # tandem repeats: short units repeated in place
    for _ in range(max(1, length // 50000)):
        unit = bytes(b"ACGT"[rng.randrange(4)] for _ in range(rng.randint(2, 60)))
        times = rng.randint(5, 40)
        pos = rng.randrange(length - len(unit) * times)
        seq[pos:pos + len(unit) * times] = unit * times
    half = length // 2
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for name, part in (("chr1", seq[:half]), ("chr2", seq[half:])):
            f.write(">%s\n" % name)
            text = part.decode()
            for i in range(0, len(text), 60):
                f.write(text[i:i + 60])
                f.write("\n")
    os.replace(tmp, path)


def prepare(data_dir, genome_bp, pairs, log=print):
    """Makes (or reuses) genome, reads and index. Returns (ref, read1, read2)."""
    d = os.path.join(data_dir, "bwa-%d-%d" % (genome_bp, pairs))
    os.makedirs(d, exist_ok=True)
    ref = os.path.join(d, "ref.fa")
    prefix = os.path.join(d, "reads")
    r1, r2 = prefix + ".bwa.read1.fastq.gz", prefix + ".bwa.read2.fastq.gz"
    done = os.path.join(d, "ready")
    if os.path.exists(done):
        return ref, r1, r2
    log("bwa: generating a %.1f Mbp genome and %d read pairs in %s (cached)"
        % (genome_bp / 1e6, pairs, d))
    make_genome(ref, genome_bp)
    cmd = ["dwgsim", "-z", str(DWGSIM_SEED), "-N", str(pairs), "-1", str(READ_LEN),
           "-2", str(READ_LEN), "-e", "0.005", "-E", "0.005", "-r", "0.001", "-y", "0",
           ref, prefix]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(["bwa", "index", ref], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(done, "w") as f:
        f.write("genome_bp=%d pairs=%d seed=%d dwgsim_seed=%d\n"
                % (genome_bp, pairs, SEED, DWGSIM_SEED))
    return ref, r1, r2


def command(threads, ref, r1, r2):
    # -K: a fixed number of bases per batch makes the output independent of -t
    return ["bwa", "mem", "-v", "1", "-t", str(threads), "-K", "10000000", ref, r1, r2]


def sam_summary(path):
    """(checksum, records, mapped) of a SAM file's body."""
    h = hashlib.sha256()
    records = mapped = 0
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(b"@"):
                continue
            h.update(line)
            records += 1
            fields = line.split(b"\t", 3)
            if len(fields) > 2 and not int(fields[1]) & 4:
                mapped += 1
    return h.hexdigest()[:16], records, mapped
