/*
 * mesh — parallel 2-D Delaunay refinement over subdomains, the allocation
 * pattern of the mesh generators studied in "Memory allocators for parallel
 * mesh generation" (PCDM, MPCDM, PDR; [MeshAlloc] in docs/sources.md) and
 * of Streamflow's MPCDM runs ([Streamflow]).
 *
 * Models: a domain of T unit squares (a cols x rows grid, T = threads), one
 * subdomain per thread.  Each thread triangulates its square, inserts
 * `seeds`/T random points, then refines (Ruppert's algorithm with
 * Bowyer–Watson insertion) until no triangle has an angle below 20 degrees
 * or an area above the bound that yields about `triangles` triangles in all.
 * A circumcentre that falls outside the square, or encroaches on a boundary
 * edge, splits that boundary edge at its midpoint instead; when the edge is
 * shared with a neighbour, the thread mallocs a split-edge message and posts
 * it to the neighbour, which inserts the same point and frees the message
 * (the MPCDM/PDR pattern).  Work proceeds in phases separated by barriers,
 * messages of a phase being handled, sorted, at the start of the next, so
 * the final mesh does not depend on the interleaving.
 *
 * Objects: triangles of 56 bytes (three vertex and three neighbour
 * pointers), points of 24 bytes, messages of 32 bytes; millions of them with
 * the default arguments.  Triangles die in every cavity and are replaced by
 * more, so memory grows monotonically while much of it is recycled.
 *
 * Stresses: small-object recycling at a very high rate (the size classes of
 * 32 and 64 bytes), monotonic heap growth, cross-thread frees of messages,
 * and the locality of objects allocated together (cavities).
 *
 * Parameters: threads (= subdomains), triangles (target, in all), seeds
 * (random initial points, in all), seed, alloc.
 *
 * alloc: where triangles, points and messages come from (the study's
 * configurations; the other memory, the vectors, always from malloc):
 *   0 malloc          malloc and free;
 *   1 custom          the application's own pools, as mesh generators write
 *                     them: per thread and per type, 64 KiB blocks from the
 *                     OS (mmap), bump allocation in the current block, dead
 *                     objects recycled through a thread-local vector (one
 *                     store to free, one load to reuse), no synchronisation;
 *                     a message is recycled by the thread that consumed it;
 *                     the blocks go back (munmap) at the end;
 *   2 custom+pageman  the same pools, their blocks from mmalloc's page
 *                     manager (mm_page_block_alloc / mm_page_block_free);
 *   3 pool            mmalloc's object pools (mm_pool_alloc / mm_pool_free),
 *                     one per type, shared by the threads;
 *   4 pool-unchecked  the same, freed with mm_pool_free_unchecked (no
 *                     page-map check of the pointer).
 * Modes 2 to 4 need mmalloc's API: the binary built with -DMESH_MMALLOC and
 * linked with libmmalloc (mesh-mm) has them; the plain one refuses them.
 *
 * Verification (before any free): every triangle is counter-clockwise, the
 * neighbour links are symmetric, the areas sum to the square's area, a
 * sample of one triangle in 7 is locally Delaunay across all its edges, and
 * neighbouring subdomains have the same vertices on their shared edges.
 * Checksum: the triangle and vertex counts of every subdomain and a hash of
 * every vertex's coordinates, each point's stored hash being verified before
 * it is freed.  Deterministic for given arguments (including threads).
 */
#include <math.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "workload.h"
#ifdef MESH_MMALLOC
#include <mmalloc.h>
#endif

static param_t ps[] = {
    { "threads", 2, "threads = subdomains (a near-square grid of unit squares)" },
    { "triangles", 1000000, "target number of triangles, in all" },
    { "seeds", 2000, "random initial points, in all" },
    { "seed", 23, "random seed" },
    { "alloc", 0, "0 malloc, 1 custom pools (blocks from mmap), 2 custom pools (blocks from "
                  "mmalloc's page manager), 3 mmalloc's object pools, 4 the same with unchecked frees" },
};

enum { ALLOC_MALLOC = 0, ALLOC_CUSTOM = 1, ALLOC_CUSTOM_PAGEMAN = 2, ALLOC_POOL = 3,
       ALLOC_POOL_UNCHECKED = 4 };
static const char *const alloc_names[] = { "malloc", "custom", "custom+pageman", "pool",
                                           "pool-unchecked" };
static int g_alloc;

#define MESH_EXIT_INVARIANT 4   /* the geometry went wrong: a bug, not a slow allocator */

typedef struct point {
    double x, y;
    uint64_t check;           /* point_hash(x, y), verified before free */
} point_t;

/*
 * v[0..2] counter-clockwise; n[i] is the neighbour across the edge opposite
 * v[i] (from v[i+1] to v[i+2]), NULL on the subdomain's boundary.
 */
typedef struct tri {
    point_t *v[3];
    struct tri *n[3];
    uint32_t mark;            /* epoch of the last cavity / walk that saw it */
    uint8_t queued;           /* in the refinement queue */
    uint8_t dead;             /* removed from the mesh while queued */
} tri_t;

_Static_assert(sizeof(tri_t) <= 64, "a triangle must stay a 64-byte object");

typedef struct msg {
    double x, y;
    uint64_t check;
    struct msg *next;
} msg_t;

typedef struct {
    point_t *a, *b;           /* boundary edge a -> b, counter-clockwise seen from the cavity */
    tri_t *outer;             /* triangle across it, NULL on the domain boundary */
    tri_t *old;               /* cavity triangle that owned the edge */
} edge_t;

#define VEC(T) struct { T *at; size_t n, cap; }
#define VEC_PUSH(v, x) do { \
        if ((v).n == (v).cap) { \
            (v).cap = (v).cap ? 2 * (v).cap : 64; \
            (v).at = xrealloc((v).at, (v).cap * sizeof(*(v).at)); \
        } \
        (v).at[(v).n++] = (x); \
    } while (0)

/* A custom pool of one object type for one thread (alloc=1, 2). */
#define CUSTOM_BLOCK ((size_t)64 << 10)
typedef struct fixpool {
    size_t size;
    VEC(void *) dead;         /* freed objects, reused last in first out */
    char *bump, *end;         /* the rest of the current block */
    VEC(void *) blocks;
} fixpool_t;

typedef struct sub {
    int i, j;                 /* grid position */
    fixpool_t tris, pts, msgs; /* alloc=1, 2 */
    double x0, y0, x1, y1;    /* the unit square */
    tri_t *start;             /* some live triangle */
    uint32_t epoch;
    VEC(point_t *) points;    /* every vertex, for the final free */
    VEC(tri_t *) cavity;
    VEC(edge_t) edges;
    VEC(tri_t *) fresh;       /* triangles made by the last insertion */
    VEC(tri_t *) stack;       /* walks over the whole mesh */
    struct { tri_t **at; size_t head, n, cap; } queue;  /* ring: triangles to check */
    pthread_mutex_t inbox_lock;
    msg_t *inbox[2];          /* messages of even / odd phases */
    unsigned phase;
    uint64_t triangles, tris_made, msgs_sent, msgs_used, sum;
    rng_t rng;
    pthread_t thread;
} sub_t;

static sub_t *g_sub;
static int g_cols, g_rows, g_threads;
static double g_amax;
static size_t g_max_points;
static pthread_barrier_t g_barrier;
static atomic_ullong g_sent[3];   /* messages sent in phase p, at [p % 3] */

static const double B2 = 2.1371;  /* (1 / (2 sin 20deg))^2: circumradius^2 / shortest edge^2 */

__attribute__((noreturn)) static void mesh_fail(const sub_t *s, const char *what)
{
    bench_die(MESH_EXIT_INVARIANT, "subdomain (%d,%d): %s", s->i, s->j, what);
}

static inline uint64_t point_hash(double x, double y)
{
    uint64_t a, b;
    memcpy(&a, &x, 8);
    memcpy(&b, &y, 8);
    return mix64(a ^ mix64(b));
}

static inline double orient(const point_t *a, const point_t *b, double px, double py)
{
    return (b->x - a->x) * (py - a->y) - (b->y - a->y) * (px - a->x);
}

/* > 0 when (px, py) lies strictly inside the circumcircle of t. */
static double incircle(const tri_t *t, double px, double py)
{
    double adx = t->v[0]->x - px, ady = t->v[0]->y - py;
    double bdx = t->v[1]->x - px, bdy = t->v[1]->y - py;
    double cdx = t->v[2]->x - px, cdy = t->v[2]->y - py;
    return (adx * adx + ady * ady) * (bdx * cdy - cdx * bdy) +
           (bdx * bdx + bdy * bdy) * (cdx * ady - adx * cdy) +
           (cdx * cdx + cdy * cdy) * (adx * bdy - bdx * ady);
}

static double tri_area2(const tri_t *t)
{
    return orient(t->v[0], t->v[1], t->v[2]->x, t->v[2]->y);
}

/* ---- where the objects come from (alloc=) ---- */

#ifdef MESH_MMALLOC
static mm_pool_t *g_pool_tri, *g_pool_pt, *g_pool_msg;
#endif

static void *block_new(void)
{
    void *b = NULL;
    if (g_alloc == ALLOC_CUSTOM) {
        b = mmap(NULL, CUSTOM_BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b == MAP_FAILED)
            b = NULL;
    }
#ifdef MESH_MMALLOC
    else
        b = mm_page_block_alloc(CUSTOM_BLOCK);
#endif
    return bench_check_alloc(b, CUSTOM_BLOCK);
}

static void block_drop(void *b)
{
    if (g_alloc == ALLOC_CUSTOM)
        munmap(b, CUSTOM_BLOCK);
#ifdef MESH_MMALLOC
    else
        mm_page_block_free(b);
#endif
}

static inline void *fix_alloc(fixpool_t *f)
{
    if (f->dead.n)
        return f->dead.at[--f->dead.n];
    if (f->bump + f->size > f->end) {
        f->bump = block_new();
        f->end = f->bump + CUSTOM_BLOCK;
        VEC_PUSH(f->blocks, f->bump);
    }
    void *p = f->bump;
    f->bump += f->size;
    return p;
}

static inline void fix_free(fixpool_t *f, void *p)
{
    VEC_PUSH(f->dead, p);
}

static void fix_drop(fixpool_t *f)
{
    for (size_t k = 0; k < f->blocks.n; k++)
        block_drop(f->blocks.at[k]);
    free(f->blocks.at);
    free(f->dead.at);
}

#ifdef MESH_MMALLOC
#define POOL_ALLOC(pool) bench_check_alloc(mm_pool_alloc(pool), 1)
#define POOL_FREE(pool, p) mm_pool_free((pool), (p))
#define POOL_FREE_UNCHECKED(pool, p) mm_pool_free_unchecked((pool), (p))
#else
#define POOL_FREE_UNCHECKED(pool, p) ((void)(p))
#define POOL_ALLOC(pool) NULL
#define POOL_FREE(pool, p) ((void)(p))
#endif

/* One allocation and one free per type, in every mode. */
#define OBJ_FUNCS(T, field, pool) \
    static inline T *T##_alloc(sub_t *s) \
    { \
        switch (g_alloc) { \
        case ALLOC_MALLOC: return xmalloc(sizeof(T)); \
        case ALLOC_POOL: case ALLOC_POOL_UNCHECKED: return POOL_ALLOC(pool); \
        default: return fix_alloc(&s->field); \
        } \
    } \
    static inline void T##_free(sub_t *s, T *p) \
    { \
        switch (g_alloc) { \
        case ALLOC_MALLOC: free(p); return; \
        case ALLOC_POOL: POOL_FREE(pool, p); return; \
        case ALLOC_POOL_UNCHECKED: POOL_FREE_UNCHECKED(pool, p); return; \
        default: fix_free(&s->field, p); return; \
        } \
    }
OBJ_FUNCS(tri_t, tris, g_pool_tri)
OBJ_FUNCS(point_t, pts, g_pool_pt)
OBJ_FUNCS(msg_t, msgs, g_pool_msg)

static point_t *point_new(sub_t *s, double x, double y)
{
    if (s->points.n >= g_max_points)
        mesh_fail(s, "too many points: refinement does not terminate");
    point_t *p = point_t_alloc(s);
    p->x = x;
    p->y = y;
    p->check = point_hash(x, y);
    VEC_PUSH(s->points, p);
    return p;
}

static tri_t *tri_new(sub_t *s, point_t *a, point_t *b, point_t *c)
{
    tri_t *t = tri_t_alloc(s);
    t->v[0] = a; t->v[1] = b; t->v[2] = c;
    t->n[0] = t->n[1] = t->n[2] = NULL;
    t->mark = 0;
    t->queued = t->dead = 0;
    s->tris_made++;
    s->triangles++;
    return t;
}

static void tri_kill(sub_t *s, tri_t *t)
{
    s->triangles--;
    if (t->queued)
        t->dead = 1;          /* the queue frees it when it comes out */
    else
        tri_t_free(s, t);
}

static void queue_push(sub_t *s, tri_t *t)
{
    if (t->queued)
        return;
    if (s->queue.n == s->queue.cap) {
        size_t cap = s->queue.cap ? 2 * s->queue.cap : 1024;
        tri_t **ring = xmalloc(cap * sizeof(tri_t *));
        for (size_t k = 0; k < s->queue.n; k++)
            ring[k] = s->queue.at[(s->queue.head + k) % s->queue.cap];
        free(s->queue.at);
        s->queue.at = ring;
        s->queue.head = 0;
        s->queue.cap = cap;
    }
    s->queue.at[(s->queue.head + s->queue.n) % s->queue.cap] = t;
    s->queue.n++;
    t->queued = 1;
}

static tri_t *queue_pop(sub_t *s)
{
    tri_t *t = s->queue.at[s->queue.head];
    s->queue.head = (s->queue.head + 1) % s->queue.cap;
    s->queue.n--;
    return t;                 /* still flagged queued: see refine_all */
}

/*
 * Walks from `from` towards (px, py).  Returns the triangle that contains the
 * point (closed), or, when the point is outside the square, the triangle
 * whose boundary edge *exit the walk would cross.
 */
static tri_t *locate(sub_t *s, tri_t *from, double px, double py, int *exit)
{
    tri_t *t = from;
    *exit = -1;
    for (size_t steps = 0;; steps++) {
        if (steps > 100000000)
            mesh_fail(s, "point location does not terminate");
        int k0 = (int)(rng_next(&s->rng) % 3), moved = 0;
        for (int d = 0; d < 3; d++) {
            int k = (k0 + d) % 3;
            if (orient(t->v[(k + 1) % 3], t->v[(k + 2) % 3], px, py) < 0) {
                if (t->n[k] == NULL) {
                    *exit = k;
                    return t;
                }
                t = t->n[k];
                moved = 1;
                break;
            }
        }
        if (!moved)
            return t;
    }
}

/* Which neighbour subdomain shares the boundary edge a-b, or NULL. */
static sub_t *edge_neighbour(const sub_t *s, const point_t *a, const point_t *b)
{
    int i = s->i, j = s->j;
    if (a->x == b->x && a->x == s->x0 && i > 0)
        return &g_sub[j * g_cols + i - 1];
    if (a->x == b->x && a->x == s->x1 && i + 1 < g_cols)
        return &g_sub[j * g_cols + i + 1];
    if (a->y == b->y && a->y == s->y0 && j > 0)
        return &g_sub[(j - 1) * g_cols + i];
    if (a->y == b->y && a->y == s->y1 && j + 1 < g_rows)
        return &g_sub[(j + 1) * g_cols + i];
    return NULL;
}

/*
 * Grows the Bowyer–Watson cavity of (px, py) from t, which contains it.
 * A neighbour joins when the point is inside its circumcircle, or when the
 * point is not strictly inside the cavity across the shared edge (keeps the
 * cavity star-shaped under rounding).  Fills s->cavity and s->edges.
 */
static void cavity_grow(sub_t *s, tri_t *t, double px, double py)
{
    s->epoch++;
    s->cavity.n = s->edges.n = 0;
    t->mark = s->epoch;
    VEC_PUSH(s->cavity, t);
    for (size_t c = 0; c < s->cavity.n; c++) {
        tri_t *u = s->cavity.at[c];
        for (int k = 0; k < 3; k++) {
            tri_t *nb = u->n[k];
            if (nb != NULL && nb->mark == s->epoch)
                continue;
            point_t *a = u->v[(k + 1) % 3], *b = u->v[(k + 2) % 3];
            double o = orient(a, b, px, py);
            if (nb != NULL && (o <= 0 || incircle(nb, px, py) > 0)) {
                nb->mark = s->epoch;
                VEC_PUSH(s->cavity, nb);
                continue;
            }
            edge_t e = { a, b, nb, u };
            VEC_PUSH(s->edges, e);
        }
    }
}

/* Replaces the cavity by a fan around p.  Boundary edges through p are split. */
static void cavity_fill(sub_t *s, point_t *p)
{
    s->fresh.n = 0;
    for (size_t e = 0; e < s->edges.n; e++) {
        edge_t *ed = &s->edges.at[e];
        double o = orient(ed->a, ed->b, p->x, p->y);
        if (o == 0 && ed->outer == NULL)
            continue;         /* p lies on this boundary edge: it becomes two */
        if (o <= 0)
            mesh_fail(s, "cavity is not star-shaped");
        tri_t *t = tri_new(s, ed->a, ed->b, p);
        t->n[2] = ed->outer;
        if (ed->outer != NULL) {
            int k = 0;
            while (k < 3 && ed->outer->n[k] != ed->old)
                k++;
            if (k == 3)
                mesh_fail(s, "neighbour links are not symmetric");
            ed->outer->n[k] = t;
        }
        VEC_PUSH(s->fresh, t);
    }
    /* t = (a, b, p): n[0] (edge b-p) is the fan triangle starting at b,
     * n[1] (edge p-a) the one ending at a; none on a split boundary edge */
    for (size_t x = 0; x < s->fresh.n; x++) {
        tri_t *t = s->fresh.at[x];
        for (size_t y = 0; y < s->fresh.n; y++) {
            tri_t *u = s->fresh.at[y];
            if (u->v[0] == t->v[1])
                t->n[0] = u;
            if (u->v[1] == t->v[0])
                t->n[1] = u;
        }
    }
    for (size_t c = 0; c < s->cavity.n; c++)
        tri_kill(s, s->cavity.at[c]);
    for (size_t x = 0; x < s->fresh.n; x++)
        queue_push(s, s->fresh.at[x]);
    if (s->fresh.n == 0)
        mesh_fail(s, "empty cavity");
    s->start = s->fresh.at[0];
}

static bool is_vertex(const tri_t *t, double px, double py)
{
    for (int k = 0; k < 3; k++)
        if (t->v[k]->x == px && t->v[k]->y == py)
            return true;
    return false;
}

/* Inserts (px, py), contained in t; false if it is already a vertex. */
static bool insert_at(sub_t *s, tri_t *t, double px, double py)
{
    if (is_vertex(t, px, py))
        return false;
    cavity_grow(s, t, px, py);
    cavity_fill(s, point_new(s, px, py));
    return true;
}

/* Splits boundary edge k of t at its midpoint and tells the neighbour. */
static void split_boundary(sub_t *s, tri_t *t, int k)
{
    point_t *a = t->v[(k + 1) % 3], *b = t->v[(k + 2) % 3];
    double mx = (a->x + b->x) / 2, my = (a->y + b->y) / 2;   /* exact on axis-aligned edges */
    sub_t *nb = edge_neighbour(s, a, b);
    if (!insert_at(s, t, mx, my))
        mesh_fail(s, "boundary midpoint already a vertex");
    if (nb == NULL)
        return;
    /* allocated here, freed by the neighbour in the next phase */
    msg_t *m = msg_t_alloc(s);
    m->x = mx;
    m->y = my;
    m->check = point_hash(mx, my) ^ 0x6d657368ull;
    pthread_mutex_lock(&nb->inbox_lock);
    m->next = nb->inbox[(s->phase + 1) & 1];
    nb->inbox[(s->phase + 1) & 1] = m;
    pthread_mutex_unlock(&nb->inbox_lock);
    atomic_fetch_add_explicit(&g_sent[s->phase % 3], 1, memory_order_relaxed);
    s->msgs_sent++;
}

static bool tri_is_bad(const tri_t *t)
{
    const point_t *a = t->v[0], *b = t->v[1], *c = t->v[2];
    double la = (b->x - c->x) * (b->x - c->x) + (b->y - c->y) * (b->y - c->y);
    double lb = (a->x - c->x) * (a->x - c->x) + (a->y - c->y) * (a->y - c->y);
    double lc = (a->x - b->x) * (a->x - b->x) + (a->y - b->y) * (a->y - b->y);
    double a2 = tri_area2(t);
    if (a2 > 2 * g_amax)
        return true;
    double lmin = fmin(la, fmin(lb, lc));
    /* R^2 = la lb lc / (4 a2^2) */
    return la * lb * lc > B2 * lmin * 4 * a2 * a2;
}

/* One refinement step for a bad triangle t; false when nothing could be done. */
static bool refine(sub_t *s, tri_t *t)
{
    const point_t *a = t->v[0], *b = t->v[1], *c = t->v[2];
    double bx = b->x - a->x, by = b->y - a->y, cx = c->x - a->x, cy = c->y - a->y;
    double d = 2 * (bx * cy - by * cx);
    double b2 = bx * bx + by * by, c2 = cx * cx + cy * cy;
    double px = a->x + (cy * b2 - by * c2) / d, py = a->y + (bx * c2 - cx * b2) / d;
    int exit;
    tri_t *u = locate(s, t, px, py, &exit);
    if (exit >= 0) {
        split_boundary(s, u, exit);
        return true;
    }
    if (is_vertex(u, px, py))
        return false;         /* degenerate: leave t as it is */
    cavity_grow(s, u, px, py);
    for (size_t e = 0; e < s->edges.n; e++) {
        edge_t *ed = &s->edges.at[e];
        if (ed->outer != NULL)
            continue;
        double dot = (ed->a->x - px) * (ed->b->x - px) + (ed->a->y - py) * (ed->b->y - py);
        if (dot < 0) {        /* encroaches on a boundary edge: split it instead */
            tri_t *owner = ed->old;
            int k = 0;
            while (owner->v[(k + 1) % 3] != ed->a)
                k++;
            split_boundary(s, owner, k);
            return true;
        }
    }
    cavity_fill(s, point_new(s, px, py));
    return true;
}

/*
 * Refines until the queue is empty.  The triangle being refined keeps its
 * `queued` flag, so that if its own cavity removes it, it is only marked dead
 * and freed here.
 */
static void refine_all(sub_t *s)
{
    while (s->queue.n > 0) {
        tri_t *t = queue_pop(s);
        if (!t->dead && tri_is_bad(t)) {
            bool progress = refine(s, t);
            if (!t->dead) {
                t->queued = 0;
                if (progress)
                    queue_push(s, t);
                continue;
            }
        }
        if (t->dead)
            tri_t_free(s, t);
        else
            t->queued = 0;
    }
}

static int msg_cmp(const void *pa, const void *pb)
{
    const msg_t *a = *(msg_t *const *)pa, *b = *(msg_t *const *)pb;
    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    if (a->y != b->y)
        return a->y < b->y ? -1 : 1;
    return 0;
}

/* Inserts the points the neighbours split last phase, in sorted order. */
static void inbox_drain(sub_t *s)
{
    pthread_mutex_lock(&s->inbox_lock);
    msg_t *m = s->inbox[s->phase & 1];
    s->inbox[s->phase & 1] = NULL;
    pthread_mutex_unlock(&s->inbox_lock);
    VEC(msg_t *) all = { NULL, 0, 0 };
    for (; m != NULL; m = m->next)
        VEC_PUSH(all, m);
    if (all.n > 1)
        qsort(all.at, all.n, sizeof(msg_t *), msg_cmp);
    for (size_t k = 0; k < all.n; k++) {
        msg_t *msg = all.at[k];
        if (msg->check != (point_hash(msg->x, msg->y) ^ 0x6d657368ull))
            bench_die(BENCH_EXIT_CORRUPT, "split-edge message %p corrupted before free", (void *)msg);
        int exit;
        tri_t *t = locate(s, s->start, msg->x, msg->y, &exit);
        if (exit >= 0)
            mesh_fail(s, "a neighbour's boundary point lies outside");
        if (insert_at(s, t, msg->x, msg->y))
            s->msgs_used++;
        msg_t_free(s, msg);   /* allocated by the neighbour: a remote free */
    }
    free(all.at);
}

static void sub_setup(sub_t *s, uint64_t nseeds, uint64_t seed)
{
    point_t *p00 = point_new(s, s->x0, s->y0), *p10 = point_new(s, s->x1, s->y0);
    point_t *p11 = point_new(s, s->x1, s->y1), *p01 = point_new(s, s->x0, s->y1);
    tri_t *lo = tri_new(s, p00, p10, p11), *hi = tri_new(s, p00, p11, p01);
    lo->n[1] = hi;            /* edge p11-p00 */
    hi->n[2] = lo;            /* edge p00-p11 */
    s->start = lo;
    queue_push(s, lo);
    queue_push(s, hi);
    rng_t r = rng_make(seed, (uint64_t)(s->j * g_cols + s->i) + 1000);
    for (uint64_t k = 0; k < nseeds; k++) {
        double x = s->x0 + 0.001 + 0.998 * rng_unit(&r), y = s->y0 + 0.001 + 0.998 * rng_unit(&r);
        int exit;
        tri_t *t = locate(s, s->start, x, y, &exit);
        if (exit < 0)
            insert_at(s, t, x, y);
    }
}

/* Every live triangle, by a walk over the neighbour links, into s->stack. */
static void sub_collect(sub_t *s)
{
    s->epoch++;
    s->stack.n = 0;
    s->start->mark = s->epoch;
    VEC_PUSH(s->stack, s->start);
    for (size_t k = 0; k < s->stack.n; k++) {
        tri_t *t = s->stack.at[k];
        for (int e = 0; e < 3; e++) {
            tri_t *nb = t->n[e];
            if (nb != NULL && nb->mark != s->epoch) {
                nb->mark = s->epoch;
                VEC_PUSH(s->stack, nb);
            }
        }
    }
}

typedef struct {
    double *at;
    size_t n, cap;
} side_t;                         /* coordinates of the vertices on one side */
static side_t *g_sides;           /* 4 per subdomain: left, right, bottom, top */

static int dbl_cmp(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

/* Checks the subdomain's mesh; records the vertices on its four sides. */
static void sub_verify(sub_t *s)
{
    sub_collect(s);
    if (s->stack.n != s->triangles)
        mesh_fail(s, "walk does not reach every triangle");
    side_t *side = &g_sides[4 * (size_t)(s->j * g_cols + s->i)];
    double area = 0;
    for (size_t k = 0; k < s->stack.n; k++) {
        tri_t *t = s->stack.at[k];
        double a2 = tri_area2(t);
        if (!(a2 > 0))
            mesh_fail(s, "triangle not counter-clockwise");
        area += a2 / 2;
        for (int e = 0; e < 3; e++) {
            point_t *a = t->v[(e + 1) % 3], *b = t->v[(e + 2) % 3];
            tri_t *nb = t->n[e];
            if (nb == NULL) {
                int which = a->x == b->x ? (a->x == s->x0 ? 0 : a->x == s->x1 ? 1 : -1)
                          : a->y == b->y ? (a->y == s->y0 ? 2 : a->y == s->y1 ? 3 : -1) : -1;
                if (which < 0)
                    mesh_fail(s, "boundary edge not on the square's sides");
                VEC_PUSH(side[which], which < 2 ? a->y : a->x);
                VEC_PUSH(side[which], which < 2 ? b->y : b->x);
                continue;
            }
            int back = -1;
            for (int f = 0; f < 3; f++)
                if (nb->n[f] == t)
                    back = f;
            if (back < 0 || nb->v[(back + 1) % 3] != b || nb->v[(back + 2) % 3] != a)
                mesh_fail(s, "neighbour links are not symmetric");
            if (k % 7 == 0) {     /* sampled: locally Delaunay across this edge */
                const point_t *d = nb->v[back];
                double l = (a->x - b->x) * (a->x - b->x) + (a->y - b->y) * (a->y - b->y);
                if (incircle(t, d->x, d->y) > 1e-9 * l * l)
                    mesh_fail(s, "mesh is not Delaunay");
            }
        }
    }
    if (fabs(area - 1.0) > 1e-9)
        mesh_fail(s, "triangle areas do not sum to the square's area");
    for (int k = 0; k < 4; k++) {   /* sorted, each vertex once */
        qsort(side[k].at, side[k].n, sizeof(double), dbl_cmp);
        size_t u = 0;
        for (size_t x = 0; x < side[k].n; x++)
            if (u == 0 || side[k].at[u - 1] != side[k].at[x])
                side[k].at[u++] = side[k].at[x];
        side[k].n = u;
    }
}

static void sides_compare(const sub_t *s, const side_t *mine, const side_t *theirs)
{
    bool same = mine->n == theirs->n;   /* same coordinates, exactly */
    for (size_t k = 0; same && k < mine->n; k++)
        same = mine->at[k] == theirs->at[k];
    if (!same)
        mesh_fail(s, "neighbours disagree on their shared edge");
}

/* Frees the mesh: triangles, then every point (verified), into the checksum. */
static void sub_free(sub_t *s)
{
    sub_collect(s);
    for (size_t k = 0; k < s->stack.n; k++)
        tri_t_free(s, s->stack.at[k]);
    uint64_t sum = mix64(((uint64_t)(s->j * g_cols + s->i) << 40) ^ s->triangles) +
                   mix64(s->points.n);
    for (size_t k = 0; k < s->points.n; k++) {
        point_t *p = s->points.at[k];
        if (p->check != point_hash(p->x, p->y))
            bench_die(BENCH_EXIT_CORRUPT, "point %p corrupted before free", (void *)p);
        sum += p->check;
        point_t_free(s, p);
    }
    s->sum = sum;
    free(s->points.at);
    free(s->cavity.at);
    free(s->edges.at);
    free(s->fresh.at);
    free(s->stack.at);
    free(s->queue.at);
    if (g_alloc == ALLOC_CUSTOM || g_alloc == ALLOC_CUSTOM_PAGEMAN) {
        fix_drop(&s->tris);
        fix_drop(&s->pts);
        fix_drop(&s->msgs);
    }
}

static uint64_t g_seeds_per_sub, g_seed;

static void *worker(void *arg)
{
    sub_t *s = arg;
    sub_setup(s, g_seeds_per_sub, g_seed);
    for (s->phase = 0;; s->phase++) {
        inbox_drain(s);
        refine_all(s);
        /*
         * Termination: after the barrier every thread reads how many messages
         * this phase sent.  The counter of the next phase is cleared here,
         * before the barrier; it is the counter of phase - 2, which every
         * thread read before it reached the barrier of phase - 1, so no
         * reader can still be looking at it.
         */
        if (s->i == 0 && s->j == 0)
            atomic_store(&g_sent[(s->phase + 1) % 3], 0);
        pthread_barrier_wait(&g_barrier);
        if (atomic_load(&g_sent[s->phase % 3]) == 0)
            break;
    }
    sub_verify(s);
    pthread_barrier_wait(&g_barrier);
    side_t *side = &g_sides[4 * (size_t)(s->j * g_cols + s->i)];
    if (s->i + 1 < g_cols)
        sides_compare(s, &side[1], &g_sides[4 * (size_t)(s->j * g_cols + s->i + 1) + 0]);
    if (s->j + 1 < g_rows)
        sides_compare(s, &side[3], &g_sides[4 * (size_t)((s->j + 1) * g_cols + s->i) + 2]);
    pthread_barrier_wait(&g_barrier);
    sub_free(s);
    return NULL;
}

int main(int argc, char **argv)
{
    bench_name = "mesh";
    PARAMS_PARSE(argc, argv, "parallel Delaunay refinement over subdomains (MPCDM/PDR pattern)", ps);
    g_threads = (int)PARAM(ps, "threads", 1, 4096);
    uint64_t target = (uint64_t)PARAM(ps, "triangles", 2, 1LL << 34);
    uint64_t seeds = (uint64_t)PARAM(ps, "seeds", 0, 1LL << 30);
    g_seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 62);
    g_alloc = (int)PARAM(ps, "alloc", 0, 4);
#ifndef MESH_MMALLOC
    if (g_alloc >= ALLOC_CUSTOM_PAGEMAN)
        bench_die(BENCH_EXIT_USAGE, "alloc=%d (%s) needs mmalloc's API: run mesh-mm", g_alloc,
                  alloc_names[g_alloc]);
#else
    if (g_alloc >= ALLOC_POOL) {
        mm_pool_options_t o = { .object_size = sizeof(tri_t), .name = "triangle" };
        g_pool_tri = bench_check_alloc(mm_pool_create(&o), 1);
        o.object_size = sizeof(point_t), o.name = "point";
        g_pool_pt = bench_check_alloc(mm_pool_create(&o), 1);
        o.object_size = sizeof(msg_t), o.name = "message";
        g_pool_msg = bench_check_alloc(mm_pool_create(&o), 1);
    }
#endif

    g_rows = 1;
    for (int r = 1; r * r <= g_threads; r++)
        if (g_threads % r == 0)
            g_rows = r;
    g_cols = g_threads / g_rows;
    double per_sub = (double)target / g_threads;
    g_amax = 1.6 / (per_sub > 2 ? per_sub : 2);
    g_max_points = (size_t)(20 * per_sub) + 10000;
    g_seeds_per_sub = seeds / (uint64_t)g_threads;

    g_sub = xcalloc((size_t)g_threads, sizeof(sub_t));
    g_sides = xcalloc(4 * (size_t)g_threads, sizeof(side_t));
    for (int k = 0; k < g_threads; k++) {
        sub_t *s = &g_sub[k];
        s->i = k % g_cols;
        s->j = k / g_cols;
        s->x0 = s->i; s->x1 = s->i + 1; s->y0 = s->j; s->y1 = s->j + 1;
        s->rng = rng_make(g_seed, (uint64_t)k);
        s->tris.size = sizeof(tri_t);
        s->pts.size = sizeof(point_t);
        s->msgs.size = sizeof(msg_t);
        pthread_mutex_init(&s->inbox_lock, NULL);
    }
    pthread_barrier_init(&g_barrier, NULL, (unsigned)g_threads);

    double t0 = now_seconds();
    for (int k = 0; k < g_threads; k++)
        bench_start(&g_sub[k].thread, worker, &g_sub[k]);
    for (int k = 0; k < g_threads; k++)
        bench_join(g_sub[k].thread);
    double secs = now_seconds() - t0;

    uint64_t sum = 0, tris = 0, made = 0, pts = 0, sent = 0, used = 0;
    unsigned phases = 0;
    for (int k = 0; k < g_threads; k++) {
        sub_t *s = &g_sub[k];
        sum += s->sum;
        tris += s->triangles;
        made += s->tris_made;
        pts += s->points.n;
        sent += s->msgs_sent;
        used += s->msgs_used;
        phases = s->phase + 1;
        for (int e = 0; e < 4; e++)
            free(g_sides[4 * k + e].at);
        pthread_mutex_destroy(&s->inbox_lock);
    }
    pthread_barrier_destroy(&g_barrier);
#ifdef MESH_MMALLOC
    if (g_alloc >= ALLOC_POOL) {
        mm_pool_destroy(g_pool_tri);
        mm_pool_destroy(g_pool_pt);
        mm_pool_destroy(g_pool_msg);
    }
#endif
    free(g_sides);
    free(g_sub);
    char extra[256];
    snprintf(extra, sizeof extra,
             "\"alloc\":\"%s\",\"grid\":\"%dx%d\",\"triangles\":%" PRIu64 ",\"points\":%" PRIu64
             ",\"triangles_allocated\":%" PRIu64 ",\"messages\":%" PRIu64
             ",\"messages_inserted\":%" PRIu64 ",\"phases\":%u",
             alloc_names[g_alloc], g_cols, g_rows, tris, pts, made, sent, used, phases);
    BENCH_REPORT(ps, g_threads, made + pts, secs, sum, extra);
    return 0;
}
