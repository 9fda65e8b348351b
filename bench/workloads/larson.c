/*
 * larson — the Larson & Krishnan server model ("Memory Allocation for
 * Long-Running Server Applications", ISMM 1998), as run by the Hoard and
 * mimalloc-bench suites and by Streamflow ([Streamflow] in
 * docs/sources.md).
 *
 * Models: a server whose client threads come and go while the objects they
 * hold live on.  The main thread allocates every slot first (warm-up); then
 * each worker repeatedly picks a random slot of its own, frees the object
 * there and mallocs a new one of random size in [min, max].  When a worker
 * has done its share of a round it starts a new thread that inherits its
 * slots and exits; `rounds` generations of threads follow each other.
 *
 * Stresses: frees of objects allocated by another thread (the warm-up
 * thread, then a predecessor that has exited), memory left behind by dead
 * threads that must be reused, thread creation and exit while the heap is
 * full, and the small-object fast path.  Reported as throughput (ops/s);
 * the total work (ops) and the total number of live objects (slots) are
 * fixed and split over the threads, so oversubscription keeps the work
 * constant.
 *
 * Parameters: threads, slots (live objects in all), ops (slot replacements
 * in all), rounds (thread generations per worker), min, max (sizes, bytes,
 * inclusive as in the original), seed.
 *
 * Checksum: the sum over every object freed (during the run and at the end)
 * of a value derived from its id and size, verified in the object before it
 * is freed.  Each worker's slots and random stream are its own, so the
 * checksum depends on the arguments only, not on the interleaving.
 */
#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "concurrent worker threads" },
    { "slots", 8000, "live objects in all, split over the workers" },
    { "ops", 4000000, "free+malloc replacements in all" },
    { "rounds", 4, "thread generations per worker" },
    { "min", 8, "smallest object size (bytes)" },
    { "max", 1000, "largest object size (bytes, inclusive)" },
    { "seed", 4141, "random seed" },
};

typedef struct {
    void *p;
    uint64_t id;
} slot_t;

typedef struct {
    int index;              /* worker lineage number */
    int round;              /* generation now running */
    slot_t *slots;          /* owned by the running generation */
    size_t nslots;
    uint64_t ops_per_round;
    uint64_t next_id;       /* ids: (index << 40) | counter */
    uint64_t sum;
    pthread_t *threads;     /* one per generation: [r + 1] is written by
                               generation r alone (its pthread_create),
                               and read by main after joining r */
} lineage_t;

static uint64_t g_seed, g_min, g_max;
static int g_rounds;

static inline size_t object_size(uint64_t id)
{
    return (size_t)(g_min + mix64(id ^ (g_seed << 20)) % (g_max - g_min + 1));
}

static void *worker(void *arg)
{
    lineage_t *l = arg;
    rng_t r = rng_make(g_seed, (uint64_t)l->index * 4096 + (uint64_t)l->round);
    uint64_t sum = 0;
    for (uint64_t i = 0; i < l->ops_per_round; i++) {
        slot_t *s = &l->slots[rng_next(&r) % l->nslots];
        size_t n = object_size(s->id);
        sum += tag_verify(s->p, n, s->id) + n;
        free(s->p);
        s->id = l->next_id++;
        n = object_size(s->id);
        s->p = xmalloc(n);
        tag_fill(s->p, n, s->id);
    }
    l->sum += sum;
    if (l->round + 1 < g_rounds) {
        /* hand the slots to a new thread, as the original's exiting workers do */
        l->round++;
        bench_start(&l->threads[l->round], worker, l);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    bench_name = "larson";
    PARAMS_PARSE(argc, argv, "Larson server model: slots replaced at random by generations of threads", ps);
    long long threads = PARAM(ps, "threads", 1, 4096);
    uint64_t slots = (uint64_t)PARAM(ps, "slots", threads, 1LL << 32);
    uint64_t ops = (uint64_t)PARAM(ps, "ops", 0, 1LL << 40);
    g_rounds = (int)PARAM(ps, "rounds", 1, 4096);
    g_min = (uint64_t)PARAM(ps, "min", 1, 1LL << 30);
    g_max = (uint64_t)PARAM(ps, "max", (long long)g_min, 1LL << 31);
    g_seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 62);

    lineage_t *ls = xcalloc((size_t)threads, sizeof(lineage_t));
    uint64_t ops_done = 0;
    /* warm-up: the main thread allocates every worker's slots */
    for (long long t = 0; t < threads; t++) {
        lineage_t *l = &ls[t];
        l->index = (int)t;
        l->nslots = slots / (uint64_t)threads + ((uint64_t)t < slots % (uint64_t)threads);
        uint64_t mine = ops / (uint64_t)threads + ((uint64_t)t < ops % (uint64_t)threads);
        l->ops_per_round = mine / (uint64_t)g_rounds;
        ops_done += l->ops_per_round * (uint64_t)g_rounds;
        l->next_id = (uint64_t)t << 40;
        l->slots = xmalloc(l->nslots * sizeof(slot_t));
        l->threads = xcalloc((size_t)g_rounds, sizeof(pthread_t));
        for (size_t i = 0; i < l->nslots; i++) {
            uint64_t id = l->next_id++;
            size_t n = object_size(id);
            l->slots[i].id = id;
            l->slots[i].p = xmalloc(n);
            tag_fill(l->slots[i].p, n, id);
        }
    }
    double t0 = now_seconds();
    for (long long t = 0; t < threads; t++)
        bench_start(&ls[t].threads[0], worker, &ls[t]);
    /* join each lineage generation by generation: generation r writes
     * generation r + 1's handle (a slot of its own: a fast successor may
     * already be creating the next one) before it exits, so joining r
     * makes it visible */
    for (long long t = 0; t < threads; t++)
        for (int r = 0; r < g_rounds; r++)
            bench_join(ls[t].threads[r]);
    double secs = now_seconds() - t0;
    uint64_t sum = 0;
    for (long long t = 0; t < threads; t++) {
        lineage_t *l = &ls[t];
        for (size_t i = 0; i < l->nslots; i++) {
            size_t n = object_size(l->slots[i].id);
            l->sum += tag_verify(l->slots[i].p, n, l->slots[i].id) + n;
            free(l->slots[i].p);
        }
        free(l->slots);
        free(l->threads);
        sum += l->sum;
    }
    free(ls);
    BENCH_REPORT(ps, threads, ops_done, secs, sum, NULL);
    return 0;
}
