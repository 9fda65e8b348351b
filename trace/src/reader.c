/* reader.c — streaming decoder of one mmtrace file (reader.h says what it
 * returns; trace_format.h is the format).
 *
 * Invariants it checks, each failure an error at the offset of the record
 * (or, inside a header, of the field) where it shows:
 *   - magic, a version it knows, a header whose checksum matches and whose
 *     text is key=value lines;
 *   - records are C, X, E or S, and M in version 3; E and S are last; M
 *     comes at most once, just before E or S;
 *   - a chunk's checksum matches its payload, which holds exactly its
 *     event count; a thread's chunks come in chunk_seq order from 0;
 *   - a thread's first event is its THREAD_BEGIN and there is one;
 *   - ops are known, reserved bits zero, FAILED only on calls that can
 *     fail, INPLACE only on realloc; varints end inside the payload and fit
 *     64 bits; a reference to the thread's own block names a block it was
 *     given; the chunk count in the end record matches;
 *   - version 2: a CPU event is followed by a TIMED call of its thread, and
 *     a thread's CPU time never goes back.
 */
#define _GNU_SOURCE
#include "reader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS (1u << 22)

typedef struct {
  uint64_t last_ticks;           /* version 1: the previous call's return; 2: its entry */
  uint64_t last_ns, nblocks, last_remote, next_chunk;
  uint64_t last_busy;            /* version 2: the previous call's ticks (its dur, or the chunk's busy) */
  uint64_t cpu_ns, cpu_at;       /* version 2: CPU time at the last stamp, and when (ticks) */
  uint64_t cpu_next;             /* a CPU event's time, for the next call */
  bool begun, cpu_pending;
} rthread_t;

struct mmt_reader {
  FILE *f;
  char *path;
  uint64_t off;                  /* bytes consumed from the file */
  unsigned version;
  char *header;                  /* key\0value\0 pairs, unescaped */
  size_t header_len;
  rthread_t *threads;
  uint64_t nthreads;             /* 1 + highest thread index seen */
  uint64_t threads_cap;
  unsigned char *payload;        /* the current chunk */
  size_t payload_cap, pos, end;
  uint64_t chunk_off, chunk_thread, events_left;
  uint64_t chunk_ns, chunk_ticks;  /* the clock pair of the current chunk */
  uint64_t chunk_cost;             /* version 1: post, the recorder's ticks after each call (in the
                                      gaps); version 2: busy, the ticks of an untimed call */
  uint64_t chunks;
  unsigned execs;
  bool last_exec;                /* the last record read was an exec record */
  bool memory_known;             /* a memory record was read (the next record must end the file) */
  uint64_t peak_kb, file_kb;     /* its values */
  bool done, failed, allow_partial;
  char ending[32];
  char err[512];
};

static int fail(mmt_reader_t *r, uint64_t at, const char *fmt, ...) {
  if (r->failed) return -1;
  int n = snprintf(r->err, sizeof r->err, "mmtrace: %s: byte %llu: ", r->path, (unsigned long long)at);
  va_list ap;
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < sizeof r->err) vsnprintf(r->err + n, sizeof r->err - (size_t)n, fmt, ap);
  va_end(ap);
  r->failed = true;
  return -1;
}

/* n bytes from the file, or an error saying where it was cut. */
static bool get_bytes(mmt_reader_t *r, void *buf, size_t n, uint64_t rec_at, const char *what) {
  size_t got = fread(buf, 1, n, r->f);
  r->off += got;
  if (got == n) return true;
  if (ferror(r->f)) fail(r, r->off, "read error: %s", strerror(errno));
  else fail(r, rec_at, "truncated: the %s needs %zu more bytes, the file ends at byte %llu", what, n - got,
            (unsigned long long)r->off);
  return false;
}

static bool get_varint_file(mmt_reader_t *r, uint64_t *v, uint64_t rec_at, const char *what) {
  uint64_t x = 0;
  for (unsigned i = 0; i < MMT_VARINT_MAX; i++) {
    int c = getc(r->f);
    if (c == EOF) {
      if (ferror(r->f)) fail(r, r->off, "read error: %s", strerror(errno));
      else fail(r, rec_at, "truncated: the %s is cut at byte %llu", what, (unsigned long long)r->off);
      return false;
    }
    r->off++;
    if (i == 9 && (c & 0x7e)) break;
    x |= (uint64_t)(c & 0x7f) << (7 * i);
    if (!(c & 0x80)) { *v = x; return true; }
  }
  fail(r, rec_at, "malformed %s: a varint longer than 64 bits", what);
  return false;
}

mmt_reader_t *mmt_reader_open(const char *path, char *err, size_t errlen) {
  mmt_reader_t *r = calloc(1, sizeof *r);
  if (!r || !(r->path = strdup(path))) {
    snprintf(err, errlen, "mmtrace: %s: out of memory", path);
    free(r);
    return NULL;
  }
  r->f = fopen(path, "rb");
  if (!r->f) {
    snprintf(err, errlen, "mmtrace: %s: %s", path, strerror(errno));
    mmt_reader_close(r);
    return NULL;
  }
  unsigned char head[MMT_MAGIC_LEN + 2];
  uint64_t len;
  char *text = NULL;
  unsigned char sum[4];
  if (!get_bytes(r, head, sizeof head, 0, "file header")) goto bad;
  if (memcmp(head, MMT_MAGIC, MMT_MAGIC_LEN) != 0) {
    fail(r, 0, "not an mmtrace file (no \"mmtrace\" magic)");
    goto bad;
  }
  r->version = head[MMT_MAGIC_LEN] | (unsigned)head[MMT_MAGIC_LEN + 1] << 8;
  if (r->version < MMT_VERSION_OLDEST || r->version > MMT_VERSION) {
    fail(r, MMT_MAGIC_LEN, "format version %u%s; this mmtrace reads version %u", r->version,
         r->version > MMT_VERSION ? " is newer than this mmtrace" : " is not one it knows", MMT_VERSION);
    goto bad;
  }
  if (!get_varint_file(r, &len, MMT_MAGIC_LEN + 2, "header length")) goto bad;
  if (len > MMT_HEADER_TEXT_MAX) {
    fail(r, MMT_MAGIC_LEN + 2, "header length %llu is over the limit %u", (unsigned long long)len,
         MMT_HEADER_TEXT_MAX);
    goto bad;
  }
  uint64_t text_at = r->off;
  text = malloc(len + 1);
  r->header = malloc(len + 2);
  if (!text || !r->header) { fail(r, 0, "out of memory"); goto bad; }
  if (!get_bytes(r, text, len, text_at, "header text") || !get_bytes(r, sum, 4, text_at, "header checksum"))
    goto bad;
  if (mmt_get_u32(sum) != mmt_fnv((unsigned char *)text, len)) {
    fail(r, text_at, "header checksum mismatch (bytes %llu-%llu are damaged)", (unsigned long long)text_at,
         (unsigned long long)(text_at + len + 3));
    goto bad;
  }
  /* key=value\n lines, values with \n and \\ escaped */
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    char *nl = memchr(text + i, '\n', len - i);
    char *eq = memchr(text + i, '=', len - i);
    if (!nl || !eq || eq > nl || eq == text + i) {
      fail(r, text_at + i, "malformed header line (not key=value)");
      goto bad;
    }
    memcpy(r->header + o, text + i, (size_t)(eq - text - (ptrdiff_t)i));
    o += (size_t)(eq - text - (ptrdiff_t)i);
    r->header[o++] = 0;
    for (char *c = eq + 1; c < nl; c++) {
      if (*c == '\\' && c + 1 < nl) { c++; r->header[o++] = *c == 'n' ? '\n' : *c; }
      else r->header[o++] = *c;
    }
    r->header[o++] = 0;
    i = (size_t)(nl - text) + 1;
  }
  r->header_len = o;
  free(text);
  return r;
bad:
  snprintf(err, errlen, "%s", r->err);
  free(text);
  mmt_reader_close(r);
  return NULL;
}

void mmt_reader_close(mmt_reader_t *r) {
  if (!r) return;
  if (r->f) fclose(r->f);
  free(r->path);
  free(r->header);
  free(r->threads);
  free(r->payload);
  free(r);
}

void mmt_reader_allow_partial(mmt_reader_t *r, bool allow) { r->allow_partial = allow; }
const char *mmt_reader_error(const mmt_reader_t *r) { return r->err; }
unsigned mmt_reader_version(const mmt_reader_t *r) { return r->version; }
const char *mmt_reader_ending(const mmt_reader_t *r) { return r->ending; }
unsigned mmt_reader_execs(const mmt_reader_t *r) { return r->execs; }
uint64_t mmt_reader_threads(const mmt_reader_t *r) { return r->nthreads; }
uint64_t mmt_reader_offset(const mmt_reader_t *r) { return r->off; }

bool mmt_reader_memory(const mmt_reader_t *r, uint64_t *peak_kb, uint64_t *file_kb) {
  *peak_kb = r->memory_known ? r->peak_kb : 0;
  *file_kb = r->memory_known ? r->file_kb : 0;
  return r->memory_known;
}

const char *mmt_reader_header(const mmt_reader_t *r, const char *key, unsigned i) {
  for (size_t o = 0; o < r->header_len;) {
    const char *k = r->header + o, *v = k + strlen(k) + 1;
    if (strcmp(k, key) == 0 && i-- == 0) return v;
    o = (size_t)(v + strlen(v) + 1 - r->header);
  }
  return NULL;
}

static rthread_t *thread_of(mmt_reader_t *r, uint64_t t) {
  if (t >= r->threads_cap) {
    uint64_t n = r->threads_cap ? r->threads_cap : 16;
    while (n <= t) n *= 2;
    rthread_t *a = realloc(r->threads, n * sizeof *a);
    if (!a) return NULL;
    memset(a + r->threads_cap, 0, (n - r->threads_cap) * sizeof *a);
    r->threads = a;
    r->threads_cap = n;
  }
  if (t >= r->nthreads) r->nthreads = t + 1;
  return &r->threads[t];
}

static bool pay_varint(mmt_reader_t *r, uint64_t *v, const char *what) {
  const unsigned char *p = r->payload + r->pos;
  int k = mmt_get_varint(&p, r->payload + r->end, v);
  r->pos = (size_t)(p - r->payload);
  if (k == 0) fail(r, r->chunk_off, "malformed chunk: the %s of an event runs past the payload's end", what);
  if (k < 0) fail(r, r->chunk_off, "malformed chunk: the %s of an event is a varint over 64 bits", what);
  return k > 0;
}

/* The next record; true when a chunk's events are ready (or the end). */
static int next_record(mmt_reader_t *r) {
  for (;;) {
    uint64_t at = r->off;
    int kind = getc(r->f);
    if (kind == EOF) {
      if (ferror(r->f)) return fail(r, at, "read error: %s", strerror(errno));
      if (r->last_exec) {        /* the image became another program: its part ends here */
        snprintf(r->ending, sizeof r->ending, "exec");
        r->done = true;
        return 0;
      }
      if (r->allow_partial) {
        snprintf(r->ending, sizeof r->ending, "partial");
        r->done = true;
        return 0;
      }
      return fail(r, at, "the trace ends without an end record (the program was killed, or the file is cut "
                  "here); everything before this byte was read");
    }
    r->off++;
    if (r->memory_known && kind != MMT_REC_END && kind != MMT_REC_SIGNAL)
      return fail(r, at, "the memory record is not followed by the end record");
    r->last_exec = kind == MMT_REC_EXEC;
    if (kind == MMT_REC_MEMORY && r->version >= 3) {
      unsigned char m[4], rec[1 + 2 * MMT_VARINT_MAX], *q = rec;
      if (!get_varint_file(r, &r->peak_kb, at, "memory record") ||
          !get_varint_file(r, &r->file_kb, at, "memory record") || !get_bytes(r, m, 4, at, "memory record"))
        return -1;
      *q++ = MMT_REC_MEMORY;          /* the checksum covers the record as written: shortest varints */
      q = mmt_put_varint(q, r->peak_kb);
      q = mmt_put_varint(q, r->file_kb);
      if (mmt_get_u32(m) != mmt_fnv(rec, (size_t)(q - rec)) || r->off - at != (uint64_t)(q - rec) + 4)
        return fail(r, at, "malformed memory record (its checksum does not match)");
      if (r->file_kb > r->peak_kb)
        return fail(r, at, "the memory record's file-backed part (%llu KiB) is over its peak (%llu KiB)",
                    (unsigned long long)r->file_kb, (unsigned long long)r->peak_kb);
      r->memory_known = true;
      continue;
    }
    if (kind == MMT_REC_EXEC) {
      unsigned char m[4];
      if (!get_bytes(r, m, 4, at, "exec record")) return -1;
      if (mmt_get_u32(m) != MMT_EXEC_MARK) return fail(r, at, "malformed exec record");
      r->execs++;
      continue;
    }
    if (kind == MMT_REC_END || kind == MMT_REC_SIGNAL) {
      uint64_t signo = 0, chunks;
      unsigned char m[4];
      if (kind == MMT_REC_SIGNAL && !get_varint_file(r, &signo, at, "signal record")) return -1;
      if (!get_varint_file(r, &chunks, at, "end record") || !get_bytes(r, m, 4, at, "end record")) return -1;
      if (mmt_get_u32(m) != (kind == MMT_REC_END ? MMT_END_MARK : MMT_SIGNAL_MARK))
        return fail(r, at, "malformed end record");
      if (chunks != r->chunks)
        return fail(r, at, "the end record counts %llu chunks, the file holds %llu", (unsigned long long)chunks,
                    (unsigned long long)r->chunks);
      if (getc(r->f) != EOF) return fail(r, r->off, "bytes after the end record");
      if (kind == MMT_REC_END) snprintf(r->ending, sizeof r->ending, "exit");
      else snprintf(r->ending, sizeof r->ending, "signal %llu", (unsigned long long)signo);
      r->done = true;
      return 0;
    }
    if (kind != MMT_REC_CHUNK) return fail(r, at, "unknown record kind 0x%02x", (unsigned)kind);
    uint64_t thread, seq, events, bytes, ns, ticks, cost;
    unsigned char sum[8];
    if (!get_varint_file(r, &thread, at, "chunk header") || !get_varint_file(r, &seq, at, "chunk header") ||
        !get_varint_file(r, &events, at, "chunk header") || !get_varint_file(r, &bytes, at, "chunk header") ||
        !get_varint_file(r, &ns, at, "chunk header") || !get_varint_file(r, &ticks, at, "chunk header") ||
        !get_varint_file(r, &cost, at, "chunk header") ||
        !get_bytes(r, sum, 8, at, "chunk header"))
      return -1;
    if (thread >= MAX_THREADS) return fail(r, at, "chunk of thread %llu: over the limit of %u threads",
                                           (unsigned long long)thread, MAX_THREADS);
    if (bytes > MMT_CHUNK_MAX || bytes == 0)
      return fail(r, at, "chunk of %llu bytes (a chunk holds 1 to %u)", (unsigned long long)bytes, MMT_CHUNK_MAX);
    if (events == 0 || events > bytes)
      return fail(r, at, "chunk of %llu bytes claims %llu events", (unsigned long long)bytes,
                  (unsigned long long)events);
    if (bytes > r->payload_cap) {
      unsigned char *p = realloc(r->payload, bytes);
      if (!p) return fail(r, at, "out of memory");
      r->payload = p;
      r->payload_cap = bytes;
    }
    if (!get_bytes(r, r->payload, bytes, at, "chunk payload")) return -1;
    unsigned char hdr[1 + 7 * MMT_VARINT_MAX], *h = hdr;
    *h++ = MMT_REC_CHUNK;
    h = mmt_put_varint(h, thread);
    h = mmt_put_varint(h, seq);
    h = mmt_put_varint(h, events);
    h = mmt_put_varint(h, bytes);
    h = mmt_put_varint(h, ns);
    h = mmt_put_varint(h, ticks);
    h = mmt_put_varint(h, cost);
    /* the header re-encoded: the recorder writes the shortest varints, so
     * any other encoding of the same numbers fails the checksum too */
    if (mmt_get_u64(sum) != mmt_sum_more(mmt_sum_more(MMT_SUM_SEED, hdr, (size_t)(h - hdr)), r->payload, bytes))
      return fail(r, at, "chunk checksum mismatch (bytes %llu-%llu are damaged)", (unsigned long long)at,
                  (unsigned long long)(r->off - 1));
    rthread_t *t = thread_of(r, thread);
    if (!t) return fail(r, at, "out of memory");
    if (seq != t->next_chunk)
      return fail(r, at, "chunk %llu of thread %llu where chunk %llu was due", (unsigned long long)seq,
                  (unsigned long long)thread, (unsigned long long)t->next_chunk);
    t->next_chunk++;
    r->chunks++;
    r->chunk_off = at;
    r->chunk_ns = ns;
    r->chunk_ticks = ticks;
    r->chunk_cost = cost;
    r->chunk_thread = thread;
    r->events_left = events;
    r->pos = 0;
    r->end = bytes;
    return 1;
  }
}

/* A span of ticks in ns, by the current chunk's clock pair. */
static uint64_t ticks_to_ns(const mmt_reader_t *r, uint64_t ticks) {
  return r->chunk_ticks ? (uint64_t)((unsigned __int128)ticks * r->chunk_ns / r->chunk_ticks) : ticks;
}

/* ticks -> ns by the current chunk's clock pair; never backwards in a
 * thread (two chunks' pairs may differ in the last digit). */
static uint64_t to_ns(mmt_reader_t *r, rthread_t *t, uint64_t ticks) {
  uint64_t ns = r->chunk_ticks ? (uint64_t)((unsigned __int128)ticks * r->chunk_ns / r->chunk_ticks) : ticks;
  if (ns < t->last_ns) ns = t->last_ns;
  return t->last_ns = ns;
}

int mmt_reader_next(mmt_reader_t *r, mmt_event_t *ev) {
  if (r->failed) return -1;
again:
  if (r->done) return 0;
  if (r->events_left == 0) {
    if (r->pos != r->end)
      return fail(r, r->chunk_off, "malformed chunk: %zu bytes after its last event", r->end - r->pos);
    int k = next_record(r);
    if (k <= 0) return k;
  }
  rthread_t *t = &r->threads[r->chunk_thread];
  memset(ev, 0, sizeof *ev);
  ev->stamped = true;
  ev->thread = r->chunk_thread;
  ev->offset = r->chunk_off;
  if (r->pos >= r->end)
    return fail(r, r->chunk_off, "malformed chunk: %llu events missing at its end",
                (unsigned long long)r->events_left);
  unsigned b = r->payload[r->pos++];
  unsigned op = b & MMT_OP_MASK;
  bool v2 = r->version >= 2;
  if ((b & MMT_TIMED) && !v2)
    return fail(r, r->chunk_off, "malformed chunk: event byte 0x%02x has the reserved bit", b);
  if (op >= MMT_NOPS || (op == MMT_CPU && !v2))
    return fail(r, r->chunk_off, "malformed chunk: unknown operation %u", op);
  if (op == MMT_CPU) {
    if (b != MMT_CPU || !t->begun || t->cpu_pending)
      return fail(r, r->chunk_off, "malformed chunk: a cpu event out of place (event byte 0x%02x)", b);
    if (!pay_varint(r, &t->cpu_next, "cpu time")) return -1;
    if (t->cpu_next < t->cpu_ns) return fail(r, r->chunk_off, "malformed chunk: a thread's cpu time goes back");
    t->cpu_pending = true;
    r->events_left--;
    goto again;                       /* the call it belongs to */
  }
  if (t->cpu_pending && !(b & MMT_TIMED))
    return fail(r, r->chunk_off, "malformed chunk: a cpu event not followed by a timed call");
  ev->op = op;
  ev->failed = b & MMT_FAILED;
  ev->inplace = b & MMT_INPLACE;
  unsigned shape = mmt_op_shape(op);
  bool can_fail = (shape & MMT_ALLOCATES) || op == MMT_FORK;
  if (ev->failed && !can_fail)
    return fail(r, r->chunk_off, "malformed chunk: %s marked as failed", mmt_op_name(op));
  if (ev->inplace && (op != MMT_REALLOC && op != MMT_REALLOCARRAY))
    return fail(r, r->chunk_off, "malformed chunk: %s marked in place", mmt_op_name(op));
  if (ev->inplace && ev->failed)
    return fail(r, r->chunk_off, "malformed chunk: a failed realloc marked in place");
  if (op == MMT_THREAD_BEGIN) {
    if (t->begun) return fail(r, r->chunk_off, "malformed chunk: thread %llu begins twice",
                              (unsigned long long)ev->thread);
    uint64_t ticks;
    if (!pay_varint(r, &ticks, "time") || !pay_varint(r, &ev->os_tid, "thread id")) return -1;
    t->begun = true;
    t->last_ticks = t->cpu_at = ticks;
    ev->time_ns = to_ns(r, t, ticks);
    r->events_left--;
    return 1;
  }
  if (!t->begun)
    return fail(r, r->chunk_off, "malformed chunk: thread %llu calls %s before its thread_begin",
                (unsigned long long)ev->thread, mmt_op_name(op));
  if (!v2) {
    uint64_t gap, dur;
    if (!pay_varint(r, &gap, "time") || !pay_varint(r, &dur, "duration")) return -1;
    uint64_t entry = t->last_ticks + gap, exit = entry + dur;
    if (entry < t->last_ticks || exit < entry) return fail(r, r->chunk_off, "malformed chunk: time overflows");
    ev->time_ns = to_ns(r, t, entry);
    ev->gap_ns = ticks_to_ns(r, gap);
    ev->work_ns = ticks_to_ns(r, gap > r->chunk_cost ? gap - r->chunk_cost : 0);
    ev->dur_ns = ticks_to_ns(r, dur);
    ev->timed = true;
    t->last_ticks = exit;
  } else {
    uint64_t delta, dur = r->chunk_cost;
    ev->timed = b & MMT_TIMED;
    if (!pay_varint(r, &delta, "time") || (ev->timed && !pay_varint(r, &dur, "duration"))) return -1;
    uint64_t entry = t->last_ticks + delta, exit = entry + dur;
    if (entry < t->last_ticks || exit < entry) return fail(r, r->chunk_off, "malformed chunk: time overflows");
    /* delta 0 on an untimed call: the clock was not read (a dense
     * burst); the call is taken to begin with its predecessor, and the
     * next stamped call's delta spans the window, less the ticks of every
     * call in it (last_busy sums them) */
    bool unstamped = delta == 0 && !ev->timed;
    uint64_t gap = delta > t->last_busy ? delta - t->last_busy : 0;
    ev->time_ns = to_ns(r, t, entry);
    ev->gap_ns = ev->work_ns = ticks_to_ns(r, gap);
    ev->dur_ns = ticks_to_ns(r, dur);
    ev->stamped = !unstamped;
    t->last_ticks = entry;
    t->last_busy = unstamped ? t->last_busy + dur : dur;
    if (t->cpu_pending) {
      /* the CPU time since the last stamp, less the time since then that
       * was not this gap (calls and short gaps, taken as computing), is
       * what the thread computed in the gap; the rest it was blocked */
      uint64_t since = ticks_to_ns(r, exit - t->cpu_at), other = since > ev->gap_ns ? since - ev->gap_ns : 0;
      uint64_t cpu = t->cpu_next - t->cpu_ns;
      ev->gap_cpu_ns = cpu > other ? cpu - other : 0;
      if (ev->gap_cpu_ns > ev->gap_ns) ev->gap_cpu_ns = ev->gap_ns;
      ev->gap_cpu_known = true;
      t->cpu_ns = t->cpu_next;
      t->cpu_at = exit;
      t->cpu_pending = false;
    }
  }
  if (op == MMT_FORK) {
    if (!pay_varint(r, &ev->child_pid, "child pid")) return -1;
    r->events_left--;
    return 1;
  }
  if (shape & MMT_HAS_REF) {
    uint64_t ref;
    if (!pay_varint(r, &ref, "block reference")) return -1;
    if (ref == MMT_REF_NULL) {
      ev->ref = MMT_REF_IS_NULL;
    } else if (ref == MMT_REF_UNKNOWN) {
      ev->ref = MMT_REF_IS_UNKNOWN;
      if (!pay_varint(r, &ev->ref_addr, "pointer")) return -1;
    } else if (!(ref & 1)) {
      uint64_t k = (ref - 2) / 2;
      if (k >= t->nblocks)
        return fail(r, r->chunk_off, "malformed chunk: thread %llu refers to its block %llu back, it has %llu",
                    (unsigned long long)ev->thread, (unsigned long long)k + 1, (unsigned long long)t->nblocks);
      ev->ref = MMT_REF_IS_BLOCK;
      ev->ref_thread = ev->thread;
      ev->ref_n = t->nblocks - 1 - k;
    } else {
      uint64_t owner;
      int64_t d = mmt_unzigzag((ref - 3) / 2);
      if (!pay_varint(r, &owner, "block owner")) return -1;
      if (owner == ev->thread || owner >= MAX_THREADS)
        return fail(r, r->chunk_off, "malformed chunk: a remote reference to thread %llu from thread %llu",
                    (unsigned long long)owner, (unsigned long long)ev->thread);
      uint64_t n = t->last_remote + (uint64_t)d;
      if ((d < 0 && n > t->last_remote) || (d > 0 && n < t->last_remote))
        return fail(r, r->chunk_off, "malformed chunk: a block number out of range");
      t->last_remote = n;
      ev->ref = MMT_REF_IS_BLOCK;
      ev->ref_thread = owner;
      ev->ref_n = n;
    }
  }
  if ((shape & MMT_HAS_ALIGN) && (shape & MMT_ALLOCATES) && !pay_varint(r, &ev->align, "alignment")) return -1;
  if ((shape & MMT_HAS_NMEMB) && !pay_varint(r, &ev->nmemb, "element count")) return -1;
  if ((shape & MMT_HAS_SIZE) && !pay_varint(r, &ev->size, "size")) return -1;
  if ((shape & MMT_HAS_ALIGN) && !(shape & MMT_ALLOCATES) && !pay_varint(r, &ev->align, "alignment")) return -1;
  if (shape & MMT_RELEASES) {
    bool keeps = false;   /* a failed realloc to a size above zero leaves its block */
    if (shape & MMT_ALLOCATES) {
      uint64_t bytes = ev->size;
      if (op == MMT_REALLOCARRAY && __builtin_mul_overflow(ev->nmemb, ev->size, &bytes)) bytes = UINT64_MAX;
      keeps = ev->failed && bytes != 0;
    }
    ev->released = ev->ref != MMT_REF_IS_NULL && !keeps;
  }
  if ((shape & MMT_ALLOCATES) && !ev->failed) {
    ev->allocated = true;
    ev->new_n = t->nblocks++;
  }
  r->events_left--;
  return 1;
}
