/* stress.c — many threads, sizes from 1 B to 2 MiB, a third of the frees
 * done by another thread; every live object carries a pattern derived from
 * its address and size, checked before it is freed.  Not a benchmark.
 *
 * usage: stress THREADS SCALE ITER [SEED]
 *   THREADS  worker threads (16..64 in the ctest runs)
 *   SCALE    live objects per thread = 512 * SCALE
 *   ITER     operations per thread
 *   SEED     base seed (printed; a failure prints it again)
 *
 * Built twice: against the mm_ API (stress_mm; also the ThreadSanitizer
 * target) and against the standard names with the static library linked in
 * (stress_override). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef STRESS_STANDARD_NAMES
#define A_MALLOC malloc
#define A_FREE free
#define A_CALLOC calloc
#define A_REALLOC realloc
#define A_ALIGNED aligned_alloc
#define A_USABLE malloc_usable_size
#include <malloc.h>
#else
#include "mmalloc.h"
#define A_MALLOC mm_malloc
#define A_FREE mm_free
#define A_CALLOC mm_calloc
#define A_REALLOC mm_realloc
#define A_ALIGNED mm_aligned_alloc
#define A_USABLE mm_malloc_usable_size
#endif

typedef struct obj_s {
  unsigned char *p;
  size_t size;
} obj_t;

/* A handoff inbox per thread: objects other threads pass it to free. */
typedef struct inbox_s {
  pthread_mutex_t lock;
  obj_t *items;
  size_t n, cap;
} inbox_t;

static int nthreads, scale;
static long iters;
static uint64_t base_seed;
static inbox_t *inboxes;
static _Atomic long allocated, freed, remote_freed;
static _Atomic int failed;

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

static unsigned char pat_at(uintptr_t addr, size_t size, size_t j) {
  return (unsigned char)((addr >> 4) * 31u + j * 7u + size);
}

static unsigned char pat(const unsigned char *p, size_t size, size_t j) {
  return pat_at((uintptr_t)p, size, j);
}

static void fill(unsigned char *p, size_t size) {
  for (size_t j = 0; j < size; j++) p[j] = pat(p, size, j);
}

static void fail(const char *what, const void *p, size_t size) {
  fprintf(stderr, "stress: %s at %p (size %zu); seed %llu threads %d scale %d iter %ld\n", what, p,
          size, (unsigned long long)base_seed, nthreads, scale, iters);
  failed = 1;
  abort();
}

static void check(const obj_t *o) {
  for (size_t j = 0; j < o->size; j++)
    if (o->p[j] != pat(o->p, o->size, j)) fail("object bytes changed", o->p, o->size);
}

static size_t pick_size(uint64_t *s) {
  unsigned r = (unsigned)(xorshift(s) % 1000);
  if (r < 700) return 1 + xorshift(s) % 256;
  if (r < 900) return 257 + xorshift(s) % (32768 - 256);
  if (r < 990) return 32769 + xorshift(s) % (256 << 10);
  return (256 << 10) + xorshift(s) % (2 << 20);
}

static obj_t make(uint64_t *s) {
  obj_t o;
  o.size = pick_size(s);
  unsigned how = (unsigned)(xorshift(s) % 10);
  if (how == 0) {
    o.p = A_CALLOC(1, o.size);
    if (!o.p) fail("calloc returned NULL", NULL, o.size);
    for (size_t j = 0; j < o.size; j++)
      if (o.p[j]) fail("calloc memory not zero", o.p, o.size);
  } else if (how == 1) {
    size_t align = (size_t)16 << (xorshift(s) % 9); /* 16 B .. 4 KiB */
    size_t sz = (o.size + align - 1) / align * align;
    o.p = A_ALIGNED(align, sz);
    if (!o.p) fail("aligned_alloc returned NULL", NULL, sz);
    if ((uintptr_t)o.p % align) fail("aligned_alloc misaligned", o.p, sz);
    o.size = sz;
  } else {
    o.p = A_MALLOC(o.size);
    if (!o.p) fail("malloc returned NULL", NULL, o.size);
  }
  if (A_USABLE(o.p) < o.size) fail("usable size below the request", o.p, o.size);
  fill(o.p, o.size);
  allocated++;
  return o;
}

static void destroy(obj_t *o) {
  check(o);
  A_FREE(o->p);
  freed++;
  o->p = NULL;
}

static void drain(int self) {
  inbox_t *in = &inboxes[self];
  pthread_mutex_lock(&in->lock);
  obj_t *items = in->items;
  size_t n = in->n;
  in->items = NULL;
  in->n = in->cap = 0;
  pthread_mutex_unlock(&in->lock);
  for (size_t i = 0; i < n; i++) {
    destroy(&items[i]);
    remote_freed++;
  }
  free(items); /* the test's own bookkeeping uses whatever malloc the process has */
}

static void give(int to, obj_t o) {
  inbox_t *in = &inboxes[to];
  pthread_mutex_lock(&in->lock);
  if (in->n == in->cap) {
    size_t cap = in->cap ? 2 * in->cap : 64;
    obj_t *items = realloc(in->items, cap * sizeof(obj_t));
    if (!items) fail("bookkeeping realloc", NULL, cap);
    in->items = items;
    in->cap = cap;
  }
  in->items[in->n++] = o;
  pthread_mutex_unlock(&in->lock);
}

static void *worker(void *arg) {
  int self = (int)(intptr_t)arg;
  uint64_t s = base_seed * 0x9E3779B97F4A7C15ull + (uint64_t)self * 7919 + 1;
  size_t nslots = 512 * (size_t)scale;
  obj_t *slots = calloc(nslots, sizeof(obj_t));
  for (long i = 0; i < iters; i++) {
    obj_t *o = &slots[xorshift(&s) % nslots];
    if (o->p) {
      unsigned r = (unsigned)(xorshift(&s) % 3);
      if (r == 0 && nthreads > 1) { /* a third go to another thread */
        int to = (int)(xorshift(&s) % (uint64_t)(nthreads - 1));
        if (to >= self) to++;
        give(to, *o);
        o->p = NULL;
      } else if (xorshift(&s) % 8 == 0) { /* realloc keeps the prefix */
        check(o);
        size_t nsize = pick_size(&s);
        size_t keep = nsize < o->size ? nsize : o->size;
        uintptr_t old = (uintptr_t)o->p;
        unsigned char *q = A_REALLOC(o->p, nsize);
        if (!q) fail("realloc returned NULL", NULL, nsize);
        for (size_t j = 0; j < keep; j++)
          if (q[j] != pat_at(old, o->size, j)) fail("realloc lost bytes", q, nsize);
        o->p = q;
        o->size = nsize;
        fill(q, nsize);
        continue;
      } else {
        destroy(o);
      }
    }
    *o = make(&s);
    if ((i & 255) == 0) drain(self);
  }
  for (size_t k = 0; k < nslots; k++)
    if (slots[k].p) destroy(&slots[k]);
  free(slots);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: stress THREADS SCALE ITER [SEED]\n");
    return 2;
  }
  nthreads = atoi(argv[1]);
  scale = atoi(argv[2]);
  iters = atol(argv[3]);
  base_seed = argc > 4 ? strtoull(argv[4], NULL, 0) : 42;
  if (nthreads < 1 || scale < 1 || iters < 1) return 2;
  fprintf(stderr, "stress: %d threads, scale %d, %ld iterations, seed %llu (not a benchmark)\n",
          nthreads, scale, iters, (unsigned long long)base_seed);
  inboxes = calloc((size_t)nthreads, sizeof(inbox_t));
  for (int i = 0; i < nthreads; i++) pthread_mutex_init(&inboxes[i].lock, NULL);
  pthread_t *t = calloc((size_t)nthreads, sizeof(pthread_t));
  for (int i = 0; i < nthreads; i++)
    if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) != 0) {
      fprintf(stderr, "stress: pthread_create failed\n");
      return 1;
    }
  for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < nthreads; i++) drain(i); /* leftovers, freed by main */
  long a = allocated, f = freed;
  fprintf(stderr, "stress: %ld allocated, %ld freed (%ld by another thread)\n", a, f,
          (long)remote_freed);
  if (a != f || failed) {
    fprintf(stderr, "stress: FAILED: allocated %ld != freed %ld\n", a, f);
    return 1;
  }
  if (remote_freed == 0 && nthreads > 1) {
    fprintf(stderr, "stress: FAILED: no remote frees happened\n");
    return 1;
  }
  free(t);
  free(inboxes);
  return 0;
}
