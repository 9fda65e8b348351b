/* interval_tree.h — the free-extent tree of one local heap (the Mmalloc
 * paper's "binary sort interval tree").
 *
 * Layer: tree (above os; region.h embeds a node in each extent descriptor,
 * the local heap files and the unit test call it).
 *
 * A node describes one free extent: `ndatablocks` datablocks starting at address
 * `start`.  The tree is an AVL tree ordered by `start`, augmented with the
 * largest `ndatablocks` in each subtree (`max_ndatablocks`), so that
 *   - the lowest-addressed extent with at least n datablocks (first fit) is found
 *     in O(log n) by descending towards the leftmost subtree whose maximum
 *     is large enough;
 *   - the extents of at least n datablocks below an address are found one
 *     by one, from the top down, in O(log^2 n) each, subtrees too small
 *     skipped (prev_fit: the purge that a big block's growth makes,
 *     decay.c);
 *   - insert, remove and resize are O(log n) and keep the maxima exact.
 * Nodes are embedded in the caller's extent descriptors; the tree never
 * allocates.  Coalescing with neighbours is the caller's job (it finds them
 * in O(1) from the extent map); the checker verifies it was done.
 *
 * Invariants (checked by interval_tree_is_valid):
 *   in-order:  a.start + a.ndatablocks * DATABLOCK <= b.start for consecutive a, b
 *              (no overlap), and with coalescing expected, strictly <
 *   AVL:       |height(left) - height(right)| <= 1, height = 1 + max(children)
 *   maxima:    max_ndatablocks = max(ndatablocks, left.max_ndatablocks, right.max_ndatablocks)
 *   counts:    count and total_datablocks match the nodes in the tree
 */
#ifndef MM_INTERVAL_TREE_H
#define MM_INTERVAL_TREE_H

#include "base.h"

MM_HIDDEN_BEGIN

typedef struct itree_node_s {
  struct itree_node_s *left;  /* lower addresses */
  struct itree_node_s *right; /* higher addresses */
  uintptr_t start;            /* key: first byte, MM_DATABLOCK_SIZE aligned */
  size_t ndatablocks;              /* extent length in datablocks, > 0 */
  size_t max_ndatablocks;          /* max ndatablocks in this subtree */
  int height;                 /* AVL height; a leaf has 1 */
} itree_node_t;

typedef struct itree_s {
  itree_node_t *root;
  size_t count;       /* nodes in the tree */
  size_t total_datablocks; /* sum of ndatablocks */
} itree_t;

void interval_tree_init(itree_t *t);

/* Insert a node whose start and ndatablocks are set; it must overlap no node. */
void interval_tree_insert(itree_t *t, itree_node_t *node);

/* Remove a node that is in the tree. */
void interval_tree_remove(itree_t *t, itree_node_t *node);

/* Change a node's extent in place.  The new extent must keep the node's
 * place in the address order (it may shrink from either end, or grow into
 * space no other node holds).  O(log n): the maxima on the path are fixed. */
void interval_tree_resize(itree_t *t, itree_node_t *node, uintptr_t new_start,
                          size_t new_ndatablocks);

/* Lowest-addressed node with ndatablocks >= n, or NULL. */
itree_node_t *interval_tree_first_fit(const itree_t *t, size_t n);

/* Highest-addressed node starting below `before` with ndatablocks >= n, or
 * NULL: the fits from the top down, one call each (before = the previous
 * one's start; UINTPTR_MAX for the first). */
itree_node_t *interval_tree_prev_fit(const itree_t *t, uintptr_t before, size_t n);

/* The node with the most datablocks (lowest address among equals), or NULL. */
itree_node_t *interval_tree_largest(const itree_t *t);

/* The node whose extent contains addr, or NULL. */
itree_node_t *interval_tree_find(const itree_t *t, uintptr_t addr);

/* In-order neighbours: the node just below / just above `node` in address
 * order, or NULL.  O(log n) (no parent pointers: a descent from the root). */
itree_node_t *interval_tree_prev(const itree_t *t, const itree_node_t *node);
itree_node_t *interval_tree_next(const itree_t *t, const itree_node_t *node);

/* Lowest node, and in-order iteration: visit(node, arg) for each node in
 * address order; stop early when visit returns false.  visit must not
 * change the tree (collect nodes first if you need to). */
itree_node_t *interval_tree_min(const itree_t *t);
void interval_tree_foreach(const itree_t *t,
                           bool (*visit)(itree_node_t *node, void *arg),
                           void *arg);

/* Full check of the invariants above.  coalesced: also require that no two
 * extents touch.  On failure writes a one-line reason into why (if not
 * NULL) and returns false.  O(n). */
bool interval_tree_is_valid(const itree_t *t, bool coalesced, char *why,
                            size_t why_size);

MM_HIDDEN_END

#endif
