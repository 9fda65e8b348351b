/* oom.c — exhausted memory under RLIMIT_AS: NULL with ENOMEM, nothing lost,
 * and the address space comes back when blocks are freed.
 *
 * In a child (the limit is for it alone):
 *   1. RLIMIT_AS = current VmSize + 1 GiB ("the budget");
 *   2. allocate blocks of 100 B, 64 KiB, 1 MiB and 8 MiB in turn, each
 *      filled with its own pattern, until malloc returns NULL: errno must be
 *      ENOMEM, and at least 3/4 of the budget must have been handed out
 *      (NULL means memory is exhausted); the size that failed must fail
 *      again, and so must calloc and posix_memalign of it (ENOMEM);
 *   3. realloc of a live 64 KiB block to 512 MiB fails (NULL, ENOMEM) and
 *      leaves the block as it was;
 *   4. every live block still holds its pattern;
 *   5. free the first half of the blocks in allocation order; a block of a
 *      quarter of the budget (256 MiB) must now be allocated, and written in
 *      full (freed extents coalesce and their address space is reusable);
 *   6. every remaining block still holds its pattern; all are freed, and the
 *      allocator still works.
 * The child reports each step on stdout; the parent checks them.
 *
 * usage: robust_oom [mm] [huge] [exhaust]
 *   mm       the mm_ names (default: the standard names)
 *   huge     40 MiB blocks (own mappings, above the 32 MiB huge threshold)
 *            instead of 1 MiB ones: NULL must still mean the budget is used
 *            up, and freed huge blocks must give their address space back
 *   exhaust  after the first NULL, allocate each size from the largest down
 *            to 64 KiB until it fails too, so that no address space is left
 */
#define _GNU_SOURCE
#include <sys/resource.h>

#include "api/harness.h"
#include "check.h"
#include "mmalloc.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define BUDGET ((size_t)1 << 30)

static bool use_mm, use_huge, use_exhaust;
static void *xmalloc(size_t n) { return use_mm ? mm_malloc(n) : malloc(n); }
static void xfree(void *p) {
  if (use_mm) mm_free(p);
  else free(p);
}
static void *xrealloc(void *p, size_t n) { return use_mm ? mm_realloc(p, n) : realloc(p, n); }
static void *xcalloc(size_t a, size_t b) { return use_mm ? mm_calloc(a, b) : calloc(a, b); }
static int xposix_memalign(void **out, size_t a, size_t n) {
  return use_mm ? mm_posix_memalign(out, a, n) : posix_memalign(out, a, n);
}

/* Fast word patterns: 1 GiB is written and read twice. */
static void fill(void *p, size_t n, uint64_t seed) {
  uint64_t *w = p;
  for (size_t i = 0; i < n / 8; i++) w[i] = seed * 0x9E3779B97F4A7C15ull + i;
  memset((char *)p + n / 8 * 8, (int)(seed & 0xFF), n % 8);
}
static bool intact(const void *p, size_t n, uint64_t seed) {
  const uint64_t *w = p;
  for (size_t i = 0; i < n / 8; i++)
    if (w[i] != seed * 0x9E3779B97F4A7C15ull + i) return false;
  const unsigned char *t = (const unsigned char *)p + n / 8 * 8;
  for (size_t i = 0; i < n % 8; i++)
    if (t[i] != (seed & 0xFF)) return false;
  return true;
}

static size_t vm_size(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  size_t kb = 0;
  while (f && fgets(line, sizeof(line), f))
    if (sscanf(line, "VmSize: %zu kB", &kb) == 1) break;
  if (f) fclose(f);
  return kb * 1024;
}

#define MAXBLOCKS 20000
static void *blk[MAXBLOCKS];
static size_t len[MAXBLOCKS];

static void say(const char *step, bool ok) {
  printf("%s %s\n", step, ok ? "ok" : "FAILED");
  fflush(stdout);
}

static void oom_child(void *arg) {
  (void)arg;
  static const size_t normal_sizes[] = {100, 64 * KiB, MiB, 8 * MiB};
  static const size_t huge_sizes[] = {100, 64 * KiB, 40 * MiB, 8 * MiB};
  const size_t *sizes = use_huge ? huge_sizes : normal_sizes;
  struct rlimit rl;
  size_t limit = vm_size() + BUDGET;
  rl.rlim_cur = rl.rlim_max = limit;
  if (setrlimit(RLIMIT_AS, &rl) != 0) {
    perror("setrlimit");
    _exit(4);
  }
  printf("limit %zu MiB (VmSize + %zu MiB)\n", limit >> 20, BUDGET >> 20);

  /* 2. fill: the sizes in turn until the first NULL. */
  int n = 0, first_errno = 0;
  size_t total = 0, first_size = 0;
  while (n < MAXBLOCKS) {
    size_t sz = sizes[n % 4];
    errno = 0;
    void *p = xmalloc(sz);
    if (!p) {
      first_errno = errno;
      first_size = sz;
      printf("first NULL: malloc(%zu)\n", sz);
      break;
    }
    fill(p, sz, (uint64_t)n);
    blk[n] = p;
    len[n] = sz;
    total += sz;
    n++;
  }
  printf("allocated %d blocks, %zu MiB before the first NULL\n", n, total >> 20);
  say("fill stopped by NULL (not by the table size)", n < MAXBLOCKS);
  say("first NULL has errno ENOMEM", first_errno == ENOMEM);
  /* NULL means memory is exhausted: most of the budget was handed out. */
  say("at least 3/4 of the budget allocated before the first NULL", total >= BUDGET / 4 * 3);
  /* In exhaust mode, every size from the largest down to 64 KiB is then
   * allocated until it fails too; otherwise the size that failed first is
   * the one that must keep failing. */
  static const size_t down[] = {40 * MiB, 8 * MiB, MiB, 64 * KiB};
  size_t failed = first_size;
  bool again = true;
  for (int k = 0; use_exhaust && k < 4; k++) {
    if (!use_huge && down[k] == 40 * MiB) continue;
    for (;;) {
      errno = 0;
      void *p = n < MAXBLOCKS ? xmalloc(down[k]) : NULL;
      if (!p) {
        if (errno != ENOMEM) {
          printf("malloc(%zu) after exhaustion: NULL with errno %d\n", down[k], errno);
          again = false;
        }
        break;
      }
      fill(p, down[k], (uint64_t)n);
      blk[n] = p;
      len[n] = down[k];
      total += down[k];
      n++;
    }
    failed = down[k];
  }
  if (use_exhaust) printf("%d blocks, %zu MiB when every size from 64 KiB up fails\n", n, total >> 20);
  errno = 0;
  void *m = xmalloc(failed);
  if (m) printf("malloc(%zu) succeeded right after failing\n", failed);
  say("the size that failed fails again, with ENOMEM", m == NULL && errno == ENOMEM && again);
  if (m) xfree(m);
  errno = 0;
  void *c = xcalloc(1, failed);
  say("calloc of that size when exhausted: NULL with ENOMEM", c == NULL && errno == ENOMEM);
  if (c) xfree(c);
  void *sentinel = (void *)(uintptr_t)0x1234, *out = sentinel;
  int rc = xposix_memalign(&out, 4096, failed);
  say("posix_memalign of that size when exhausted: ENOMEM, *out untouched",
      rc == ENOMEM && out == sentinel);
  if (rc == 0) xfree(out);

  /* 3. a failing realloc keeps the block */
  int r = -1;
  for (int i = 0; i < n; i++)
    if (len[i] == 64 * KiB) {
      r = i;
      break;
    }
  if (r >= 0) {
    errno = 0;
    void *q = xrealloc(blk[r], 512 * MiB);
    say("realloc(64 KiB block, 512 MiB) when exhausted: NULL with ENOMEM", q == NULL && errno == ENOMEM);
    if (q) blk[r] = q; /* it moved: the pattern must have moved with it */
    say("the block survives the failed realloc", intact(blk[r], len[r], (uint64_t)r));
  } else {
    say("a 64 KiB block to realloc", false);
  }

  /* 4. */
  int bad = 0;
  for (int i = 0; i < n; i++) bad += !intact(blk[i], len[i], (uint64_t)i);
  printf("%d of %d blocks damaged\n", bad, n);
  say("every live block keeps its bytes after exhaustion", bad == 0);

  /* 5. */
  for (int i = 0; i < n / 2; i++) xfree(blk[i]);
  errno = 0;
  void *big = xmalloc(BUDGET / 4);
  if (!big)
    printf("malloc(%zu MiB) after freeing half: NULL, errno %d (VmSize %zu MiB, limit %zu MiB)\n",
           (BUDGET / 4) >> 20, errno, vm_size() >> 20, limit >> 20);
  say("after freeing the first half, a quarter of the budget can be allocated", big != NULL);
  if (big) {
    memset(big, 0x77, BUDGET / 4);
    say("and written in full", ((volatile char *)big)[BUDGET / 4 - 1] == 0x77);
    xfree(big);
  }

  /* 6. */
  bad = 0;
  for (int i = n / 2; i < n; i++) bad += !intact(blk[i], len[i], (uint64_t)i);
  say("the second half keeps its bytes", bad == 0);
  for (int i = n / 2; i < n; i++) xfree(blk[i]);
  void *p = xmalloc(100);
  say("malloc works after all is freed", p != NULL);
  xfree(p);
  printf("done\n");
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    use_mm |= strcmp(argv[i], "mm") == 0;
    use_huge |= strcmp(argv[i], "huge") == 0;
    use_exhaust |= strcmp(argv[i], "exhaust") == 0;
  }
  static child_t c;
  child_run(&c, oom_child, NULL);
  fputs(c.out, stderr);
  CHECK("the out-of-memory child exits normally", child_exited_ok(&c));
  if (!child_exited_ok(&c)) child_describe(&c, "oom child");
  int steps = 0;
  for (const char *s = c.out; (s = strstr(s, " ok\n")) != NULL; s++) steps++;
  CHECK("no step FAILED", strstr(c.out, "FAILED") == NULL);
  CHECK("the child got to the end", strstr(c.out, "done\n") != NULL);
  CHECK("all 13 steps reported ok", steps == 13);
  return check_summary(use_huge      ? "robust_oom_huge"
                       : use_exhaust ? "robust_oom_exhaust"
                       : use_mm      ? "robust_oom_mm"
                                     : "robust_oom");
}
