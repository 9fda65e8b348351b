/*
 * release — build a large pointer structure per task, then drop it whole:
 * the cost of dropping a million objects one free at a time against
 * dropping the pool or heap they live in.  Links libmmalloc (its pool and
 * heap calls); bench/pools.py runs it.
 *
 * Each thread runs `tasks` tasks.  A task builds a binary search tree of
 * `objects` nodes (48-byte nodes with random keys, each carrying a
 * 16-200-byte payload allocated beside it: two allocations per node, so
 * the structure mixes sizes as a parsed document or an AST does), sums
 * its keys in order (the checksum, verified against the sum of the keys
 * inserted), then drops it:
 *   drop=0 free     every node and payload with free() (malloc'd);
 *   drop=1 pool     nodes and payloads from two pools, one
 *                   mm_pool_release each (payload pool: 208-byte objects);
 *   drop=2 heap     everything from one mm_heap, one mm_heap_destroy
 *                   (then a new heap for the next task);
 *   drop=3 heapfree the same heap, every object with mm_heap_free first.
 * The report's seconds are the drop time alone (summed over tasks, the
 * slowest thread's); "build_seconds" is the building.
 *
 * Parameters: threads, objects (nodes per task), tasks, drop, seed.
 */
#include <mmalloc.h>

#include "workloads/workload.h"

static param_t ps[] = {
    { "threads", 1, "threads, each running its own tasks" },
    { "objects", 1000000, "tree nodes per task (two allocations each)" },
    { "tasks", 3, "tasks per thread" },
    { "drop", 0, "0 free each, 1 mm_pool_release, 2 mm_heap_destroy, 3 mm_heap_free each" },
    { "seed", 42, "random seed" },
};

typedef struct node {
    uint64_t key;
    struct node *left, *right;
    char *payload;
    uint32_t len;
    uint32_t pad[3];
} node_t;
_Static_assert(sizeof(node_t) == 48, "a 48-byte node");

enum { DROP_FREE, DROP_POOL, DROP_HEAP, DROP_HEAP_FREE };
static const char *const drop_names[] = { "free", "pool", "heap", "heapfree" };

static int g_drop;
static uint64_t g_objects, g_tasks, g_seed;

typedef struct worker {
    int id;
    pthread_t thread;
    double build, drop;
    uint64_t sum;
} worker_t;

typedef struct where {
    mm_pool_t *nodes, *payloads;
    mm_heap_t *heap;
} where_t;

static void *obj_alloc(where_t *w, size_t n, bool node)
{
    void *p;
    switch (g_drop) {
    case DROP_FREE: p = malloc(n); break;
    case DROP_POOL: p = mm_pool_alloc(node ? w->nodes : w->payloads); break;
    default: p = mm_heap_malloc(w->heap, n); break;
    }
    return bench_check_alloc(p, n);
}

static void obj_free(where_t *w, void *p, bool node)
{
    switch (g_drop) {
    case DROP_FREE: free(p); break;
    case DROP_HEAP_FREE: mm_heap_free(w->heap, p); break;
    default: (void)node; break;
    }
}

/* In-order sum of keys, iteratively (the trees are random, not deep). */
static uint64_t tree_sum(node_t *root, node_t **stack)
{
    uint64_t sum = 0;
    size_t n = 0;
    node_t *t = root;
    while (t || n) {
        while (t) {
            stack[n++] = t;
            t = t->left;
        }
        t = stack[--n];
        if (t->payload[0] != (char)t->key || t->payload[t->len - 1] != (char)(t->key >> 8))
            bench_die(BENCH_EXIT_CORRUPT, "payload of key %llu corrupted", (unsigned long long)t->key);
        sum += t->key;
        t = t->right;
    }
    return sum;
}

static void tree_free(where_t *w, node_t *root, node_t **stack)
{
    size_t n = 0;
    if (root)
        stack[n++] = root;
    while (n) {
        node_t *t = stack[--n];
        if (t->left)
            stack[n++] = t->left;
        if (t->right)
            stack[n++] = t->right;
        obj_free(w, t->payload, false);
        obj_free(w, t, true);
    }
}

static void *worker(void *arg)
{
    worker_t *me = arg;
    rng_t r = rng_make(g_seed, (uint64_t)me->id);
    node_t **stack = bench_check_alloc(malloc(g_objects * sizeof(node_t *)), g_objects * 8);
    where_t w = { 0 };
    if (g_drop == DROP_POOL) {
        mm_pool_options_t o = { .object_size = sizeof(node_t), .name = "nodes" };
        w.nodes = bench_check_alloc(mm_pool_create(&o), 1);
        o.object_size = 208, o.name = "payloads";
        w.payloads = bench_check_alloc(mm_pool_create(&o), 1);
    }
    for (uint64_t task = 0; task < g_tasks; task++) {
        if (g_drop >= DROP_HEAP)
            w.heap = bench_check_alloc(mm_heap_new("task"), 1);
        double t0 = now_seconds();
        node_t *root = NULL;
        uint64_t want = 0;
        for (uint64_t k = 0; k < g_objects; k++) {
            node_t *t = obj_alloc(&w, sizeof(node_t), true);
            t->key = rng_next(&r) >> 20;
            t->left = t->right = NULL;
            t->len = (uint32_t)rng_range(&r, 16, 201);
            t->payload = obj_alloc(&w, t->len, false);
            memset(t->payload, (char)(t->key >> 8), t->len);
            t->payload[0] = (char)t->key;
            want += t->key;
            node_t **at = &root;
            while (*at)
                at = t->key < (*at)->key ? &(*at)->left : &(*at)->right;
            *at = t;
        }
        uint64_t sum = tree_sum(root, stack);
        if (sum != want)
            bench_die(BENCH_EXIT_CORRUPT, "tree sum %llu, inserted %llu", (unsigned long long)sum,
                      (unsigned long long)want);
        me->sum += mix64(sum);
        double t1 = now_seconds();
        switch (g_drop) {
        case DROP_POOL:
            mm_pool_release(w.nodes);
            mm_pool_release(w.payloads);
            break;
        case DROP_HEAP:
            mm_heap_destroy(w.heap);
            break;
        default:
            tree_free(&w, root, stack);
            if (g_drop == DROP_HEAP_FREE)
                mm_heap_destroy(w.heap);
            break;
        }
        double t2 = now_seconds();
        me->build += t1 - t0;
        me->drop += t2 - t1;
    }
    if (g_drop == DROP_POOL) {
        mm_pool_destroy(w.nodes);
        mm_pool_destroy(w.payloads);
    }
    free(stack);
    return NULL;
}

int main(int argc, char **argv)
{
    bench_name = "release";
    PARAMS_PARSE(argc, argv, "build a pointer structure per task and drop it whole", ps);
    int threads = (int)PARAM(ps, "threads", 1, 1024);
    g_objects = (uint64_t)PARAM(ps, "objects", 1, 1LL << 30);
    g_tasks = (uint64_t)PARAM(ps, "tasks", 1, 1LL << 20);
    g_drop = (int)PARAM(ps, "drop", 0, 3);
    g_seed = (uint64_t)PARAM(ps, "seed", 0, 1LL << 62);
    worker_t *ws = bench_check_alloc(calloc((size_t)threads, sizeof(worker_t)), 1);
    for (int i = 0; i < threads; i++) {
        ws[i].id = i;
        bench_start(&ws[i].thread, worker, &ws[i]);
    }
    double build = 0, drop = 0;
    uint64_t sum = 0;
    for (int i = 0; i < threads; i++) {
        bench_join(ws[i].thread);
        build = ws[i].build > build ? ws[i].build : build;
        drop = ws[i].drop > drop ? ws[i].drop : drop;
        sum += ws[i].sum;
    }
    free(ws);
    char extra[160];
    snprintf(extra, sizeof extra, "\"drop_mode\":\"%s\",\"build_seconds\":%.6f",
             drop_names[g_drop], build);
    BENCH_REPORT(ps, threads, 2 * g_objects * g_tasks * (uint64_t)threads, drop, sum, extra);
    return 0;
}
