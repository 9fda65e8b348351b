/*
 * realloc-grow — vectors grown by doubling realloc from 16 bytes to 64 MiB:
 * the memory-increment pattern that motivates Mmalloc's interval tree and
 * its in-place growth of large blocks ([Mmalloc] in docs/sources.md:
 * storage-intensive bioinformatics code grows its buffers as it goes).
 *
 * Models: each thread grows `live` vectors at once, in turn, each by
 * doubling realloc from 16 bytes up to `max` bytes, writing the new half as
 * it goes (one word per 4 KiB page and the last word) and checking the old
 * half after every realloc; a vector that reaches `max` is checked, freed
 * and replaced by a new one, until the thread has grown its share of
 * `vectors`.  Because the live vectors grow in turn, their blocks are
 * neighbours: an allocator can grow a block in place only if it left room
 * behind it, or moves it (a copy of everything so far).
 *
 * Stresses: realloc of large blocks (in place vs. move+copy), the
 * transition from small size classes to page-level and mmap'ed blocks, and
 * returning large freed blocks to the system (RSS).  So that 128 threads
 * fit in memory, `max` is lowered (to a power of two, 64 KiB at least) until
 * threads * live * max <= budget, and `vectors` raised by the same factor so
 * that the bytes grown stay the same; the JSON reports both as used.
 *
 * Parameters: threads, vectors (in all), max (bytes), live (vectors per
 * thread at once), budget (MiB for all live vectors), seed.
 *
 * Checksum: the sum of every word checked in a vector before it is freed, a
 * function of the vectors' ids and sizes only.
 */
#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "worker threads" },
    { "vectors", 48, "vectors grown to the end, in all" },
    { "max", 64 << 20, "largest size a vector reaches (bytes)" },
    { "live", 2, "vectors each thread grows at once, in turn" },
    { "budget", 1024, "MiB for all live vectors (lowers max when needed)" },
    { "seed", 37, "random seed" },
};

#define PAGE 4096

typedef struct {
    unsigned char *p;
    size_t size;
    uint64_t id;
} vec_t;

typedef struct {
    uint64_t first, count;    /* vector ids of this thread */
    uint64_t sum, reallocs;
} worker_t;

static size_t g_max, g_live;
static uint64_t g_seed;

static inline uint64_t word_at(uint64_t id, size_t off)
{
    return mix64((id << 32) ^ off ^ g_seed);
}

/* Writes the pattern on [from, to): one word per page, plus the last word. */
static void vec_fill(vec_t *v, size_t from, size_t to)
{
    for (size_t off = from; off + 8 <= to; off += PAGE) {
        uint64_t w = word_at(v->id, off);
        memcpy(v->p + off, &w, 8);
    }
    uint64_t w = word_at(v->id, to - 8);
    memcpy(v->p + to - 8, &w, 8);
}

/* Checks the pattern written on [0, to) (to a power of two >= 16). */
static uint64_t vec_check(const vec_t *v, size_t to)
{
    uint64_t sum = 0;
    for (size_t end = 16; end <= to; end *= 2) {
        size_t from = end == 16 ? 0 : end / 2;
        for (size_t off = from; off + 8 <= end; off += PAGE) {
            uint64_t w;
            memcpy(&w, v->p + off, 8);
            if (w != word_at(v->id, off))
                bench_die(BENCH_EXIT_CORRUPT, "vector %" PRIu64 " corrupted at offset %zu of %zu",
                          v->id, off, v->size);
            sum += w;
        }
        uint64_t w;
        memcpy(&w, v->p + end - 8, 8);
        if (w != word_at(v->id, end - 8))
            bench_die(BENCH_EXIT_CORRUPT, "vector %" PRIu64 " corrupted at offset %zu of %zu",
                      v->id, end - 8, v->size);
        sum += w;
    }
    return sum;
}

static void vec_start(vec_t *v, uint64_t id)
{
    v->id = id;
    v->size = 16;
    v->p = xmalloc(16);
    vec_fill(v, 0, 16);
}

static void *worker(void *arg)
{
    worker_t *w = arg;
    vec_t *vs = xcalloc(g_live, sizeof(vec_t));
    uint64_t next = w->first, end = w->first + w->count, sum = 0, reallocs = 0;
    size_t active = 0;
    for (size_t k = 0; k < g_live && next < end; k++, active++)
        vec_start(&vs[k], next++);
    while (active > 0) {
        for (size_t k = 0; k < g_live; k++) {
            vec_t *v = &vs[k];
            if (v->p == NULL)
                continue;
            size_t old = v->size;
            v->p = xrealloc(v->p, 2 * old);
            v->size = 2 * old;
            reallocs++;
            /* the old half must have survived the realloc: check a few words */
            uint64_t first, last;
            memcpy(&first, v->p, 8);
            memcpy(&last, v->p + old - 8, 8);
            if (first != word_at(v->id, 0) || last != word_at(v->id, old - 8))
                bench_die(BENCH_EXIT_CORRUPT, "vector %" PRIu64 " lost its contents in realloc to %zu",
                          v->id, v->size);
            vec_fill(v, old, v->size);
            if (v->size < g_max)
                continue;
            sum += vec_check(v, v->size);
            free(v->p);
            v->p = NULL;
            active--;
            if (next < end) {
                vec_start(v, next++);
                active++;
            }
        }
    }
    free(vs);
    w->sum = sum;
    w->reallocs = reallocs;
    return NULL;
}

int main(int argc, char **argv)
{
    bench_name = "realloc-grow";
    PARAMS_PARSE(argc, argv, "vectors grown by doubling realloc, several at once per thread", ps);
    long long threads = PARAM(ps, "threads", 1, 4096);
    uint64_t vectors = (uint64_t)PARAM(ps, "vectors", 1, 1LL << 32);
    long long max = PARAM(ps, "max", 32, 1LL << 40);
    g_live = (size_t)PARAM(ps, "live", 1, 1 << 16);
    long long budget = PARAM(ps, "budget", 1, 1LL << 30);
    g_seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 30);

    g_max = 32;
    while (g_max * 2 <= (size_t)max)
        g_max *= 2;
    while (g_max > (64u << 10) && (double)threads * (double)g_live * (double)g_max > (double)budget * 1048576.0)
        g_max /= 2;
    for (size_t m = g_max; m < (size_t)max && 2 * m <= (size_t)max; m *= 2)
        vectors *= 2;         /* same bytes grown with smaller vectors */

    worker_t *ws = xcalloc((size_t)threads, sizeof(worker_t));
    pthread_t *ts = xcalloc((size_t)threads, sizeof(pthread_t));
    uint64_t next = 0;
    for (long long t = 0; t < threads; t++) {
        ws[t].first = next;
        ws[t].count = vectors / (uint64_t)threads + ((uint64_t)t < vectors % (uint64_t)threads);
        next += ws[t].count;
    }
    double t0 = now_seconds();
    for (long long t = 0; t < threads; t++)
        bench_start(&ts[t], worker, &ws[t]);
    uint64_t sum = 0, reallocs = 0;
    for (long long t = 0; t < threads; t++) {
        bench_join(ts[t]);
        sum += ws[t].sum;
        reallocs += ws[t].reallocs;
    }
    double secs = now_seconds() - t0;
    free(ws);
    free(ts);
    char extra[96];
    snprintf(extra, sizeof extra, "\"max_used\":%zu,\"vectors_used\":%" PRIu64, g_max, vectors);
    BENCH_REPORT(ps, threads, reallocs, secs, sum, extra);
    return 0;
}
