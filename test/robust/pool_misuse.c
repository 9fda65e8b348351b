/* pool_misuse.c — bad pointers and bad pools given to the pool, heap and
 * page block calls, and their objects given to free(): one clear line,
 * then abort().
 *
 * The same for heaps (mm_heap_free, mm_heap_realloc, free() of a heap
 * object).  Each case runs in a forked child, which must die by SIGABRT
 * with exactly one line on stderr, "mmalloc: CALL(): ... WHAT ... 0xHEX",
 * naming the call, the pool or heap (pool "NAME", heap "NAME"), what is
 * wrong, and the pointer passed; a NULL pool or heap gives
 * "mmalloc: CALL(): NULL pool" (heap).  In a debug build (MM_DEBUG >= 1)
 * also a heap destroyed while another thread is inside mm_heap_free on it.
 * Then,
 * in this process, the bad inputs that are not errors: mm_pool_free(pool,
 * NULL) and mm_page_block_free(NULL) do nothing.
 *
 * usage: robust_pool_misuse         every case, each in a child
 *        robust_pool_misuse CASE    one case here (shows the message)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api/harness.h"
#include "check.h"
#include "mmalloc.h"

typedef struct case_s {
  const char *name;
  const char *call; /* '|'-separated: what the line may name */
  const char *what; /* a part of the line */
} case_t;

static const case_t cases[] = {
    {"malloc-object", "mm_pool_free", "pool \"tri\": invalid pointer (not an object of a pool"},
    {"other-pool", "mm_pool_free", "pool \"tri\": invalid pointer (an object of pool \"pts\")"},
    {"inside", "mm_pool_free", "pool \"tri\": invalid pointer (inside an object)"},
    {"never-allocated", "mm_pool_free", "pool \"tri\": invalid pointer (never allocated)"},
    {"double-free", "mm_pool_free", "pool \"tri\": double free of"},
    {"double-free-later", "mm_pool_free", "pool \"tri\": double free of"},
    {"double-free-unchecked", "mm_pool_free", "pool \"tri\": double free of"},
    {"stack", "mm_pool_free", "pool \"tri\": invalid pointer (not from a pool"},
    {"released", "mm_pool_free", "pool \"tri\": invalid pointer"},
    {"page-block", "mm_pool_free", "pool \"tri\": invalid pointer (inside a page block)"},
    {"free-object", "free", "invalid pointer (an object of pool \"tri\": use mm_pool_free)"},
    {"realloc-object", "realloc", "invalid pointer (an object of pool \"tri\": use mm_pool_free)"},
    {"usable-object", "malloc_usable_size", "invalid pointer (an object of pool \"tri\""},
    {"free-page-block", "free", "invalid pointer (in a page block: use mm_page_block_free)"},
    {"block-free-malloc", "mm_page_block_free", "invalid pointer (not a page block"},
    {"block-free-inside", "mm_page_block_free", "invalid pointer (inside a page block"},
    {"block-free-object", "mm_page_block_free", "invalid pointer (inside a page block, or an object of a pool)"},
    {"block-free-twice", "mm_page_block_free", "invalid pointer"},
    {"heap-malloc-object", "mm_heap_free", "heap \"mesh\": invalid pointer (not an object of a heap"},
    {"heap-other-heap", "mm_heap_free", "heap \"mesh\": invalid pointer (an object of heap \"other\")"},
    {"heap-pool-object", "mm_heap_free", "heap \"mesh\": invalid pointer (an object of pool \"tri\")"},
    {"heap-inside", "mm_heap_free", "heap \"mesh\": invalid pointer (inside an object)"},
    {"heap-inside-large", "mm_heap_free", "heap \"mesh\": invalid pointer (inside a block)"},
    {"heap-double-free", "mm_heap_free", "heap \"mesh\": double free of"},
    {"heap-realloc-freed", "mm_heap_realloc", "heap \"mesh\": double free of"},
    {"heap-destroyed", "mm_heap_free", "heap \"mesh\": invalid pointer"},
    {"pool-heap-object", "mm_pool_free", "pool \"tri\": invalid pointer (an object of heap \"mesh\")"},
    {"free-heap-object", "free", "invalid pointer (an object of heap \"mesh\": use mm_heap_free)"},
    {"free-heap-large", "free", "invalid pointer (an object of heap \"mesh\": use mm_heap_free)"},
#if MM_DEBUG >= 1
    {"heap-destroy-busy", "mm_heap_destroy",
     "heap \"mesh\": destroyed while another thread allocates or frees in it"},
#endif
    {"null-heap-malloc", "mm_heap_malloc", NULL},
    {"null-heap-free", "mm_heap_free", NULL},
    {"null-heap-destroy", "mm_heap_destroy", NULL},
    {"null-pool-alloc", "mm_pool_alloc", NULL},
    {"null-pool-free", "mm_pool_free", NULL},
    {"null-pool-release", "mm_pool_release", NULL},
    {"null-pool-destroy", "mm_pool_destroy", NULL},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static void report(const void *p) {
  printf("pointer %p\n", p);
  fflush(stdout);
}

#if MM_DEBUG >= 1
/* heap-destroy-busy: a thread stopped inside mm_heap_free (the object's
 * page made inaccessible, so the call faults on its first read of the
 * object and the SIGSEGV handler holds the thread there) while the main
 * thread destroys the heap: the debug build's in-flight count sees it. */
static volatile sig_atomic_t stuck;
static void hold_here(int sig) {
  (void)sig;
  stuck = 1;
  for (;;) pause();
}
static void *free_stuck(void *arg) {
  void **a = arg;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = hold_here;
  sigaction(SIGSEGV, &sa, NULL);
  mm_heap_free(a[0], a[1]);
  return NULL;
}
#endif

static void run_case(void *arg) {
  const case_t *c = arg;
  printf("case %s\n", c->name);
  fflush(stdout);
  mm_pool_options_t to = {.object_size = 56, .name = "tri"};
  mm_pool_options_t po = {.object_size = 24, .name = "pts"};
  mm_pool_t *tri = mm_pool_create(&to), *pts = mm_pool_create(&po);
  if (!tri || !pts) _exit(3);
  char *t = mm_pool_alloc(tri), *t2 = mm_pool_alloc(tri);
  mm_heap_t *mesh = mm_heap_new("mesh"), *other = mm_heap_new("other");
  char *h1 = mesh ? mm_heap_malloc(mesh, 100) : NULL;
  char *hl = mesh ? mm_heap_malloc(mesh, 100000) : NULL;
  if (!t || !t2 || !h1 || !hl || !other) _exit(3);
  const char *n = c->name;
  void *p = NULL;
  if (!strcmp(n, "malloc-object")) {
    p = malloc(56);
    report(p);
    mm_pool_free(tri, opaque_ptr(p));
  } else if (!strcmp(n, "other-pool")) {
    p = mm_pool_alloc(pts);
    report(p);
    mm_pool_free(tri, opaque_ptr(p));
  } else if (!strcmp(n, "inside")) {
    report(t + 8);
    mm_pool_free(tri, opaque_ptr(t + 8));
  } else if (!strcmp(n, "never-allocated")) {
    /* t is the first object of the pool's first block (64 KiB, 1170
     * objects, carved 585 at a time): object 1000 is not carved yet */
    p = t + 56 * 1000;
    report(p);
    mm_pool_free(tri, opaque_ptr(p));
  } else if (!strcmp(n, "double-free")) {
    mm_pool_free(tri, t);
    report(t);
    mm_pool_free(tri, opaque_ptr(t));
  } else if (!strcmp(n, "double-free-later")) {
    mm_pool_free(tri, t);
    for (int i = 0; i < 5000; i++) mm_pool_free(tri, mm_pool_alloc(pts) ? mm_pool_alloc(tri) : NULL);
    /* t may have been handed out again: free what is surely free twice */
    mm_pool_free(tri, t2);
    report(t2);
    mm_pool_free(tri, opaque_ptr(t2));
  } else if (!strcmp(n, "double-free-unchecked")) {
    mm_pool_free_unchecked(tri, t);
    report(t);
    mm_pool_free_unchecked(tri, opaque_ptr(t));
  } else if (!strcmp(n, "stack")) {
    char stack[64];
    report(stack + 16);
    mm_pool_free(tri, opaque_ptr(stack + 16));
  } else if (!strcmp(n, "released")) {
    mm_pool_release(tri);
    report(t);
    mm_pool_free(tri, opaque_ptr(t));
  } else if (!strcmp(n, "page-block")) {
    p = mm_page_block_alloc(8192);
    report(p);
    mm_pool_free(tri, opaque_ptr(p));
  } else if (!strcmp(n, "free-object")) {
    report(t);
    free(opaque_ptr(t));
  } else if (!strcmp(n, "realloc-object")) {
    report(t);
    p = realloc(opaque_ptr(t), 100);
  } else if (!strcmp(n, "usable-object")) {
    report(t);
    printf("usable %zu\n", malloc_usable_size(opaque_ptr(t)));
  } else if (!strcmp(n, "free-page-block")) {
    p = mm_page_block_alloc(8192);
    report(p);
    free(opaque_ptr(p));
  } else if (!strcmp(n, "block-free-malloc")) {
    p = malloc(100);
    report(p);
    mm_page_block_free(opaque_ptr(p));
  } else if (!strcmp(n, "block-free-inside")) {
    p = (char *)mm_page_block_alloc(3 * 4096) + 4096;
    report(p);
    mm_page_block_free(opaque_ptr(p));
  } else if (!strcmp(n, "block-free-object")) {
    report(t);
    mm_page_block_free(opaque_ptr(t));
  } else if (!strcmp(n, "block-free-twice")) {
    p = mm_page_block_alloc(4096);
    mm_page_block_free(p);
    report(p);
    mm_page_block_free(opaque_ptr(p));
  } else if (!strcmp(n, "heap-malloc-object")) {
    p = malloc(100);
    report(p);
    mm_heap_free(mesh, opaque_ptr(p));
  } else if (!strcmp(n, "heap-other-heap")) {
    p = mm_heap_malloc(other, 100);
    report(p);
    mm_heap_free(mesh, opaque_ptr(p));
  } else if (!strcmp(n, "heap-pool-object")) {
    report(t);
    mm_heap_free(mesh, opaque_ptr(t));
  } else if (!strcmp(n, "heap-inside")) {
    report(h1 + 16);
    mm_heap_free(mesh, opaque_ptr(h1 + 16));
  } else if (!strcmp(n, "heap-inside-large")) {
    report(hl + 4096);
    mm_heap_free(mesh, opaque_ptr(hl + 4096));
  } else if (!strcmp(n, "heap-double-free")) {
    mm_heap_free(mesh, h1);
    report(h1);
    mm_heap_free(mesh, opaque_ptr(h1));
  } else if (!strcmp(n, "heap-realloc-freed")) {
    mm_heap_free(mesh, h1);
    report(h1);
    p = mm_heap_realloc(mesh, opaque_ptr(h1), 200);
  } else if (!strcmp(n, "heap-destroyed")) {
    mm_heap_destroy(mesh);
    mesh = mm_heap_new("mesh");
    report(hl);
    mm_heap_free(mesh, opaque_ptr(hl));
  } else if (!strcmp(n, "pool-heap-object")) {
    report(h1);
    mm_pool_free(tri, opaque_ptr(h1));
  } else if (!strcmp(n, "free-heap-object")) {
    report(h1);
    free(opaque_ptr(h1));
  } else if (!strcmp(n, "free-heap-large")) {
    report(hl);
    free(opaque_ptr(hl));
#if MM_DEBUG >= 1
  } else if (!strcmp(n, "heap-destroy-busy")) {
    void *a[2] = {mesh, h1};
    if (mprotect((void *)((uintptr_t)h1 & ~(uintptr_t)4095), 4096, PROT_NONE) != 0) _exit(3);
    pthread_t th;
    if (pthread_create(&th, NULL, free_stuck, a) != 0) _exit(3);
    for (int i = 0; i < 10000 && !stuck; i++) usleep(1000);
    if (!stuck) _exit(3);
    report(mesh);
    mm_heap_destroy(opaque_ptr(mesh));
#endif
  } else if (!strcmp(n, "null-heap-malloc")) {
    report(NULL);
    p = mm_heap_malloc(opaque_ptr(NULL), 10);
  } else if (!strcmp(n, "null-heap-free")) {
    report(h1);
    mm_heap_free(opaque_ptr(NULL), h1);
  } else if (!strcmp(n, "null-heap-destroy")) {
    report(NULL);
    mm_heap_destroy(opaque_ptr(NULL));
  } else if (!strcmp(n, "null-pool-alloc")) {
    report(NULL);
    p = mm_pool_alloc(opaque_ptr(NULL));
  } else if (!strcmp(n, "null-pool-free")) {
    report(t);
    mm_pool_free(opaque_ptr(NULL), t);
  } else if (!strcmp(n, "null-pool-release")) {
    report(NULL);
    mm_pool_release(opaque_ptr(NULL));
  } else if (!strcmp(n, "null-pool-destroy")) {
    report(NULL);
    mm_pool_destroy(opaque_ptr(NULL));
  }
  printf("survived %p\n", p);
}

static child_t child;

static void check_case(const case_t *c) {
  child_run(&child, run_case, (void *)c);
  void *passed = NULL;
  char why[512] = "";
  bool ok;
  const char *at = strstr(child.out, "pointer ");
  if (WIFEXITED(child.status) && WEXITSTATUS(child.status) == 3) {
    snprintf(why, sizeof(why), "could not set the case up");
    ok = false;
  } else if (!at || sscanf(at, "pointer %p", &passed) != 1) {
    snprintf(why, sizeof(why), "the case did not get as far as the call");
    ok = false;
  } else if (!child_aborted(&child)) {
    snprintf(why, sizeof(why), "the child was not killed by SIGABRT");
    ok = false;
  } else if (!c->what) { /* a NULL pool */
    char want[128];
    snprintf(want, sizeof(want), "mmalloc: %s(): NULL %s", c->call,
             strstr(c->call, "heap") ? "heap" : "pool");
    ok = strncmp(child.err, want, strlen(want)) == 0 && strchr(child.err, '\n') &&
         strchr(child.err, '\n')[1] == 0;
    if (!ok) snprintf(why, sizeof(why), "expected one line starting \"%s\"", want);
  } else {
    ok = bad_pointer_line(child.err, c->call, c->what, passed, why, sizeof(why));
  }
  if (!ok) {
    fprintf(stderr, "FAIL case %s: %s\n", c->name, why);
    child_describe(&child, c->name);
  }
  char name[128];
  snprintf(name, sizeof(name), "pool misuse case %s", c->name);
  CHECK(name, ok);
}

int main(int argc, char **argv) {
  if (argc > 1) {
    for (size_t i = 0; i < NCASES; i++)
      if (!strcmp(cases[i].name, argv[1])) {
        run_case((void *)&cases[i]);
        return 0;
      }
    fprintf(stderr, "no case %s\n", argv[1]);
    return 2;
  }
  for (size_t i = 0; i < NCASES; i++) check_case(&cases[i]);
  /* not errors */
  mm_pool_options_t o = {.object_size = 32, .name = "ok"};
  mm_pool_t *pool = mm_pool_create(&o);
  CHECK("create", pool != NULL);
  if (pool) {
    mm_pool_free(pool, NULL);
    void *x = mm_pool_alloc(pool);
    CHECK("the pool works after mm_pool_free(pool, NULL)", x != NULL);
    mm_pool_free(pool, x);
    mm_pool_destroy(pool);
  }
  mm_page_block_free(NULL);
  return check_summary("robust_pool_misuse");
}
