/*
 * cache-thrash — Hoard's "cache-thrash" (Berger et al., ASPLOS 2000; also in
 * mimalloc-bench): active false sharing.
 *
 * Models: worker threads that each repeatedly malloc a small object of
 * `objsize` bytes, write every byte of it `repetitions` times and free it.
 * Nothing is shared by the program; an allocator that carves objects for
 * different threads out of the same cache line (one heap for all threads)
 * makes the threads' writes collide: active false sharing.  Total writes are
 * fixed: the `iterations` are split over the threads.
 *
 * Stresses: whether concurrently allocated objects of different threads are
 * kept on different cache lines.
 *
 * Parameters: threads, iterations (in all), objsize (bytes), repetitions
 * (writes of every byte per object), seed.
 *
 * Checksum: every object's bytes are checked after the writes and folded
 * with the object's id; the sum is a closed form of the arguments.
 */
#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "worker threads" },
    { "iterations", 200000, "malloc/write/free rounds in all, split over the threads" },
    { "objsize", 8, "object size (bytes)" },
    { "repetitions", 100, "writes of every byte per object" },
    { "seed", 5, "random seed (offsets the ids)" },
};

typedef struct {
    uint64_t first, count;
    uint64_t sum;
} worker_t;

static size_t g_objsize;
static uint64_t g_reps, g_seed;

static void *worker(void *arg)
{
    worker_t *w = arg;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < w->count; i++) {
        volatile unsigned char *p = xmalloc(g_objsize);
        for (size_t j = 0; j < g_objsize; j++)
            p[j] = (unsigned char)j;
        for (uint64_t r = 0; r < g_reps; r++)
            for (size_t j = 0; j < g_objsize; j++)
                p[j]++;
        uint64_t id = g_seed + w->first + i;
        for (size_t j = 0; j < g_objsize; j++)
            if (p[j] != (unsigned char)(j + g_reps))
                bench_die(BENCH_EXIT_CORRUPT, "object %" PRIu64 " byte %zu changed under us", id, j);
        sum += mix64(id) + p[0];
        free((void *)p);
    }
    w->sum = sum;
    return NULL;
}

int main(int argc, char **argv)
{
    bench_name = "cache-thrash";
    PARAMS_PARSE(argc, argv, "Hoard cache-thrash: active false sharing", ps);
    long long threads = PARAM(ps, "threads", 1, 4096);
    uint64_t iterations = (uint64_t)PARAM(ps, "iterations", 1, 1LL << 40);
    g_objsize = (size_t)PARAM(ps, "objsize", 1, 1 << 20);
    g_reps = (uint64_t)PARAM(ps, "repetitions", 0, 1LL << 32);
    g_seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 36);

    worker_t *ws = xcalloc((size_t)threads, sizeof(worker_t));
    pthread_t *ts = xcalloc((size_t)threads, sizeof(pthread_t));
    uint64_t next = 0;
    for (long long t = 0; t < threads; t++) {
        ws[t].first = next;
        ws[t].count = iterations / (uint64_t)threads + ((uint64_t)t < iterations % (uint64_t)threads);
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
    BENCH_REPORT(ps, threads, iterations * g_reps * g_objsize, secs, sum, NULL);
    return 0;
}
