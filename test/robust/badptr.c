/* badptr.c — bad pointers and double frees: one clear line, then abort().
 *
 * Each case runs in a forked child.  The child must die by SIGABRT and its
 * stderr must be exactly one line
 *     mmalloc: CALL(): WHAT 0xHEX
 * where CALL names the call (free, realloc, malloc_usable_size), WHAT
 * contains "invalid pointer" for a pointer mmalloc never handed out and
 * "double free" for one already freed, and 0xHEX is the pointer passed
 * (printf %p).  Pointers: the stack, static data, an unmapped address,
 * memory mapped by the program, interior pointers of small, large (above
 * 32 KiB) and huge (>= 32 MiB) blocks, a small block's address plus 2^48
 * or with bit 63 set; double frees right after the first
 * free and after other traffic, and from another thread; a medium block
 * waiting in its thread's stash freed again by another thread, or passed
 * to realloc or malloc_usable_size.
 *
 * usage: robust_badptr            run every case, each in a child
 *        robust_badptr CASE       run one case here (shows the message)
 *        robust_badptr --list     the case names
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/mman.h>

#include "api/harness.h"
#include "check.h"
#include "mmalloc.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

typedef enum { CALL_FREE, CALL_REALLOC, CALL_USABLE, CALL_MM_FREE, CALL_MM_REALLOC, CALL_MM_USABLE } call_t;
static const char *call_names[] = {"free", "realloc", "malloc_usable_size",
                                   "free|mm_free", "realloc|mm_realloc",
                                   "malloc_usable_size|mm_malloc_usable_size"};

/* The pointer the case passes; the child reports it on stdout, so that the
 * parent can compare it with the one in the message.  (run_case has written
 * to stdout before, so that stdio's buffer is not allocated in the middle of
 * a case.) */
static void report(const void *p) {
  printf("pointer %p\n", p);
  fflush(stdout);
}

static void do_call(call_t call, void *p) {
  report(p);
  p = opaque_ptr(p);
  switch (call) {
  case CALL_FREE: free(p); break;
  case CALL_REALLOC: p = realloc(p, 100); break;
  case CALL_USABLE: printf("usable %zu\n", malloc_usable_size(p)); break;
  case CALL_MM_FREE: mm_free(p); break;
  case CALL_MM_REALLOC: p = mm_realloc(p, 100); break;
  case CALL_MM_USABLE: printf("usable %zu\n", mm_malloc_usable_size(p)); break;
  }
  fflush(stdout);
}

/* ---- pointers mmalloc never handed out ------------------------------------- */
typedef enum {
  P_STACK, P_STATIC, P_UNMAPPED, P_MAPPED, P_SMALL_PLUS_8, P_SMALL_PLUS_16, P_SMALL_PLUS_1,
  P_LARGE_PLUS_16, P_LARGE_PLUS_PAGE, P_LARGE_LAST_PAGE, P_LARGE_PLUS_64K, P_HUGE_PLUS_16,
  P_HUGE_PLUS_PAGE, P_HUGE_PLUS_MIB, P_SMALL_ALIAS_48, P_SMALL_ALIAS_63, P_FULL_PLUS_16, P_KINDS
} ptr_kind_t;
static const char *kind_names[] = {"stack", "static", "unmapped", "mapped", "small+8", "small+16",
                                   "small+1", "large+16", "large+4096", "large+96K", "large+64K",
                                   "huge+16",
                                   "huge+4096", "huge+1M", "small+2^48", "small+2^63",
                                   "full-page+16"};
static char static_data[64];

/* Blocks of 8 KiB (eight to a page) until the first page is full: the
 * ninth malloc moves it to its thread's full list, so the owner's free of
 * one of its blocks misses the fast path's tag (a path of its own). */
#define FULL_BLOCKS 12
static char *full_page_blocks(char *b[FULL_BLOCKS]) {
  for (int i = 0; i < FULL_BLOCKS; i++) b[i] = malloc(8 * KiB);
  return b[0];
}

static void *bad_pointer_of(ptr_kind_t k, char *stack) {
  char *p;
  switch (k) {
  case P_STACK: return stack;
  case P_STATIC: return static_data + 16;
  case P_UNMAPPED: return (void *)(uintptr_t)0x123456789000ull;
  case P_MAPPED:
    p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p + 4096;
  case P_SMALL_PLUS_8: p = malloc(32); return p + 8;
  case P_SMALL_PLUS_16: p = malloc(64); return p + 16;
  case P_SMALL_PLUS_1: p = malloc(100); return p + 1;
  case P_LARGE_PLUS_16: p = malloc(100 * KiB); return p + 16;
  case P_LARGE_PLUS_PAGE: p = malloc(100 * KiB); return p + 4096;
  /* the block's last datablock, which the extent map names as it names the
   * first (the free fast path finds the block's own descriptor there) */
  case P_LARGE_LAST_PAGE: p = malloc(100 * KiB); return p + 96 * KiB;
  case P_LARGE_PLUS_64K: p = malloc(1 * MiB); return p + 64 * KiB;
  case P_HUGE_PLUS_16: p = malloc(40 * MiB); return p + 16;
  case P_HUGE_PLUS_PAGE: p = malloc(40 * MiB); return p + 4096;
  case P_HUGE_PLUS_MIB: p = malloc(40 * MiB); return p + MiB;
  /* a live block's address with a high bit set: beyond the address space,
   * yet its slot-table index, masked, names the block's own slot (the free
   * fast path must still refuse it) */
  case P_SMALL_ALIAS_48: p = malloc(64); return (void *)((uintptr_t)p + ((uintptr_t)1 << 48));
  case P_SMALL_ALIAS_63: p = malloc(64); return (void *)((uintptr_t)p | ((uintptr_t)1 << 63));
  case P_FULL_PLUS_16: {
    char *b[FULL_BLOCKS];
    return full_page_blocks(b) + 16;
  }
  default: return NULL;
  }
}

/* ---- double frees ------------------------------------------------------------ */
typedef enum {
  D_SMALL, D_SMALL_TRAFFIC, D_LARGE, D_LARGE_TRAFFIC, D_HUGE, D_HUGE_TRAFFIC, D_SMALL_REMOTE,
  D_FULL_REMOTE, D_STASHED_REMOTE, D_STASHED_REALLOC, D_STASHED_USABLE, D_MM_SMALL, D_MM_LARGE,
  D_MM_HUGE, D_KINDS
} double_kind_t;
static const char *double_names[] = {"small",      "small-after-traffic", "large",
                                     "large-after-traffic", "huge", "huge-after-traffic",
                                     "small-freed-by-another-thread",
                                     "full-page-freed-by-another-thread",
                                     "stashed-medium-freed-by-another-thread",
                                     "stashed-medium-realloc", "stashed-medium-usable-size",
                                     "mm-small", "mm-large", "mm-huge"};

/* Allocations and frees of sizes other than p's, that do not need memory
 * p's could provide.  The warm-up (p NULL, before p exists) leaves a hole of
 * each traffic size: for each small size, 8 blocks of which one is freed
 * (its page stays in use); for each large size, one block, freed.  After p
 * is freed, each round allocates every traffic size again (into the holes)
 * and frees it.  If p's memory is handed out all the same, the case cannot
 * say anything, and the child exits 3 to say so. */
static const size_t small_sizes[] = {16, 24, 100, 200, 1000, 3000, 20000};
static const size_t large_sizes[] = {600 * KiB, 2 * MiB, 5 * MiB};
#define NSMALL (sizeof(small_sizes) / sizeof(small_sizes[0]))
#define NLARGE (sizeof(large_sizes) / sizeof(large_sizes[0]))

static void traffic_check(const char *q, const char *p, size_t p_size) {
  size_t u = malloc_usable_size((void *)q);
  if (q < p + p_size && p < q + u) {
    fprintf(stdout, "SETUP: traffic block %p+%zu reused the freed block %p+%zu\n", (const void *)q, u,
            (const void *)p, p_size);
    fflush(stdout);
    _exit(3);
  }
}

static void traffic(const char *p, size_t p_size, bool small) {
  if (!p) {
    for (size_t s = 0; s < NSMALL; s++) {
      char *keep[8];
      for (int i = 0; i < 8; i++) keep[i] = malloc(small_sizes[s]);
      free(keep[3]); /* the other seven stay live */
    }
    if (!small)
      for (size_t s = 0; s < NLARGE; s++) free(malloc(large_sizes[s]));
    return;
  }
  for (int round = 0; round < 50; round++) {
    for (size_t s = 0; s < NSMALL; s++) {
      char *q = malloc(small_sizes[s]);
      memset(q, 0x11, small_sizes[s]);
      traffic_check(q, p, p_size);
      free(q);
    }
    if (!small)
      for (size_t s = 0; s < NLARGE; s++) {
        char *q = malloc(large_sizes[s]);
        memset(q, 0x11, 4096);
        traffic_check(q, p, p_size);
        free(q);
      }
  }
}

static void *remote_alloc(void *arg) {
  (void)arg;
  return malloc(48);
}

static void *remote_free(void *arg) {
  free(arg);
  return NULL;
}

static void double_free_case(double_kind_t k) {
  if (k == D_FULL_REMOTE) {
    /* Another thread frees a block of this thread's full page (it reaches
     * the owner's inbox when that thread exits); the owner, which has not
     * taken its inbox since, frees it again while the page is still on
     * its full list. */
    char *b[FULL_BLOCKS];
    char *p = full_page_blocks(b);
    pthread_t t;
    report(p);
    pthread_create(&t, NULL, remote_free, p);
    pthread_join(t, NULL);
    free(opaque_ptr(p));
    printf("second free returned\n");
    fflush(stdout);
    return;
  }
  if (k == D_STASHED_REMOTE || k == D_STASHED_REALLOC || k == D_STASHED_USABLE) {
    /* A medium block (100 KiB) this thread freed waits in its stash for its
     * next malloc of the size: another thread frees it again, or this one
     * passes it to realloc or malloc_usable_size. */
    for (int i = 0; i < 2; i++) free(opaque_ptr(malloc(100 * KiB))); /* a size it keeps */
    char *p = malloc(100 * KiB);
    memset(p, 0x22, 100 * KiB);
    report(p);
    free(opaque_ptr(p));
    if (k == D_STASHED_REMOTE) {
      pthread_t t;
      pthread_create(&t, NULL, remote_free, p);
      pthread_join(t, NULL);
    } else if (k == D_STASHED_REALLOC) {
      p = realloc(opaque_ptr(p), 200 * KiB);
    } else {
      printf("usable %zu\n", malloc_usable_size(opaque_ptr(p)));
    }
    printf("second free returned\n");
    fflush(stdout);
    return;
  }
  size_t size = 0;
  bool mm = false, with_traffic = false, small = false;
  switch (k) {
  case D_SMALL: case D_SMALL_TRAFFIC: case D_MM_SMALL: case D_SMALL_REMOTE: size = 48; small = true; break;
  case D_LARGE: case D_LARGE_TRAFFIC: case D_MM_LARGE: size = 100 * KiB; break;
  default: size = 40 * MiB; break;
  }
  mm = k == D_MM_SMALL || k == D_MM_LARGE || k == D_MM_HUGE;
  with_traffic = k == D_SMALL_TRAFFIC || k == D_LARGE_TRAFFIC || k == D_HUGE_TRAFFIC;
  if (with_traffic) traffic(NULL, 0, small); /* warm up: pages for the traffic exist */
  char *p;
  if (k == D_SMALL_REMOTE) {
    pthread_t t;
    void *r;
    pthread_create(&t, NULL, remote_alloc, NULL);
    pthread_join(t, &r);
    p = r;
  } else {
    p = mm ? mm_malloc(size) : malloc(size);
  }
  char *fence = malloc(size); /* keeps p's hole from merging with free space after it */
  memset(p, 0x22, size);
  memset(fence, 0x22, size);
  report(p);
  if (mm) mm_free(opaque_ptr(p));
  else free(opaque_ptr(p));
  if (with_traffic) traffic(p, size, small);
  if (mm) mm_free(opaque_ptr(p));
  else free(opaque_ptr(p));
  printf("second free returned\n");
  fflush(stdout);
}

/* ---- case table ------------------------------------------------------------------- */
typedef struct case_s {
  char name[64];
  int kind; /* ptr_kind_t, or P_KINDS + double_kind_t */
  call_t call;
} case_t;
static case_t cases[256];
static int ncases;

static void add_case(const char *name, int kind, call_t call) {
  snprintf(cases[ncases].name, sizeof(cases[ncases].name), "%s", name);
  cases[ncases].kind = kind;
  cases[ncases].call = call;
  ncases++;
}

static void build_cases(void) {
  static const char *short_call[] = {"free", "realloc", "usable", "mm_free", "mm_realloc", "mm_usable"};
  char name[64];
  for (int c = CALL_FREE; c <= CALL_USABLE; c++)
    for (int k = 0; k < P_KINDS; k++) {
      snprintf(name, sizeof(name), "%s-%s", short_call[c], kind_names[k]);
      add_case(name, k, (call_t)c);
    }
  static const ptr_kind_t mm_kinds[] = {P_STACK, P_UNMAPPED, P_SMALL_PLUS_8, P_LARGE_PLUS_PAGE, P_HUGE_PLUS_PAGE};
  for (int c = CALL_MM_FREE; c <= CALL_MM_USABLE; c++)
    for (size_t k = 0; k < sizeof(mm_kinds) / sizeof(mm_kinds[0]); k++) {
      snprintf(name, sizeof(name), "%s-%s", short_call[c], kind_names[mm_kinds[k]]);
      add_case(name, mm_kinds[k], (call_t)c);
    }
  for (int d = 0; d < D_KINDS; d++) {
    snprintf(name, sizeof(name), "double-free-%s", double_names[d]);
    add_case(name, P_KINDS + d, d >= D_MM_SMALL            ? CALL_MM_FREE
                                : d == D_STASHED_REALLOC ? CALL_REALLOC
                                : d == D_STASHED_USABLE  ? CALL_USABLE
                                                         : CALL_FREE);
  }
}

static void run_case(void *arg) {
  const case_t *c = arg;
  char stack[64];
  memset(stack, 0, sizeof(stack));
  printf("case %s\n", c->name);
  fflush(stdout);
  if (c->kind >= P_KINDS) {
    double_free_case((double_kind_t)(c->kind - P_KINDS));
    return;
  }
  void *p = bad_pointer_of((ptr_kind_t)c->kind, stack + 16);
  do_call(c->call, p);
}

static child_t child;

static void check_case(const case_t *c) {
  child_run(&child, run_case, (void *)c);
  const char *what = c->kind >= P_KINDS ? "double free" : "invalid pointer";
  void *passed = NULL;
  char why[512] = "";
  bool ok;
  if (WIFEXITED(child.status) && WEXITSTATUS(child.status) == 3) {
    snprintf(why, sizeof(why), "could not set the case up: %.300s", child.out);
    ok = false;
  } else if (!strstr(child.out, "pointer ") || sscanf(strstr(child.out, "pointer "), "pointer %p", &passed) != 1) {
    snprintf(why, sizeof(why), "the case did not get as far as the call");
    ok = false;
  } else if (!child_aborted(&child)) {
    snprintf(why, sizeof(why), "the child was not killed by SIGABRT");
    ok = false;
  } else {
    ok = bad_pointer_line(child.err, call_names[c->call], what, passed, why, sizeof(why));
  }
  if (!ok) {
    fprintf(stderr, "FAIL case %s: %s\n", c->name, why);
    child_describe(&child, c->name);
  }
  char check_name[128];
  snprintf(check_name, sizeof(check_name), "bad pointer case %s", c->name);
  CHECK(check_name, ok);
}

int main(int argc, char **argv) {
  build_cases();
  if (argc > 1 && strcmp(argv[1], "--list") == 0) {
    for (int i = 0; i < ncases; i++) printf("%s\n", cases[i].name);
    return 0;
  }
  if (argc > 1) {
    for (int i = 0; i < ncases; i++)
      if (strcmp(cases[i].name, argv[1]) == 0) {
        run_case(&cases[i]);
        return 0;
      }
    fprintf(stderr, "no case %s (--list)\n", argv[1]);
    return 2;
  }
  for (int i = 0; i < ncases; i++) check_case(&cases[i]);
  return check_summary("robust_badptr");
}
