/* base.h — the compiler vocabulary of the allocator (visibility, inlining,
 * branch hints, the fast/slow path markers), the map of its layers, and
 * the glossary.  Read this file first.
 *
 * Layer: base (below os).  Every header of the allocator includes it,
 * directly or through a lower layer's header.  No declarations of code.
 *
 * Glossary (bottom layer first):
 *
 *   datablock    4 KiB of address space, the unit the local heaps manage
 *                (MM_DATABLOCK_SIZE; the Mmalloc paper's "datablock").
 *   slot         128 MiB of address space, aligned to its size, owned by one
 *                local heap.  Its management area holds the slot header, the
 *                extent map and the extent descriptors; its data area holds
 *                nothing but user data.  The slot table maps the high bits of
 *                any address to the slot's kind, so free() knows from the
 *                pointer alone whether the memory is ours (region.h).
 *   extent map   per slot, one uint32 per datablock: where the descriptor of
 *                the extent that covers it lies (exact for every datablock of
 *                a page, and for the first and last datablock of others).
 *   extent       a run of datablocks inside one slot, described by an
 *                extent_t in the slot's management area.  An extent is FREE
 *                (a node of its local heap's interval tree), a PAGE, LARGE
 *                (one block handed to the user), POOL (a page block lent out
 *                whole: a pool's, or a raw one), or CACHED (a free page
 *                block parked in the local heap's page cache, or a freed
 *                huge mapping in the huge cache).
 *   page         an extent of 16 to 128 datablocks holding small objects of
 *                one size class, owned by a thread heap (page.h).  "Page"
 *                means only this; the OS page is a datablock.
 *   pool         an object pool (mm_pool_*): objects of one size carved
 *                from page blocks the local heaps lend out whole (extents
 *                of kind POOL), a free list per thread in the pool, and a
 *                depot; a raw page block (mm_page_block_alloc) is a POOL
 *                extent with no pool (pool.h).
 *   huge block   a block bigger than MM_HUGE_MIN, or one that realloc grew
 *                past MM_GROW_MAP_MIN: a slot-aligned mapping of its own
 *                laid out like a slot with one LARGE extent.
 *   local heap   one of C (= number of CPUs): an interval tree of free
 *                extents over its slots, a cache of free page blocks, the
 *                pages abandoned by exited or idle threads, and a lock.
 *                There is no global heap (local_heap.h).
 *   thread heap  per thread: size-class page queues for the malloc/free fast
 *                path (no lock, no atomic read-modify-write), an inbox for
 *                blocks other threads free, and outgoing batches of blocks
 *                this thread frees on behalf of others (thread_heap.h).
 *   block        one small object inside a page.  While free, its first two
 *                words are the free-list link and a canary (its address xor
 *                a per-process secret) that catches double frees.
 *
 * The layers, lowest first; a header includes headers of its own layer or
 * lower ones only; test/structure/check_layers.py (a ctest) reads this table
 * and fails on an upward include, and on a *_parts.h (a layer's private
 * header) included from another layer:
 *
 *   base         config.h atomic.h base.h
 *   os           os.h debug.h lock.h options.h       os.c format.c lock.c options.c
 *                cgroup.h                            cgroup.c
 *   tree         interval_tree.h                     interval_tree.c
 *   region       region.h                            region.c region_check.c
 *   local heap   local_heap.h, local_heap_parts.h    local_heap.c extent.c page_market.c
 *                (the second private to the layer)   large.c decay.c purger.c local_heap_check.c
 *   page         size_class.h page.h                 size_class.c page.c
 *   pool         pool.h, pool_parts.h                pool.c pool_quarantine.c heap.c
 *                (the second private to the layer)
 *   thread heap  thread_heap.h                       thread_heap.c stash.c
 *   remote       remote.h                            remote.c
 *   slow paths   (declared in thread_heap.h)         alloc.c free.c realloc.c lifecycle.c
 *   api          stats.h (and include/mmalloc.h)     api.c override.c stats.c
 *
 * The malloc and free fast paths are at the bottom of thread_heap.h, whose
 * top has the call tree of everything they fall back to.
 */
#ifndef MM_BASE_H
#define MM_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atomic.h"
#include "config.h"

/* Everything a header of the allocator declares between these two is
 * hidden: the compiler may then address it directly (no GOT), and nothing
 * leaks out of the library.  Include system headers before the BEGIN. */
#define MM_HIDDEN_BEGIN _Pragma("GCC visibility push(hidden)")
#define MM_HIDDEN_END _Pragma("GCC visibility pop")

#define MM_EXPORT __attribute__((visibility("default")))
#define MM_INLINE static inline __attribute__((always_inline))
#define MM_NOINLINE __attribute__((noinline))
#define MM_COLD __attribute__((cold, noinline))
#define MM_NORETURN __attribute__((noreturn))

/* The markers of the two paths.  A fast path is force-inlined into its
 * callers and takes no lock; a slow path is out of line and cold, so that
 * it costs the fast path nothing but a call, and anything fast it does runs
 * under the thread heap's lock (thread_heap.h). */
#define MM_FAST_PATH MM_INLINE
#define MM_SLOW_PATH MM_COLD

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#endif
