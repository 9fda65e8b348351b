/*
 * cover — a two-level logic minimiser's covers: small bit-vector cubes,
 * families of them in arrays grown by realloc, split and merged by a
 * recursion, on a small heap (the pattern of the "espresso" row of the
 * field's benchmark suite, whose peak RSS is what it measures there).
 *
 * Models: a cube is a bit vector of `w` 32-bit words (3 to 12, drawn per
 * pass: the function's variable count), its last word a check of the
 * others.  A cover is a small header and one array of cubes, grown by
 * realloc to 1.5 times its capacity (plus one) whenever it is full, from a
 * capacity of 4.  A pass builds a cover of `cubes` to 8 * `cubes` random
 * cubes (about 0.5-1 MiB at the top) and minimises it by splitting: the
 * cover is split on a variable into two new covers (a third of the cubes,
 * independent of the variable, go into both, copied through a temporary
 * cube), each half is minimised recursively to `depth` levels and freed,
 * and the two results are merged, cube by cube, into a new cover.  At the
 * leaves each cube is turned into a new one through a temporary cube (a
 * malloc and a free per cube) and three in four are kept.  The result
 * replaces the thread's previous one, so two top-level covers live at once.
 * The live set stays a few MiB; everything else is churn: short-lived
 * arrays of every size from 64 B to about 1 MiB, each grown through many
 * sizes by realloc and freed soon after, beside tiny cubes.
 *
 * Stresses: realloc growth across the size classes and into large blocks,
 * with the old arrays freed at once (does the allocator reuse them, or
 * take fresh memory?), and peak RSS against a small live set.
 *
 * Parameters: threads (the passes are dealt round-robin; each thread
 * minimises its own), passes, cubes, depth, seed.
 *
 * Checksum: the sum over the passes of every result cube's check word and
 * the result's size; pass i draws from its own random stream, so the
 * checksum does not depend on the thread count.  Every cube is verified as
 * it is copied and before its cover or its temporary block is freed, and a
 * cover's header carries a tag checked on every append and at its free, so
 * memory handed out twice is caught, not summed.
 */
#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "threads (the passes are dealt round-robin)" },
    { "passes", 200, "covers minimised, in all" },
    { "cubes", 500, "a pass's input cover has cubes to 8 * cubes cubes" },
    { "depth", 6, "levels of splitting" },
    { "seed", 41, "random seed" },
};

typedef struct {
    uint32_t *cube;           /* count cubes of w words, room for cap */
    uint32_t w, count, cap;
    uint32_t tag;             /* COVER_TAG ^ w: checked when the cover is freed */
} cover_t;

#define COVER_TAG 0x5eedc0feu

typedef struct {
    uint64_t first;           /* this thread does passes first, first + T, ... */
    uint64_t sum, calls;
} worker_t;

static unsigned g_depth, g_threads;
static uint64_t g_passes, g_cubes, g_seed;

/* The check word of a cube: a multiply-xor hash of its other words (cheap,
 * so that the checks, made on every copy and free, leave the allocator's
 * share of the time large). */
static uint32_t cube_check(const uint32_t *c, uint32_t w)
{
    uint64_t h = w * 0x9e3779b97f4a7c15ull;
    for (uint32_t i = 0; i + 1 < w; i++)
        h = (h ^ c[i]) * 0xff51afd7ed558ccdull;
    return (uint32_t)(h >> 32);
}

static void cube_verify(const uint32_t *c, uint32_t w)
{
    if (c[w - 1] != cube_check(c, w))
        bench_die(BENCH_EXIT_CORRUPT, "a cube of %u words was corrupted", w);
}

static void cover_check(const cover_t *f)
{
    if (f->tag != (COVER_TAG ^ f->w) || f->w < 3 || f->w > 12 || f->count > f->cap)
        bench_die(BENCH_EXIT_CORRUPT, "a cover's header was corrupted");
}

static cover_t *cover_new(uint32_t w, uint64_t *calls)
{
    cover_t *f = xmalloc(sizeof *f);
    f->w = w;
    f->tag = COVER_TAG ^ w;
    f->count = 0;
    f->cap = 4;
    f->cube = xmalloc((size_t)f->cap * w * 4);
    *calls += 2;
    return f;
}

/* Frees f after checking its header and every cube: memory handed out
 * twice (a new cover's header or array laid over a live one's) shows
 * there. */
static void cover_free(cover_t *f, uint64_t *calls)
{
    cover_check(f);
    for (uint32_t i = 0; i < f->count; i++)
        cube_verify(f->cube + (size_t)i * f->w, f->w);
    free(f->cube);
    free(f);
    *calls += 2;
}

/* Appends a copy of cube c (verified) to f (its header checked), growing f
 * by realloc. */
static void cover_add(cover_t *f, const uint32_t *c, uint64_t *calls)
{
    cover_check(f);
    cube_verify(c, f->w);
    if (f->count == f->cap) {
        f->cap += f->cap / 2 + 1;
        f->cube = xrealloc(f->cube, (size_t)f->cap * f->w * 4);
        (*calls)++;
    }
    memcpy(f->cube + (size_t)f->count * f->w, c, f->w * 4);
    f->count++;
}

static uint32_t *cover_at(const cover_t *f, uint32_t i)
{
    return f->cube + (size_t)i * f->w;
}

static cover_t *minimise(const cover_t *f, unsigned depth, rng_t *r, uint64_t *calls)
{
    uint32_t w = f->w;
    if (depth == 0 || f->count < 8) { /* a leaf: each cube through a temporary one */
        cover_t *res = cover_new(w, calls);
        for (uint32_t i = 0; i < f->count; i++) {
            uint32_t *t = xmalloc(w * 4);
            memcpy(t, cover_at(f, i), w * 4);
            cube_verify(t, w);
            for (uint32_t k = 0; k + 1 < w; k++)
                t[k] ^= (uint32_t)rng_next(r);
            t[w - 1] = cube_check(t, w);
            if (rng_next(r) % 4 != 0)
                cover_add(res, t, calls);
            cube_verify(t, w);
            free(t);
            *calls += 2;
        }
        return res;
    }
    cover_t *a = cover_new(w, calls), *b = cover_new(w, calls);
    for (uint32_t i = 0; i < f->count; i++) {
        const uint32_t *c = cover_at(f, i);
        uint64_t x = rng_next(r);
        if (x % 3 == 0) { /* independent of the variable: in both halves */
            uint32_t *t = xmalloc(w * 4);
            memcpy(t, c, w * 4);
            cover_add(a, t, calls);
            cover_add(b, t, calls);
            cube_verify(t, w);
            free(t);
            *calls += 2;
        } else {
            cover_add(x & 8 ? a : b, c, calls);
        }
    }
    cover_t *ra = minimise(a, depth - 1, r, calls);
    cover_free(a, calls);
    cover_t *rb = minimise(b, depth - 1, r, calls);
    cover_free(b, calls);
    cover_t *res = cover_new(w, calls);
    for (uint32_t i = 0; i < ra->count; i++)
        cover_add(res, cover_at(ra, i), calls);
    for (uint32_t i = 0; i < rb->count; i++)
        cover_add(res, cover_at(rb, i), calls);
    cover_free(ra, calls);
    cover_free(rb, calls);
    return res;
}

static void *worker(void *arg)
{
    worker_t *wk = arg;
    cover_t *kept = NULL;
    uint64_t sum = 0, calls = 0;
    for (uint64_t pass = wk->first; pass < g_passes; pass += g_threads) {
        rng_t r = rng_make(g_seed, pass);
        uint32_t w = (uint32_t)rng_range(&r, 3, 12);
        uint64_t n = rng_range(&r, g_cubes, 8 * g_cubes);
        cover_t *in = cover_new(w, &calls);
        uint32_t c[12];
        for (uint64_t i = 0; i < n; i++) {
            for (uint32_t k = 0; k + 1 < w; k++)
                c[k] = (uint32_t)rng_next(&r);
            c[w - 1] = cube_check(c, w);
            cover_add(in, c, &calls);
        }
        cover_t *res = minimise(in, g_depth, &r, &calls);
        cover_free(in, &calls);
        for (uint32_t i = 0; i < res->count; i++) {
            const uint32_t *q = cover_at(res, i);
            cube_verify(q, w);
            sum += q[w - 1];
        }
        sum += res->count;
        if (kept)
            cover_free(kept, &calls);
        kept = res;
    }
    if (kept)
        cover_free(kept, &calls);
    wk->sum = sum;
    wk->calls = calls;
    return NULL;
}

int main(int argc, char **argv)
{
    bench_name = "cover";
    PARAMS_PARSE(argc, argv, "a logic minimiser's covers: cubes, realloc'ed arrays, split and merged", ps);
    g_threads = (unsigned)PARAM(ps, "threads", 1, 4096);
    g_passes = (uint64_t)PARAM(ps, "passes", 1, 1LL << 32);
    g_cubes = (uint64_t)PARAM(ps, "cubes", 1, 1 << 20);
    g_depth = (unsigned)PARAM(ps, "depth", 0, 20);
    g_seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 30);

    worker_t *ws = xcalloc(g_threads, sizeof(worker_t));
    pthread_t *ts = xcalloc(g_threads, sizeof(pthread_t));
    double t0 = now_seconds();
    for (unsigned t = 0; t < g_threads; t++) {
        ws[t].first = t;
        bench_start(&ts[t], worker, &ws[t]);
    }
    uint64_t sum = 0, calls = 0;
    for (unsigned t = 0; t < g_threads; t++) {
        bench_join(ts[t]);
        sum += ws[t].sum;
        calls += ws[t].calls;
    }
    double secs = now_seconds() - t0;
    free(ws);
    free(ts);
    BENCH_REPORT(ps, g_threads, calls, secs, sum, NULL);
    return 0;
}
