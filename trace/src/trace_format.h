/* trace_format.h — the mmtrace file format (trace/FORMAT.md is its prose
 * description; this header is the one definition both the recorder,
 * record.c, and the reader, reader.c, compile against).
 *
 * Layout of a trace file (one per process image):
 *
 *   header   "mmtrace\0" | u16 version | varint L | L bytes of text | u32 fnv(text)
 *   records  any number of:
 *            'C' chunk: varint thread | varint chunk_seq | varint events
 *                       | varint bytes | varint ns | varint ticks | varint busy
 *                       | u64 sum(the chunk's bytes before it, then payload) | payload
 *            'X' exec:  u32 "EXEC"   (the image called exec; may go on if it failed)
 *            'M' memory (version 3): varint peak_kb | varint file_kb
 *                       | u32 fnv(the record's bytes before it)
 *                       (the image's resident memory when it ended: its peak,
 *                       and the part of it backed by files and shared memory,
 *                       both less the recorder's own library;
 *                       at most once, just before an end or signal record)
 *            'E' end:   varint chunks | u32 "END."   (the image exited normally)
 *            'S' signal: varint signo | varint chunks | u32 "SIG."  (it died of a signal)
 *
 * A chunk's payload holds `events` events of one thread, in the order the
 * thread made the calls.  Decoding an event needs the thread's state after
 * its previous chunk (last time, blocks allocated, last remote reference),
 * so a thread's chunks must be read in chunk_seq order: they are, because
 * only that thread writes them, one write(2) each.
 *
 * Times (version 2 and later): events count ticks of the header's clock (clock=tsc:
 * the x86 time-stamp counter; clock=monotonic: nanoseconds).  A chunk's ns
 * and ticks are both read when it was written, since the trace's start: an
 * event's time in ns is its ticks * ns / ticks of the chunk that holds it.
 * The recorder reads the clock at most once per call, when the call
 * begins: each event has `delta`, the ticks since the thread's previous
 * stamped call began (or its THREAD_BEGIN).  In a dense burst 7 calls in
 * 8 are unstamped: delta 0 (untimed), the next stamped call's delta
 * spanning them; a release of another thread's block is always stamped.  A call's own time (the allocator's and the
 * recorder's) is measured only for a TIMED event (event byte bit 7: a
 * call on a block of MMT_TIMED_BYTES or more, a fork, a call after a long
 * gap), which then carries `dur`; for the others the chunk's `busy` is the
 * thread's sampled average.  So the program's own time before a call is
 * its delta less the previous call's dur or busy.  Before a call that
 * follows a long gap (about 100 us or more), the recorder writes a CPU
 * event: the thread's CPU time since its THREAD_BEGIN, read after the
 * call, from which a reader tells how much of the gap the thread was
 * running and how much it was blocked.
 *
 * Version 3 is version 2 with the memory record ('M'); a version 2 trace
 * (still read) has none.  The times below are version 2's and 3's.
 *
 * Version 1 (still read): every event has `gap` (ticks from the return of
 * the previous call) and `dur`; the chunk's last header field is `post`,
 * the recorder's sampled ticks after each call, which are in the gaps.
 *
 * Event: one byte  op (bits 0-4) | FAILED (bit 5) | INPLACE (bit 6) |
 * TIMED (bit 7, version 2; zero in version 1).  Then, by op (all integers
 * varints, see below; `time` is `delta [dur]`, in version 1 `gap dur`):
 *   THREAD_BEGIN  ticks since trace start | OS thread id
 *   THREAD_END    time
 *   CPU           thread CPU ns since its THREAD_BEGIN (version 2; the next
 *                 event of the thread is a TIMED call)
 *   malloc-like   time | [align] | size            (align for the ALIGNED ops)
 *   CALLOC        time | nmemb | size
 *   REALLOC       time | ref | size
 *   REALLOCARRAY  time | ref | nmemb | size
 *   free-like     time | ref | [size] | [align]    (size for the SIZED deletes)
 *   FORK          time | child pid | FAILED if fork failed
 * A call begins when the program called; dur ends when the allocator
 * returned (version 1: also the recorder's work after it).  A release's
 * call begins before the allocator sees the block; an allocation's ends
 * after the allocator returned it.
 *
 * Block identity.  Every call that returns a new block (any successful
 * allocation, a successful realloc) gives it the id (thread, n), where n
 * counts the blocks this thread has been given so far (from 0); the id is
 * implicit in the event.  A ref names the block a call releases:
 *   0                NULL
 *   1, address       a pointer the trace never saw returned (freed twice,
 *                    from before tracing started, from another allocator)
 *   2 + 2k           this thread's block n_thread - 1 - k (k = 0: the latest)
 *   2 + 2z + 1, t    block (t, last_remote + unzigzag(z)) of thread t, and
 *                    last_remote becomes its n (last_remote: per referring
 *                    thread, starts at 0)
 *
 * realloc: FAILED means it returned NULL.  With size 0 and a non-NULL ref,
 * the old block is gone (glibc's realloc(p, 0) frees p); with size > 0 it
 * stays.  INPLACE means the new block has the old one's address.
 */
#ifndef MMTRACE_FORMAT_H
#define MMTRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MMT_MAGIC "mmtrace"      /* 8 bytes with its NUL */
#define MMT_MAGIC_LEN 8
#define MMT_VERSION 3                /* written; readers also take 1 and 2 */
#define MMT_VERSION_OLDEST 1
#define MMT_HEADER_TEXT_MAX 65536

#define MMT_REC_CHUNK 'C'
#define MMT_REC_EXEC 'X'
#define MMT_REC_END 'E'
#define MMT_REC_SIGNAL 'S'
#define MMT_REC_MEMORY 'M'           /* version 3 */
#define MMT_SIGNAL_MARK 0x2e474953u  /* "SIG." little-endian */
#define MMT_EXEC_MARK 0x43455845u    /* "EXEC" little-endian */
#define MMT_END_MARK 0x2e444e45u     /* "END." little-endian */
#define MMT_CHUNK_MAX (1u << 20)     /* payload bytes; the recorder writes <= 32 KiB */

enum mmt_op {
  MMT_THREAD_BEGIN = 0,
  MMT_THREAD_END,
  MMT_MALLOC,
  MMT_CALLOC,
  MMT_REALLOC,
  MMT_FREE,
  MMT_POSIX_MEMALIGN,
  MMT_ALIGNED_ALLOC,
  MMT_MEMALIGN,
  MMT_VALLOC,
  MMT_PVALLOC,
  MMT_REALLOCARRAY,
  MMT_NEW,                       /* operator new(size_t) */
  MMT_NEW_ARRAY,                 /* operator new[](size_t) */
  MMT_NEW_NOTHROW,
  MMT_NEW_ARRAY_NOTHROW,
  MMT_NEW_ALIGNED,               /* operator new(size_t, align_val_t) */
  MMT_NEW_ARRAY_ALIGNED,
  MMT_NEW_ALIGNED_NOTHROW,
  MMT_NEW_ARRAY_ALIGNED_NOTHROW,
  MMT_DELETE,                    /* operator delete(void *) */
  MMT_DELETE_ARRAY,
  MMT_DELETE_SIZED,              /* operator delete(void *, size_t) */
  MMT_DELETE_ARRAY_SIZED,
  MMT_DELETE_ALIGNED,            /* operator delete(void *, align_val_t) */
  MMT_DELETE_ARRAY_ALIGNED,
  MMT_DELETE_SIZED_ALIGNED,
  MMT_DELETE_ARRAY_SIZED_ALIGNED,
  MMT_FORK,
  MMT_CPU,                       /* version 2: the thread's CPU time, before a TIMED call */
  MMT_NOPS
};

#define MMT_OP_MASK 0x1f
#define MMT_FAILED 0x20
#define MMT_INPLACE 0x40
#define MMT_TIMED 0x80                 /* version 2: the event carries dur (version 1: reserved, zero) */

/* Calls on blocks of this many bytes or more are timed (version 2). */
#define MMT_TIMED_BYTES 65536

/* What an op's event carries, for the reader's table and the recorder's
 * checks: an alignment, a size, an element count, a ref. */
enum { MMT_HAS_ALIGN = 1, MMT_HAS_SIZE = 2, MMT_HAS_NMEMB = 4, MMT_HAS_REF = 8,
       MMT_ALLOCATES = 16, MMT_RELEASES = 32 };

static inline unsigned mmt_op_shape(unsigned op) {
  switch (op) {
  case MMT_MALLOC: case MMT_VALLOC: case MMT_PVALLOC:
  case MMT_NEW: case MMT_NEW_ARRAY: case MMT_NEW_NOTHROW: case MMT_NEW_ARRAY_NOTHROW:
    return MMT_HAS_SIZE | MMT_ALLOCATES;
  case MMT_POSIX_MEMALIGN: case MMT_ALIGNED_ALLOC: case MMT_MEMALIGN:
  case MMT_NEW_ALIGNED: case MMT_NEW_ARRAY_ALIGNED:
  case MMT_NEW_ALIGNED_NOTHROW: case MMT_NEW_ARRAY_ALIGNED_NOTHROW:
    return MMT_HAS_ALIGN | MMT_HAS_SIZE | MMT_ALLOCATES;
  case MMT_CALLOC: return MMT_HAS_NMEMB | MMT_HAS_SIZE | MMT_ALLOCATES;
  case MMT_REALLOC: return MMT_HAS_REF | MMT_HAS_SIZE | MMT_ALLOCATES | MMT_RELEASES;
  case MMT_REALLOCARRAY:
    return MMT_HAS_REF | MMT_HAS_NMEMB | MMT_HAS_SIZE | MMT_ALLOCATES | MMT_RELEASES;
  case MMT_FREE: case MMT_DELETE: case MMT_DELETE_ARRAY: return MMT_HAS_REF | MMT_RELEASES;
  case MMT_DELETE_SIZED: case MMT_DELETE_ARRAY_SIZED:
    return MMT_HAS_REF | MMT_HAS_SIZE | MMT_RELEASES;
  case MMT_DELETE_ALIGNED: case MMT_DELETE_ARRAY_ALIGNED:
    return MMT_HAS_REF | MMT_HAS_ALIGN | MMT_RELEASES;
  case MMT_DELETE_SIZED_ALIGNED: case MMT_DELETE_ARRAY_SIZED_ALIGNED:
    return MMT_HAS_REF | MMT_HAS_SIZE | MMT_HAS_ALIGN | MMT_RELEASES;
  default: return 0;
  }
}

/* The C++ operators: MMT_NEW .. MMT_DELETE_ARRAY_SIZED_ALIGNED, in one run. */
static inline int mmt_op_is_cxx(unsigned op) {
  return op >= MMT_NEW && op <= MMT_DELETE_ARRAY_SIZED_ALIGNED;
}

/* The names the dump and the report print, C++ operators demangled. */
static inline const char *mmt_op_name(unsigned op) {
  static const char *const names[MMT_NOPS] = {
    "thread_begin", "thread_end", "malloc", "calloc", "realloc", "free",
    "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc", "reallocarray",
    "new", "new[]", "new(nothrow)", "new[](nothrow)", "new(align)", "new[](align)",
    "new(align,nothrow)", "new[](align,nothrow)", "delete", "delete[]",
    "delete(size)", "delete[](size)", "delete(align)", "delete[](align)",
    "delete(size,align)", "delete[](size,align)", "fork", "cpu",
  };
  return op < MMT_NOPS ? names[op] : "?";
}

/* Ref encoding constants (see the header comment). */
#define MMT_REF_NULL 0u
#define MMT_REF_UNKNOWN 1u

/* LEB128 varints: 7 bits per byte, low bits first, at most 10 bytes. */
#define MMT_VARINT_MAX 10
static inline unsigned char *mmt_put_varint(unsigned char *p, uint64_t v) {
  while (v >= 0x80) { *p++ = (unsigned char)(v | 0x80); v >>= 7; }
  *p++ = (unsigned char)v;
  return p;
}

/* Reads the varint at *p, which must end before `end`: 1 with *v set and
 * *p past it; 0 if it runs past `end`; -1 if it is over 64 bits. */
static inline int mmt_get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v) {
  uint64_t x = 0;
  for (unsigned i = 0; i < MMT_VARINT_MAX; i++) {
    if (*p >= end) return 0;
    unsigned c = *(*p)++;
    if (i == 9 && (c & 0x7e)) return -1;
    x |= (uint64_t)(c & 0x7f) << (7 * i);
    if (!(c & 0x80)) { *v = x; return 1; }
  }
  return -1;
}

static inline uint64_t mmt_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t mmt_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* 32-bit FNV-1a: the header checksum (catches any single flipped
 * byte; it is not a defence against deliberate tampering). */
static inline uint32_t mmt_fnv(const unsigned char *p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
  return h;
}

/* The chunk checksum: 8 bytes at a time, h = (h ^ word) * odd, so that any
 * damage inside one word changes the sum (each step is a bijection of h),
 * at a tenth of FNV's cost per byte. */
#define MMT_SUM_SEED 0xcbf29ce484222325ull
static inline uint64_t mmt_load_le64(const unsigned char *p) {
  uint64_t w;
  memcpy(&w, p, 8);                  /* one unaligned load */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = __builtin_bswap64(w);
#endif
  return w;
}
static inline uint64_t mmt_sum_more(uint64_t h, const unsigned char *p, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) h = (h ^ mmt_load_le64(p + i)) * 0x100000001b3ull;
  for (; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static inline void mmt_put_u64(unsigned char *p, uint64_t v) {
  for (unsigned b = 0; b < 8; b++) p[b] = (unsigned char)(v >> (8 * b));
}
static inline uint64_t mmt_get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (unsigned b = 0; b < 8; b++) v |= (uint64_t)p[b] << (8 * b);
  return v;
}

static inline void mmt_put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}
static inline uint32_t mmt_get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
