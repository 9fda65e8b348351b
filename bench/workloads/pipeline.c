/*
 * pipeline — a deduplicating compressor built as a pipeline, after PARSEC's
 * dedup, the program on which "Is the heap manager important to many
 * cores?" ([HeapStudy] in docs/sources.md) finds the largest differences
 * between allocators.
 *
 * Models: five stages connected by bounded queues.
 *   fragment (1 thread)  fills large buffers (1 MiB) with a synthetic stream
 *                        that repeats earlier content, one buffer per item;
 *   refine (T threads)   cuts each buffer into content-defined chunks
 *                        (gear rolling hash, 4 KiB on average): each chunk a
 *                        reference-counted view into the buffer;
 *   dedup (T threads)    hashes each chunk and looks it up in a shared table
 *                        (entries malloc'ed under striped locks); a chunk seen
 *                        before drops its reference and goes to the writer;
 *   compress (T threads) compresses each new chunk with zlib, which mallocs
 *                        and frees its deflate state (about 4 x 64 KiB) on
 *                        every call, into a buffer shrunk by realloc;
 *   reorder/write (1)    puts chunks back in stream order (a heap grown by
 *                        realloc) and writes them (hashes them), freeing
 *                        the compressed buffers.
 * A buffer is freed by whichever thread drops its last chunk reference;
 * every stage frees what the previous one allocated.
 *
 * Stresses: frees at every stage boundary (remote frees everywhere), large
 * buffers and their reuse, the zlib state churn of medium-sized blocks,
 * reference counting across threads, many threads (3T + 2) on few cores.
 *
 * Parameters: threads (per middle stage), mb (input size, MiB), dup
 * (percent of repeated blocks), level (zlib level), seed.
 *
 * Checksum: the writer's hash of the chunk contents' hashes and lengths in
 * stream order, plus the number of distinct chunks and their total
 * compressed size (each distinct chunk is compressed exactly once, and
 * zlib's output is deterministic).  The compressor re-hashes each chunk's
 * bytes before compressing them, the writer inflates one compressed chunk in
 * eight and checks it against the chunk's hash, and the refcounts must free
 * every buffer.
 */
#include <stdatomic.h>
#include <zlib.h>

#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "threads per middle stage (refine, dedup, compress)" },
    { "mb", 32, "input size (MiB)" },
    { "dup", 50, "percent of blocks that repeat earlier content" },
    { "level", 1, "zlib compression level" },
    { "seed", 31, "random seed" },
};

#define BUF_SIZE (1u << 20)
#define CHUNK_MIN 512
#define CHUNK_MAX (16u << 10)
#define CHUNK_MASK ((1u << 12) - 1)
#define BLOCK_MAX (20u << 10)      /* synthetic input blocks: 4..20 KiB */
#define STRIPES 256
#define TABLE_BITS 16

typedef struct {
    atomic_int refs;          /* chunks still pointing in, + 1 while being cut */
    uint32_t len;
    uint64_t seq;
    unsigned char data[];
} buffer_t;

typedef struct chunk {
    buffer_t *buf;            /* NULL once the raw bytes are no longer needed */
    uint32_t off, len;
    uint64_t frag, idx;       /* stream order */
    bool last;                /* last chunk of its buffer */
    bool unique;
    uint64_t hash;
    unsigned char *z;         /* compressed bytes (unique chunks) */
    uint32_t zlen;
} chunk_t;

typedef struct entry {
    uint64_t hash;
    uint32_t len;
    struct entry *next;
} entry_t;

static bq_t q_refine, q_dedup, q_compress, q_write;
static entry_t *g_table[1u << TABLE_BITS];
static pthread_mutex_t g_stripe[STRIPES];
static uint64_t g_gear[256];
static int g_level;
static atomic_ullong g_buffers_freed;

static void buffer_release(buffer_t *b)
{
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) {
        free(b);
        atomic_fetch_add_explicit(&g_buffers_freed, 1, memory_order_relaxed);
    }
}

static uint64_t content_hash(const unsigned char *p, size_t n)
{
    uint64_t h = 0x243f6a8885a308d3ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = mix64(h ^ w);
    }
    for (; i < n; i++)
        h = mix64(h ^ p[i]);
    return h;
}

/* ---- the synthetic input: text-like blocks, some repeating earlier ones ---- */

typedef struct {
    rng_t r;
    int dup;
    uint64_t blocks;          /* blocks made so far */
    unsigned char block[BLOCK_MAX];
    uint32_t len, pos;        /* current block and read position in it */
    char words[512][12];
} source_t;

static void source_init(source_t *s, uint64_t seed, int dup)
{
    s->r = rng_make(seed, 77);
    s->dup = dup;
    s->blocks = 0;
    s->len = s->pos = 0;
    for (int w = 0; w < 512; w++) {
        int n = 2 + (int)rng_range(&s->r, 0, 9);
        for (int c = 0; c < n; c++)
            s->words[w][c] = (char)('a' + rng_range(&s->r, 0, 26));
        s->words[w][n] = 0;
    }
}

static void source_block(source_t *s)
{
    uint64_t id = s->blocks;
    if (s->blocks > 0 && rng_range(&s->r, 0, 100) < (uint64_t)s->dup) {
        uint64_t back = 1 + rng_range(&s->r, 0, s->blocks < 4096 ? s->blocks : 4096);
        id = s->blocks - back;
        while (id > 0 && mix64(id) % 100 < (uint64_t)s->dup)
            id--;             /* the original content of a repeated block */
    }
    s->blocks++;
    rng_t b = rng_make(mix64(id), 5);
    uint32_t len = 4096 + (uint32_t)rng_range(&b, 0, BLOCK_MAX - 4096), n = 0;
    while (n < len) {
        const char *w = s->words[rng_next(&b) % 512];
        while (*w && n < len)
            s->block[n++] = (unsigned char)*w++;
        if (n < len)
            s->block[n++] = rng_range(&b, 0, 8) ? ' ' : '\n';
    }
    s->len = len;
    s->pos = 0;
}

static void source_read(source_t *s, unsigned char *dst, uint32_t n)
{
    while (n > 0) {
        if (s->pos == s->len)
            source_block(s);
        uint32_t k = s->len - s->pos < n ? s->len - s->pos : n;
        memcpy(dst, s->block + s->pos, k);
        s->pos += k;
        dst += k;
        n -= k;
    }
}

/* ---- stages ---- */

static void *refine_stage(void *arg)
{
    (void)arg;
    buffer_t *b;
    while ((b = bq_pop(&q_refine)) != NULL) {
        uint32_t start = 0;
        uint64_t idx = 0, h = 0;
        for (uint32_t i = 0; i < b->len; i++) {
            h = (h << 1) + g_gear[b->data[i]];
            uint32_t n = i + 1 - start;
            bool cut = (n >= CHUNK_MIN && (h & CHUNK_MASK) == 0) || n == CHUNK_MAX || i + 1 == b->len;
            if (!cut)
                continue;
            chunk_t *c = xcalloc(1, sizeof(chunk_t));
            c->buf = b;
            c->off = start;
            c->len = n;
            c->frag = b->seq;
            c->idx = idx++;
            c->last = i + 1 == b->len;
            atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
            bq_push(&q_dedup, c);
            start = i + 1;
            h = 0;
        }
        buffer_release(b);    /* the cutter's own reference */
    }
    return NULL;
}

static void *dedup_stage(void *arg)
{
    (void)arg;
    chunk_t *c;
    while ((c = bq_pop(&q_dedup)) != NULL) {
        c->hash = content_hash(c->buf->data + c->off, c->len);
        uint32_t slot = (uint32_t)(c->hash >> (64 - TABLE_BITS));
        pthread_mutex_t *lock = &g_stripe[slot % STRIPES];
        pthread_mutex_lock(lock);
        entry_t *e = g_table[slot];
        while (e != NULL && !(e->hash == c->hash && e->len == c->len))
            e = e->next;
        if (e == NULL) {
            e = xmalloc(sizeof(entry_t));
            e->hash = c->hash;
            e->len = c->len;
            e->next = g_table[slot];
            g_table[slot] = e;
            c->unique = true;
        }
        pthread_mutex_unlock(lock);
        if (c->unique) {
            bq_push(&q_compress, c);
        } else {
            buffer_release(c->buf);
            c->buf = NULL;
            bq_push(&q_write, c);
        }
    }
    return NULL;
}

static void *compress_stage(void *arg)
{
    (void)arg;
    chunk_t *c;
    while ((c = bq_pop(&q_compress)) != NULL) {
        /* the bytes must still be those dedup hashed: the buffer is shared
         * by many chunks and threads, and nothing may have written to it */
        if (content_hash(c->buf->data + c->off, c->len) != c->hash)
            bench_die(BENCH_EXIT_CORRUPT, "chunk %" PRIu64 ".%" PRIu64 " changed before compression",
                      c->frag, c->idx);
        z_stream zs;
        memset(&zs, 0, sizeof zs);   /* zalloc NULL: zlib mallocs its state */
        if (deflateInit(&zs, g_level) != Z_OK)
            bench_die(BENCH_EXIT_CORRUPT, "deflateInit failed");
        uLong bound = deflateBound(&zs, c->len);
        unsigned char *out = xmalloc(bound);
        zs.next_in = c->buf->data + c->off;
        zs.avail_in = c->len;
        zs.next_out = out;
        zs.avail_out = (uInt)bound;
        if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
            bench_die(BENCH_EXIT_CORRUPT, "deflate did not finish");
        c->zlen = (uint32_t)zs.total_out;
        deflateEnd(&zs);
        c->z = xrealloc(out, c->zlen);
        buffer_release(c->buf);
        c->buf = NULL;
        bq_push(&q_write, c);
    }
    return NULL;
}

typedef struct {
    uint64_t hash, chunks, unique, zbytes, in_bytes, checked;
} writer_t;

static inline bool chunk_before(const chunk_t *a, const chunk_t *b)
{
    return a->frag != b->frag ? a->frag < b->frag : a->idx < b->idx;
}

static void *write_stage(void *arg)
{
    writer_t *w = arg;
    chunk_t **heap = NULL;    /* min-heap by (frag, idx), grown by realloc */
    size_t n = 0, cap = 0;
    uint64_t frag = 0, idx = 0;
    unsigned char *plain = xmalloc(CHUNK_MAX);
    chunk_t *c;
    while ((c = bq_pop(&q_write)) != NULL) {
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            heap = xrealloc(heap, cap * sizeof(chunk_t *));
        }
        size_t i = n++;
        for (; i > 0 && chunk_before(c, heap[(i - 1) / 2]); i = (i - 1) / 2)
            heap[i] = heap[(i - 1) / 2];
        heap[i] = c;
        while (n > 0 && heap[0]->frag == frag && heap[0]->idx == idx) {
            c = heap[0];
            chunk_t *last = heap[--n];
            size_t k = 0;
            for (;;) {
                size_t m = 2 * k + 1;
                if (m >= n)
                    break;
                if (m + 1 < n && chunk_before(heap[m + 1], heap[m]))
                    m++;
                if (!chunk_before(heap[m], last))
                    break;
                heap[k] = heap[m];
                k = m;
            }
            if (n > 0)
                heap[k] = last;
            /* write it */
            w->hash = mix64(w->hash ^ c->hash) + c->len;
            w->chunks++;
            w->in_bytes += c->len;
            if (c->unique) {
                w->unique++;
                w->zbytes += c->zlen;
                if (w->unique % 8 == 1) {   /* verify one in eight end to end */
                    uLongf plen = CHUNK_MAX;
                    if (uncompress(plain, &plen, c->z, c->zlen) != Z_OK || plen != c->len ||
                        content_hash(plain, plen) != c->hash)
                        bench_die(BENCH_EXIT_CORRUPT, "chunk %" PRIu64 ".%" PRIu64
                                  " does not decompress to what was compressed", c->frag, c->idx);
                    w->checked++;
                }
                free(c->z);
            }
            if (c->last) {
                frag++;
                idx = 0;
            } else {
                idx++;
            }
            free(c);
        }
    }
    if (n != 0)
        bench_die(BENCH_EXIT_CORRUPT, "%zu chunks never written", n);
    free(heap);
    free(plain);
    return NULL;
}

int main(int argc, char **argv)
{
    bench_name = "pipeline";
    PARAMS_PARSE(argc, argv, "dedup-like pipeline: fragment, refine, dedup, compress, reorder/write", ps);
    long long threads = PARAM(ps, "threads", 1, 2048);
    uint64_t mb = (uint64_t)PARAM(ps, "mb", 1, 1 << 20);
    int dup = (int)PARAM(ps, "dup", 0, 95);
    g_level = (int)PARAM(ps, "level", 0, 9);
    uint64_t seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 62);

    rng_t r = rng_make(seed, 1);
    for (int i = 0; i < 256; i++)
        g_gear[i] = rng_next(&r);
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&g_stripe[i], NULL);
    size_t depth = 4 * (size_t)threads + 16;
    bq_init(&q_refine, 2 + (size_t)threads);
    bq_init(&q_dedup, 64 * depth);
    bq_init(&q_compress, 64 * depth);
    bq_init(&q_write, 64 * depth);
    source_t *src = xmalloc(sizeof(source_t));
    source_init(src, seed, dup);

    pthread_t *ts = xcalloc(3 * (size_t)threads, sizeof(pthread_t)), writer;
    writer_t w = { 0 };
    double t0 = now_seconds();
    bench_start(&writer, write_stage, &w);
    for (long long t = 0; t < threads; t++) {
        bench_start(&ts[3 * t], refine_stage, NULL);
        bench_start(&ts[3 * t + 1], dedup_stage, NULL);
        bench_start(&ts[3 * t + 2], compress_stage, NULL);
    }
    /* the fragment stage is the main thread */
    uint64_t total = mb << 20, nbuf = 0;
    for (uint64_t done = 0; done < total; done += BUF_SIZE) {
        uint32_t len = total - done < BUF_SIZE ? (uint32_t)(total - done) : BUF_SIZE;
        buffer_t *b = xmalloc(sizeof(buffer_t) + len);
        atomic_init(&b->refs, 1);
        b->len = len;
        b->seq = nbuf++;
        source_read(src, b->data, len);
        bq_push(&q_refine, b);
    }
    /* close each stage once the one before it has drained */
    bq_close(&q_refine);
    for (long long t = 0; t < threads; t++)
        bench_join(ts[3 * t]);
    bq_close(&q_dedup);
    for (long long t = 0; t < threads; t++)
        bench_join(ts[3 * t + 1]);
    bq_close(&q_compress);
    for (long long t = 0; t < threads; t++)
        bench_join(ts[3 * t + 2]);
    bq_close(&q_write);
    bench_join(writer);
    double secs = now_seconds() - t0;

    if (atomic_load(&g_buffers_freed) != nbuf)
        bench_die(BENCH_EXIT_CORRUPT, "%llu of %" PRIu64 " buffers freed: reference counts lost",
                  (unsigned long long)atomic_load(&g_buffers_freed), nbuf);
    if (w.in_bytes != total)
        bench_die(BENCH_EXIT_CORRUPT, "wrote %" PRIu64 " bytes of %" PRIu64, w.in_bytes, total);
    uint64_t entries = 0;
    for (size_t s = 0; s < (1u << TABLE_BITS); s++) {
        for (entry_t *e = g_table[s], *next; e != NULL; e = next) {
            next = e->next;
            entries++;
            free(e);
        }
    }
    if (entries != w.unique)
        bench_die(BENCH_EXIT_CORRUPT, "%" PRIu64 " distinct chunks but %" PRIu64 " compressed",
                  entries, w.unique);
    bq_destroy(&q_refine);
    bq_destroy(&q_dedup);
    bq_destroy(&q_compress);
    bq_destroy(&q_write);
    free(ts);
    free(src);
    uint64_t sum = w.hash ^ mix64(w.unique) ^ mix64(w.zbytes << 1);
    char extra[192];
    snprintf(extra, sizeof extra,
             "\"chunks\":%" PRIu64 ",\"unique\":%" PRIu64 ",\"compressed_bytes\":%" PRIu64
             ",\"verified\":%" PRIu64, w.chunks, w.unique, w.zbytes, w.checked);
    BENCH_REPORT(ps, threads, w.chunks, secs, sum, extra);
    return 0;
}
