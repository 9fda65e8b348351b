/* lifecycle.c — the life of the process and its threads as the allocator
 * sees it: start-up, a thread's first allocation, thread exit, mm_collect,
 * and fork.
 *
 * Layer: slow paths (the call tree is at the top of thread_heap.h).
 *
 * Thread exit (a pthread key destructor) and fork (in the child, for every
 * other thread's heap): thread_heap_abandon gives empty pages back and
 * parks the others in their home local heap, where allocating threads of
 * that heap adopt them (a thread freeing into one adopts it only when it
 * allocates that class, most of the page is in use or a run of its frees
 * goes there: thread_heap_free_abandoned); the heap becomes dead and waits
 * in its registry for the next thread.
 *
 * Fork.  The child has one thread, a copy of the forking one.  Before the
 * fork (fork_prepare) the forking thread takes every lock the allocator
 * has, lowest rank first (lock.h): every registry, every thread heap's
 * lock, every local heap, each rank in index order.  So in the child no
 * list is half changed: every change to a thread heap's lists, a local
 * heap and a registry happens under one of those locks (thread_heap.h),
 * and the child walks the other threads' lists to abandon their pages.
 * What the owners' fast paths change without a lock (a page's free list,
 * local_free and used; an outgoing batch) may be torn by the fork in the
 * middle of a malloc or free of another thread: that thread does not exist
 * in the child, so its block is neither allocated nor freed there.  Those
 * paths are written so that every tear is harmless: a block's link is
 * stored before the list head that publishes it (atomic_order_stores), so
 * no list in the child holds a block whose link is the user's bytes; a
 * batch is emptied before any of it is pushed to an inbox (remote.c), so
 * no block is both in a batch and in an inbox; a page's count may be one
 * off, too high (the page is never retired in the child) or too low (by a
 * block nobody in the child holds).  The child marks those threads' pages
 * MM_EXTENT_FORKED, so that the MM_DEBUG checker, meeting one again once a
 * thread of the child adopts it, does not take the count for corruption
 * (the mark goes when the page goes back to its heap).  A block lost, never a block handed
 * out twice: test/stress/fork_lists.c forks into every one of these.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "cgroup.h"
#include "pool.h"
#include "remote.h"

#if MM_VALGRIND
#include <valgrind/memcheck.h>
#define VG_RZ 16 /* bytes after each block that memcheck sees as no-access */
#else
#define VG_RZ 0
#endif

size_t mm_vg_rz;

static pthread_key_t thread_key;
static _Atomic(int) xprocess_state; /* 0 none, 1 initialising, 2 ready */

static void thread_heap_exit_cb(void *arg);
static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

/* ---- start-up ---------------------------------------------------------------------- */

/* Once per process, from the first allocation (or the library constructor).
 * Nothing here may allocate: a recursive malloc would wait on itself.
 * pthread_atfork may allocate, so it runs after the state says ready. */
void thread_heap_process_init(void) {
  if (likely(atomic_load_acquire(&xprocess_state) == 2)) return;
  int expected = 0;
  if (atomic_cas_strong_acq_rel(&xprocess_state, &expected, 1)) {
    os_init();
    options_init();
    size_class_init();
    mm_canary_key = (uintptr_t)os_random() | 1;
    cgroup_init();
    /* Secure mode and valgrind switch the fast paths off: every call comes
     * through the checked slow paths (see page.c). */
#if MM_VALGRIND
    mm_vg_rz = RUNNING_ON_VALGRIND ? VG_RZ : 0;
    /* and no purge thread: memcheck would report the thread-local storage
     * glibc allocates for it (through us) as possibly lost, since it never
     * exits; memory still goes back on allocator calls */
    if (mm_vg_rz) options.purge_thread_mib = 0;
#endif
    mm_slow_only = options.secure || options.zero_on_free || mm_vg_rz;
    if (options.secure) mm_list_key = (uintptr_t)os_random() | 1;
    if (options.zero_on_free) {
      mm_fill_word = 0;
      memset(mm_fill_block, 0, sizeof(mm_fill_block));
    }
    /* one heap per CPU the process may use: the affinity mask and the
     * cgroup's CPU quota count, not only the CPUs the machine has */
    uint32_t quota = cgroup_cpu_limit(), heaps = (uint32_t)os_cpu_count();
    if (quota && quota < heaps) heaps = quota;
    local_heap_init_all(options.heaps > 0 ? (uint32_t)options.heaps : heaps);
    thread_heap_registry_init(mm_nheaps);
    options.heaps = mm_nheaps;
    pthread_key_create(&thread_key, thread_heap_exit_cb);
    atomic_store_release(&xprocess_state, 2);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    if (options.verbose) options_print();
  } else {
    while (atomic_load_acquire(&xprocess_state) != 2) sched_yield();
  }
}

/* Thread heaps set up so far (the first is the main thread's, usually). */
static _Atomic(uint64_t) xthread_inits;

/* Bind the calling thread to the local heap with the fewest live threads
 * (thread_heap_create; thread_heap.c says why not the heap of its CPU).
 *
 * A thread that is not the process's first gives the CPU up once before it
 * takes any page.  Threads are often started by a thread that is about to
 * exit (a generation of workers handing over to the next, Larson's
 * server model): if the new one runs first, it carves a fresh page for
 * every size class it allocates while the exiting thread's pages, which
 * it would otherwise adopt, are not yet abandoned.  On the 2-core VM,
 * Larson at 32 threads peaked at 19.0 MiB without the yield and 14.3 MiB
 * with it (docs/design.md); where a CPU is idle the yield returns at once. */
MM_NOINLINE thread_heap_t *thread_heap_init_current(void) {
  thread_heap_process_init();
  if (atomic_fetch_add_relaxed(&xthread_inits, 1) != 0) os_yield();
  thread_heap_t *th = thread_heap_create();
  if (!th) return NULL;
  thread_heap_lock(th); /* a taker may still be at its previous thread's inbox */
  thread_heap_init_fresh(th);
  thread_heap_unlock(th);
  mm_thread_heap = th;
  pthread_setspecific(thread_key, th); /* after the TLS: it may allocate */
  return th;
}

thread_heap_t *thread_heap_current(void) {
  thread_heap_t *th = mm_thread_heap;
  if (unlikely(th == &mm_heap_empty)) th = thread_heap_init_current();
  return th;
}

/* ---- thread exit ------------------------------------------------------------------- */

/* Give every page of th back to its local heap: empty ones to the page
 * cache, the others parked as abandoned; what waits in th's inbox and
 * batches goes where it belongs.  th's lock held; th's registry then
 * marks it dead (thread_heap_mark_dead, without th's lock). */
void thread_heap_abandon(thread_heap_t *th) {
  mm_assert_internal(thread_heap_locked(th));
  thread_heap_quarantine_drain(th, 0);
  remote_take_inbox(th); /* every lane, not only when lane 0 says so */
  remote_flush_all(th);
  for (unsigned c = 0; c < MM_CLASSES; c++) {
    extent_t *page;
    while ((page = th->queue[c].first) != NULL) {
      extent_list_remove(&th->queue[c], page);
      if (page->used == 0) thread_heap_retire_page(page);
      else thread_heap_abandon_page(page);
    }
  }
  thread_heap_empty_release(th, true);
  extent_t *page;
  while ((page = th->full.first) != NULL) {
    extent_list_remove(&th->full, page);
    thread_heap_abandon_page(page);
  }
  thread_heap_fostered_release(th);
  for (unsigned k = 0; k < MM_DIRECT_SLOTS; k++) th->direct[k] = &mm_page_empty;
}

static void thread_heap_exit_cb(void *arg) {
  thread_heap_t *th = arg;
  pool_thread_exit();
  mm_thread_heap = th; /* other destructors may have run before us */
  thread_heap_lock(th);
  thread_heap_check_all(th);
  thread_heap_stash_flush(th);
  thread_heap_stash_retire(th);
  thread_heap_abandon(th);
  thread_heap_unlock(th);
  thread_heap_mark_dead(th);
  mm_thread_heap = &mm_heap_empty;
  MM_CHECK(3, "census", thread_heap_census_is_valid(MM_WHY)); /* no page lost */
}

/* ---- mm_collect ---------------------------------------------------------------------- */

/* This thread's pending frees, empty and fostered pages, what reached dead heaps'
 * inboxes, then every local heap's free memory, back to the OS now. */
void thread_heap_collect(void) {
  thread_heap_t *th = thread_heap_current();
  if (th) {
    block_t *dead[MM_MAX_HEAPS];
    for (uint32_t i = 0; i < mm_nheaps; i++) dead[i] = remote_dead_take(i, false);
    thread_heap_lock(th);
    thread_heap_quarantine_drain(th, 0);
    remote_take_inbox(th); /* every lane, not only when lane 0 says so */
    for (uint32_t i = 0; i < mm_nheaps; i++) remote_free_chain(th, dead[i]);
    remote_flush_all(th);
    for (unsigned c = 0; c < MM_CLASSES; c++) {
      extent_t *page = th->queue[c].first;
      if (page && page->used == 0) {
        extent_list_remove(&th->queue[c], page);
        thread_heap_direct_update(th, c);
        thread_heap_retire_page(page);
      }
    }
    thread_heap_fostered_release(th);
    thread_heap_empty_release(th, true);
    thread_heap_stash_flush(th);
    thread_heap_check_all(th);
    thread_heap_unlock(th);
  }
  local_heap_collect_all();
  MM_CHECK(3, "census", thread_heap_census_is_valid(MM_WHY)); /* no page lost */
}

/* ---- fork --------------------------------------------------------------------------- */

static void lock_one(thread_heap_t *th, void *arg) {
  (void)arg;
  spin_lock_ordered(&th->lock);
}

static void unlock_one(thread_heap_t *th, void *arg) {
  (void)arg;
  thread_heap_unlock(th);
}

static void fork_prepare(void) {
  thread_heap_registry_lock_all();
  thread_heap_foreach(lock_one, NULL);
  heap_fork_prepare();
  pool_fork_prepare();
  local_heap_fork_prepare();
}

static void fork_parent(void) {
  local_heap_fork_parent();
  pool_fork_parent();
  heap_fork_parent();
  thread_heap_foreach(unlock_one, NULL);
  thread_heap_registry_unlock_all();
}

/* In the child: every lock is free again (the locks of the threads that
 * are not here too), then every other thread's heap is abandoned, so that
 * the child can free and reuse their memory. */
static void reset_one(thread_heap_t *th, void *arg) {
  (void)arg;
  spin_reset(&th->lock);
}

static void mark_forked(extent_list_t *q) {
  for (extent_t *p = q->first; p; p = p->next) p->flags |= MM_EXTENT_FORKED;
}

static void abandon_other(thread_heap_t *th, void *self) {
  if (th == self || th->state != MM_THREAD_LIVE) return;
  mm_thread_heap = th;
  thread_heap_lock(th);
  /* their counts may be one off: the checker then leaves the count alone */
  for (unsigned c = 0; c < MM_CLASSES; c++) mark_forked(&th->queue[c]);
  mark_forked(&th->full);
  mark_forked(&th->fostered);
  thread_heap_stash_drop(th); /* a free fork interrupted may have half changed it */
  thread_heap_stash_retire(th);
  thread_heap_abandon(th);
  thread_heap_unlock(th);
  thread_heap_mark_dead(th);
}

static void fork_child(void) {
  local_heap_fork_child();
  pool_fork_child();
  heap_fork_child();
  thread_heap_registry_reinit_all();
  thread_heap_foreach(reset_one, NULL);
  witness_forget_all();
  thread_heap_t *self = mm_thread_heap;
  thread_heap_foreach(abandon_other, self);
  mm_thread_heap = self;
  /* MM_DEBUG 3: the forking thread's heap, and every local heap (the other
   * threads' heaps are not checked: a fast path they were in may have left
   * a page's count one off, as said at the top) */
  if (self != &mm_heap_empty) {
    thread_heap_lock(self);
    thread_heap_check_all(self);
    thread_heap_unlock(self);
  }
  for (uint32_t i = 0; i < mm_nheaps; i++) {
    local_heap_lock(&mm_heaps[i]);
    MM_CHECK(3, "local heap", local_heap_is_valid(&mm_heaps[i], MM_WHY));
    local_heap_unlock(&mm_heaps[i]);
  }
  MM_CHECK(3, "census", thread_heap_census_is_valid(MM_WHY)); /* no page lost */
}
