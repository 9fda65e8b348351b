/* stats.c — `mmtrace stats TRACE`: one streaming pass over a trace that
 * writes, as JSON on stdout, what the report plots and says: calls per
 * function, sizes, lifetimes, live bytes over time, threads, who frees
 * whose blocks, realloc chains, alignments.
 *
 * Memory: a table of the live blocks (id -> time, size), a table of frees
 * read before their block's allocation (a thread's chunks reach the file
 * when its buffer fills, so another thread's free of its block may come
 * first), a few words per thread and per thread pair, and one counter per
 * millisecond of the run: never the trace itself.
 *
 * Resolution: times are binned per millisecond, so the peak live set is
 * the highest live total at the end of any millisecond (the true peak
 * inside a millisecond may be higher).  A lifetime in allocations counts
 * the owner's own allocations between a block's allocation and its free,
 * known exactly for a block freed by its owner (the ref says how many
 * blocks back it is) and not defined for a remote free.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "table.h"
#include "tool.h"

#define NBUCKETS 65   /* log2 buckets: 0, 1, 2-3, 4-7, ... */

static unsigned log2_bucket(uint64_t v) { return v ? 64u - (unsigned)__builtin_clzll(v) : 0; }

static void *xcalloc(size_t n, size_t sz) {
  void *p = calloc(n, sz);
  if (!p) mmt_oom();
  return p;
}

/* ---- the statistics ------------------------------------------------------ */

typedef struct {
  uint64_t begin_ns, end_ns, last_ns, tid;
  uint64_t allocs, frees, bytes, remote_frees;   /* frees: made by this thread */
  bool ended;
} tstat_t;

typedef struct {
  uint64_t calls[MMT_NOPS], failed[MMT_NOPS];
  uint64_t size_count[NBUCKETS], size_bytes[NBUCKETS];
  uint64_t life_ns[NBUCKETS], life_allocs[NBUCKETS];
  uint64_t align_count[NBUCKETS];
  uint64_t realloc_grow, realloc_shrink, realloc_same, realloc_inplace, realloc_moved;
  uint64_t growth[NBUCKETS];     /* realloc growth factor, log2 of new/old */
  uint64_t unknown, nulls, releases, remote, allocs, alloc_bytes;
  table_t live, early;
  tstat_t *th;
  uint64_t nth, cap_th;
  table_t pairs;                 /* (owner, freer) -> count */
  int64_t *bin_bytes;            /* live-byte change per ms */
  uint64_t *bin_allocs;          /* allocations per ms */
  uint64_t nbins, cap_bins, end_ns;
} stats_t;

static tstat_t *tstat(stats_t *s, uint64_t t) {
  if (t >= s->cap_th) {
    uint64_t n = s->cap_th ? s->cap_th * 2 : 16;
    while (n <= t) n *= 2;
    s->th = realloc(s->th, n * sizeof *s->th);
    if (!s->th) mmt_oom();
    memset(s->th + s->cap_th, 0, (n - s->cap_th) * sizeof *s->th);
    s->cap_th = n;
  }
  if (t >= s->nth) s->nth = t + 1;
  return &s->th[t];
}

static void bin_add(stats_t *s, uint64_t ns, int64_t bytes, uint64_t allocs) {
  uint64_t b = ns / 1000000;
  if (b >= s->cap_bins) {
    uint64_t n = s->cap_bins ? s->cap_bins * 2 : 1024;
    while (n <= b) n *= 2;
    s->bin_bytes = realloc(s->bin_bytes, n * sizeof *s->bin_bytes);
    s->bin_allocs = realloc(s->bin_allocs, n * sizeof *s->bin_allocs);
    if (!s->bin_bytes || !s->bin_allocs) mmt_oom();
    memset(s->bin_bytes + s->cap_bins, 0, (n - s->cap_bins) * sizeof *s->bin_bytes);
    memset(s->bin_allocs + s->cap_bins, 0, (n - s->cap_bins) * sizeof *s->bin_allocs);
    s->cap_bins = n;
  }
  if (b >= s->nbins) s->nbins = b + 1;
  s->bin_bytes[b] += bytes;
  s->bin_allocs[b] += allocs;
}

/* A block's release at time ns, freed by thread f; `back` is how many of
 * the owner's blocks back it was for an own free (UINT64_MAX: remote). */
static void released(stats_t *s, uint64_t owner, uint64_t n, uint64_t ns, uint64_t f, uint64_t back) {
  table_slot_t b;                                /* a: allocation time, b: size */
  if (table_take(&s->live, table_block_key(owner, n), &b)) {
    s->life_ns[log2_bucket(ns > b.a ? ns - b.a : 0)]++;
    bin_add(s, ns, -(int64_t)b.b, 0);
  } else {
    table_put(&s->early, table_block_key(owner, n), ns, 0, 0);   /* its allocation is further on in the file */
  }
  if (back != UINT64_MAX) s->life_allocs[log2_bucket(back)]++;
  s->releases++;
  tstat(s, f)->frees++;
  if (owner != f) {
    s->remote++;
    tstat(s, f)->remote_frees++;
    uint64_t k = (owner << 24 | f) + 1;
    table_slot_t *c = table_find(&s->pairs, k);
    if (c) c->a++;
    else table_put(&s->pairs, k, 1, 0, 0);
  }
}

static void allocated(stats_t *s, uint64_t thread, uint64_t n, uint64_t ns, uint64_t size) {
  table_slot_t early;
  s->allocs++;
  s->alloc_bytes += size;
  s->size_count[log2_bucket(size)]++;
  s->size_bytes[log2_bucket(size)] += size;
  tstat_t *t = tstat(s, thread);
  t->allocs++;
  t->bytes += size;
  bin_add(s, ns, (int64_t)size, 1);
  if (table_take(&s->early, table_block_key(thread, n), &early)) {   /* a: the free's time */
    s->life_ns[log2_bucket(early.a > ns ? early.a - ns : 0)]++;
    bin_add(s, early.a, -(int64_t)size, 0);
  } else {
    table_put(&s->live, table_block_key(thread, n), ns, size, 0);
  }
}

static uint64_t event_bytes(const mmt_event_t *e) {
  uint64_t b = e->size;
  if (e->op == MMT_CALLOC || e->op == MMT_REALLOCARRAY) b = e->nmemb * e->size;
  return b;
}

static void json_array(FILE *o, const char *name, const uint64_t *v, unsigned n, bool comma) {
  unsigned last = n;
  while (last > 0 && !v[last - 1]) last--;
  fprintf(o, "  \"%s\": [", name);
  for (unsigned i = 0; i < last; i++) fprintf(o, "%s%" PRIu64, i ? ", " : "", v[i]);
  fprintf(o, "]%s\n", comma ? "," : "");
}

static void json_string(FILE *o, const char *s) {
  fputc('"', o);
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(o, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(o, "\\u%04x", *s);
    else fputc(*s, o);
  }
  fputc('"', o);
}

int mmt_cmd_stats(int argc, char **argv) {
  bool partial = false;
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--partial") == 0) partial = true;
    else if (argv[i][0] == '-') { fprintf(stderr, "mmtrace stats: unknown option %s\n", argv[i]); return 2; }
    else path = argv[i];
  }
  if (!path) { fprintf(stderr, "usage: mmtrace stats [--partial] TRACE\n"); return 2; }
  char err[600];
  mmt_reader_t *r = mmt_reader_open(path, err, sizeof err);
  if (!r) { fprintf(stderr, "%s\n", err); return 2; }
  mmt_reader_allow_partial(r, partial);
  stats_t *s = xcalloc(1, sizeof *s);
  mmt_event_t e;
  int k;
  uint64_t n_events = 0;
  while ((k = mmt_reader_next(r, &e)) > 0) {
    n_events++;
    s->calls[e.op]++;
    if (e.failed) s->failed[e.op]++;
    tstat_t *t = tstat(s, e.thread);
    if (e.op == MMT_THREAD_BEGIN) { t->begin_ns = e.time_ns; t->tid = e.os_tid; }
    if (e.op == MMT_THREAD_END) { t->end_ns = e.time_ns; t->ended = true; }
    if (e.time_ns > t->last_ns) t->last_ns = e.time_ns;
    if (e.time_ns > s->end_ns) s->end_ns = e.time_ns;
    unsigned shape = mmt_op_shape(e.op);
    if (shape & MMT_HAS_ALIGN && shape & MMT_ALLOCATES) s->align_count[log2_bucket(e.align)]++;
    if (e.ref == MMT_REF_IS_UNKNOWN) s->unknown++;
    if (e.ref == MMT_REF_IS_NULL && !(shape & MMT_ALLOCATES)) s->nulls++;
    /* a realloc's old size, read before the block goes */
    table_slot_t *old = e.ref == MMT_REF_IS_BLOCK && (shape & MMT_ALLOCATES)
                          ? table_find(&s->live, table_block_key(e.ref_thread, e.ref_n)) : NULL;
    bool have_old = old != NULL;
    uint64_t old_size = old ? old->b : 0;
    if (e.ref == MMT_REF_IS_BLOCK && e.released) {
      /* for a block freed by its owner: how many of the owner's blocks came after it */
      bool own = e.ref_thread == e.thread && e.ref_n < s->th[e.thread].allocs;
      released(s, e.ref_thread, e.ref_n, e.time_ns, e.thread, own ? s->th[e.thread].allocs - 1 - e.ref_n : UINT64_MAX);
    }
    if (e.allocated) {
      uint64_t bytes = event_bytes(&e);
      allocated(s, e.thread, e.new_n, e.time_ns, bytes);
      if ((e.op == MMT_REALLOC || e.op == MMT_REALLOCARRAY) && e.ref == MMT_REF_IS_BLOCK && have_old) {
        if (bytes > old_size) s->realloc_grow++;
        else if (bytes < old_size) s->realloc_shrink++;
        else s->realloc_same++;
        if (bytes > old_size && old_size) s->growth[log2_bucket(bytes / old_size)]++;
        if (e.inplace) s->realloc_inplace++; else s->realloc_moved++;
      }
    }
  }
  if (k < 0) {
    fprintf(stderr, "%s\n", mmt_reader_error(r));
    mmt_reader_close(r);
    return 2;
  }
  FILE *o = stdout;
  fprintf(o, "{\n  \"trace\": ");
  json_string(o, path);
  fprintf(o, ",\n  \"program\": ");
  json_string(o, mmt_reader_header(r, "program", 0));
  fprintf(o, ",\n  \"args\": [");
  for (unsigned a = 0; mmt_reader_header(r, "arg", a); a++) {
    if (a) fputs(", ", o);
    json_string(o, mmt_reader_header(r, "arg", a));
  }
  fprintf(o, "],\n  \"host\": ");
  json_string(o, mmt_reader_header(r, "host", 0));
  fprintf(o, ",\n  \"cpus\": ");
  json_string(o, mmt_reader_header(r, "cpus", 0));
  fprintf(o, ",\n  \"preload\": ");
  json_string(o, mmt_reader_header(r, "preload", 0));
  fprintf(o, ",\n  \"ending\": ");
  json_string(o, mmt_reader_ending(r));
  uint64_t peak_kb, file_kb;
  if (mmt_reader_memory(r, &peak_kb, &file_kb))
    fprintf(o, ",\n  \"memory\": {\"peak_rss_bytes\": %" PRIu64 ", \"file_bytes\": %" PRIu64 "}", peak_kb << 10,
            file_kb << 10);
  else
    fprintf(o, ",\n  \"memory\": null");
  fprintf(o, ",\n  \"bytes\": %" PRIu64 ",\n  \"events\": %" PRIu64 ",\n  \"duration_ns\": %" PRIu64 ",\n",
          mmt_reader_offset(r), n_events, s->end_ns);
  fprintf(o, "  \"calls\": {");
  bool first = true;
  for (unsigned op = 0; op < MMT_NOPS; op++) {
    if (!s->calls[op]) continue;
    fprintf(o, "%s\"%s\": [%" PRIu64 ", %" PRIu64 "]", first ? "" : ", ", mmt_op_name(op), s->calls[op], s->failed[op]);
    first = false;
  }
  fprintf(o, "},\n");
  fprintf(o, "  \"allocations\": %" PRIu64 ",\n  \"allocated_bytes\": %" PRIu64 ",\n", s->allocs, s->alloc_bytes);
  fprintf(o, "  \"releases\": %" PRIu64 ",\n  \"remote_releases\": %" PRIu64 ",\n", s->releases, s->remote);
  fprintf(o, "  \"unknown_releases\": %" PRIu64 ",\n  \"null_frees\": %" PRIu64 ",\n", s->unknown, s->nulls);
  fprintf(o, "  \"live_at_end\": %zu,\n", s->live.n);
  fprintf(o, "  \"log2_buckets\": \"index i holds values in [2^(i-1), 2^i); index 0 holds 0\",\n");
  json_array(o, "size_count", s->size_count, NBUCKETS, true);
  json_array(o, "size_bytes", s->size_bytes, NBUCKETS, true);
  json_array(o, "lifetime_ns", s->life_ns, NBUCKETS, true);
  json_array(o, "lifetime_own_allocations", s->life_allocs, NBUCKETS, true);
  json_array(o, "alignment", s->align_count, NBUCKETS, true);
  json_array(o, "realloc_growth_factor", s->growth, NBUCKETS, true);
  fprintf(o, "  \"realloc\": {\"grow\": %" PRIu64 ", \"shrink\": %" PRIu64 ", \"same\": %" PRIu64
          ", \"inplace\": %" PRIu64 ", \"moved\": %" PRIu64 "},\n",
          s->realloc_grow, s->realloc_shrink, s->realloc_same, s->realloc_inplace, s->realloc_moved);
  /* live bytes at the end of each ms, allocations per ms; the peak */
  int64_t live = 0, peak = 0;
  uint64_t peak_ms = 0;
  fprintf(o, "  \"ms_live_bytes\": [");
  for (uint64_t b = 0; b < s->nbins; b++) {
    live += s->bin_bytes[b];
    if (live > peak) { peak = live; peak_ms = b; }
    fprintf(o, "%s%" PRId64, b ? ", " : "", live);
  }
  fprintf(o, "],\n  \"ms_allocations\": [");
  for (uint64_t b = 0; b < s->nbins; b++) fprintf(o, "%s%" PRIu64, b ? ", " : "", s->bin_allocs[b]);
  fprintf(o, "],\n  \"peak_live_bytes\": %" PRId64 ",\n  \"peak_ms\": %" PRIu64 ",\n", peak, peak_ms);
  fprintf(o, "  \"threads\": [");
  for (uint64_t i = 0; i < s->nth; i++) {
    tstat_t *t = &s->th[i];
    fprintf(o, "%s\n    {\"thread\": %" PRIu64 ", \"tid\": %" PRIu64 ", \"begin_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64
            ", \"ended\": %s, \"allocations\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"frees\": %" PRIu64
            ", \"remote_frees\": %" PRIu64 "}",
            i ? "," : "", i, t->tid, t->begin_ns, t->ended ? t->end_ns : t->last_ns, t->ended ? "true" : "false",
            t->allocs, t->bytes, t->frees, t->remote_frees);
  }
  fprintf(o, "\n  ],\n  \"frees_by_owner_and_freer\": [");
  first = true;
  for (size_t i = 0; i < s->pairs.cap; i++) {
    table_slot_t *p = &s->pairs.s[i];
    if (!p->key) continue;
    uint64_t key = p->key - 1;
    fprintf(o, "%s[%" PRIu64 ", %" PRIu64 ", %" PRIu64 "]", first ? "" : ", ", key >> 24, key & 0xffffff, p->a);
    first = false;
  }
  fprintf(o, "]\n}\n");
  mmt_reader_close(r);
  table_free(&s->live); table_free(&s->early); table_free(&s->pairs); free(s->th); free(s->bin_bytes); free(s->bin_allocs);
  free(s);
  return 0;
}
