/* heap.c — first-class heaps (mm_heap_*) against a model.
 *
 *   - every size class, sizes around the small-object limit and large
 *     blocks up to a few MiB: usable size at least the size asked, the
 *     bytes kept, calloc zeroed, aligned calls aligned, bad alignments and
 *     impossible sizes refused with the documented errno;
 *   - realloc keeps the bytes (growing, shrinking, across the small/large
 *     limit), realloc(NULL, n) allocates, realloc(p, 0) frees;
 *   - random operations from several threads on heaps shared by all (a
 *     pattern per object checked before every free and at the end, objects
 *     freed by another thread through an exchange), each thread also
 *     keeping a heap of its own that it destroys with objects still in it;
 *   - the statistics: live objects and bytes follow the model; destroy
 *     gives every page block back (lent_bytes 0), and with mm_collect its
 *     resident memory (RSS); a heap's objects lie in no other heap's
 *     blocks.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>

#include "api/harness.h"
#include "api/lent.h"
#include "check.h"
#include "mmalloc.h"

#define SUITE "api_heap"
#define THREADS 4
#define OPS 30000
#define SLOTS 256
#define XCHG 64

static mm_heap_t *shared[2];

typedef struct obj_s {
  unsigned char *p;
  size_t n;
  unsigned heap; /* 0, 1 shared; 2 the thread's own */
  unsigned tag;
} obj_t;

static pthread_mutex_t xchg_lock = PTHREAD_MUTEX_INITIALIZER;
static obj_t xchg[XCHG];
static unsigned xchg_n;

static void fill(const obj_t *o) {
  for (size_t i = 0; i < o->n; i++) o->p[i] = pattern_byte(i, o->tag);
}

static bool intact(const obj_t *o) {
  for (size_t i = 0; i < o->n; i++)
    if (o->p[i] != pattern_byte(i, o->tag)) return false;
  return true;
}

static size_t random_size(uint64_t r) {
  switch (r % 8) {
  case 0: return (size_t)(r >> 8) % 17;                  /* 0..16 */
  case 1: case 2: case 3: return 1 + (size_t)(r >> 8) % 512;
  case 4: case 5: return 1 + (size_t)(r >> 8) % 8192;
  case 6: return 30000 + (size_t)(r >> 8) % 6000;        /* across 32 KiB */
  default: return 1 + (size_t)(r >> 8) % (160 << 10);    /* large */
  }
}

typedef struct worker_s {
  unsigned id;
  unsigned long bad, nulls;
} worker_t;

static void *worker(void *arg) {
  worker_t *w = arg;
  uint64_t rng = 0x51ed270b27a3bcd5ull * (w->id + 7);
  obj_t slots[SLOTS];
  memset(slots, 0, sizeof(slots));
  char name[32];
  snprintf(name, sizeof(name), "own %u", w->id);
  mm_heap_t *own = mm_heap_new(name);
  if (!own) {
    w->nulls++;
    return NULL;
  }
  for (unsigned op = 0; op < OPS; op++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    obj_t *s = &slots[rng % SLOTS];
    unsigned what = (unsigned)(rng >> 32) % 100;
    mm_heap_t *hp;
    if (what < 15) { /* free what another thread left */
      obj_t o = {0};
      pthread_mutex_lock(&xchg_lock);
      if (xchg_n) o = xchg[--xchg_n];
      pthread_mutex_unlock(&xchg_lock);
      if (o.p) {
        if (!intact(&o)) w->bad++;
        mm_heap_free(shared[o.heap], o.p);
      }
      continue;
    }
    if (s->p) {
      hp = s->heap == 2 ? own : shared[s->heap];
      if (!intact(s)) w->bad++;
      if (what < 35) { /* realloc: the first bytes stay */
        size_t n = random_size(rng >> 3);
        unsigned char *q = mm_heap_realloc(hp, s->p, n);
        if (!q && n) {
          w->nulls++;
          continue;
        }
        size_t keep = n < s->n ? n : s->n;
        obj_t t = *s;
        t.p = q, t.n = keep;
        if (keep && !intact(&t)) w->bad++;
        s->p = q, s->n = n;
        if (q) fill(s);
        if (!n) s->p = NULL;
        continue;
      }
      bool handed = false;
      if (s->heap < 2 && what < 60) {
        pthread_mutex_lock(&xchg_lock);
        if (xchg_n < XCHG) xchg[xchg_n++] = *s, handed = true;
        pthread_mutex_unlock(&xchg_lock);
      }
      if (!handed) mm_heap_free(hp, s->p);
      s->p = NULL;
      continue;
    }
    s->heap = (unsigned)(rng >> 40) % 3;
    hp = s->heap == 2 ? own : shared[s->heap];
    s->n = random_size(rng >> 5);
    s->tag = w->id * 7919u + op;
    if (what < 45) {
      s->p = mm_heap_calloc(hp, 1, s->n);
      if (s->p)
        for (size_t i = 0; i < s->n; i++)
          if (s->p[i]) {
            w->bad++;
            break;
          }
    } else if (what < 55) {
      size_t align = (size_t)32 << ((rng >> 50) % 8); /* 32 .. 4096 */
      s->p = mm_heap_aligned(hp, align, s->n);
      if (s->p && (uintptr_t)s->p % align) w->bad++;
    } else {
      s->p = mm_heap_malloc(hp, s->n);
    }
    if (!s->p) {
      w->nulls++;
      continue;
    }
    if (mm_heap_usable_size(hp, s->p) < s->n) w->bad++;
    fill(s);
  }
  /* the shared heaps' objects checked and freed; the own heap's checked
   * and dropped with the heap */
  for (unsigned i = 0; i < SLOTS; i++) {
    obj_t *s = &slots[i];
    if (!s->p) continue;
    if (!intact(s)) w->bad++;
    if (s->heap < 2) mm_heap_free(shared[s->heap], s->p);
  }
  mm_heap_destroy(own);
  return NULL;
}

static unsigned char expect_at(size_t i) { return (unsigned char)(i * 7 + 3); }

static void test_sizes(void) {
  mm_heap_t *h = mm_heap_new("sizes");
  REQUIRE("new", h != NULL);
  static const size_t sizes[] = {0, 1, 15, 16, 17, 48, 100, 1000, 1024, 1025, 4096, 20000,
                                 32768, 32769, 65536, 100000, (size_t)3 << 20};
  unsigned char *p[sizeof(sizes) / sizeof(sizes[0])];
  size_t n = sizeof(sizes) / sizeof(sizes[0]);
  for (size_t i = 0; i < n; i++) {
    p[i] = mm_heap_malloc(h, sizes[i]);
    REQUIRE("malloc", p[i] != NULL);
    CHECK("16-byte aligned", (uintptr_t)p[i] % 16 == 0);
    CHECK("usable >= asked", mm_heap_usable_size(h, p[i]) >= sizes[i]);
    memset(p[i], (int)i + 1, sizes[i]);
  }
  mm_heap_stats_t s;
  CHECK("stats", mm_heap_stats(h, &s) == 0);
  CHECK("stats: every object live", s.live_objects == n);
  size_t want = 0;
  for (size_t i = 0; i < n; i++) want += mm_heap_usable_size(h, p[i]);
  CHECK("stats: live bytes are the usable sizes", s.live_bytes == want);
  CHECK("stats: blocks hold them", s.bytes >= s.live_bytes && s.blocks > 0);
  for (size_t i = 0; i < n; i++) {
    bool ok = true;
    for (size_t k = 0; k < sizes[i]; k += 97) ok &= p[i][k] == (unsigned char)(i + 1);
    CHECK("bytes kept", ok);
    mm_heap_free(h, p[i]);
  }
  mm_heap_stats(h, &s);
  CHECK("stats: nothing live after the frees", s.live_objects == 0 && s.live_bytes == 0);
  mm_heap_free(h, NULL); /* a no-op */

  unsigned char *z = mm_heap_calloc(h, 1000, 40);
  REQUIRE("calloc", z != NULL);
  bool zero = true;
  for (size_t i = 0; i < 40000; i++) zero &= z[i] == 0;
  CHECK("calloc zeroes (also memory a freed object left)", zero);
  mm_heap_free(h, z);
  errno = 0;
  CHECK("calloc overflow: NULL, ENOMEM", mm_heap_calloc(h, opaque_size(SIZE_MAX / 2), 3) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK("malloc above 64 MiB: NULL, ENOMEM",
        mm_heap_malloc(h, opaque_size(((size_t)64 << 20) + 1)) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK("aligned 24: NULL, EINVAL", mm_heap_aligned(h, 24, 100) == NULL && errno == EINVAL);
  errno = 0;
  CHECK("aligned 8192: NULL, EINVAL", mm_heap_aligned(h, 8192, 100) == NULL && errno == EINVAL);
  for (size_t a = 1; a <= 4096; a *= 2) {
    for (size_t sz = 1; sz < 70000; sz = sz * 3 + 1) {
      void *q = mm_heap_aligned(h, a, sz);
      REQUIRE("aligned", q != NULL);
      CHECK("aligned as asked", (uintptr_t)q % a == 0);
      CHECK("aligned: usable >= asked", mm_heap_usable_size(h, q) >= sz);
      memset(q, 0x5A, sz);
      mm_heap_free(h, q);
    }
  }
  /* realloc */
  unsigned char *r = mm_heap_realloc(h, NULL, 10);
  REQUIRE("realloc(NULL, 10)", r != NULL);
  for (size_t i = 0; i < 10; i++) r[i] = expect_at(i);
  static const size_t steps[] = {100, 5000, 40000, 1 << 20, 3000, 20, 12};
  size_t have = 10;
  for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
    r = mm_heap_realloc(h, r, steps[k]);
    REQUIRE("realloc", r != NULL);
    size_t keep = have < steps[k] ? have : steps[k];
    bool ok = true;
    for (size_t i = 0; i < keep; i++) ok &= r[i] == expect_at(i);
    CHECK("realloc keeps the bytes", ok);
    CHECK("realloc: usable >= asked", mm_heap_usable_size(h, r) >= steps[k]);
    for (size_t i = keep; i < steps[k]; i++) r[i] = expect_at(i);
    have = steps[k];
  }
  CHECK("realloc(p, 0) returns NULL", mm_heap_realloc(h, r, 0) == NULL);
  mm_heap_stats(h, &s);
  CHECK("realloc(p, 0) freed p", s.live_objects == 0);
  mm_heap_destroy(h);
}

static void test_threads(void) {
  long lent0 = total_lent_bytes();
  shared[0] = mm_heap_new("shared 0");
  shared[1] = mm_heap_new("shared 1");
  REQUIRE("new", shared[0] && shared[1]);
  pthread_t t[THREADS];
  worker_t w[THREADS];
  for (unsigned i = 0; i < THREADS; i++) {
    memset(&w[i], 0, sizeof(w[i]));
    w[i].id = i;
    int rc = pthread_create(&t[i], NULL, worker, &w[i]);
    REQUIRE("thread", rc == 0);
  }
  unsigned long bad = 0, nulls = 0;
  for (unsigned i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    bad += w[i].bad, nulls += w[i].nulls;
  }
  for (unsigned i = 0; i < xchg_n; i++) {
    if (!intact(&xchg[i])) bad++;
    mm_heap_free(shared[xchg[i].heap], xchg[i].p);
  }
  xchg_n = 0;
  CHECK("every object kept its bytes", bad == 0);
  CHECK("no allocation failed", nulls == 0);
  for (int k = 0; k < 2; k++) {
    mm_heap_stats_t s;
    mm_heap_stats(shared[k], &s);
    CHECK("a shared heap has no live object once the model freed all", s.live_objects == 0);
  }
  mm_heap_destroy(shared[0]);
  mm_heap_destroy(shared[1]);
  CHECK("every heap destroyed: no page block left lent", total_lent_bytes() == lent0);
}

/* Destroy frees everything at once: a million objects, then the heap. */
static void test_destroy(void) {
  long lent0 = total_lent_bytes();
  mm_collect();
  size_t rss0 = rss_bytes();
  mm_heap_t *h = mm_heap_new("million");
  REQUIRE("new", h != NULL);
  for (int i = 0; i < 1000000; i++) {
    size_t n = 16 + (size_t)(i % 7) * 24;
    unsigned char *p = mm_heap_malloc(h, n);
    REQUIRE("malloc", p != NULL);
    memset(p, i, n);
  }
  mm_heap_stats_t s;
  mm_heap_stats(h, &s);
  CHECK("a million live objects", s.live_objects == 1000000);
  CHECK("their blocks are lent", total_lent_bytes() - lent0 == (long)s.bytes);
  size_t rss1 = rss_bytes();
  mm_heap_destroy(h);
  CHECK("destroy gives every block back", total_lent_bytes() == lent0);
  /* and the memory to the OS, once the page cache is purged: the resident
   * set falls by at least three quarters of the heap's blocks (less what
   * secure mode's quarantine holds; a sanitizer's shadow of the memory
   * stays, so the fall is counted, not the level) */
  mm_collect();
  size_t rss2 = rss_bytes(), held = (size_t)quarantine_bytes();
  printf("rss: %zu MiB before, %zu with the heap, %zu after destroy (%zu MiB held)\n",
         rss0 >> 20, rss1 >> 20, rss2 >> 20, held >> 20);
  CHECK("the heap's objects were resident", rss1 > rss0 + s.bytes / 2);
  CHECK("destroy and mm_collect give the resident set back",
        rss2 + s.bytes * 3 / 4 <= rss1 + held);
  static char buf[1 << 16];
  mm_stats_json(buf, sizeof(buf));
  CHECK("a destroyed heap leaves the statistics", strstr(buf, "\"million\"") == NULL);
}

int main(void) {
  printf("%s\n", SUITE);
  test_sizes();
  test_threads();
  test_destroy();
  return check_summary(SUITE);
}
