/*
 * threadtest — Hoard's "threadtest" (Berger, McKinley, Blumofe, Wilson,
 * "Hoard: A Scalable Memory Allocator for Multithreaded Applications",
 * ASPLOS 2000; also in mimalloc-bench).
 *
 * Models: independent threads that allocate a batch of objects and free the
 * batch in the same (FIFO) order, over and over.  The original does
 * `new Foo[objSize]` with 8-byte Foo objects; here each object is malloc of
 * 8 * objsize bytes (operator new[] is malloc underneath in every allocator
 * measured).  The total work is fixed: `iterations` rounds of `objects`
 * objects, the objects of a round split over the threads.
 *
 * Stresses: per-thread allocation throughput and scalability with no
 * sharing; FIFO freeing walks the heap in allocation order, which rewards
 * allocators whose free lists hand memory back in address order.
 *
 * Parameters: threads, iterations, objects (per round, in all), objsize
 * (object size / 8), seed (offsets the ids).
 *
 * Checksum: sum over every object of a value derived from (round, object),
 * verified in the object before it is freed; independent of the thread
 * count.
 */
#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "worker threads" },
    { "iterations", 100, "rounds" },
    { "objects", 100000, "objects per round, split over the threads" },
    { "objsize", 8, "object size in 8-byte units (bytes = 8 * objsize)" },
    { "seed", 11, "random seed (offsets the ids)" },
};

typedef struct {
    uint64_t first, count;   /* this thread's objects of each round */
    uint64_t sum;
} worker_t;

static uint64_t g_iterations, g_objects, g_seed;
static size_t g_bytes;

static void *worker(void *arg)
{
    worker_t *w = arg;
    void **a = xmalloc((w->count ? w->count : 1) * sizeof(void *));
    uint64_t sum = 0;
    for (uint64_t it = 0; it < g_iterations; it++) {
        uint64_t base = g_seed + it * g_objects + w->first;
        for (uint64_t i = 0; i < w->count; i++) {
            a[i] = xmalloc(g_bytes);
            tag_fill(a[i], g_bytes, base + i);
        }
        for (uint64_t i = 0; i < w->count; i++) {
            sum += tag_verify(a[i], g_bytes, base + i);
            free(a[i]);
        }
    }
    free(a);
    w->sum = sum;
    return NULL;
}

int main(int argc, char **argv)
{
    bench_name = "threadtest";
    PARAMS_PARSE(argc, argv, "Hoard threadtest: per-thread FIFO batches of fixed-size objects", ps);
    long long threads = PARAM(ps, "threads", 1, 4096);
    g_iterations = (uint64_t)PARAM(ps, "iterations", 1, 1LL << 32);
    g_objects = (uint64_t)PARAM(ps, "objects", 1, 1LL << 32);
    g_bytes = 8 * (size_t)PARAM(ps, "objsize", 1, 1 << 27);
    g_seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 40);

    worker_t *ws = xcalloc((size_t)threads, sizeof(worker_t));
    pthread_t *ts = xcalloc((size_t)threads, sizeof(pthread_t));
    uint64_t next = 0;
    for (long long t = 0; t < threads; t++) {
        ws[t].first = next;
        ws[t].count = g_objects / (uint64_t)threads + ((uint64_t)t < g_objects % (uint64_t)threads);
        next += ws[t].count;
    }
    double t0 = now_seconds();
    for (long long t = 0; t < threads; t++)
        bench_start(&ts[t], worker, &ws[t]);
    uint64_t sum = 0;
    for (long long t = 0; t < threads; t++) {
        bench_join(ts[t]);
        sum += ws[t].sum;
    }
    double secs = now_seconds() - t0;
    free(ws);
    free(ts);
    BENCH_REPORT(ps, threads, g_iterations * g_objects, secs, sum, NULL);
    return 0;
}
