/* atomic.h — the streaming module's atomic operations, named by memory order.
 *
 * Layer: stream (included by every stream/ file that shares memory between
 * threads; nothing outside stream/ includes it).
 *
 * Rule (docs/conventions.md): an atomic field carries an `x` prefix and is
 * touched only through these wrappers, whose names say the memory order;
 * there is no bare seq_cst access.  The one sequentially consistent
 * operation is the explicit fence mms_atomic_fence_seq_cst(), used only on
 * the park path of waiter.c.
 * Read-modify-write wrappers exist for the slow paths (waking a parked
 * thread, recording the first error); the queues never use them.
 *
 * Names.  Everything here carries the stream module's own prefix (`mms_`,
 * `MMS_`), never the allocator's: src/atomic.h and src/config.h define
 * atomic_load_relaxed, MM_CACHE_LINE and the like under the plain names, so
 * the stream module keeps its own, and one translation unit can include
 * both headers without a redefinition.
 */
#ifndef MM_STREAM_ATOMIC_H
#define MM_STREAM_ATOMIC_H

#include <stdatomic.h>

/* The coherence unit we separate producer and consumer state by.  64 bytes
 * on every x86-64 and most AArch64 parts; adjacent-line prefetching makes
 * 128 better on some Intel parts, but 64 is what FastForward and rigtorp's
 * SPSCQueue measure as sufficient for two-thread queues. */
#define MMS_CACHE_LINE 64

#define mms_atomic_load_relaxed(p) \
  atomic_load_explicit((p), memory_order_relaxed)
#define mms_atomic_load_acquire(p) \
  atomic_load_explicit((p), memory_order_acquire)
#define mms_atomic_store_relaxed(p, v) \
  atomic_store_explicit((p), (v), memory_order_relaxed)
#define mms_atomic_store_release(p, v) \
  atomic_store_explicit((p), (v), memory_order_release)
#define mms_atomic_fetch_add_release(p, v) \
  atomic_fetch_add_explicit((p), (v), memory_order_release)
#define mms_atomic_cas_strong_acq_rel(p, expected, desired)              \
  atomic_compare_exchange_strong_explicit((p), (expected), (desired),    \
                                          memory_order_acq_rel,          \
                                          memory_order_acquire)
#define mms_atomic_fence_seq_cst() atomic_thread_fence(memory_order_seq_cst)

/* One iteration of a spin-wait: tell the core we are spinning (frees the
 * sibling hyperthread, saves power, avoids the memory-order machine clear
 * when the awaited line finally changes). */
static inline void mms_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}

#endif /* MM_STREAM_ATOMIC_H */
