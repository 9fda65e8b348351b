"""threaded.py OUT.csv REPS [NAMES...]: multi-threaded programs from Debian
(aligners, sorters, compressors, a search tool) under each allocator
preloaded, allocators alternating; the same CSV lines, allocator choice
(ALLOCS, EXTRA, MMLIB) and medians (../2026-12-07-real-programs-vm/table.py)
as that directory's survey.py, whose runner this uses.

The data is made once in SURVEY_DIR (default /tmp/survey): make bench's
synthetic 5 Mbp genome and 200,000 read pairs (bench/bwa_data.py, fixed
seeds), minimap2's alignment of them as SAM, that sorted as BAM, and
survey.py's big.json (seed 7)."""
import os, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '../../..'))
sys.path.insert(0, os.path.join(HERE, '../2026-12-07-real-programs-vm'))
sys.path.insert(0, os.path.join(ROOT, 'bench'))
import survey, bwa_data
S = survey.S


def make_data():
    survey.make_data()
    ref, r1, r2 = bwa_data.prepare(S, 5000000, 200000)
    if not os.path.exists(S + 'aln.sam'):
        subprocess.run(f'minimap2 -t2 -ax sr {ref} {r1} {r2} > {S}aln.sam.tmp 2>/dev/null && mv {S}aln.sam.tmp {S}aln.sam',
                       shell=True, check=True)
    if not os.path.exists(S + 'aln.bam.bai'):
        subprocess.run(f'samtools sort -@2 -o {S}aln.bam {S}aln.sam && samtools index {S}aln.bam',
                       shell=True, check=True)
    return ref, r1, r2


ref, r1, r2 = make_data()
CMDS = {
 'bwa': f'bwa mem -v 1 -t 2 -K 10000000 {ref} {r1} {r2} | md5sum',
 'minimap2': f'minimap2 -t2 -ax sr {ref} {r1} {r2} 2>/dev/null | md5sum',
 'samtools-sort': f'samtools sort -@2 -m 20M -O sam {S}aln.sam | md5sum',
 'samtools-view': f'samtools view -@2 -b -q 10 {S}aln.bam | md5sum',
 'bcftools': f'bcftools mpileup --threads 2 -r chr1:1-1000000 -f {ref} {S}aln.bam 2>/dev/null | bcftools call --threads 2 -mv 2>/dev/null | grep -v "^##" | md5sum',
 'pigz': f'pigz -p2 -c {S}big.json | md5sum',
 'unpigz': f'pigz -p2 -c {S}big.json | pigz -d -p2 | md5sum',
 'rg': f'rg -j2 -c "malloc|free" /usr/include | sort | md5sum',
 'xz-T2': f'xz -T2 -6 -c {S}big.txt | md5sum',
}
if __name__ == '__main__':
    survey.run(CMDS, sys.argv[1], int(sys.argv[2]), sys.argv[3:] or list(CMDS))
