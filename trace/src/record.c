/* record.c — libmmtrace.so, the recorder: preloaded into a program, it
 * records every call of the malloc family and of the C++ operators new and
 * delete, and forwards each to the next definition of the symbol (glibc,
 * or whatever allocator is preloaded after it), so a program is traced on
 * the allocator it normally uses.  It also wraps pthread_create, so that a
 * new thread is registered when it starts (its time before its first call
 * is in the trace), and ends the exiting thread at exit.  The file format
 * is trace_format.h.  It loads nothing into the program beyond the C
 * library (not even the unwinder its frames name: see _Unwind_Resume), and
 * leaves its own library out of the memory it records (put_memory).
 *
 * The recording path (one call of the program):
 *   1. thread state from TLS (registered on the thread's first call), and
 *      the time-stamp counter: the call's entry (stamp), the one clock read
 *      of most calls, and in a dense burst of one call in 8 (a read costs
 *      12-18 ns, as much as a malloc; "Stamping" below);
 *   2. for a release, the block's id from the shadow map, read and cleared
 *      BEFORE the real call (after it the address may already belong to a
 *      block another thread got);
 *   3. the real call;
 *   4. the event appended to the thread's 32 KiB buffer (the ticks since
 *      the previous call's entry, the arguments), the id of a new block
 *      written into the shadow map.  A call on a block of MMT_TIMED_BYTES
 *      or more (which may map, copy or zero memory), a fork, and the call
 *      after a long gap are TIMED: the counter is read again after the real
 *      call and the event carries the duration.  For the others, one in 16
 *      reads the counter at the end of this step, and the thread's average
 *      (busy: the allocator's and the recorder's ticks per call) goes into
 *      each chunk, for the replay to take off the gaps.  After a long gap
 *      (LONG_GAP_NS or more) the thread's CPU time is read too (a system
 *      call, rare by construction) and written as a CPU event before the
 *      call's: the reader tells the gap's computing from its blocking;
 *   5. a full buffer is written as one chunk with one write(2).
 * In a dense burst, an unstamped malloc, calloc, free, or operator new or
 * delete without alignment, of a small block the thread owns, takes a
 * shorter path ("the fast path" below), which writes its event before the
 * real call.
 * No lock and no atomic read-modify-write on it: the buffer belongs to the
 * thread, and a shadow entry is written by the thread that got the block
 * and read by the one that frees it, which the program itself ordered
 * after the allocation (it had to hand the pointer over); the allocator
 * orders a free before the next allocation of the same address.  The exceptions
 * are rare and off the per-call path: a thread's registration (a counter,
 * a lock on the state pool), the first block in each 16 MiB of address
 * space (a lock to create the shadow leaf), and a flush (one exchange on
 * the buffer's flag, once per 32 KiB).
 *
 * Shadow map: address >> 24 indexes a table of leaves; a leaf has one
 * 64-bit entry per 8 bytes of its 16 MiB (every allocator returns blocks
 * aligned to 8 at least), mapped MAP_NORESERVE so only touched pages cost
 * memory.  Its first half holds the entries of addresses that are
 * multiples of 16 (nearly every block: the x86-64 and AArch64 ABIs make
 * malloc align to 16 from 16 bytes up), one per 16 bytes, the second half
 * those of the others.  So a heap of 16-aligned blocks has a shadow half
 * its size (8 bytes per 16), not as large as itself, and a free misses the
 * cache less often (cachegrind on a CPython run: the recorder's free
 * missed the first-level cache 25% less often than with one entry per 8
 * bytes).  At most one 4 KiB shadow page per 8 KiB of such a heap.
 * Entry: seq (37 bits) << 27 | large (1 bit) << 26 | (thread + 1) (22 bits)
 * << 4 | epoch (4 bits); 0 means no traced block starts there.  large: the block has MMT_TIMED_BYTES or more, so its
 * release is timed.  The epoch changes in a forked child, so blocks the
 * child inherited read as unknown there.  A block past a thread's 2^37th,
 * or of a thread past the 2^22nd, gets no entry: its release is recorded
 * with its address, as a pointer the trace never saw.
 *
 * Flushes: the owner flushes its buffer when full and at thread exit; any
 * thread may flush every thread's buffer (at exit, exec, a fatal signal).
 * Both hold the buffer's `flushing` flag; the owner appends without it and
 * publishes (bytes, events) with one release store after each event, so a
 * foreign flusher writes only whole events, and records how much it took
 * (`taken`) so the owner never writes them twice.
 *
 * Files: $MMTRACE_OUT names the trace.  The process whose pid is
 * $MMTRACE_ROOT writes $MMTRACE_OUT itself (created exclusively; an image
 * it exec'd later finds it there), every other process image writes
 * $MMTRACE_OUT.<pid> (or .<pid>.<k> when that exists).  Without
 * $MMTRACE_OUT the library only forwards.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "trace_format.h"

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- the real functions ------------------------------------------------ */

static struct {
  void *(*malloc)(size_t);
  void (*free)(void *);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  int (*posix_memalign)(void **, size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  void *(*memalign)(size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
  void *(*reallocarray)(void *, size_t, size_t);
  void (*free_sized)(void *, size_t);                   /* C23's: NULL in a C library without */
  void (*free_aligned_sized)(void *, size_t, size_t);
  void *(*libc_malloc)(size_t);                         /* glibc's own names: NULL elsewhere */
  void (*libc_free)(void *);
  void *(*libc_calloc)(size_t, size_t);
  void *(*libc_realloc)(void *, size_t);
  void *(*libc_memalign)(size_t, size_t);
  void *(*libc_valloc)(size_t);
  void *(*libc_pvalloc)(size_t);
  pid_t (*fork)(void);
  int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  int (*execve)(const char *, char *const[], char *const[]);
  int (*execvpe)(const char *, char *const[], char *const[]);
} real;

/* 0 before init, 1 while dlsym runs (its own allocations come from the
 * bootstrap arena), 2 after. */
static atomic_int init_state;
static atomic_bool tracing_on;        /* $MMTRACE_OUT was set and the file opened */
#define tracing atomic_load_explicit(&tracing_on, memory_order_relaxed)

static _Alignas(64) unsigned char boot_arena[1 << 16];
static atomic_size_t boot_used;

static void *boot_alloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  size_t at = atomic_fetch_add(&boot_used, n);
  if (at + n > sizeof boot_arena) return NULL;
  return boot_arena + at;
}
static bool is_boot(const void *p) {
  return (const unsigned char *)p >= boot_arena && (const unsigned char *)p < boot_arena + sizeof boot_arena;
}

static void die(const char *msg) {
  ssize_t r = write(2, msg, strlen(msg));
  (void)r;
  abort();
}

/* ---- thread state -------------------------------------------------------- */

#define BUF_BYTES 32768
#define EVENT_MAX (1 + 6 * MMT_VARINT_MAX)

typedef struct tstate {
  /* owner thread only */
  uint64_t tidx;                     /* this thread's index in the trace */
  uint64_t entry;                    /* when the call being recorded began */
  uint64_t last_entry;               /* when the thread's previous call began */
  uint64_t last_done;                /* when it returned if it was timed, else last_entry */
  _Atomic uint64_t busy;             /* ticks from an untimed call's entry to the end of its
                                        recording (sampled average; each chunk says it, for
                                        the replay to take off the deltas; relaxed: a foreign
                                        flush reads it) */
  uint64_t cpu0;                     /* the thread's CPU time (ns) at its thread_begin */
  uint32_t sample;                   /* stamped untimed events since the last sample of busy */
  uint32_t ev_events;                /* events in the one being appended (2 with a CPU event) */
  bool ev_timed;                     /* the one being appended carries its dur */
  bool stamped;                      /* the call being recorded read the clock (entry is its) */
  uint32_t skip;                     /* calls that may still go unstamped (a dense burst) */
  uint32_t skip_set;                 /* skip as the last stamped call set it: the calls since
                                        that one, counting this one (its window), are
                                        1 + skip_set - skip */
  uint64_t nblocks;                  /* blocks it has been given: the next id's n */
  uint64_t tag;                      /* the shadow entries of its blocks, less seq and large
                                        (thread + 1, epoch); ~0 when it gets none */
  uint64_t seq_limit;                /* its blocks get entries while nblocks is below it (0: none) */
  uint64_t pending;                  /* the fill that publishes the event being recorded
                                        (the fast path's, across its real call) */
  uintptr_t leaf_key;                /* address >> SH_LEAF_SHIFT of the shadow leaf last used */
  _Atomic uint64_t *leaf;            /* that leaf (~0 and NULL before the first) */
  uint64_t last_remote;              /* n of its previous reference to another thread's block */
  unsigned rounds;                   /* pthread key destructor rounds seen */
  /* owner or a flusher holding `flushing` */
  uint64_t chunk_seq;
  uint32_t taken_bytes, taken_events;/* already written by a foreign flush */
  atomic_int flushing;
  atomic_bool active;                /* a live thread owns it */
  /* written by the owner (release), read by flushers (acquire):
   * bytes | events << 32 of the buffer */
  _Atomic uint64_t fill;
  struct tstate *all_next;           /* every state ever made; const once linked */
  struct tstate *free_next;          /* pool free list, under pool_lock */
  void *(*start_fn)(void *);         /* pthread_create: the thread's function and argument, */
  void *start_arg;                   /* for thread_start */
  unsigned char buf[BUF_BYTES + EVENT_MAX];
} tstate_t;

/* The thread's recorder state, in one block of static TLS, so that a call
 * finds all three through one offset. */
static __thread struct {
  tstate_t *state;                   /* registered (enter()), NULL before and after */
  int depth;                         /* inside a traced call */
  bool done;                         /* thread finished */
} tls __attribute__((tls_model("initial-exec")));

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static tstate_t *pool_free;
static _Atomic(tstate_t *) all_states;
static atomic_uint_fast64_t next_tidx;
static pthread_key_t exit_key;

static _Atomic int trace_fd = -1;    /* the trace file, at a high number (trace_fd_high) */
static char trace_path[4096];       /* its name, to open it again (trace_fd_ours) */
static dev_t trace_dev;             /* and its identity */
static ino_t trace_ino;
static pid_t trace_pid;              /* the process that writes trace_fd (a vfork child must not) */
static uint64_t start_ticks, start_ns;   /* the trace's time zero, in both clocks */
static unsigned epoch;               /* 1..15: changes in each forked child */
static atomic_bool closed;           /* the end record is written: no more chunks */
static atomic_bool ending;           /* one thread writes the end (exit or fatal signal) */
static atomic_uint_fast64_t chunks_written;

static inline uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Event times are ticks: the time-stamp counter on x86-64 (12 ns a read
 * here against 30 for clock_gettime, which was a fifth of the recorder's
 * cost), nanoseconds elsewhere.  Each chunk carries the pair (ns, ticks)
 * since the start, read when it is written, from which the reader converts. */
#if defined(__x86_64__)
#include <x86intrin.h>
#define CLOCK_NAME "tsc"
static inline uint64_t now_ticks(void) { return __rdtsc(); }
#else
#define CLOCK_NAME "monotonic"
static inline uint64_t now_ticks(void) { return mono_ns(); }
#endif

/* Both clocks now, read so that they agree: the ticks read on both sides
 * of the nanoseconds, again while the two ticks are far apart (the thread
 * was interrupted or moved between the reads), their midpoint taken.
 * With the two read one after the other, a 3 ms stretch of one thread's
 * calls was once dated up to 18 us off the other threads' times (most
 * likely one interrupted pair); read this way, no longer. */
#define PAIR_TICKS 4000u
static void clock_pair(uint64_t *ns, uint64_t *ticks) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 8 && best > PAIR_TICKS; i++) {
    uint64_t a = now_ticks(), n = mono_ns(), b = now_ticks();
    if (b >= a && b - a < best) {
      best = b - a;
      *ns = n;
      *ticks = a + (b - a) / 2;
    }
  }
  if (best == UINT64_MAX) {           /* the counter went back every time: take the last */
    *ns = mono_ns();
    *ticks = now_ticks();
  }
}

/* A gap of LONG_GAP_NS or more gets the thread's CPU time (a CPU event).
 * long_ticks is that many ticks: 100,000 (100 us at 1 GHz, less at a
 * faster counter) until a chunk is written 1 ms or more after the start,
 * which gives the counter's rate. */
#define LONG_GAP_NS 100000u
static _Atomic uint64_t long_ticks = LONG_GAP_NS;

/* ---- writing ------------------------------------------------------------- */

/* The trace file's descriptor is the recorder's, but the number is the
 * program's to use: a shell's `exec 3>file` (dup2 onto 3), a daemon closing
 * every descriptor, a program that reuses a number it believes free.  So
 * the file is moved to a number the program is unlikely to pick (three
 * quarters of the descriptor limit, at most 1000), and before each write
 * the recorder checks that the number still names its file (fstat: the
 * same device and inode).  If it does not (the program closed it, or put
 * its own file there), the recorder opens its file again by name and goes
 * on at a new number, leaving the old one to the program: nothing is
 * written into a file of the program's, none of the trace is lost.  (A
 * program that replaces the descriptor between the check and the write
 * can still receive one chunk; that window is a few instructions.) */
static int trace_fd_high(int fd) {
  struct rlimit rl;
  long lo = 1000;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (long)(rl.rlim_cur / 4 * 3) < lo)
    lo = (long)(rl.rlim_cur / 4 * 3);
  if (lo <= fd) return fd;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)lo);
  if (high < 0) return fd;                      /* none free up there: keep the low one */
  close(fd);
  return high;
}

static bool fd_is_trace(int fd) {
  struct stat st;
  return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == trace_dev && st.st_ino == trace_ino;
}

/* The trace file's descriptor, checked (above); -1 (errno set) if the file
 * cannot be had again. */
static int trace_fd_ours(void) {
  int fd = atomic_load(&trace_fd);
  if (LIKELY(fd_is_trace(fd))) return fd;
  int again = open(trace_path, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (again < 0) return -1;
  if (!fd_is_trace(again)) {                    /* another file by that name now */
    close(again);
    errno = ESTALE;
    return -1;
  }
  again = trace_fd_high(again);
  if (!atomic_compare_exchange_strong(&trace_fd, &fd, again)) {
    close(again);                               /* another thread did it first: use its */
    return fd;
  }
  return again;
}

/* One record, appended whole; false if writing failed, after cutting the
 * part of it that was written (a file past its size limit or its disk's
 * room keeps whole records only, which `--partial` reads). */
static bool write_all(const struct iovec *iov, int n) {
  int fd = trace_fd_ours();
  if (fd < 0) return false;
  struct iovec v[4];
  memcpy(v, iov, sizeof(struct iovec) * (size_t)n);
  int i = 0;
  off_t done = 0;
  while (i < n) {
    ssize_t w = writev(fd, v + i, n - i);
    if (w < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      struct stat st;
      if (done && fstat(fd, &st) == 0 && st.st_size >= done) {
        int rc = ftruncate(fd, st.st_size - done);
        (void)rc;
      }
      errno = e;
      return false;
    }
    done += w;
    while (i < n && (size_t)w >= v[i].iov_len) { w -= (ssize_t)v[i].iov_len; i++; }
    if (i < n) { v[i].iov_base = (char *)v[i].iov_base + w; v[i].iov_len -= (size_t)w; }
  }
  return true;
}

static void write_failed(void) {
  static atomic_bool said;
  if (!atomic_exchange(&said, true)) {
    char msg[160];
    int n = snprintf(msg, sizeof msg, "mmtrace: writing the trace failed (%s); the rest of the run is not recorded\n",
                     strerror(errno));
    ssize_t r = write(2, msg, (size_t)n);
    (void)r;
  }
  atomic_store(&tracing_on, false);
}

/* One chunk: the events [from, from + bytes) of t's buffer. Caller holds
 * t->flushing. */
static void write_chunk(tstate_t *t, uint32_t from, uint32_t bytes, uint32_t events, uint64_t busy) {
  if (!bytes || atomic_load(&closed) || trace_fd < 0 || !tracing) return;   /* !tracing: a write failed */
  unsigned char hdr[1 + 7 * MMT_VARINT_MAX + 8], *q = hdr;
  *q++ = MMT_REC_CHUNK;
  q = mmt_put_varint(q, t->tidx);
  q = mmt_put_varint(q, t->chunk_seq);
  q = mmt_put_varint(q, events);
  q = mmt_put_varint(q, bytes);
  uint64_t ticks, ns;
  clock_pair(&ns, &ticks);
  ticks -= start_ticks;
  ns -= start_ns;
  if (ns >= 1000000u)
    atomic_store_explicit(&long_ticks, (uint64_t)((unsigned __int128)ticks * LONG_GAP_NS / ns),
                          memory_order_relaxed);
  q = mmt_put_varint(q, ns);
  q = mmt_put_varint(q, ticks);
  q = mmt_put_varint(q, busy);
  mmt_put_u64(q, mmt_sum_more(mmt_sum_more(MMT_SUM_SEED, hdr, (size_t)(q - hdr)), t->buf + from, bytes));
  q += 8;
  struct iovec iov[2] = {{hdr, (size_t)(q - hdr)}, {t->buf + from, bytes}};
  if (!write_all(iov, 2)) write_failed();
  t->chunk_seq++;
  atomic_fetch_add_explicit(&chunks_written, 1, memory_order_relaxed);
}

static void flag_take(tstate_t *t) {
  while (atomic_exchange_explicit(&t->flushing, 1, memory_order_acquire))
    sched_yield();
}
static void flag_drop(tstate_t *t) { atomic_store_explicit(&t->flushing, 0, memory_order_release); }

/* The owner's flush: everything not yet taken, then an empty buffer. */
static void flush_own(tstate_t *t) {
  flag_take(t);
  uint64_t f = atomic_load_explicit(&t->fill, memory_order_relaxed);
  uint32_t bytes = (uint32_t)f, events = (uint32_t)(f >> 32);
  write_chunk(t, t->taken_bytes, bytes - t->taken_bytes, events - t->taken_events,
              atomic_load_explicit(&t->busy, memory_order_relaxed));
  t->taken_bytes = t->taken_events = 0;
  atomic_store_explicit(&t->fill, 0, memory_order_relaxed);
  flag_drop(t);
}

/* Another thread's flush (exit, exec, fatal signal): the whole events
 * published so far; skipped if that buffer is being flushed right now. */
static void flush_foreign(tstate_t *t) {
  if (atomic_exchange_explicit(&t->flushing, 1, memory_order_acquire)) return;
  uint64_t f = atomic_load_explicit(&t->fill, memory_order_acquire);
  uint32_t bytes = (uint32_t)f, events = (uint32_t)(f >> 32);
  if (bytes > t->taken_bytes) {
    write_chunk(t, t->taken_bytes, bytes - t->taken_bytes, events - t->taken_events,
                atomic_load_explicit(&t->busy, memory_order_relaxed));
    t->taken_bytes = bytes;
    t->taken_events = events;
  }
  flag_drop(t);
}

/* in_signal: the handler may have interrupted this thread inside its own
 * flush or event, so its buffer too is flushed as a foreign one. */
static void flush_all(bool in_signal) {
  tstate_t *self = tls.state;
  for (tstate_t *t = atomic_load(&all_states); t; t = t->all_next) {
    if (!atomic_load(&t->active)) continue;
    if (t == self && !in_signal) flush_own(t); else flush_foreign(t);
  }
}

/* ---- events ---------------------------------------------------------------- */

/* Stamping.  A clock read costs 12-18 ns (the time-stamp counter on the
 * 2-core VM and on a 16-core KVM guest), as much as the rest of the
 * recorder, so a thread in a dense burst reads it on one call in
 * SKIP_CALLS + 1: after a stamped call whose window (the calls since the
 * previous stamp) averaged less than a DENSE_DIV-th of a long gap (1.6 us)
 * per call, the next SKIP_CALLS calls go unstamped unless they are timed
 * or release another thread's block (block_foreign).
 * An unstamped call's delta is 0 and its time is its stamped
 * predecessor's; the next stamped call's delta spans the window, so the
 * thread's total time is exact and only its split inside the window is
 * lost.  A long gap inside a window shows at the window's end, at most
 * SKIP_CALLS calls late. */
#define SKIP_CALLS 7
#define DENSE_DIV 64
/* -DMMT_ALWAYS_DENSE=1: every window counts as dense, for counting the
 * recorder's instructions under callgrind, where calls are too slow to be
 * dense (the fast path's comment says how).  Never in a build for use. */
#ifndef MMT_ALWAYS_DENSE
#define MMT_ALWAYS_DENSE 0
#endif

/* Whether this call reads the clock (must: a timed call, which needs its
 * entry); before the real call. */
static inline void stamp(tstate_t *t, bool must) {
  if (LIKELY(t->skip) && !must) {
    t->skip--;
    t->stamped = false;
    return;
  }
  t->stamped = true;
  t->entry = now_ticks();
}

/* The CPU event before a call that follows a long gap. */
static __attribute__((noinline)) unsigned char *put_cpu(tstate_t *t, unsigned char *q) {
  uint64_t c = thread_cpu_ns();
  *q++ = MMT_CPU;
  q = mmt_put_varint(q, c > t->cpu0 ? c - t->cpu0 : 0);
  t->ev_events = 2;
  return q;
}

/* An event's op byte and time: the ticks since the thread's previous call
 * began (delta), and for a timed call the ticks from its entry to now,
 * just after the real call (dur).  Called right after the real call. */
static inline unsigned char *ev_begin(tstate_t *t, unsigned op, bool timed) {
  unsigned char *q = t->buf + (uint32_t)atomic_load_explicit(&t->fill, memory_order_relaxed);
  t->ev_events = 1;
  if (UNLIKELY(timed && !t->stamped)) {   /* callers stamp timed calls first */
    t->skip++;                       /* not an unstamped call after all */
    stamp(t, true);
  }
  if (!t->stamped) {                 /* delta 0: the clock was not read */
    *q++ = (unsigned char)op;
    *q++ = 0;
    t->ev_timed = false;
    return q;
  }
  uint64_t delta = t->entry - t->last_entry;
  if (UNLIKELY(!delta)) delta = 1;   /* a read clock gives at least 1 */
  uint64_t long_gap = atomic_load_explicit(&long_ticks, memory_order_relaxed);
  if (UNLIKELY(t->entry - t->last_done >= long_gap)) {
    q = put_cpu(t, q);
    timed = true;
  }
  *q++ = (unsigned char)(op | (timed ? MMT_TIMED : 0));
  q = mmt_put_varint(q, delta);
  /* calls closer together than DENSE_DIV-th of a long gap, on average
   * since the last stamp: the next SKIP_CALLS may go unstamped */
  uint32_t window = 1 + t->skip_set - t->skip;
  t->skip = t->skip_set = delta < window * (long_gap / DENSE_DIV) || MMT_ALWAYS_DENSE ? SKIP_CALLS : 0;
  t->last_done = t->entry;
  if (timed) {
    uint64_t exit = now_ticks();
    q = mmt_put_varint(q, exit - t->entry);
    t->last_done = exit;
  }
  t->last_entry = t->entry;
  t->ev_timed = timed;
  return q;
}

static inline void ev_end(tstate_t *t, unsigned char *q) {
  uint64_t f = atomic_load_explicit(&t->fill, memory_order_relaxed);
  uint64_t bytes = (uint64_t)(q - t->buf);
  atomic_store_explicit(&t->fill, bytes | ((f >> 32) + t->ev_events) << 32, memory_order_release);
  if (UNLIKELY(bytes >= BUF_BYTES)) {
    flush_own(t);
  } else if (!t->ev_timed && t->stamped && UNLIKELY(++t->sample == 16)) {   /* one stamped call in 16: what a call costs */
    t->sample = 0;
    uint64_t c = now_ticks() - t->entry;
    uint64_t b = atomic_load_explicit(&t->busy, memory_order_relaxed);
    atomic_store_explicit(&t->busy, (b * 7 + c) / 8, memory_order_relaxed);
  }
}

static tstate_t *state_new(void) {
  pthread_mutex_lock(&pool_lock);
  tstate_t *t = pool_free;
  if (t) pool_free = t->free_next;
  pthread_mutex_unlock(&pool_lock);
  if (!t) {
    t = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED) return NULL;
    tstate_t *head = atomic_load(&all_states);
    do t->all_next = head; while (!atomic_compare_exchange_weak(&all_states, &head, t));
  }
  return t;
}

static void shadow_owner(tstate_t *t);

static void thread_begin(tstate_t *t, uint64_t now) {
  t->tidx = atomic_fetch_add(&next_tidx, 1);
  shadow_owner(t);
  t->leaf_key = ~(uintptr_t)0;
  t->leaf = NULL;
  t->entry = t->last_entry = t->last_done = now;
  t->skip = 0;
  t->skip_set = 0;
  atomic_store_explicit(&t->busy, 0, memory_order_relaxed);
  t->cpu0 = thread_cpu_ns();
  t->sample = 0;
  t->nblocks = t->last_remote = 0;
  t->rounds = 0;
  t->chunk_seq = 0;
  t->taken_bytes = t->taken_events = 0;
  atomic_store(&t->fill, 0);
  atomic_store(&t->flushing, 0);
  unsigned char *q = t->buf;
  *q++ = MMT_THREAD_BEGIN;
  q = mmt_put_varint(q, now - start_ticks);
  q = mmt_put_varint(q, (uint64_t)syscall(SYS_gettid));
  atomic_store_explicit(&t->fill, (uint64_t)(q - t->buf) | 1ull << 32, memory_order_release);
  atomic_store(&t->active, true);
}

/* The calling thread's state, registered on its first traced call; NULL
 * when this call is not to be traced (tracing off, nested, thread done). */
static inline tstate_t *enter(void) {
  if (UNLIKELY(!tracing) || tls.depth) return NULL;
  tstate_t *t = tls.state;
  if (UNLIKELY(!t)) {
    if (tls.done) return NULL;
    tls.depth = 1;
    t = state_new();
    if (t) {
      thread_begin(t, now_ticks());
      tls.state = t;
      pthread_setspecific(exit_key, t);
    }
    tls.depth = 0;
    if (!t) return NULL;
  }
  tls.depth = 1;
  return t;
}
static inline void leave(void) { tls.depth = 0; }

static void state_release(tstate_t *t) {
  pthread_mutex_lock(&pool_lock);
  t->free_next = pool_free;
  pool_free = t;
  pthread_mutex_unlock(&pool_lock);
}

/* Thread exit: pthread runs key destructors in up to 4 rounds while values
 * are set; staying set through the first two keeps the frees of other
 * libraries' destructors in the trace, and ending in the third leaves the
 * last round to those that must come last (ThreadSanitizer's ends its
 * thread there, after which a lock taken here would crash it). */
static void thread_exit(void *arg) {
  tstate_t *t = arg;
  if (++t->rounds < PTHREAD_DESTRUCTOR_ITERATIONS - 1) {
    pthread_setspecific(exit_key, t);
    return;
  }
  tls.depth = 1;
  stamp(t, true);
  unsigned char *q = ev_begin(t, MMT_THREAD_END, false);
  ev_end(t, q);
  flush_own(t);
  atomic_store(&t->active, false);
  tls.state = NULL;
  tls.done = true;
  state_release(t);
  tls.depth = 0;
}

/* ---- shadow map ---------------------------------------------------------- */

#define SH_ADDR_BITS 47
#define SH_LEAF_SHIFT 24
#define SH_TOP_ENTRIES (1ull << (SH_ADDR_BITS - SH_LEAF_SHIFT))
#define SH_LEAF_ENTRIES (1ull << (SH_LEAF_SHIFT - 3))
#define SH_SEQ_SHIFT 27
#define SH_SEQ_BITS 37
#define SH_LARGE (1ull << 26)
#define SH_TIDX_BITS 22
#define SH_OWNER (((1ull << SH_TIDX_BITS) - 1) << 4 | 15)   /* thread + 1, epoch */

/* t's tag and seq_limit, from its index and this image's epoch. */
static void shadow_owner(tstate_t *t) {
  bool ok = t->tidx + 1 < (1ull << SH_TIDX_BITS);
  t->tag = ok ? (t->tidx + 1) << 4 | epoch : ~0ull;
  t->seq_limit = ok ? (1ull << SH_SEQ_BITS) : 0;
}

/* A shadow entry is written by the thread that got the block and read by
 * the one that frees it; the allocator orders the two (the block went from
 * one to the other through it, or through the program).  Relaxed atomics:
 * plain moves, and no claim that this file orders anything itself. */
typedef _Atomic uint64_t shadow_t;
static _Atomic(shadow_t *) *shadow_top;
static pthread_mutex_t shadow_lock = PTHREAD_MUTEX_INITIALIZER;

/* The leaf of address a's 16 MiB, made on its first block (rare: a lock). */
static __attribute__((noinline)) shadow_t *shadow_leaf_new(_Atomic(shadow_t *) *top) {
  pthread_mutex_lock(&shadow_lock);
  shadow_t *leaf = atomic_load_explicit(top, memory_order_relaxed);
  if (!leaf) {
    void *m = mmap(NULL, SH_LEAF_ENTRIES * 8, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m != MAP_FAILED) {
      leaf = m;
      atomic_store_explicit(top, leaf, memory_order_release);
    }
  }
  pthread_mutex_unlock(&shadow_lock);
  return leaf;
}

/* Address a's entry in its leaf: 16-aligned addresses in the first half. */
static inline uintptr_t shadow_index(uintptr_t a) {
  return ((a >> 4) & (SH_LEAF_ENTRIES / 2 - 1)) | (a & 8 ? SH_LEAF_ENTRIES / 2 : 0);
}

static inline shadow_t *shadow_slot(const void *p, bool create) {
  uintptr_t a = (uintptr_t)p;
  if (UNLIKELY(a >> SH_ADDR_BITS) || UNLIKELY(!shadow_top)) return NULL;
  _Atomic(shadow_t *) *top = &shadow_top[a >> SH_LEAF_SHIFT];
  shadow_t *leaf = atomic_load_explicit(top, memory_order_acquire);
  if (UNLIKELY(!leaf)) {
    if (!create || !(leaf = shadow_leaf_new(top))) return NULL;
  }
  return &leaf[shadow_index(a)];
}

/* shadow_slot through t's cached leaf (a leaf, once made, stays). */
static __attribute__((noinline)) shadow_t *shadow_slot_miss(tstate_t *t, const void *p, bool create) {
  shadow_t *e = shadow_slot(p, create);
  if (e) {
    t->leaf_key = (uintptr_t)p >> SH_LEAF_SHIFT;
    t->leaf = e - shadow_index((uintptr_t)p);
  }
  return e;
}
static inline shadow_t *shadow_slot_cached(tstate_t *t, const void *p, bool create) {
  uintptr_t a = (uintptr_t)p;
  if (UNLIKELY(a >> SH_LEAF_SHIFT != t->leaf_key)) return shadow_slot_miss(t, p, create);
  /* leaf_key names an address only once leaf is set (~0 names none): the
   * callers' tests of the entry fold away on this path */
  if (!t->leaf) __builtin_unreachable();
  return &t->leaf[shadow_index(a)];
}

/* p is a new block of t's: its id is (t, t->nblocks); large: it has
 * MMT_TIMED_BYTES or more. */
static inline void note_block(tstate_t *t, const void *p, bool large) {
  uint64_t n = t->nblocks;
  t->nblocks = n + 1;
  shadow_t *e = shadow_slot_cached(t, p, true);
  if (LIKELY(e) && LIKELY(n < t->seq_limit))
    atomic_store_explicit(e, n << SH_SEQ_SHIFT | (large ? SH_LARGE : 0) | t->tag, memory_order_relaxed);
}

/* The shadow entry of a block about to be released, cleared; it names a
 * traced block only if its epoch is this image's (block_known).  The
 * clearing store does not wait for the load, so a miss on the shadow line
 * overlaps the real call. */
static inline uint64_t take_block(tstate_t *t, const void *p, shadow_t **slot) {
  if (!p) { *slot = NULL; return 0; }
  shadow_t *e = shadow_slot_cached(t, p, false);
  *slot = e;
  if (!e) return 0;
  uint64_t v = atomic_load_explicit(e, memory_order_relaxed);
  atomic_store_explicit(e, 0, memory_order_relaxed);
  return v;
}
static inline bool block_known(uint64_t v) { return (v & 15) == epoch; }
static inline bool block_large(uint64_t v) { return block_known(v) && (v & SH_LARGE); }
/* A block another thread got.  Its release is always stamped: an
 * unstamped call is given its predecessor's time, earlier than its own,
 * and a reader must never see a block released before it was made (the
 * replay orders its threads by these times). */
static inline bool block_foreign(const tstate_t *t, uint64_t v) {
  return block_known(v) && ((v >> 4) & ((1u << SH_TIDX_BITS) - 1)) - 1 != t->tidx;
}

/* The ref of a block of t's own whose entry is v: its distance back in
 * t's allocations, doubled, plus 2 (trace_format.h). */
static inline uint64_t own_ref(const tstate_t *t, uint64_t v) {
  return 2 + 2 * (t->nblocks - 1 - (v >> SH_SEQ_SHIFT));
}

static inline unsigned char *put_ref(tstate_t *t, unsigned char *q, const void *p, uint64_t v) {
  if (!p) return mmt_put_varint(q, MMT_REF_NULL);
  if (!block_known(v)) {
    q = mmt_put_varint(q, MMT_REF_UNKNOWN);
    return mmt_put_varint(q, (uintptr_t)p);
  }
  uint64_t seq = v >> SH_SEQ_SHIFT, owner = ((v >> 4) & ((1u << SH_TIDX_BITS) - 1)) - 1;
  if (owner == t->tidx) return mmt_put_varint(q, own_ref(t, v));
  q = mmt_put_varint(q, 3 + 2 * mmt_zigzag((int64_t)(seq - t->last_remote)));
  t->last_remote = seq;
  return mmt_put_varint(q, owner);
}

/* ---- the file ------------------------------------------------------------ */

static char header_args[16384];      /* /proc/self/cmdline at start */
static size_t header_args_len;

static size_t put_text(char *out, size_t at, size_t cap, const char *key, const char *val, size_t vlen) {
  at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, "%s=", key);
  for (size_t i = 0; i < vlen && at + 3 < cap; i++) {
    char c = val[i];
    if (c == '\n') { out[at++] = '\\'; out[at++] = 'n'; }
    else if (c == '\\') { out[at++] = '\\'; out[at++] = '\\'; }
    else out[at++] = c;
  }
  if (at < cap) out[at++] = '\n';
  return at;
}

static bool write_header(pid_t forked_from) {
  static char text[MMT_HEADER_TEXT_MAX / 2];
  size_t n = 0, cap = sizeof text - 64;
  char exe[4096];
  ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
  n = put_text(text, n, cap, "program", exe, el > 0 ? (size_t)el : 0);
  for (size_t i = 0; i < header_args_len;) {
    size_t l = strnlen(header_args + i, header_args_len - i);
    n = put_text(text, n, cap, "arg", header_args + i, l);
    i += l + 1;
  }
  struct utsname u;
  if (uname(&u) == 0) {
    n = put_text(text, n, cap, "host", u.nodename, strlen(u.nodename));
    n = put_text(text, n, cap, "machine", u.machine, strlen(u.machine));
    n = put_text(text, n, cap, "kernel", u.release, strlen(u.release));
  }
  struct timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  n += (size_t)snprintf(text + n, sizeof text - n,
                        "cpus=%ld\npid=%d\nppid=%d\nstart_unix_ns=%llu\nclock=" CLOCK_NAME "\nepoch=%u\n",
                        sysconf(_SC_NPROCESSORS_ONLN), (int)getpid(), (int)getppid(),
                        (unsigned long long)rt.tv_sec * 1000000000ull + (unsigned long long)rt.tv_nsec, epoch);
  if (forked_from) n += (size_t)snprintf(text + n, sizeof text - n, "forked_from=%d\n", (int)forked_from);
  const char *pre = getenv("MMTRACE_NEXT_PRELOAD");
  if (pre) n = put_text(text, n, sizeof text - 16, "preload", pre, strlen(pre));
  unsigned char head[MMT_MAGIC_LEN + 2 + MMT_VARINT_MAX], *q = head;
  memcpy(q, MMT_MAGIC, MMT_MAGIC_LEN);
  q += MMT_MAGIC_LEN;
  *q++ = MMT_VERSION & 0xff;
  *q++ = MMT_VERSION >> 8;
  q = mmt_put_varint(q, n);
  unsigned char sum[4];
  mmt_put_u32(sum, mmt_fnv((unsigned char *)text, n));
  struct iovec iov[3] = {{head, (size_t)(q - head)}, {text, n}, {sum, 4}};
  return write_all(iov, 3);
}

static int open_trace(const char *base, bool root) {
  char *path = trace_path;
  const size_t pathsize = sizeof trace_path;
  for (int k = root ? -1 : 0; k < 1000; k++) {
    if (k < 0) snprintf(path, pathsize, "%s", base);
    else if (k == 0) snprintf(path, pathsize, "%s.%d", base, (int)getpid());
    else snprintf(path, pathsize, "%s.%d.%d", base, (int)getpid(), k);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST) {
      if (fd < 0) {
        char msg[4300];
        int m = snprintf(msg, sizeof msg, "mmtrace: cannot create %s: %s; not tracing\n", path, strerror(errno));
        ssize_t r = write(2, msg, (size_t)m);
        (void)r;
      }
      struct stat st;
      if (fd >= 0 && fstat(fd, &st) == 0) {
        trace_dev = st.st_dev;
        trace_ino = st.st_ino;
        fd = trace_fd_high(fd);
      }
      return fd;
    }
  }
  return -1;
}

static bool start_file(pid_t forked_from) {
  const char *base = getenv("MMTRACE_OUT");
  if (!base || !*base) return false;
  const char *root = getenv("MMTRACE_ROOT");
  bool is_root = root && atoi(root) == (int)getpid() && !forked_from;
  int fd = open_trace(base, is_root);
  if (fd < 0) return false;
  atomic_store(&trace_fd, fd);
  trace_pid = getpid();
  clock_pair(&start_ns, &start_ticks);
  if (!write_header(forked_from)) {
    write_failed();
    return false;
  }
  return true;
}

/* A field of /proc/self/status ("VmHWM:" and the like) in KiB, from the
 * text in [s, s + n); 0 if absent. */
static uint64_t status_kb(const char *s, size_t n, const char *key) {
  size_t k = strlen(key);
  for (size_t i = 0; i + k < n; i++) {
    if ((i == 0 || s[i - 1] == '\n') && memcmp(s + i, key, k) == 0) {
      uint64_t v = 0;
      for (i += k; i < n && (s[i] == ' ' || s[i] == '\t'); i++) {}
      for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) v = v * 10 + (uint64_t)(s[i] - '0');
      return v;
    }
  }
  return 0;
}

/* The recorder's own library, by the device and inode /proc/self/smaps
 * names its mappings with (own_file_identify, at start). */
static struct { bool known; unsigned major, minor; uint64_t ino; } own_file;

static void own_file_identify(void) {
  Dl_info info;
  struct stat st;
  if (dladdr((void *)own_file_identify, &info) && info.dli_fname && stat(info.dli_fname, &st) == 0) {
    own_file.major = major(st.st_dev);
    own_file.minor = minor(st.st_dev);
    own_file.ino = st.st_ino;
    own_file.known = true;
  }
}

/* The number at *p in base 10 or 16, *p past it. */
static uint64_t scan_num(const char **p, const char *end, unsigned base) {
  uint64_t v = 0;
  for (; *p < end; ++*p) {
    unsigned c = (unsigned char)**p, d = c - '0' <= 9 ? c - '0' : (c | 0x20) - 'a' + 10u;
    if (d >= base) break;
    v = v * base + d;
  }
  return v;
}
/* One line of /proc/self/smaps, [s, end): a mapping's first line sets
 * *mine (is it the recorder's library?), its "Rss:" line adds to kb[0],
 * its "Anonymous:" line (pages written, no longer the file's) to kb[1]. */
static void own_smaps_line(const char *s, const char *end, bool *mine, uint64_t kb[2]) {
  const char *p = s;
  while (p < end && *p != ' ' && *p != ':') p++;
  if (p < end && *p == ':') {                   /* "Key:   value kB" */
    int which = p - s == 3 && memcmp(s, "Rss", 3) == 0 ? 0 : p - s == 9 && memcmp(s, "Anonymous", 9) == 0 ? 1 : -1;
    if (*mine && which >= 0) {
      for (p++; p < end && *p == ' '; p++) {}
      kb[which] += scan_num(&p, end, 10);
    }
    return;
  }
  /* "lo-hi perms offset major:minor inode path": past three fields */
  for (int field = 0; field < 3; field++) {
    while (p < end && *p != ' ') p++;
    while (p < end && *p == ' ') p++;
  }
  unsigned maj = (unsigned)scan_num(&p, end, 16);
  if (p < end && *p == ':') p++;
  unsigned min = (unsigned)scan_num(&p, end, 16);
  while (p < end && *p == ' ') p++;
  uint64_t ino = scan_num(&p, end, 10);
  *mine = ino == own_file.ino && maj == own_file.major && min == own_file.minor;
}
/* KiB of the recorder's own library resident now, from /proc/self/smaps,
 * without allocating (also in a signal handler): kb[0] all of it, kb[1] the
 * part no longer backed by the file (its written data); 0 if it cannot
 * say. */
static void own_file_kb(uint64_t kb[2]) {
  kb[0] = kb[1] = 0;
  if (!own_file.known) return;
  int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  static char buf[2048];                        /* not on the stack: this may run in a signal handler on a
                                                   thread's small stack; one caller at a time (put_memory) */
  size_t have = 0;
  bool mine = false, skip = false;
  for (;;) {
    ssize_t m = read(fd, buf + have, sizeof buf - have);
    if (m < 0 && errno == EINTR) continue;
    if (m <= 0) break;
    have += (size_t)m;
    char *line = buf, *end = buf + have, *nl;
    while ((nl = memchr(line, '\n', (size_t)(end - line))) != NULL) {
      if (!skip) own_smaps_line(line, nl, &mine, kb);
      skip = false;
      line = nl + 1;
    }
    if (line == buf && have == sizeof buf) {    /* a longer line (a mapping with a long path): */
      skip = true;                              /* not the recorder's, whose path is short */
      mine = false;
      line = end;
    }
    have = (size_t)(end - line);
    memmove(buf, line, have);
  }
  close(fd);
  if (kb[1] > kb[0]) kb[1] = kb[0];
}

/* The memory record at q (format 3): the image's peak RSS and its resident
 * memory backed by files and shared memory, read from /proc/self/status
 * without allocating (also in a signal handler), each less the recorder's
 * own library's resident pages (own_file_kb), which the program without
 * the recorder would not have; nothing if it cannot be read.  Returns the
 * record's end. */
static unsigned char *put_memory(unsigned char *q) {
  static char buf[4096];                        /* not on the stack (own_file_kb says why); put_memory runs
                                                   once per image, in write_end after `ending` was taken */
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return q;
  size_t n = 0;
  ssize_t m;
  while (n < sizeof buf && (m = read(fd, buf + n, sizeof buf - n)) != 0) {
    if (m < 0 && errno == EINTR) continue;
    if (m < 0) break;
    n += (size_t)m;
  }
  close(fd);
  uint64_t peak = status_kb(buf, n, "VmHWM:");
  uint64_t file = status_kb(buf, n, "RssFile:") + status_kb(buf, n, "RssShmem:");
  if (!peak) return q;
  uint64_t own[2];
  own_file_kb(own);
  peak = peak > own[0] ? peak - own[0] : 0;
  file = file > own[0] - own[1] ? file - (own[0] - own[1]) : 0;
  if (!peak) return q;
  unsigned char *start = q;
  *q++ = MMT_REC_MEMORY;
  q = mmt_put_varint(q, peak);
  q = mmt_put_varint(q, file < peak ? file : peak);
  mmt_put_u32(q, mmt_fnv(start, (size_t)(q - start)));
  return q + 4;
}

static void write_end(unsigned char kind, int signo) {
  if (trace_fd < 0 || atomic_load(&closed)) return;
  unsigned char rec[1 + 2 * MMT_VARINT_MAX + 4 + 1 + 2 * MMT_VARINT_MAX + 4], *q = rec;
  if (kind != MMT_REC_EXEC) {
    int saved = errno;
    q = put_memory(q);
    errno = saved;
  }
  *q++ = kind;
  if (kind == MMT_REC_END) {
    q = mmt_put_varint(q, atomic_load(&chunks_written));
    mmt_put_u32(q, MMT_END_MARK);
  } else if (kind == MMT_REC_SIGNAL) {
    q = mmt_put_varint(q, (uint64_t)signo);
    q = mmt_put_varint(q, atomic_load(&chunks_written));
    mmt_put_u32(q, MMT_SIGNAL_MARK);
  } else {
    mmt_put_u32(q, MMT_EXEC_MARK);
  }
  q += 4;
  struct iovec iov = {rec, (size_t)(q - rec)};
  if (!write_all(&iov, 1)) write_failed();
}

/* ---- process events: exit, fatal signals, fork, exec --------------------- */

/* A vfork child shares the parent's memory and file: it must not end the
 * parent's trace when it calls _exit or exec. */
static bool own_trace(void) { return getpid() == trace_pid; }

static void finish(void) {
  if (!tracing || !own_trace() || atomic_exchange(&ending, true)) return;
  int d = tls.depth;
  tls.depth = 1;
  tstate_t *t = tls.state;
  if (t && d == 0) {                 /* the exiting thread ends here: its work after its last call */
    stamp(t, true);
    ev_end(t, ev_begin(t, MMT_THREAD_END, false));
  }
  flush_all(false);
  write_end(MMT_REC_END, 0);
  atomic_store(&closed, true);
  tls.depth = d;
}

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT, SIGQUIT, SIGHUP};

static void on_fatal(int sig) {
  int saved = errno;
  tls.depth = 1;
  if (tracing && !atomic_exchange(&ending, true)) {
    flush_all(true);
    write_end(MMT_REC_SIGNAL, sig);
    atomic_store(&closed, true);
  }
  signal(sig, SIG_DFL);
  errno = saved;
  raise(sig);
}

static void install_signals(void) {
  for (size_t i = 0; i < sizeof fatal_signals / sizeof *fatal_signals; i++) {
    struct sigaction old;
    if (sigaction(fatal_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(fatal_signals[i], &sa, NULL);
  }
}

/* In a forked child: only the forking thread lives on; its buffer holds the
 * parent's events (the parent writes them), every other state is dead. */
static void after_fork_child(void) {
  if (!tracing) return;
  pid_t parent = getppid();
  tstate_t *self = tls.state;
  for (tstate_t *t = atomic_load(&all_states); t; t = t->all_next) {
    if (t == self) continue;
    if (atomic_load(&t->active)) {
      atomic_store(&t->active, false);
      t->free_next = pool_free;
      pool_free = t;
    }
  }
  pthread_mutex_init(&pool_lock, NULL);
  pthread_mutex_init(&shadow_lock, NULL);
  int fd = atomic_exchange(&trace_fd, -1);
  if (fd_is_trace(fd)) close(fd);                /* the parent's file; a number the program took stays */
  atomic_store(&closed, false);
  atomic_store(&ending, false);
  atomic_store(&chunks_written, 0);
  atomic_store(&next_tidx, 0);
  epoch = epoch % 15 + 1;
  if (!start_file(parent)) {
    atomic_store(&tracing_on, false);
    return;
  }
  if (self) thread_begin(self, now_ticks());
}

/* the unwinder's functions, for frames a C++ exception unwinds (below) */
static void *_Atomic unwinder_personality, *_Atomic unwinder_resume;

static void init(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&init_state, &expected, 1)) return;
  /* glibc's own names first: a lookup that fails below (free_sized before
   * glibc 2.43) allocates its error, and a shim's malloc under the recorder
   * may call __libc_malloc, which must find its next definition by then
   * (else it would fall back to that shim's malloc, and loop) */
#define RESOLVE_LIBC(name) real.libc_##name = (__typeof__(real.libc_##name))dlsym(RTLD_NEXT, "__libc_" #name)
  RESOLVE_LIBC(malloc); RESOLVE_LIBC(free); RESOLVE_LIBC(calloc); RESOLVE_LIBC(realloc);
  RESOLVE_LIBC(memalign); RESOLVE_LIBC(valloc); RESOLVE_LIBC(pvalloc);
#undef RESOLVE_LIBC
#define RESOLVE(name) real.name = (__typeof__(real.name))dlsym(RTLD_NEXT, #name)
  RESOLVE(malloc); RESOLVE(free); RESOLVE(calloc); RESOLVE(realloc);
  RESOLVE(posix_memalign); RESOLVE(aligned_alloc); RESOLVE(memalign);
  RESOLVE(valloc); RESOLVE(pvalloc); RESOLVE(reallocarray);
  RESOLVE(fork); RESOLVE(execve); RESOLVE(execvpe); RESOLVE(pthread_create);
  RESOLVE(free_sized); RESOLVE(free_aligned_sized);
#undef RESOLVE
  if (!real.malloc || !real.free || !real.calloc || !real.realloc)
    die("mmtrace: cannot find the malloc family under the tracer (dlsym RTLD_NEXT)\n");
  /* a C++ program's unwinder is loaded already: found now, not while unwinding
   * (a library loaded later without RTLD_GLOBAL is looked for then) */
  atomic_store(&unwinder_personality, dlsym(RTLD_DEFAULT, "__gcc_personality_v0"));
  atomic_store(&unwinder_resume, dlsym(RTLD_DEFAULT, "_Unwind_Resume"));
  atomic_store(&init_state, 2);
  if (!getenv("MMTRACE_OUT")) return;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t r = read(fd, header_args, sizeof header_args - 1);
    header_args_len = r > 0 ? (size_t)r : 0;
    close(fd);
  }
  void *top = mmap(NULL, SH_TOP_ENTRIES * sizeof(void *), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (top == MAP_FAILED) {
    die("mmtrace: cannot map the shadow table; not tracing\n");
  }
  shadow_top = top;
  if (pthread_key_create(&exit_key, thread_exit) != 0) return;
  own_file_identify();
  epoch = 1;
  if (!start_file(0)) return;
  pthread_atfork(NULL, NULL, after_fork_child);
  install_signals();
  atexit(finish);
  atomic_store(&tracing_on, true);
}

__attribute__((constructor)) static void init_ctor(void) { init(); }
__attribute__((destructor)) static void fini_dtor(void) { finish(); }

static inline void ensure_init(void) {
  if (UNLIKELY(atomic_load_explicit(&init_state, memory_order_acquire) != 2)) init();
}

/* ---- the malloc family ----------------------------------------------------- */

/* The bytes a call asks for: nmemb * size, saturated. */
static inline size_t req_bytes(size_t nmemb, size_t size) {
  size_t bytes;
  return __builtin_mul_overflow(nmemb, size, &bytes) ? SIZE_MAX : bytes;
}
/* An allocation of that many bytes is timed. */
static inline bool alloc_large(size_t nmemb, size_t size) { return req_bytes(nmemb, size) >= MMT_TIMED_BYTES; }

/* One allocation event: op, time, [align], [nmemb], size; then the new
 * block. */
static inline void rec_alloc(tstate_t *t, unsigned op, size_t align, size_t nmemb, size_t size, void *p) {
  unsigned shape = mmt_op_shape(op);
  bool large = alloc_large(shape & MMT_HAS_NMEMB ? nmemb : 1, size);
  unsigned char *q = ev_begin(t, op | (p ? 0 : MMT_FAILED), large);
  if (shape & MMT_HAS_ALIGN) q = mmt_put_varint(q, align);
  if (shape & MMT_HAS_NMEMB) q = mmt_put_varint(q, nmemb);
  q = mmt_put_varint(q, size);
  if (p) note_block(t, p, large);
  ev_end(t, q);
  leave();
}

static inline void rec_release(tstate_t *t, unsigned op, const void *p, uint64_t v,
                               size_t size, size_t align) {
  unsigned char *q = ev_begin(t, op, block_large(v));
  q = put_ref(t, q, p, v);
  unsigned shape = mmt_op_shape(op);
  if (shape & MMT_HAS_SIZE) q = mmt_put_varint(q, size);
  if (shape & MMT_HAS_ALIGN) q = mmt_put_varint(q, align);
  ev_end(t, q);
  leave();
}

/* ---- the fast path ----------------------------------------------------------
 * A malloc, calloc or operator new (without alignment) of fewer than
 * MMT_TIMED_BYTES, and a free or delete (without alignment) of a small
 * block the thread itself got, need none of the general path's choices:
 * such a call is timed only after a long gap, which ev_begin finds.  A
 * stamped malloc, calloc, free or delete enters and stamps here and is
 * recorded by rec_alloc or rec_release (a stamped new takes the general
 * path).  An unstamped one (most calls in a dense burst, and most of
 * CPython's) is recorded here in a few steps: the same event (op, delta 0,
 * the arguments) and the same shadow entry.
 *   - An allocation writes its event before the real call and publishes it
 *     after, with the new block's shadow entry (or the op marked failed):
 *     only t lives across the call (the fill to publish waits in
 *     t->pending; nothing else appends meanwhile, the call being traced).
 *   - A free or a delete publishes its event before the real call (a
 *     release returns nothing to record), so that a release that crashes
 *     is in the trace.  The real call is made inside the traced call, as
 *     on the general path: libstdc++'s sized delete calls the unsized one,
 *     which calls free, and neither may be recorded again.
 * Every other call takes the general path.  What it costs, counted by
 * callgrind in a recorder built with every window dense (one call in 8
 * stamped; under valgrind no call is fast enough to count as dense):
 *   gcc -O3 -shared -fPIC -fvisibility=hidden -fexceptions -ftls-model=initial-exec \
 *     -DMMT_ALWAYS_DENSE=1 -Itrace/src trace/src/record.c -o dense.so -ldl -lpthread
 *   MMTRACE_OUT=/tmp/t LD_PRELOAD=./dense.so valgrind --tool=callgrind \
 *     build/bench/fastpath size=64 batches=1000        (and batches=0)
 * (and for a program: PYTHONMALLOC=malloc with /usr/bin/python3.11 running
 * trace/overhead.py's PY_SCRIPT, with and without the LD_PRELOAD)
 * the difference over 64000 pairs, less the same without the recorder
 * (188: the loop and glibc): 167 instructions a 64-byte malloc+free pair,
 * against 174 at 9faaff8 and 300 for 3494dc9's recorder built the same
 * way (its skip line set to SKIP_CALLS by hand: it has no
 * MMT_ALWAYS_DENSE). */

/* The calling thread's state if this call may take the fast path:
 * registered (by enter(), once tracing was on) and not nested.  Tracing
 * turned off later (a write failed, a forked child could not open its
 * file) leaves it on: its events then go nowhere, write_chunk drops them. */
static inline tstate_t *fast_state(void) {
  tstate_t *t = tls.state;
  return LIKELY(t) && LIKELY(!tls.depth) ? t : NULL;
}

/* Enters a stamped call: stamp(t, true)'s reading of the clock. */
static inline void fast_enter_stamped(tstate_t *t) {
  tls.depth = 1;
  t->stamped = true;
  t->entry = now_ticks();
}

/* An unstamped event's op and delta 0 at the buffer's end, not yet
 * published: its start, the fill before it in *f. */
static inline unsigned char *fast_event(tstate_t *t, unsigned op, uint64_t *f) {
  *f = atomic_load_explicit(&t->fill, memory_order_relaxed);
  unsigned char *q = t->buf + (uint32_t)*f;
  q[0] = (unsigned char)op;
  q[1] = 0;
  return q;
}

/* The fill that publishes one more event, [start, q), after fill f (ev_end's
 * value: the byte count below bit 32 cannot carry, being under BUF_BYTES +
 * EVENT_MAX). */
_Static_assert(BUF_BYTES + EVENT_MAX < (1ull << 32), "a fill's byte count fits below bit 32");
static inline uint64_t fast_fill(const unsigned char *start, const unsigned char *q, uint64_t f) {
  return f + (1ull << 32) + (uint64_t)(q - start);
}

/* An unstamped allocation after its real call: p's entry, or the event's
 * op marked failed (as rec_alloc would write it); the event published; the
 * call left. */
static inline void fast_alloc_done(tstate_t *t, unsigned op, const void *p) {
  if (LIKELY(p))
    note_block(t, p, false);
  else
    t->buf[(uint32_t)atomic_load_explicit(&t->fill, memory_order_relaxed)] = (unsigned char)(op | MMT_FAILED);
  uint64_t fill = t->pending;
  atomic_store_explicit(&t->fill, fill, memory_order_release);
  if (UNLIKELY((uint32_t)fill >= BUF_BYTES)) flush_own(t);
  tls.depth = 0;
}

/* An unstamped allocation entered: one unstamped call of the burst used,
 * its event (op, delta 0, [nmemb], size) written, the fill that publishes
 * it in t->pending. */
static inline void fast_alloc_begin(tstate_t *t, unsigned op, size_t nmemb, size_t size) {
  tls.depth = 1;
  t->skip--;
  uint64_t f;
  unsigned char *start = fast_event(t, op, &f), *q = start + 2;
  if (mmt_op_shape(op) & MMT_HAS_NMEMB) q = mmt_put_varint(q, nmemb);
  t->pending = fast_fill(start, mmt_put_varint(q, size), f);
}

static __attribute__((noinline)) void *malloc_stamped(tstate_t *t, size_t n) {
  fast_enter_stamped(t);
  void *p = real.malloc(n);
  rec_alloc(t, MMT_MALLOC, 0, 0, n, p);
  return p;
}

static __attribute__((noinline)) void *malloc_general(size_t n) {
  ensure_init();
  if (UNLIKELY(!real.malloc)) return boot_alloc(n);
  tstate_t *t = enter();
  if (t) stamp(t, n >= MMT_TIMED_BYTES);
  void *p = real.malloc(n);
  if (t) rec_alloc(t, MMT_MALLOC, 0, 0, n, p);
  return p;
}

EXPORT void *malloc(size_t n) {
  tstate_t *t = fast_state();
  if (LIKELY(t) && LIKELY(n < MMT_TIMED_BYTES)) {
    if (UNLIKELY(!t->skip)) return malloc_stamped(t, n);
    fast_alloc_begin(t, MMT_MALLOC, 0, n);
    void *p = real.malloc(n);
    fast_alloc_done(t, MMT_MALLOC, p);
    return p;
  }
  return malloc_general(n);
}

static __attribute__((noinline)) void *calloc_stamped(tstate_t *t, size_t k, size_t n) {
  fast_enter_stamped(t);
  void *p = real.calloc(k, n);
  rec_alloc(t, MMT_CALLOC, 0, k, n, p);
  return p;
}

static __attribute__((noinline)) void *calloc_general(size_t k, size_t n) {
  ensure_init();
  if (UNLIKELY(!real.calloc)) return boot_alloc(k * n);   /* zeroed: static arena */
  tstate_t *t = enter();
  if (t) stamp(t, alloc_large(k, n));
  void *p = real.calloc(k, n);
  if (t) rec_alloc(t, MMT_CALLOC, 0, k, n, p);
  return p;
}

EXPORT void *calloc(size_t k, size_t n) {
  tstate_t *t = fast_state();
  if (LIKELY(t) && LIKELY(!alloc_large(k, n))) {
    if (UNLIKELY(!t->skip)) return calloc_stamped(t, k, n);
    fast_alloc_begin(t, MMT_CALLOC, k, n);
    void *p = real.calloc(k, n);
    fast_alloc_done(t, MMT_CALLOC, p);
    return p;
  }
  return calloc_general(k, n);
}

static inline void release(unsigned op, void *p, size_t size, size_t align, void (*fn)(void *, size_t, size_t)) {
  if (UNLIKELY(is_boot(p))) return;
  tstate_t *t = enter();
  if (!t) { fn(p, size, align); return; }
  shadow_t *slot;
  uint64_t v = take_block(t, p, &slot);
  stamp(t, block_large(v) || block_foreign(t, v));
  fn(p, size, align);
  rec_release(t, op, p, v, size, align);
}

static void call_free(void *p, size_t size, size_t align) { (void)size; (void)align; real.free(p); }

static __attribute__((noinline)) void free_general(void *p) {
  ensure_init();
  if (UNLIKELY(!real.free)) return;
  release(MMT_FREE, p, 0, 0, call_free);
}

/* p's shadow entry if p is a small block of t's (its entry's owner is
 * t->tag, large clear), else NULL; *v: the entry. */
static inline shadow_t *fast_own_block(tstate_t *t, const void *p, uint64_t *v) {
  shadow_t *e = LIKELY(p) ? shadow_slot_cached(t, p, false) : NULL;
  if (UNLIKELY(!e)) return NULL;
  *v = atomic_load_explicit(e, memory_order_relaxed);
  return LIKELY((*v & (SH_OWNER | SH_LARGE)) == t->tag) ? e : NULL;
}

/* An unstamped release of the block whose entry was v: one unstamped call
 * of the burst used, its event (op, delta 0, the ref, [size]) written and
 * published; true if that filled the buffer (the caller flushes it inside
 * a traced call). */
static inline bool fast_release_event(tstate_t *t, unsigned op, uint64_t v, size_t size) {
  t->skip--;
  uint64_t f;
  unsigned char *start = fast_event(t, op, &f), *q = mmt_put_varint(start + 2, own_ref(t, v));
  if (mmt_op_shape(op) & MMT_HAS_SIZE) q = mmt_put_varint(q, size);
  uint64_t fill = fast_fill(start, q, f);
  atomic_store_explicit(&t->fill, fill, memory_order_release);
  return UNLIKELY((uint32_t)fill >= BUF_BYTES);
}

/* A stamped fast release: stamped and entered, the real call, the general
 * event (out of line: the inline release keeps the unstamped steps). */
static __attribute__((noinline)) void release_stamped(tstate_t *t, unsigned op, void *p, uint64_t v, size_t size,
                                                      void (*fn)(void *, size_t, size_t)) {
  fast_enter_stamped(t);
  fn(p, size, 0);
  rec_release(t, op, p, v, size, 0);
}

/* The fast path of free and of a delete without alignment (op; size: the
 * sized delete's): a block fast_own_block finds, its entry read and
 * cleared before the real call fn as take_block does; false: the general
 * path's. */
static inline bool fast_release(unsigned op, void *p, size_t size, void (*fn)(void *, size_t, size_t)) {
  tstate_t *t = fast_state();
  uint64_t v;
  shadow_t *e;
  if (UNLIKELY(!t) || UNLIKELY(!(e = fast_own_block(t, p, &v)))) return false;
  atomic_store_explicit(e, 0, memory_order_relaxed);
  if (UNLIKELY(!t->skip)) {
    release_stamped(t, op, p, v, size, fn);
    return true;
  }
  tls.depth = 1;
  if (UNLIKELY(fast_release_event(t, op, v, size))) flush_own(t);
  fn(p, size, 0);
  tls.depth = 0;
  return true;
}

EXPORT void free(void *p) {
  if (LIKELY(fast_release(MMT_FREE, p, 0, call_free))) return;
  free_general(p);
}

/* op's call, realloc or reallocarray; libc: glibc's __libc_realloc instead
 * of realloc (its next definition). */
static void *do_realloc_as(unsigned op, void *p, size_t k, size_t n, bool libc) {
  ensure_init();
  void *(*fn)(void *, size_t) = libc && real.libc_realloc ? real.libc_realloc : real.realloc;
  if (UNLIKELY(!real.realloc)) {
    if (p) die("mmtrace: realloc of a block during the tracer's start-up\n");
    return boot_alloc(op == MMT_REALLOC ? n : k * n);
  }
  if (UNLIKELY(is_boot(p))) {          /* a start-up block: its size is unknown, copy what may be it */
    size_t bytes = op == MMT_REALLOC ? n : k * n;
    size_t room = (size_t)(boot_arena + sizeof boot_arena - (unsigned char *)p);
    void *q = malloc(bytes);
    if (q) memcpy(q, p, bytes < room ? bytes : room);
    return q;
  }
  tstate_t *t = enter();
  if (!t) return op == MMT_REALLOC ? fn(p, n) : real.reallocarray(p, k, n);
  shadow_t *slot;
  uint64_t v = take_block(t, p, &slot);
  size_t bytes = req_bytes(op == MMT_REALLOCARRAY ? k : 1, n);
  bool large = bytes >= MMT_TIMED_BYTES;
  stamp(t, large || block_large(v) || block_foreign(t, v));
  void *r = op == MMT_REALLOC ? fn(p, n) : real.reallocarray(p, k, n);
  bool keeps = !r && p && bytes != 0;   /* failed: p still live */
  if (keeps && slot) atomic_store_explicit(slot, v, memory_order_relaxed);
  unsigned flags = (r ? 0 : MMT_FAILED) | (r && r == p ? MMT_INPLACE : 0);
  unsigned char *q = ev_begin(t, op | flags, large || block_large(v));
  q = put_ref(t, q, p, v);
  if (op == MMT_REALLOCARRAY) q = mmt_put_varint(q, k);
  q = mmt_put_varint(q, n);
  if (r) note_block(t, r, large);
  ev_end(t, q);
  leave();
  return r;
}

static void *do_realloc(unsigned op, void *p, size_t k, size_t n) { return do_realloc_as(op, p, k, n, false); }

EXPORT void *realloc(void *p, size_t n) { return do_realloc(MMT_REALLOC, p, 1, n); }
EXPORT void *reallocarray(void *p, size_t k, size_t n) {
  ensure_init();
  if (real.realloc && !real.reallocarray) {          /* a C library without it */
    size_t b;
    if (__builtin_mul_overflow(k, n, &b)) { errno = ENOMEM; return NULL; }
    return do_realloc(MMT_REALLOC, p, 1, b);
  }
  return do_realloc(MMT_REALLOCARRAY, p, k, n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n) {
  ensure_init();
  tstate_t *t = enter();
  if (t) stamp(t, n >= MMT_TIMED_BYTES);
  int rc = real.posix_memalign(out, align, n);
  if (t) rc == 0 ? rec_alloc(t, MMT_POSIX_MEMALIGN, align, 0, n, *out)
                 : rec_alloc(t, MMT_POSIX_MEMALIGN, align, 0, n, NULL);
  return rc;
}

/* An allocation on the general path: entered, stamped (large: it must be),
 * the real call fn args, recorded as OP. */
#define TRACED_ALLOC(cname, fn, OP, params, large, args, align, nmemb, size) \
  EXPORT void *cname params {                                                \
    ensure_init();                                                          \
    tstate_t *t = enter();                                                  \
    if (t) stamp(t, large);                                                 \
    void *p = fn args;                                                      \
    if (t) rec_alloc(t, OP, align, nmemb, size, p);                         \
    return p;                                                               \
  }
TRACED_ALLOC(aligned_alloc, real.aligned_alloc, MMT_ALIGNED_ALLOC, (size_t align, size_t n),
             n >= MMT_TIMED_BYTES, (align, n), align, 0, n)
TRACED_ALLOC(memalign, real.memalign, MMT_MEMALIGN, (size_t align, size_t n), n >= MMT_TIMED_BYTES,
             (align, n), align, 0, n)
TRACED_ALLOC(valloc, real.valloc, MMT_VALLOC, (size_t n), n >= MMT_TIMED_BYTES, (n), 0, 0, n)
TRACED_ALLOC(pvalloc, real.pvalloc, MMT_PVALLOC, (size_t n), n >= MMT_TIMED_BYTES, (n), 0, 0, n)

/* C23's sized frees: recorded as frees (the size and alignment are hints);
 * the real call is the next free_sized or free_aligned_sized, or free in a
 * C library without them. */
static void call_free_sized(void *p, size_t size, size_t align) {
  (void)align;
  if (real.free_sized) real.free_sized(p, size);
  else real.free(p);
}
static void call_free_aligned_sized(void *p, size_t size, size_t align) {
  if (real.free_aligned_sized) real.free_aligned_sized(p, align, size);
  else real.free(p);
}
EXPORT void free_sized(void *p, size_t n) {
  if (LIKELY(fast_release(MMT_FREE, p, n, call_free_sized))) return;
  ensure_init();
  if (UNLIKELY(!real.free)) return;
  release(MMT_FREE, p, n, 0, call_free_sized);
}
EXPORT void free_aligned_sized(void *p, size_t align, size_t n) {
  ensure_init();
  if (UNLIKELY(!real.free)) return;
  release(MMT_FREE, p, n, align, call_free_aligned_sized);
}

#if defined(__GLIBC__)
/* glibc's own names of the family, which some programs call, and malloc
 * shims to reach glibc's allocator: recorded as the standard calls, and
 * made as the next definition of the same name (glibc's, or an allocator's
 * that defines them), so that a shim's malloc calling __libc_malloc inside
 * a traced malloc is not recorded again and does not come back here. */
#define LIBC_FN(name) (real.libc_##name ? real.libc_##name : real.name)   /* one a C library lacks: the standard one */
TRACED_ALLOC(__libc_malloc, LIBC_FN(malloc), MMT_MALLOC, (size_t n), n >= MMT_TIMED_BYTES, (n), 0, 0, n)
TRACED_ALLOC(__libc_calloc, LIBC_FN(calloc), MMT_CALLOC, (size_t k, size_t n), alloc_large(k, n), (k, n), 0,
             k, n)
TRACED_ALLOC(__libc_memalign, LIBC_FN(memalign), MMT_MEMALIGN, (size_t align, size_t n), n >= MMT_TIMED_BYTES,
             (align, n), align, 0, n)
TRACED_ALLOC(__libc_valloc, LIBC_FN(valloc), MMT_VALLOC, (size_t n), n >= MMT_TIMED_BYTES, (n), 0, 0, n)
TRACED_ALLOC(__libc_pvalloc, LIBC_FN(pvalloc), MMT_PVALLOC, (size_t n), n >= MMT_TIMED_BYTES, (n), 0, 0, n)
static void call_libc_free(void *p, size_t size, size_t align) {
  (void)size, (void)align;
  LIBC_FN(free)(p);
}
EXPORT void __libc_free(void *p) {
  ensure_init();
  if (UNLIKELY(!real.free)) return;
  release(MMT_FREE, p, 0, 0, call_libc_free);
}
EXPORT void *__libc_realloc(void *p, size_t n) { return do_realloc_as(MMT_REALLOC, p, 1, n, true); }
#endif

/* ---- C++ operators (Itanium ABI names, defined in C so C programs do not
 * pull in libstdc++; the real ones are found on first use) ---------------- */

typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);

/* name's definition in one of the libraries named, if the program has
 * loaded it where the global scope does not reach (dlopen without
 * RTLD_GLOBAL, as an interpreter loads a C++ extension: the library's
 * calls of operator new find the recorder's, which is preloaded, but
 * RTLD_NEXT and RTLD_DEFAULT search only the global scope).  The reference
 * dlopen takes is kept, so that the library stays while the recorder may
 * call into it. */
static void *sym_in_loaded(const char *name, const char *const *libs) {
  for (; *libs; libs++) {
    void *h = dlopen(*libs, RTLD_LAZY | RTLD_NOLOAD);
    void *f = h ? dlsym(h, name) : NULL;
    if (f) return f;
    if (h) dlclose(h);
  }
  return NULL;
}
static const char *const cxx_libs[] = {"libstdc++.so.6", "libc++.so.1", NULL};
static const char *const unwinder_libs[] = {"libgcc_s.so.1", "libunwind.so.1", NULL};

static void *next_sym(const char *name) {
  ensure_init();
  void *f = dlsym(RTLD_NEXT, name);
  if (!f) f = sym_in_loaded(name, cxx_libs);
  if (!f) {
    char msg[200];
    snprintf(msg, sizeof msg, "mmtrace: %s not found under the tracer\n", name);
    die(msg);
  }
  return f;
}

#define NEXT(var, type, sym)                                               \
  static _Atomic(type) var;                                                \
  type fn_ = atomic_load_explicit(&var, memory_order_relaxed);             \
  if (UNLIKELY(!fn_)) { fn_ = (type)next_sym(sym); atomic_store(&var, fn_); }

/* A throwing operator new unwinds through these frames (compiled with
 * -fexceptions): the cleanup records the call as failed and leaves the
 * traced state, which the normal return does itself.  The two functions of
 * the unwinder the compiler makes such frames name, the C personality
 * routine and _Unwind_Resume, the recorder defines (hidden) as calls of the
 * unwinder's own, found when first needed.  Only a program that throws
 * comes to them, and such a program has loaded the unwinder itself (the C++
 * library needs it), so the recorder does not load it into every C
 * program it traces: 96 KiB of resident code that the trace's memory record
 * would count as the program's. */
/* The unwinder's definition of name, looked up once (init found it where
 * the program had the unwinder at start, else at the first unwinding);
 * NULL while there is none. */
static void *unwinder_sym(void *_Atomic *cache, const char *name) {
  void *fn = atomic_load_explicit(cache, memory_order_relaxed);
  if (!fn) {
    fn = dlsym(RTLD_DEFAULT, name);             /* ours are hidden: never found */
    if (!fn) fn = sym_in_loaded(name, unwinder_libs);
    atomic_store_explicit(cache, fn, memory_order_relaxed);
  }
  return fn;
}
typedef int (*personality_fn)(int, int, uint64_t, void *, void *);
int __gcc_personality_v0(int version, int actions, uint64_t cls, void *exc, void *ctx) {
  personality_fn fn = (personality_fn)unwinder_sym(&unwinder_personality, "__gcc_personality_v0");
  if (!fn) abort();                             /* unwinding, and no unwinder: cannot happen */
  return fn(version, actions, cls, exc, ctx);
}
void _Unwind_Resume(void *exc) {
  void (*fn)(void *) = (void (*)(void *))unwinder_sym(&unwinder_resume, "_Unwind_Resume");
  if (!fn) abort();
  fn(exc);
  abort();                                      /* _Unwind_Resume does not return */
}
typedef struct { tstate_t *t; unsigned op; size_t align, n; bool done; } new_guard_t;
static void new_unwound(new_guard_t *g) {
  if (!g->done) rec_alloc(g->t, g->op, g->align, 0, g->n, NULL);
}
#define GUARD(OP, AL) new_guard_t guard_ __attribute__((cleanup(new_unwound))) = {t, OP, AL, n, false}
#define GUARD_DONE() guard_.done = true

/* The fast path of the operators new without alignment (malloc's: an
 * unstamped call of fewer than MMT_TIMED_BYTES).  A throwing one unwinds
 * through fast_new_unwound, which records it as failed, as the general
 * path does, and leaves the traced call. */
typedef struct { tstate_t *t; unsigned op; bool done; } fast_guard_t;
static void fast_new_unwound(fast_guard_t *g) {
  if (!g->done) fast_alloc_done(g->t, g->op, NULL);
}
static inline tstate_t *fast_new_state(size_t n) {
  tstate_t *t = fast_state();
  return LIKELY(t) && LIKELY(n < MMT_TIMED_BYTES) && LIKELY(t->skip) ? t : NULL;
}

#define NEW_FN(cname, sym, OP)                                             \
  EXPORT void *cname(size_t n) {                                           \
    NEXT(next, new_fn, sym)                                                \
    tstate_t *t = fast_new_state(n);                                       \
    if (LIKELY(t)) {                                                       \
      fast_alloc_begin(t, OP, 0, n);                                       \
      fast_guard_t g __attribute__((cleanup(fast_new_unwound))) = {t, OP, false}; \
      void *p = fn_(n);                                                    \
      g.done = true;                                                       \
      fast_alloc_done(t, OP, p);                                           \
      return p;                                                            \
    }                                                                      \
    t = enter();                                                           \
    if (!t) return fn_(n);                                                 \
    stamp(t, n >= MMT_TIMED_BYTES);                                        \
    GUARD(OP, 0);                                                          \
    void *p = fn_(n);                                                      \
    GUARD_DONE();                                                          \
    rec_alloc(t, OP, 0, 0, n, p);                                          \
    return p;                                                              \
  }
#define NEW_NT_FN(cname, sym, OP)                                          \
  EXPORT void *cname(size_t n, const void *nt) {                           \
    NEXT(next, new_nt_fn, sym)                                             \
    tstate_t *t = fast_new_state(n);                                       \
    if (LIKELY(t)) {                                                       \
      fast_alloc_begin(t, OP, 0, n);                                       \
      void *p = fn_(n, nt);                                                \
      fast_alloc_done(t, OP, p);                                           \
      return p;                                                            \
    }                                                                      \
    t = enter();                                                           \
    if (!t) return fn_(n, nt);                                             \
    stamp(t, n >= MMT_TIMED_BYTES);                                        \
    void *p = fn_(n, nt);                                                  \
    rec_alloc(t, OP, 0, 0, n, p);                                          \
    return p;                                                              \
  }
#define NEW_AL_FN(cname, sym, OP)                                          \
  EXPORT void *cname(size_t n, size_t al) {                                \
    NEXT(next, new_al_fn, sym)                                             \
    tstate_t *t = enter();                                                 \
    if (!t) return fn_(n, al);                                             \
    stamp(t, n >= MMT_TIMED_BYTES);                                        \
    GUARD(OP, al);                                                         \
    void *p = fn_(n, al);                                                  \
    GUARD_DONE();                                                          \
    rec_alloc(t, OP, al, 0, n, p);                                         \
    return p;                                                              \
  }
#define NEW_AL_NT_FN(cname, sym, OP)                                       \
  EXPORT void *cname(size_t n, size_t al, const void *nt) {                \
    NEXT(next, new_al_nt_fn, sym)                                          \
    tstate_t *t = enter();                                                 \
    if (!t) return fn_(n, al, nt);                                         \
    stamp(t, n >= MMT_TIMED_BYTES);                                        \
    void *p = fn_(n, al, nt);                                              \
    rec_alloc(t, OP, al, 0, n, p);                                         \
    return p;                                                              \
  }

NEW_FN(_Znwm, "_Znwm", MMT_NEW)
NEW_FN(_Znam, "_Znam", MMT_NEW_ARRAY)
NEW_NT_FN(_ZnwmRKSt9nothrow_t, "_ZnwmRKSt9nothrow_t", MMT_NEW_NOTHROW)
NEW_NT_FN(_ZnamRKSt9nothrow_t, "_ZnamRKSt9nothrow_t", MMT_NEW_ARRAY_NOTHROW)
NEW_AL_FN(_ZnwmSt11align_val_t, "_ZnwmSt11align_val_t", MMT_NEW_ALIGNED)
NEW_AL_FN(_ZnamSt11align_val_t, "_ZnamSt11align_val_t", MMT_NEW_ARRAY_ALIGNED)
NEW_AL_NT_FN(_ZnwmSt11align_val_tRKSt9nothrow_t, "_ZnwmSt11align_val_tRKSt9nothrow_t",
             MMT_NEW_ALIGNED_NOTHROW)
NEW_AL_NT_FN(_ZnamSt11align_val_tRKSt9nothrow_t, "_ZnamSt11align_val_tRKSt9nothrow_t",
             MMT_NEW_ARRAY_ALIGNED_NOTHROW)

/* delete: the forwarding call gets (p, size, align) and passes what its
 * signature takes. */
typedef void (*del_fn)(void *);
typedef void (*del_s_fn)(void *, size_t);
typedef void (*del_a_fn)(void *, size_t);
typedef void (*del_sa_fn)(void *, size_t, size_t);
typedef void (*del_nt_fn)(void *, const void *);
typedef void (*del_ant_fn)(void *, size_t, const void *);

#define DEL_WRAP(cname, sym, type, OP, params, call_args, size_expr, align_expr)  \
  static _Atomic(type) next_##cname;                                             \
  static void fwd_##cname(void *p, size_t size, size_t align) {                   \
    (void)size; (void)align;                                                      \
    atomic_load_explicit(&next_##cname, memory_order_relaxed) call_args;           \
  }                                                                               \
  EXPORT void cname params {                                                      \
    if (UNLIKELY(!atomic_load_explicit(&next_##cname, memory_order_relaxed)))     \
      atomic_store(&next_##cname, (type)next_sym(sym));                          \
    if (!(mmt_op_shape(OP) & MMT_HAS_ALIGN) && fast_release(OP, p, size_expr, fwd_##cname)) \
      return;                                                                     \
    release(OP, p, size_expr, align_expr, fwd_##cname);                           \
  }

DEL_WRAP(_ZdlPv, "_ZdlPv", del_fn, MMT_DELETE, (void *p), (p), 0, 0)
DEL_WRAP(_ZdaPv, "_ZdaPv", del_fn, MMT_DELETE_ARRAY, (void *p), (p), 0, 0)
DEL_WRAP(_ZdlPvm, "_ZdlPvm", del_s_fn, MMT_DELETE_SIZED, (void *p, size_t n), (p, size), n, 0)
DEL_WRAP(_ZdaPvm, "_ZdaPvm", del_s_fn, MMT_DELETE_ARRAY_SIZED, (void *p, size_t n), (p, size), n, 0)
DEL_WRAP(_ZdlPvRKSt9nothrow_t, "_ZdlPvRKSt9nothrow_t", del_nt_fn, MMT_DELETE,
         (void *p, const void *nt), (p, NULL), ((void)nt, 0), 0)
DEL_WRAP(_ZdaPvRKSt9nothrow_t, "_ZdaPvRKSt9nothrow_t", del_nt_fn, MMT_DELETE_ARRAY,
         (void *p, const void *nt), (p, NULL), ((void)nt, 0), 0)
DEL_WRAP(_ZdlPvSt11align_val_t, "_ZdlPvSt11align_val_t", del_a_fn, MMT_DELETE_ALIGNED,
         (void *p, size_t a), (p, align), 0, a)
DEL_WRAP(_ZdaPvSt11align_val_t, "_ZdaPvSt11align_val_t", del_a_fn, MMT_DELETE_ARRAY_ALIGNED,
         (void *p, size_t a), (p, align), 0, a)
DEL_WRAP(_ZdlPvmSt11align_val_t, "_ZdlPvmSt11align_val_t", del_sa_fn, MMT_DELETE_SIZED_ALIGNED,
         (void *p, size_t n, size_t a), (p, size, align), n, a)
DEL_WRAP(_ZdaPvmSt11align_val_t, "_ZdaPvmSt11align_val_t", del_sa_fn, MMT_DELETE_ARRAY_SIZED_ALIGNED,
         (void *p, size_t n, size_t a), (p, size, align), n, a)
DEL_WRAP(_ZdlPvSt11align_val_tRKSt9nothrow_t, "_ZdlPvSt11align_val_tRKSt9nothrow_t", del_ant_fn,
         MMT_DELETE_ALIGNED, (void *p, size_t a, const void *nt), (p, align, NULL), ((void)nt, 0), a)
DEL_WRAP(_ZdaPvSt11align_val_tRKSt9nothrow_t, "_ZdaPvSt11align_val_tRKSt9nothrow_t", del_ant_fn,
         MMT_DELETE_ARRAY_ALIGNED, (void *p, size_t a, const void *nt), (p, align, NULL), ((void)nt, 0), a)

/* ---- threads --------------------------------------------------------------- */

/* A thread made by pthread_create is registered when it starts, not at
 * its first call: its thread_begin is when it began, and the time before
 * its first call (often its whole computation) is its first gap. */
static void *thread_start(void *arg) {
  tstate_t *t = arg;
  void *(*fn)(void *) = t->start_fn;
  void *fn_arg = t->start_arg;
  if (tracing && !tls.state && !tls.done) {
    tls.depth = 1;
    thread_begin(t, now_ticks());
    tls.state = t;
    pthread_setspecific(exit_key, t);
    tls.depth = 0;
  } else {
    state_release(t);
  }
  return fn(fn_arg);
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  ensure_init();
  if (UNLIKELY(!real.pthread_create)) die("mmtrace: cannot find pthread_create under the tracer\n");
  /* a thread the allocator starts from inside a traced call (a purge
   * thread, say) is not the program's: it is not registered */
  tstate_t *t = tracing && !tls.depth ? state_new() : NULL;
  if (!t) return real.pthread_create(th, attr, fn, arg);
  t->start_fn = fn;
  t->start_arg = arg;
  int rc = real.pthread_create(th, attr, thread_start, t);
  if (rc != 0) state_release(t);
  return rc;
}

/* ---- fork, exec, _exit ------------------------------------------------------- */

/* _exit skips atexit and destructors (forked children often leave by it):
 * the trace is finished here. */
EXPORT void _exit(int status) {
  void (*next)(int) = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
  finish();
  if (next) next(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}
EXPORT void _Exit(int status) { _exit(status); }

EXPORT pid_t fork(void) {
  ensure_init();
  tstate_t *t = enter();
  if (t) stamp(t, true);
  pid_t pid = real.fork();
  if (pid != 0 && t) {                      /* the parent (or a failure) */
    unsigned char *q = ev_begin(t, MMT_FORK | (pid < 0 ? MMT_FAILED : 0), true);
    q = mmt_put_varint(q, pid < 0 ? 0 : (uint64_t)pid);
    ev_end(t, q);
  }
  if (t) leave();
  return pid;
}

/* Before exec the image's events are written and an exec record marks the
 * end of this image's part; if exec fails, the trace goes on. */
static void before_exec(void) {
  if (!tracing || !own_trace()) return;
  int d = tls.depth;
  tls.depth = 1;
  flush_all(false);
  write_end(MMT_REC_EXEC, 0);
  tls.depth = d;
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  ensure_init();
  before_exec();
  return real.execve(path, argv, envp);
}
EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  ensure_init();
  before_exec();
  return real.execvpe(file, argv, envp);
}
EXPORT int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }
EXPORT int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

/* execl, execlp, execle: the list made an array on the stack. */
#define ARGV_FROM_LIST(arg0, ap, argv)                                   \
  size_t n_ = 1;                                                         \
  va_start(ap, arg0);                                                    \
  while (va_arg(ap, const char *)) n_++;                                 \
  va_end(ap);                                                            \
  const char *argv[n_ + 1];                                              \
  argv[0] = arg0;                                                        \
  va_start(ap, arg0);                                                    \
  for (size_t i_ = 1; i_ <= n_; i_++) argv[i_] = va_arg(ap, const char *);

EXPORT int execl(const char *path, const char *arg0, ...) {
  va_list ap;
  ARGV_FROM_LIST(arg0, ap, argv)
  va_end(ap);
  return execve(path, (char *const *)argv, environ);
}
EXPORT int execlp(const char *file, const char *arg0, ...) {
  va_list ap;
  ARGV_FROM_LIST(arg0, ap, argv)
  va_end(ap);
  return execvpe(file, (char *const *)argv, environ);
}
EXPORT int execle(const char *path, const char *arg0, ...) {
  va_list ap;
  ARGV_FROM_LIST(arg0, ap, argv)
  char *const *envp = va_arg(ap, char *const *);
  va_end(ap);
  return execve(path, (char *const *)argv, envp);
}
