/*
 * recycle — Streamflow's "Recycle" benchmark (Schneider, Antonopoulos,
 * Nikolopoulos, "Scalable Locality-Conscious Multithreaded Memory
 * Allocation", ISMM 2006; [Streamflow] in docs/sources.md).
 *
 * Models: threads that allocate and free small objects at a high rate with no
 * sharing at all.  Each thread mallocs objects of random size in [min, max)
 * into a reserve of `rate` slots; every `rate` calls it frees the whole
 * reserve in allocation order.  A fixed total of `calls` mallocs is split
 * over the threads, so oversubscription keeps the work constant.
 *
 * Stresses: the thread-local fast path (malloc and free by the owner), and
 * the recycling of just-freed memory; there are no remote frees, so an
 * allocator that scales at all scales here.
 *
 * Parameters: threads, calls (total mallocs), min, max (object size range,
 * bytes), rate (reserve size), seed.
 *
 * Checksum: the sum over all objects of a value derived from the object's id
 * and size, each verified in the object before it is freed.  Sizes are a
 * hash of (seed, id), so the checksum does not depend on the thread count.
 */
#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "worker threads" },
    { "calls", 4000000, "total malloc calls, split over the threads" },
    { "min", 16, "smallest object size (bytes)" },
    { "max", 128, "largest object size + 1 (bytes)" },
    { "rate", 100, "reserve size: objects freed together" },
    { "seed", 1, "random seed" },
};

typedef struct {
    uint64_t first_id, count;   /* this thread's ids: [first_id, first_id + count) */
    uint64_t sum;               /* result */
} worker_t;

static uint64_t g_seed, g_min, g_max, g_rate;

static inline size_t object_size(uint64_t id)
{
    return (size_t)(g_min + mix64(id ^ (g_seed << 32)) % (g_max - g_min));
}

static void *worker(void *arg)
{
    worker_t *w = arg;
    void **reserve = xmalloc(g_rate * sizeof(void *));
    uint64_t sum = 0, id = w->first_id, end = w->first_id + w->count;
    while (id < end) {
        uint64_t batch_first = id;
        size_t k = 0;
        while (k < g_rate && id < end) {
            size_t n = object_size(id);
            void *p = xmalloc(n);
            tag_fill(p, n, id);
            reserve[k++] = p;
            id++;
        }
        for (size_t j = 0; j < k; j++) {
            uint64_t oid = batch_first + j;
            size_t n = object_size(oid);
            sum += tag_verify(reserve[j], n, oid) + n;
            free(reserve[j]);
        }
    }
    free(reserve);
    w->sum = sum;
    return NULL;
}

int main(int argc, char **argv)
{
    bench_name = "recycle";
    PARAMS_PARSE(argc, argv, "Streamflow Recycle: per-thread malloc/free bursts, no sharing", ps);
    long long threads = PARAM(ps, "threads", 1, 4096);
    uint64_t calls = (uint64_t)PARAM(ps, "calls", 1, 1LL << 40);
    g_min = (uint64_t)PARAM(ps, "min", 1, 1LL << 30);
    g_max = (uint64_t)PARAM(ps, "max", (long long)g_min + 1, 1LL << 31);
    g_rate = (uint64_t)PARAM(ps, "rate", 1, 1 << 24);
    g_seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 62);

    worker_t *ws = xcalloc((size_t)threads, sizeof(worker_t));
    pthread_t *ts = xcalloc((size_t)threads, sizeof(pthread_t));
    uint64_t next = 0;
    for (long long t = 0; t < threads; t++) {
        ws[t].first_id = next;
        ws[t].count = calls / (uint64_t)threads + ((uint64_t)t < calls % (uint64_t)threads);
        next += ws[t].count;
    }
    double t0 = now_seconds();
    for (long long t = 0; t < threads; t++)
        bench_start(&ts[t], worker, &ws[t]);
    for (long long t = 0; t < threads; t++)
        bench_join(ts[t]);
    double secs = now_seconds() - t0;
    uint64_t sum = 0;
    for (long long t = 0; t < threads; t++)
        sum += ws[t].sum;
    BENCH_REPORT(ps, threads, calls, secs, sum, NULL);
    free(ws);
    free(ts);
    return 0;
}
