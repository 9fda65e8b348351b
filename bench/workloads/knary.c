/*
 * knary — Streamflow's "Knary" benchmark (Schneider et al., ISMM 2006;
 * [Streamflow] in docs/sources.md), after the k-ary tree benchmark of
 * Cilk-style work-stealing runtimes.
 *
 * Models: a divide-and-conquer program that builds a k-ary tree of `depth`
 * levels in parallel, walks it, and frees it.  The top `spawn` levels are
 * built by the main thread; every subtree rooted at level `spawn` is a task.
 * Worker threads take tasks from a shared pool (each idle worker steals the
 * next unclaimed subtree) in each of three phases: build (malloc every node
 * of the subtree), traverse (verify every node), and free (post-order, by
 * whichever thread takes the subtree in that phase).  The free phase takes
 * the tasks in the reverse order, so a subtree is usually freed by a thread
 * other than the one that built it: about (T-1)/T of the frees are remote
 * (half with two threads).  The JSON reports the measured remote fraction.
 *
 * Stresses: small-object allocation of mixed sizes by many threads, frees of
 * large numbers of objects allocated by other threads (remote frees in
 * bulk), and the memory those frees must give back.
 *
 * Parameters: threads, k (children per node), depth (levels below the
 * root), spawn (level whose subtrees become tasks), payload (largest extra
 * bytes per node), seed.
 *
 * Checksum: the sum, over the traversal and the free phase, of a value
 * derived from each node's id (heap numbering: child i of node n is
 * n*k + i + 1), verified in the node.  Independent of the thread count.
 */
#include <stdatomic.h>

#include "workload.h"

static param_t ps[] = {
    { "threads", 2, "worker threads" },
    { "k", 4, "children per node" },
    { "depth", 10, "levels below the root" },
    { "spawn", 4, "level whose subtrees are the tasks" },
    { "payload", 64, "largest extra bytes per node (8 at least)" },
    { "seed", 13, "random seed (sizes)" },
};

typedef struct node {
    uint64_t id;
    uint32_t depth;
    uint32_t payload;          /* bytes after child[], tagged with id */
    struct node *child[];      /* k of them, NULL at the leaves */
} node_t;

typedef struct {
    node_t *root;              /* subtree root at level `spawn` */
    uint64_t id;               /* its id */
    int builder, freer;        /* thread indices, for the remote fraction */
    uint64_t nodes;            /* nodes in the subtree */
} task_t;

static unsigned g_k, g_depth, g_spawn, g_payload;
static uint64_t g_seed;
static task_t *g_tasks;
static size_t g_ntasks;
static atomic_size_t g_next;   /* next unclaimed task of the current phase */

enum phase { BUILD, TRAVERSE, FREE };

typedef struct {
    int index;
    enum phase phase;
    uint64_t sum;
    pthread_t thread;
} worker_t;

static inline unsigned char *node_payload(node_t *n)
{
    return (unsigned char *)&n->child[g_k];
}

static node_t *node_new(uint64_t id, uint32_t depth)
{
    uint32_t extra = 8 + (uint32_t)(mix64(id ^ g_seed) % (g_payload - 7));
    node_t *n = xmalloc(sizeof(node_t) + g_k * sizeof(node_t *) + extra);
    n->id = id;
    n->depth = depth;
    n->payload = extra;
    tag_fill(node_payload(n), extra, id);
    for (unsigned i = 0; i < g_k; i++)
        n->child[i] = NULL;
    return n;
}

/* Builds the children of n down to g_depth; returns the nodes created. */
static uint64_t subtree_build(node_t *n)
{
    if (n->depth == g_depth)
        return 0;
    uint64_t made = 0, id = n->id;
    uint32_t depth = n->depth;
    for (unsigned i = 0; i < g_k; i++) {
        n->child[i] = node_new(id * g_k + i + 1, depth + 1);
        made += 1 + subtree_build(n->child[i]);
        if (n->id != id || n->depth != depth)   /* a child was put on top of its parent */
            bench_die(BENCH_EXIT_CORRUPT, "node %" PRIu64 " at %p overwritten while building",
                      id, (void *)n);
    }
    return made;
}

/* The id must be the one the parent's position implies, and the payload
 * must carry its tag: a node overwritten by another fails one or the other. */
static uint64_t node_check(node_t *n, uint64_t id)
{
    if (n->id != id || n->payload < 8 || n->payload > g_payload)
        bench_die(BENCH_EXIT_CORRUPT, "node %" PRIu64 " at %p overwritten (holds id %" PRIu64 ")",
                  id, (void *)n, n->id);
    return tag_verify(node_payload(n), n->payload, id) + n->depth;
}

static uint64_t subtree_traverse(node_t *n, uint64_t id)
{
    uint64_t sum = node_check(n, id);
    for (unsigned i = 0; i < g_k && n->child[i]; i++)
        sum += subtree_traverse(n->child[i], id * g_k + i + 1);
    return sum;
}

/* Post-order: children first, then the node itself. */
static uint64_t subtree_free(node_t *n, uint64_t id)
{
    uint64_t sum = node_check(n, id);
    for (unsigned i = 0; i < g_k && n->child[i]; i++)
        sum += subtree_free(n->child[i], id * g_k + i + 1);
    free(n);
    return sum;
}

static void *worker(void *arg)
{
    worker_t *w = arg;
    uint64_t sum = 0;
    size_t i;
    while ((i = atomic_fetch_add_explicit(&g_next, 1, memory_order_relaxed)) < g_ntasks) {
        switch (w->phase) {
        case BUILD: {
            task_t *t = &g_tasks[i];
            t->builder = w->index;
            t->nodes = 1 + subtree_build(t->root);
            break;
        }
        case TRAVERSE:
            sum += subtree_traverse(g_tasks[i].root, g_tasks[i].id);
            break;
        case FREE: {
            task_t *t = &g_tasks[g_ntasks - 1 - i];   /* reverse order */
            t->freer = w->index;
            sum += subtree_free(t->root, t->id);
            break;
        }
        }
    }
    w->sum = sum;
    return NULL;
}

static uint64_t run_phase(worker_t *ws, long long threads, enum phase ph)
{
    atomic_store(&g_next, 0);
    for (long long t = 0; t < threads; t++) {
        ws[t].phase = ph;
        ws[t].sum = 0;
        bench_start(&ws[t].thread, worker, &ws[t]);
    }
    uint64_t sum = 0;
    for (long long t = 0; t < threads; t++) {
        bench_join(ws[t].thread);
        sum += ws[t].sum;
    }
    return sum;
}

/* The top levels: built by the main thread; level-`spawn` nodes become tasks. */
static void top_build(node_t *n)
{
    if (n->depth == g_spawn) {
        g_tasks[g_ntasks].id = n->id;
        g_tasks[g_ntasks++].root = n;
        return;
    }
    for (unsigned i = 0; i < g_k; i++) {
        n->child[i] = node_new(n->id * g_k + i + 1, n->depth + 1);
        top_build(n->child[i]);
    }
}

static uint64_t top_free(node_t *n, uint64_t id, uint64_t *count)
{
    if (n->depth >= g_spawn)
        return 0;   /* freed by a worker */
    uint64_t sum = node_check(n, id);
    for (unsigned i = 0; i < g_k; i++)
        sum += top_free(n->child[i], id * g_k + i + 1, count);
    free(n);
    (*count)++;
    return sum;
}

static uint64_t top_traverse(node_t *n, uint64_t id)
{
    if (n->depth == g_spawn)
        return 0;
    uint64_t sum = node_check(n, id);
    for (unsigned i = 0; i < g_k; i++)
        sum += top_traverse(n->child[i], id * g_k + i + 1);
    return sum;
}

int main(int argc, char **argv)
{
    bench_name = "knary";
    PARAMS_PARSE(argc, argv, "k-ary tree built, traversed and freed by work-stealing threads", ps);
    long long threads = PARAM(ps, "threads", 1, 4096);
    g_k = (unsigned)PARAM(ps, "k", 2, 64);
    g_depth = (unsigned)PARAM(ps, "depth", 1, 40);
    g_spawn = (unsigned)PARAM(ps, "spawn", 0, g_depth);
    g_payload = (unsigned)PARAM(ps, "payload", 8, 1 << 20);
    g_seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 62);
    uint64_t expect = 1, level = 1;   /* nodes of a full k-ary tree */
    for (unsigned d = 0; d < g_depth; d++) {
        if (level > (1ull << 40) / g_k)
            bench_die(BENCH_EXIT_USAGE, "k^depth too large");
        level *= g_k;
        expect += level;
    }

    size_t ntasks = 1;
    for (unsigned d = 0; d < g_spawn; d++)
        ntasks *= g_k;
    g_tasks = xcalloc(ntasks, sizeof(task_t));
    worker_t *ws = xcalloc((size_t)threads, sizeof(worker_t));
    for (long long t = 0; t < threads; t++)
        ws[t].index = (int)t;

    double t0 = now_seconds();
    node_t *root = node_new(0, 0);
    top_build(root);
    run_phase(ws, threads, BUILD);
    uint64_t sum = top_traverse(root, 0) + run_phase(ws, threads, TRAVERSE);
    sum += run_phase(ws, threads, FREE);
    uint64_t top_nodes = 0;
    sum += top_free(root, 0, &top_nodes);
    double secs = now_seconds() - t0;

    uint64_t nodes = top_nodes, remote = 0;
    for (size_t i = 0; i < g_ntasks; i++) {
        nodes += g_tasks[i].nodes;
        if (g_tasks[i].builder != g_tasks[i].freer)
            remote += g_tasks[i].nodes;
    }
    if (nodes != expect)
        bench_die(BENCH_EXIT_CORRUPT, "built %" PRIu64 " nodes, expected %" PRIu64, nodes, expect);
    free(g_tasks);
    free(ws);
    char extra[96];
    snprintf(extra, sizeof extra, "\"nodes\":%" PRIu64 ",\"remote_free_fraction\":%.3f",
             nodes, (double)remote / (double)nodes);
    BENCH_REPORT(ps, threads, 2 * nodes, secs, sum, extra);
    return 0;
}
