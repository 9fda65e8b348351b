/*
 * workload.h — what every benchmark workload in bench/workloads/ shares.
 *
 * Owns: argument parsing (name=value pairs), the deterministic random number
 * generator, the 64-bit mixer used for checksums, object tagging (write a
 * pattern derived from an object id, verify it before free), the one-line
 * JSON result, a blocking bounded queue for hand-offs between threads, and
 * wall-clock timing.  Header-only (static functions) so that each workload
 * stays one C file that links only libc and pthread: the allocator under
 * test comes in through LD_PRELOAD, never through the link line.
 *
 * Invariants every workload keeps:
 *   - same arguments and seed => same checksum, on every allocator and for
 *     every thread interleaving;  the checksum folds values that were
 *     written into objects and verified before the objects were freed;
 *   - a verification failure prints one line on stderr and exits with
 *     status 3 (BENCH_EXIT_CORRUPT); bad arguments exit with status 2.
 *
 * The queue and the timing use libc only; none of this allocates on a hot
 * path except where a workload asks it to (the queue's ring, once).
 */
#ifndef MM_BENCH_WORKLOAD_H
#define MM_BENCH_WORKLOAD_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define BENCH_EXIT_USAGE   2
#define BENCH_EXIT_CORRUPT 3

/* ------------------------------------------------------------------ */
/* failure                                                              */
/* ------------------------------------------------------------------ */

static const char *bench_name = "workload";

__attribute__((noreturn, format(printf, 2, 3)))
static inline void bench_die(int status, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", bench_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    exit(status);
}

/* A failed allocation is not a benchmark result: stop loudly. */
static inline void *bench_check_alloc(void *p, size_t n)
{
    if (p == NULL && n != 0)
        bench_die(BENCH_EXIT_CORRUPT, "allocation of %zu bytes failed", n);
    return p;
}

#define xmalloc(n)      bench_check_alloc(malloc(n), (n))
#define xcalloc(k, n)   bench_check_alloc(calloc((k), (n)), (k) * (n))
#define xrealloc(p, n)  bench_check_alloc(realloc((p), (n)), (n))

/* ------------------------------------------------------------------ */
/* parameters: name=value pairs on the command line                     */
/* ------------------------------------------------------------------ */

typedef struct {
    const char *name;   /* as typed on the command line */
    long long value;    /* default, replaced by the parsed value */
    const char *help;
} param_t;

static inline void params_usage(const char *what, const param_t *ps, size_t n)
{
    fprintf(stderr, "usage: %s [name=value ...]\n%s\n\nparameters (default):\n",
            bench_name, what);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "  %-10s %-12lld %s\n", ps[i].name, ps[i].value, ps[i].help);
    fprintf(stderr, "values accept a K, M or G suffix (powers of 1024)\n");
}

/* Parses argv into ps; "--name=value" is accepted as well as "name=value". */
static inline void params_parse(int argc, char **argv, const char *what, param_t *ps, size_t n)
{
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            params_usage(what, ps, n);
            exit(0);
        }
        while (*arg == '-')
            arg++;
        const char *eq = strchr(arg, '=');
        size_t i = 0;
        if (eq != NULL) {
            for (i = 0; i < n; i++)
                if (strlen(ps[i].name) == (size_t)(eq - arg) &&
                    strncmp(ps[i].name, arg, (size_t)(eq - arg)) == 0)
                    break;
        }
        if (eq == NULL || i == n) {
            params_usage(what, ps, n);
            bench_die(BENCH_EXIT_USAGE, "unknown argument '%s'", argv[a]);
        }
        char *end;
        errno = 0;
        long long v = strtoll(eq + 1, &end, 10);
        switch (*end) {
        case 'K': case 'k': v <<= 10; end++; break;
        case 'M': case 'm': v <<= 20; end++; break;
        case 'G': case 'g': v <<= 30; end++; break;
        default: break;
        }
        if (errno != 0 || end == eq + 1 || *end != '\0')
            bench_die(BENCH_EXIT_USAGE, "bad value in '%s'", argv[a]);
        ps[i].value = v;
    }
}

static inline long long param_get(const param_t *ps, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ps[i].name, name) == 0)
            return ps[i].value;
    bench_die(BENCH_EXIT_USAGE, "internal: no parameter '%s'", name);
}

/* Value of a parameter that must lie in [lo, hi]. */
static inline long long param_range(const param_t *ps, size_t n, const char *name,
                             long long lo, long long hi)
{
    long long v = param_get(ps, n, name);
    if (v < lo || v > hi)
        bench_die(BENCH_EXIT_USAGE, "%s=%lld out of range [%lld, %lld]", name, v, lo, hi);
    return v;
}

#define PARAMS_PARSE(argc, argv, what, ps) \
    params_parse((argc), (argv), (what), (ps), sizeof(ps) / sizeof((ps)[0]))
#define PARAM(ps, name, lo, hi) \
    param_range((ps), sizeof(ps) / sizeof((ps)[0]), (name), (lo), (hi))

/* ------------------------------------------------------------------ */
/* deterministic randomness and mixing                                   */
/* ------------------------------------------------------------------ */

/* splitmix64's finaliser: a bijection on 64-bit words, good avalanche. */
static inline uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

typedef struct {
    uint64_t s;
} rng_t;

/* A stream per (seed, stream id): threads get independent, fixed streams. */
static inline rng_t rng_make(uint64_t seed, uint64_t stream)
{
    rng_t r = { mix64(seed * 0x100000001b3ull ^ mix64(stream)) };
    return r;
}

static inline uint64_t rng_next(rng_t *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    uint64_t z = r->s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi); hi > lo.  The tiny modulo bias does not matter here. */
static inline uint64_t rng_range(rng_t *r, uint64_t lo, uint64_t hi)
{
    return lo + rng_next(r) % (hi - lo);
}

static inline double rng_unit(rng_t *r)
{
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* ------------------------------------------------------------------ */
/* object tags: write a pattern, verify it before free                   */
/* ------------------------------------------------------------------ */

/*
 * tag_fill writes words derived from `id` at the start, the middle and the
 * end of an object of n bytes (bytes only, for n < 8).  Two live objects that
 * overlap, or an allocator that hands out memory it also uses, make
 * tag_verify fail.  Cost: three stores, so the workload stays an allocator
 * benchmark rather than a memset benchmark.
 */
static inline void tag_fill(void *p, size_t n, uint64_t id)
{
    unsigned char *b = p;
    uint64_t v = mix64(id);
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            b[i] = (unsigned char)(v >> (8 * i));
        return;
    }
    /* the three words never overlap: w2 needs n >= 16, w1 needs n >= 24 */
    uint64_t w0 = v, w1 = v ^ 0x5555555555555555ull, w2 = ~v;
    memcpy(b, &w0, 8);
    if (n >= 16)
        memcpy(b + n - 8, &w2, 8);
    if (n >= 24)
        memcpy(b + ((n / 2) & ~(size_t)7), &w1, 8);
}

static inline bool tag_ok(const void *p, size_t n, uint64_t id)
{
    const unsigned char *b = p;
    uint64_t v = mix64(id);
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            if (b[i] != (unsigned char)(v >> (8 * i)))
                return false;
        return true;
    }
    uint64_t w;
    memcpy(&w, b, 8);
    if (w != v)
        return false;
    if (n >= 16) {
        memcpy(&w, b + n - 8, 8);
        if (w != ~v)
            return false;
    }
    if (n >= 24) {
        memcpy(&w, b + ((n / 2) & ~(size_t)7), 8);
        if (w != (v ^ 0x5555555555555555ull))
            return false;
    }
    return true;
}

/* Verifies and returns the value that the checksum folds in. */
static inline uint64_t tag_verify(const void *p, size_t n, uint64_t id)
{
    if (!tag_ok(p, n, id))
        bench_die(BENCH_EXIT_CORRUPT,
                  "object %" PRIu64 " (%zu bytes at %p) corrupted before free", id, n, p);
    return mix64(id ^ 0xc0ffee);
}

/* ------------------------------------------------------------------ */
/* time and result                                                       */
/* ------------------------------------------------------------------ */

static inline double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline long maxrss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/*
 * Prints the one JSON line the harness reads:
 *   {"workload":..., "threads":..., "ops":..., "seconds":..., "ops_per_sec":...,
 *    "checksum":"<16 hex>", "maxrss_kb":..., "params":{...}, <extra>}
 * `extra` is either NULL or a string of further "key":value pairs.
 */
static inline void bench_report(const param_t *ps, size_t n, long long threads, uint64_t ops,
                         double seconds, uint64_t checksum, const char *extra)
{
    printf("{\"workload\":\"%s\",\"threads\":%lld,\"ops\":%" PRIu64
           ",\"seconds\":%.6f,\"ops_per_sec\":%.1f,\"checksum\":\"%016" PRIx64
           "\",\"maxrss_kb\":%ld,\"params\":{",
           bench_name, threads, ops, seconds, seconds > 0 ? (double)ops / seconds : 0.0,
           checksum, maxrss_kb());
    for (size_t i = 0; i < n; i++)
        printf("%s\"%s\":%lld", i ? "," : "", ps[i].name, ps[i].value);
    printf("}%s%s}\n", extra ? "," : "", extra ? extra : "");
    fflush(stdout);
}

#define BENCH_REPORT(ps, threads, ops, secs, sum, extra) \
    bench_report((ps), sizeof(ps) / sizeof((ps)[0]), (threads), (ops), (secs), (sum), (extra))

/* ------------------------------------------------------------------ */
/* threads                                                               */
/* ------------------------------------------------------------------ */

static inline void bench_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
    int rc = pthread_create(t, NULL, fn, arg);
    if (rc != 0)
        bench_die(BENCH_EXIT_CORRUPT, "pthread_create: %s", strerror(rc));
}

static inline void bench_join(pthread_t t)
{
    int rc = pthread_join(t, NULL);
    if (rc != 0)
        bench_die(BENCH_EXIT_CORRUPT, "pthread_join: %s", strerror(rc));
}

/* ------------------------------------------------------------------ */
/* bounded blocking queue of pointers                                    */
/* ------------------------------------------------------------------ */

/*
 * bq_t: a ring of `cap` pointers under one mutex.  push blocks while full,
 * pop blocks while empty; after bq_close, pop drains what is left and then
 * returns NULL.  Many producers and many consumers may share one queue.
 * A mutex (not a spin loop) because the benchmarks oversubscribe two cores
 * with up to hundreds of threads: spinning would measure the scheduler.
 */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t not_empty;
    pthread_cond_t not_full;
    void **ring;        /* cap slots, owned by the queue */
    size_t cap, head, count;
    bool closed;
} bq_t;

static inline void bq_init(bq_t *q, size_t cap)
{
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    q->ring = xmalloc(cap * sizeof(void *));
    q->cap = cap;
    q->head = q->count = 0;
    q->closed = false;
}

static inline void bq_destroy(bq_t *q)
{
    free(q->ring);
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
}

static inline void bq_push(bq_t *q, void *item)
{
    pthread_mutex_lock(&q->lock);
    while (q->count == q->cap)
        pthread_cond_wait(&q->not_full, &q->lock);
    q->ring[(q->head + q->count) % q->cap] = item;
    q->count++;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
}

static inline void *bq_pop(bq_t *q)
{
    pthread_mutex_lock(&q->lock);
    while (q->count == 0 && !q->closed)
        pthread_cond_wait(&q->not_empty, &q->lock);
    void *item = NULL;
    if (q->count > 0) {
        item = q->ring[q->head];
        q->head = (q->head + 1) % q->cap;
        q->count--;
        pthread_cond_signal(&q->not_full);
    }
    pthread_mutex_unlock(&q->lock);
    return item;
}

static inline void bq_close(bq_t *q)
{
    pthread_mutex_lock(&q->lock);
    q->closed = true;
    pthread_cond_broadcast(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
}

#endif /* MM_BENCH_WORKLOAD_H */
