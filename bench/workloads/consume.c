/*
 * consume — Streamflow's producer–consumer benchmark "Consume" (Schneider
 * et al., ISMM 2006; [Streamflow] in docs/sources.md).
 *
 * Models: a producer thread that creates work items and consumer threads
 * that finish and discard them (a network stack, a task queue).  One producer
 * mallocs batches of `batch` objects of random size in [min, max) and hands
 * each batch, round-robin, to one of C consumer threads (C = threads); the
 * consumer touches every object and frees it.  At most `depth` batches wait
 * in each consumer's queue.
 *
 * Stresses: remote frees — every free happens on a thread that did not
 * allocate the object — and memory blow-up: an allocator that keeps freed
 * objects in the consumer's heap, where the producer never finds them, grows
 * without bound.  The JSON's maxrss_kb (peak RSS) is that blow-up; the
 * harness also records it from rusage.
 *
 * Parameters: threads (consumers), objects (in all), batch, min, max
 * (object sizes, bytes), depth (queue length per consumer), seed.
 *
 * Checksum: sum over all objects of a value derived from the object's id and
 * size, verified in the object by the consumer before it frees it.  It does
 * not depend on the number of consumers.
 */
#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "consumer threads (one producer besides)" },
    { "objects", 4000000, "objects produced in all" },
    { "batch", 256, "objects per hand-off" },
    { "min", 16, "smallest object size (bytes)" },
    { "max", 256, "largest object size + 1 (bytes)" },
    { "depth", 4, "batches waiting per consumer at most" },
    { "seed", 7, "random seed" },
};

typedef struct {
    uint64_t first_id;
    size_t count;
    void *obj[];
} batch_t;

typedef struct {
    bq_t queue;
    uint64_t sum;
    pthread_t thread;
} consumer_t;

static uint64_t g_seed, g_min, g_max;

static inline size_t object_size(uint64_t id)
{
    return (size_t)(g_min + mix64(id ^ (g_seed << 24)) % (g_max - g_min));
}

static void *consumer(void *arg)
{
    consumer_t *c = arg;
    uint64_t sum = 0;
    batch_t *b;
    while ((b = bq_pop(&c->queue)) != NULL) {
        for (size_t i = 0; i < b->count; i++) {
            uint64_t id = b->first_id + i;
            size_t n = object_size(id);
            unsigned char *p = b->obj[i];
            sum += tag_verify(p, n, id) + n;
            p[n - 1] ^= 0xff;   /* touch: the consumer writes the object too */
            free(p);
        }
        free(b);
    }
    c->sum = sum;
    return NULL;
}

int main(int argc, char **argv)
{
    bench_name = "consume";
    PARAMS_PARSE(argc, argv, "Streamflow Consume: one producer, C consumers, every free remote", ps);
    long long threads = PARAM(ps, "threads", 1, 4096);
    uint64_t objects = (uint64_t)PARAM(ps, "objects", 1, 1LL << 40);
    size_t batch = (size_t)PARAM(ps, "batch", 1, 1 << 20);
    g_min = (uint64_t)PARAM(ps, "min", 1, 1LL << 30);
    g_max = (uint64_t)PARAM(ps, "max", (long long)g_min + 1, 1LL << 31);
    size_t depth = (size_t)PARAM(ps, "depth", 1, 1 << 20);
    g_seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 62);

    consumer_t *cs = xcalloc((size_t)threads, sizeof(consumer_t));
    for (long long t = 0; t < threads; t++)
        bq_init(&cs[t].queue, depth);
    double t0 = now_seconds();
    for (long long t = 0; t < threads; t++)
        bench_start(&cs[t].thread, consumer, &cs[t]);
    /* the main thread is the producer */
    uint64_t id = 0;
    for (uint64_t k = 0; id < objects; k++) {
        size_t n = objects - id < batch ? (size_t)(objects - id) : batch;
        batch_t *b = xmalloc(sizeof(batch_t) + n * sizeof(void *));
        b->first_id = id;
        b->count = n;
        for (size_t i = 0; i < n; i++, id++) {
            size_t sz = object_size(id);
            b->obj[i] = xmalloc(sz);
            tag_fill(b->obj[i], sz, id);
        }
        bq_push(&cs[k % (uint64_t)threads].queue, b);
    }
    for (long long t = 0; t < threads; t++)
        bq_close(&cs[t].queue);
    uint64_t sum = 0;
    for (long long t = 0; t < threads; t++) {
        bench_join(cs[t].thread);
        sum += cs[t].sum;
    }
    double secs = now_seconds() - t0;
    for (long long t = 0; t < threads; t++)
        bq_destroy(&cs[t].queue);
    free(cs);
    BENCH_REPORT(ps, threads, objects, secs, sum, NULL);
    return 0;
}
