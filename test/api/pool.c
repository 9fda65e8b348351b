/* pool.c — object pools and page blocks (mm_pool_*, mm_page_block_*)
 * against a model.
 *
 *   - create: sizes rounded as the header says, alignment honoured, bad
 *     options give NULL with EINVAL, a reserve is carved at once;
 *   - random operations from several threads on pools shared by all of
 *     them (objects of 16, 56, 200 aligned to 64, and 4000 bytes): every
 *     object filled with a pattern naming it, every live object's bytes
 *     checked before it is freed and at the end, frees often by another
 *     thread than the allocating one (objects pass through a shared
 *     exchange), while each thread also churns a private pool that it
 *     releases now and then and a page block of its own;
 *   - the statistics: live objects == the model's, after everything is
 *     freed none, after release and destroy no page block held (the local
 *     heaps' lent_bytes in mm_stats_json back to 0) and, with mm_collect,
 *     the resident set down by the pool's blocks; the memory of a
 *     released pool reused by the next (no growth over rounds);
 *   - a pool grown past 8 MiB takes 2 MiB blocks at 2 MiB boundaries (not
 *     with MMALLOC_HUGEPAGES=0);
 *   - page blocks: 4 KiB aligned, sizes rounded, EINVAL outside 1..64 MiB.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>

#include "api/harness.h"
#include "api/lent.h"
#include "check.h"
#include "mmalloc.h"

#define SUITE "api_pool"
#ifndef THREADS
#define THREADS 4
#endif
#define SHARED 4
#define GENERATIONS 3
#define OPS 100000
#define SLOTS 512
#define XCHG 64

static const size_t shared_size[SHARED] = {16, 56, 200, 4000};
static const size_t shared_align[SHARED] = {0, 0, 64, 0};
static mm_pool_t *shared[SHARED];

typedef struct obj_s {
  unsigned char *p;
  unsigned pool; /* 0..SHARED-1 shared, SHARED: the thread's own */
  unsigned tag;
} obj_t;

/* Objects handed to another thread to free (a mutex: the test's own
 * synchronisation, not the pool's). */
static pthread_mutex_t xchg_lock = PTHREAD_MUTEX_INITIALIZER;
static obj_t xchg[XCHG];
static unsigned xchg_n;

static size_t rounded(size_t size, size_t align) {
  size_t a = align > 8 ? align : 8, s = size < 16 ? 16 : size;
  return (s + a - 1) & ~(a - 1);
}

static void fill(const obj_t *o, size_t n) {
  for (size_t i = 0; i < n; i++) o->p[i] = pattern_byte(i, o->tag);
}

static bool intact(const obj_t *o, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (o->p[i] != pattern_byte(i, o->tag)) return false;
  return true;
}

typedef struct worker_s {
  unsigned id;
  unsigned long bad, nulls, misaligned;
  long live_shared[SHARED]; /* allocated minus freed, by this thread */
} worker_t;

static size_t obj_size(unsigned pool) { return pool < SHARED ? rounded(shared_size[pool], shared_align[pool]) : 40; }

static void *worker(void *arg) {
  worker_t *w = arg;
  uint64_t rng = 0x9e3779b97f4a7c15ull * (w->id + 1);
  obj_t slots[SLOTS] = {{0}};
  mm_pool_options_t po = {.object_size = 40, .name = "private"};
  mm_pool_t *own = mm_pool_create(&po);
  if (!own) {
    w->nulls++;
    return NULL;
  }
  unsigned char *block = NULL;
  size_t block_size = 0;
  unsigned own_live = 0;
  for (unsigned op = 0; op < OPS; op++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    unsigned k = (unsigned)(rng % SLOTS);
    obj_t *s = &slots[k];
    unsigned what = (unsigned)(rng >> 32) % 100;
    if (what < 2) { /* the private pool: release everything at once */
      for (unsigned i = 0; i < SLOTS; i++) {
        if (slots[i].p && slots[i].pool == SHARED) {
          if (!intact(&slots[i], 40)) w->bad++;
          slots[i].p = NULL;
        }
      }
      mm_pool_release(own);
      own_live = 0;
      continue;
    }
    if (what < 4) { /* a page block of our own, replaced */
      if (block) {
        for (size_t i = 0; i < block_size; i += 512)
          if (block[i] != (unsigned char)(block_size + i)) w->bad++;
        mm_page_block_free(block);
      }
      block_size = 1 + (size_t)(rng >> 40) % (300 << 10);
      block = mm_page_block_alloc(block_size);
      if (!block) { w->nulls++; continue; }
      if ((uintptr_t)block % 4096) w->misaligned++;
      for (size_t i = 0; i < block_size; i += 512) block[i] = (unsigned char)(block_size + i);
      continue;
    }
    if (what < 20) { /* take an object another thread left to be freed */
      obj_t o = {0};
      pthread_mutex_lock(&xchg_lock);
      if (xchg_n) o = xchg[--xchg_n];
      pthread_mutex_unlock(&xchg_lock);
      if (o.p) {
        if (!intact(&o, obj_size(o.pool))) w->bad++;
        mm_pool_free(shared[o.pool], o.p);
        w->live_shared[o.pool]--;
      }
      continue;
    }
    if (s->p) { /* free it here, or hand it to another thread */
      if (!intact(s, obj_size(s->pool))) w->bad++;
      if (s->pool == SHARED) {
        mm_pool_free(own, s->p);
        own_live--;
      } else {
        bool handed = false;
        if (what < 50) {
          pthread_mutex_lock(&xchg_lock);
          if (xchg_n < XCHG) {
            xchg[xchg_n++] = *s;
            handed = true;
          }
          pthread_mutex_unlock(&xchg_lock);
        }
        if (!handed) {
          mm_pool_free(shared[s->pool], s->p);
          w->live_shared[s->pool]--;
        }
      }
      s->p = NULL;
      continue;
    }
    unsigned pool = (unsigned)(rng >> 20) % (SHARED + 1);
    s->pool = pool;
    s->tag = (unsigned)(w->id * 1000003u + op);
    s->p = pool == SHARED ? mm_pool_alloc(own) : mm_pool_alloc(shared[pool]);
    if (!s->p) {
      w->nulls++;
      continue;
    }
    size_t align = pool < SHARED && shared_align[pool] ? shared_align[pool] : 8;
    if ((uintptr_t)s->p % align) w->misaligned++;
    fill(s, obj_size(pool));
    if (pool == SHARED) own_live++;
    else w->live_shared[pool]++;
  }
  /* the end: every object still held checked, then freed */
  for (unsigned i = 0; i < SLOTS; i++) {
    obj_t *s = &slots[i];
    if (!s->p) continue;
    if (!intact(s, obj_size(s->pool))) w->bad++;
    if (s->pool == SHARED) {
      mm_pool_free(own, s->p);
    } else {
      mm_pool_free(shared[s->pool], s->p);
      w->live_shared[s->pool]--;
    }
  }
  mm_pool_stats_t st;
  if (mm_pool_stats(own, &st) || st.objects != st.free_objects) w->bad++;
  mm_pool_destroy(own);
  if (block) mm_page_block_free(block);
  (void)own_live;
  return NULL;
}

static void test_create(void) {
  mm_pool_options_t o = {0};
  errno = 0;
  CHECK("object_size 0: NULL", mm_pool_create(&o) == NULL);
  CHECK("object_size 0: EINVAL", errno == EINVAL);
  o.object_size = 32769;
  errno = 0;
  CHECK("object_size 32769: NULL, EINVAL", mm_pool_create(&o) == NULL && errno == EINVAL);
  o.object_size = 64;
  o.alignment = 48;
  errno = 0;
  CHECK("alignment 48: NULL, EINVAL", mm_pool_create(&o) == NULL && errno == EINVAL);
  o.alignment = 8192;
  errno = 0;
  CHECK("alignment 8192: NULL, EINVAL", mm_pool_create(&o) == NULL && errno == EINVAL);
  errno = 0;
  CHECK("NULL options: NULL, EINVAL", mm_pool_create(NULL) == NULL && errno == EINVAL);
  errno = 0;
  CHECK("stats of NULL: EINVAL", mm_pool_stats(NULL, NULL) == EINVAL);

  static const size_t sizes[] = {1, 8, 17, 24, 56, 100, 1000, 4096, 32768};
  static const size_t aligns[] = {0, 8, 16, 64, 4096};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    for (size_t j = 0; j < sizeof(aligns) / sizeof(aligns[0]); j++) {
      mm_pool_options_t q = {.object_size = sizes[i], .alignment = aligns[j], .name = "sizes"};
      size_t want = rounded(sizes[i], aligns[j]);
      mm_pool_t *p = mm_pool_create(&q);
      if (want > 32768) {
        CHECK("rounded above the limit: NULL", p == NULL);
        continue;
      }
      REQUIRE("create", p != NULL);
      mm_pool_stats_t s;
      CHECK("stats", mm_pool_stats(p, &s) == 0);
      CHECK("object size rounded as documented", s.object_size == want);
      CHECK("a new pool holds nothing", s.blocks == 0 && s.objects == 0);
      unsigned char *prev = NULL;
      bool aligned = true, apart = true;
      for (int k = 0; k < 50; k++) {
        unsigned char *x = mm_pool_alloc(p);
        REQUIRE("alloc", x != NULL);
        memset(x, 0xAB, want);
        if ((uintptr_t)x % (aligns[j] ? aligns[j] : 8)) aligned = false;
        if (prev && prev[want - 1] != 0xAB) apart = false;
        prev = x;
      }
      CHECK("objects aligned", aligned);
      CHECK("objects do not overlap", apart);
      CHECK("stats: 50 live", mm_pool_stats(p, &s) == 0 && s.objects - s.free_objects == 50);
      mm_pool_destroy(p);
    }
  }
  mm_pool_options_t r = {.object_size = 100, .name = "reserved", .reserve = 5000};
  mm_pool_t *p = mm_pool_create(&r);
  REQUIRE("create with a reserve", p != NULL);
  mm_pool_stats_t s;
  mm_pool_stats(p, &s);
  CHECK("the reserve is carved at creation", s.objects >= 5000 && s.free_objects == s.objects);
  mm_pool_destroy(p);
  mm_pool_options_t longname = {.object_size = 8,
                                .name = "a name much longer than thirty-one bytes, cut"};
  p = mm_pool_create(&longname);
  REQUIRE("create with a long name", p != NULL);
  static char buf[1 << 16];
  mm_stats_json(buf, sizeof(buf));
  CHECK("the name in mm_stats_json, cut to 31 bytes",
        strstr(buf, "\"name\":\"a name much longer than thirty-\"") != NULL);
  mm_pool_destroy(p);
  mm_stats_json(buf, sizeof(buf));
  CHECK("a destroyed pool leaves the statistics", strstr(buf, "thirty") == NULL);
}

static void test_page_blocks(void) {
  errno = 0;
  CHECK("page block of 0: NULL, EINVAL", mm_page_block_alloc(0) == NULL && errno == EINVAL);
  errno = 0;
  CHECK("page block of 64 MiB + 1: NULL, EINVAL",
        mm_page_block_alloc(((size_t)64 << 20) + 1) == NULL && errno == EINVAL);
  long lent0 = total_lent_bytes();
  unsigned char *b[5];
  static const size_t sizes[] = {1, 4096, 4097, 65536, (size_t)64 << 20};
  for (int i = 0; i < 5; i++) {
    b[i] = mm_page_block_alloc(sizes[i]);
    REQUIRE("page block", b[i] != NULL);
    CHECK("page block 4 KiB aligned", (uintptr_t)b[i] % 4096 == 0);
    memset(b[i], i + 1, sizes[i]);
  }
  long want = 4096 + 4096 + 8192 + 65536 + ((long)64 << 20);
  CHECK("lent_bytes counts the page blocks, rounded to 4 KiB", total_lent_bytes() - lent0 == want);
  for (int i = 0; i < 5; i++) {
    bool ok = true;
    for (size_t k = 0; k < sizes[i]; k += 4093) ok &= b[i][k] == (unsigned char)(i + 1);
    CHECK("page blocks keep their bytes", ok);
    mm_page_block_free(b[i]);
  }
  CHECK("lent_bytes back after mm_page_block_free", total_lent_bytes() == lent0);
  mm_page_block_free(NULL); /* a no-op, as free(NULL) */
}

/* Release gives every block back, and the next round reuses that memory
 * instead of growing. */
static void test_release_reuse(void) {
  mm_pool_options_t o = {.object_size = 56, .name = "rounds"};
  mm_pool_t *p = mm_pool_create(&o);
  REQUIRE("create", p != NULL);
  long lent0 = total_lent_bytes();
  size_t first_bytes = 0;
  for (int round = 0; round < 5; round++) {
    for (int i = 0; i < 200000; i++) {
      unsigned char *x = mm_pool_alloc(p);
      REQUIRE("alloc", x != NULL);
      x[0] = x[55] = (unsigned char)i;
    }
    mm_pool_stats_t s;
    mm_pool_stats(p, &s);
    CHECK("200000 objects live", s.objects - s.free_objects == 200000);
    if (!round) first_bytes = s.bytes;
    CHECK("each round holds what the first held", s.bytes == first_bytes);
    CHECK("lent_bytes counts the pool's blocks", total_lent_bytes() - lent0 == (long)s.bytes);
    mm_pool_release(p);
    mm_pool_stats(p, &s);
    CHECK("release: no block, no object", s.blocks == 0 && s.objects == 0 && s.bytes == 0);
    CHECK("release: lent_bytes back", total_lent_bytes() == lent0);
    if (round == 0) {
      /* and the memory to the OS once the page cache is purged: the
       * resident set falls by at least three quarters of the pool's
       * blocks (less what secure mode's quarantine holds) */
      size_t rss1 = rss_bytes();
      mm_collect();
      size_t rss2 = rss_bytes(), held = (size_t)quarantine_bytes();
      CHECK("release and mm_collect give the resident set back",
            rss2 <= rss1 - first_bytes * 3 / 4 + held);
    }
    if (mm_option_get("secure"))
      CHECK("secure mode: the quarantine holds the released blocks (at least the last)",
            quarantine_bytes() > 0);
    else
      CHECK("no quarantine without secure mode", quarantine_bytes() == 0);
  }
  mm_pool_destroy(p);
}

/* A pool grows by its size class's page block until it holds 8 MiB, then
 * by 2 MiB blocks at 2 MiB boundaries (advised as transparent huge pages;
 * whether the kernel backs them so is its business): with huge pages on,
 * a pool grown to 16 MiB holds four such blocks, and the objects handed
 * out after 8 MiB include exactly four at 2 MiB boundaries (the blocks'
 * first); with MMALLOC_HUGEPAGES=0, no such block. */
static void grow_to(unsigned hugepages, size_t *blocks, size_t *bytes, int *aligned) {
  long was = mm_option_get("hugepages");
  REQUIRE("hugepages can be set", mm_option_set("hugepages", hugepages) == 0);
  mm_pool_options_t o = {.object_size = 64, .name = "big"};
  mm_pool_t *p = mm_pool_create(&o);
  REQUIRE("create", p != NULL);
  mm_pool_stats_t s = {0};
  *aligned = 0;
  while (mm_pool_stats(p, &s) == 0 && s.bytes < ((size_t)16 << 20)) {
    /* objects at 2 MiB boundaries, counted in the batches that start once
     * the pool holds 8 MiB: the first objects of the blocks taken after
     * that (the block that brought it to 8 MiB was taken, and its first
     * object handed out, in an earlier batch: objects go out in address
     * order) */
    bool big = s.bytes >= ((size_t)8 << 20);
    for (int i = 0; i < 1024; i++) {
      char *x = mm_pool_alloc(p);
      REQUIRE("alloc", x != NULL);
      x[63] = 1;
      if (big && ((uintptr_t)x & (((uintptr_t)2 << 20) - 1)) == 0) ++*aligned;
    }
  }
  *blocks = s.blocks;
  *bytes = s.bytes;
  mm_pool_destroy(p);
  mm_option_set("hugepages", was);
}

static void test_huge_blocks(void) {
  size_t blocks, bytes, small_blocks, small_bytes;
  int aligned, small_aligned; /* (the second not checked: the class's blocks may fall anywhere) */
  grow_to(0, &small_blocks, &small_bytes, &small_aligned);
  size_t block = small_bytes / small_blocks; /* the size class's page block */
  CHECK("hugepages=0: every block the size class's", small_bytes == small_blocks * block &&
                                                         block < ((size_t)2 << 20));
  grow_to(2, &blocks, &bytes, &aligned);
  size_t small = ((size_t)8 << 20) / block; /* blocks before the pool is big */
  CHECK("hugepages=2: 8 MiB of the class's blocks, then 2 MiB blocks",
        bytes == small * block + (blocks - small) * ((size_t)2 << 20) && blocks - small == 4);
  CHECK("hugepages=2: the 2 MiB blocks start at 2 MiB boundaries", aligned == 4);
}

/* The inline calls do the work: in one thread, alloc/free pairs in batches
 * reach the library only when a thread's list is empty or full. */
static void test_fast_path(void) {
  mm_pool_options_t o = {.object_size = 64, .name = "fast"};
  mm_pool_t *p = mm_pool_create(&o);
  REQUIRE("create", p != NULL);
  void *v[64];
  for (int r = 0; r < 2000; r++) {
    for (int i = 0; i < 64; i++) v[i] = mm_pool_alloc(p);
    for (int i = 0; i < 64; i++) mm_pool_free(p, v[i]);
  }
  for (int r = 0; r < 2000; r++) {
    for (int i = 0; i < 64; i++) v[i] = mm_pool_alloc(p);
    for (int i = 0; i < 64; i++) mm_pool_free_unchecked(p, v[i]);
  }
  mm_pool_stats_t s;
  mm_pool_stats(p, &s);
  fprintf(stderr, "  %zu slow calls in 512000 calls\n", s.slow_calls);
  if (mm_option_get("secure") == 0)
    CHECK("the inline calls take no slow path in a steady loop", s.slow_calls <= 4);
  else /* secure mode checks and fills every object: no list, every call in the library */
    CHECK("secure mode: every call reaches the library's checks", s.slow_calls == 512000);
  CHECK("mm_pool_free_unchecked frees", s.objects == s.free_objects);
  mm_pool_destroy(p);
}

static void test_threads(void) {
  for (unsigned i = 0; i < SHARED; i++) {
    mm_pool_options_t o = {.object_size = shared_size[i], .alignment = shared_align[i],
                           .name = "shared"};
    shared[i] = mm_pool_create(&o);
    REQUIRE("create a shared pool", shared[i] != NULL);
  }
  /* generations of threads: a new one takes the index (and the lists) an
   * exited one left */
  unsigned long bad = 0, nulls = 0, misaligned = 0;
  long live[SHARED] = {0};
  for (unsigned gen = 0; gen < GENERATIONS; gen++) {
    pthread_t t[THREADS];
    worker_t w[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
      memset(&w[i], 0, sizeof(w[i]));
      w[i].id = gen * THREADS + i;
      int rc = pthread_create(&t[i], NULL, worker, &w[i]);
      REQUIRE("thread", rc == 0);
    }
    for (unsigned i = 0; i < THREADS; i++) {
      pthread_join(t[i], NULL);
      bad += w[i].bad, nulls += w[i].nulls, misaligned += w[i].misaligned;
      for (unsigned j = 0; j < SHARED; j++) live[j] += w[i].live_shared[j];
    }
  }
  /* what is left in the exchange, checked and freed here */
  for (unsigned i = 0; i < xchg_n; i++) {
    if (!intact(&xchg[i], obj_size(xchg[i].pool))) bad++;
    mm_pool_free(shared[xchg[i].pool], xchg[i].p);
    live[xchg[i].pool]--;
  }
  xchg_n = 0;
  CHECK("every object kept its bytes (no overlap, no reuse while live)", bad == 0);
  CHECK("no allocation failed", nulls == 0);
  CHECK("every object aligned", misaligned == 0);
  for (unsigned j = 0; j < SHARED; j++) {
    mm_pool_stats_t s;
    CHECK("stats", mm_pool_stats(shared[j], &s) == 0);
    if (live[j]) fprintf(stderr, "  pool %u: model says %ld live\n", j, live[j]);
    CHECK("the model frees everything", live[j] == 0);
    CHECK("the pool agrees: no live object", s.objects == s.free_objects);
    CHECK("objects were carved", s.objects > 0 && s.blocks > 0);
  }
  for (unsigned j = 0; j < SHARED; j++) mm_pool_destroy(shared[j]);
  CHECK("destroy gives every block back: none left lent", total_lent_bytes() == 0);
}

int main(void) {
  printf("%s\n", SUITE);
  test_create();
  test_page_blocks();
  test_release_reuse();
  test_huge_blocks();
  test_fast_path();
  test_threads();
  return check_summary(SUITE);
}
