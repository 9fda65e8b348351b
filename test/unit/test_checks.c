/* test_checks.c — the checks that keep the prose true catch what they are
 * for: the lock witness, the assertion macros, and the local heap checker.
 *
 * The witness functions (lock.c) are compiled in every build, so the rule
 * is tested here in every build by calling them directly; each violation
 * runs in a child process, which must die of abort() with one line naming
 * both locks.  The local heap checker must accept a heap and reject it
 * after each of several corruptions (restored afterwards).  Not a
 * benchmark.  usage: unit_checks */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "unit.h"
#include "local_heap.h"
#include "lock.h"
#include "page.h"
#include "thread_heap.h"

/* Run fn in a child; true when it died of SIGABRT and its stderr contains
 * every string of want (NULL-terminated). */
static bool aborts_with(void (*fn)(void), const char *const *want) {
  int fd[2];
  if (pipe(fd) != 0) return false;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 2);
    close(fd[0]);
    fn();
    _exit(0); /* no abort: the check did not fire */
  }
  close(fd[1]);
  static char out[1024];
  size_t n = 0;
  ssize_t r;
  while (n < sizeof(out) - 1 && (r = read(fd[0], out + n, sizeof(out) - 1 - n)) > 0) n += (size_t)r;
  out[n] = 0;
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  bool ok = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  for (const char *const *w = want; *w; w++)
    if (!strstr(out, *w)) ok = false;
  if (!ok) fprintf(stderr, "  child said: %s", n ? out : "(nothing)\n");
  return ok;
}

static lock_witness_t reg, th_a, th_b, heap0, heap1;

static void witness_setup(void) {
  witness_init(&reg, "registry", MM_RANK_REGISTRY, 0);
  witness_init(&th_a, "thread heap", MM_RANK_THREAD_HEAP, 0);
  witness_init(&th_b, "thread heap", MM_RANK_THREAD_HEAP, 1);
  witness_init(&heap0, "local heap", MM_RANK_LOCAL_HEAP, 0);
  witness_init(&heap1, "local heap", MM_RANK_LOCAL_HEAP, 1);
}

static void take(lock_witness_t *w, int how) {
  witness_before(w, how);
  witness_after(w);
}

static void reversal(void) { /* a local heap, then wait for a registry */
  take(&heap0, WITNESS_WAIT);
  take(&reg, WITNESS_WAIT);
}
static void reversal_thread_heap(void) { /* a local heap, then a thread heap */
  take(&heap1, WITNESS_WAIT);
  take(&th_a, WITNESS_WAIT);
}
static void second_of_rank(void) { /* two local heaps, waiting for the second */
  take(&heap0, WITNESS_WAIT);
  take(&heap1, WITNESS_WAIT);
}
static void recursive(void) {
  take(&th_a, WITNESS_WAIT);
  take(&th_a, WITNESS_WAIT);
}
static void release_not_held(void) { witness_release(&heap1); }
static void fork_order_broken(void) { /* ordered, but against index order */
  take(&heap1, WITNESS_ORDERED);
  take(&heap0, WITNESS_ORDERED);
}
static void assertion(void) { mm_assert_fail("1 + 1 == 3", "test_checks.c", 42, "assertion"); }

static void witness_tests(void) {
  witness_setup();
  /* What the rule allows, in this process: it must not abort. */
  take(&reg, WITNESS_WAIT);
  take(&th_a, WITNESS_WAIT);
  take(&th_b, WITNESS_TRY);   /* another thread heap: only by try */
  take(&heap0, WITNESS_WAIT);
  take(&heap1, WITNESS_TRY);  /* another local heap: only by try */
  CHECK("witness: the holder is known", witness_held(&heap1) && witness_held(&th_a));
  witness_release(&heap1);
  witness_release(&heap0);
  witness_release(&th_b);
  witness_release(&th_a);
  witness_release(&reg);
  CHECK("witness: released locks are not held", !witness_held(&heap0) && !witness_held(&reg));
  take(&heap0, WITNESS_ORDERED);
  take(&heap1, WITNESS_ORDERED); /* fork: every lock of a rank, in index order */
  witness_release(&heap1);
  witness_release(&heap0);

  static const char *const rev[] = {"lock order reversal", "registry 0", "local heap 0", NULL};
  CHECK("witness: waiting for a lower rank aborts, naming both locks", aborts_with(reversal, rev));
  static const char *const rev2[] = {"lock order reversal", "thread heap 0", "local heap 1", NULL};
  CHECK("witness: a thread heap after a local heap aborts", aborts_with(reversal_thread_heap, rev2));
  static const char *const two[] = {"second lock of a rank", "local heap 1", "local heap 0", NULL};
  CHECK("witness: waiting for a second local heap aborts", aborts_with(second_of_rank, two));
  static const char *const rec[] = {"acquired again by its holder", "thread heap 0", NULL};
  CHECK("witness: a recursive acquisition aborts", aborts_with(recursive, rec));
  static const char *const rel[] = {"local heap 1", "released by a thread that does not hold it",
                                    NULL};
  CHECK("witness: a release by a non-holder aborts", aborts_with(release_not_held, rel));
  static const char *const ord[] = {"fork order broken", "local heap 0", "local heap 1", NULL};
  CHECK("witness: the fork order is index order", aborts_with(fork_order_broken, ord));
  static const char *const as[] = {"mmalloc: internal error: assertion `1 + 1 == 3' failed",
                                   "test_checks.c:42", NULL};
  CHECK("mm_assert_fail: one line with the expression and the place", aborts_with(assertion, as));
}

/* ---- the local heap checker ------------------------------------------------------- */

static thread_heap_t stand_in;
static void claim(extent_t *page, void *arg) {
  page_init(page, *(unsigned *)arg);
  page_set_owner(page, &stand_in, 1);
}

static bool heap_valid(local_heap_t *h) {
  local_heap_lock(h);
  bool ok = local_heap_is_valid(h, why, sizeof(why));
  local_heap_unlock(h);
  return ok;
}

/* NEGATIVE (unit.h) on a local heap: corrupt and restore under its lock. */
#define REJECTS(name, h, corrupt, restore, want)                              \
  NEGATIVE(name, heap_valid(h), {                                             \
    local_heap_lock(h);                                                       \
    corrupt;                                                                  \
    local_heap_unlock(h);                                                     \
  }, {                                                                        \
    local_heap_lock(h);                                                       \
    restore;                                                                  \
    local_heap_unlock(h);                                                     \
  }, want)

static void heap_checker_tests(void) {
  local_heap_t *h = &mm_heaps[0];
  unsigned cls = 3;
  /* two pages, one given back (cached), one abandoned, a large block */
  extent_t *p1 = local_heap_take_page_block(h, mm_size_classes[cls].ndatablocks, 1, 0, claim, &cls);
  extent_t *p2 = local_heap_take_page_block(h, mm_size_classes[cls].ndatablocks, 1, 0, claim, &cls);
  void *large = local_heap_alloc_large(h, 100000, 0, false);
  REQUIRE("pages and a large block", p1 && p2 && large);
  local_heap_lock(h);
  page_clear_owner(p1);
  local_heap_cache_page_locked(h, p1);
  page_clear_owner(p2);
  local_heap_abandoned_push_locked(h, p2);
  local_heap_unlock(h);
  CHECK("checker accepts the heap", heap_valid(h));
  if (!heap_valid(h)) fprintf(stderr, "  %s\n", why);

  uint64_t due = atomic_load_relaxed(&h->xpurge_at);
  REJECTS("no purge scheduled while memory is dirty", h,
          atomic_store_relaxed(&h->xpurge_at, 0), atomic_store_relaxed(&h->xpurge_at, due),
          "none is scheduled");
  REJECTS("cache_count off", h, h->cache_count++, h->cache_count--, "cache_count");
  REJECTS("dirty sum off", h, h->dirty_datablocks++, h->dirty_datablocks--, "dirty_datablocks");
  REJECTS("an abandoned page that has an owner", h, page_set_owner(p2, &stand_in, 1),
          page_clear_owner(p2), "not an abandoned page");
  /* p2 met twice on its list (a cycle): the pass stamps catch it */
  REJECTS("an extent met twice on the lists", h, p2->next = p2, p2->next = NULL, "two lists");
  REJECTS("an abandoned page on no list", h, {
    local_heap_abandoned_remove_locked(h, p2);
  }, {
    local_heap_abandoned_push_locked(h, p2);
  }, "on none of the lists");
  REJECTS("an abandoned-class bit wrong", h,
          atomic_store_relaxed(&h->xabandoned_classes,
                               atomic_load_relaxed(&h->xabandoned_classes) ^ ((uint64_t)1 << cls)),
          atomic_store_relaxed(&h->xabandoned_classes,
                               atomic_load_relaxed(&h->xabandoned_classes) ^ ((uint64_t)1 << cls)),
          "bit disagrees");

  /* a full abandoned page waits behind the adoptable ones */
  extent_t *p3 = local_heap_take_page_block(h, mm_size_classes[cls].ndatablocks, 1, 0, claim, &cls);
  REQUIRE("a third page", p3 != NULL);
  local_heap_lock(h);
  p3->reserved = p3->capacity; /* every block carved and handed out */
  p3->used = p3->capacity;
  page_clear_owner(p3);
  local_heap_abandoned_push_locked(h, p3);
  local_heap_unlock(h);
  CHECK("a full abandoned page goes behind the adoptable one", h->abandoned[cls].first == p2 &&
                                                                   h->abandoned[cls].last == p3);
  CHECK("checker accepts a full abandoned page", heap_valid(h));
  uint64_t bit = (uint64_t)1 << cls;
  REJECTS("an adoptable abandoned page after a full one", h, {
    extent_list_remove(&h->abandoned[cls], p3);
    extent_list_push_front(&h->abandoned[cls], p3);
    atomic_store_relaxed(&h->xabandoned_classes, atomic_load_relaxed(&h->xabandoned_classes) & ~bit);
  }, {
    extent_list_remove(&h->abandoned[cls], p3);
    extent_list_push_back(&h->abandoned[cls], p3);
    atomic_store_relaxed(&h->xabandoned_classes, atomic_load_relaxed(&h->xabandoned_classes) | bit);
  }, "after a full one");
  local_heap_lock(h);
  extent_t *adopted = local_heap_abandoned_pop_locked(h, cls);
  if (adopted) page_set_owner(adopted, &stand_in, 1); /* as an adopter does, at once */
  CHECK("the adoptable page is handed out first", adopted == p2);
  CHECK("the full page is not handed out", local_heap_abandoned_pop_locked(h, cls) == NULL);
  CHECK("... and the class shows nothing to adopt",
        !(atomic_load_relaxed(&h->xabandoned_classes) & bit));
  local_heap_abandoned_remove_locked(h, p3);
  page_set_owner(p3, &stand_in, 1);
  p3->used = 0;
  page_clear_owner(p3);
  local_heap_cache_page_locked(h, p3);
  p2->used = 0;
  page_clear_owner(p2);
  local_heap_cache_page_locked(h, p2);
  local_heap_unlock(h);
  local_heap_free_large(region_extent_at(slot_of_address((uintptr_t)large), (uintptr_t)large), false);
  CHECK("checker accepts the heap at the end", heap_valid(h));
}

int main(void) {
  thread_heap_process_init();
  witness_tests();
  heap_checker_tests();
  return check_summary("unit_checks");
}
