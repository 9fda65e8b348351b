/* os.c — everything mmalloc asks of the operating system for memory, time,
 * CPUs, randomness, and its one background thread.
 *
 * Layer: os (the bottom; no other file makes a system call for memory).
 *
 * Address space is reserved inaccessible (PROT_NONE, so it costs no commit
 * charge), committed by mprotect, purged by MADV_DONTNEED (the pages stay
 * mapped and read back as zero), and released by munmap.  Messages go out
 * through one write(2) from a stack buffer: this file never allocates and
 * never takes a lock, so it is safe inside malloc, after a corruption and
 * in a forked child (format.c).
 *
 * Fault injection (MM_FAULT_INJECTION builds only): a test can make the Nth
 * reservation, commit, purge or thread start from now fail, as the OS would
 * under an RLIMIT_AS, an exhausted commit limit, a failing madvise or a
 * full thread table.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "os.h"

#if MM_VALGRIND
#include <valgrind/valgrind.h>
#endif

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

static void os_clock(clockid_t id, struct timespec *t);

/* ---- fault injection ----------------------------------------------------- */
#if MM_FAULT_INJECTION
static _Atomic(long) xfault_countdown[MM_FAULT_KINDS];
static _Atomic(long) xfault_count[MM_FAULT_KINDS];

/* Fail the nth call of `kind` from now (n >= 1), and every later one while
 * `sticky`; n == 0 turns injection off for that kind. */
MM_EXPORT void mm_test_fault_set(int kind, long n, int sticky) {
  if (kind < 0 || kind >= MM_FAULT_KINDS) return;
  atomic_store_relaxed(&xfault_countdown[kind], sticky ? -n : n);
}

MM_EXPORT long mm_test_fault_count(int kind) {
  if (kind < 0 || kind >= MM_FAULT_KINDS) return -1;
  return atomic_load_relaxed(&xfault_count[kind]);
}

/* A test's look at a move the moment it is done: old is the range the
 * pages left (it must still be mapped: test/trust/remap_hole.c). */
static void (*_Atomic xremap_hook)(void *old, size_t size);
MM_EXPORT void mm_test_remap_hook_set(void (*hook)(void *old, size_t size)) {
  atomic_store_relaxed(&xremap_hook, hook);
}

static void remap_hook(void *old, size_t size) {
  void (*hook)(void *, size_t) = atomic_load_relaxed(&xremap_hook);
  if (hook) hook(old, size);
}

static bool os_fault(int kind) {
  atomic_fetch_add_relaxed(&xfault_count[kind], 1);
  long c = atomic_load_relaxed(&xfault_countdown[kind]);
  if (c == 0) return false;
  if (c > 0) { /* one-shot: fail when the count reaches 1 */
    if (c == 1) {
      atomic_store_relaxed(&xfault_countdown[kind], 0);
      return true;
    }
    atomic_store_relaxed(&xfault_countdown[kind], c - 1);
    return false;
  }
  /* sticky: -n counts up to -1, then fails for ever */
  if (c == -1) return true;
  atomic_store_relaxed(&xfault_countdown[kind], c + 1);
  return false;
}
#else
static inline bool os_fault(int kind) {
  (void)kind;
  return false;
}
static inline void remap_hook(void *old, size_t size) {
  (void)old;
  (void)size;
}
#endif

/* ---- address space ------------------------------------------------------- */

/* Reserve `size` bytes at an address q with (q + offset) aligned to `align`
 * (a power of two >= the OS page), inaccessible.  NULL when the OS refuses.
 * The kernel hands out addresses top-down, next to the last mapping, so an
 * unaligned first try is usually followed by a free aligned spot just below
 * it; only when that fails do we over-reserve by the alignment and trim
 * (which needs the extra address space for a moment: under an RLIMIT_AS it
 * may not be there). */
static void *reserve(size_t size, size_t align, size_t offset, uintptr_t hint) {
  if (os_fault(MM_FAULT_RESERVE)) return NULL;
  if (size + align < size) return NULL;
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  uintptr_t mask = (uintptr_t)align - 1;
  if (hint && ((hint + offset) & mask) == 0) {
    char *h = mmap((void *)hint, size, PROT_NONE, flags | MAP_FIXED_NOREPLACE, -1, 0);
    if (h == (char *)hint) return h;
    if (h != MAP_FAILED) munmap(h, size); /* an old kernel took it as a hint */
  }
  char *p = mmap(NULL, size, PROT_NONE, flags, -1, 0);
  if (p == MAP_FAILED) return NULL;
  if ((((uintptr_t)p + offset) & mask) == 0) return p;
  munmap(p, size);
  uintptr_t down = (((uintptr_t)p + offset) & ~mask) - offset;
  uintptr_t tries[2] = {down, down + align};
  for (int i = 0; i < 2; i++) {
    if (tries[i] < (uintptr_t)MM_DATABLOCK_SIZE << 4) continue; /* not near NULL */
    char *q = mmap((void *)tries[i], size, PROT_NONE, flags | MAP_FIXED_NOREPLACE, -1, 0);
    if (q == (char *)tries[i]) return q;
    if (q != MAP_FAILED) munmap(q, size); /* an old kernel took it as a hint */
  }
  size_t span = size + align;
  p = mmap(NULL, span, PROT_NONE, flags, -1, 0);
  if (p == MAP_FAILED) return NULL;
  uintptr_t start = ((((uintptr_t)p + offset) + mask) & ~mask) - offset;
  if (start < (uintptr_t)p) start += align;
  size_t head = start - (uintptr_t)p;
  size_t tail = span - head - size;
  if (head) munmap(p, head);
  if (tail) munmap((char *)start + size, tail);
  return (void *)start;
}

void *os_reserve_offset(size_t size, size_t align, size_t offset) {
  return reserve(size, align, offset, 0);
}

void *os_reserve(size_t size, size_t align) { return reserve(size, align, 0, 0); }

void *os_reserve_above(size_t size, size_t align, uintptr_t hint) {
  return reserve(size, align, 0, hint);
}

/* Try to extend a reservation in place: reserve [p, p + size) exactly.
 * Fails (false) when anything is mapped there. */
bool os_reserve_at(void *p, size_t size) {
  if (os_fault(MM_FAULT_RESERVE)) {
    errno = ENOMEM;
    return false;
  }
  void *q = mmap(p, size, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
                 -1, 0);
  if (q == MAP_FAILED) return false; /* errno: EEXIST (taken) or ENOMEM */
  if (q != p) { /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
    munmap(q, size);
    errno = EEXIST;
    return false;
  }
  return true;
}

void os_release(void *p, size_t size) {
  if (munmap(p, size) != 0)
    os_message("mmalloc: munmap(%p, %zu) failed: errno %d\n", p, size, errno);
}

/* Make [p, p + size) readable and writable (charged to the commit limit). */
bool os_commit(void *p, size_t size) {
  if (os_fault(MM_FAULT_COMMIT)) return false;
  return mprotect(p, size, PROT_READ | PROT_WRITE) == 0;
}

/* Give the physical pages of [p, p + size) back; they read as zero after. */
bool os_purge(void *p, size_t size) {
  if (os_fault(MM_FAULT_PURGE)) return false;
  return madvise(p, size, MADV_DONTNEED) == 0;
}

size_t os_resident_bytes(const void *p, size_t size) {
  unsigned char vec[4096]; /* one byte per OS page */
  long ps = sysconf(_SC_PAGESIZE);
  size_t page = ps > 0 ? (size_t)ps : MM_DATABLOCK_SIZE;
  const size_t chunk = sizeof(vec) * page;
  size_t resident = 0;
  for (size_t off = 0; off < size; off += chunk) {
    size_t n = size - off < chunk ? size - off : chunk;
    if (mincore((char *)p + off, n, vec) != 0) continue;
    for (size_t i = 0; i < (n + page - 1) / page; i++) resident += (vec[i] & 1) * page;
  }
  return resident < size ? resident : size;
}

/* Ask for (or against) transparent huge pages on a committed range.
 * Advice only: failure (an old kernel, THP off) changes nothing.  whole:
 * the range is a mapping's data of its own (a huge block), advised as it
 * is, so that it stays one kernel mapping (mremap moves one mapping at a
 * time); otherwise only the whole 2 MiB pages inside it, leaving the
 * neighbours in a shared slot alone. */
/* A transparent huge page (x86-64, and the kernel's default elsewhere). */
#define MM_OS_HUGE_PAGE ((uintptr_t)2 << 20)

void os_hugepages(void *p, size_t size, bool on, bool whole) {
#ifdef MADV_HUGEPAGE
  uintptr_t lo = (uintptr_t)p, hi = (uintptr_t)p + size;
  if (!whole) {
    lo = (lo + MM_OS_HUGE_PAGE - 1) & ~(MM_OS_HUGE_PAGE - 1);
    hi &= ~(MM_OS_HUGE_PAGE - 1);
  }
  if (hi > lo) madvise((void *)lo, hi - lo, on ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#else
  (void)p; (void)size; (void)on; (void)whole;
#endif
}

/* ---- whether fresh huge pages pay here ---------------------------------------
 * A transparent huge page's first write makes the kernel clear 2 MiB: on
 * bare metal, and in guests whose host backs their memory, 0.1-0.4 ms,
 * less than the 512 faults of small pages it replaces.  In a guest whose
 * memory the host has not touched yet, the host faults in the 2 MiB below
 * it first: 5-10 ms on the project's VM, ten times the small pages' cost,
 * and the same machine can be either from one minute to the next.  So the
 * first write of a fresh huge page is timed (hugepage_probe: two clock
 * reads beside a fault the program would take anyway) and a slow one turns
 * the advice off for a while.  xhuge_slow_until: os_now_ms() before which
 * no fresh huge pages are asked for, or 0 (never odd when set, so that 0
 * stays "none"). */
static _Atomic(uint32_t) xhuge_slow_until;
static _Atomic(uint64_t) xhuge_probes, xhuge_slow;

static bool hugepages_slow_now(void) {
  uint32_t until = atomic_load_relaxed(&xhuge_slow_until);
  return until != 0 && !time_reached(os_now_ms(), until);
}

/* Time the first write of the first whole huge page of [p, p + size), if
 * none of its small pages is resident (only a write that faults in a whole
 * huge page says anything; a purged block's may be resident in part).  A
 * slow one advises the rest of the range back to small pages and starts
 * the slow period.  The range's content must not matter. */
static void hugepage_probe(void *p, size_t size) {
  uintptr_t first = ((uintptr_t)p + MM_OS_HUGE_PAGE - 1) & ~(MM_OS_HUGE_PAGE - 1);
  uintptr_t end = (uintptr_t)p + size;
  if (first + MM_OS_HUGE_PAGE > end) return;
#if MM_VALGRIND
  if (RUNNING_ON_VALGRIND) return; /* the block is not the program's yet: memcheck would object */
#endif
  unsigned char resident[MM_OS_HUGE_PAGE / 4096];
  if (mincore((void *)first, MM_OS_HUGE_PAGE, resident) != 0) return;
  for (size_t i = 0; i < sizeof(resident); i++)
    if (resident[i] & 1) return;
  struct timespec a, b;
  os_clock(CLOCK_MONOTONIC, &a);
  *(volatile char *)first = 0; /* not handed out yet, and its content does not matter */
  os_clock(CLOCK_MONOTONIC, &b);
  int64_t us = (int64_t)(b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000;
  atomic_fetch_add_relaxed(&xhuge_probes, 1);
  if (us < MM_HUGE_PAGE_SLOW_US && !os_fault(MM_FAULT_HUGE_SLOW)) return;
  atomic_fetch_add_relaxed(&xhuge_slow, 1);
  atomic_store_relaxed(&xhuge_slow_until, (os_now_ms() + MM_HUGE_PAGE_RECHECK_MS) | 1);
  uintptr_t rest = first + MM_OS_HUGE_PAGE;
  if (end > rest) os_hugepages((void *)rest, end - rest, false, false);
}

void os_hugepages_block(void *p, size_t size, bool whole, bool probe) {
  if (hugepages_slow_now()) {
    os_hugepages(p, size, false, whole);
    return;
  }
  os_hugepages(p, size, true, whole);
  if (probe) hugepage_probe(p, size);
}

void os_hugepage_probe_stats(uint64_t *probes, uint64_t *slow) {
  *probes = atomic_load_relaxed(&xhuge_probes);
  *slow = atomic_load_relaxed(&xhuge_slow);
}

/* Guard pages (secure mode): Linux 6.13's lightweight guard regions, which
 * do not split mappings; on older kernels, mprotect. */
#define MM_MADV_GUARD_INSTALL 102
#define MM_MADV_GUARD_REMOVE 103
static _Atomic(int) xguard_madvise_works = 1;

bool os_guard_is_light(void) { return atomic_load_relaxed(&xguard_madvise_works); }

bool os_guard(void *p, size_t size, bool on) {
  if (atomic_load_relaxed(&xguard_madvise_works)) {
    if (madvise(p, size, on ? MM_MADV_GUARD_INSTALL : MM_MADV_GUARD_REMOVE) == 0) return true;
    if (errno != EINVAL) return false;
    atomic_store_relaxed(&xguard_madvise_works, 0);
  }
  return mprotect(p, size, on ? PROT_NONE : PROT_READ | PROT_WRITE) == 0;
}

/* Move the pages of [old, old + size) onto [to, to + size) (a range of
 * ours: whatever was there goes), without copying.  [old, old + size) stays
 * mapped, empty (MREMAP_DONTUNMAP): a plain mremap would leave a hole that
 * another thread's mmap could take at once, and the caller, unmapping or
 * moving back into its old range after, would then tear out that thread's
 * memory.  False on failure (nothing moved), also on kernels before 5.7,
 * which do not know the flag: the caller then copies. */
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
bool os_remap_to(void *old, size_t size, void *to) {
  if (os_fault(MM_FAULT_RESERVE)) return false;
  if (!os_remap_back(old, size, to)) return false;
  remap_hook(old, size);
  return true;
}

bool os_remap_back(void *old, size_t size, void *to) {
  void *q = mremap(old, size, size, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, to);
  return q == to;
}

/* ---- clock, CPUs, randomness --------------------------------------------- */

/* The clock and the CPU mask are read without libc's clock_gettime and
 * sched_getaffinity.  A program's resident memory counts every page of
 * libc's text it has touched, and the kernel maps a read fault's cached
 * neighbours with it, 64 KiB at a time: those two functions each sit in a
 * window of libc that nothing else a small program runs at start-up
 * touches, about 124 KiB of resident text between them (docs/design.md,
 * "Start-up memory").  The clock is the kernel's own user-space function
 * (the vDSO, found once through the auxiliary vector; a few ns, as libc's
 * is), the mask a raw system call made once at start-up. */

typedef int (*os_clock_fn)(clockid_t, struct timespec *);
static _Atomic(os_clock_fn) xvdso_clock; /* NULL: libc's clock_gettime */

/* The address of the vDSO's function `name`, or NULL: its dynamic symbol
 * table walked once (DT_HASH gives the number of symbols). */
static void *vdso_symbol(const char *name) {
  uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  if (!base) return NULL;
  const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) return NULL;
  const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
  uintptr_t bias = 0;
  const ElfW(Dyn) *dyn = NULL;
  bool loaded = false;
  for (unsigned i = 0; i < eh->e_phnum; i++) {
    if (ph[i].p_type == PT_LOAD && !loaded) {
      bias = base + ph[i].p_offset - ph[i].p_vaddr;
      loaded = true;
    } else if (ph[i].p_type == PT_DYNAMIC) {
      dyn = (const ElfW(Dyn) *)(base + ph[i].p_offset);
    }
  }
  if (!loaded || !dyn) return NULL;
  const ElfW(Sym) *sym = NULL;
  const char *str = NULL;
  const uint32_t *hash = NULL;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_SYMTAB) sym = (const ElfW(Sym) *)(bias + dyn->d_un.d_ptr);
    if (dyn->d_tag == DT_STRTAB) str = (const char *)(bias + dyn->d_un.d_ptr);
    if (dyn->d_tag == DT_HASH) hash = (const uint32_t *)(bias + dyn->d_un.d_ptr);
  }
  if (!sym || !str || !hash) return NULL;
  for (uint32_t i = 0; i < hash[1]; i++) /* hash[1]: the number of symbols */
    if (ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC && sym[i].st_shndx != SHN_UNDEF &&
        strcmp(str + sym[i].st_name, name) == 0)
      return (void *)(bias + sym[i].st_value);
  return NULL;
}

static void os_clock(clockid_t id, struct timespec *t) {
  os_clock_fn f = atomic_load_relaxed(&xvdso_clock);
  if (!f || f(id, t) != 0) clock_gettime(id, t);
}

bool os_clock_is_vdso(void) { return atomic_load_relaxed(&xvdso_clock) != NULL; }

static struct timespec os_epoch;

/* The coarse clock (a jiffy of resolution, a few ns to read) is plenty for
 * purge delays and heartbeats. */
#ifdef CLOCK_MONOTONIC_COARSE
#define MM_CLOCK CLOCK_MONOTONIC_COARSE
#else
#define MM_CLOCK CLOCK_MONOTONIC
#endif

void os_init(void) {
  void *f = vdso_symbol("__vdso_clock_gettime"); /* x86-64's name */
  if (!f) f = vdso_symbol("__kernel_clock_gettime"); /* arm64's and others' */
  atomic_store_relaxed(&xvdso_clock, (os_clock_fn)f);
  os_clock(MM_CLOCK, &os_epoch);
}

/* Milliseconds since os_init, wrapping after 49 days (compare with
 * time_reached()). */
uint32_t os_now_ms(void) {
  struct timespec t;
  os_clock(MM_CLOCK, &t);
  int64_t ms = (int64_t)(t.tv_sec - os_epoch.tv_sec) * 1000 +
               (t.tv_nsec - os_epoch.tv_nsec) / 1000000;
  return (uint32_t)ms;
}

void os_yield(void) { sched_yield(); }

int os_current_cpu(void) {
  int c = sched_getcpu();
  return c < 0 ? 0 : c;
}

/* The CPUs this process may run on: the affinity mask's bits (the system
 * call returns how many bytes of the mask it wrote). */
int os_cpu_count(void) {
  uint64_t mask[128] = {0}; /* 8,192 CPUs */
  long got = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
  int n = 0;
  for (long i = 0; got > 0 && i < got / 8; i++)
    for (uint64_t m = mask[i]; m; m &= m - 1) n++; /* not libgcc's popcount: its text is elsewhere */
  if (n > 0) return n;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? (int)online : 1;
}

uint64_t os_physical_memory(void) {
  int saved = errno; /* free() may call it, and leaves errno alone */
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE); /* sysinfo(2): no allocation */
  errno = saved;
  return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

uint64_t os_random(void) {
  uint64_t r = 0;
  if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
    struct timespec t;
    os_clock(CLOCK_MONOTONIC, &t);
    r = (uint64_t)t.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)&t ^
        ((uint64_t)getpid() << 32);
  }
  return r;
}

/* ---- the background thread -------------------------------------------------- */

bool os_thread_start(void *(*fn)(void *), void *arg, const char *name) {
  if (os_fault(MM_FAULT_THREAD)) return false;
  int saved = errno; /* the program's errno is not ours to change */
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return false;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 << 10); /* it needs little; reserved, not resident */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits the mask */
  pthread_t t;
  int err = pthread_create(&t, &attr, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (err == 0) pthread_setname_np(t, name);
  errno = saved;
  return err == 0;
}

void os_wait(_Atomic(uint32_t) *word, uint32_t expected, uint32_t timeout_ms) {
  struct timespec t = {(time_t)(timeout_ms / 1000), (long)(timeout_ms % 1000) * 1000000L};
  syscall(SYS_futex, (void *)word, FUTEX_WAIT_PRIVATE, expected, timeout_ms ? &t : NULL, NULL, 0);
}

void os_wake(_Atomic(uint32_t) *word) {
  int saved = errno;
  syscall(SYS_futex, (void *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  errno = saved;
}
