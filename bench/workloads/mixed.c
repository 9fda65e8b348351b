/*
 * mixed — mixed sizes with random lifetimes, and every second round a
 * batch of live objects handed to another thread (the pattern of the
 * "rptest" row of the field's benchmark suite, rpmalloc's benchmark).
 *
 * Models: each thread keeps `slots` slots.  A round is `ops` operations:
 * pick a random slot, free what is in it (verified), and allocate a new
 * object there, its size drawn from 8 B to 16 KiB with small sizes far more
 * likely (8 << k, k uniform in 0..10, then uniform up to twice that).
 * After every second round a thread moves `batch` of its live objects to
 * the mailbox of the next thread, which frees them at the start of its
 * next round.  At the end every thread frees its slots, and the main
 * thread empties the mailboxes.
 *
 * Stresses: size classes across the whole small range at once, objects of
 * random lifetime (fragmentation within pages), remote frees in batches,
 * and blocks up to 16 KiB (large enough to cross page sizes).
 *
 * Parameters: threads, rounds, ops (per round per thread), slots, batch,
 * seed.
 *
 * Checksum: the sum of every object's verified tag and size.  An object's
 * id is its thread and its count in that thread; its size follows from the
 * id; so the checksum does not depend on who frees it or when (it does
 * depend on the thread count, which sets how many objects there are).
 */
#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "threads" },
    { "rounds", 10, "rounds per thread" },
    { "ops", 20000, "operations per round per thread" },
    { "slots", 8192, "live objects per thread" },
    { "batch", 1024, "objects handed to the next thread every second round" },
    { "seed", 23, "random seed" },
};

typedef struct {
    void *p;
    uint64_t id;
    uint32_t n;
} obj_t;

typedef struct {
    pthread_mutex_t lock;
    obj_t *o;
    uint64_t count, cap;
} mailbox_t;

typedef struct {
    long long index, threads;
    uint64_t rounds, ops, slots, batch, seed;
    mailbox_t *boxes;
    uint64_t sum, made;
} task_t;

static size_t size_of(uint64_t id)
{
    uint64_t h = mix64(id ^ 0x4d49584544ull);
    size_t base = (size_t)8 << (h % 11);       /* 8 B .. 8 KiB */
    return base + (size_t)((h >> 8) % base);   /* up to twice that: 8 B .. 16 KiB - 1 */
}

static uint64_t free_obj(obj_t *o)
{
    uint64_t v = tag_verify(o->p, o->n, o->id) + o->n;
    free(o->p);
    o->p = NULL;
    return v;
}

static void drain(mailbox_t *b, uint64_t *sum)
{
    pthread_mutex_lock(&b->lock);
    for (uint64_t i = 0; i < b->count; i++)
        *sum += free_obj(&b->o[i]);
    b->count = 0;
    pthread_mutex_unlock(&b->lock);
}

static void *worker(void *arg)
{
    task_t *t = arg;
    rng_t r = rng_make(t->seed, (uint64_t)t->index);
    obj_t *slot = xcalloc(t->slots, sizeof(obj_t));
    uint64_t next = 0;
    mailbox_t *mine = &t->boxes[t->index], *theirs = &t->boxes[(t->index + 1) % t->threads];
    for (uint64_t round = 0; round < t->rounds; round++) {
        drain(mine, &t->sum);
        for (uint64_t k = 0; k < t->ops; k++) {
            obj_t *o = &slot[rng_range(&r, 0, t->slots)];
            if (o->p)
                t->sum += free_obj(o);
            uint64_t id = ((uint64_t)t->index << 40) | next++;
            size_t n = size_of(id);
            *o = (obj_t){ xmalloc(n), id, (uint32_t)n };
            tag_fill(o->p, n, id);
            t->made++;
        }
        if (round % 2 == 1) { /* a batch of live objects to the next thread */
            pthread_mutex_lock(&theirs->lock);
            for (uint64_t k = 0; k < t->batch; k++) {
                obj_t *o = &slot[rng_range(&r, 0, t->slots)];
                if (!o->p)
                    continue;
                if (theirs->count == theirs->cap) {
                    theirs->cap = theirs->cap ? 2 * theirs->cap : 1024;
                    theirs->o = xrealloc(theirs->o, theirs->cap * sizeof(obj_t));
                }
                theirs->o[theirs->count++] = *o;
                o->p = NULL;
            }
            pthread_mutex_unlock(&theirs->lock);
        }
    }
    for (uint64_t i = 0; i < t->slots; i++)
        if (slot[i].p)
            t->sum += free_obj(&slot[i]);
    free(slot);
    return NULL;
}

int main(int argc, char **argv)
{
    bench_name = "mixed";
    PARAMS_PARSE(argc, argv, "mixed sizes, random lifetimes, batches handed across threads", ps);
    long long threads = PARAM(ps, "threads", 1, 4096);
    uint64_t rounds = (uint64_t)PARAM(ps, "rounds", 1, 1LL << 30);
    uint64_t ops = (uint64_t)PARAM(ps, "ops", 1, 1LL << 40);
    uint64_t slots = (uint64_t)PARAM(ps, "slots", 1, 1LL << 30);
    uint64_t batch = (uint64_t)PARAM(ps, "batch", 0, 1LL << 30);
    uint64_t seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 30);

    mailbox_t *boxes = xcalloc((size_t)threads, sizeof(mailbox_t));
    for (long long i = 0; i < threads; i++)
        pthread_mutex_init(&boxes[i].lock, NULL);
    pthread_t *ts = xcalloc((size_t)threads, sizeof(pthread_t));
    task_t *tasks = xcalloc((size_t)threads, sizeof(task_t));
    double t0 = now_seconds();
    for (long long i = 0; i < threads; i++) {
        tasks[i] = (task_t){ .index = i, .threads = threads, .rounds = rounds, .ops = ops,
                             .slots = slots, .batch = batch, .seed = seed, .boxes = boxes };
        bench_start(&ts[i], worker, &tasks[i]);
    }
    uint64_t sum = 0, made = 0;
    for (long long i = 0; i < threads; i++) {
        bench_join(ts[i]);
        sum += tasks[i].sum;
        made += tasks[i].made;
    }
    for (long long i = 0; i < threads; i++) {
        drain(&boxes[i], &sum);
        free(boxes[i].o);
        pthread_mutex_destroy(&boxes[i].lock);
    }
    double secs = now_seconds() - t0;
    free(boxes);
    free(ts);
    free(tasks);
    BENCH_REPORT(ps, threads, made, secs, sum, NULL);
    return 0;
}
