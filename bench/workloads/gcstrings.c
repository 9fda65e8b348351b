/*
 * gcstrings — an interpreter's string churn under a mark-and-sweep
 * garbage collector (the pattern of the suite row "Ruby string stress";
 * bench/real/strings.rb runs it in Debian's ruby, make bench FULL=1).
 *
 * Models: `iterations` strings in 64 chunks dealt round the threads (chunk
 * c to thread c % threads).  Each string is 1 to 40 bytes; it is stored at
 * a random place of its chunk's share of a retained set of `retained`
 * strings, and the string it replaces becomes garbage.  Garbage is not
 * freed at once: each thread keeps it on a list and frees the whole list
 * (a sweep) when it holds `sweep` objects, as a collector frees what its
 * mark phase found dead, in bursts.  Every 300 strings a chunk builds a
 * 100 KB buffer by realloc, doubling from 64 bytes, and drops it (garbage
 * too).  At the end the retained set and the last garbage are freed.
 *
 * Stresses: short-lived small blocks freed in bursts long after their
 * neighbours, long-lived blocks scattered among them (fragmentation), a
 * growing buffer (realloc) among small blocks, big blocks freed in sweeps.
 *
 * Parameters: threads, iterations (strings in all), retained (strings kept
 * alive at once, in all), sweep (garbage per thread that triggers a sweep),
 * seed.
 *
 * Checksum: every string and buffer is verified when it is freed; the sum
 * of their tags and sizes.  Ids and sizes follow from the chunk and the
 * string's index, so the checksum depends on neither the thread count nor
 * the order of frees.
 */
#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "threads (chunks dealt round them)" },
    { "iterations", 2000000, "strings made in all" },
    { "retained", 600000, "strings alive at once (the retained set)" },
    { "sweep", 65536, "garbage objects per thread that trigger a sweep" },
    { "seed", 17, "random seed (places in the retained set)" },
};

#define CHUNKS 64
#define BIG_EVERY 300
#define BIG_SIZE 100000
#define BIG_ID ((uint64_t)1 << 48) /* the buffers' ids, apart from the strings' */

typedef struct {
    void *p;
    uint64_t id;
    uint32_t n;
} obj_t;

typedef struct {
    long long index, threads;
    uint64_t per_chunk, share, sweep, seed;
    obj_t *retained;  /* CHUNKS * share, shared: chunk c owns [c * share, (c + 1) * share) */
    obj_t *garbage;   /* this thread's */
    uint64_t ngarbage, sum, made;
} task_t;

static size_t size_of(uint64_t id)
{
    return 1 + (size_t)(mix64(id ^ 0x5752494e47ull) % 40);
}

static void sweep(task_t *t)
{
    for (uint64_t i = 0; i < t->ngarbage; i++) {
        obj_t *o = &t->garbage[i];
        t->sum += tag_verify(o->p, o->n, o->id) + o->n;
        free(o->p);
    }
    t->ngarbage = 0;
}

static void garbage(task_t *t, obj_t o)
{
    if (!o.p)
        return;
    t->garbage[t->ngarbage++] = o;
    if (t->ngarbage == t->sweep)
        sweep(t);
}

static void *worker(void *arg)
{
    task_t *t = arg;
    for (long long c = t->index; c < CHUNKS; c += t->threads) {
        rng_t r = rng_make(t->seed, (uint64_t)c);
        obj_t *mine = t->retained + (uint64_t)c * t->share;
        for (uint64_t i = 0; i < t->per_chunk; i++) {
            uint64_t id = (uint64_t)c * t->per_chunk + i;
            size_t n = size_of(id);
            obj_t s = { xmalloc(n), id, (uint32_t)n };
            tag_fill(s.p, n, id);
            uint64_t at = rng_range(&r, 0, t->share);
            garbage(t, mine[at]);
            mine[at] = s;
            t->made++;
            if (i % BIG_EVERY == 0) {
                /* a buffer grown by appends, then dropped */
                size_t cap = 64;
                char *b = xmalloc(cap);
                while (cap < BIG_SIZE) {
                    cap = cap * 2 < BIG_SIZE ? cap * 2 : BIG_SIZE;
                    b = xrealloc(b, cap);
                }
                tag_fill(b, BIG_SIZE, BIG_ID + id);
                garbage(t, (obj_t){ b, BIG_ID + id, BIG_SIZE });
                t->made++;
            }
        }
    }
    sweep(t);
    return NULL;
}

int main(int argc, char **argv)
{
    bench_name = "gcstrings";
    PARAMS_PARSE(argc, argv, "interpreter string churn under a sweeping collector", ps);
    long long threads = PARAM(ps, "threads", 1, 4096);
    uint64_t iterations = (uint64_t)PARAM(ps, "iterations", CHUNKS, 1LL << 40);
    uint64_t retained = (uint64_t)PARAM(ps, "retained", CHUNKS, 1LL << 32);
    uint64_t sweep_at = (uint64_t)PARAM(ps, "sweep", 1, 1LL << 32);
    uint64_t seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 30);

    uint64_t share = retained / CHUNKS;
    obj_t *set = xcalloc(share * CHUNKS, sizeof(obj_t));
    pthread_t *ts = xcalloc((size_t)threads, sizeof(pthread_t));
    task_t *tasks = xcalloc((size_t)threads, sizeof(task_t));
    double t0 = now_seconds();
    for (long long i = 0; i < threads; i++) {
        tasks[i] = (task_t){ .index = i, .threads = threads, .per_chunk = iterations / CHUNKS,
                             .share = share, .sweep = sweep_at, .seed = seed, .retained = set,
                             .garbage = xcalloc(sweep_at, sizeof(obj_t)) };
        bench_start(&ts[i], worker, &tasks[i]);
    }
    uint64_t sum = 0, made = 0;
    for (long long i = 0; i < threads; i++) {
        bench_join(ts[i]);
        sum += tasks[i].sum;
        made += tasks[i].made;
        free(tasks[i].garbage);
    }
    /* the retained set goes last, as at a program's exit */
    for (uint64_t i = 0; i < share * CHUNKS; i++) {
        obj_t *o = &set[i];
        if (o->p) {
            sum += tag_verify(o->p, o->n, o->id) + o->n;
            free(o->p);
        }
    }
    double secs = now_seconds() - t0;
    free(set);
    free(ts);
    free(tasks);
    BENCH_REPORT(ps, threads, made, secs, sum, NULL);
    return 0;
}
