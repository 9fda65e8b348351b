/* test_interval_tree.c — unit test of the free-extent tree (interval_tree.c).
 *
 * What it checks:
 *   1. edge cases: the empty tree, one node, fits larger than everything,
 *      fits below one node, ties in largest(), early stop of foreach;
 *   2. the checker: small trees broken by hand, one fault each (order,
 *      overlap, touching when coalesced, heights, balance, maxima, count,
 *      total_datablocks, bad extents, cycles); each must be rejected with a
 *      reason that names the fault, and the unbroken tree accepted;
 *   3. the always-on corruption checks (and the MM_DEBUG >= 2 ones): a
 *      double insert or the removal of a stranger aborts (in a child);
 *   4. sequential and bulk insertion: the height stays within the AVL bound;
 *   5. a random run against a naive model (a sorted array of extents), the
 *      way the local heap drives the tree: frees that coalesce with their
 *      neighbours, first-fit allocations carved from the front, the back or
 *      the middle of an extent, whole-extent allocations, shrinking and
 *      growing in place, lookups, and the fits of a size below an address
 *      (prev_fit).  After every operation the tree must
 *      pass interval_tree_is_valid(coalesced = true) and match the model's
 *      count and total; every 100 operations (and at the end) the whole
 *      in-order contents are compared.
 *
 * Usage: test_interval_tree [SEED [OPS]]   (defaults: a fixed seed, 100000)
 * The seed is printed first, so a failing run can be repeated.
 */
#include "check.h"
#include "interval_tree.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE ((uintptr_t)MM_DATABLOCK_SIZE)

/* The simulated slot of address space whose free extents the tree holds. */
#if UINTPTR_MAX > 0xffffffffu
#define SIM_BASE ((uintptr_t)1 << 40)
#define SIM_PAGES ((size_t)1 << 20)
#else
#define SIM_BASE ((uintptr_t)0x10000000u)
#define SIM_PAGES ((size_t)1 << 16)
#endif
#define SIM_END (SIM_BASE + SIM_PAGES * PAGE)

/* ------------------------------------------------------------------------ */
/* Random numbers: splitmix64, reproducible from the printed seed.          */

static uint64_t rng_state;

static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* Uniform in [0, n) (n > 0; the modulo bias is irrelevant here). */
static size_t rnd_below(size_t n) { return (size_t)(rnd() % n); }

/* Uniform in [lo, hi]. */
static size_t rnd_between(size_t lo, size_t hi) {
  return lo + rnd_below(hi - lo + 1);
}

/* ------------------------------------------------------------------------ */
/* Shared helpers.                                                           */

static uintptr_t end_of(const itree_node_t *n) {
  return n->start + n->ndatablocks * PAGE;
}

static int tree_height(const itree_t *t) {
  return t->root ? t->root->height : 0;
}

/* The smallest AVL tree of height h has N(h) = N(h-1) + N(h-2) + 1 nodes;
 * a tree of `count` nodes is therefore no higher than the largest h with
 * N(h) <= count (about 1.44 log2 count). */
static int avl_height_bound(size_t count) {
  size_t a = 0, b = 1; /* N(h-1), N(h) */
  int h = 1;
  if (count == 0)
    return 0;
  while (b + a + 1 <= count) {
    size_t c = a + b + 1;
    a = b;
    b = c;
    h++;
  }
  return h;
}

static bool valid(const itree_t *t, bool coalesced) {
  char why[256];
  bool ok = interval_tree_is_valid(t, coalesced, why, sizeof why);
  if (!ok)
    fprintf(stderr, "  checker: %s\n", why);
  return ok;
}

typedef struct collect_s {
  itree_node_t **out;
  size_t n, cap, stop_after;
} collect_t;

static bool collect_visit(itree_node_t *node, void *arg) {
  collect_t *c = arg;
  if (c->n < c->cap)
    c->out[c->n] = node;
  c->n++;
  return c->n < c->stop_after;
}

/* ------------------------------------------------------------------------ */
/* 1. Edge cases.                                                            */

static void test_empty(void) {
  itree_t t;
  itree_node_t stranger = {.start = SIM_BASE, .ndatablocks = 1};
  itree_node_t *seen[1];
  collect_t c = {seen, 0, 1, SIZE_MAX};

  interval_tree_init(&t);
  CHECK("empty: valid", valid(&t, true));
  CHECK("empty: count", t.count == 0 && t.total_datablocks == 0 && !t.root);
  CHECK("empty: first_fit(1)", interval_tree_first_fit(&t, 1) == NULL);
  CHECK("empty: first_fit(0)", interval_tree_first_fit(&t, 0) == NULL);
  CHECK("empty: prev_fit(max, 1)", interval_tree_prev_fit(&t, UINTPTR_MAX, 1) == NULL);
  CHECK("empty: largest", interval_tree_largest(&t) == NULL);
  CHECK("empty: find", interval_tree_find(&t, SIM_BASE) == NULL);
  CHECK("empty: find 0", interval_tree_find(&t, 0) == NULL);
  CHECK("empty: min", interval_tree_min(&t) == NULL);
  CHECK("empty: prev", interval_tree_prev(&t, &stranger) == NULL);
  CHECK("empty: next", interval_tree_next(&t, &stranger) == NULL);
  interval_tree_foreach(&t, collect_visit, &c);
  CHECK("empty: foreach visits nothing", c.n == 0);
}

static void test_one_node(void) {
  itree_t t;
  itree_node_t a = {.start = SIM_BASE + 8 * PAGE, .ndatablocks = 5};
  itree_node_t *seen[2];
  collect_t c = {seen, 0, 2, SIZE_MAX};

  interval_tree_init(&t);
  interval_tree_insert(&t, &a);
  CHECK("one: valid", valid(&t, true));
  CHECK("one: count", t.count == 1 && t.total_datablocks == 5);
  CHECK("one: fields", a.height == 1 && a.max_ndatablocks == 5 && !a.left &&
                           !a.right && t.root == &a);
  CHECK("one: first_fit(0)", interval_tree_first_fit(&t, 0) == &a);
  CHECK("one: first_fit(1)", interval_tree_first_fit(&t, 1) == &a);
  CHECK("one: first_fit(5)", interval_tree_first_fit(&t, 5) == &a);
  CHECK("one: first_fit(6)", interval_tree_first_fit(&t, 6) == NULL);
  CHECK("one: prev_fit above it", interval_tree_prev_fit(&t, a.start + 1, 5) == &a);
  CHECK("one: prev_fit from its start", interval_tree_prev_fit(&t, a.start, 1) == NULL);
  CHECK("one: prev_fit(6)", interval_tree_prev_fit(&t, UINTPTR_MAX, 6) == NULL);
  CHECK("one: first_fit(max)", interval_tree_first_fit(&t, SIZE_MAX) == NULL);
  CHECK("one: largest", interval_tree_largest(&t) == &a);
  CHECK("one: find start", interval_tree_find(&t, a.start) == &a);
  CHECK("one: find last byte", interval_tree_find(&t, end_of(&a) - 1) == &a);
  CHECK("one: find middle", interval_tree_find(&t, a.start + 2 * PAGE + 7) ==
                                &a);
  CHECK("one: find end", interval_tree_find(&t, end_of(&a)) == NULL);
  CHECK("one: find before", interval_tree_find(&t, a.start - 1) == NULL);
  CHECK("one: find 0", interval_tree_find(&t, 0) == NULL);
  CHECK("one: find top", interval_tree_find(&t, UINTPTR_MAX) == NULL);
  CHECK("one: prev", interval_tree_prev(&t, &a) == NULL);
  CHECK("one: next", interval_tree_next(&t, &a) == NULL);
  CHECK("one: min", interval_tree_min(&t) == &a);
  interval_tree_foreach(&t, collect_visit, &c);
  CHECK("one: foreach", c.n == 1 && seen[0] == &a);

  interval_tree_resize(&t, &a, a.start + PAGE, 3); /* shrink both ends */
  CHECK("one: resize valid", valid(&t, true));
  CHECK("one: resize fields", a.max_ndatablocks == 3 && t.total_datablocks == 3);
  CHECK("one: find old start", interval_tree_find(&t, a.start - PAGE) == NULL);
  interval_tree_resize(&t, &a, a.start - 4 * PAGE, 40); /* grow both ends */
  CHECK("one: grow valid", valid(&t, true));
  CHECK("one: grow fields", a.max_ndatablocks == 40 && t.total_datablocks == 40);

  interval_tree_remove(&t, &a);
  CHECK("one: removed valid", valid(&t, true));
  CHECK("one: removed empty", !t.root && t.count == 0 && t.total_datablocks == 0);
  CHECK("one: removed links cleared", !a.left && !a.right);
  CHECK("one: removed find", interval_tree_find(&t, a.start) == NULL);
}

/* Extents of equal, largest size at several places: largest() and
 * first_fit(max) must name the lowest-addressed one whatever the
 * insertion order, and move on to the next one when it goes. */
static void test_ties(void) {
  enum { N = 64 };
  static itree_node_t nodes[N];
  static const size_t sizes_of_big[] = {7, 22, 40, 41, 63};
  itree_t t;
  size_t order[N];

  for (int round = 0; round < 20; round++) {
    interval_tree_init(&t);
    for (size_t i = 0; i < N; i++) {
      memset(&nodes[i], 0, sizeof nodes[i]);
      nodes[i].start = SIM_BASE + i * 100 * PAGE;
      nodes[i].ndatablocks = 1 + (i * 37) % 50; /* all below 64 */
      order[i] = i;
    }
    for (size_t i = 0; i < sizeof sizes_of_big / sizeof *sizes_of_big; i++)
      nodes[sizes_of_big[i]].ndatablocks = 64;
    for (size_t i = N - 1; i > 0; i--) { /* shuffle the insertion order */
      size_t j = rnd_below(i + 1), tmp = order[i];
      order[i] = order[j];
      order[j] = tmp;
    }
    for (size_t i = 0; i < N; i++)
      interval_tree_insert(&t, &nodes[order[i]]);
    CHECK("ties: valid", valid(&t, true));
    CHECK("ties: largest", interval_tree_largest(&t) == &nodes[7]);
    CHECK("ties: first_fit(64)", interval_tree_first_fit(&t, 64) == &nodes[7]);
    CHECK("ties: first_fit(65)", interval_tree_first_fit(&t, 65) == NULL);
    CHECK("ties: first_fit(1)", interval_tree_first_fit(&t, 1) == &nodes[0]);
    CHECK("ties: first_fit(50)", interval_tree_first_fit(&t, 50) == &nodes[7]);
    for (size_t i = 0; i < sizeof sizes_of_big / sizeof *sizes_of_big; i++) {
      itree_node_t *want = &nodes[sizes_of_big[i]];
      CHECK("ties: largest in turn", interval_tree_largest(&t) == want);
      interval_tree_remove(&t, want);
      CHECK("ties: valid after remove", valid(&t, true));
    }
    /* Now 1 + (i*37) % 50 rules: 50 is the largest, first at i = 37*k. */
    itree_node_t *lg = interval_tree_largest(&t);
    size_t want_i = SIZE_MAX;
    for (size_t i = 0; i < N && want_i == SIZE_MAX; i++)
      if (nodes[i].ndatablocks == 50)
        want_i = i;
    CHECK("ties: largest after", lg && want_i != SIZE_MAX &&
                                     lg == &nodes[want_i]);
    /* Shrinking it hands the title to the lowest of the 49-page ones
     * (i = 4 and i = 54: a tie, resolved by address). */
    if (lg && want_i != SIZE_MAX) {
      interval_tree_resize(&t, lg, lg->start, 1);
      CHECK("ties: valid after shrink", valid(&t, true));
      CHECK("ties: tie of two", nodes[4].ndatablocks == 49 &&
                                    nodes[54].ndatablocks == 49);
      CHECK("ties: largest after shrink",
            interval_tree_largest(&t) == &nodes[4]);
      CHECK("ties: first_fit(49)", interval_tree_first_fit(&t, 49) ==
                                       &nodes[4]);
      interval_tree_remove(&t, &nodes[4]);
      CHECK("ties: largest after removing the first of the tie",
            interval_tree_largest(&t) == &nodes[54]);
    }
  }
}

static void test_foreach_stop(void) {
  enum { N = 50 };
  static itree_node_t nodes[N];
  itree_node_t *seen[N];
  itree_t t;

  interval_tree_init(&t);
  for (size_t i = 0; i < N; i++) {
    memset(&nodes[i], 0, sizeof nodes[i]);
    nodes[i].start = SIM_BASE + (N - i) * 4 * PAGE;
    nodes[i].ndatablocks = 2;
    interval_tree_insert(&t, &nodes[i]);
  }
  collect_t c = {seen, 0, N, 7};
  interval_tree_foreach(&t, collect_visit, &c);
  CHECK("foreach: stops when asked", c.n == 7);
  bool ordered = true;
  for (size_t i = 0; i < 7; i++)
    ordered = ordered && seen[i] == &nodes[N - 1 - i];
  CHECK("foreach: first ones in order", ordered);
  collect_t all = {seen, 0, N, SIZE_MAX};
  interval_tree_foreach(&t, collect_visit, &all);
  ordered = all.n == N;
  for (size_t i = 0; ordered && i < N; i++)
    ordered = seen[i] == &nodes[N - 1 - i];
  CHECK("foreach: all in order", ordered);
}

/* ------------------------------------------------------------------------ */
/* 2. The checker on broken trees.                                           */

/* Test-side recomputation of heights and maxima, so that each broken tree
 * has exactly the one fault a case puts in it. */
static int fix_fields(itree_node_t *n) {
  if (!n)
    return 0;
  int hl = fix_fields(n->left), hr = fix_fields(n->right);
  n->height = 1 + (hl > hr ? hl : hr);
  n->max_ndatablocks = n->ndatablocks;
  if (n->left && n->left->max_ndatablocks > n->max_ndatablocks)
    n->max_ndatablocks = n->left->max_ndatablocks;
  if (n->right && n->right->max_ndatablocks > n->max_ndatablocks)
    n->max_ndatablocks = n->right->max_ndatablocks;
  return n->height;
}

static void set_node(itree_node_t *n, size_t page, size_t ndatablocks,
                     itree_node_t *left, itree_node_t *right) {
  n->start = SIM_BASE + page * PAGE;
  n->ndatablocks = ndatablocks;
  n->left = left;
  n->right = right;
}

/* The unbroken tree, 7 nodes, perfect:
 *                 d(30,+1)
 *            /               \
 *       b(10,+1)            f(50,+9)
 *       /      \            /      \
 *   a(0,+3)  c(20,+4)  e(40,+5)  g(60,+2)
 * (page, +ndatablocks), relative to SIM_BASE. */
enum { A, B, C, D, E, F, G, NNODES };

static void build7(itree_t *t, itree_node_t *n) {
  memset(n, 0, NNODES * sizeof *n);
  set_node(&n[A], 0, 3, NULL, NULL);
  set_node(&n[C], 20, 4, NULL, NULL);
  set_node(&n[E], 40, 5, NULL, NULL);
  set_node(&n[G], 60, 2, NULL, NULL);
  set_node(&n[B], 10, 1, &n[A], &n[C]);
  set_node(&n[F], 50, 9, &n[E], &n[G]);
  set_node(&n[D], 30, 1, &n[B], &n[F]);
  fix_fields(&n[D]);
  t->root = &n[D];
  t->count = 7;
  t->total_datablocks = 3 + 1 + 4 + 1 + 5 + 9 + 2;
}

/* is_valid must say no, with a reason that names the fault. */
static void expect_invalid(const char *name, const itree_t *t, bool coalesced,
                           const char *keyword) {
  char why[256];
  memset(why, 0, sizeof why);
  bool ok = interval_tree_is_valid(t, coalesced, why, sizeof why);
  CHECK(name, !ok);
  CHECK(name, why[0] != '\0');
  CHECK(name, keyword == NULL || strstr(why, keyword) != NULL);
  if (ok || (keyword && !strstr(why, keyword)))
    fprintf(stderr, "  %s: reason \"%s\", expected \"%s\"\n", name, why,
            keyword ? keyword : "");
}

static void test_checker(void) {
  itree_node_t n[NNODES];
  itree_t t;
  char why[256];

  build7(&t, n);
  strcpy(why, "stale");
  CHECK("checker: unbroken tree valid",
        interval_tree_is_valid(&t, true, why, sizeof why));
  CHECK("checker: empty reason on success", why[0] == '\0');
  CHECK("checker: unbroken tree valid, not coalesced", valid(&t, false));

  /* Order: a and c swap places (no overlap, just the wrong order). */
  build7(&t, n);
  n[A].start = SIM_BASE + 20 * PAGE;
  n[C].start = SIM_BASE + 0 * PAGE;
  n[A].ndatablocks = n[C].ndatablocks = 1;
  t.total_datablocks -= 3 + 4 - 2;
  fix_fields(&n[D]);
  expect_invalid("checker: wrong order", &t, false, "out of order");

  /* Order: equal starts. */
  build7(&t, n);
  n[C].start = n[B].start;
  n[B].ndatablocks = 1;
  expect_invalid("checker: equal starts", &t, false, "out of order");

  /* Overlap: a grows into b. */
  build7(&t, n);
  n[A].ndatablocks = 11;
  t.total_datablocks += 8;
  fix_fields(&n[D]);
  expect_invalid("checker: overlap", &t, false, "overlaps");

  /* Overlap across subtrees: c (left of the root) runs into d. */
  build7(&t, n);
  n[C].ndatablocks = 12;
  t.total_datablocks += 8;
  fix_fields(&n[D]);
  expect_invalid("checker: overlap with root", &t, false, "overlaps");

  /* Touching: legal unless coalesced. */
  build7(&t, n);
  n[E].ndatablocks = 10; /* 40 + 10 = 50 = f */
  t.total_datablocks += 5;
  fix_fields(&n[D]);
  CHECK("checker: touching ok when not coalesced", valid(&t, false));
  expect_invalid("checker: touching when coalesced", &t, true, "touches");
  build7(&t, n);
  n[C].ndatablocks = 10; /* 20 + 10 = 30 = d, across subtrees */
  t.total_datablocks += 6;
  fix_fields(&n[D]);
  CHECK("checker: touching root ok when not coalesced", valid(&t, false));
  expect_invalid("checker: touching root when coalesced", &t, true,
                 "touches");

  /* Stored heights. */
  build7(&t, n);
  n[D].height = 4;
  expect_invalid("checker: root height too big", &t, false, "stored height");
  build7(&t, n);
  n[G].height = 0;
  expect_invalid("checker: leaf height 0", &t, false, "stored height");
  build7(&t, n);
  n[B].height = -1;
  expect_invalid("checker: negative height", &t, false, "stored height -1");

  /* Balance: a chain d -> f -> g with correct stored fields. */
  build7(&t, n);
  n[D].left = NULL;
  n[F].left = NULL;
  fix_fields(&n[D]);
  t.count = 3;
  t.total_datablocks = 1 + 9 + 2;
  expect_invalid("checker: right chain", &t, false, "unbalanced");
  /* Balance: left subtree two higher, deeper in: b's left gets a chain. */
  build7(&t, n);
  n[D].right = &n[F];
  n[F].left = n[F].right = NULL;
  n[E].start = SIM_BASE + 2 * PAGE; /* hang e under a, then g under e */
  n[E].ndatablocks = 1;
  n[A].ndatablocks = 1;
  n[G].start = SIM_BASE + 4 * PAGE;
  n[G].ndatablocks = 1;
  n[A].right = &n[E];
  n[E].right = &n[G];
  fix_fields(&n[D]);
  t.total_datablocks = 1 + 1 + 1 + 1 + 4 + 1 + 9;
  expect_invalid("checker: deep imbalance", &t, false, "unbalanced");

  /* Maxima. */
  build7(&t, n);
  n[B].max_ndatablocks = 3; /* actual 4, from c */
  expect_invalid("checker: max too small", &t, false, "max_ndatablocks");
  build7(&t, n);
  n[D].max_ndatablocks = 10; /* actual 9 */
  expect_invalid("checker: max too big", &t, false, "max_ndatablocks");
  build7(&t, n);
  n[G].max_ndatablocks = 0;
  expect_invalid("checker: leaf max 0", &t, false, "max_ndatablocks");

  /* Count and total. */
  build7(&t, n);
  t.count = 8;
  expect_invalid("checker: count too big", &t, false, "count");
  build7(&t, n);
  t.count = 6;
  expect_invalid("checker: count too small", &t, false, "more nodes");
  build7(&t, n);
  t.count = 0;
  expect_invalid("checker: count 0", &t, false, "more nodes");
  build7(&t, n);
  t.total_datablocks++;
  expect_invalid("checker: total too big", &t, false, "total_datablocks");
  build7(&t, n);
  t.total_datablocks--;
  expect_invalid("checker: total too small", &t, false, "total_datablocks");
  interval_tree_init(&t);
  t.count = 1;
  expect_invalid("checker: empty tree, count 1", &t, false, "count");
  interval_tree_init(&t);
  t.total_datablocks = 1;
  expect_invalid("checker: empty tree, pages 1", &t, false, "total_datablocks");

  /* Bad extents. */
  build7(&t, n);
  n[E].ndatablocks = 0;
  t.total_datablocks -= 5;
  fix_fields(&n[D]);
  expect_invalid("checker: ndatablocks 0", &t, false, "ndatablocks is 0");
  build7(&t, n);
  n[E].start += 8;
  expect_invalid("checker: unaligned", &t, false, "not datablock aligned");
  {
    itree_node_t top = {.start = UINTPTR_MAX - PAGE + 1, .ndatablocks = 1};
    fix_fields(&top);
    t.root = &top;
    t.count = 1;
    t.total_datablocks = 1;
    expect_invalid("checker: extent wraps", &t, false, "address space");
    top.start = UINTPTR_MAX - 4 * PAGE + 1;
    top.ndatablocks = 8;
    t.total_datablocks = 8;
    fix_fields(&top);
    expect_invalid("checker: extent wraps by more", &t, false,
                   "address space");
  }

  /* Cycles must end the walk, not the process. */
  build7(&t, n);
  n[G].right = &n[D];
  expect_invalid("checker: cycle to the root", &t, false, NULL);
  build7(&t, n);
  n[A].left = &n[A];
  t.count = SIZE_MAX;
  expect_invalid("checker: left self-loop", &t, false, "deeper");
  {
    /* A right chain of 200 (each node's fields as they would be). */
    static itree_node_t chain[200];
    memset(chain, 0, sizeof chain);
    for (size_t i = 0; i < 200; i++)
      set_node(&chain[i], 2 * i, 1, NULL, i + 1 < 200 ? &chain[i + 1] : NULL);
    fix_fields(&chain[0]);
    t.root = &chain[0];
    t.count = 200;
    t.total_datablocks = 200;
    expect_invalid("checker: long chain", &t, false, NULL);
  }

  /* The reason buffer: truncated, terminated, optional. */
  build7(&t, n);
  t.count = 8;
  memset(why, 'x', sizeof why);
  CHECK("checker: small buffer",
        !interval_tree_is_valid(&t, false, why, 10) && strlen(why) == 9 &&
            why[10] == 'x');
  memset(why, 'x', sizeof why);
  CHECK("checker: size 1", !interval_tree_is_valid(&t, false, why, 1) &&
                               why[0] == '\0' && why[1] == 'x');
  memset(why, 'x', sizeof why);
  CHECK("checker: size 0", !interval_tree_is_valid(&t, false, why, 0) &&
                               why[0] == 'x');
  CHECK("checker: NULL reason", !interval_tree_is_valid(&t, false, NULL, 99));
}

/* ------------------------------------------------------------------------ */
/* 3. The corruption checks abort (in a child process).                      */

static itree_t death_tree;
static itree_node_t death_nodes[NNODES];

static void die_double_insert(void) {
  interval_tree_insert(&death_tree, &death_nodes[F]);
}

static void die_remove_stranger(void) {
  itree_node_t s = {.start = SIM_BASE + 70 * PAGE, .ndatablocks = 1};
  interval_tree_remove(&death_tree, &s);
}

static void die_remove_twin(void) {
  itree_node_t s = death_nodes[E]; /* same start, not the node in the tree */
  interval_tree_remove(&death_tree, &s);
}

static void die_resize_stranger(void) {
  itree_node_t s = {.start = SIM_BASE + 35 * PAGE, .ndatablocks = 1};
  interval_tree_resize(&death_tree, &s, s.start, 2);
}

#if MM_DEBUG >= 2
static void die_insert_overlap(void) {
  itree_node_t s = {.start = SIM_BASE + 23 * PAGE, .ndatablocks = 2}; /* in c */
  interval_tree_insert(&death_tree, &s);
}

static void die_resize_overlap(void) {
  itree_node_t *c = &death_nodes[C]; /* 20..24, d at 30 */
  interval_tree_resize(&death_tree, c, c->start, 11);
}

static void die_insert_empty(void) {
  itree_node_t s = {.start = SIM_BASE + 25 * PAGE, .ndatablocks = 0};
  interval_tree_insert(&death_tree, &s);
}
#endif

static bool aborts(void (*fn)(void)) {
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0)
    return false;
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0)
      dup2(fd, 2);
    build7(&death_tree, death_nodes);
    fn();
    _exit(0);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid)
    return false;
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void test_aborts(void) {
  CHECK("abort: double insert", aborts(die_double_insert));
  CHECK("abort: remove a stranger", aborts(die_remove_stranger));
  CHECK("abort: remove a twin", aborts(die_remove_twin));
  CHECK("abort: resize a stranger", aborts(die_resize_stranger));
#if MM_DEBUG >= 2
  CHECK("abort: overlapping insert", aborts(die_insert_overlap));
  CHECK("abort: overlapping resize", aborts(die_resize_overlap));
  CHECK("abort: empty insert", aborts(die_insert_empty));
#endif
}

/* ------------------------------------------------------------------------ */
/* 4. Sequential and bulk insertion: the AVL height bound holds.             */

static void test_sequential(size_t n) {
  itree_node_t *nodes = calloc(n, sizeof *nodes);
  itree_t t;
  REQUIRE("sequential: calloc", nodes != NULL);

  for (int descending = 0; descending < 2; descending++) {
    interval_tree_init(&t);
    for (size_t i = 0; i < n; i++) {
      size_t k = descending ? n - 1 - i : i;
      nodes[k].start = SIM_BASE + 8 * k * PAGE;
      nodes[k].ndatablocks = 1 + k % 5;
      interval_tree_insert(&t, &nodes[k]);
    }
    CHECK("sequential: valid", valid(&t, true));
    CHECK("sequential: height bound",
          tree_height(&t) <= avl_height_bound(t.count));
    CHECK("sequential: first_fit(5)", interval_tree_first_fit(&t, 5) ==
                                          &nodes[4]);
    CHECK("sequential: min", interval_tree_min(&t) == &nodes[0]);
    /* Remove from one end: the other extreme of the rebalancing. */
    for (size_t i = 0; i < n / 2; i++)
      interval_tree_remove(&t, &nodes[descending ? i : n - 1 - i]);
    CHECK("sequential: valid after removals", valid(&t, true));
    CHECK("sequential: height bound after removals",
          tree_height(&t) <= avl_height_bound(t.count));
    CHECK("sequential: count", t.count == n - n / 2);
  }
  free(nodes);
}

static void test_bulk(size_t n) {
  itree_node_t *nodes = calloc(n, sizeof *nodes);
  size_t *perm = calloc(n, sizeof *perm);
  itree_t t;
  REQUIRE("bulk: calloc", nodes && perm);

  for (size_t i = 0; i < n; i++)
    perm[i] = i;
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = rnd_below(i + 1), tmp = perm[i];
    perm[i] = perm[j];
    perm[j] = tmp;
  }
  interval_tree_init(&t);
  size_t pages = 0;
  for (size_t i = 0; i < n; i++) {
    itree_node_t *x = &nodes[perm[i]];
    x->start = SIM_BASE + 64 * perm[i] * PAGE;
    x->ndatablocks = 1 + rnd_below(63);
    pages += x->ndatablocks;
    interval_tree_insert(&t, x);
  }
  CHECK("bulk: valid", valid(&t, true));
  CHECK("bulk: totals", t.count == n && t.total_datablocks == pages);
  CHECK("bulk: height bound", tree_height(&t) <= avl_height_bound(n));
  bool found = true, neighbours = true;
  for (size_t i = 0; i < n; i++) {
    itree_node_t *x = &nodes[i];
    found = found && interval_tree_find(&t, x->start + PAGE / 2) == x &&
            interval_tree_find(&t, end_of(x)) == NULL;
    neighbours = neighbours &&
                 interval_tree_prev(&t, x) == (i ? &nodes[i - 1] : NULL) &&
                 interval_tree_next(&t, x) == (i + 1 < n ? &nodes[i + 1]
                                                         : NULL);
  }
  CHECK("bulk: find", found);
  CHECK("bulk: prev/next", neighbours);
  for (size_t i = 0; i < n; i += 2) /* every other in shuffled order */
    interval_tree_remove(&t, &nodes[perm[i]]);
  CHECK("bulk: valid after removing half", valid(&t, true));
  CHECK("bulk: height bound after removing half",
        tree_height(&t) <= avl_height_bound(t.count));
  for (size_t i = 1; i < n; i += 2)
    interval_tree_remove(&t, &nodes[perm[i]]);
  CHECK("bulk: empty at the end", !t.root && t.count == 0 &&
                                      t.total_datablocks == 0 && valid(&t, true));
  free(perm);
  free(nodes);
}

/* ------------------------------------------------------------------------ */
/* 5. The random run against a model.                                        */

/* The model: the free extents as a sorted array, each with its tree node. */
typedef struct ext_s {
  uintptr_t start;
  size_t ndatablocks;
  itree_node_t *node;
} ext_t;

#define POOL_NODES ((size_t)1 << 16)

static ext_t *model;
static size_t model_n, model_pages;
static itree_node_t *pool;
static itree_node_t **pool_free;
static size_t pool_free_n;
static itree_t tree;

/* What the run got to exercise; checked at the end so that a change to the
 * generator cannot quietly stop covering a case. */
static struct {
  size_t merge_left, merge_right, merge_both, merge_none;
  size_t fit_null, fit_whole, fit_front, fit_back, fit_middle;
  size_t shrink_front, shrink_back, grow_back, grow_front, grow_merge;
  size_t release, finds, find_hits, empty_seen, max_count, prev_fits;
} stats;

static itree_node_t *node_get(void) {
  return pool_free_n ? pool_free[--pool_free_n] : NULL;
}

static void node_put(itree_node_t *n) {
  memset(n, 0xa5, sizeof *n); /* a stale node must not look sane */
  pool_free[pool_free_n++] = n;
}

/* First index whose start is > addr. */
static size_t model_upper(uintptr_t addr) {
  size_t lo = 0, hi = model_n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (model[mid].start <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static uintptr_t model_end(size_t i) {
  return model[i].start + model[i].ndatablocks * PAGE;
}

/* Index of the extent holding addr, or SIZE_MAX. */
static size_t model_find(uintptr_t addr) {
  size_t i = model_upper(addr);
  if (i == 0 || addr >= model_end(i - 1))
    return SIZE_MAX;
  return i - 1;
}

static itree_node_t *model_node_at(uintptr_t addr) {
  size_t i = model_find(addr);
  return i == SIZE_MAX ? NULL : model[i].node;
}

static void model_insert(size_t i, uintptr_t start, size_t ndatablocks,
                         itree_node_t *node) {
  memmove(&model[i + 1], &model[i], (model_n - i) * sizeof *model);
  model[i] = (ext_t){start, ndatablocks, node};
  model_n++;
  model_pages += ndatablocks;
}

static void model_remove(size_t i) {
  model_pages -= model[i].ndatablocks;
  memmove(&model[i], &model[i + 1], (model_n - i - 1) * sizeof *model);
  model_n--;
}

static void model_set(size_t i, uintptr_t start, size_t ndatablocks) {
  model_pages = model_pages - model[i].ndatablocks + ndatablocks;
  model[i].start = start;
  model[i].ndatablocks = ndatablocks;
}

/* Tree and model together. */
static void both_insert(size_t i, uintptr_t start, size_t ndatablocks,
                        itree_node_t *node) {
  node->start = start;
  node->ndatablocks = ndatablocks;
  interval_tree_insert(&tree, node);
  model_insert(i, start, ndatablocks, node);
}

static void both_remove(size_t i) {
  itree_node_t *node = model[i].node;
  interval_tree_remove(&tree, node);
  model_remove(i);
  node_put(node);
}

static void both_resize(size_t i, uintptr_t start, size_t ndatablocks) {
  interval_tree_resize(&tree, model[i].node, start, ndatablocks);
  model_set(i, start, ndatablocks);
}

/* Free [start, start + ndatablocks pages), which lies in an allocated gap
 * before model[i] (i == model_n: after the last extent), merging it with
 * the free extents it touches, the two ways a local heap may do it. */
static void free_extent(size_t i, uintptr_t start, size_t ndatablocks) {
  uintptr_t end = start + ndatablocks * PAGE;
  bool touch_left = i > 0 && model_end(i - 1) == start;
  bool touch_right = i < model_n && model[i].start == end;

  if (rnd() & 1) {
    /* Look the neighbours up first, by any address in the page beside. */
    uintptr_t below = start - 1 - rnd_below(PAGE);
    itree_node_t *l =
        start > SIM_BASE ? interval_tree_find(&tree, below) : NULL;
    itree_node_t *r = interval_tree_find(&tree, end + rnd_below(PAGE));
    REQUIRE("free: left neighbour by find",
            l == (touch_left ? model[i - 1].node : NULL));
    REQUIRE("free: right neighbour by find",
            r == (touch_right ? model[i].node : NULL));
    if (l && r) {
      size_t total = model[i - 1].ndatablocks + ndatablocks + model[i].ndatablocks;
      both_remove(i);
      both_resize(i - 1, model[i - 1].start, total);
    } else if (l) {
      both_resize(i - 1, model[i - 1].start, model[i - 1].ndatablocks + ndatablocks);
    } else if (r) {
      both_resize(i, start, model[i].ndatablocks + ndatablocks);
    } else {
      itree_node_t *node = node_get();
      if (!node)
        return; /* out of descriptors: drop this free */
      both_insert(i, start, ndatablocks, node);
    }
  } else {
    /* Insert first, then merge with what prev/next find touching. */
    itree_node_t *node = node_get();
    if (!node)
      return;
    both_insert(i, start, ndatablocks, node);
    itree_node_t *p = interval_tree_prev(&tree, node);
    itree_node_t *q = interval_tree_next(&tree, node);
    REQUIRE("free: prev", p == (i > 0 ? model[i - 1].node : NULL));
    REQUIRE("free: next", q == (i + 1 < model_n ? model[i + 1].node : NULL));
    if (p && end_of(p) == start) {
      both_remove(i);
      i--;
      both_resize(i, model[i].start, model[i].ndatablocks + ndatablocks);
    }
    if (q && end_of(model[i].node) == q->start) {
      size_t more = model[i + 1].ndatablocks;
      both_remove(i + 1);
      both_resize(i, model[i].start, model[i].ndatablocks + more);
    }
  }
  if (touch_left && touch_right)
    stats.merge_both++;
  else if (touch_left)
    stats.merge_left++;
  else if (touch_right)
    stats.merge_right++;
  else
    stats.merge_none++;
}

/* Free a random part of the allocated space. */
static void op_free(void) {
  uintptr_t addr = 0;
  size_t tries;
  for (tries = 0; tries < 8; tries++) {
    addr = SIM_BASE + rnd_below(SIM_PAGES) * PAGE;
    if (model_find(addr) == SIZE_MAX)
      break;
  }
  if (tries == 8)
    return;
  size_t i = model_upper(addr);
  uintptr_t lo = i > 0 ? model_end(i - 1) : SIM_BASE;
  uintptr_t hi = i < model_n ? model[i].start : SIM_END;
  size_t gap = (hi - lo) / PAGE;
  size_t cap = rnd_below(8) == 0 ? gap : 1 + rnd_below(64);
  if (cap > gap)
    cap = gap;
  size_t ndatablocks = rnd_between(1, cap);
  uintptr_t start;
  switch (rnd_below(20)) {
  case 0: /* the whole gap: merges on both sides */
    start = lo;
    ndatablocks = gap;
    break;
  case 1:
  case 2:
  case 3: /* touching the extent below */
    start = lo;
    break;
  case 4:
  case 5:
  case 6: /* touching the extent above */
    start = hi - ndatablocks * PAGE;
    break;
  default:
    start = lo + rnd_below(gap - ndatablocks + 1) * PAGE;
    break;
  }
  free_extent(i, start, ndatablocks);
}

/* The fit of n below an address (the start of an extent, an address
 * inside one, or the top), against the model; and every fit of n in turn
 * from the top down, each found from the one before. */
static void check_prev_fit(size_t n) {
  uintptr_t before = UINTPTR_MAX;
  switch (model_n ? rnd_below(3) : 0) {
  case 1:
    before = model[rnd_below(model_n)].start;
    break;
  case 2:
    before = SIM_BASE + rnd_below(SIM_PAGES * PAGE);
    break;
  }
  size_t below = model_upper(before); /* the extents starting at or below it */
  if (below && model[below - 1].start == before) below--; /* strictly below */
  while (below > 0 && model[below - 1].ndatablocks < n) below--;
  REQUIRE("prev fit below an address",
          interval_tree_prev_fit(&tree, before, n) == (below ? model[below - 1].node : NULL));
  if (rnd_below(16)) return;
  itree_node_t *node = interval_tree_prev_fit(&tree, UINTPTR_MAX, n);
  for (size_t i = model_n; i-- > 0;) {
    if (model[i].ndatablocks < n) continue;
    REQUIRE("prev fit: every fit from the top down", node == model[i].node);
    node = interval_tree_prev_fit(&tree, node->start, n);
    stats.prev_fits++;
  }
  REQUIRE("prev fit: none below the lowest", node == NULL);
}

/* Allocate n pages by first fit and carve them out of the extent. */
static void op_alloc(void) {
  size_t lg = SIZE_MAX; /* the model's largest: lowest index among equals */
  for (size_t i = 0; i < model_n; i++)
    if (lg == SIZE_MAX || model[i].ndatablocks > model[lg].ndatablocks)
      lg = i;
  size_t biggest = lg == SIZE_MAX ? 0 : model[lg].ndatablocks;
  itree_node_t *tl = interval_tree_largest(&tree);
  REQUIRE("alloc: largest", tl == (lg == SIZE_MAX ? NULL : model[lg].node));

  size_t n;
  switch (rnd_below(20)) {
  case 0: /* more than anything */
    n = biggest + 1 + rnd_below(4);
    break;
  case 1:
    n = SIZE_MAX - rnd_below(2);
    break;
  case 2:
  case 3: /* exactly the largest */
    n = biggest ? biggest : 1;
    break;
  case 4:
  case 5:
  case 6:
    n = 1 + rnd_below(biggest + 1);
    break;
  case 7:
  case 8:
  case 9:
  case 10:
    n = 1 + rnd_below(256);
    break;
  default:
    n = 1 + rnd_below(8);
    break;
  }
  size_t want = SIZE_MAX;
  for (size_t i = 0; i < model_n; i++)
    if (model[i].ndatablocks >= n) {
      want = i;
      break;
    }
  itree_node_t *got = interval_tree_first_fit(&tree, n);
  REQUIRE("alloc: first fit", got == (want == SIZE_MAX ? NULL
                                                        : model[want].node));
  check_prev_fit(n);
  if (!got) {
    stats.fit_null++;
    return;
  }
  size_t i = want;
  uintptr_t start = model[i].start;
  size_t have = model[i].ndatablocks;
  if (have == n) {
    both_remove(i);
    stats.fit_whole++;
    return;
  }
  switch (rnd_below(3)) {
  case 0: /* from the front */
    both_resize(i, start + n * PAGE, have - n);
    stats.fit_front++;
    break;
  case 1: /* from the back */
    both_resize(i, start, have - n);
    stats.fit_back++;
    break;
  default: { /* from the middle: the extent splits in two */
    itree_node_t *tail = have - n >= 2 ? node_get() : NULL;
    if (!tail) {
      both_resize(i, start, have - n);
      stats.fit_back++;
      break;
    }
    size_t head = 1 + rnd_below(have - n - 1);
    both_resize(i, start, head);
    both_insert(i + 1, start + (head + n) * PAGE, have - head - n, tail);
    stats.fit_middle++;
    break;
  }
  }
}

/* Allocate a whole random extent, found by an address inside it. */
static void op_release(void) {
  if (!model_n)
    return;
  size_t i = rnd_below(model_n);
  uintptr_t addr = model[i].start + rnd_below(model[i].ndatablocks * PAGE);
  REQUIRE("release: find", interval_tree_find(&tree, addr) == model[i].node);
  both_remove(i);
  stats.release++;
}

/* Shrink or grow a random extent in place (realloc of a neighbour). */
static void op_resize(void) {
  if (!model_n)
    return;
  size_t i = rnd_below(model_n);
  uintptr_t start = model[i].start;
  size_t np = model[i].ndatablocks;
  switch (rnd_below(4)) {
  case 0:
    if (np < 2)
      return;
    {
      size_t k = rnd_between(1, np - 1);
      both_resize(i, start + k * PAGE, np - k);
    }
    stats.shrink_front++;
    break;
  case 1:
    if (np < 2)
      return;
    both_resize(i, start, np - rnd_between(1, np - 1));
    stats.shrink_back++;
    break;
  case 2: { /* grow at the back, merging if it reaches the next extent */
    uintptr_t hi = i + 1 < model_n ? model[i + 1].start : SIM_END;
    size_t gap = (hi - model_end(i)) / PAGE;
    if (gap == 0)
      return;
    size_t k = rnd_below(3) == 0 ? gap : rnd_between(1, gap);
    if (k == gap && i + 1 < model_n) {
      size_t more = model[i + 1].ndatablocks;
      both_remove(i + 1);
      both_resize(i, start, np + k + more);
      stats.grow_merge++;
    } else {
      both_resize(i, start, np + k);
      stats.grow_back++;
    }
    break;
  }
  default: { /* grow at the front, merging if it reaches the one before */
    uintptr_t lo = i > 0 ? model_end(i - 1) : SIM_BASE;
    size_t gap = (start - lo) / PAGE;
    if (gap == 0)
      return;
    size_t k = rnd_below(3) == 0 ? gap : rnd_between(1, gap);
    if (k == gap && i > 0) {
      /* The lower extent goes; this node grows down over its place. */
      uintptr_t new_start = model[i - 1].start;
      size_t more = model[i - 1].ndatablocks;
      both_remove(i - 1);
      both_resize(i - 1, new_start, np + k + more);
      stats.grow_merge++;
    } else {
      both_resize(i, start - k * PAGE, np + k);
      stats.grow_front++;
    }
    break;
  }
  }
}

/* Lookups: find at edges, inside, in gaps and far away; prev and next. */
static void op_find(void) {
  for (int j = 0; j < 4; j++) {
    uintptr_t addr;
    size_t i = model_n ? rnd_below(model_n) : 0;
    switch (model_n ? rnd_below(9) : 0) {
    case 0:
      addr = SIM_BASE - 4 * PAGE + rnd_below((SIM_PAGES + 8) * PAGE);
      break;
    case 1:
      addr = model[i].start;
      break;
    case 2:
      addr = model_end(i) - 1;
      break;
    case 3:
      addr = model_end(i);
      break;
    case 4:
      addr = model[i].start - 1;
      break;
    case 5:
      addr = model[i].start + rnd_below(model[i].ndatablocks * PAGE);
      break;
    case 6:
      addr = rnd_below(2) ? 0 : UINTPTR_MAX;
      break;
    case 7:
      addr = SIM_BASE + rnd_below(SIM_PAGES) * PAGE;
      break;
    default:
      addr = rnd_below(2) ? SIM_BASE - 1 : SIM_END;
      break;
    }
    itree_node_t *got = interval_tree_find(&tree, addr);
    REQUIRE("find", got == model_node_at(addr));
    stats.finds++;
    stats.find_hits += got != NULL;
  }
  if (model_n) {
    size_t i = rnd_below(model_n);
    REQUIRE("prev", interval_tree_prev(&tree, model[i].node) ==
                        (i > 0 ? model[i - 1].node : NULL));
    REQUIRE("next", interval_tree_next(&tree, model[i].node) ==
                        (i + 1 < model_n ? model[i + 1].node : NULL));
  }
}

static itree_node_t **walk_buf;

/* The whole in-order contents against the model. */
static void compare_full(const char *when) {
  collect_t c = {walk_buf, 0, POOL_NODES, SIZE_MAX};
  interval_tree_foreach(&tree, collect_visit, &c);
  bool same = c.n == model_n;
  for (size_t i = 0; same && i < model_n; i++)
    same = walk_buf[i] == model[i].node &&
           walk_buf[i]->start == model[i].start &&
           walk_buf[i]->ndatablocks == model[i].ndatablocks;
  if (!same)
    fprintf(stderr, "  contents differ %s\n", when);
  REQUIRE("contents equal the model", same);
  REQUIRE("min", interval_tree_min(&tree) ==
                     (model_n ? model[0].node : NULL));
}

static void check_after(size_t op, const char *what) {
  char why[256];
  bool ok = interval_tree_is_valid(&tree, true, why, sizeof why);
  bool counts = tree.count == model_n && tree.total_datablocks == model_pages;
  if (!ok || !counts)
    fprintf(stderr, "  after op %zu (%s): %s; count %zu/%zu pages %zu/%zu\n",
            op, what, ok ? "valid" : why, tree.count, model_n,
            tree.total_datablocks, model_pages);
  REQUIRE("valid after every op", ok);
  REQUIRE("count and pages after every op", counts);
  if (op % 100 == 0 || model_n <= 4)
    compare_full(what);
}

static void test_random(uint64_t seed, size_t ops) {
  /* Operation weights, out of 100: free, alloc, release, resize, find.
   * The tree size follows a target that rises from 0 to TARGET_PEAK and
   * back every TARGET_PERIOD ops (the run sees empty, small and large
   * trees, and growth and shrinkage), and every 25000 ops the tree is
   * drained to empty.  The peak is a compromise with the run time: at
   * MM_DEBUG=3 every mutation walks the whole tree twice. */
  enum { TARGET_PEAK = 1200, TARGET_PERIOD = 12500 };
  static const unsigned weights[2][5] = {
      {60, 15, 3, 12, 10}, /* grow towards the target */
      {15, 38, 20, 17, 10}, /* shrink towards it */
  };
  static const char *const names[5] = {"free", "alloc", "release", "resize",
                                       "find"};
  model = calloc(POOL_NODES + 1, sizeof *model);
  pool = calloc(POOL_NODES, sizeof *pool);
  pool_free = calloc(POOL_NODES, sizeof *pool_free);
  walk_buf = calloc(POOL_NODES, sizeof *walk_buf);
  REQUIRE("random: calloc", model && pool && pool_free && walk_buf);
  for (size_t i = 0; i < POOL_NODES; i++)
    pool_free[i] = &pool[POOL_NODES - 1 - i];
  pool_free_n = POOL_NODES;
  model_n = model_pages = 0;
  interval_tree_init(&tree);
  rng_state = seed;

  for (size_t op = 1; op <= ops; op++) {
    size_t phase = op % TARGET_PERIOD, half = TARGET_PERIOD / 2;
    size_t target = (phase < half ? phase : TARGET_PERIOD - phase) *
                    TARGET_PEAK / half;
    const unsigned *w = weights[model_n < target ? 0 : 1];
    unsigned r = (unsigned)rnd_below(100), k = 0;
    while (k < 4 && r >= w[k]) {
      r -= w[k];
      k++;
    }
    switch (k) {
    case 0:
      op_free();
      break;
    case 1:
      op_alloc();
      break;
    case 2:
      op_release();
      break;
    case 3:
      op_resize();
      break;
    default:
      op_find();
      break;
    }
    check_after(op, names[k]);
    if (model_n > stats.max_count)
      stats.max_count = model_n;
    if (op % 25000 == 0) {
      while (model_n) {
        op_release();
        check_after(op, "drain");
      }
    }
    if (model_n == 0)
      stats.empty_seen++;
  }
  compare_full("at the end");

  fprintf(stderr,
          "  random: max %zu extents, merges none/left/right/both "
          "%zu/%zu/%zu/%zu, fits null/whole/front/back/middle "
          "%zu/%zu/%zu/%zu/%zu, resizes %zu/%zu/%zu/%zu/%zu, "
          "finds %zu (%zu hits), empty %zu times\n",
          stats.max_count, stats.merge_none, stats.merge_left,
          stats.merge_right, stats.merge_both, stats.fit_null,
          stats.fit_whole, stats.fit_front, stats.fit_back, stats.fit_middle,
          stats.shrink_front, stats.shrink_back, stats.grow_front,
          stats.grow_back, stats.grow_merge, stats.finds, stats.find_hits,
          stats.empty_seen);
  if (ops >= 100000) { /* the default run must reach every case */
    CHECK("random: coverage of frees",
          stats.merge_none && stats.merge_left && stats.merge_right &&
              stats.merge_both);
    CHECK("random: coverage of fits",
          stats.fit_null && stats.fit_whole && stats.fit_front &&
              stats.fit_back && stats.fit_middle);
    CHECK("random: coverage of resizes",
          stats.shrink_front && stats.shrink_back && stats.grow_front &&
              stats.grow_back && stats.grow_merge);
    CHECK("random: coverage of sizes",
          stats.max_count >= 1000 && stats.empty_seen > 0 && stats.release);
    CHECK("random: prev fits walked", stats.prev_fits >= 1000);
  }
  free(walk_buf);
  free(pool_free);
  free(pool);
  free(model);
}

int main(int argc, char **argv) {
  uint64_t seed = 0x6d6d616c6c6f6321u; /* "mmalloc!" */
  size_t ops = 100000;
  if (argc > 1)
    seed = strtoull(argv[1], NULL, 0);
  if (argc > 2)
    ops = (size_t)strtoull(argv[2], NULL, 0);
  fprintf(stderr, "test_interval_tree: seed 0x%016" PRIx64 ", %zu ops "
                  "(MM_DEBUG=%d)\n", seed, ops, MM_DEBUG);
  rng_state = seed;

  test_empty();
  test_one_node();
  test_ties();
  test_foreach_stop();
  test_checker();
  test_aborts();
  /* Level 3 walks the whole tree twice per mutation: keep n small there. */
  test_sequential(MM_DEBUG >= 3 ? 1000 : 100000);
  test_bulk(MM_DEBUG >= 3 ? 2000 : 200000);
  test_random(seed, ops);

  char suite[96];
  snprintf(suite, sizeof suite, "unit_interval_tree (seed 0x%016" PRIx64 ")",
           seed);
  return check_summary(suite);
}
