/*
 * handoff — short-lived threads that allocate objects, hand them to a
 * longer-lived thread, and exit, round after round: a thread-per-task
 * server whose results outlive the task that built them (the pattern of
 * mimalloc-bench's "mleak" row).
 *
 * Models: `rounds` rounds.  In each, `threads` worker threads start; each
 * allocates its share of the round's objects (sizes uniform in [min, max],
 * from the object's id), fills them, stores the pointers in the round's
 * array and exits.  The main thread (the collector) joins them, which is
 * the hand-off, and keeps each round's objects alive for `keep` rounds;
 * then it verifies and frees them.  Every free is of an object whose
 * allocating thread has exited.
 *
 * Stresses: memory left behind by exited threads (their pages, still
 * holding live objects, must be reused by the next threads rather than
 * left half empty while fresh pages are carved), frees into pages whose
 * owner is gone, thread creation and exit at a steady rate.
 *
 * Parameters: threads (workers per round), objects (in all), rounds, keep
 * (rounds kept alive), min, max (bytes), seed.
 *
 * Checksum: the sum over every object of its verified tag and its size;
 * the ids, sizes and rounds do not depend on the thread count, so neither
 * does the checksum.
 */
#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "worker threads per round" },
    { "objects", 2000000, "objects in all" },
    { "rounds", 200, "rounds (thread generations)" },
    { "keep", 4, "rounds a round's objects stay alive" },
    { "min", 16, "smallest object size (bytes)" },
    { "max", 256, "largest object size (bytes, exclusive)" },
    { "seed", 13, "random seed (sizes)" },
};

typedef struct {
    void **obj;             /* the round's objects, by index */
    uint64_t first_id;      /* id of obj[0] */
    uint64_t lo, hi;        /* this worker's indices */
} task_t;

static uint64_t g_min, g_max, g_seed;

static size_t size_of(uint64_t id)
{
    return (size_t)(g_min + mix64(id ^ (g_seed << 32)) % (g_max - g_min));
}

static void *worker(void *arg)
{
    task_t *t = arg;
    for (uint64_t i = t->lo; i < t->hi; i++) {
        uint64_t id = t->first_id + i;
        size_t n = size_of(id);
        t->obj[i] = xmalloc(n);
        tag_fill(t->obj[i], n, id);
    }
    return NULL;
}

static uint64_t free_round(void **obj, uint64_t first_id, uint64_t count)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t id = first_id + i;
        size_t n = size_of(id);
        sum += tag_verify(obj[i], n, id) + n;
        free(obj[i]);
    }
    free(obj);
    return sum;
}

int main(int argc, char **argv)
{
    bench_name = "handoff";
    PARAMS_PARSE(argc, argv, "threads that allocate, hand over and exit", ps);
    long long threads = PARAM(ps, "threads", 1, 4096);
    uint64_t objects = (uint64_t)PARAM(ps, "objects", 1, 1LL << 40);
    uint64_t rounds = (uint64_t)PARAM(ps, "rounds", 1, 1LL << 30);
    uint64_t keep = (uint64_t)PARAM(ps, "keep", 1, 1 << 20);
    g_min = (uint64_t)PARAM(ps, "min", 1, 1 << 30);
    g_max = (uint64_t)PARAM(ps, "max", 2, 1 << 30);
    g_seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 30);
    if (g_max <= g_min)
        bench_die(BENCH_EXIT_USAGE, "max (%" PRIu64 ") must be above min (%" PRIu64 ")", g_max, g_min);

    void ***live = xcalloc(rounds, sizeof(void **));
    uint64_t *first = xcalloc(rounds, sizeof(uint64_t)), *count = xcalloc(rounds, sizeof(uint64_t));
    pthread_t *ts = xcalloc((size_t)threads, sizeof(pthread_t));
    task_t *tasks = xcalloc((size_t)threads, sizeof(task_t));
    uint64_t sum = 0, next_id = 0;
    double t0 = now_seconds();
    for (uint64_t r = 0; r < rounds; r++) {
        count[r] = objects / rounds + (r < objects % rounds);
        first[r] = next_id;
        next_id += count[r];
        live[r] = xcalloc(count[r] ? count[r] : 1, sizeof(void *));
        for (long long t = 0; t < threads; t++) {
            tasks[t].obj = live[r];
            tasks[t].first_id = first[r];
            tasks[t].lo = count[r] * (uint64_t)t / (uint64_t)threads;
            tasks[t].hi = count[r] * (uint64_t)(t + 1) / (uint64_t)threads;
            bench_start(&ts[t], worker, &tasks[t]);
        }
        for (long long t = 0; t < threads; t++)
            bench_join(ts[t]);
        if (r >= keep) {
            uint64_t old = r - keep;
            sum += free_round(live[old], first[old], count[old]);
            live[old] = NULL;
        }
    }
    for (uint64_t r = 0; r < rounds; r++)
        if (live[r])
            sum += free_round(live[r], first[r], count[r]);
    double secs = now_seconds() - t0;
    free(live);
    free(first);
    free(count);
    free(ts);
    free(tasks);
    char extra[64];
    snprintf(extra, sizeof extra, "\"rounds\":%" PRIu64, rounds);
    BENCH_REPORT(ps, threads, objects, secs, sum, extra);
    return 0;
}
