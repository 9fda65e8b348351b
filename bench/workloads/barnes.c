/*
 * barnes — Barnes–Hut n-body simulation, as used by Streamflow (Schneider et
 * al., ISMM 2006; [Streamflow] in docs/sources.md) after SPLASH-2's BARNES,
 * with the octree rebuilt from freshly allocated cells at every time step.
 *
 * Models: a scientific code whose allocation is a small part of its work but
 * whose data structure is thrown away and rebuilt each step.  Per step: the
 * main thread sizes the bounding cube, builds the top two levels of the
 * octree (64 cells) and sorts the bodies into them; worker threads take
 * those cells from a shared pool and insert their bodies (malloc of one
 * 136-byte cell per subdivision); the main thread sums the top levels; the
 * workers compute the forces on a static share of the bodies with the
 * opening criterion `theta` and advance them (leapfrog); then the workers
 * free the subtrees, taken in the reverse order, so many frees are remote.
 *
 * Stresses: bursts of same-size allocation from several threads, bulk frees
 * of another thread's objects, and the locality of tree cells during the
 * compute-heavy force phase (a good allocator does no harm here: it is the
 * control case of the suite).
 *
 * Parameters: threads, bodies, steps, theta (x1000), seed.
 *
 * Checksum: a hash of the final positions and velocities (bit-exact; the
 * tree and the summation order do not depend on the threads, and the file is
 * compiled with -ffp-contract=off) plus the number of cells allocated.  Every
 * cell carries a tag verified before it is freed.
 */
#include <math.h>
#include <stdatomic.h>

#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "worker threads" },
    { "bodies", 20000, "bodies" },
    { "steps", 8, "time steps" },
    { "theta", 500, "opening criterion x 1000" },
    { "seed", 17, "random seed (initial conditions)" },
};

#define TOP_LEVELS 2
#define TOP_CELLS 64          /* 8^TOP_LEVELS */
#define MAX_DEPTH 60

typedef struct cell {
    double cx, cy, cz, half;  /* cube centre and half side */
    double mass, mx, my, mz;  /* total mass and centre of mass */
    struct cell *child[8];
    long body;                /* body index at a leaf, -1 inside */
    uint64_t tag;             /* mix64(serial), verified before free */
    uint64_t serial;
} cell_t;

typedef struct {
    double x, y, z, vx, vy, vz, ax, ay, az, m;
} body_t;

typedef struct {
    cell_t *cell;             /* one of the 64 top cells */
    long *list;               /* its bodies, in index order */
    size_t n, cap;
    uint64_t cells;           /* cells allocated below it this step */
} top_t;

enum phase { INSERT, FORCE, FREE };

typedef struct {
    int index;
    enum phase phase;
    pthread_t thread;
} worker_t;

static body_t *g_body;
static long g_n;
static int g_threads;
static double g_theta;
static top_t g_top[TOP_CELLS];
static cell_t *g_root;
static atomic_int g_next;
static const double DT = 0.01, EPS2 = 0.0025;

static cell_t *cell_new(double cx, double cy, double cz, double half, uint64_t serial)
{
    cell_t *c = xmalloc(sizeof(cell_t));
    c->cx = cx; c->cy = cy; c->cz = cz; c->half = half;
    c->mass = c->mx = c->my = c->mz = 0;
    for (int i = 0; i < 8; i++)
        c->child[i] = NULL;
    c->body = -1;
    c->serial = serial;
    c->tag = mix64(serial);
    return c;
}

static inline int octant(const cell_t *c, const body_t *b)
{
    return (b->x >= c->cx) | ((b->y >= c->cy) << 1) | ((b->z >= c->cz) << 2);
}

static cell_t *child_make(cell_t *c, int o, uint64_t serial)
{
    double h = c->half / 2;
    return cell_new(c->cx + (o & 1 ? h : -h), c->cy + (o & 2 ? h : -h),
                    c->cz + (o & 4 ? h : -h), h, serial);
}

/* Inserts body i under cell c (a leaf holding a body is split). */
static void cell_insert(cell_t *c, long i, top_t *t, int depth)
{
    if (depth > MAX_DEPTH)
        bench_die(BENCH_EXIT_CORRUPT, "octree deeper than %d: coincident bodies or overwritten cells", MAX_DEPTH);
    int o = octant(c, &g_body[i]);
    cell_t *ch = c->child[o];
    if (ch == NULL) {
        ch = c->child[o] = child_make(c, o, ((uint64_t)(t - g_top) << 40) | t->cells++);
        ch->body = i;
        return;
    }
    if (ch->body >= 0) {
        long j = ch->body;
        ch->body = -1;
        cell_insert(ch, j, t, depth + 1);
    }
    cell_insert(ch, i, t, depth + 1);
}

static void cell_summarise(cell_t *c)
{
    if (c->body >= 0) {
        body_t *b = &g_body[c->body];
        c->mass = b->m; c->mx = b->x; c->my = b->y; c->mz = b->z;
        return;
    }
    double m = 0, x = 0, y = 0, z = 0;
    for (int o = 0; o < 8; o++) {
        cell_t *ch = c->child[o];
        if (ch == NULL)
            continue;
        cell_summarise(ch);
        m += ch->mass; x += ch->mass * ch->mx; y += ch->mass * ch->my; z += ch->mass * ch->mz;
    }
    c->mass = m;
    if (m > 0) {
        c->mx = x / m; c->my = y / m; c->mz = z / m;
    }
}

/* Summarises the top levels only (their subtrees are already summarised). */
static void top_summarise(cell_t *c, int level)
{
    if (level == TOP_LEVELS)
        return;
    double m = 0, x = 0, y = 0, z = 0;
    for (int o = 0; o < 8; o++) {
        cell_t *ch = c->child[o];
        top_summarise(ch, level + 1);
        m += ch->mass; x += ch->mass * ch->mx; y += ch->mass * ch->my; z += ch->mass * ch->mz;
    }
    c->mass = m;
    if (m > 0) {
        c->mx = x / m; c->my = y / m; c->mz = z / m;
    }
}

static void force_on(cell_t *c, const body_t *b, long self, double *ax, double *ay, double *az)
{
    if (c->mass == 0 || c->body == self)
        return;
    double dx = c->mx - b->x, dy = c->my - b->y, dz = c->mz - b->z;
    double d2 = dx * dx + dy * dy + dz * dz;
    double size = 2 * c->half;
    if (c->body >= 0 || size * size < g_theta * g_theta * d2) {
        double r2 = d2 + EPS2;
        double inv = c->mass / (r2 * sqrt(r2));
        *ax += dx * inv; *ay += dy * inv; *az += dz * inv;
        return;
    }
    for (int o = 0; o < 8; o++)
        if (c->child[o])
            force_on(c->child[o], b, self, ax, ay, az);
}

static uint64_t cell_free(cell_t *c)
{
    uint64_t n = 0;
    for (int o = 0; o < 8; o++)
        if (c->child[o])
            n += cell_free(c->child[o]);
    if (c->tag != mix64(c->serial))
        bench_die(BENCH_EXIT_CORRUPT, "cell %" PRIx64 " corrupted before free", c->serial);
    free(c);
    return n + 1;
}

static void *worker(void *arg)
{
    worker_t *w = arg;
    if (w->phase == FORCE) {
        long lo = g_n * w->index / g_threads, hi = g_n * (w->index + 1) / g_threads;
        for (long i = lo; i < hi; i++) {
            body_t *b = &g_body[i];
            double ax = 0, ay = 0, az = 0;
            force_on(g_root, b, i, &ax, &ay, &az);
            b->ax = ax; b->ay = ay; b->az = az;
        }
        return NULL;
    }
    int k;
    while ((k = atomic_fetch_add_explicit(&g_next, 1, memory_order_relaxed)) < TOP_CELLS) {
        if (w->phase == INSERT) {
            top_t *t = &g_top[k];
            for (size_t j = 0; j < t->n; j++)
                cell_insert(t->cell, t->list[j], t, 0);
            cell_summarise(t->cell);
        } else {
            top_t *t = &g_top[TOP_CELLS - 1 - k];
            for (int o = 0; o < 8; o++)
                if (t->cell->child[o])
                    t->cells -= cell_free(t->cell->child[o]);
            if (t->cells != 0)
                bench_die(BENCH_EXIT_CORRUPT, "top cell %d: cell count mismatch", TOP_CELLS - 1 - k);
        }
    }
    return NULL;
}

static void run_phase(worker_t *ws, enum phase ph)
{
    atomic_store(&g_next, 0);
    for (int t = 0; t < g_threads; t++) {
        ws[t].phase = ph;
        bench_start(&ws[t].thread, worker, &ws[t]);
    }
    for (int t = 0; t < g_threads; t++)
        bench_join(ws[t].thread);
}

static void top_build(cell_t *c, int level, int *next)
{
    if (level == TOP_LEVELS) {
        g_top[(*next)++].cell = c;
        return;
    }
    for (int o = 0; o < 8; o++) {
        c->child[o] = child_make(c, o, (1ull << 62) + (uint64_t)*next * 8 + (uint64_t)o);
        top_build(c->child[o], level + 1, next);
    }
}

static int top_index(const body_t *b)
{
    cell_t *c = g_root;
    int idx = 0;
    for (int level = 0; level < TOP_LEVELS; level++) {
        int o = octant(c, b);
        idx = idx * 8 + o;
        c = c->child[o];
    }
    return idx;
}

static void top_free(cell_t *c, int level)
{
    if (level < TOP_LEVELS)
        for (int o = 0; o < 8; o++)
            top_free(c->child[o], level + 1);
    free(c);
}

int main(int argc, char **argv)
{
    bench_name = "barnes";
    PARAMS_PARSE(argc, argv, "Barnes-Hut n-body, octree rebuilt every step", ps);
    g_threads = (int)PARAM(ps, "threads", 1, 4096);
    g_n = (long)PARAM(ps, "bodies", 2, 1L << 26);
    long steps = (long)PARAM(ps, "steps", 1, 1L << 20);
    g_theta = (double)PARAM(ps, "theta", 1, 2000) / 1000.0;
    uint64_t seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 62);

    /* uniform ball of radius 1, small random velocities, equal masses */
    g_body = xcalloc((size_t)g_n, sizeof(body_t));
    rng_t r = rng_make(seed, 0);
    for (long i = 0; i < g_n; i++) {
        body_t *b = &g_body[i];
        do {
            b->x = 2 * rng_unit(&r) - 1; b->y = 2 * rng_unit(&r) - 1; b->z = 2 * rng_unit(&r) - 1;
        } while (b->x * b->x + b->y * b->y + b->z * b->z > 1);
        b->vx = 0.1 * (rng_unit(&r) - 0.5); b->vy = 0.1 * (rng_unit(&r) - 0.5);
        b->vz = 0.1 * (rng_unit(&r) - 0.5);
        b->m = 1.0 / (double)g_n;
    }
    worker_t *ws = xcalloc((size_t)g_threads, sizeof(worker_t));
    for (int t = 0; t < g_threads; t++)
        ws[t].index = t;

    uint64_t cells_total = 0;
    double t0 = now_seconds();
    for (long s = 0; s < steps; s++) {
        double lo = INFINITY, hi = -INFINITY;
        for (long i = 0; i < g_n; i++) {
            const body_t *b = &g_body[i];
            lo = fmin(lo, fmin(b->x, fmin(b->y, b->z)));
            hi = fmax(hi, fmax(b->x, fmax(b->y, b->z)));
        }
        double half = (hi - lo) / 2 * 1.0001 + 1e-9, mid = (hi + lo) / 2;
        g_root = cell_new(mid, mid, mid, half, 1ull << 63);
        int next = 0;
        top_build(g_root, 0, &next);
        for (int k = 0; k < TOP_CELLS; k++)
            g_top[k].n = 0;
        for (long i = 0; i < g_n; i++) {
            top_t *t = &g_top[top_index(&g_body[i])];
            if (t->n == t->cap) {
                t->cap = t->cap ? 2 * t->cap : 64;
                t->list = xrealloc(t->list, t->cap * sizeof(long));
            }
            t->list[t->n++] = i;
        }
        run_phase(ws, INSERT);
        top_summarise(g_root, 0);
        run_phase(ws, FORCE);
        for (int k = 0; k < TOP_CELLS; k++)
            cells_total += g_top[k].cells;
        run_phase(ws, FREE);
        top_free(g_root, 0);
        for (long i = 0; i < g_n; i++) {   /* leapfrog (kick-drift) */
            body_t *b = &g_body[i];
            b->vx += b->ax * DT; b->vy += b->ay * DT; b->vz += b->az * DT;
            b->x += b->vx * DT; b->y += b->vy * DT; b->z += b->vz * DT;
        }
    }
    double secs = now_seconds() - t0;

    uint64_t sum = cells_total;
    for (long i = 0; i < g_n; i++) {
        uint64_t w[6];
        memcpy(&w[0], &g_body[i].x, 8); memcpy(&w[1], &g_body[i].y, 8);
        memcpy(&w[2], &g_body[i].z, 8); memcpy(&w[3], &g_body[i].vx, 8);
        memcpy(&w[4], &g_body[i].vy, 8); memcpy(&w[5], &g_body[i].vz, 8);
        for (int j = 0; j < 6; j++)
            sum = mix64(sum ^ w[j]);
    }
    for (int k = 0; k < TOP_CELLS; k++)
        free(g_top[k].list);
    free(ws);
    free(g_body);
    char extra[64];
    snprintf(extra, sizeof extra, "\"cells\":%" PRIu64, cells_total);
    BENCH_REPORT(ps, g_threads, (uint64_t)g_n * (uint64_t)steps, secs, sum, extra);
    return 0;
}
