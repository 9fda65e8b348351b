/* interval_tree.c — the free-extent tree of one local heap.
 *
 * Owns: the AVL tree of free extents declared in interval_tree.h: its
 * insert, remove and resize (with rebalancing and the subtree maxima),
 * its queries (first fit, largest, find, prev/next, min, foreach) and its
 * checker.  It does not own the nodes: they live in the caller's extent
 * descriptors, and the caller's lock (the local heap's) serialises every
 * call.  The tree never allocates, never locks, and prints nothing except
 * on the panic path (os_fatal: one write(2), then abort).
 *
 * Layer: tree (above os, below region: region.h embeds a node in every
 * extent descriptor, and the local heap files use the tree).  It calls
 * nothing but os_fatal on the panic path and os_format in the checker.
 *
 * Invariants (interval_tree_is_valid checks all of them):
 *   order:    in-order starts strictly increase, and
 *             a.start + a.ndatablocks * DATABLOCK <= b.start for consecutive a, b;
 *             with coalescing expected, strictly <
 *   extent:   ndatablocks > 0, start % DATABLOCK == 0, and the extent ends at or
 *             below UINTPTR_MAX - DATABLOCK + 1, so `end` never overflows
 *   AVL:      height = 1 + max(height(left), height(right)), NULL has 0,
 *             |height(left) - height(right)| <= 1
 *   maxima:   max_ndatablocks = max(ndatablocks, left.max_ndatablocks, right.max_ndatablocks)
 *   counts:   count = #nodes, total_datablocks = sum of ndatablocks
 *
 * Why AVL rather than red-black: AVL trees are more strictly balanced
 * (height <= 1.44 log2 n against 2 log2 n), and every first-fit, find and
 * prev/next is one root-to-leaf descent, which is what the large-block path
 * does most.  The stored height doubles as the balance information and the
 * maxima ride along the same fix-up walk.
 *
 * No parent pointers (the node is 48 bytes on LP64 and stays so): mutators
 * record the path of links (the `itree_node_t **` that points at each node
 * on the way down) on the stack and walk it back up.  A path can never be
 * longer than ITREE_MAX_HEIGHT (below), so the stack is a fixed array.
 */
#include "interval_tree.h"

#include "debug.h"
#include "os.h"

/* The highest an AVL tree can be.  An AVL tree of height h holds at least
 * N(h) = N(h-1) + N(h-2) + 1 nodes (N(0) = 0, N(1) = 1); N(92) > 2^64, so a
 * tree whose count fits in a 64-bit size_t is at most 91 high.  A longer
 * path means a corrupt tree (a cycle), which the mutators refuse. */
#define ITREE_MAX_HEIGHT 91
_Static_assert(sizeof(size_t) <= 8, "ITREE_MAX_HEIGHT assumes count < 2^64");
_Static_assert(sizeof(uintptr_t) == sizeof(size_t),
               "extent arithmetic mixes uintptr_t addresses and size_t sizes");
/* The node is metadata in every extent descriptor: keep it to 6 words. */
_Static_assert(sizeof(itree_node_t) <= 6 * sizeof(void *),
               "itree_node_t grew: extent descriptors grow with it");

#define ITREE_DATABLOCK_MASK ((uintptr_t)MM_DATABLOCK_SIZE - 1)

/* ------------------------------------------------------------------------ */
/* Panic path: cold, never allocates (os_fatal).                            */

static void itree_panic(const char *what, const char *detail)
    __attribute__((noreturn, noinline, cold));

static void itree_panic(const char *what, const char *detail) {
  os_fatal("mmalloc: interval tree: %s%s%s\n", what, detail ? ": " : "",
           detail ? detail : "");
}

/* ------------------------------------------------------------------------ */
/* Node helpers.                                                             */

static inline int itree_height(const itree_node_t *n) {
  return n ? n->height : 0;
}

static inline size_t itree_max(const itree_node_t *n) {
  return n ? n->max_ndatablocks : 0;
}

/* First byte past the extent; valid extents never overflow (see above). */
static inline uintptr_t itree_end(const itree_node_t *n) {
  return n->start + n->ndatablocks * MM_DATABLOCK_SIZE;
}

/* A well-formed extent: at least one datablock, datablock aligned, and its end is
 * representable.  (UINTPTR_MAX - start) >> SHIFT datablocks fit above start. */
static inline bool itree_extent_ok(uintptr_t start, size_t ndatablocks) {
  return ndatablocks > 0 && (start & ITREE_DATABLOCK_MASK) == 0 &&
         ndatablocks <= (UINTPTR_MAX - start) >> MM_DATABLOCK_SHIFT;
}

static inline void itree_update_max(itree_node_t *n) {
  size_t m = n->ndatablocks;
  size_t l = itree_max(n->left), r = itree_max(n->right);
  if (l > m)
    m = l;
  if (r > m)
    m = r;
  n->max_ndatablocks = m;
}

/* Recompute a node's height and maximum from its (correct) children. */
static inline void itree_update(itree_node_t *n) {
  int hl = itree_height(n->left), hr = itree_height(n->right);
  n->height = 1 + (hl > hr ? hl : hr);
  itree_update_max(n);
}

/* Rotations.  Both keep the in-order sequence A x B y C; only B changes
 * parent.  The node that ends lower is updated first, because the upper
 * one's height and maximum are computed from it.
 *
 *   itree_rotate_right(y)                 itree_rotate_left(x)
 *
 *         y                x                   x                  y
 *        / \              / \                 / \                / \
 *       x   C    --->    A   y               A   y     --->     x   C
 *      / \                  / \                 / \            / \
 *     A   B                B   C               B   C          A   B
 */
static inline itree_node_t *itree_rotate_right(itree_node_t *y) {
  itree_node_t *x = y->left;
  y->left = x->right;
  x->right = y;
  itree_update(y);
  itree_update(x);
  return x;
}

static inline itree_node_t *itree_rotate_left(itree_node_t *x) {
  itree_node_t *y = x->right;
  x->right = y->left;
  y->left = x;
  itree_update(x);
  itree_update(y);
  return y;
}

/* Restore the AVL condition at n, whose children are valid AVL trees with
 * heights differing by at most 2; returns the subtree's new root.
 *
 * When the taller child leans the other way, a single rotation would only
 * move the imbalance, so it is first turned to lean outwards (the double
 * rotation).  Left-right case, z too high on the left:
 *
 *         z                   z                    y
 *        / \                 / \                 /   \
 *       x   D    x left     y   D    z right    x     z
 *      / \       ----->    / \       ------>   / \   / \
 *     A   y               x   C               A   B C   D
 *        / \             / \
 *       B   C           A   B
 *
 * The right-left case is its mirror.  A taller child that does not lean
 * (possible after a removal) takes the single rotation. */
static itree_node_t *itree_rebalance(itree_node_t *n) {
  int hl = itree_height(n->left), hr = itree_height(n->right);
  if (hl > hr + 1) {
    itree_node_t *l = n->left;
    if (itree_height(l->left) < itree_height(l->right))
      n->left = itree_rotate_left(l);
    return itree_rotate_right(n);
  }
  if (hr > hl + 1) {
    itree_node_t *r = n->right;
    if (itree_height(r->right) < itree_height(r->left))
      n->right = itree_rotate_right(r);
    return itree_rotate_left(n);
  }
  itree_update(n);
  return n;
}

/* Walk the recorded path back up from path[top], rebalancing each node and
 * storing the new subtree root through its link.  Once a subtree's height
 * and maximum come out as they were, nothing above it can change, so the
 * walk stops; but only at or above path[floor]: below it the stored values
 * are not the old ones of that position (see remove). */
static void itree_fix_path(itree_node_t **path[], int top, int floor) {
  for (int i = top; i >= 0; i--) {
    itree_node_t *n = *path[i];
    int old_height = n->height;
    size_t old_max = n->max_ndatablocks;
    itree_node_t *r = itree_rebalance(n);
    *path[i] = r;
    if (i <= floor && r->height == old_height && r->max_ndatablocks == old_max)
      return;
  }
}

/* Descend from the root to `node`, recording the links on the way; returns
 * the depth (number of links recorded, the last one pointing at node).
 * A node that is not in the tree is a caller bug that would corrupt it:
 * always checked (the descent has to test for NULL anyway). */
static int itree_path_to(itree_t *t, const itree_node_t *node,
                         itree_node_t **path[], const char *op) {
  itree_node_t **link = &t->root;
  int depth = 0;
  for (;;) {
    itree_node_t *cur = *link;
    if (!cur)
      itree_panic(op, "node is not in the tree");
    if (depth == ITREE_MAX_HEIGHT)
      itree_panic(op, "path longer than any AVL tree (corrupt tree)");
    path[depth++] = link;
    if (cur == node)
      return depth;
    if (node->start < cur->start)
      link = &cur->left;
    else if (node->start > cur->start)
      link = &cur->right;
    else
      itree_panic(op, "another node holds this start: node not in the tree");
  }
}

#if MM_DEBUG >= 3
/* Level 3: whole-tree walk on entry and exit of every mutator.  Coalescing
 * is not required here: the caller touches neighbours transiently while it
 * merges them. */
static void itree_debug_check(const itree_t *t, const char *where) {
  char why[200];
  if (!interval_tree_is_valid(t, false, why, sizeof why))
    itree_panic(where, why);
}
#else
static inline void itree_debug_check(const itree_t *t, const char *where) {
  (void)t;
  (void)where;
}
#endif

#if MM_DEBUG >= 2
/* Level 2: the extent [start, start + ndatablocks datablocks) is well formed and
 * fits between its in-order neighbours pred and succ (either may be NULL). */
static void itree_debug_fits(const itree_node_t *pred, const itree_node_t *succ,
                             uintptr_t start, size_t ndatablocks, const char *op) {
  if (!itree_extent_ok(start, ndatablocks))
    itree_panic(op, "extent empty, unaligned or past the address space");
  if (pred && itree_end(pred) > start)
    itree_panic(op, "extent overlaps the extent below it");
  if (succ && start + ndatablocks * MM_DATABLOCK_SIZE > succ->start)
    itree_panic(op, "extent overlaps the extent above it");
}
#endif

/* ------------------------------------------------------------------------ */
/* Mutators.                                                                 */

void interval_tree_init(itree_t *t) {
  t->root = NULL;
  t->count = 0;
  t->total_datablocks = 0;
}

void interval_tree_insert(itree_t *t, itree_node_t *node) {
  itree_node_t **path[ITREE_MAX_HEIGHT];
  itree_node_t **link = &t->root;
  const itree_node_t *pred = NULL, *succ = NULL;
  int depth = 0;

  itree_debug_check(t, "insert (entry)");
  while (*link) {
    itree_node_t *cur = *link;
    if (depth == ITREE_MAX_HEIGHT)
      itree_panic("insert", "path longer than any AVL tree (corrupt tree)");
    path[depth++] = link;
    if (node->start < cur->start) {
      succ = cur;
      link = &cur->left;
    } else if (node->start > cur->start) {
      pred = cur;
      link = &cur->right;
    } else {
      /* Equal keys: the node is already in (a double insert would make a
       * cycle) or two extents overlap.  Free to test, so always on. */
      itree_panic("insert", "an extent with this start is already in");
    }
  }
#if MM_DEBUG >= 2
  itree_debug_fits(pred, succ, node->start, node->ndatablocks, "insert");
#else
  (void)pred;
  (void)succ;
#endif
  node->left = NULL;
  node->right = NULL;
  node->height = 1;
  node->max_ndatablocks = node->ndatablocks;
  *link = node;
  t->count++;
  t->total_datablocks += node->ndatablocks;
  itree_fix_path(path, depth - 1, depth - 1);
  itree_debug_check(t, "insert (exit)");
}

/* Removing a node with two children: its in-order successor s (leftmost
 * of the right subtree, so s has no left child) is unhooked from its place
 * (its right child R takes it) and takes the node's place, children and
 * stored height/maximum.  The path recorded down to s is then fixed up
 * from s's old parent; the link that led through node->right now leads
 * through s->right.
 *
 *        node                s
 *        /  \               / \
 *       A    C             A   C
 *           / \    --->       / \
 *          s   D             R   D
 *           \
 *            R
 *
 * Giving s the node's old height/maximum keeps "unchanged, stop" honest at
 * s's new position and above.  Below that position the walk may not stop
 * even where a subtree comes out unchanged: s's position itself must still
 * be recomputed, since there s's ndatablocks replaced the node's. */
void interval_tree_remove(itree_t *t, itree_node_t *node) {
  itree_node_t **path[ITREE_MAX_HEIGHT];

  itree_debug_check(t, "remove (entry)");
  int depth = itree_path_to(t, node, path, "remove");
  int k = depth - 1; /* path[k] points at node */

  if (!node->left || !node->right) {
    *path[k] = node->left ? node->left : node->right;
    itree_fix_path(path, k - 1, k - 1);
  } else {
    itree_node_t **slink = &node->right;
    for (;;) {
      if (depth == ITREE_MAX_HEIGHT)
        itree_panic("remove", "path longer than any AVL tree (corrupt tree)");
      path[depth++] = slink;
      if (!(*slink)->left)
        break;
      slink = &(*slink)->left;
    }
    itree_node_t *s = *slink;
    *slink = s->right; /* when s == node->right this sets node->right */
    s->left = node->left;
    s->right = node->right;
    s->height = node->height;
    s->max_ndatablocks = node->max_ndatablocks;
    *path[k] = s;
    path[k + 1] = &s->right;
    itree_fix_path(path, depth - 2, k);
  }
  t->count--;
  t->total_datablocks -= node->ndatablocks;
  /* A removed node must not lead back into the tree. */
  node->left = NULL;
  node->right = NULL;
  itree_debug_check(t, "remove (exit)");
}

/* The order is unchanged, so no rotation and no height changes: only the
 * maxima on the path from the root to the node can move, and the walk up
 * stops at the first one that does not. */
void interval_tree_resize(itree_t *t, itree_node_t *node, uintptr_t new_start,
                          size_t new_ndatablocks) {
  itree_node_t **path[ITREE_MAX_HEIGHT];

  itree_debug_check(t, "resize (entry)");
  int depth = itree_path_to(t, node, path, "resize");
#if MM_DEBUG >= 2
  {
    /* In-order neighbours: the nearest ancestors we turned right/left at,
     * or the extreme nodes of node's own subtrees. */
    const itree_node_t *pred = NULL, *succ = NULL;
    for (int i = 0; i < depth - 1; i++) {
      const itree_node_t *a = *path[i];
      if (path[i + 1] == &(*path[i])->right)
        pred = a;
      else
        succ = a;
    }
    if (node->left)
      for (pred = node->left; pred->right; pred = pred->right) {
      }
    if (node->right)
      for (succ = node->right; succ->left; succ = succ->left) {
      }
    itree_debug_fits(pred, succ, new_start, new_ndatablocks, "resize");
  }
#endif
  t->total_datablocks = t->total_datablocks - node->ndatablocks + new_ndatablocks;
  node->start = new_start;
  node->ndatablocks = new_ndatablocks;
  for (int i = depth - 1; i >= 0; i--) {
    itree_node_t *n = *path[i];
    size_t old_max = n->max_ndatablocks;
    itree_update_max(n);
    if (n->max_ndatablocks == old_max)
      break;
  }
  itree_debug_check(t, "resize (exit)");
}

/* ------------------------------------------------------------------------ */
/* Queries: each is one descent, O(height).                                  */

/* Go left whenever the left subtree holds a fit (it has lower addresses);
 * else take this node if it fits; else the fit, which the maximum says
 * exists below, must be on the right. */
itree_node_t *interval_tree_first_fit(const itree_t *t, size_t n) {
  itree_node_t *cur = t->root;
  if (!cur || cur->max_ndatablocks < n)
    return NULL;
  while (cur) {
    if (cur->left && cur->left->max_ndatablocks >= n)
      cur = cur->left;
    else if (cur->ndatablocks >= n)
      return cur;
    else
      cur = cur->right;
  }
  return NULL; /* only on a corrupt maximum */
}

/* The highest node below `before` that fits in cur's subtree: nodes at or
 * above `before` send the search left; below it, the right subtree (higher
 * addresses) is asked first, then the node, then the left subtree.  A
 * subtree whose maximum is below n is never entered, so a search visits
 * O(log^2 n) nodes. */
static itree_node_t *prev_fit_below(itree_node_t *cur, uintptr_t before, size_t n) {
  while (cur && cur->max_ndatablocks >= n) {
    if (cur->start >= before) {
      cur = cur->left;
      continue;
    }
    itree_node_t *right = prev_fit_below(cur->right, before, n);
    if (right) return right;
    if (cur->ndatablocks >= n) return cur;
    cur = cur->left;
  }
  return NULL;
}

itree_node_t *interval_tree_prev_fit(const itree_t *t, uintptr_t before, size_t n) {
  return prev_fit_below(t->root, before, n);
}

/* The same descent as first fit, asking for the root's maximum: the
 * lowest-addressed node among equals. */
itree_node_t *interval_tree_largest(const itree_t *t) {
  return t->root ? interval_tree_first_fit(t, t->root->max_ndatablocks) : NULL;
}

itree_node_t *interval_tree_find(const itree_t *t, uintptr_t addr) {
  itree_node_t *cur = t->root;
  while (cur) {
    if (addr < cur->start)
      cur = cur->left;
    else if ((addr - cur->start) >> MM_DATABLOCK_SHIFT < cur->ndatablocks)
      return cur; /* the shift avoids computing an end that could wrap */
    else
      cur = cur->right;
  }
  return NULL;
}

/* Neighbours by key, so a descent without parent pointers: prev is the
 * last node the descent turned right at (the greatest start below the
 * key), next the last one it turned left at (the least start above). */
itree_node_t *interval_tree_prev(const itree_t *t, const itree_node_t *node) {
  itree_node_t *cur = t->root, *best = NULL;
  uintptr_t key = node->start;
  while (cur) {
    if (cur->start < key) {
      best = cur;
      cur = cur->right;
    } else {
      cur = cur->left;
    }
  }
  return best;
}

itree_node_t *interval_tree_next(const itree_t *t, const itree_node_t *node) {
  itree_node_t *cur = t->root, *best = NULL;
  uintptr_t key = node->start;
  while (cur) {
    if (cur->start > key) {
      best = cur;
      cur = cur->left;
    } else {
      cur = cur->right;
    }
  }
  return best;
}

itree_node_t *interval_tree_min(const itree_t *t) {
  itree_node_t *cur = t->root;
  if (!cur)
    return NULL;
  while (cur->left)
    cur = cur->left;
  return cur;
}

/* In-order walk with an explicit stack: it holds one root-to-leaf path. */
void interval_tree_foreach(const itree_t *t,
                           bool (*visit)(itree_node_t *node, void *arg),
                           void *arg) {
  itree_node_t *stack[ITREE_MAX_HEIGHT];
  itree_node_t *cur = t->root;
  int sp = 0;
  for (;;) {
    while (cur) {
      if (sp == ITREE_MAX_HEIGHT)
        itree_panic("foreach", "path longer than any AVL tree (corrupt tree)");
      stack[sp++] = cur;
      cur = cur->left;
    }
    if (sp == 0)
      return;
    cur = stack[--sp];
    if (!visit(cur, arg))
      return;
    cur = cur->right;
  }
}

/* ------------------------------------------------------------------------ */
/* Checker.                                                                  */

/* Why a check failed; itree_check_fail turns it into the reason text. */
typedef enum itree_fault_e {
  ITREE_TOO_DEEP,     /* recursion passed ITREE_MAX_HEIGHT */
  ITREE_TOO_MANY,     /* more nodes than count (a = count) */
  ITREE_EMPTY,        /* ndatablocks == 0 */
  ITREE_UNALIGNED,    /* start % DATABLOCK != 0 */
  ITREE_WRAPS,        /* end past the address space */
  ITREE_ORDER,        /* a = previous start */
  ITREE_OVERLAP,      /* a = previous start, b = its end */
  ITREE_TOUCH,        /* a = previous start */
  ITREE_SUM_WRAPS,   /* sum of ndatablocks overflows */
  ITREE_HEIGHT,       /* a = stored, b = actual */
  ITREE_UNBALANCED,   /* a = left height, b = right height */
  ITREE_MAX,          /* a = stored, b = actual */
  ITREE_COUNT,        /* a = count, b = nodes seen */
  ITREE_TOTAL,        /* a = total_datablocks, b = sum */
} itree_fault_t;

typedef struct itree_check_s {
  const itree_t *t;
  bool coalesced;
  char *why;
  size_t why_size;
  size_t visited;           /* nodes seen in order so far */
  size_t datablocks;        /* their ndatablocks summed */
  const itree_node_t *last; /* the previous node in order */
} itree_check_t;

/* The reason, in one line: "interval tree: node 0x... (N datablocks):
 * <fault>", formatted by os_format (no malloc: the checker runs inside the
 * allocator).  Returns false, so that the walk can `return
 * itree_check_fail(...)`.  Heights arrive in `a` as
 * (uintmax_t)(intmax_t)height and are printed signed.  Cold: out of the
 * walk's way. */
static bool itree_check_fail(itree_check_t *c, const itree_node_t *n,
                             itree_fault_t fault, uintmax_t a, uintmax_t b)
    __attribute__((noinline, cold));

static bool itree_check_fail(itree_check_t *c, const itree_node_t *n,
                             itree_fault_t fault, uintmax_t a, uintmax_t b) {
  char fault_text[160];
  char *f = fault_text;
  size_t fs = sizeof fault_text;
  unsigned long long ua = a, ub = b;
  switch (fault) {
  case ITREE_TOO_DEEP:
    os_format(f, fs, "deeper than %d levels (cycle or corrupt links)", ITREE_MAX_HEIGHT);
    break;
  case ITREE_TOO_MANY:
    os_format(f, fs, "more nodes than count %llu (cycle or wrong count)", ua);
    break;
  case ITREE_EMPTY:
    os_format(f, fs, "ndatablocks is 0");
    break;
  case ITREE_UNALIGNED:
    os_format(f, fs, "start is not datablock aligned");
    break;
  case ITREE_WRAPS:
    os_format(f, fs, "extent runs past the end of the address space");
    break;
  case ITREE_ORDER:
    os_format(f, fs, "out of order: follows node 0x%llx", ua);
    break;
  case ITREE_OVERLAP:
    os_format(f, fs, "overlaps node 0x%llx ending at 0x%llx", ua, ub);
    break;
  case ITREE_TOUCH:
    os_format(f, fs, "touches node 0x%llx (not coalesced)", ua);
    break;
  case ITREE_SUM_WRAPS:
    os_format(f, fs, "sum of ndatablocks overflows");
    break;
  case ITREE_HEIGHT:
    os_format(f, fs, "stored height %lld, actual %llu", (long long)(intmax_t)a, ub);
    break;
  case ITREE_UNBALANCED:
    os_format(f, fs, "unbalanced: left height %lld, right height %llu", (long long)(intmax_t)a, ub);
    break;
  case ITREE_MAX:
    os_format(f, fs, "stored max_ndatablocks %llu, actual %llu", ua, ub);
    break;
  case ITREE_COUNT:
    os_format(f, fs, "count %llu, nodes %llu", ua, ub);
    break;
  case ITREE_TOTAL:
    os_format(f, fs, "total_datablocks %llu, sum of ndatablocks %llu", ua, ub);
    break;
  }
  if (c->why && c->why_size) {
    if (n)
      os_format(c->why, c->why_size, "interval tree: node %p (%zu datablocks): %s",
                (void *)n->start, n->ndatablocks, fault_text);
    else
      os_format(c->why, c->why_size, "interval tree: %s", fault_text);
  }
  return false;
}

/* The checks on one node, in order: its extent, and its place after the
 * previous node. */
static inline bool itree_check_visit(itree_check_t *c, const itree_node_t *n) {
  if (++c->visited > c->t->count)
    return itree_check_fail(c, n, ITREE_TOO_MANY, c->t->count, 0);
  if (!itree_extent_ok(n->start, n->ndatablocks))
    return itree_check_fail(c, n,
                            n->ndatablocks == 0 ? ITREE_EMPTY
                            : (n->start & ITREE_DATABLOCK_MASK) ? ITREE_UNALIGNED
                                                           : ITREE_WRAPS,
                            0, 0);
  const itree_node_t *a = c->last;
  if (a) {
    uintptr_t a_end = itree_end(a);
    if (a->start >= n->start)
      return itree_check_fail(c, n, ITREE_ORDER, a->start, 0);
    if (a_end > n->start)
      return itree_check_fail(c, n, ITREE_OVERLAP, a->start, a_end);
    if (c->coalesced && a_end == n->start)
      return itree_check_fail(c, n, ITREE_TOUCH, a->start, 0);
  }
  if (n->ndatablocks > SIZE_MAX - c->datablocks)
    return itree_check_fail(c, n, ITREE_SUM_WRAPS, 0, 0);
  c->datablocks += n->ndatablocks;
  c->last = n;
  return true;
}

/* Post-order check of the subtree at n (not NULL), `depth` levels below the
 * root.  Returns its height, or -1 after writing the reason; *max gets the
 * true subtree maximum.  The recursion is at most ITREE_MAX_HEIGHT deep and
 * stops as soon as more nodes than count are seen, so a cycle ends it.
 * NULL children are handled here rather than by a call: half the calls. */
static int itree_check_subtree(itree_check_t *c, const itree_node_t *n,
                               int depth, size_t *max) {
  size_t m = n->ndatablocks, sub;
  int hl = 0, hr = 0;
  if (depth >= ITREE_MAX_HEIGHT) {
    itree_check_fail(c, NULL, ITREE_TOO_DEEP, 0, 0);
    return -1;
  }
  if (n->left) {
    if ((hl = itree_check_subtree(c, n->left, depth + 1, &sub)) < 0)
      return -1;
    if (sub > m)
      m = sub;
  }
  if (!itree_check_visit(c, n))
    return -1;
  if (n->right) {
    if ((hr = itree_check_subtree(c, n->right, depth + 1, &sub)) < 0)
      return -1;
    if (sub > m)
      m = sub;
  }
  int h = 1 + (hl > hr ? hl : hr);
  if (n->height != h) {
    itree_check_fail(c, n, ITREE_HEIGHT, (uintmax_t)(intmax_t)n->height,
                     (uintmax_t)h);
    return -1;
  }
  if (hl > hr + 1 || hr > hl + 1) {
    itree_check_fail(c, n, ITREE_UNBALANCED, (uintmax_t)hl, (uintmax_t)hr);
    return -1;
  }
  if (n->max_ndatablocks != m) {
    itree_check_fail(c, n, ITREE_MAX, n->max_ndatablocks, m);
    return -1;
  }
  *max = m;
  return h;
}

bool interval_tree_is_valid(const itree_t *t, bool coalesced, char *why,
                            size_t why_size) {
  itree_check_t c = {t, coalesced, why, why_size, 0, 0, NULL};
  size_t max;
  if (why && why_size)
    why[0] = '\0';
  if (t->root && itree_check_subtree(&c, t->root, 0, &max) < 0)
    return false;
  if (c.visited != t->count)
    return itree_check_fail(&c, NULL, ITREE_COUNT, t->count, c.visited);
  if (c.datablocks != t->total_datablocks)
    return itree_check_fail(&c, NULL, ITREE_TOTAL, t->total_datablocks,
                            c.datablocks);
  return true;
}
