/* atomic.h — the only way mmalloc touches shared memory concurrently.
 *
 * Layer: base (included by every layer through base.h).
 *
 * Every atomic field and every atomic static carries an `x` prefix
 * (xowner, xinbox, mm_xslot_table) and is read or written only through
 * these wrappers, whose names say the memory order.  There is no bare
 * seq_cst access anywhere (none is needed today; a store-load fence would
 * be written where it is needed, with its reason).  The stream module has
 * its own wrappers (stream/atomic.h, mms_ names).
 */
#ifndef MM_ATOMIC_H
#define MM_ATOMIC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define atomic_load_relaxed(p) atomic_load_explicit((p), memory_order_relaxed)
#define atomic_load_acquire(p) atomic_load_explicit((p), memory_order_acquire)
#define atomic_store_relaxed(p, v) \
  atomic_store_explicit((p), (v), memory_order_relaxed)
#define atomic_store_release(p, v) \
  atomic_store_explicit((p), (v), memory_order_release)
#define atomic_exchange_acquire(p, v) \
  atomic_exchange_explicit((p), (v), memory_order_acquire)
#define atomic_fetch_add_relaxed(p, v) \
  atomic_fetch_add_explicit((p), (v), memory_order_relaxed)
#define atomic_fetch_sub_relaxed(p, v) \
  atomic_fetch_sub_explicit((p), (v), memory_order_relaxed)
/* CAS that publishes on success (release) and reads nothing it relies on
 * on failure (relaxed): the shape of a lock-free stack push. */
#define atomic_cas_weak_release(p, expected, desired)                      \
  atomic_compare_exchange_weak_explicit((p), (expected), (desired),       \
                                        memory_order_release,             \
                                        memory_order_relaxed)
#define atomic_cas_strong_acq_rel(p, expected, desired)                    \
  atomic_compare_exchange_strong_explicit((p), (expected), (desired),     \
                                          memory_order_acq_rel,           \
                                          memory_order_acquire)

/* A plain load of an atomic field that only the calling thread writes (a
 * page's xcarved, read by its owner): no other thread can change it during
 * the read, so it needs no atomicity, and unlike an atomic load the
 * compiler may fold it into the instruction that uses it (one instruction
 * less on the free fast path). */
#define atomic_load_own(p) \
  (*(const __typeof__(atomic_load_explicit((p), memory_order_relaxed)) *)(p))

/* A full fence: the store before it is visible to every thread before the
 * load after it reads.  For the two-sided handshakes where each side
 * stores its flag, then reads the other's (purger.c). */
#define atomic_fence_store_load() atomic_thread_fence(memory_order_seq_cst)

/* Stores before it become visible before stores after it, as this thread
 * wrote them.  For a fork: the child gets the other threads' memory as it
 * was at some instruction of theirs, so where an owner publishes a block
 * on a list without a lock (the fast free, a remote batch), the block's
 * link is written first and the list head after, and the child never
 * meets a block on a list whose link is still the user's bytes.  On x86
 * stores leave the core in program order and this is only a compiler
 * barrier (no instruction); weaker machines get a release fence. */
#if defined(__x86_64__) || defined(__i386__)
#define atomic_order_stores() __asm__ __volatile__("" ::: "memory")
#else
#define atomic_order_stores() atomic_thread_fence(memory_order_release)
#endif

#endif
