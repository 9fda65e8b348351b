/* test_remote.c — the remote-free protocol (remote.c) between two threads,
 * against a model: every block freed by a thread that does not own its page
 * comes back to that page exactly once, whatever the interleaving of
 * batches, lanes, flushes, the idle take-over and the owner's exit.
 *
 * Threads.  The main thread is a controller and checker only: it never
 * allocates a block of the model.  Worker A (the owner) and worker B (the
 * remote freer), and in one phase C, each run commands main posts to them
 * (run(): post, then wait for it to finish), or run side by side (CONC).
 * Between commands every worker is blocked on its condition variable: a
 * quiet point, where main reads the thread heaps, holding their locks.
 *
 * The model.  Every block a worker gets from mm_malloc is entered in a
 * lock-free table, by address: its state (live and who holds it, or freed),
 * the id written into the block (two words at its start, one at its end).
 *   malloc  the entry must be new or freed: a block handed out while live
 *           (twice) fails here;
 *   free    only by the holder, whose tag must still be in the block; the
 *           entry says freed before mm_free, as the block may be handed out
 *           again at once.
 * The first block a round gets from a page is that page's anchor: it stays
 * live until the round ends, so no page of the model retires (and changes
 * class) in the middle of a round, and the per-page accounting below stays
 * exact.  Anchors are never given away.
 *
 * Exactly once.  At every quiet point (check_state), holding each thread
 * heap's lock in turn, main collects every block in flight: each batch lane
 * and inbox lane of the live workers' heaps and of every dead heap.  Then,
 * for every page of the model (its owner's lock and its local heap's lock
 * held): page_is_valid; it is on its owner's queue or full list, or on its
 * local heap's abandoned list; its free and local_free lists are walked and
 * every block counted (a block on them twice is reported), and
 *   a freed block is on the free lists or in flight, exactly once in all;
 *   a live block is on none of them, and its tag is intact;
 *   used == live blocks of the page + blocks of it in flight
 * (blocks in flight count as used, remote.c).  Once settled (every live
 * worker ran mm_collect three times over), nothing may be in flight.
 * A lost block shows as a freed block found nowhere (and a used count one
 * too high); a block freed twice as a block found twice.  Also at every
 * quiet point: no inbox lane holds a block while lane 0 is empty (every
 * chain's lane 0 is pushed last and taken first), thread_heap_is_valid and
 * remote_is_valid of every live worker's heap and every dead heap.
 *
 * Internal state the test sets: a freer's slow_calls (the heartbeat's
 * cadence) where a phase wants its batch as its frees left it, and the
 * owner's xactive_ms pushed into the future in the lane phase so that B's
 * flush is a plain hand-over, not a take-over pass (which re-pushes every
 * block on lane 0; checked in the take-over phase).
 *
 * Phases:
 *   lanes      B frees k blocks of A's (k = 1..2*MM_LANES+1, and around
 *              MM_REMOTE_BATCH): B's batch holds block i on lane i % LANES;
 *              after B's flush A's lanes hold ceil/floor(k / LANES) blocks,
 *              exactly those of their lane, lane 0 not empty
 *              (remote_inbox_waiting); A takes its inbox by mm_collect, by a
 *              slow-path allocation, by an allocation that misses, or
 *              within MM_HEARTBEAT_CALLS medium allocations, and every lane
 *              is empty after it.
 *   lane race  A spins on lane 0 and runs thread_heap_beat the moment it
 *              turns non-empty, while B hands it chains of 1..32 blocks;
 *              after each chain A's inbox must drain completely: a chain left
 *              behind an empty lane 0 (lanes pushed in the wrong order) is
 *              reported.  Bounded by time (400 ms) as well as by count.
 *   checker    remote_is_valid rejects batches whose count disagrees with
 *              their lanes, a block on the wrong lane, a wrong tail, a batch
 *              or inbox block that is not free; built on the main thread's
 *              own heap under its lock and restored.
 *   take-over  A fills pages of 4 KiB blocks and blocks; once it has been
 *              idle for MM_IDLE_MS, B frees blocks of two of its full pages
 *              and of its current page: exactly those two pages are taken
 *              over (mm_stats_json "pages_taken_over" +2) and abandoned, the
 *              other blocks go back to A's inbox (lane 0); A adopts one back.
 *   dead heap  A exits while B holds a partial batch for it; B's flush lands
 *              in the dead heap's inbox, B's next mm_collect sweeps it; and
 *              again with a thread C on A's CPU that reuses the dead heap and
 *              takes its inbox with its first allocation.
 *   rounds     random scripts (seeded): A allocates (1 to 3 size classes),
 *              gives blocks to B, B frees them, A frees its own, both
 *              collect or take slow paths, B allocates and gives blocks to
 *              A, A goes idle while B frees (a take-over must follow when B
 *              frees a block of a full page: "pages_taken_over" grows), A
 *              exits with blocks in flight, and CONC bursts where both run
 *              at once, handing blocks over through two rings, A sometimes
 *              sleeping past MM_IDLE_MS or exiting at the end of its burst.
 *              check_state after every step, settled and after the final
 *              frees.
 *
 * usage: unit_remote [SEED] [ROUNDS] */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/json.h"
#include "check.h"
#include "mmalloc.h"
#include "remote.h"
#include "unit.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define LANES MM_LANES
#define BATCH MM_REMOTE_BATCH

/* ---- random numbers (xorshift64*) ---------------------------------------------------------- */

static uint64_t rnd(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1Dull;
}

static void sleep_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* ---- failures seen by the workers (check.h's counters are main's) -------------------------- */

static _Atomic(int) wfailures;

static void wfail(const char *name, const char *expr, int line) {
  if (atomic_fetch_add(&wfailures, 1) < 30)
    fprintf(stderr, "FAIL (worker) %s: %s (%s:%d)\n", name, expr, __FILE__, line);
}
#define WCHECK(name, expr)                    \
  do {                                        \
    if (!(expr)) wfail(name, #expr, __LINE__); \
  } while (0)

/* main's detailed failures: counted as checks, the first few printed */
static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void bad(const char *fmt, ...) {
  check_total++;
  if (check_failures++ < 40) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
  }
}

/* ---- the model ------------------------------------------------------------------------------ */

#define ST_FREED 1u
#define ST_LIVE 2u
#define ST_ANCHOR 4u
#define LIVE_BY(h) (ST_LIVE | ((uint32_t)(h) << 4))
#define ST_HOLDER(s) ((int)((s) >> 4))

#define BT_BITS 16
#define BT_SIZE (1u << BT_BITS)
#define BT_MAX (BT_SIZE / 2)
typedef struct bent_s {
  _Atomic(uintptr_t) key; /* the block's address */
  _Atomic(uint32_t) state;
  _Atomic(uint32_t) size;
  _Atomic(uint64_t) id; /* what its holder wrote into it */
} bent_t;
static bent_t btab[BT_SIZE];
static uint32_t bt_used[BT_MAX];
static _Atomic(uint32_t) bt_n;

#define PT_BITS 12
#define PT_SIZE (1u << PT_BITS)
#define PT_MAX (PT_SIZE / 2)
typedef struct pent_s {
  _Atomic(uintptr_t) key; /* the page's extent_t */
  uintptr_t start;        /* written by the thread that entered it */
  uint32_t bsize, cap;
} pent_t;
static pent_t ptab[PT_SIZE];
static uint32_t pt_used[PT_MAX];
static _Atomic(uint32_t) pt_n;

static size_t slot_of_key(uintptr_t key, unsigned bits) {
  return (size_t)(((uint64_t)(key >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

/* Find or enter key; *fresh says this call entered it. */
static bent_t *bent_get(uintptr_t key, bool *fresh) {
  size_t i = slot_of_key(key, BT_BITS);
  for (;; i = (i + 1) & (BT_SIZE - 1)) {
    uintptr_t k = atomic_load_explicit(&btab[i].key, memory_order_acquire);
    if (k == 0) {
      uintptr_t expect = 0;
      if (atomic_compare_exchange_strong(&btab[i].key, &expect, key)) {
        uint32_t n = atomic_fetch_add(&bt_n, 1);
        if (n >= BT_MAX) {
          fprintf(stderr, "unit_remote: model table full\n");
          abort();
        }
        bt_used[n] = (uint32_t)i;
        *fresh = true;
        return &btab[i];
      }
      k = expect;
    }
    if (k == key) {
      *fresh = false;
      return &btab[i];
    }
  }
}

static bent_t *bent_find(uintptr_t key) {
  size_t i = slot_of_key(key, BT_BITS);
  for (;; i = (i + 1) & (BT_SIZE - 1)) {
    uintptr_t k = atomic_load_explicit(&btab[i].key, memory_order_acquire);
    if (k == key) return &btab[i];
    if (k == 0) return NULL;
  }
}

static pent_t *pent_get(uintptr_t key, bool *fresh) {
  size_t i = slot_of_key(key, PT_BITS);
  for (;; i = (i + 1) & (PT_SIZE - 1)) {
    uintptr_t k = atomic_load_explicit(&ptab[i].key, memory_order_acquire);
    if (k == 0) {
      uintptr_t expect = 0;
      if (atomic_compare_exchange_strong(&ptab[i].key, &expect, key)) {
        uint32_t n = atomic_fetch_add(&pt_n, 1);
        if (n >= PT_MAX) {
          fprintf(stderr, "unit_remote: page table full\n");
          abort();
        }
        pt_used[n] = (uint32_t)i;
        *fresh = true;
        return &ptab[i];
      }
      k = expect;
    }
    if (k == key) {
      *fresh = false;
      return &ptab[i];
    }
  }
}

/* Quiet point: forget the round. */
static void model_reset(void) {
  uint32_t n = atomic_load(&bt_n);
  for (uint32_t i = 0; i < n; i++) {
    bent_t *e = &btab[bt_used[i]];
    atomic_store_explicit(&e->key, 0, memory_order_relaxed);
    atomic_store_explicit(&e->state, 0, memory_order_relaxed);
    atomic_store_explicit(&e->size, 0, memory_order_relaxed);
    atomic_store_explicit(&e->id, 0, memory_order_relaxed);
  }
  atomic_store(&bt_n, 0);
  n = atomic_load(&pt_n);
  for (uint32_t i = 0; i < n; i++) atomic_store_explicit(&ptab[pt_used[i]].key, 0, memory_order_relaxed);
  atomic_store(&pt_n, 0);
}

#define TAG_KEY 0x6d6d72656d6f7465ull

static void tag_write(uintptr_t a, uint64_t id, size_t size) {
  uint64_t *w = (uint64_t *)a;
  w[0] = id;
  w[1] = a ^ TAG_KEY;
  if (size >= 32) w[size / 8 - 1] = ~id;
}

static bool tag_ok(uintptr_t a, uint64_t id, size_t size) {
  const uint64_t *w = (const uint64_t *)a;
  return w[0] == id && w[1] == (a ^ TAG_KEY) && (size < 32 || w[size / 8 - 1] == ~id);
}

/* ---- workers --------------------------------------------------------------------------------- */

#define MAXH 6000
#define MAXANCH 600
typedef struct worker_s {
  int idx;
  const char *name;
  pthread_t thread;
  pthread_mutex_t m;
  pthread_cond_t cv;
  void (*fn)(struct worker_s *);
  int pending, running, quit_after;
  thread_heap_t *heap; /* once it has one (set after each command) */
  uint64_t rng, ids;
  uintptr_t held[MAXH]; /* blocks it holds and may free */
  int nheld;
  uintptr_t anch[MAXANCH]; /* page anchors it holds: freed at the end of a round */
  int nanch;
  /* parameters of the next command */
  int n, ordered, idle_at, calm;
  size_t size;
} worker_t;

enum { WA, WB, WC, NW };
static worker_t W[NW];
static const char *const wnames[NW] = {"A", "B", "C"};

/* sizes, one per class; the round's classes */
static const size_t sizes[] = {16, 48, 64, 112, 256, 640, 1024, 1536, 4096, 12288, 32768};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
static size_t round_sizes[4];
static int round_nsizes;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  for (;;) {
    pthread_mutex_lock(&w->m);
    while (!w->pending) pthread_cond_wait(&w->cv, &w->m);
    void (*fn)(worker_t *) = w->fn;
    pthread_mutex_unlock(&w->m);
    if (fn) fn(w);
    if (mm_thread_heap != &mm_heap_empty) w->heap = mm_thread_heap;
    int quit = !fn || w->quit_after;
    pthread_mutex_lock(&w->m);
    w->pending = 0;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->m);
    if (quit) return NULL; /* the thread heap is abandoned on the way out */
  }
}

static void worker_start(int idx, int cpu, uint64_t seed) {
  worker_t *w = &W[idx];
  w->idx = idx;
  w->name = wnames[idx];
  w->pending = w->quit_after = 0;
  w->heap = NULL;
  w->nheld = w->nanch = 0;
  w->rng = seed | 1;
  w->n = w->ordered = w->calm = 0;
  w->idle_at = -1;
  pthread_mutex_init(&w->m, NULL);
  pthread_cond_init(&w->cv, NULL);
  pthread_attr_t at;
  pthread_attr_init(&at);
  if (cpu >= 0) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_attr_setaffinity_np(&at, sizeof(s), &s);
  }
  int rc = pthread_create(&w->thread, &at, worker_main, w);
  pthread_attr_destroy(&at);
  REQUIRE("worker thread started", rc == 0);
  w->running = 1;
}

static void post(worker_t *w, void (*fn)(worker_t *)) {
  pthread_mutex_lock(&w->m);
  w->fn = fn;
  w->pending = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->m);
}

static void wait_done(worker_t *w) {
  pthread_mutex_lock(&w->m);
  while (w->pending) pthread_cond_wait(&w->cv, &w->m);
  pthread_mutex_unlock(&w->m);
}

static void run(worker_t *w, void (*fn)(worker_t *)) {
  post(w, fn);
  wait_done(w);
}

/* After its last command (quit_after, or a NULL command): wait for the
 * thread's exit, thread heap abandoned and marked dead. */
static void worker_join(worker_t *w) {
  pthread_join(w->thread, NULL);
  pthread_mutex_destroy(&w->m);
  pthread_cond_destroy(&w->cv);
  w->running = 0;
}

static void worker_stop(worker_t *w) {
  if (!w->running) return;
  run(w, NULL);
  worker_join(w);
}

/* ---- what a worker does with blocks ---------------------------------------------------------- */

static uintptr_t w_alloc(worker_t *w, size_t size) {
  if (w->nheld >= MAXH - 1 || w->nanch >= MAXANCH - 1) return 0;
  void *p = mm_malloc(size);
  if (!p) {
    wfail("mm_malloc gives a block", "p != NULL", __LINE__);
    return 0;
  }
  uintptr_t a = (uintptr_t)p;
  extent_t *pg = page_of_block(p);
  WCHECK("a small block lies at a block boundary of a page of its class",
         pg->kind == MM_EXTENT_PAGE && pg->block_size == size &&
             (a - pg->page_start) % pg->block_size == 0);
  bool pfresh, bfresh;
  pent_t *pe = pent_get((uintptr_t)pg, &pfresh);
  if (pfresh) {
    pe->start = pg->page_start;
    pe->bsize = pg->block_size;
    pe->cap = pg->capacity;
  }
  bent_t *e = bent_get(a, &bfresh);
  if (bfresh) atomic_store(&e->size, (uint32_t)size);
  else WCHECK("an address keeps its size class within a round", atomic_load(&e->size) == size);
  uint64_t id = ((uint64_t)(w->idx + 1) << 56) | ++w->ids;
  uint32_t old = atomic_exchange(&e->state, LIVE_BY(w->idx) | (pfresh ? ST_ANCHOR : 0));
  if (!(old == ST_FREED || (bfresh && old == 0))) {
    wfail("malloc hands out only free blocks (not one that is live)", "old == ST_FREED", __LINE__);
    fprintf(stderr, "  %s got %p, state was %#x\n", w->name, p, old);
  }
  atomic_store(&e->id, id);
  tag_write(a, id, size);
  if (pfresh) w->anch[w->nanch++] = a;
  else w->held[w->nheld++] = a;
  return a;
}

static void w_free(worker_t *w, uintptr_t a) {
  bent_t *e = bent_find(a);
  if (!e) {
    wfail("a block freed is in the model", "e != NULL", __LINE__);
    return;
  }
  uint32_t st = atomic_load(&e->state);
  uint32_t size = atomic_load(&e->size);
  WCHECK("a block is freed by its holder", (st & ~ST_ANCHOR) == LIVE_BY(w->idx));
  if (!tag_ok(a, atomic_load(&e->id), size)) {
    wfail("a live block keeps its contents (it was not handed out twice)", "tag_ok", __LINE__);
    fprintf(stderr, "  %s frees %p (size %u)\n", w->name, (void *)a, size);
  }
  uint32_t old = atomic_exchange(&e->state, ST_FREED);
  WCHECK("nobody else changed a held block", old == st);
  mm_free((void *)a);
}

static uintptr_t held_take(worker_t *w, int i) {
  uintptr_t a = w->held[i];
  if (w->ordered) {
    memmove(&w->held[i], &w->held[i + 1], (size_t)(w->nheld - i - 1) * sizeof(uintptr_t));
    w->nheld--;
  } else {
    w->held[i] = w->held[--w->nheld];
  }
  return a;
}

static void f_alloc(worker_t *w) {
  for (int i = 0; i < w->n; i++) w_alloc(w, w->size ? w->size : round_sizes[rnd(&w->rng) % (uint64_t)round_nsizes]);
}

/* Free n held blocks: random ones, or (ordered) from the front.  calm: no
 * heartbeat in between (the lane checks want the batch as the frees left
 * it); the counter is only the heartbeat's cadence. */
static void f_free(worker_t *w) {
  for (int i = 0; i < w->n && w->nheld > 0; i++) {
    if (w->calm && w->heap) w->heap->slow_calls = 1;
    w_free(w, held_take(w, w->ordered ? 0 : (int)(rnd(&w->rng) % (uint64_t)w->nheld)));
  }
}

static void f_collect(worker_t *w) {
  (void)w;
  mm_collect();
}

/* A slow path of the allocator that takes no block of the model: a large
 * block above the medium range (thread_heap_malloc_slow, thread_heap_beat
 * first, on every call). */
static void f_slow(worker_t *w) {
  void *p = mm_malloc(200000);
  WCHECK("a large block", p != NULL);
  (void)w;
  mm_free(p);
}

/* Medium blocks only (40,000 B), MM_HEARTBEAT_CALLS of them, each freed at
 * once: they skip the thread heap's lock and beat, but for one call in
 * every MM_HEARTBEAT_CALLS, which must come among these. */
static void f_medium(worker_t *w) {
  for (unsigned i = 0; i < MM_HEARTBEAT_CALLS; i++) {
    void *p = mm_malloc(40000);
    WCHECK("a medium block", p != NULL);
    mm_free(p);
  }
  (void)w;
}

static void f_free_all(worker_t *w) {
  w->ordered = 0;
  while (w->nheld) w_free(w, held_take(w, w->nheld - 1));
  while (w->nanch) w_free(w, w->anch[--w->nanch]);
}

/* Allocate blocks of w->size until a page of the thread's is on its full
 * list (the allocation after the one that exhausted it), within bounds. */
static void f_fill(worker_t *w) {
  unsigned cap = mm_size_classes[size_class_of(w->size)].capacity;
  extent_t *prev = NULL;
  for (unsigned i = 0; i < 2 * cap + 2; i++) {
    uintptr_t a = w_alloc(w, w->size);
    if (!a) break;
    extent_t *pg = page_of_block((void *)a);
    if (prev && pg != prev && page_owner(prev) == mm_thread_heap && page_is_full(prev)) break;
    prev = pg;
  }
}

/* B, while A blocks: wait until A is idle (no slow path for MM_IDLE_MS),
 * then free n blocks from the front of held[] and flush. */
static thread_heap_t *idle_heap;
static void f_idle_free(worker_t *w) {
  while (!time_reached(os_now_ms(), atomic_load(&idle_heap->xactive_ms) + MM_IDLE_MS + 1)) sleep_ms(1);
  if (w->n > 0 && w->nheld > 0) { /* held[0] first, then random ones */
    w_free(w, held_take(w, 0));
    w->n--;
  }
  f_free(w);
  mm_collect();
}

/* ---- the concurrent burst ---------------------------------------------------------------------- */

#define RING 1024
typedef struct ring_s {
  _Atomic(size_t) head, tail;
  _Atomic(uintptr_t) slot[RING];
} ring_t;
static ring_t ring_ab, ring_ba; /* A to B, B to A: blocks to free */
static _Atomic(int) a_burst_done;

static bool ring_push(ring_t *r, uintptr_t v) {
  size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
  if (t - atomic_load_explicit(&r->head, memory_order_acquire) == RING) return false;
  atomic_store_explicit(&r->slot[t % RING], v, memory_order_relaxed);
  atomic_store_explicit(&r->tail, t + 1, memory_order_release);
  return true;
}

static bool ring_pop(ring_t *r, uintptr_t *v) {
  size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
  if (h == atomic_load_explicit(&r->tail, memory_order_acquire)) return false;
  *v = atomic_load_explicit(&r->slot[h % RING], memory_order_relaxed);
  atomic_store_explicit(&r->head, h + 1, memory_order_release);
  return true;
}

/* w gives one of its held blocks to the other worker through ring r */
static void give_ring(worker_t *w, ring_t *r, int to) {
  if (!w->nheld) return;
  int i = (int)(rnd(&w->rng) % (uint64_t)w->nheld);
  bent_t *e = bent_find(w->held[i]);
  atomic_store(&e->state, LIVE_BY(to)); /* before the push: the other may free it at once */
  if (ring_push(r, w->held[i])) held_take(w, i);
  else atomic_store(&e->state, LIVE_BY(w->idx));
}

/* A allocates a block and gives it to B through ring_ab */
static void give_ring_blocking_alloc(worker_t *w) {
  uintptr_t a = w_alloc(w, round_sizes[0]);
  if (!a || w->nheld == 0 || w->held[w->nheld - 1] != a) return; /* an anchor stays */
  w->nheld--;
  atomic_store(&bent_find(a)->state, LIVE_BY(WB));
  while (!ring_push(&ring_ab, a)) sched_yield();
}

static void conc_A(worker_t *w) {
  for (int i = 0; i < w->n; i++) {
    if (i == w->idle_at) sleep_ms(MM_IDLE_MS + 3); /* idle: B's flushes may take over */
    unsigned r = (unsigned)(rnd(&w->rng) % 100);
    uintptr_t a;
    if (r < 38 || w->nheld == 0) {
      w_alloc(w, round_sizes[rnd(&w->rng) % (uint64_t)round_nsizes]);
    } else if (r < 70) {
      give_ring(w, &ring_ab, WB);
    } else if (r < 80) {
      w_free(w, held_take(w, (int)(rnd(&w->rng) % (uint64_t)w->nheld)));
    } else if (r < 90) {
      if (ring_pop(&ring_ba, &a)) w_free(w, a); /* B's block: a remote free the other way */
    } else if (r < 93) {
      mm_collect();
    } else if (r < 96) {
      f_slow(w);
    } else {
      sched_yield();
    }
  }
  atomic_store_explicit(&a_burst_done, 1, memory_order_release);
}

static void conc_B(worker_t *w) {
  int extra = w->n;
  for (;;) {
    uintptr_t a;
    bool got = ring_pop(&ring_ab, &a);
    if (got) w_free(w, a);
    if (extra > 0 && rnd(&w->rng) % 3 == 0) {
      extra--;
      unsigned r = (unsigned)(rnd(&w->rng) % 100);
      if (r < 30) w_alloc(w, round_sizes[rnd(&w->rng) % (uint64_t)round_nsizes]);
      else if (r < 60 && w->nheld) w_free(w, held_take(w, (int)(rnd(&w->rng) % (uint64_t)w->nheld)));
      else if (r < 80) give_ring(w, &ring_ba, WA);
      else if (r < 90) mm_collect();
      else sched_yield();
    }
    if (!got) {
      if (atomic_load_explicit(&a_burst_done, memory_order_acquire) && extra <= 0) {
        while (ring_pop(&ring_ab, &a)) w_free(w, a);
        break;
      }
      sched_yield();
    }
  }
  /* a tail of frees, overlapping A's exit when A quits after its burst */
  int tail = w->nheld ? (int)(rnd(&w->rng) % (uint64_t)(w->nheld + 1)) : 0;
  for (int i = 0; i < tail && w->nheld; i++) w_free(w, held_take(w, (int)(rnd(&w->rng) % (uint64_t)w->nheld)));
}

/* ---- main's side -------------------------------------------------------------------------------- */

/* move n random held blocks of `from` to `to` (quiet point) */
static void give(worker_t *from, worker_t *to, int n) {
  for (int i = 0; i < n && from->nheld && to->nheld < MAXH - 1; i++) {
    int k = (int)(rnd(&from->rng) % (uint64_t)from->nheld);
    uintptr_t a = from->held[k];
    from->held[k] = from->held[--from->nheld];
    atomic_store(&bent_find(a)->state, LIVE_BY(to->idx));
    to->held[to->nheld++] = a;
  }
}

/* A dead worker's blocks go to `to` (its anchors stay anchors). */
static void orphans_to(worker_t *dead, worker_t *to) {
  while (dead->nheld) {
    uintptr_t a = dead->held[--dead->nheld];
    atomic_store(&bent_find(a)->state, LIVE_BY(to->idx));
    to->held[to->nheld++] = a;
  }
  while (dead->nanch) {
    uintptr_t a = dead->anch[--dead->nanch];
    atomic_store(&bent_find(a)->state, LIVE_BY(to->idx) | ST_ANCHOR);
    to->anch[to->nanch++] = a;
  }
}

static char json[1 << 20];
static double taken_over(void) {
  double v = -1;
  size_t n = mm_stats_json(json, sizeof(json));
  if (n >= sizeof(json) || !json_number(json, "total.pages_taken_over", &v)) {
    CHECK("mm_stats_json has total.pages_taken_over", 0);
    return -1;
  }
  return v;
}

/* Until th has been idle long enough for a flush to take its pages over. */
static void wait_idle(thread_heap_t *th) {
  while (!time_reached(os_now_ms(), atomic_load(&th->xactive_ms) + MM_IDLE_MS + 1)) sleep_ms(1);
}

/* ---- check_state: every block of the model accounted for, exactly once ----------------------- */

typedef struct snap_s {
  uintptr_t a;
  uint32_t state, size, inflight;
  uint64_t id;
} snap_t;
static snap_t snaps[BT_MAX];
static int nsnap;
static long inflight_total, inflight_foreign;

static int snap_cmp(const void *x, const void *y) {
  uintptr_t a = ((const snap_t *)x)->a, b = ((const snap_t *)y)->a;
  return a < b ? -1 : a > b;
}

static int snap_lower(uintptr_t a) {
  int lo = 0, hi = nsnap;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (snaps[mid].a < a) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void snapshot(void) {
  nsnap = 0;
  uint32_t n = atomic_load(&bt_n);
  for (uint32_t i = 0; i < n; i++) {
    bent_t *e = &btab[bt_used[i]];
    snaps[nsnap++] = (snap_t){atomic_load(&e->key), atomic_load(&e->state), atomic_load(&e->size), 0,
                              atomic_load(&e->id)};
  }
  qsort(snaps, (size_t)nsnap, sizeof(snap_t), snap_cmp);
}

static void note_chain(const block_t *b, const char *where) {
  for (long n = 0; b && n < 1000000; b = block_next(b), n++) {
    int i = snap_lower((uintptr_t)b);
    if (i < nsnap && snaps[i].a == (uintptr_t)b) {
      snaps[i].inflight++;
      if (snaps[i].state != ST_FREED) bad("a live block %p is in flight (%s)", (void *)b, where);
    } else {
      inflight_foreign++;
    }
    inflight_total++;
  }
}

/* th's lock held.  Also the lane rule at a quiet point: every chain's lane 0
 * is pushed last and taken first, so once every flush and drain is over no
 * lane holds a block while lane 0 is empty (such a block would wait for the
 * next chain, remote_inbox_waiting being false). */
static void note_heap(thread_heap_t *th, const char *who) {
  for (unsigned i = 0; i < MM_REMOTE_BUCKETS; i++)
    for (unsigned l = 0; l < LANES; l++) note_chain(th->out[i].head[l], who);
  for (unsigned l = 0; l < LANES; l++) note_chain(atomic_load_explicit(&th->xinbox[l], memory_order_acquire), who);
  if (!remote_inbox_waiting(th))
    for (unsigned l = 1; l < LANES; l++)
      if (atomic_load(&th->xinbox[l])) {
        bad("heap %p (%s): inbox lane %u holds blocks while lane 0 is empty", (void *)th, who, l);
      }
}

static void visit_dead(thread_heap_t *th, void *arg) {
  (void)arg;
  char why[256];
  thread_heap_lock(th);
  if (!remote_is_valid(th, why, sizeof(why))) bad("remote_is_valid(dead heap %p): %s", (void *)th, why);
  for (unsigned i = 0; i < MM_REMOTE_BUCKETS; i++)
    if (th->out[i].count) bad("dead heap %p keeps a batch of %u blocks", (void *)th, th->out[i].count);
  note_heap(th, "dead heap");
  thread_heap_unlock(th);
}

static bool on_list(const extent_list_t *q, const extent_t *pg) {
  for (const extent_t *p = q->first; p; p = p->next)
    if (p == pg) return true;
  return false;
}

static uint8_t cnt[8192];
static long pages_checked, pages_retired, blocks_freed_seen, blocks_live_seen;

/* Walk a free list into cnt[]; 0 when it leaves the page or loops. */
static bool walk(const extent_t *pg, const block_t *b, unsigned *n, const char *when) {
  for (; b; b = block_next(b)) {
    uintptr_t off = (uintptr_t)b - pg->page_start;
    if (off >= (uint64_t)pg->reserved * pg->block_size || off % pg->block_size || ++*n > pg->reserved) {
      bad("%s: page %p: free list holds %p (outside, misaligned, or a cycle)", when, (void *)pg->page_start,
          (const void *)b);
      return false;
    }
    if (++cnt[off / pg->block_size] == 2)
      bad("%s: page %p: block %p is on its free lists twice", when, (void *)pg->page_start, (const void *)b);
  }
  return true;
}

static worker_t *live_owner(const thread_heap_t *th) {
  for (int i = 0; i < NW; i++)
    if (W[i].running && W[i].heap == th) return &W[i];
  return NULL;
}

static void check_page(pent_t *pe, const char *when) {
  extent_t *pg = (extent_t *)atomic_load(&pe->key);
  int lo = snap_lower(pe->start), hi = snap_lower(pe->start + (uintptr_t)pe->cap * pe->bsize);
  unsigned nlive = 0, nflight = 0;
  for (int i = lo; i < hi; i++) {
    if (snaps[i].state & ST_LIVE) nlive++;
    nflight += snaps[i].inflight;
    if (snaps[i].size != pe->bsize) bad("%s: block %p of size %u on a page of %u", when, (void *)snaps[i].a, snaps[i].size, pe->bsize);
  }
  thread_heap_t *owner = page_owner(pg);
  if (owner && !live_owner(owner)) {
    bad("%s: page %p owned by heap %p, no running worker's", when, (void *)pe->start, (void *)owner);
    return;
  }
  if (owner) thread_heap_lock(owner);
  local_heap_t *home = local_heap_of_extent(pg);
  local_heap_lock(home);
  pages_checked++;
  if (page_owner(pg) != owner) bad("%s: page %p changed owner at a quiet point", when, (void *)pe->start);
  if (pg->kind != MM_EXTENT_PAGE || pg->page_start != pe->start || pg->block_size != pe->bsize) {
    pages_retired++;
    if (nlive || nflight)
      bad("%s: page %p retired with %u live blocks and %u in flight", when, (void *)pe->start, nlive, nflight);
  } else {
    char why[256];
    if (!page_is_valid(pg, why, sizeof(why))) bad("%s: page_is_valid: %s", when, why);
    unsigned c = pg->size_class;
    if (owner ? !on_list(&owner->queue[c], pg) && !on_list(&owner->full, pg) && !on_list(&owner->fostered, pg)
              : !on_list(&home->abandoned[c], pg))
      bad("%s: page %p (owner %p) is not on its owner's lists", when, (void *)pe->start, (void *)owner);
    if (owner && page_is_taken(pg)) bad("%s: page %p left taken", when, (void *)pe->start);
    memset(cnt, 0, pg->reserved);
    unsigned nfree = 0;
    if (walk(pg, pg->free, &nfree, when)) walk(pg, pg->local_free, &nfree, when);
    for (int i = lo; i < hi; i++) {
      snap_t *s = &snaps[i];
      size_t k = (s->a - pe->start) / pe->bsize;
      unsigned on = k < pg->reserved ? cnt[k] : 0;
      if (s->state == ST_FREED) {
        blocks_freed_seen++;
        if (on + s->inflight != 1)
          bad("%s: freed block %p of page %p is on the free lists %u times and in flight %u times "
              "(owner %p)", when, (void *)s->a, (void *)pe->start, on, s->inflight, (void *)owner);
      } else {
        blocks_live_seen++;
        if (on || s->inflight)
          bad("%s: live block %p (holder %s) is on the free lists %u times, in flight %u times", when,
              (void *)s->a, wnames[ST_HOLDER(s->state) % NW], on, s->inflight);
        if (!tag_ok(s->a, s->id, s->size)) bad("%s: live block %p was overwritten", when, (void *)s->a);
      }
    }
    if (pg->used != nlive + nflight)
      bad("%s: page %p: used %u != %u live + %u in flight (reserved %u, free %u, owner %p)", when,
          (void *)pe->start, pg->used, nlive, nflight, pg->reserved, nfree, (void *)owner);
  }
  local_heap_unlock(home);
  if (owner) thread_heap_unlock(owner);
}

static long states_checked;

/* A quiet point: every worker blocked (or gone). */
static void check_state(const char *when, bool settled) {
  states_checked++;
  CHECK("no failure seen by a worker", atomic_load(&wfailures) == 0);
  snapshot();
  inflight_total = inflight_foreign = 0;
  char why[256];
  for (int i = 0; i < NW; i++) {
    thread_heap_t *th = W[i].running ? W[i].heap : NULL;
    if (!th) continue;
    thread_heap_lock(th);
    if (!thread_heap_is_valid(th, why, sizeof(why))) bad("%s: thread_heap_is_valid(%s): %s", when, W[i].name, why);
    if (!remote_is_valid(th, why, sizeof(why))) bad("%s: remote_is_valid(%s): %s", when, W[i].name, why);
    note_heap(th, W[i].name);
    thread_heap_unlock(th);
  }
  for (uint32_t h = 0; h < mm_nheaps; h++) thread_heap_foreach_dead(h, false, visit_dead, NULL);
  if (inflight_foreign) bad("%s: %ld blocks in flight the model never freed", when, inflight_foreign);
  if (settled && inflight_total) bad("%s: %ld blocks still in flight once settled", when, inflight_total);
  uint32_t np = atomic_load(&pt_n);
  for (uint32_t i = 0; i < np; i++) check_page(&ptab[pt_used[i]], when);
}

/* Every running worker collects, three times over: batches flushed, inboxes
 * and dead heaps' inboxes taken. */
static void settle(void) {
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < NW; i++)
      if (W[i].running) run(&W[i], f_collect);
}

static void end_phase(const char *when) {
  settle();
  check_state(when, true);
  for (int i = 0; i < NW; i++)
    if (W[i].running) run(&W[i], f_free_all);
  settle();
  check_state(when, true);
  for (int i = 0; i < nsnap; i++)
    if (snaps[i].state != ST_FREED) bad("%s: block %p still live after the final frees", when, (void *)snaps[i].a);
  for (int i = 0; i < NW; i++) worker_stop(&W[i]);
}

/* ---- inboxes, lane by lane ------------------------------------------------------------------------ */

/* Blocks on each lane of th's inbox, and whether each one's position in
 * order[] (the order B freed them) is on that lane. */
static void lane_census(thread_heap_t *th, const uintptr_t *order, int n, int from, unsigned count[LANES],
                        bool *right_lane) {
  *right_lane = true;
  for (unsigned l = 0; l < LANES; l++) {
    count[l] = 0;
    for (const block_t *b = atomic_load(&th->xinbox[l]); b; b = block_next(b)) {
      count[l]++;
      int pos = -1;
      for (int i = 0; i < n; i++)
        if (order[i] == (uintptr_t)b) pos = i;
      if (pos < from || (unsigned)pos % LANES != l) *right_lane = false;
    }
  }
}

static bool inbox_empty(thread_heap_t *th) {
  for (unsigned l = 0; l < LANES; l++)
    if (atomic_load(&th->xinbox[l])) return false;
  return true;
}

static void lane_case(int k, int how, size_t miss_size) {
  worker_t *a = &W[WA], *b = &W[WB];
  static uintptr_t order[256];
  char why[256];
  a->n = k;
  run(a, f_alloc);
  run(a, f_collect);
  thread_heap_t *ah = a->heap;
  REQUIRE("lanes: A holds k blocks and its inbox is empty", a->nheld == k && inbox_empty(ah));
  for (int i = 0; i < k; i++) {
    order[i] = a->held[i];
    atomic_store(&bent_find(order[i])->state, LIVE_BY(WB));
    b->held[b->nheld++] = order[i];
  }
  a->nheld = 0;
  b->n = k;
  b->ordered = b->calm = 1;
  /* A is held "active" from here on, so that every hand-over of this phase
   * (the full batches during B's frees, the partial one at B's flush) is a
   * plain one: were A idle for MM_IDLE_MS (a slow machine, a sanitizer, a
   * loaded CI run) a take-over pass would put the blocks back on lane 0 as
   * one chain (checked in the take-over phase).  It once failed so, at
   * k = 32, in a TSan run under load. */
  atomic_store(&ah->xactive_ms, os_now_ms() + 3600 * 1000);
  run(b, f_free);
  b->ordered = b->calm = 0;

  /* B's batch for A: what is left after the full batches went */
  int q = k / BATCH, rem = k % BATCH;
  thread_heap_t *bh = b->heap;
  thread_heap_lock(bh);
  remote_batch_t *rb = NULL;
  for (unsigned i = 0; i < MM_REMOTE_BUCKETS; i++)
    if (bh->out[i].dest == ah) rb = &bh->out[i];
  if (!rb) {
    bad("lanes k=%d: B has no batch for A", k);
  } else {
    if ((int)rb->count != rem) bad("lanes k=%d: B's batch counts %u, want %d", k, rb->count, rem);
    for (unsigned l = 0; l < LANES; l++) {
      unsigned got = 0, want = (unsigned)rem / LANES + (l < (unsigned)rem % LANES);
      const block_t *last = NULL;
      for (const block_t *x = rb->head[l]; x && got <= BATCH; x = block_next(x)) {
        int pos = -1;
        for (int i = 0; i < k; i++)
          if (order[i] == (uintptr_t)x) pos = i;
        if (pos < q * BATCH || (unsigned)(pos - q * BATCH) % LANES != l)
          bad("lanes k=%d: block %d of the batch is on lane %u", k, pos, l);
        got++;
        last = x;
      }
      if (got != want || rb->tail[l] != last)
        bad("lanes k=%d: batch lane %u holds %u blocks (want %u), tail %s", k, l, got, want,
            rb->tail[l] == last ? "right" : "wrong");
    }
  }
  if (!remote_is_valid(bh, why, sizeof(why))) bad("lanes k=%d: remote_is_valid(B): %s", k, why);
  thread_heap_unlock(bh);

  /* A's inbox: the full batches so far */
  unsigned count[LANES];
  bool right;
  lane_census(ah, order, k, 0, count, &right);
  for (unsigned l = 0; l < LANES; l++)
    if (count[l] != (unsigned)(q * BATCH / LANES)) bad("lanes k=%d: before B's flush lane %u holds %u", k, l, count[l]);
  CHECK("lanes: blocks of full batches on their own lanes", right);
  CHECK("lanes: remote_inbox_waiting iff a full batch went", remote_inbox_waiting(ah) == (q > 0));

  /* B flushes its partial batch (A still held active: a plain hand-over). */
  run(b, f_collect);
  lane_census(ah, order, k, 0, count, &right);
  unsigned total = 0;
  for (unsigned l = 0; l < LANES; l++) {
    unsigned want = (unsigned)k / LANES + (l < (unsigned)k % LANES);
    total += count[l];
    if (count[l] != want) bad("lanes k=%d: lane %u holds %u blocks, want %u", k, l, count[l], want);
  }
  CHECK("lanes: every block freed is in A's inbox", total == (unsigned)k);
  CHECK("lanes: block i on lane i % MM_LANES", right);
  CHECK("lanes: lane 0 holds a block (remote_inbox_waiting)", remote_inbox_waiting(ah));
  thread_heap_lock(ah);
  if (!remote_is_valid(ah, why, sizeof(why))) bad("lanes k=%d: remote_is_valid(A): %s", k, why);
  thread_heap_unlock(ah);
  check_state("lanes: in A's inbox", false);

  /* A takes its inbox */
  if (how == 0) {
    run(a, f_collect);
  } else if (how == 1) {
    run(a, f_slow);
  } else if (how == 3) {
    run(a, f_medium);
  } else { /* an allocation that misses: a class A has no page of yet */
    a->n = 1;
    a->size = miss_size;
    run(a, f_alloc);
    a->size = 0;
  }
  atomic_store(&ah->xactive_ms, os_now_ms());
  CHECK("lanes: every lane empty once A took its inbox", inbox_empty(ah) && !remote_inbox_waiting(ah));
  check_state("lanes: taken", true);
}

static void t_lanes(uint64_t seed) {
  model_reset();
  round_sizes[0] = 64;
  round_nsizes = 1;
  worker_start(WA, -1, seed);
  worker_start(WB, -1, seed * 3);
  run(&W[WB], f_collect); /* B gets its heap */
  W[WA].n = 1;
  run(&W[WA], f_alloc); /* A's anchor */
  static const size_t miss[] = {80, 96, 128, 160, 192, 224, 320, 384, 448, 512, 768, 896};
  int ks[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, BATCH - 1, BATCH, BATCH + 1, BATCH + 5, 2 * BATCH + 3};
  int nk = (int)(sizeof(ks) / sizeof(ks[0])), m = 0;
  for (int i = 0; i < nk; i++) lane_case(ks[i], i % 4, miss[m++ % 12]);
  end_phase("lanes");
}

/* ---- remote_is_valid rejects what it should ----------------------------------------------------- */

static void build(remote_batch_t *rb, thread_heap_t *dest, block_t **blk, int n) {
  memset(rb, 0, sizeof(*rb));
  rb->dest = dest;
  for (int i = 0; i < n; i++) {
    unsigned l = (unsigned)i % LANES;
    block_set_next(blk[i], rb->head[l]);
    if (!rb->head[l]) rb->tail[l] = blk[i];
    rb->head[l] = blk[i];
  }
  rb->count = (uint32_t)n;
}

static void t_checker(void) {
  enum { NB = LANES + 1 };
  block_t *blk[NB];
  for (int i = 0; i < NB; i++) blk[i] = mm_malloc(64);
  thread_heap_t *th = mm_thread_heap;
  REQUIRE("main has a heap", th != &mm_heap_empty);
  char why[256];
  thread_heap_lock(th);
  CHECK("checker: accepts main's heap", remote_is_valid(th, why, sizeof(why)));
  unsigned bi = 0;
  while (bi < MM_REMOTE_BUCKETS && th->out[bi].count) bi++;
  REQUIRE("checker: main has an empty batch", bi < MM_REMOTE_BUCKETS);
  remote_batch_t saved = th->out[bi], *rb = &th->out[bi];
  for (int i = 0; i < NB; i++) blk[i]->canary = block_canary_of(blk[i]); /* as if freed */

  memset(rb, 0, sizeof(*rb));
  rb->dest = th;
  rb->count = 1;
  CHECK("checker: rejects a count of 1 with empty lanes",
        !remote_is_valid(th, why, sizeof(why)) && strstr(why, "count says"));
  build(rb, th, blk, 1);
  CHECK("checker: accepts one block on lane 0", remote_is_valid(th, why, sizeof(why)));
  rb->head[1] = rb->tail[1] = rb->head[0];
  rb->head[0] = rb->tail[0] = NULL;
  CHECK("checker: rejects block 0 on lane 1", !remote_is_valid(th, why, sizeof(why)) && strstr(why, "count says"));
  build(rb, th, blk, NB);
  CHECK("checker: accepts MM_LANES+1 blocks on their lanes", remote_is_valid(th, why, sizeof(why)));
  rb->count = NB + 1;
  CHECK("checker: rejects a count one too high", !remote_is_valid(th, why, sizeof(why)));
  rb->count = NB - 1;
  CHECK("checker: rejects a count one too low", !remote_is_valid(th, why, sizeof(why)));
  build(rb, th, blk, NB);
  rb->tail[0] = blk[NB - 1]; /* lane 0 holds blocks 0 and LANES; its tail is block 0 */
  CHECK("checker: rejects a wrong tail", !remote_is_valid(th, why, sizeof(why)));
  /* block LANES moved from lane 0 to lane 1 */
  build(rb, th, blk, NB - 1);
  block_set_next(blk[NB - 1], rb->head[1]);
  rb->head[1] = blk[NB - 1];
  rb->count = NB;
  CHECK("checker: rejects block MM_LANES on lane 1", !remote_is_valid(th, why, sizeof(why)));
  build(rb, th, blk, NB);
  blk[2]->canary = 0;
  CHECK("checker: rejects a batch block that is not free",
        !remote_is_valid(th, why, sizeof(why)) && strstr(why, "not a free block"));
  blk[2]->canary = block_canary_of(blk[2]);
  *rb = saved;
  CHECK("checker: accepts the batch restored", remote_is_valid(th, why, sizeof(why)));

  block_t *x = blk[0];
  x->canary = 0;
  block_set_next(x, NULL);
  atomic_store(&th->xinbox[2], x);
  CHECK("checker: rejects an inbox block that is not free",
        !remote_is_valid(th, why, sizeof(why)) && strstr(why, "inbox lane 2"));
  x->canary = block_canary_of(x);
  CHECK("checker: accepts a free block in the inbox", remote_is_valid(th, why, sizeof(why)));
  atomic_store(&th->xinbox[2], NULL);
  CHECK("checker: accepts the inbox restored", remote_is_valid(th, why, sizeof(why)));
  for (int i = 0; i < NB; i++) blk[i]->canary = 0;
  thread_heap_unlock(th);
  for (int i = 0; i < NB; i++) mm_free(blk[i]);

  /* the stash: two medium blocks main freed, of sizes it asked for before */
  for (int i = 0; i < 2; i++) {
    mm_free(mm_malloc(100 << 10));
    mm_free(mm_malloc(60 << 10));
  }
  void *m0 = mm_malloc(100 << 10), *m1 = mm_malloc(60 << 10);
  mm_free(m0);
  mm_free(m1);
  thread_heap_lock(th);
  REQUIRE("checker: main stashed both medium blocks", th->stash_count == 2);
  CHECK("checker: accepts main's stash", thread_heap_is_valid(th, why, sizeof(why)));
  block_t *b0 = (block_t *)th->stash[0]->node.start;
  b0->canary = 0;
  CHECK("checker: rejects a stashed block without its mark",
        !thread_heap_is_valid(th, why, sizeof(why)) && strstr(why, "not a marked medium block"));
  b0->canary = block_canary_of(b0);
  extent_t *second = th->stash[1];
  th->stash[1] = th->stash[0];
  atomic_store(&th->xstash_bytes, 2 * (uint32_t)(th->stash[0]->node.ndatablocks << MM_DATABLOCK_SHIFT));
  CHECK("checker: rejects a block stashed twice",
        !thread_heap_is_valid(th, why, sizeof(why)) && strstr(why, "stashed twice"));
  th->stash[1] = second;
  CHECK("checker: rejects xstash_bytes that does not sum the stash",
        !thread_heap_is_valid(th, why, sizeof(why)) && strstr(why, "xstash_bytes"));
  atomic_store(&th->xstash_bytes, (uint32_t)((th->stash[0]->node.ndatablocks +
                                             th->stash[1]->node.ndatablocks) << MM_DATABLOCK_SHIFT));
  CHECK("checker: accepts the stash restored", thread_heap_is_valid(th, why, sizeof(why)));
  thread_heap_stash_flush(th);
  CHECK("checker: accepts the stash sent home", th->stash_count == 0 &&
                                                     thread_heap_is_valid(th, why, sizeof(why)));
  thread_heap_unlock(th);
}

/* ---- the idle take-over ------------------------------------------------------------------------ */

static void t_takeover(uint64_t seed) {
  model_reset();
  round_sizes[0] = 4096;
  round_nsizes = 1;
  worker_t *a = &W[WA], *b = &W[WB];
  worker_start(WA, -1, seed);
  worker_start(WB, -1, seed * 5);
  run(b, f_collect);
  unsigned cap = mm_size_classes[size_class_of(4096)].capacity;
  a->n = (int)(3 * cap + 3);
  run(a, f_alloc);
  run(a, f_collect);
  thread_heap_t *ah = a->heap;
  /* A's pages, full or not */
  extent_t *full[8], *cur = NULL;
  int nfull = 0;
  for (int i = 0; i < a->nanch; i++) {
    extent_t *pg = page_of_block((void *)a->anch[i]);
    if (page_owner(pg) == ah && page_owner_is(pg, ah->tid, true)) {
      if (nfull < 8) full[nfull++] = pg;
    } else if (page_owner(pg) == ah) {
      cur = pg;
    }
  }
  REQUIRE("take-over: A has two full pages and a current one", nfull >= 2 && cur);
  thread_heap_lock(ah);
  CHECK("take-over: A's full pages are on its full list", on_list(&ah->full, full[0]) && on_list(&ah->full, full[1]));
  thread_heap_unlock(ah);
  /* to B: every block of full[0], 5 of full[1], 2 of the current page */
  uintptr_t back[2];
  int want[3] = {(int)cap, 5, 2}, nback = 0;
  extent_t *pgs[3] = {full[0], full[1], cur};
  for (int p = 0; p < 3; p++)
    for (int i = 0; i < a->nheld && want[p] > 0;) {
      if (page_of_block((void *)a->held[i]) != pgs[p]) {
        i++;
        continue;
      }
      uintptr_t x = a->held[i];
      a->held[i] = a->held[--a->nheld];
      atomic_store(&bent_find(x)->state, LIVE_BY(WB));
      b->held[b->nheld++] = x;
      if (p == 2) back[nback++] = x;
      want[p]--;
    }
  REQUIRE("take-over: blocks of the current page to free", nback == 2);
  wait_idle(ah);
  double t0 = taken_over();
  b->n = b->nheld;
  b->ordered = b->calm = 1;
  run(b, f_free);
  b->ordered = b->calm = 0;
  run(b, f_collect); /* B's flush: A idle, its two full pages taken over */
  double t1 = taken_over();
  if (t1 - t0 != 2) bad("take-over: pages_taken_over grew by %.0f, want 2", t1 - t0);
  CHECK("take-over: the two pages are abandoned", !page_owner(full[0]) && !page_owner(full[1]));
  for (int i = 2; i < nfull; i++)
    CHECK("take-over: a full page with nothing freed stays A's", page_owner(full[i]) == ah && page_is_full(full[i]));
  unsigned count[LANES];
  bool right;
  lane_census(ah, back, 2, 0, count, &right);
  unsigned others = 0;
  for (unsigned l = 1; l < LANES; l++) others += count[l];
  CHECK("take-over: the blocks of A's current page go back to lane 0, as one chain",
        count[0] == 2 && others == 0 && remote_inbox_waiting(ah));
  check_state("take-over: taken", false);
  run(a, f_collect);
  CHECK("take-over: A took its inbox", inbox_empty(ah));
  check_state("take-over: inbox taken", true);
  /* A needs new pages: it adopts one taken from it */
  a->n = (int)(2 * cap);
  run(a, f_alloc);
  CHECK("take-over: A adopted a page taken over from it", page_owner(full[0]) == ah || page_owner(full[1]) == ah);
  check_state("take-over: adopted", false);
  end_phase("take-over");
}

/* ---- lanes under a race -----------------------------------------------------------------------------
 * A spins on its slow path's first step (thread_heap_beat under its lock:
 * take the inbox when lane 0 says so) while B hands it chains of 1..32
 * blocks (remote_flush_all).  After each chain B waits until A's inbox is
 * empty again: a chain whose lane 0 A took before the other lanes arrived
 * would stay behind an empty lane 0 for ever (A does nothing else). */

static _Atomic(int) race_phase; /* odd: A allocates a chain's blocks; even: B frees them */
static _Atomic(int) race_stop;
static long race_chains, race_stranded;

static void race_A(worker_t *w) {
  thread_heap_t *th = mm_thread_heap;
  for (;;) {
    int ph = atomic_load_explicit(&race_phase, memory_order_acquire);
    if (ph & 1) { /* B wants a chain: allocate it */
      int k = 1 + (int)(rnd(&w->rng) % BATCH);
      for (int j = 0; j < k; j++) give_ring_blocking_alloc(w);
      atomic_store_explicit(&race_phase, ph + 1, memory_order_release);
    } else if (remote_inbox_waiting(th)) { /* the moment lane 0 turns non-empty */
      thread_heap_lock(th);
      thread_heap_beat(th);
      thread_heap_unlock(th);
    } else if (atomic_load_explicit(&race_stop, memory_order_acquire)) {
      break;
    } else {
      __builtin_ia32_pause();
    }
  }
}

/* Once B's flush is over, "lane 0 empty, another lane not" lasts only while
 * A, holding its lock, is between its exchanges of the lanes; seen for
 * 200 ms with A's lock free every time, it is a strand. */
static void race_B(worker_t *w) {
  thread_heap_t *ah = W[WA].heap, *bh = mm_thread_heap;
  uint32_t start = os_now_ms();
  for (int c = 0; c < w->n && (uint32_t)(os_now_ms() - start) < (uint32_t)w->idle_at; c++) {
    int ph = atomic_load(&race_phase);
    atomic_store_explicit(&race_phase, ph + 1, memory_order_release); /* ask A for a chain */
    while (atomic_load_explicit(&race_phase, memory_order_acquire) != ph + 2) sched_yield();
    uintptr_t a;
    while (ring_pop(&ring_ab, &a)) {
      bh->slow_calls = 1; /* no heartbeat: B's own flush only */
      w_free(w, a);
    }
    thread_heap_lock(bh);
    remote_flush_all(bh);
    thread_heap_unlock(bh);
    race_chains++;
    uint32_t t0 = os_now_ms(), strand_since = 0;
    bool strand = false;
    while (!inbox_empty(ah)) {
      uint32_t now = os_now_ms();
      if (remote_inbox_waiting(ah) || atomic_load(&ah->lock.xheld)) { /* or A is in the middle of a drain */
        strand = false;
      } else if (!strand) {
        strand = true;
        strand_since = now;
      } else if ((uint32_t)(now - strand_since) > 200) {
        race_stranded++;
        wfail("a chain handed to a spinning owner is taken whole (none left behind an empty lane 0)",
              "!strand", __LINE__);
        break;
      }
      if ((uint32_t)(now - t0) > 60000) {
        wfail("a spinning owner takes its inbox", "inbox_empty(A)", __LINE__);
        break;
      }
      sched_yield();
    }
    if (atomic_load(&wfailures)) break;
  }
  atomic_store_explicit(&race_stop, 1, memory_order_release);
}

static void t_lane_race(uint64_t seed, int chains, int budget_ms) {
  model_reset();
  round_sizes[0] = 48;
  round_nsizes = 1;
  worker_t *a = &W[WA], *b = &W[WB];
  worker_start(WA, -1, seed);
  worker_start(WB, -1, seed * 13);
  run(b, f_collect);
  a->n = 1;
  run(a, f_alloc); /* A's heap and its page's anchor */
  atomic_store(&race_phase, 0);
  atomic_store(&race_stop, 0);
  b->n = chains;
  b->idle_at = budget_ms; /* B's time budget */
  post(a, race_A);
  post(b, race_B);
  wait_done(b);
  wait_done(a);
  b->idle_at = -1;
  CHECK("lane race: no chain stranded behind an empty lane 0", race_stranded == 0);
  check_state("lane race", false);
  end_phase("lane race");
}

/* ---- the dead-heap sweep ---------------------------------------------------------------------------- */

static unsigned inbox_count(thread_heap_t *th, unsigned count[LANES]) {
  unsigned total = 0;
  for (unsigned l = 0; l < LANES; l++) {
    count[l] = 0;
    for (const block_t *b = atomic_load(&th->xinbox[l]); b; b = block_next(b)) count[l]++;
    total += count[l];
  }
  return total;
}

static int first_cpu(void) {
  cpu_set_t s;
  if (sched_getaffinity(0, sizeof(s), &s) != 0) return -1;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &s)) return c;
  return -1;
}

static void t_dead(uint64_t seed, bool reuse) {
  const char *ph = reuse ? "dead heap reused" : "dead heap";
  model_reset();
  round_sizes[0] = 64;
  round_nsizes = 1;
  int cpu = reuse ? first_cpu() : -1;
  worker_t *a = &W[WA], *b = &W[WB], *c = &W[WC];
  worker_start(WA, cpu, seed);
  worker_start(WB, -1, seed * 7);
  run(b, f_collect);
  a->n = 40;
  run(a, f_alloc);
  run(a, f_collect);
  thread_heap_t *ah = a->heap;
  give(a, b, a->nheld);
  int first = reuse ? 5 : BATCH + 3; /* reuse: all in B's batch; else one batch went, 3 wait */
  b->n = first;
  b->calm = 1;
  run(b, f_free);
  b->calm = 0;
  check_state(ph, false);
  worker_stop(a); /* A exits: its inbox taken, its pages abandoned */
  orphans_to(a, b);
  CHECK("dead: A's heap is dead", ah->state == MM_THREAD_DEAD);
  CHECK("dead: A took its inbox on the way out", inbox_empty(ah));
  check_state(ph, false);
  unsigned count[LANES];
  if (!reuse) {
    b->n = 4; /* into abandoned pages, under their heap's lock (t_orphan) */
    run(b, f_free);
  }
  run(b, f_collect); /* B's batch for the dead heap: into its inbox */
  unsigned in = inbox_count(ah, count);
  if (in != (unsigned)(first % BATCH) || !count[0])
    bad("%s: the dead heap's inbox holds %u blocks (lane 0: %u), want %d", ph, in, count[0], first % BATCH);
  check_state(ph, false);
  if (!reuse) {
    run(b, f_collect); /* the sweep */
    CHECK("dead: the sweep emptied the dead heap's inbox", inbox_count(ah, count) == 0);
    check_state("dead heap swept", false);
  } else {
    worker_start(WC, cpu, seed * 11);
    c->n = 1;
    c->size = 80; /* a class C has no page of: its first allocation is a slow path */
    run(c, f_alloc);
    c->size = 0;
    CHECK("dead: C reuses A's dead heap", c->heap == ah);
    if (c->heap == ah) CHECK("dead: C took the inbox it inherited", inbox_count(ah, count) == 0);
    check_state("dead heap reused", false);
  }
  end_phase(ph);
}

/* w allocates n blocks of size bytes, then frees the first `freed` of
 * them: the page of the first one left, mostly free. */
static extent_t *alloc_then_free(worker_t *w, size_t size, int n, int freed) {
  w->size = size;
  w->n = n;
  run(w, f_alloc);
  w->n = freed;
  w->ordered = 1;
  run(w, f_free);
  w->ordered = 0;
  w->size = 0;
  return page_of_block((void *)w->held[0]);
}

/* One of w's blocks at or after held[from] that lies in pg to held[0]
 * (an ordered free takes it first). */
static void held_to_front(worker_t *w, int from, const extent_t *pg) {
  for (int i = from; i < w->nheld; i++) {
    if (page_of_block((void *)w->held[i]) == pg) {
      uintptr_t t = w->held[0];
      w->held[0] = w->held[i];
      w->held[i] = t;
      return;
    }
  }
}

/* Pages of a thread that exited, and another thread that frees into them
 * (thread_heap_free_abandoned).  A page with most of its carved blocks
 * free: the freeing thread's first MM_ADOPT_FREES - 1 frees in a row go
 * into it where it lies, and it stays abandoned (and adoptable) for a
 * thread that allocates; the next one adopts it onto the freeing thread's
 * fostered list, whose mm_collect gives it back; then a thread that
 * allocates blocks of its class adopts it.  A page with most of its blocks
 * in use is adopted (fostered) on the first free, and the freeing thread's
 * first malloc of its class takes it into its queue; a thread with a page
 * of the class in its queue adopts any into that queue. */
static void t_orphan(uint64_t seed) {
  const char *ph = "ownerless page";
  model_reset();
  int cpu = first_cpu(); /* A and C in one local heap: C looks there first */
  worker_t *a = &W[WA], *b = &W[WB], *c = &W[WC];
  worker_start(WA, cpu, seed);
  worker_start(WB, -1, seed * 7);
  /* a sparse page: 128 blocks carved, 48 in use (an anchor and 47 held) */
  extent_t *pg = alloc_then_free(a, 64, 128, 80);
  int on_pg = 0;
  for (int i = 0; i < a->nheld; i++) on_pg += page_of_block((void *)a->held[i]) == pg;
  CHECK("orphan: A's blocks share one page, a third of it in use",
        on_pg == a->nheld && a->nheld == 47 && pg->used == 48 && pg->reserved == 128);
  worker_stop(a); /* A exits: its page is abandoned */
  orphans_to(a, b);
  local_heap_t *home = local_heap_of_extent(pg);
  unsigned cls = pg->size_class;
  CHECK("orphan: A's page is abandoned", page_owner(pg) == NULL && on_list(&home->abandoned[cls], pg));
  uint32_t used = pg->used;
  b->n = MM_ADOPT_FREES - 1;
  b->ordered = 1; /* A's held blocks first (orphans_to put them in front) */
  b->calm = 1;    /* no heartbeat: it would give a fostered page back */
  run(b, f_free);
  CHECK("orphan: B's first frees leave the sparse page abandoned, their blocks on it",
        page_owner(pg) == NULL && on_list(&home->abandoned[cls], pg) &&
            pg->used == used - (MM_ADOPT_FREES - 1) && pg->local_free != NULL);
  CHECK("orphan: the page is adoptable, first on its list",
        home->abandoned[cls].first == pg && local_heap_has_abandoned(home, cls));
  check_state(ph, false);
  b->n = 1;
  run(b, f_free);
  CHECK("orphan: B's MM_ADOPT_FREES-th free in a row adopts it, onto its fostered list",
        page_owner(pg) == b->heap && on_list(&b->heap->fostered, pg) && pg->fostered == 1 &&
            pg->used == used - MM_ADOPT_FREES);
  check_state(ph, false);
  run(b, f_collect);
  CHECK("orphan: B's mm_collect gives the fostered page back",
        page_owner(pg) == NULL && on_list(&home->abandoned[cls], pg) && !on_list(&b->heap->fostered, pg));
  check_state(ph, false);
  worker_start(WC, cpu, seed * 11);
  c->n = 1;
  c->size = 64;
  run(c, f_alloc);
  c->size = 0;
  CHECK("orphan: a thread that allocates blocks of its class adopts it",
        page_owner(pg) == c->heap && c->nheld + c->nanch == 1 &&
            page_of_block((void *)(c->nheld ? c->held[0] : c->anch[0])) == pg);
  check_state(ph, false);
  /* a dense page (96-byte blocks: 42 carved, 40 in use), freed into by B,
   * which has no page of its class */
  worker_start(WA, cpu, seed * 13);
  a->size = 96;
  a->n = 40;
  run(a, f_alloc);
  extent_t *dense = page_of_block((void *)a->held[0]);
  CHECK("orphan: most of the second page is in use", dense->used * 2 >= dense->reserved);
  worker_stop(a);
  int keep = b->nheld;
  orphans_to(a, b);
  held_to_front(b, keep, dense);
  CHECK("orphan: B has no page of the dense page's class", !b->heap->queue[dense->size_class].first);
  run(b, f_free); /* b->n == 1, ordered */
  CHECK("orphan: B's first free into the dense page adopts it, onto its fostered list",
        page_owner(dense) == b->heap && on_list(&b->heap->fostered, dense));
  check_state(ph, false);
  b->size = 96; /* B's first block of the class: from its fostered page */
  run(b, f_alloc);
  b->size = 0;
  CHECK("orphan: B's first malloc of the class takes its fostered page into its queue",
        page_owner(dense) == b->heap && !on_list(&b->heap->fostered, dense) && !dense->fostered &&
            b->heap->queue[dense->size_class].first == dense);
  check_state(ph, false);
  /* a sparse page of a class B allocates: adopted into B's queue */
  b->size = 128;
  run(b, f_alloc);
  b->size = 0;
  worker_start(WA, cpu, seed * 17);
  extent_t *mine = alloc_then_free(a, 128, 100, 80);
  CHECK("orphan: the third page is sparse", mine->used * 2 < mine->reserved);
  worker_stop(a);
  keep = b->nheld;
  orphans_to(a, b);
  held_to_front(b, keep, mine);
  run(b, f_free);
  b->ordered = 0;
  b->calm = 0;
  CHECK("orphan: B, which allocates its class, adopts the sparse page into its queue",
        page_owner(mine) == b->heap && on_list(&b->heap->queue[mine->size_class], mine) && !mine->fostered);
  check_state(ph, false);
  end_phase(ph);
}

/* ---- random rounds ------------------------------------------------------------------------------------ */

enum {
  S_ALLOC_A, S_GIVE_AB, S_FREE_B, S_FREE_A, S_COLLECT_A, S_COLLECT_B, S_SLOW_A, S_SLOW_B,
  S_ALLOC_B, S_GIVE_BA, S_CONC, S_IDLE, S_EXIT_A, S_KINDS
};
static const char *const step_names[S_KINDS] = {
  "alloc A", "give A->B", "free B", "free A", "collect A", "collect B", "slow A", "slow B",
  "alloc B", "give B->A", "concurrent", "idle A", "exit A"};
static const int step_weight[S_KINDS] = {18, 14, 16, 6, 5, 6, 4, 2, 4, 4, 10, 4, 2};
static long step_count[S_KINDS];
static long idle_expected, idle_taken, conc_idle, conc_exit;
static double taken_in_rounds;

/* The first block w holds on a full page of th's, or -1. */
static int held_on_full_page(const worker_t *w, thread_heap_t *th) {
  for (int i = 0; i < w->nheld; i++) {
    extent_t *pg = page_of_block((void *)w->held[i]);
    if (page_owner(pg) == th && page_owner_is(pg, th->tid, true)) return i;
  }
  return -1;
}

static void a_exits(void) {
  worker_join(&W[WA]);
  orphans_to(&W[WA], &W[WB]);
}

static void round_run(int r, uint64_t seed) {
  uint64_t s = seed ^ ((uint64_t)(r + 1) * 0x9E3779B97F4A7C15ull);
  rnd(&s);
  model_reset();
  round_nsizes = 1 + (int)(rnd(&s) % 3);
  for (int i = 0; i < round_nsizes; i++) round_sizes[i] = sizes[rnd(&s) % NSIZES];
  worker_t *a = &W[WA], *b = &W[WB];
  worker_start(WA, -1, rnd(&s));
  worker_start(WB, -1, rnd(&s));
  if (rnd(&s) % 2) run(b, f_collect); /* else B's first free makes its heap */
  a->n = 1 + (int)(rnd(&s) % 300);
  run(a, f_alloc);
  int steps = 6 + (int)(rnd(&s) % 16), total_w = 0;
  bool idled = false;
  for (int k = 0; k < S_KINDS; k++) total_w += step_weight[k];
  for (int st = 0; st < steps; st++) {
    int pick = (int)(rnd(&s) % (uint64_t)total_w), kind = 0;
    while (pick >= step_weight[kind]) pick -= step_weight[kind++];
    bool alive = a->running;
    if (!alive && (kind == S_ALLOC_A || kind == S_GIVE_AB || kind == S_FREE_A || kind == S_COLLECT_A ||
                   kind == S_SLOW_A || kind == S_GIVE_BA || kind == S_IDLE || kind == S_EXIT_A))
      kind = (int)(rnd(&s) % 2) ? S_FREE_B : S_COLLECT_B;
    if (kind == S_IDLE && idled) kind = S_FREE_B;
    step_count[kind]++;
    switch (kind) {
    case S_ALLOC_A:
      a->n = 1 + (int)(rnd(&s) % 200);
      run(a, f_alloc);
      break;
    case S_GIVE_AB:
      give(a, b, 1 + (int)(rnd(&s) % (uint64_t)(a->nheld + 1)));
      break;
    case S_FREE_B:
      b->n = 1 + (int)(rnd(&s) % (uint64_t)(b->nheld + 1));
      run(b, f_free);
      break;
    case S_FREE_A:
      a->n = 1 + (int)(rnd(&s) % (uint64_t)(a->nheld / 2 + 1));
      run(a, f_free);
      break;
    case S_COLLECT_A:
      run(a, f_collect);
      break;
    case S_COLLECT_B:
      run(b, f_collect);
      break;
    case S_SLOW_A:
      run(a, f_slow);
      break;
    case S_SLOW_B:
      run(b, f_slow);
      break;
    case S_ALLOC_B:
      b->n = 1 + (int)(rnd(&s) % 60);
      run(b, f_alloc);
      break;
    case S_GIVE_BA:
      give(b, a, 1 + (int)(rnd(&s) % (uint64_t)(b->nheld / 2 + 1)));
      break;
    case S_IDLE: {
      /* A blocks past MM_IDLE_MS; B frees, a block of a full page of A's first */
      idled = true;
      thread_heap_t *ah = a->heap;
      int found = held_on_full_page(b, ah);
      if (found < 0) { /* give B a block of a full page of A's, A filling one first if needed */
        int fa = held_on_full_page(a, ah);
        if (fa < 0) {
          unsigned best = 0;
          for (int i = 1; i < round_nsizes; i++)
            if (mm_size_classes[size_class_of(round_sizes[i])].capacity <
                mm_size_classes[size_class_of(round_sizes[best])].capacity)
              best = (unsigned)i;
          a->size = round_sizes[best];
          run(a, f_fill);
          a->size = 0;
          fa = held_on_full_page(a, ah);
        }
        if (fa >= 0 && b->nheld < MAXH - 1) {
          uintptr_t x = a->held[fa];
          a->held[fa] = a->held[--a->nheld];
          atomic_store(&bent_find(x)->state, LIVE_BY(WB));
          b->held[b->nheld++] = x;
          found = b->nheld - 1;
        }
      }
      if (found > 0) {
        uintptr_t t = b->held[0];
        b->held[0] = b->held[found];
        b->held[found] = t;
      }
      idle_heap = ah;
      double t0 = taken_over();
      b->n = 1 + (int)(rnd(&s) % (uint64_t)(b->nheld + 1));
      run(b, f_idle_free);
      double t1 = taken_over();
      if (found >= 0) {
        idle_expected++;
        if (t1 - t0 < 1) bad("round %d: B freed a block of idle A's full page, pages_taken_over grew by %.0f", r, t1 - t0);
      }
      if (t1 > t0) idle_taken++;
      taken_in_rounds += t1 - t0;
      break;
    }
    case S_CONC: {
      double t0 = taken_over();
      atomic_store(&a_burst_done, alive ? 0 : 1);
      b->n = (int)(rnd(&s) % 120);
      if (alive) {
        a->n = 50 + (int)(rnd(&s) % 500);
        a->idle_at = (!idled && rnd(&s) % 3 == 0) ? (int)(rnd(&s) % (uint64_t)a->n) : -1;
        if (a->idle_at >= 0) idled = true, conc_idle++;
        a->quit_after = rnd(&s) % 8 == 0;
        conc_exit += a->quit_after;
        post(a, conc_A);
      }
      post(b, conc_B);
      if (alive) wait_done(a);
      wait_done(b);
      if (alive) a->idle_at = -1;
      if (alive && a->quit_after) a_exits();
      uintptr_t x;
      CHECK("concurrent: B freed everything A sent", !ring_pop(&ring_ab, &x));
      worker_t *to = a->running ? a : b;
      while (ring_pop(&ring_ba, &x)) {
        atomic_store(&bent_find(x)->state, LIVE_BY(to->idx));
        to->held[to->nheld++] = x;
      }
      taken_in_rounds += taken_over() - t0;
      break;
    }
    case S_EXIT_A:
      worker_stop(a);
      orphans_to(a, b);
      break;
    }
    check_state(step_names[kind], false);
    if (check_failures) {
      fprintf(stderr, "round %d, step %d (%s): failures; stopping\n", r, st, step_names[kind]);
      break;
    }
  }
  end_phase("round end");
}

/* The census checks each registry's counts of live and dead thread heaps
 * (the live one picks the local heap a new thread binds to and shares out
 * the empty pages threads may keep; both are the statistics' threads_live
 * and threads_dead) against the heaps on it. */
static void *exit_at_once(void *arg) {
  *(thread_heap_t **)arg = thread_heap_current();
  return NULL;
}

static void t_census_live(void) {
  thread_heap_t *th = thread_heap_current();
  REQUIRE("a thread heap", th != NULL);
  NEGATIVE("census: a live heap the count does not match", thread_heap_census_is_valid(why, sizeof(why)),
           { th->state = MM_THREAD_DEAD; }, { th->state = MM_THREAD_LIVE; }, "registry's xlive says");
  thread_heap_t *gone = NULL; /* a heap whose thread exited: DEAD until a new thread takes it */
  pthread_t t;
  REQUIRE("a thread that exits", pthread_create(&t, NULL, exit_at_once, &gone) == 0);
  pthread_join(t, NULL);
  REQUIRE("its heap is dead", gone && gone->state == MM_THREAD_DEAD);
  NEGATIVE("census: a dead heap the count does not match", thread_heap_census_is_valid(why, sizeof(why)),
           { gone->state = MM_THREAD_DEAD + 7; }, { gone->state = MM_THREAD_DEAD; }, "registry's xdead says");
}

int main(int argc, char **argv) {
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x2545F491ull;
  int rounds = argc > 2 ? atoi(argv[2]) : ((MM_DEBUG >= 3 || SANITIZED) ? 60 : 160);
  fprintf(stderr, "unit_remote: seed 0x%llx, %d rounds, MM_LANES %d, MM_REMOTE_BATCH %d, MM_IDLE_MS %d\n",
          (unsigned long long)seed, rounds, LANES, BATCH, MM_IDLE_MS);
  thread_heap_process_init();
  uint32_t t_start = os_now_ms();

  t_lanes(seed);
  fprintf(stderr, "lanes: done (%u ms)\n", os_now_ms() - t_start);
  t_checker();
  fprintf(stderr, "checker: done\n");
  t_lane_race(seed, (MM_DEBUG >= 3 || SANITIZED) ? 1000 : 5000, 400);
  fprintf(stderr, "lane race: %ld chains (%u ms)\n", race_chains, os_now_ms() - t_start);
  t_takeover(seed);
  fprintf(stderr, "take-over: done (%u ms)\n", os_now_ms() - t_start);
  t_dead(seed, false);
  t_dead(seed, true);
  t_orphan(seed);
  fprintf(stderr, "dead heaps: done (%u ms)\n", os_now_ms() - t_start);
  t_census_live();
  CHECK("no failure in the fixed phases", check_failures == 0);

  for (int r = 0; r < rounds && !check_failures; r++) round_run(r, seed);
  fprintf(stderr, "rounds: %d in %u ms; steps:", rounds, os_now_ms() - t_start);
  for (int k = 0; k < S_KINDS; k++) fprintf(stderr, " %s %ld,", step_names[k], step_count[k]);
  fprintf(stderr, "\n  idle steps with a full page freed %ld (taken over in %ld idle steps), idle in a burst %ld, "
          "A exiting after a burst %ld, pages taken over in rounds %.0f\n",
          idle_expected, idle_taken, conc_idle, conc_exit, taken_in_rounds);
  fprintf(stderr, "  %ld quiet points checked: %ld pages (%ld retired), %ld freed and %ld live blocks accounted for\n",
          states_checked, pages_checked, pages_retired, blocks_freed_seen, blocks_live_seen);
  CHECK("no failure seen by a worker", atomic_load(&wfailures) == 0);
  if (rounds >= 20 && !check_failures) {
    CHECK("rounds exercised the idle take-over", idle_expected > 0 && taken_in_rounds > 0);
    CHECK("rounds exercised A exiting", step_count[S_EXIT_A] + conc_exit > 0);
    CHECK("rounds exercised the concurrent burst", step_count[S_CONC] > 0);
  }
  return check_summary("unit_remote");
}
