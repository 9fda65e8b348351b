/* replay.c — `mmtrace replay`: run a trace's calls again, with the same
 * threads, on any allocator, and measure time, peak RSS and page faults.
 *
 *   mmtrace replay TRACE [--alloc NAME|PATH.so[VAR=VALUE,...]]... [--reps N]
 *                  [--speed S] [--touch page|all] [--threads K | --copies N] [--partial]
 *                  [--keep DIR]
 *
 * --copies N runs N copies of the traced threads side by side, each copy
 * with its own blocks and its own time waits (a trace taken on a small
 * machine, replayed at N times its threads on a larger one).  --threads K
 * scales to K threads: below the trace's T threads it folds them onto K
 * replay threads (replay_group: each runs its members' calls merged in the
 * trace's time order, and their work between calls one after another); a
 * multiple of T is K / T copies.
 *
 * Three parts:
 *
 * 1. prepare (once per trace, in a child, so that the measuring process
 *    stays small: Linux carries a parent's peak RSS into the ru_maxrss of
 *    the children it forks): one pass over the trace in file order writes
 *    one program per trace thread (compact ops: op_encode) in a work directory,
 *    and gives every block a slot in a table of live blocks.  A slot is
 *    reused for a new block of the thread that freed it (that thread's
 *    later calls come after its free in its own program), or of any
 *    thread once its release is well in the past (slot_new), so the table
 *    holds about the peak number of live blocks.  A free read before its
 *    block's allocation (another thread's chunk came first) is patched in
 *    place when the allocation is read.
 *
 * 2. run (`mmtrace replay-run DIR`, a child with LD_PRELOAD set to the
 *    allocator): one replay thread per trace thread, each executing its
 *    program.  Every op on a slot names the slot's generation it expects
 *    and bumps it; an op waits until its slot has that generation.  So a
 *    free waits until its block exists, and a new block waits until the
 *    slot's previous block is gone.  Threads start in the order they
 *    began; before starting one, the threads whose thread_end came before
 *    its begin are joined, so the replay has the same threads alive at once
 *    as the program had.  Before each call a thread does the program's own
 *    work: S times (--speed S, default 1) the recorded work since its
 *    previous call returned, spun (less the time the call's block kept it
 *    waiting: a consumer's gap holds its wait for the producer, which the
 *    replay makes as it waits for the block, not twice).  A gap of 200 us
 *    or more is a thread blocked in the program (a join, a lock, a
 *    condition) for all of it, or (a version 2 trace says) for the part the
 *    thread was not running: it spins the part it was, then waits until
 *    every other thread has replayed the calls before that time
 *    (wait_others), or, if none was behind, sleeps the rest (I/O, a
 *    timer); the part of the wait after every other thread's last op (a
 *    worker that computes without a call until the program exits) it
 *    sleeps as well.  And every 64 calls a thread waits until no other is more
 *    than 500 us of the trace's time behind it: the program's own
 *    hand-offs kept its threads that close (a producer ahead of its
 *    consumer would hold memory the program never held).  Every wait is
 *    for calls earlier in the trace's time
 *    (a release begins after its block's allocation returned), so the
 *    thread waiting for the earliest time can always go on: the waits form
 *    no cycle.  A trace whose clock disagrees with that (a release stamped
 *    before its allocation: a clock that differs between CPUs) is replayed
 *    without the time waits, with a note.  Each new block gets one byte
 *    written per 4 KiB page (--touch all: every byte), so RSS and page
 *    faults are real.  --speed 0 replays the calls back to back (the lag
 *    bound still holds).  The replayer's own work per call adds to every
 *    allocator's time alike and so thins out their differences in a
 *    program that does little but allocate: an allocation or a release
 *    (not a realloc) whose block is ready, that did not fail and follows
 *    no long gap (most calls of most traces) is decoded and made by
 *    replay_plain, straight from the reader's buffer, and every other op
 *    by the general path (reader_peek, replay_op), with the same effects.
 *
 * 3. measure (this process): each allocator in turn, alternating order
 *    every repetition, wall time of the run phase from the child, peak RSS
 *    and page faults from wait4; medians.
 *
 * What a replay cannot reproduce, and counts: pointers the trace never saw
 * returned are skipped; a call that failed in the trace is made again with
 * the same arguments (a result is freed at once); a block the replayed
 * allocator refuses (NULL where the program got memory) is counted, and its
 * later release is of NULL.  C++ new is replayed by the nothrow operator of
 * the same kind (a C replayer cannot catch bad_alloc); pvalloc, valloc and
 * reallocarray by memalign and realloc on an allocator that lacks them.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "reader.h"
#include "table.h"
#include "tool.h"

#define NO_SLOT UINT32_MAX
#define NO_CPU UINT32_MAX

enum { R_FAILED = 1 };              /* the call failed in the trace */

typedef struct {
  uint8_t op;                       /* enum mmt_op */
  uint8_t flags;
  uint16_t unused;
  uint32_t slot, gen;               /* the block the call releases (or reallocs in place of) */
  uint32_t slot2, gen2;             /* the block it returns */
  uint32_t gap_cpu_us;              /* of a long gap, the part the thread computed (NO_CPU: unknown) */
  uint64_t size, arg;               /* arg: alignment or nmemb */
  uint64_t dt_ns;                   /* the program's own time before the call (the trace's gap) */
  uint64_t at_ns;                   /* when the call began in the trace */
} rop_t;

/* An op on disk: 2 bytes (op, flags), the released slot and its
 * generation as two u32 (at a fixed place, so that a release read before
 * its block's allocation can be patched in place by offset), then
 * varints: [slot2, gen2 if E_SLOT2], size, arg, dt_ns, at_ns less the
 * previous op's (zigzag), [gap_cpu_us if E_CPU]: 12 to 25 bytes for most
 * calls. */
enum { E_SLOT2 = 2, E_CPU = 4 };    /* flags on disk, beside R_FAILED */
#define OP_PATCH_AT 2               /* where slot and gen sit in an encoded op */
#define OP_MAX (OP_PATCH_AT + 8 + 7 * MMT_VARINT_MAX)

static size_t op_encode(unsigned char *out, const rop_t *o, uint64_t prev_at) {
  unsigned char *q = out;
  *q++ = o->op;
  *q++ = (unsigned char)(o->flags | (o->slot2 != NO_SLOT ? E_SLOT2 : 0) | (o->gap_cpu_us != NO_CPU ? E_CPU : 0));
  memcpy(q, &o->slot, 4);
  memcpy(q + 4, &o->gen, 4);
  q += 8;
  if (o->slot2 != NO_SLOT) {
    q = mmt_put_varint(q, o->slot2);
    q = mmt_put_varint(q, o->gen2);
  }
  q = mmt_put_varint(q, o->size);
  q = mmt_put_varint(q, o->arg);
  q = mmt_put_varint(q, o->dt_ns);
  q = mmt_put_varint(q, mmt_zigzag((int64_t)(o->at_ns - prev_at)));
  if (o->gap_cpu_us != NO_CPU) q = mmt_put_varint(q, o->gap_cpu_us);
  return (size_t)(q - out);
}

/* One varint of an op; *ok turns false if it is cut or malformed.  Most
 * are one byte (an unstamped call's delta, small sizes, alignment 0): those
 * without the general loop. */
static inline uint64_t op_varint(const unsigned char **p, const unsigned char *end, bool *ok) {
  const unsigned char *q = *p;
  if (q < end && !(*q & 0x80)) {
    *p = q + 1;
    return *q;
  }
  uint64_t v = 0;
  if (mmt_get_varint(p, end, &v) <= 0) *ok = false;
  return v;
}

/* One varint of an op with at least MMT_VARINT_MAX bytes after it (no
 * bounds to check); one and two bytes (most of them) without the loop. */
static inline uint64_t op_varint_room(const unsigned char **p, bool *ok) {
  const unsigned char *q = *p;
  if (q[0] < 0x80) {
    *p = q + 1;
    return q[0];
  }
  if (q[1] < 0x80) {
    *p = q + 2;
    return (uint64_t)(q[0] & 0x7f) | (uint64_t)q[1] << 7;
  }
  uint64_t v = 0;
  if (mmt_get_varint(p, q + MMT_VARINT_MAX, &v) <= 0) *ok = false;
  return v;
}

/* Decodes one op from [p, end); its length, or 0 if it is cut there.
 * room: at least OP_MAX bytes from p (every op but the last few of a
 * program), so no varint needs its bounds checked. */
static inline __attribute__((always_inline)) size_t op_decode_in(const unsigned char *p, const unsigned char *end,
                                                                 rop_t *o, uint64_t prev_at, bool room) {
  const unsigned char *start = p;
  if (end - p < OP_PATCH_AT + 8) return 0;
  o->op = p[0];
  unsigned flags = p[1];
  o->flags = (uint8_t)(flags & R_FAILED);
  o->unused = 0;
  o->gen2 = 0;
  memcpy(&o->slot, p + 2, 4);
  memcpy(&o->gen, p + 6, 4);
  p += OP_PATCH_AT + 8;
  bool ok = true;
#define OPV() (room ? op_varint_room(&p, &ok) : op_varint(&p, end, &ok))
  o->slot2 = NO_SLOT;
  if (flags & E_SLOT2) {
    o->slot2 = (uint32_t)OPV();
    o->gen2 = (uint32_t)OPV();
  }
  o->size = OPV();
  o->arg = OPV();
  o->dt_ns = OPV();
  o->at_ns = prev_at + (uint64_t)mmt_unzigzag(OPV());
  o->gap_cpu_us = flags & E_CPU ? (uint32_t)OPV() : NO_CPU;
#undef OPV
  return ok ? (size_t)(p - start) : 0;
}

static size_t op_decode(const unsigned char *p, const unsigned char *end, rop_t *o, uint64_t prev_at) {
  return end - p >= OP_MAX ? op_decode_in(p, end, o, prev_at, true) : op_decode_in(p, end, o, prev_at, false);
}

/* ---- prepare ------------------------------------------------------------- */

typedef struct {
  int fd;                           /* -1 while closed (O_APPEND) */
  int patch_fd;                     /* -1 while closed: the same file, for pwrite */
  unsigned char *buf;
  size_t fill;                      /* bytes in buf, not yet written */
  uint64_t written;                 /* bytes in the file */
  uint64_t last_ns, begin_ns, end_ns, ops;
  uint64_t last_at;                 /* the at_ns of its last op (ops store the difference) */
  bool begun, ended;
  uint64_t *free_slots;             /* slots this thread freed (gen << 32 | slot): its next blocks' */
  size_t nfree, capfree;            /* (shared slots: a ring of the latest OWN_RING, nfree of them) */
  size_t ftop;                      /* shared slots: pushes less pops, the ring's top */
} pthread_prog_t;

/* A released slot, with the generation its next block takes (a stale
 * entry: the slot was taken since, by way of another list) and the time of
 * its release. */
typedef struct { uint32_t slot, gen; uint64_t at; } freed_t;

typedef struct {
  const char *dir;
  bool cross;                       /* slots shared between threads (slot_new) */
  freed_t *fifo;                    /* cross: released slots, oldest first */
  size_t fifo_cap, fifo_head, fifo_n;
  pthread_prog_t *th;
  uint64_t nth, capth;
  uint32_t *gen;                    /* per slot: the generation the next op on it expects */
  uint64_t nslots, capslots;
  table_t live;                    /* block -> slot */
  table_t pending;                 /* block -> (freeing thread, offset of its op) */
  uint64_t open_files;
  uint64_t ops, skipped_unknown, skewed;
  uint64_t cxx;                    /* ops of the C++ operators */
  uint64_t file_kb;                /* the program's file-backed memory (the trace's memory record) */
  bool memory_known;               /* ... if the trace has one */
} prep_t;

#define PROG_BUF (256 * 1024)
#define MAX_OPEN 256

#define PROG_PATH_MAX (PATH_MAX + 64)
static void prog_path(const prep_t *p, uint64_t t, char *out, size_t n) {
  snprintf(out, n, "%s/thread-%" PRIu64 ".ops", p->dir, t);
}

static pthread_prog_t *prog_of(prep_t *p, uint64_t t) {
  if (t >= p->capth) {
    uint64_t n = p->capth ? p->capth * 2 : 64;
    while (n <= t) n *= 2;
    p->th = realloc(p->th, n * sizeof *p->th);
    if (!p->th) mmt_oom();
    for (uint64_t i = p->capth; i < n; i++) {
      memset(&p->th[i], 0, sizeof *p->th);
      p->th[i].fd = p->th[i].patch_fd = -1;
    }
    p->capth = n;
  }
  if (t >= p->nth) p->nth = t + 1;
  return &p->th[t];
}

static void prog_flush(prep_t *p, uint64_t t) {
  pthread_prog_t *th = &p->th[t];
  if (!th->fill) return;
  if (th->fd < 0) {
    char path[PROG_PATH_MAX];
    prog_path(p, t, path, sizeof path);
    th->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (th->written ? 0 : O_TRUNC), 0644);
    if (th->fd < 0) { fprintf(stderr, "mmtrace replay: %s: %s\n", path, strerror(errno)); exit(2); }
    p->open_files++;
  }
  for (size_t off = 0; off < th->fill;) {
    ssize_t w = write(th->fd, th->buf + off, th->fill - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) { fprintf(stderr, "mmtrace replay: writing a thread program: %s\n", strerror(errno)); exit(2); }
    off += (size_t)w;
  }
  th->written += th->fill;
  th->fill = 0;
}

static void prog_close(prep_t *p, uint64_t t) {
  pthread_prog_t *th = &p->th[t];
  prog_flush(p, t);
  if (th->fd >= 0) { close(th->fd); th->fd = -1; p->open_files--; }
  if (th->patch_fd >= 0) { close(th->patch_fd); th->patch_fd = -1; p->open_files--; }
  free(th->buf);
  th->buf = NULL;
}

/* Appends op to thread t's program; returns its offset there. */
static uint64_t prog_add(prep_t *p, uint64_t t, const rop_t *op) {
  pthread_prog_t *th = &p->th[t];
  if (!th->buf) {
    if (p->open_files >= MAX_OPEN) {      /* too many open: close every other thread's file */
      for (uint64_t i = 0; i < p->nth; i++)
        if (i != t && (p->th[i].fd >= 0 || p->th[i].patch_fd >= 0)) prog_close(p, i);
    }
    th->buf = malloc(PROG_BUF);
    if (!th->buf) mmt_oom();
  }
  if (th->fill + OP_MAX > PROG_BUF) prog_flush(p, t);
  uint64_t off = th->written + th->fill;
  th->fill += op_encode(th->buf + th->fill, op, th->last_at);
  th->last_at = op->at_ns;
  th->ops++;                          /* the file's ops */
  if (op->op != MMT_THREAD_END) p->ops++;   /* the calls */
  if (mmt_op_is_cxx(op->op & MMT_OP_MASK)) p->cxx++;
  return off;
}

/* Rewrites the slot and generation of the op at offset off of thread t. */
static void prog_patch(prep_t *p, uint64_t t, uint64_t off, uint32_t slot, uint32_t gen) {
  pthread_prog_t *th = &p->th[t];
  uint32_t v[2] = {slot, gen};
  size_t field = OP_PATCH_AT;
  if (off >= th->written) {
    memcpy(th->buf + (off - th->written) + field, v, sizeof v);
    return;
  }
  char path[PROG_PATH_MAX];
  prog_path(p, t, path, sizeof path);
  if (th->patch_fd < 0) {            /* pwrite ignores the offset on an O_APPEND file */
    th->patch_fd = open(path, O_WRONLY | O_CLOEXEC);
    if (th->patch_fd >= 0) p->open_files++;
  }
  if (th->patch_fd < 0 || pwrite(th->patch_fd, v, sizeof v, (off_t)(off + field)) != (ssize_t)sizeof v) {
    fprintf(stderr, "mmtrace replay: patching %s: %s\n", path, strerror(errno));
    exit(2);
  }
}

/* How far, in the trace's time, a replay thread may run ahead of the
 * slowest other thread (checked every 64 calls). */
#define LAG_NS 500000u
/* A released slot is any thread's to reuse once its release lies
 * SLOT_SETTLED_NS back in the trace's time; until then only its own
 * thread's, which keeps the latest OWN_RING it released (slot_new). */
#define SLOT_SETTLED_NS (4 * (uint64_t)LAG_NS)
#define OWN_RING 4096

/* The queue's entry f is stale: its slot was taken since (from a ring). */
static bool fifo_stale(const prep_t *p, const freed_t *f) { return p->gen[f->slot] != f->gen; }

static uint32_t fifo_pop(prep_t *p) {
  uint32_t s = p->fifo[p->fifo_head].slot;
  p->fifo_head = (p->fifo_head + 1) % p->fifo_cap;
  p->fifo_n--;
  return s;
}

/* Drops the stale entries at the queue's head: its oldest is then a slot
 * still free, or there is none. */
static void fifo_trim(prep_t *p) {
  while (p->fifo_n && fifo_stale(p, &p->fifo[p->fifo_head])) fifo_pop(p);
}

/* Slots of released blocks wait for a new block.  Shared (cross): in one
 * queue, in the order their releases were read, each with the time of its
 * release, and in the releasing thread's ring of its latest ones.  A new
 * block takes, in this order:
 *   - the queue's oldest, if it was released more than SLOT_SETTLED_NS
 *     before the block's allocation in the trace's time: at every call the
 *     replay has the other threads at most that far behind (pace_arrive),
 *     so that release has been made and the new block does not wait for
 *     it (this also drains the queue);
 *   - one its own thread released (its own program made that release
 *     already: no wait), the latest first;
 *   - a new slot.
 * So no new block waits for another thread's release, which the program's
 * allocation never waited for: before, a new block took the oldest slot
 * any thread had released before it, and threads waited for each other
 * where the program's did not (recycle's two independent threads, 13,000
 * to 25,000 waits a replay; a producer for the consumer that freed its
 * last blocks).  The table holds the live set and the blocks released in
 * the last SLOT_SETTLED_NS of the trace's time.  An entry whose slot was
 * taken since by way of the other list is stale (its generation moved on)
 * and skipped.
 * Not shared (a trace whose clock cannot be trusted): each thread reuses
 * only the slots it freed itself, which its own program orders. */
static uint32_t slot_new(prep_t *p, uint64_t t, uint64_t at) {
  pthread_prog_t *th = &p->th[t];
  if (p->cross) {
    fifo_trim(p);
    if (p->fifo_n && p->fifo[p->fifo_head].at + SLOT_SETTLED_NS < at) return fifo_pop(p);
    while (th->nfree) {
      th->nfree--;
      uint64_t v = th->free_slots[--th->ftop % OWN_RING];
      if (p->gen[(uint32_t)v] == (uint32_t)(v >> 32)) return (uint32_t)v;
    }
  } else if (th->nfree) {
    return (uint32_t)th->free_slots[--th->nfree];
  }
  if (p->nslots >= p->capslots) {
    p->capslots = p->capslots ? p->capslots * 2 : 4096;
    p->gen = realloc(p->gen, p->capslots * sizeof *p->gen);
    if (!p->gen) mmt_oom();
  }
  if (p->nslots >= NO_SLOT) { fprintf(stderr, "mmtrace replay: over 4 billion live blocks\n"); exit(2); }
  p->gen[p->nslots] = 0;
  return (uint32_t)p->nslots++;
}

static void slot_free(prep_t *p, uint64_t t, uint32_t s, uint64_t at) {
  pthread_prog_t *th = &p->th[t];
  if (p->cross) {
    if (!th->free_slots && !(th->free_slots = malloc(OWN_RING * sizeof *th->free_slots))) mmt_oom();
    th->free_slots[th->ftop++ % OWN_RING] = (uint64_t)p->gen[s] << 32 | s;
    if (th->nfree < OWN_RING) th->nfree++;
    fifo_trim(p);
    if (p->fifo_n == p->fifo_cap) {
      size_t cap = p->fifo_cap ? p->fifo_cap * 2 : 4096;
      freed_t *q = malloc(cap * sizeof *q);
      if (!q) mmt_oom();
      for (size_t i = 0; i < p->fifo_n; i++) q[i] = p->fifo[(p->fifo_head + i) % p->fifo_cap];
      free(p->fifo);
      p->fifo = q;
      p->fifo_cap = cap;
      p->fifo_head = 0;
    }
    p->fifo[(p->fifo_head + p->fifo_n++) % p->fifo_cap] = (freed_t){s, p->gen[s], at};
    return;
  }
  if (th->nfree == th->capfree) {
    th->capfree = th->capfree ? th->capfree * 2 : 64;
    th->free_slots = realloc(th->free_slots, th->capfree * sizeof *th->free_slots);
    if (!th->free_slots) mmt_oom();
  }
  th->free_slots[th->nfree++] = s;
}

/* A release by thread f of block (o, n) in op *op (to be added): fills the
 * slot now, or (returning true: pending) leaves it to be patched when the
 * block's allocation is read.
 * A release that began before its block's allocation did (a clock that
 * is not the same on every CPU) is counted: the replay then cannot use the
 * trace's times to order threads. */
static bool release_slot(prep_t *p, uint64_t f, uint64_t o, uint64_t n, rop_t *op) {
  table_slot_t b;                     /* a: slot, b: the allocation's time */
  if (table_take(&p->live, table_block_key(o, n), &b)) {
    op->slot = (uint32_t)b.a;
    op->gen = p->gen[b.a]++;
    if (op->at_ns < b.b) p->skewed++;
    slot_free(p, f, (uint32_t)b.a, op->at_ns);
    return false;
  }
  op->slot = NO_SLOT;
  return true;
}

static void new_block(prep_t *p, uint64_t t, uint64_t n, rop_t *op) {
  uint32_t s = slot_new(p, t, op->at_ns);
  op->slot2 = s;
  op->gen2 = p->gen[s]++;
  table_slot_t r;                     /* a: freeing thread, b: offset of its op, c: its time */
  if (table_take(&p->pending, table_block_key(t, n), &r)) {   /* its release was read first */
    if (r.c < op->at_ns) p->skewed++;
    prog_patch(p, r.a, r.b, s, p->gen[s]++);
    slot_free(p, r.a, s, r.c);
  } else {
    table_put(&p->live, table_block_key(t, n), s, op->at_ns, 0);
  }
}

/* Reads the whole trace; writes DIR/thread-*.ops and DIR/threads. */
static int prepare(const char *trace, const char *dir, bool partial, bool cross, prep_t *p) {
  char err[600];
  mmt_reader_t *r = mmt_reader_open(trace, err, sizeof err);
  if (!r) { fprintf(stderr, "%s\n", err); return 2; }
  mmt_reader_allow_partial(r, partial);
  memset(p, 0, sizeof *p);
  p->dir = dir;
  p->cross = cross;
  mmt_event_t e;
  int k;
  while ((k = mmt_reader_next(r, &e)) > 0) {
    pthread_prog_t *th = prog_of(p, e.thread);
    if (e.op == MMT_THREAD_BEGIN) { th->begun = true; th->begin_ns = th->last_ns = e.time_ns; continue; }
    if (e.op == MMT_FORK) continue;
    unsigned shape = mmt_op_shape(e.op);
    rop_t op = {.op = (uint8_t)e.op, .flags = e.failed ? R_FAILED : 0, .slot = NO_SLOT, .slot2 = NO_SLOT,
                .size = e.size, .arg = (shape & MMT_HAS_NMEMB) ? e.nmemb : e.align,
                .dt_ns = e.work_ns, .at_ns = e.time_ns,
                .gap_cpu_us = !e.gap_cpu_known ? NO_CPU
                              : e.gap_cpu_ns / 1000 < NO_CPU ? (uint32_t)(e.gap_cpu_ns / 1000) : NO_CPU - 1};
    if (e.op == MMT_THREAD_END) {      /* an op that calls nothing: the thread's work after its last call */
      if (!th->ended) prog_add(p, e.thread, &op);
      th->ended = true;
      th->end_ns = e.time_ns;
      prog_close(p, e.thread);
      continue;
    }
    th->last_ns = e.time_ns;
    bool pending = false;
    if (shape & MMT_HAS_REF) {
      if (e.ref == MMT_REF_IS_UNKNOWN) {
        p->skipped_unknown++;
        if (!(shape & MMT_ALLOCATES)) continue;           /* a free of a stranger: skipped */
        op.op = MMT_MALLOC;                               /* a realloc of one: its new block only */
      } else if (e.ref == MMT_REF_IS_BLOCK) {
        if (!e.released) {                                /* failed realloc, block kept */
          table_slot_t *live = table_find(&p->live, table_block_key(e.ref_thread, e.ref_n));
          if (live) {
            uint64_t s = live->a;
            op.slot = (uint32_t)s;
            op.gen = p->gen[s]++;
            op.slot2 = (uint32_t)s;                       /* the same block goes on */
            op.gen2 = p->gen[s]++;
            prog_add(p, e.thread, &op);
            continue;
          }
          op.op = MMT_MALLOC;                             /* not read yet: the failing size alone */
        } else {
          pending = release_slot(p, e.thread, e.ref_thread, e.ref_n, &op);
        }
      }
    }
    if (e.allocated) new_block(p, e.thread, e.new_n, &op);
    uint64_t off = prog_add(p, e.thread, &op);
    if (pending) {
      table_put(&p->pending, table_block_key(e.ref_thread, e.ref_n), e.thread, off, e.time_ns);
    }
    if (th->ended) prog_close(p, e.thread);      /* a late call after its thread_end */
  }
  if (k < 0) { fprintf(stderr, "%s\n", mmt_reader_error(r)); mmt_reader_close(r); return 2; }
  uint64_t peak_kb;
  p->memory_known = mmt_reader_memory(r, &peak_kb, &p->file_kb);
  mmt_reader_close(r);
  /* releases whose block was never allocated in the trace cannot happen
   * in a well-formed trace; they are left as NO_SLOT ops and skipped */
  for (uint64_t t = 0; t < p->nth; t++) prog_close(p, t);
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/threads", dir);
  FILE *f = fopen(path, "w");
  if (!f) { fprintf(stderr, "mmtrace replay: %s: %s\n", path, strerror(errno)); return 2; }
  fprintf(f, "slots %" PRIu64 " skewed %" PRIu64 " cxx %" PRIu64 "\n", p->nslots, p->skewed, p->cxx);
  for (uint64_t t = 0; t < p->nth; t++) {
    pthread_prog_t *th = &p->th[t];
    fprintf(f, "thread %" PRIu64 " %" PRIu64 " %d %" PRIu64 " %" PRIu64 "\n", t, th->begin_ns,
            th->ended ? 1 : 0, th->end_ns, th->ops);
    free(th->free_slots);
  }
  fclose(f);
  free(p->th); free(p->gen); table_free(&p->live); table_free(&p->pending); free(p->fifo);
  return 0;
}

/* ---- run (in the child, on the allocator under test) ----------------------- */

/* A slot: the generation of the next op on it, and its block's address,
 * in two arrays (12 bytes per live block).  The generation is written
 * (release) after the address, and read (acquire) before it. */
typedef uint32_t rslot_t;          /* an index into slot_gen[] and slot_ptr[] */
static _Atomic uint32_t *slot_gen;
static void **slot_ptr;
/* --copies N: copy c of the traced threads uses slots c*nslots.. and
 * progress entries c*ntraced..; a replay thread's own bases. */
static __thread uint64_t slot_base, progress_base;

typedef struct {
  uint64_t thread, begin_ns, end_ns, ops;
  uint64_t copy;                    /* which copy of the trace (--copies) */
  bool ended;
  pthread_t handle;
  bool started, joined;
} rthread_info_t;

/* A wait that does not take a CPU from the threads it waits for: spin a
 * little, yield a little, then sleep, 10 us at first, up to 200 us. */
typedef struct { unsigned n; long sleep_ns; } backoff_t;
static void backoff(backoff_t *b) {
  if (++b->n < 64) return;
  if (b->n < 128) { sched_yield(); return; }
  b->sleep_ns = b->sleep_ns ? (b->sleep_ns * 2 > 200000 ? 200000 : b->sleep_ns * 2) : 10000;
  struct timespec ts = {0, b->sleep_ns};
  nanosleep(&ts, NULL);
}


/* Where each replay thread is, in the trace's time: the time of the call
 * it is about to make (its begin before it starts, UINT64_MAX once done).
 * A thread that the trace shows blocked for long before a call (a join, a
 * condition wait, a lock) waits until every other thread has come that
 * far: that is what it was waiting for.  The thread with the earliest such
 * time can always go on, so these waits form no cycle either. */
typedef struct {
  _Atomic uint64_t at;
  uint64_t end;                     /* once at is UINT64_MAX: the time of the thread's last op */
  char pad[48];
} progress_t;
static progress_t *progress;
static uint64_t nprogress;
static bool ordered = true;       /* the trace's times agree with its blocks' order */

/* Thread me has no op left; its last was at last_ns. */
static void progress_done(uint64_t me, uint64_t last_ns) {
  progress[me].end = last_ns;
  atomic_store_explicit(&progress[me].at, UINT64_MAX, memory_order_release);
}

/* Waits until every other thread has replayed the calls before at_ns, or
 * has none left; true if it had to wait.  *reach: how far in the trace's
 * time the others' replay went, at_ns unless every other thread's ops
 * ended before at_ns: then the latest of their last ops.  A thread that
 * made no call after that (its work until it was killed at the program's
 * exit, say) left that part of the gap to no op, so the caller sleeps it:
 * else the run's time would depend on whether the others had ended before
 * the waiting thread looked. */
static bool wait_others(uint64_t me, uint64_t at_ns, uint64_t *reach) {
  bool waited = false;
  uint64_t r = 0;
  *reach = at_ns;
  if (!ordered) return false;
  for (uint64_t j = progress_base; j < progress_base + nprogress; j++) {
    if (j == me) continue;
    backoff_t b = {0, 0};
    uint64_t a;
    while ((a = atomic_load_explicit(&progress[j].at, memory_order_acquire)) < at_ns) {
      waited = true;
      backoff(&b);
    }
    uint64_t got = a != UINT64_MAX || progress[j].end >= at_ns ? at_ns : progress[j].end;
    if (got > r) r = got;
  }
  if (waited) *reach = r;
  return waited;
}
/* The replayer's own memory in a run (the slot table, the threads'
 * progress and their program readers): mapped here, not taken from the
 * allocator under test, which would see calls the program never made, and
 * counted at the end (own_resident) so that the parent can take it off the
 * run's peak RSS: the program did not hold a second table of its blocks.
 * The table only grows (a slot once used stays resident), so its size at
 * the end is at least its size when the peak was reached. */
#define OWN_CHUNK ((size_t)1 << 20)
#define OWN_MAPS 4096
static struct { char *p; size_t n; } own_maps[OWN_MAPS];
static size_t own_nmaps, own_left;
static char *own_next;
static pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;

/* n zeroed bytes aligned to 64; exits with a message when the OS refuses. */
static void *own_alloc(size_t n) {
  n = (n + 63) & ~(size_t)63;
  pthread_mutex_lock(&own_lock);
  if (n > own_left) {
    size_t len = n > OWN_CHUNK ? (n + 4095) & ~(size_t)4095 : OWN_CHUNK;
    void *m = own_nmaps < OWN_MAPS ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                                   : MAP_FAILED;
    if (m == MAP_FAILED) {
      fprintf(stderr, "mmtrace replay-run: no memory for the replayer's tables (%zu bytes)\n", n);
      exit(3);
    }
    own_maps[own_nmaps].p = m;
    own_maps[own_nmaps++].n = len;
    if (n == len) {                       /* a table of its own: the chunk being carved stays */
      pthread_mutex_unlock(&own_lock);
      return m;
    }
    own_next = m;
    own_left = len;
  }
  void *p = own_next;
  own_next += n;
  own_left -= n;
  pthread_mutex_unlock(&own_lock);
  return p;
}

/* Bytes of the replayer's own mappings that are resident now. */
static uint64_t own_resident(void) {
  uint64_t bytes = 0;
  static unsigned char vec[4096];          /* a byte per page: mincore over 16 MiB at a time */
  const size_t span = sizeof vec * 4096;
  for (size_t i = 0; i < own_nmaps; i++) {
    for (size_t off = 0; off < own_maps[i].n; off += span) {
      size_t len = own_maps[i].n - off < span ? own_maps[i].n - off : span;
      if (mincore(own_maps[i].p + off, len, vec) != 0) continue;
      for (size_t k = 0; k < (len + 4095) / 4096; k++) bytes += (vec[k] & 1) * 4096u;
    }
  }
  return bytes;
}

/* The replayer's own code and libraries.  The measuring parent, which
 * has no allocator preloaded, lists the files it has mapped (own_files_save,
 * DIR/own-files: "major:minor inode" a line); a run counts what it has
 * resident of those files (own_file_resident), which the parent replaces
 * in the run's peak RSS by the program's own file-backed memory from the
 * trace.  A preloaded allocator and the libraries it brings are not on the
 * list: the real program on that allocator maps them too. */
#define OWN_FILES_MAX 512
typedef struct { char dev[16]; uint64_t inode; } own_file_t;

/* A line of /proc/self/maps or smaps that starts a mapping: its file's
 * device and inode (inode 0: anonymous); false for any other line. */
static bool map_line_file(const char *line, own_file_t *f) {
  char perms[8];
  unsigned long long lo, hi, off, inode;
  char dev[16];
  if (sscanf(line, "%llx-%llx %7s %llx %15s %llu", &lo, &hi, perms, &off, dev, &inode) != 6) return false;
  snprintf(f->dev, sizeof f->dev, "%s", dev);
  f->inode = inode;
  return true;
}

static void own_files_save(const char *dir) {
  char path[PATH_MAX + 16], line[PATH_MAX + 256];
  snprintf(path, sizeof path, "%s/own-files", dir);
  FILE *in = fopen("/proc/self/maps", "r"), *out = fopen(path, "w");
  if (in && out) {
    own_file_t f;
    while (fgets(line, sizeof line, in))
      if (map_line_file(line, &f) && f.inode) fprintf(out, "%s %" PRIu64 "\n", f.dev, f.inode);
  }
  if (in) fclose(in);
  if (out) fclose(out);
}

/* This process's peak RSS in KiB (VmHWM; 0 if it cannot say).  Unlike
 * ru_maxrss, which a child inherits across fork and exec (so that a run
 * could not report less than its measuring parent's size), it is the peak
 * of this program image alone. */
static uint64_t own_peak_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %" SCNu64 " kB", &kb) == 1) break;
  fclose(f);
  return kb;
}

/* KiB resident now of the files DIR/own-files lists (0 if it cannot say). */
static uint64_t own_file_resident(const char *dir) {
  static own_file_t files[OWN_FILES_MAX];
  size_t n = 0;
  char path[PATH_MAX + 16], line[PATH_MAX + 256];
  snprintf(path, sizeof path, "%s/own-files", dir);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  while (n < OWN_FILES_MAX && fscanf(f, "%15s %" SCNu64, files[n].dev, &files[n].inode) == 2) n++;
  fclose(f);
  f = fopen("/proc/self/smaps", "r");
  if (!f) return 0;
  uint64_t kb = 0, v;
  bool counted = false;
  own_file_t m;
  while (fgets(line, sizeof line, f)) {
    if (map_line_file(line, &m)) {
      counted = false;
      for (size_t i = 0; i < n && m.inode; i++)
        counted |= files[i].inode == m.inode && strcmp(files[i].dev, m.dev) == 0;
    } else if (counted && sscanf(line, "Rss: %" SCNu64 " kB", &v) == 1) {
      kb += v;
    }
  }
  fclose(f);
  return kb;
}

static const char *run_dir;
static double speed;
static bool touch_all;
static atomic_uint_fast64_t differ, waits, null_releases;

/* The C++ operators, found at run time (cxx_resolve): the replayer is a
 * C program and does not link the C++ library, whose start-up memory (1.3
 * MiB resident) would count in the peak RSS of every replay; a trace with
 * C++ calls loads it, as the traced program had. */
static void *(*op_new)(size_t, const void *);
static void *(*op_new_array)(size_t, const void *);
static void *(*op_new_aligned)(size_t, size_t, const void *);
static void *(*op_new_array_aligned)(size_t, size_t, const void *);
static void (*op_delete)(void *);
static void (*op_delete_array)(void *);
static void (*op_delete_sized)(void *, size_t);
static void (*op_delete_array_sized)(void *, size_t);
static void (*op_delete_aligned)(void *, size_t);
static void (*op_delete_array_aligned)(void *, size_t);
static void (*op_delete_sized_aligned)(void *, size_t, size_t);
static void (*op_delete_array_sized_aligned)(void *, size_t, size_t);

/* Every operator, from the preloaded allocator or else the C++ library
 * (loaded here); false after a message if one cannot be found. */
static bool cxx_resolve(void) {
  static const struct { const char *name; void **fn; } ops[] = {
      {"_ZnwmRKSt9nothrow_t", (void **)&op_new},
      {"_ZnamRKSt9nothrow_t", (void **)&op_new_array},
      {"_ZnwmSt11align_val_tRKSt9nothrow_t", (void **)&op_new_aligned},
      {"_ZnamSt11align_val_tRKSt9nothrow_t", (void **)&op_new_array_aligned},
      {"_ZdlPv", (void **)&op_delete},
      {"_ZdaPv", (void **)&op_delete_array},
      {"_ZdlPvm", (void **)&op_delete_sized},
      {"_ZdaPvm", (void **)&op_delete_array_sized},
      {"_ZdlPvSt11align_val_t", (void **)&op_delete_aligned},
      {"_ZdaPvSt11align_val_t", (void **)&op_delete_array_aligned},
      {"_ZdlPvmSt11align_val_t", (void **)&op_delete_sized_aligned},
      {"_ZdaPvmSt11align_val_t", (void **)&op_delete_array_sized_aligned},
  };
  /* the C++ library first, global, so that a preloaded allocator's
   * operators still come first in the lookup and the library's fill the
   * rest (as in a C++ program, which links it) */
  if (!dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL)) {
    fprintf(stderr, "mmtrace replay-run: the trace has C++ calls: %s\n", dlerror());
    return false;
  }
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    *ops[i].fn = dlsym(RTLD_DEFAULT, ops[i].name);
    if (!*ops[i].fn) {
      fprintf(stderr, "mmtrace replay-run: the trace has C++ calls, and %s is not found\n", ops[i].name);
      return false;
    }
  }
  return true;
}

static uint64_t mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits until slot s has generation gen; its block's address. */
static __attribute__((noinline)) void *wait_gen_slow(uint64_t s, uint32_t gen) {
  backoff_t b = {0, 0};
  while (atomic_load_explicit(&slot_gen[s], memory_order_acquire) != gen) {
    if (b.n == 63) atomic_fetch_add_explicit(&waits, 1, memory_order_relaxed);
    backoff(&b);
  }
  return slot_ptr[s];
}

/* Most slots are ready when their op comes (a block of the thread's own):
 * that test inline, the wait out of line. */
static inline void *wait_gen(rslot_t s, uint32_t gen) {
  uint64_t i = s + slot_base;
  if (__builtin_expect(atomic_load_explicit(&slot_gen[i], memory_order_acquire) == gen, 1)) return slot_ptr[i];
  return wait_gen_slow(i, gen);
}
/* The op of generation gen on slot s is done; the slot holds p. */
static void done_gen(rslot_t s, uint32_t gen, void *p) {
  s += slot_base;
  slot_ptr[s] = p;
  atomic_store_explicit(&slot_gen[s], gen + 1, memory_order_release);
}

static void touch(void *p, size_t n) {
  if (!p || !n) return;
  unsigned char *c = p;
  if (touch_all) { memset(c, 0xa5, n); return; }
  for (size_t off = 0; off < n; off += 4096) c[off] = 0xa5;
  c[n - 1] = 0xa5;
}

/* pvalloc, valloc and reallocarray of the C library must not be used on
 * a block of another allocator that lacks them (jemalloc has neither
 * pvalloc nor reallocarray): then they are made from that allocator's
 * memalign and realloc.  Decided once, by where the symbols resolve. */
static bool own_pvalloc = true, own_valloc = true, own_reallocarray = true;
/* malloc_usable_size beside the allocator's malloc: how much of a block a
 * realloc that grows it in place finds already written (without it, such
 * a growth is not touched) */
static bool own_usable = true;

static bool beside_malloc(const char *name) {
  Dl_info a, b;
  void *f = dlsym(RTLD_DEFAULT, name), *m = dlsym(RTLD_DEFAULT, "malloc");
  return f && m && dladdr(f, &a) && dladdr(m, &b) && a.dli_fbase == b.dli_fbase;
}

static void *page_alloc(size_t n, bool round) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (round) {
    if (n > SIZE_MAX - page) { errno = ENOMEM; return NULL; }
    n = n ? (n + page - 1) & ~(page - 1) : page;
  }
  return memalign(page, n);
}

static void *realloc_array(void *p, size_t k, size_t n) {
  size_t b;
  if (own_reallocarray) return reallocarray(p, k, n);
  if (__builtin_mul_overflow(k, n, &b)) { errno = ENOMEM; return NULL; }
  return realloc(p, b);
}

static void *do_alloc(const rop_t *o, size_t *bytes) {
  void *p = NULL;
  *bytes = o->size;
  switch (o->op) {
  case MMT_MALLOC: p = malloc(o->size); break;
  case MMT_CALLOC:
    p = calloc(o->arg, o->size);
    if (__builtin_mul_overflow(o->arg, o->size, bytes)) *bytes = 0;
    break;
  case MMT_POSIX_MEMALIGN: if (posix_memalign(&p, o->arg, o->size) != 0) p = NULL; break;
  case MMT_ALIGNED_ALLOC: p = aligned_alloc(o->arg, o->size); break;
  case MMT_MEMALIGN: p = memalign(o->arg, o->size); break;
  case MMT_VALLOC: p = own_valloc ? valloc(o->size) : page_alloc(o->size, false); break;
  case MMT_PVALLOC: p = own_pvalloc ? pvalloc(o->size) : page_alloc(o->size, true); break;
  case MMT_NEW: case MMT_NEW_NOTHROW: p = op_new(o->size, NULL); break;
  case MMT_NEW_ARRAY: case MMT_NEW_ARRAY_NOTHROW: p = op_new_array(o->size, NULL); break;
  case MMT_NEW_ALIGNED: case MMT_NEW_ALIGNED_NOTHROW:
    p = op_new_aligned(o->size, o->arg, NULL); break;
  case MMT_NEW_ARRAY_ALIGNED: case MMT_NEW_ARRAY_ALIGNED_NOTHROW:
    p = op_new_array_aligned(o->size, o->arg, NULL); break;
  default: break;
  }
  return p;
}

static void do_release(const rop_t *o, void *p) {
  switch (o->op) {
  case MMT_DELETE: op_delete(p); break;
  case MMT_DELETE_ARRAY: op_delete_array(p); break;
  case MMT_DELETE_SIZED: op_delete_sized(p, o->size); break;
  case MMT_DELETE_ARRAY_SIZED: op_delete_array_sized(p, o->size); break;
  case MMT_DELETE_ALIGNED: op_delete_aligned(p, o->arg); break;
  case MMT_DELETE_ARRAY_ALIGNED: op_delete_array_aligned(p, o->arg); break;
  case MMT_DELETE_SIZED_ALIGNED: op_delete_sized_aligned(p, o->size, o->arg); break;
  case MMT_DELETE_ARRAY_SIZED_ALIGNED: op_delete_array_sized_aligned(p, o->size, o->arg); break;
  default: free(p); break;
  }
}

/* A block the op releases; NULL if none (or the allocator refused it). */
static void *take_ptr(const rop_t *o) {
  if (o->slot == NO_SLOT) return NULL;
  void *p = wait_gen(o->slot, o->gen);
  if (!p) atomic_fetch_add_explicit(&null_releases, 1, memory_order_relaxed);   /* only after a refusal */
  return p;
}

static void exec_op(const rop_t *o) {
  unsigned shape = mmt_op_shape(o->op);
  bool failed = o->flags & R_FAILED;
  if (o->op == MMT_REALLOC || o->op == MMT_REALLOCARRAY) {
    void *p = take_ptr(o);
    size_t bytes = o->size;
    if (o->op == MMT_REALLOCARRAY && __builtin_mul_overflow(o->arg, o->size, &bytes)) bytes = SIZE_MAX;
    size_t had = p && own_usable ? malloc_usable_size(p) : SIZE_MAX;
    void *q = o->op == MMT_REALLOC ? realloc(p, o->size) : realloc_array(p, o->arg, o->size);
    bool in_place = q && q == p;
    if (o->slot2 == NO_SLOT) {                 /* the trace's call returned no block */
      if (q) {                                 /* realloc(p, 0) that gave a block here, or a failure that did not fail */
        if (bytes) atomic_fetch_add_explicit(&differ, 1, memory_order_relaxed);
        free(q);
      }
      if (o->slot != NO_SLOT) done_gen(o->slot, o->gen, NULL);
      return;
    }
    if (!q) {                                  /* refused here: p lives on (a size of 0 freed it) */
      if (bytes && !failed) atomic_fetch_add_explicit(&differ, 1, memory_order_relaxed);
      if (bytes) q = p;
    } else if (failed) {
      atomic_fetch_add_explicit(&differ, 1, memory_order_relaxed);
    }
    /* the old slot is let go, then the new one taken (they may be the same
     * slot: its two generations follow each other) */
    if (o->slot != NO_SLOT) done_gen(o->slot, o->gen, NULL);
    wait_gen(o->slot2, o->gen2);
    if (q && q != p) touch(q, bytes);
    else if (in_place && bytes > had) touch((char *)q + had, bytes - had);   /* grown in place: its new part */
    done_gen(o->slot2, o->gen2, q);
    return;
  }
  if (shape & MMT_RELEASES) {
    if (o->slot == NO_SLOT) { do_release(o, NULL); return; }
    void *p = take_ptr(o);
    do_release(o, p);
    done_gen(o->slot, o->gen, NULL);
    return;
  }
  if (shape & MMT_ALLOCATES) {
    size_t bytes;
    void *p = do_alloc(o, &bytes);
    if (failed || o->slot2 == NO_SLOT) {       /* failed in the trace: made again, let go at once */
      if (p) { atomic_fetch_add_explicit(&differ, 1, memory_order_relaxed); do_release(o, p); }
      return;
    }
    if (!p) atomic_fetch_add_explicit(&differ, 1, memory_order_relaxed);
    touch(p, bytes);
    wait_gen(o->slot2, o->gen2);
    done_gen(o->slot2, o->gen2, p);
  }
}

/* A gap between two calls of a thread is replayed as CPU work when short
 * and as sleep from SLEEP_NS up: a thread that waited a millisecond between
 * two calls was most likely blocked (a join, a lock, I/O), and spinning
 * for it would take a CPU from the threads that were working. */
#define SLEEP_NS 200000.0

/* CPU work of a given length, against the clock (a loop calibrated once
 * runs at half speed when the other hardware thread of the core is busy). */
static void spin_ns(double ns) {
  uint64_t until = mono() + (uint64_t)ns;
  while (mono() < until) {}
}

/* How long the op's released block kept it waiting (0 if it was there):
 * that wait stands for the program's own wait for the other thread, which
 * the recorded gap holds too, so it comes off the gap. */
static uint64_t wait_ready(const rop_t *o) {
  if (o->slot == NO_SLOT) return 0;
  if (atomic_load_explicit(&slot_gen[o->slot + slot_base], memory_order_acquire) == o->gen) return 0;
  uint64_t t0 = mono();
  wait_gen(o->slot, o->gen);
  return mono() - t0;
}

static uint64_t run_nslots;

/* A thread program read in order: 64 KiB of encoded ops at a time,
 * decoded one at a time as the thread comes to it. */
#define RAW_BUF 65536
typedef struct {
  int fd;
  char path[PROG_PATH_MAX];
  rop_t cur;                        /* the next op, when have */
  bool have, eof;
  unsigned char raw[RAW_BUF];
  size_t raw_at, raw_end;
  uint64_t last_at;
} op_reader_t;

/* Opens thread t's program; false (after a message) if it has ops and
 * cannot be opened; a thread without ops may have no file. */
static bool reader_open(op_reader_t *r, uint64_t t, uint64_t ops) {
  snprintf(r->path, sizeof r->path, "%s/thread-%" PRIu64 ".ops", run_dir, t);
  r->have = r->eof = false;
  r->raw_at = r->raw_end = 0;
  r->last_at = 0;
  r->fd = open(r->path, O_RDONLY | O_CLOEXEC);
  if (r->fd < 0 && ops) {
    fprintf(stderr, "mmtrace replay-run: %s: %s\n", r->path, strerror(errno));
    return false;
  }
  return true;
}

/* The next op, not taken; NULL at the end. */
static const rop_t *reader_peek(op_reader_t *r) {
  if (r->have) return &r->cur;
  if (r->fd < 0) return NULL;
  if (r->raw_end - r->raw_at < OP_MAX && !r->eof) {     /* refill: the rest moved to the front */
    memmove(r->raw, r->raw + r->raw_at, r->raw_end - r->raw_at);
    r->raw_end -= r->raw_at;
    r->raw_at = 0;
    while (r->raw_end < RAW_BUF) {
      ssize_t m = read(r->fd, r->raw + r->raw_end, RAW_BUF - r->raw_end);
      if (m < 0 && errno == EINTR) continue;
      if (m < 0) { fprintf(stderr, "mmtrace replay-run: %s: %s\n", r->path, strerror(errno)); exit(3); }
      if (m == 0) { r->eof = true; break; }
      r->raw_end += (size_t)m;
    }
  }
  if (r->raw_at == r->raw_end) {
    close(r->fd);
    r->fd = -1;
    return NULL;
  }
  size_t len = op_decode(r->raw + r->raw_at, r->raw + r->raw_end, &r->cur, r->last_at);
  if (!len) { fprintf(stderr, "mmtrace replay-run: %s: truncated\n", r->path); exit(3); }
  r->last_at = r->cur.at_ns;
  r->raw_at += len;
  r->have = true;
  return &r->cur;
}

/* Past the op reader_peek gave. */
static void reader_next(op_reader_t *r) { r->have = false; }

/* What a replay thread carries from one op to the next. */
typedef struct {
  double owed;                      /* the program's work not yet spun, ns */
  unsigned since_sync;
  uint64_t synced_at;               /* the trace's time of the last wait for the others */
} pace_t;

/* One op of trace thread `me` (an index into progress[]): the waits and
 * the program's own work before it, then the call. */
/* Thread me comes to a call made at at_ns in the trace: it says so, and
 * every 64 calls, or sooner once SYNC_NS of the trace's time passed since
 * it last did, waits until no other thread is more than LAG_NS behind
 * (the program's own hand-offs, a queue, a lock, kept its threads that
 * close, and a replay without them would let a producer run ahead and
 * hold memory the program never held).  The time bound is what slot_new's
 * cross-thread reuse relies on: at every call the others have come to
 * at_ns - SYNC_NS - LAG_NS = at_ns - SLOT_SETTLED_NS at least.  Counting
 * calls alone let 64 calls spread over milliseconds of the trace (a
 * thread the OS preempted while it was recorded) run ahead of another
 * thread's releases, and a new block wait for one of them. */
#define SYNC_NS (SLOT_SETTLED_NS - LAG_NS)
static inline void pace_arrive(uint64_t me, uint64_t at_ns, pace_t *pc) {
  atomic_store_explicit(&progress[me].at, at_ns, memory_order_release);
  if (++pc->since_sync == 64 || at_ns - pc->synced_at > SYNC_NS) {
    pc->since_sync = 0;
    pc->synced_at = at_ns;
    uint64_t reach;
    if (at_ns > LAG_NS) wait_others(me, at_ns - LAG_NS, &reach);
  }
}
/* think ns of the program's own work (a short gap) owed; spun once a
 * microsecond is owed, so that reading the clock does not become the work. */
static inline void pace_owe(pace_t *pc, double think) {
  if (think > 0) pc->owed += think;
  if (pc->owed >= 1000) {
    spin_ns(pc->owed);
    pc->owed = 0;
  }
}

static void replay_op(const rop_t *o, uint64_t me, pace_t *pc) {
  pace_arrive(me, o->at_ns, pc);
  if (speed > 0) {
    /* the program's own work before this call (the recorded gap), scaled,
     * less what the call's block kept the thread waiting; CPU work in
     * pieces of at least 1 us (so that reading a clock does not become the
     * work), sleep from SLEEP_NS up */
    double think = (double)o->dt_ns * speed;
    if (think >= SLEEP_NS) {
      /* blocked in the trace: the part of the gap the thread was computing,
       * when the trace says it (a version 2 trace, after a long gap), is
       * spun first; for the rest it waits for the other threads, if they
       * were what it waited for, else (I/O, a timer) sleeps */
      if (o->gap_cpu_us != NO_CPU) {
        double cpu = (double)o->gap_cpu_us * 1000.0 * speed;
        if (cpu > think) cpu = think;
        spin_ns(cpu + pc->owed);
        pc->owed = 0;
        think -= cpu;
      }
      uint64_t reach;
      if (wait_others(me, o->at_ns, &reach) && (double)(o->at_ns - reach) * speed < think)
        think = (double)(o->at_ns - reach) * speed;   /* the others' replay stood for the rest */
      if (think >= 1000) {
        uint64_t ns = (uint64_t)think;  /* integer arithmetic: no libm to load (its pages count) */
        struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
        nanosleep(&ts, NULL);
      }
      wait_ready(o);
      think = 0;
    } else {
      think -= (double)wait_ready(o);
    }
    pace_owe(pc, think);
  }
  exec_op(o);
}

/* replay_plain's calls other than malloc and free, out of line so that
 * theirs stay short. */
static __attribute__((noinline)) void *plain_alloc_other(unsigned op, uint64_t size, uint64_t arg,
                                                         size_t *bytes) {
  rop_t o = {.op = (uint8_t)op, .size = size, .arg = arg};
  return do_alloc(&o, bytes);
}
static __attribute__((noinline)) void plain_release_other(unsigned op, void *p, uint64_t size,
                                                          uint64_t arg) {
  rop_t o = {.op = (uint8_t)op, .size = size, .arg = arg};
  do_release(&o, p);
}

/* The calls most traces are made of, an allocation (malloc, calloc, new,
 * an aligned one) and a release (free, delete) of a block the trace saw,
 * that neither failed nor follow a long gap, and whose blocks are ready
 * (malloc, free, new and sized delete called directly, the others by
 * do_alloc and do_release): decoded from the reader's buffer and made
 * here, without the general path's copy into an rop_t and its tests for
 * every other kind of call (the replayer's own work per call is what
 * dilutes the allocators' differences in a program that does little but
 * allocate).  The same effects as reader_peek, replay_op and reader_next;
 * 0 (nothing done) for any other op, which then takes the general path.
 * The caller has made sure of OP_MAX bytes from raw_at (no varint needs
 * its bounds checked). */
static inline size_t replay_plain(op_reader_t *r, uint64_t me, pace_t *pc) {
  const unsigned char *p = r->raw + r->raw_at, *start = p;
  unsigned op = p[0], flags = p[1];
  uint32_t slot, gen, slot2 = 0, gen2 = 0;
  memcpy(&slot, p + 2, 4);
  memcpy(&gen, p + 6, 4);
  p += OP_PATCH_AT + 8;
  bool ok = true;
  unsigned shape = op == MMT_MALLOC ? MMT_ALLOCATES : op == MMT_FREE ? MMT_RELEASES
                  : mmt_op_shape(op) & (MMT_ALLOCATES | MMT_RELEASES);
  bool alloc = shape == MMT_ALLOCATES;
  if (alloc) {
    if (flags != E_SLOT2 || slot != NO_SLOT) return 0;   /* failed, after a long gap, or no block */
    slot2 = (uint32_t)op_varint_room(&p, &ok);
    gen2 = (uint32_t)op_varint_room(&p, &ok);
  } else if (shape != MMT_RELEASES || flags != 0 || slot == NO_SLOT) {
    return 0;                                           /* realloc, an unknown pointer, a long gap */
  }
  uint64_t size = op_varint_room(&p, &ok);
  uint64_t arg = op_varint_room(&p, &ok);
  uint64_t dt = op_varint_room(&p, &ok);
  uint64_t at = r->last_at + (uint64_t)mmt_unzigzag(op_varint_room(&p, &ok));
  if (!ok) return 0;
  double think = speed > 0 ? (double)dt * speed : 0;
  if (think >= SLEEP_NS) return 0;                      /* blocked in the trace: the general path */
  uint64_t s = (alloc ? slot2 : slot) + slot_base;
  uint32_t want = alloc ? gen2 : gen;
  if (atomic_load_explicit(&slot_gen[s], memory_order_acquire) != want) return 0;   /* waits */
  r->last_at = at;
  pace_arrive(me, at, pc);
  if (think > 0) pace_owe(pc, think); /* (at speed 0 nothing is owed) */
  if (alloc) {
    size_t bytes = size;
    void *q;
    if (op == MMT_MALLOC)
      q = malloc(size);
    else if (op == MMT_NEW)                 /* (nothrow, as do_alloc) */
      q = op_new(size, NULL);
    else
      q = plain_alloc_other(op, size, arg, &bytes);
    if (!q) atomic_fetch_add_explicit(&differ, 1, memory_order_relaxed);
    touch(q, bytes);
    done_gen(slot2, gen2, q);
  } else {
    void *q = slot_ptr[s];
    if (!q) atomic_fetch_add_explicit(&null_releases, 1, memory_order_relaxed);   /* only after a refusal */
    if (op == MMT_FREE)
      free(q);
    else if (op == MMT_DELETE_SIZED)
      op_delete_sized(q, size);
    else
      plain_release_other(op, q, size, arg);
    done_gen(slot, gen, NULL);
  }
  return (size_t)(p - start);
}

static void *replay_thread(void *arg) {
  rthread_info_t *ti = arg;
  slot_base = ti->copy * run_nslots;
  progress_base = ti->copy * nprogress;
  uint64_t me = progress_base + ti->thread;
  op_reader_t *r = own_alloc(sizeof *r);
  if (!reader_open(r, ti->thread, ti->ops)) exit(3);
  pace_t pc = {0, 0, 0};
  for (;;) {
    if (r->raw_end - r->raw_at >= OP_MAX) {
      size_t len = replay_plain(r, me, &pc);
      if (len) {
        r->raw_at += len;
        continue;
      }
    }
    const rop_t *o = reader_peek(r);
    if (!o) break;
    replay_op(o, me, &pc);
    reader_next(r);
  }
  if (r->fd >= 0) close(r->fd);
  progress_done(me, r->last_at);
  return NULL;
}

/* --threads K below the trace's thread count: the trace threads folded
 * onto K replay threads.  A group's replay thread runs its members'
 * programs merged by the trace's time (the earliest next op first), so it
 * makes every call of its members in the order the trace made them, and
 * does their work between calls one after another: the same calls and the
 * same work on fewer threads.  A member's progress entry is the time of its
 * next op, so a member waiting for the others never waits for itself or a
 * member of its group (their next ops come no earlier), and the group
 * holding the earliest op of all can always make it: no deadlock.  A trace
 * whose clock cannot order its threads (no time waits then) is merged by
 * time among the ops whose blocks are ready: the op the program really made
 * next is always ready, so again some group can go on. */
typedef struct {
  rthread_info_t **member;
  uint64_t n;
  pthread_t handle;
} rgroup_t;

/* Can o run now without waiting for its blocks: the block it releases is
 * there, and the slot of the block it returns is free (or is the slot it
 * releases)? */
static bool op_ready(const rop_t *o) {
  if (o->slot != NO_SLOT &&
      atomic_load_explicit(&slot_gen[o->slot], memory_order_acquire) != o->gen)
    return false;
  return o->slot2 == NO_SLOT || o->slot2 == o->slot ||
         atomic_load_explicit(&slot_gen[o->slot2], memory_order_acquire) == o->gen2;
}

static void *replay_group(void *arg) {
  rgroup_t *g = arg;
  op_reader_t *r = own_alloc((g->n ? g->n : 1) * sizeof *r);
  for (uint64_t k = 0; k < g->n; k++) {
    if (!reader_open(&r[k], g->member[k]->thread, g->member[k]->ops)) exit(3);
    const rop_t *o = reader_peek(&r[k]);
    atomic_store_explicit(&progress[g->member[k]->thread].at, o ? o->at_ns : UINT64_MAX,
                          memory_order_release);
  }
  pace_t pc = {0, 0, 0};
  backoff_t b = {0, 0};
  for (;;) {
    /* the earliest next op of the members; in a trace whose clock cannot
     * order its threads, the earliest that need not wait for a block (the
     * one the trace really made first is always among them, somewhere) */
    uint64_t best = UINT64_MAX, at = UINT64_MAX;
    bool left = false;
    for (uint64_t k = 0; k < g->n; k++) {  /* a handful of members: a scan is enough */
      const rop_t *o = reader_peek(&r[k]);
      left |= o != NULL;
      if (o && o->at_ns < at && (ordered || op_ready(o))) { at = o->at_ns; best = k; }
    }
    if (!left) break;
    if (best == UINT64_MAX) {               /* every member waits for another group */
      backoff(&b);
      continue;
    }
    b.n = 0;
    b.sleep_ns = 0;
    uint64_t me = g->member[best]->thread;
    replay_op(reader_peek(&r[best]), me, &pc);
    reader_next(&r[best]);
    const rop_t *next = reader_peek(&r[best]);
    if (next) atomic_store_explicit(&progress[me].at, next->at_ns, memory_order_release);
    else progress_done(me, r[best].last_at);
  }
  for (uint64_t k = 0; k < g->n; k++)
    if (r[k].fd >= 0) close(r[k].fd);
  return NULL;
}

static int cmp_begin(const void *a, const void *b) {
  const rthread_info_t *x = a, *y = b;
  if (x->begin_ns != y->begin_ns) return x->begin_ns < y->begin_ns ? -1 : 1;
  if (x->copy != y->copy) return x->copy < y->copy ? -1 : 1;
  return (x->thread > y->thread) - (x->thread < y->thread);
}

/* The run's line for the measuring parent: its time since t0, the replay
 * threads, the slots and what differed from the trace. */
static int run_done(uint64_t t0, uint64_t nthreads, uint64_t nslots) {
  uint64_t t1 = mono();
  printf("replay_ns %" PRIu64 " threads %" PRIu64 " slots %" PRIu64 " differ %" PRIuFAST64 " nulls %" PRIuFAST64
         " waits %" PRIuFAST64 " own_kb %" PRIu64 " code_kb %" PRIu64 " peak_kb %" PRIu64 "\n", t1 - t0,
         nthreads, nslots, atomic_load(&differ), atomic_load(&null_releases), atomic_load(&waits),
         own_resident() >> 10, own_file_resident(run_dir), own_peak_kb());
  fflush(stdout);
  return 0;
}

int mmt_cmd_replay_run(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: mmtrace replay-run DIR [speed] [page|all] [copies] [fold]\n"); return 2; }
  run_dir = argv[1];
  own_pvalloc = beside_malloc("pvalloc");
  own_valloc = beside_malloc("valloc");
  own_reallocarray = beside_malloc("reallocarray");
  own_usable = beside_malloc("malloc_usable_size");
  speed = argc > 2 ? atof(argv[2]) : 1;
  touch_all = argc > 3 && strcmp(argv[3], "all") == 0;
  uint64_t copies = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
  if (copies < 1) copies = 1;
  uint64_t fold = argc > 5 ? strtoull(argv[5], NULL, 10) : 0; /* 0: a replay thread per trace thread */
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/threads", run_dir);
  FILE *f = fopen(path, "r");
  if (!f) { fprintf(stderr, "mmtrace replay-run: %s: %s\n", path, strerror(errno)); return 3; }
  uint64_t nslots = 0, n = 0, cap = 0;
  rthread_info_t *th = NULL;
  uint64_t skewed = 0, cxx = 0;
  if (fscanf(f, "slots %" SCNu64 " skewed %" SCNu64 " cxx %" SCNu64 "\n", &nslots, &skewed, &cxx) != 3) {
    fprintf(stderr, "mmtrace replay-run: bad %s\n", path);
    return 3;
  }
  if (cxx && !cxx_resolve()) return 3;
  ordered = skewed == 0;
  rthread_info_t t = {0};
  int ended;
  while (fscanf(f, "thread %" SCNu64 " %" SCNu64 " %d %" SCNu64 " %" SCNu64 "\n", &t.thread,
                &t.begin_ns, &ended, &t.end_ns, &t.ops) == 5) {
    t.ended = ended;
    if (n == cap) { cap = cap ? 2 * cap : 64; th = realloc(th, cap * sizeof *th); if (!th) return 3; }
    th[n++] = t;
  }
  fclose(f);
  uint64_t traced = n;
  for (uint64_t c = 1; c < copies; c++) {
    for (uint64_t i = 0; i < traced; i++) {
      if (n == cap) { cap = cap ? 2 * cap : 64; th = realloc(th, cap * sizeof *th); if (!th) return 3; }
      th[n] = th[i];
      th[n++].copy = c;
    }
  }
  run_nslots = nslots;
  /* the slot table: mapped, so untouched slots cost no memory */
  slot_gen = own_alloc((nslots * copies + 1) * sizeof *slot_gen);
  slot_ptr = own_alloc((nslots * copies + 1) * sizeof *slot_ptr);
  uint64_t maxid = 0;
  for (uint64_t i = 0; i < n; i++) if (th[i].thread >= maxid) maxid = th[i].thread + 1;
  progress = own_alloc((maxid * copies + 1) * sizeof *progress);
  nprogress = maxid;
  for (uint64_t i = 0; i < maxid * copies; i++) atomic_init(&progress[i].at, UINT64_MAX);
  for (uint64_t i = 0; i < n; i++) atomic_store(&progress[th[i].copy * maxid + th[i].thread].at, th[i].begin_ns);
  qsort(th, n, sizeof *th, cmp_begin);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (fold && fold < n) {
    if (copies > 1) {
      fprintf(stderr, "mmtrace replay-run: threads are folded without copies\n");
      return 3;
    }
    /* the trace threads in the order they began, dealt round the groups */
    rgroup_t *g = calloc(fold, sizeof *g);
    rthread_info_t **members = calloc(n, sizeof *members);
    if (!g || !members) return 3;
    for (uint64_t k = 0; k < fold; k++) g[k].member = members + k * ((n + fold - 1) / fold);
    for (uint64_t i = 0; i < n; i++) g[i % fold].member[g[i % fold].n++] = &th[i];
    uint64_t t0 = mono();
    for (uint64_t k = 0; k < fold; k++) {
      if (pthread_create(&g[k].handle, &attr, replay_group, &g[k]) != 0) {
        fprintf(stderr, "mmtrace replay-run: pthread_create: %s\n", strerror(errno));
        return 3;
      }
    }
    for (uint64_t k = 0; k < fold; k++) pthread_join(g[k].handle, NULL);
    return run_done(t0, fold, nslots);
  }
  uint64_t t0 = mono();
  for (uint64_t i = 0; i < n; i++) {
    /* the threads that had ended before this one began are gone */
    for (uint64_t j = 0; j < i; j++) {
      if (th[j].started && !th[j].joined && th[j].ended && th[j].end_ns <= th[i].begin_ns) {
        pthread_join(th[j].handle, NULL);
        th[j].joined = true;
      }
    }
    if (pthread_create(&th[i].handle, &attr, replay_thread, &th[i]) != 0) {
      fprintf(stderr, "mmtrace replay-run: pthread_create: %s\n", strerror(errno));
      return 3;
    }
    th[i].started = true;
  }
  for (uint64_t i = 0; i < n; i++)
    if (th[i].started && !th[i].joined) pthread_join(th[i].handle, NULL);
  return run_done(t0, n, nslots);
}

/* ---- measure ------------------------------------------------------------- */

/* An allocator to replay on: NAME or PATH.so, optionally with settings,
 * NAME[VAR=VALUE,VAR=VALUE] (mmalloc[MMALLOC_PURGE_DELAY_MS=0]), set in the
 * environment of its runs; the whole spec is its label in the table. */
typedef struct {
  char name[256];
  char path[PATH_MAX];
  char env[8][128];
  int nenv;
  double *secs;
  long *rss_kb, *faults;
} alloc_t;

static int parse_alloc(const char *spec, alloc_t *a) {
  memset(a, 0, sizeof *a);
  snprintf(a->name, sizeof a->name, "%s", spec);
  char base[256];
  snprintf(base, sizeof base, "%s", spec);
  char *br = strchr(base, '[');
  if (br) {
    size_t l = strlen(br);
    if (l < 2 || br[l - 1] != ']') {
      fprintf(stderr, "mmtrace replay: '%s': settings go in brackets, NAME[VAR=VALUE,...]\n", spec);
      return -1;
    }
    br[l - 1] = 0;
    *br = 0;
    for (char *tok = strtok(br + 1, ","); tok; tok = strtok(NULL, ",")) {
      if (!strchr(tok, '=') || a->nenv == 8) {
        fprintf(stderr, "mmtrace replay: '%s': a setting is VAR=VALUE, at most 8\n", spec);
        return -1;
      }
      snprintf(a->env[a->nenv++], sizeof a->env[0], "%s", tok);
    }
  }
  return mmt_allocator_path(base, a->path, sizeof a->path, stderr);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static int cmp_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

static void rm_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char p[PATH_MAX + 256];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

int mmt_cmd_replay(int argc, char **argv) {
  const char *trace = NULL, *keep = NULL, *touch_mode = "page";
  double spd = 1;
  int reps = 3, copies = 1, threads = 0;
  bool partial = false;
  alloc_t allocs[16];
  int na = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--alloc") == 0 && i + 1 < argc) {
      if (na == 16) { fprintf(stderr, "mmtrace replay: at most 16 allocators\n"); return 2; }
      if (parse_alloc(argv[++i], &allocs[na]) != 0) return 2;
      na++;
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--speed") == 0 && i + 1 < argc) spd = atof(argv[++i]);
    else if (strcmp(argv[i], "--touch") == 0 && i + 1 < argc) touch_mode = argv[++i];
    else if (strcmp(argv[i], "--keep") == 0 && i + 1 < argc) keep = argv[++i];
    else if (strcmp(argv[i], "--copies") == 0 && i + 1 < argc) copies = atoi(argv[++i]);
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--partial") == 0) partial = true;
    else if (argv[i][0] == '-') { fprintf(stderr, "mmtrace replay: unknown option %s\n", argv[i]); return 2; }
    else trace = argv[i];
  }
  if (!trace || reps < 1 || spd < 0 || copies < 1 || copies > 1024 || threads < 0 ||
      (threads && copies > 1) || (strcmp(touch_mode, "page") && strcmp(touch_mode, "all"))) {
    fprintf(stderr, "usage: mmtrace replay TRACE [--alloc NAME|PATH.so[VAR=VALUE,...]]... [--reps N] [--speed S] "
            "[--touch page|all] [--threads K | --copies N] [--partial] [--keep DIR]\n");
    return 2;
  }
  if (!na && parse_alloc("glibc", &allocs[na++]) != 0) return 2;
  char dir[PATH_MAX];
  if (keep) {
    snprintf(dir, sizeof dir, "%s", keep);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) { fprintf(stderr, "mmtrace replay: %s: %s\n", dir, strerror(errno)); return 2; }
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/mmtrace-replay-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) { fprintf(stderr, "mmtrace replay: mkdtemp: %s\n", strerror(errno)); return 2; }
  }
  /* Linux carries a process's peak RSS over fork and exec into the child's
   * ru_maxrss: the preparation (tables as big as the live set) runs in a
   * child of its own, so that this process stays small and the replays it
   * forks report their own peak alone. */
  uint64_t tp = mono();
  fflush(NULL);
  pid_t prep_pid = fork();
  if (prep_pid < 0) { perror("mmtrace replay: fork"); return 2; }
  if (prep_pid == 0) {
    prep_t prep;
    int prc = prepare(trace, dir, partial, true, &prep);
    if (!prc && prep.skewed) {                 /* the clock cannot order threads: slots stay per thread */
      uint64_t skewed = prep.skewed;
      prc = prepare(trace, dir, partial, false, &prep);
      prep.skewed = skewed;
    }
    if (!prc) {
      char path[PATH_MAX + 16];
      snprintf(path, sizeof path, "%s/summary", dir);
      FILE *sf = fopen(path, "w");
      if (!sf) _exit(2);
      fprintf(sf, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %d %" PRIu64 "\n", prep.ops,
              prep.nth, prep.nslots, prep.skipped_unknown, prep.skewed, prep.memory_known ? 1 : 0, prep.file_kb);
      fclose(sf);
    }
    fflush(NULL);
    _exit(prc);
  }
  int pstatus;
  while (waitpid(prep_pid, &pstatus, 0) < 0 && errno == EINTR) {}
  struct { uint64_t ops, nth, nslots, skipped_unknown, skewed, file_kb; int memory_known; } prep = {0};
  char spath[PATH_MAX + 16];
  snprintf(spath, sizeof spath, "%s/summary", dir);
  FILE *sf = WIFEXITED(pstatus) && WEXITSTATUS(pstatus) == 0 ? fopen(spath, "r") : NULL;
  if (!sf || fscanf(sf, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %d %" SCNu64, &prep.ops,
                    &prep.nth, &prep.nslots, &prep.skipped_unknown, &prep.skewed, &prep.memory_known,
                    &prep.file_kb) != 7) {
    if (sf) fclose(sf);
    if (!keep) rm_dir(dir);
    return WIFEXITED(pstatus) && WEXITSTATUS(pstatus) ? WEXITSTATUS(pstatus) : 2;
  }
  fclose(sf);
  fprintf(stderr, "mmtrace replay: %" PRIu64 " calls in %" PRIu64 " thread%s, %" PRIu64 " slots, prepared in %.2f s"
          "; %" PRIu64 " releases of unknown pointers skipped\n",
          prep.ops, prep.nth, prep.nth == 1 ? "" : "s", prep.nslots, (double)(mono() - tp) / 1e9, prep.skipped_unknown);
  if (prep.skewed)
    fprintf(stderr, "mmtrace replay: %" PRIu64 " releases are stamped before their block's allocation (the clock "
            "differs between CPUs): threads blocked in the trace wait for their own time only\n", prep.skewed);
  /* --threads K: fewer than the trace's threads folds them onto K; a
   * multiple of them runs K / T copies side by side */
  int fold = 0;
  if (threads && (uint64_t)threads < prep.nth) {
    fold = threads;
  } else if (threads) {
    if ((uint64_t)threads % prep.nth || (uint64_t)threads / prep.nth > 1024) {
      fprintf(stderr, "mmtrace replay: --threads %d: above the trace's %" PRIu64 " threads, K must be a "
              "multiple of them (K / %" PRIu64 " copies side by side, at most 1024)\n", threads, prep.nth,
              prep.nth);
      if (!keep) rm_dir(dir);
      return 2;
    }
    copies = (int)((uint64_t)threads / prep.nth);
  }
  char self[PATH_MAX];
  ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
  if (l <= 0) return 2;
  self[l] = 0;
  for (int a = 0; a < na; a++) {
    allocs[a].secs = calloc((size_t)reps, sizeof(double));
    allocs[a].rss_kb = calloc((size_t)reps, sizeof(long));
    allocs[a].faults = calloc((size_t)reps, sizeof(long));
  }
  own_files_save(dir);
  char speed_s[32], copies_s[16], fold_s[16];
  snprintf(speed_s, sizeof speed_s, "%g", spd);
  snprintf(copies_s, sizeof copies_s, "%d", copies);
  snprintf(fold_s, sizeof fold_s, "%d", fold);
  for (int r = 0; r < reps; r++) {
    for (int k = 0; k < na; k++) {
      alloc_t *al = &allocs[r % 2 ? na - 1 - k : k];
      int pipefd[2];
      if (pipe(pipefd) != 0) return 2;
      pid_t pid = fork();
      if (pid == 0) {
        dup2(pipefd[1], 1);
        close(pipefd[0]);
        close(pipefd[1]);
        if (al->path[0]) setenv("LD_PRELOAD", al->path, 1);
        else unsetenv("LD_PRELOAD");
        for (int v = 0; v < al->nenv; v++) {
          char *eq = strchr(al->env[v], '=');
          *eq = 0;
          setenv(al->env[v], eq + 1, 1);
        }
        execl(self, self, "replay-run", dir, speed_s, touch_mode, copies_s, fold_s, (char *)NULL);
        _exit(127);
      }
      close(pipefd[1]);
      char out[512] = "";
      size_t got = 0;
      ssize_t m;
      while ((m = read(pipefd[0], out + got, sizeof out - 1 - got)) > 0) got += (size_t)m;
      out[got] = 0;
      close(pipefd[0]);
      int status;
      struct rusage ru;
      while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {}
      uint64_t ns = 0, nthreads = 0, differs = 0, nulls = 0, nwaits = 0, own_kb = 0, code_kb = 0, peak_kb = 0;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
          sscanf(out, "replay_ns %" SCNu64 " threads %" SCNu64 " slots %*u differ %" SCNu64 " nulls %" SCNu64
                 " waits %" SCNu64 " own_kb %" SCNu64 " code_kb %" SCNu64 " peak_kb %" SCNu64, &ns, &nthreads,
                 &differs, &nulls, &nwaits, &own_kb, &code_kb, &peak_kb) != 8) {
        fprintf(stderr, "mmtrace replay: the replay on %s failed (%s %d)\n", al->name,
                WIFSIGNALED(status) ? "signal" : "status", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        if (!keep) rm_dir(dir);
        return 1;
      }
      al->secs[r] = (double)ns / 1e9;
      /* the replayer's own tables are not the program's memory; nor is
       * its code, which the program's own code and files replace when the
       * trace says how much of them the program had resident */
      long rss = (peak_kb ? (long)peak_kb : ru.ru_maxrss) - (long)own_kb;
      if (prep.memory_known) rss += (long)prep.file_kb - (long)code_kb;
      al->rss_kb[r] = rss > 0 ? rss : 0;
      al->faults[r] = ru.ru_minflt + ru.ru_majflt;  /* and each page of them was faulted in once */
      al->faults[r] = al->faults[r] > (long)(own_kb / 4) ? al->faults[r] - (long)(own_kb / 4) : 0;
      char code[96] = "";
      if (prep.memory_known)
        snprintf(code, sizeof code, "; its code, %" PRIu64 " KiB, counted as the program's, %" PRIu64 " KiB",
                 code_kb, prep.file_kb);
      fprintf(stderr, "rep %d %-10s %.3f s  %ld KiB (the replayer's tables, %" PRIu64 " KiB, not counted%s)  "
              "%ld faults  %" PRIu64 " waits for a block  %" PRIu64 " threads  %" PRIu64 " outcomes differ from the "
              "trace, %" PRIu64 " releases of a refused block\n", r + 1, al->name, al->secs[r], al->rss_kb[r], own_kb,
              code, al->faults[r], nwaits, nthreads, differs, nulls);
    }
  }
  double best = 0;
  for (int a = 0; a < na; a++) {
    qsort(allocs[a].secs, (size_t)reps, sizeof(double), cmp_double);
    qsort(allocs[a].rss_kb, (size_t)reps, sizeof(long), cmp_long);
    qsort(allocs[a].faults, (size_t)reps, sizeof(long), cmp_long);
    double s = allocs[a].secs[reps / 2];
    if (!best || s < best) best = s;
  }
  printf("| allocator | time s | vs fastest | peak RSS MiB | page faults |\n|---|---|---|---|---|\n");
  for (int a = 0; a < na; a++)
    printf("| %s | %.3f | %.2f | %.1f | %ld |\n", allocs[a].name, allocs[a].secs[reps / 2],
           allocs[a].secs[reps / 2] / best, (double)allocs[a].rss_kb[reps / 2] / 1024, allocs[a].faults[reps / 2]);
  printf("\nmedians of %d run%s, allocators alternating; %" PRIu64 " calls in %" PRIu64 " thread%s; speed %g; "
         "touch %s; peak RSS and page faults without the replayer's own tables\n", reps, reps == 1 ? "" : "s", prep.ops,
         prep.nth, prep.nth == 1 ? "" : "s", spd, touch_mode);
  if (prep.memory_known)
    printf("peak RSS counts the program's own code and files as it had them resident (%.1f MiB, from the "
           "trace) in place of the replayer's\n", (double)prep.file_kb / 1024);
  else
    printf("peak RSS counts the replayer's code in place of the program's (the trace does not say how much "
           "the program had: an older trace, or the program was killed or exec'd)\n");
  if (copies > 1) printf("(%d copies of the traced threads side by side, each with its own blocks)\n", copies);
  if (fold) printf("(the traced threads folded onto %d replay threads)\n", fold);
  for (int a = 0; a < na; a++) { free(allocs[a].secs); free(allocs[a].rss_kb); free(allocs[a].faults); }
  if (!keep) rm_dir(dir);
  return 0;
}
