/*
 * xfree — the asymmetric extreme of cross-thread freeing, as in
 * mimalloc-bench's "xmalloc-test" (after Lever & Boreham's xmalloc) and the
 * FastFlow allocator's motivation ([FastFlow] in docs/sources.md): threads
 * that only allocate and threads that only free.
 *
 * Models: P producer threads that malloc 64-byte objects and nothing else,
 * and P freeing threads that free them and nothing else; producer i hands
 * its objects, in blocks of `batch` pointers, to freer i.  With
 * threads = T there are P = max(1, T/2) pairs (so 2P threads run; threads=1
 * still runs one pair).
 *
 * Stresses: the remote-free path at full rate with no local reuse at all:
 * memory must flow back from the freeing threads' side to the allocating
 * threads, or the heap grows without bound; lock contention on whatever
 * structure carries remote frees.
 *
 * Parameters: threads, objects (in all), size (bytes), batch (pointers per
 * hand-off), depth (blocks in flight per pair), seed.
 *
 * Checksum: sum over objects of a value derived from the object id, verified
 * by the freeing thread; independent of the thread count.
 */
#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "threads in all: threads/2 allocating + threads/2 freeing (>= 1 pair)" },
    { "objects", 8000000, "objects allocated in all" },
    { "size", 64, "object size (bytes)" },
    { "batch", 512, "pointers per hand-off" },
    { "depth", 8, "hand-offs in flight per pair" },
    { "seed", 3, "random seed (object ids are offset by it)" },
};

typedef struct {
    uint64_t first_id, count;
    uint64_t sum;
    bq_t queue;
    pthread_t producer, freer;
} pair_t;

typedef struct {
    uint64_t first_id;
    size_t count;
    void *obj[];
} block_t;

static size_t g_size, g_batch;
static uint64_t g_seed;

static void *producer(void *arg)
{
    pair_t *pr = arg;
    uint64_t id = pr->first_id, end = pr->first_id + pr->count;
    while (id < end) {
        size_t n = end - id < g_batch ? (size_t)(end - id) : g_batch;
        /* the block itself comes from a fixed-size array per hand-off: it is
         * malloc'ed here and freed by the freer, like the objects */
        block_t *b = xmalloc(sizeof(block_t) + n * sizeof(void *));
        b->first_id = id;
        b->count = n;
        for (size_t i = 0; i < n; i++, id++) {
            b->obj[i] = xmalloc(g_size);
            tag_fill(b->obj[i], g_size, id + g_seed);
        }
        bq_push(&pr->queue, b);
    }
    bq_close(&pr->queue);
    return NULL;
}

static void *freer(void *arg)
{
    pair_t *pr = arg;
    uint64_t sum = 0;
    block_t *b;
    while ((b = bq_pop(&pr->queue)) != NULL) {
        for (size_t i = 0; i < b->count; i++) {
            sum += tag_verify(b->obj[i], g_size, b->first_id + i + g_seed);
            free(b->obj[i]);
        }
        free(b);
    }
    pr->sum = sum;
    return NULL;
}

int main(int argc, char **argv)
{
    bench_name = "xfree";
    PARAMS_PARSE(argc, argv, "allocate-only threads and free-only threads", ps);
    long long threads = PARAM(ps, "threads", 1, 8192);
    uint64_t objects = (uint64_t)PARAM(ps, "objects", 1, 1LL << 40);
    g_size = (size_t)PARAM(ps, "size", 1, 1 << 30);
    g_batch = (size_t)PARAM(ps, "batch", 1, 1 << 20);
    size_t depth = (size_t)PARAM(ps, "depth", 1, 1 << 20);
    g_seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 40);

    uint64_t pairs = threads >= 2 ? (uint64_t)threads / 2 : 1;
    pair_t *prs = xcalloc(pairs, sizeof(pair_t));
    uint64_t next = 0;
    for (uint64_t i = 0; i < pairs; i++) {
        prs[i].first_id = next;
        prs[i].count = objects / pairs + (i < objects % pairs);
        next += prs[i].count;
        bq_init(&prs[i].queue, depth);
    }
    double t0 = now_seconds();
    for (uint64_t i = 0; i < pairs; i++) {
        bench_start(&prs[i].freer, freer, &prs[i]);
        bench_start(&prs[i].producer, producer, &prs[i]);
    }
    uint64_t sum = 0;
    for (uint64_t i = 0; i < pairs; i++) {
        bench_join(prs[i].producer);
        bench_join(prs[i].freer);
        sum += prs[i].sum;
    }
    double secs = now_seconds() - t0;
    for (uint64_t i = 0; i < pairs; i++)
        bq_destroy(&prs[i].queue);
    free(prs);
    char extra[64];
    snprintf(extra, sizeof extra, "\"pairs\":%" PRIu64, pairs);
    BENCH_REPORT(ps, threads, objects, secs, sum, extra);
    return 0;
}
