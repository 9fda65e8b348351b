#!/bin/sh
# prints JSON with seconds for ab.py
s=$(date +%s.%N)
bwa mem -v 1 -t 2 -K 10000000 ref.fa reads.bwa.read1.fastq.gz reads.bwa.read2.fastq.gz > /dev/null 2>&1
e=$(date +%s.%N)
awk -v a=$s -v b=$e 'BEGIN{printf "{\"seconds\": %.4f}\n", b-a}'
