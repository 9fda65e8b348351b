/*
 * align — the allocation pattern of BWA-MEM (Li, "Aligning sequence reads,
 * clone sequences and assembly contigs with BWA-MEM", 2013), the program the
 * Mmalloc paper accelerates ([Mmalloc] in docs/sources.md).  A small aligner
 * of its own, not a wrapper: the real `bwa mem` runs separately (run.py's
 * "bwa").
 *
 * Models: a read aligner working through batches of simulated reads.  The
 * main thread simulates a batch (read names and sequences malloc'ed one by
 * one, as bwa's reader does); then, as bwa's kt_for does, `threads` fresh
 * worker threads are created for the batch and take its reads one by one.
 * Per read a worker:
 *   - collects k-mer seeds (every third offset) on both strands into a
 *     vector grown by doubling realloc (bwa's kvec);
 *   - sorts them and groups them into chains, each chain's seed list again a
 *     vector grown by doubling realloc;
 *   - extends the best two chains with a banded affine-gap Smith–Waterman,
 *     allocating per extension a query profile and the DP rows and freeing
 *     them at once (bwa's ksw_extend);
 *   - builds the SAM line in a growing string (bwa's kstring).
 * After the workers are joined, the batch goes to an output thread that
 * "writes" every SAM line (hashes it), and frees the lines, the reads and
 * the batch: memory allocated by the workers and by the reader, freed by
 * another thread, while the main thread is already simulating the next
 * batch (bwa's two-step kt_pipeline).
 *
 * Stresses: realloc of small growing vectors, short-lived medium buffers
 * (profiles, DP rows), threads created and destroyed per batch, and
 * cross-thread frees of strings in bulk.
 *
 * Parameters: threads, reads (in all), batch (reads per batch), length (read
 * length), reflen (reference length, bases), seed.
 *
 * Checksum: a hash of the SAM text in read order, computed by the output
 * thread, which also checks each line's read name and length before it frees
 * it.  The alignment of a read does not depend on the thread that did it, so
 * the checksum depends on the arguments only, not on the thread count.
 */
#include <stdatomic.h>

#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "worker threads created per batch" },
    { "reads", 100000, "reads in all" },
    { "batch", 10000, "reads per batch" },
    { "length", 150, "read length (bases)" },
    { "reflen", 500000, "reference length (bases)" },
    { "seed", 29, "random seed" },
};

#define K 14                  /* seed length */
#define HASH_BITS 18
#define SEED_STEP 3            /* seed every third query offset */
#define MAX_OCC 64            /* k-mers seen more often are skipped (bwa -c) */
#define BAND 12               /* half-width of the extension band */
#define MATCH 1
#define MISMATCH 4
#define GAP_OPEN 6
#define GAP_EXT 1

typedef struct {
    char *name;               /* "r<id>", malloc'ed by the reader */
    char *seq;                /* malloc'ed by the reader */
    uint32_t origin;          /* simulated position, for the accuracy count */
    char *sam;                /* SAM line, built by a worker */
    size_t sam_len;
    bool correct;
} read_t;

typedef struct {
    uint64_t first;           /* id of reads[0] */
    size_t n;
    read_t *reads;
    atomic_size_t next;       /* next read to align */
} batch_t;

typedef struct {
    uint32_t q, r;            /* query offset, reference position */
    uint8_t strand;
} seed_t;

typedef struct {
    uint8_t strand;
    int64_t diag;             /* reference position of query offset 0 */
    uint32_t *q;              /* seed query offsets, grown by doubling */
    size_t n, cap;
} chain_t;

static char *g_ref;
static uint32_t g_reflen, g_len;
static uint32_t *g_bucket;    /* 2^HASH_BITS + 1 offsets into g_pos */
static uint32_t *g_pos;
static uint64_t g_seed;

static inline int base_code(char c)
{
    switch (c) {
    case 'A': return 0;
    case 'C': return 1;
    case 'G': return 2;
    case 'T': return 3;
    default: return 4;
    }
}

static inline uint32_t kmer_hash(const char *s)
{
    uint64_t code = 0;
    for (int i = 0; i < K; i++)
        code = code << 2 | (uint64_t)(base_code(s[i]) & 3);
    return (uint32_t)(mix64(code) >> (64 - HASH_BITS));
}

/* Random bases with segments copied elsewhere (1% mutated): repeats. */
static void reference_make(void)
{
    static const char acgt[4] = { 'A', 'C', 'G', 'T' };
    rng_t r = rng_make(g_seed, 1);
    g_ref = xmalloc(g_reflen + 1);
    for (uint32_t i = 0; i < g_reflen; i++)
        g_ref[i] = acgt[rng_next(&r) & 3];
    g_ref[g_reflen] = 0;
    for (uint32_t k = 0; k < g_reflen / 20000; k++) {
        uint32_t len = (uint32_t)rng_range(&r, 500, 5000);
        if (len + 1 >= g_reflen)
            break;
        uint32_t src = (uint32_t)rng_range(&r, 0, g_reflen - len), dst = (uint32_t)rng_range(&r, 0, g_reflen - len);
        for (uint32_t i = 0; i < len; i++)
            g_ref[dst + i] = rng_range(&r, 0, 100) == 0 ? acgt[rng_next(&r) & 3] : g_ref[src + i];
    }
    /* counting sort of every k-mer position by hash */
    size_t nb = (size_t)1 << HASH_BITS;
    g_bucket = xcalloc(nb + 1, sizeof(uint32_t));
    uint32_t nk = g_reflen - K + 1;
    for (uint32_t i = 0; i < nk; i++)
        g_bucket[kmer_hash(g_ref + i) + 1]++;
    for (size_t b = 0; b < nb; b++)
        g_bucket[b + 1] += g_bucket[b];
    uint32_t *fill = xmalloc(nb * sizeof(uint32_t));
    memcpy(fill, g_bucket, nb * sizeof(uint32_t));
    g_pos = xmalloc((size_t)nk * sizeof(uint32_t));
    for (uint32_t i = 0; i < nk; i++)
        g_pos[fill[kmer_hash(g_ref + i)]++] = i;
    free(fill);
}

static char complement(char c)
{
    switch (c) {
    case 'A': return 'T';
    case 'C': return 'G';
    case 'G': return 'C';
    default: return 'A';
    }
}

/* The reader: simulates read `id` (substitutions, sometimes one indel). */
static void read_simulate(read_t *rd, uint64_t id)
{
    static const char acgt[4] = { 'A', 'C', 'G', 'T' };
    rng_t r = rng_make(g_seed, id + 1000000);
    uint32_t span = g_len + 2;
    uint32_t pos = (uint32_t)rng_range(&r, 0, g_reflen - span);
    char *s = xmalloc(g_len + 1);
    uint32_t indel_at = rng_range(&r, 0, 10) == 0 ? (uint32_t)rng_range(&r, 10, g_len - 10) : UINT32_MAX;
    bool ins = rng_next(&r) & 1;
    for (uint32_t i = 0, j = pos; i < g_len; i++) {
        if (i == indel_at) {
            if (ins) {
                s[i] = acgt[rng_next(&r) & 3];
                continue;
            }
            j++;                 /* deletion */
        }
        char c = g_ref[j++];
        s[i] = rng_range(&r, 0, 100) < 2 ? acgt[rng_next(&r) & 3] : c;
    }
    s[g_len] = 0;
    if (rng_next(&r) & 1) {      /* reverse strand */
        for (uint32_t i = 0; i < g_len / 2; i++) {
            char a = s[i];
            s[i] = complement(s[g_len - 1 - i]);
            s[g_len - 1 - i] = complement(a);
        }
        if (g_len & 1)
            s[g_len / 2] = complement(s[g_len / 2]);
    }
    char name[32];
    int n = snprintf(name, sizeof name, "r%" PRIu64, id);
    rd->name = xmalloc((size_t)n + 1);
    memcpy(rd->name, name, (size_t)n + 1);
    rd->seq = s;
    rd->origin = pos;
    rd->sam = NULL;
    rd->sam_len = 0;
    rd->correct = false;
}

/* ---- kstring: a string grown by doubling realloc ---- */

typedef struct {
    char *s;
    size_t l, m;
} kstr_t;

static void ks_put(kstr_t *k, const char *p, size_t n)
{
    if (k->l + n + 1 > k->m) {
        size_t m = k->m ? k->m : 16;
        while (m < k->l + n + 1)
            m *= 2;
        k->s = xrealloc(k->s, m);
        k->m = m;
    }
    memcpy(k->s + k->l, p, n);
    k->l += n;
    k->s[k->l] = 0;
}

static void ks_printf(kstr_t *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ks_printf(kstr_t *k, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ks_put(k, buf, (size_t)n);
}

/* ---- alignment ---- */

static int seed_cmp(const void *pa, const void *pb)
{
    const seed_t *a = pa, *b = pb;
    int64_t da = (int64_t)a->r - a->q, db = (int64_t)b->r - b->q;
    if (a->strand != b->strand)
        return a->strand - b->strand;
    if (da != db)
        return da < db ? -1 : 1;
    return (a->q > b->q) - (a->q < b->q);
}

/*
 * Banded local alignment of q (length n) against the reference around
 * `diag`; allocates the query profile and the DP rows per call, as
 * ksw_extend does.  Returns the best score.
 */
static int extend(const char *q, uint32_t n, int64_t diag)
{
    int64_t lo = diag - BAND;
    uint32_t w = n + 2 * BAND;
    if (lo < 0)
        lo = 0;
    if (lo + w > g_reflen)
        w = (uint32_t)(g_reflen - lo);
    const char *t = g_ref + lo;
    int8_t *qp = xmalloc((size_t)n * 5);      /* query profile: score of q[i] vs base b */
    for (int b = 0; b < 5; b++)
        for (uint32_t i = 0; i < n; i++)
            qp[b * n + i] = (int8_t)(base_code(q[i]) == b && b < 4 ? MATCH : -MISMATCH);
    int32_t *h = xcalloc((size_t)w + 1, sizeof(int32_t));
    int32_t *e = xcalloc((size_t)w + 1, sizeof(int32_t));
    int best = 0;
    int64_t off = diag - lo;                   /* window column of query offset 0 */
    for (uint32_t i = 0; i < n; i++) {
        int64_t jlo = off + i - BAND, jhi = off + i + BAND;
        if (jlo < 0)
            jlo = 0;
        if (jhi > (int64_t)w - 1)
            jhi = (int64_t)w - 1;
        int32_t hdiag = jlo > 0 ? h[jlo] : 0, f = 0, hleft = 0;
        for (int64_t j = jlo; j <= jhi; j++) {
            int32_t hup = h[j + 1];
            int32_t m = hdiag + qp[base_code(t[j]) * n + i];
            int32_t eu = e[j + 1] - GAP_EXT, ou = hup - GAP_OPEN - GAP_EXT;
            e[j + 1] = eu > ou ? eu : ou;
            int32_t fl = f - GAP_EXT, ol = hleft - GAP_OPEN - GAP_EXT;
            f = fl > ol ? fl : ol;
            int32_t v = m;
            if (e[j + 1] > v) v = e[j + 1];
            if (f > v) v = f;
            if (v < 0) v = 0;
            hdiag = hup;
            h[j + 1] = v;
            hleft = v;
            if (v > best)
                best = v;
        }
    }
    free(h);
    free(e);
    free(qp);
    return best;
}

static void align_read(read_t *rd)
{
    uint32_t n = g_len;
    char *rc = xmalloc(n + 1);                 /* reverse complement */
    for (uint32_t i = 0; i < n; i++)
        rc[i] = complement(rd->seq[n - 1 - i]);
    rc[n] = 0;
    const char *strands[2] = { rd->seq, rc };

    seed_t *seeds = NULL;                      /* kvec: grown by doubling realloc */
    size_t ns = 0, ms = 0;
    for (uint8_t s = 0; s < 2; s++) {
        const char *q = strands[s];
        for (uint32_t i = 0; i + K <= n; i += SEED_STEP) {
            uint32_t h = kmer_hash(q + i), b0 = g_bucket[h], b1 = g_bucket[h + 1];
            if (b1 - b0 > MAX_OCC)
                continue;
            for (uint32_t b = b0; b < b1; b++) {
                if (memcmp(g_ref + g_pos[b], q + i, K) != 0)
                    continue;
                if (ns == ms) {
                    ms = ms ? 2 * ms : 8;
                    seeds = xrealloc(seeds, ms * sizeof(seed_t));
                }
                seeds[ns++] = (seed_t){ i, g_pos[b], s };
            }
        }
    }
    if (ns > 1)
        qsort(seeds, ns, sizeof(seed_t), seed_cmp);

    chain_t *chains = NULL;                    /* kvec of chains, each with a kvec */
    size_t nc = 0, mc = 0;
    for (size_t k = 0; k < ns; k++) {
        int64_t d = (int64_t)seeds[k].r - seeds[k].q;
        chain_t *c = nc ? &chains[nc - 1] : NULL;
        if (c == NULL || c->strand != seeds[k].strand || d - c->diag > 8) {
            if (nc == mc) {
                mc = mc ? 2 * mc : 4;
                chains = xrealloc(chains, mc * sizeof(chain_t));
            }
            c = &chains[nc++];
            *c = (chain_t){ seeds[k].strand, d, NULL, 0, 0 };
        }
        if (c->n == c->cap) {
            c->cap = c->cap ? 2 * c->cap : 4;
            c->q = xrealloc(c->q, c->cap * sizeof(uint32_t));
        }
        c->q[c->n++] = seeds[k].q;
    }
    free(seeds);

    /* the two chains with most seeds (ties: first in sorted order) */
    size_t top[2] = { SIZE_MAX, SIZE_MAX };
    for (size_t c = 0; c < nc; c++) {
        if (top[0] == SIZE_MAX || chains[c].n > chains[top[0]].n) {
            top[1] = top[0];
            top[0] = c;
        } else if (top[1] == SIZE_MAX || chains[c].n > chains[top[1]].n) {
            top[1] = c;
        }
    }
    int score[2] = { 0, 0 };
    for (int t = 0; t < 2; t++)
        if (top[t] != SIZE_MAX)
            score[t] = extend(strands[chains[top[t]].strand], n, chains[top[t]].diag);
    int bi = score[1] > score[0] ? 1 : 0;
    int best = score[bi], sub = score[1 - bi];
    int64_t pos = top[bi] != SIZE_MAX ? chains[top[bi]].diag : -1;
    uint8_t strand = top[bi] != SIZE_MAX ? chains[top[bi]].strand : 0;
    for (size_t c = 0; c < nc; c++)
        free(chains[c].q);
    free(chains);

    kstr_t k = { NULL, 0, 0 };
    int flag = pos < 0 ? 4 : strand ? 16 : 0;
    int mapq = pos < 0 ? 0 : (best - sub) * 6 > 60 ? 60 : (best - sub) * 6;
    ks_printf(&k, "%s\t%d\t%s\t%" PRId64 "\t%d\t", rd->name, flag, pos < 0 ? "*" : "chr1",
              pos < 0 ? 0 : pos + 1, mapq);
    if (pos < 0)
        ks_put(&k, "*", 1);
    else
        ks_printf(&k, "%uM", n);
    ks_put(&k, "\t*\t0\t0\t", 7);
    const char *out = strands[strand];
    for (uint32_t i = 0; i < n; i += 32)       /* sequence in pieces, like bwa's kputsn */
        ks_put(&k, out + i, n - i < 32 ? n - i : 32);
    ks_put(&k, "\t", 1);
    for (uint32_t i = 0; i < n; i++)
        ks_put(&k, (i % 7) ? "I" : "F", 1);
    ks_printf(&k, "\tAS:i:%d\tXS:i:%d\n", best, sub);
    rd->sam = k.s;
    rd->sam_len = k.l;
    rd->correct = pos >= 0 && (pos > rd->origin ? pos - rd->origin : rd->origin - pos) <= 5;
    free(rc);
}

static void *align_worker(void *arg)
{
    batch_t *b = arg;
    size_t i;
    while ((i = atomic_fetch_add_explicit(&b->next, 1, memory_order_relaxed)) < b->n)
        align_read(&b->reads[i]);
    return NULL;
}

typedef struct {
    bq_t queue;
    uint64_t hash, correct, lines;
} output_t;

/* The output step: writes (hashes) and frees what the others allocated. */
static void *output_thread(void *arg)
{
    output_t *o = arg;
    batch_t *b;
    while ((b = bq_pop(&o->queue)) != NULL) {
        for (size_t i = 0; i < b->n; i++) {
            read_t *rd = &b->reads[i];
            char want[32];
            int wn = snprintf(want, sizeof want, "r%" PRIu64 "\t", b->first + i);
            if (rd->sam == NULL || strlen(rd->sam) != rd->sam_len ||
                strncmp(rd->sam, want, (size_t)wn) != 0 || rd->sam[rd->sam_len - 1] != '\n')
                bench_die(BENCH_EXIT_CORRUPT, "SAM line of read %" PRIu64 " corrupted before free",
                          b->first + i);
            uint64_t h = o->hash;
            for (size_t k = 0; k < rd->sam_len; k++)
                h = (h ^ (unsigned char)rd->sam[k]) * 0x100000001b3ull;
            o->hash = h;
            o->correct += rd->correct;
            o->lines++;
            free(rd->sam);
            free(rd->seq);
            free(rd->name);
        }
        free(b->reads);
        free(b);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    bench_name = "align";
    PARAMS_PARSE(argc, argv, "BWA-MEM's allocation pattern: batches, fresh workers, realloc-grown vectors", ps);
    long long threads = PARAM(ps, "threads", 1, 4096);
    uint64_t reads = (uint64_t)PARAM(ps, "reads", 1, 1LL << 36);
    uint64_t batch = (uint64_t)PARAM(ps, "batch", 1, 1LL << 24);
    g_len = (uint32_t)PARAM(ps, "length", 32, 4096);
    g_reflen = (uint32_t)PARAM(ps, "reflen", 100000, 1LL << 31);
    g_seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 62);
    if (g_reflen < 4 * g_len)
        bench_die(BENCH_EXIT_USAGE, "reflen must be at least 4 read lengths");

    reference_make();         /* the index, like bwa's, is built before the clock starts */
    output_t out = { .hash = 0xcbf29ce484222325ull };
    bq_init(&out.queue, 2);
    pthread_t writer, *ws = xcalloc((size_t)threads, sizeof(pthread_t));
    double t0 = now_seconds();
    bench_start(&writer, output_thread, &out);
    for (uint64_t first = 0; first < reads; first += batch) {
        batch_t *b = xmalloc(sizeof(batch_t));
        b->first = first;
        b->n = (size_t)(reads - first < batch ? reads - first : batch);
        b->reads = xmalloc(b->n * sizeof(read_t));
        atomic_init(&b->next, 0);
        for (size_t i = 0; i < b->n; i++)
            read_simulate(&b->reads[i], first + i);
        for (long long t = 0; t < threads; t++)
            bench_start(&ws[t], align_worker, b);
        for (long long t = 0; t < threads; t++)
            bench_join(ws[t]);
        bq_push(&out.queue, b);
    }
    bq_close(&out.queue);
    bench_join(writer);
    double secs = now_seconds() - t0;
    if (out.lines != reads)
        bench_die(BENCH_EXIT_CORRUPT, "wrote %" PRIu64 " lines for %" PRIu64 " reads", out.lines, reads);
    bq_destroy(&out.queue);
    free(ws);
    free(g_ref);
    free(g_bucket);
    free(g_pos);
    char extra[64];
    snprintf(extra, sizeof extra, "\"placed_correctly\":%.4f", (double)out.correct / (double)reads);
    BENCH_REPORT(ps, threads, reads, secs, out.hash, extra);
    return 0;
}
