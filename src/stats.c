/* stats.c — statistics: mm_stats_json, mm_stats_print, MMALLOC_STATS=1.
 *
 * Layer: api.  Reads each local heap under its lock, one at a time; never
 * allocates (it formats into the caller's buffer or a stack buffer), so it
 * is safe at exit and from a signal-free context inside the allocator.
 */
#include <string.h>

#include "mmalloc.h"
#include "pool.h"
#include "stats.h"

static const char *purger_state_name(uint32_t state) {
  static const char *const names[] = {"off", "wanted", "running", "failed"};
  return state < 4 ? names[state] : "?";
}

typedef struct heap_stats_s {
  uint64_t slots, reserved, committed, free_bytes, free_extents, dirty_bytes;
  uint64_t cached_bytes, abandoned_pages, large_allocs, large_frees, large_live;
  uint64_t huge_allocs, huge_live, realloc_in_place, realloc_remapped, purged, purges;
  uint64_t pages_out, pages_back, threads_live, threads_dead, pages_taken_over;
  uint64_t pages, pages_lost, pressure_purges, growth_purges;
  /* the memory picture (docs/statistics.md): live, resident, returned */
  uint64_t live, small_live, resident, free_resident, page_slack, metadata, returned;
  uint64_t empty_pages; /* part of page_slack: pages of small objects, no block in use, owned */
  uint64_t huge_cached, huge_room;
  uint64_t lent; /* page blocks lent out whole: pools and raw page blocks */
  /* what decides scaling */
  uint64_t lock_acquisitions, lock_waits, lock_try_failures, remote_batches, remote_retries;
  uint64_t pages_abandoned, pages_adopted;
} heap_stats_t;

typedef struct page_walk_s {
  uint64_t live, touched, empty;
} page_walk_t;

/* A page of small objects: its live bytes (used is its owner's, read as it
 * is: exact when the owner is quiet, a few blocks off while it runs) and
 * the bytes its blocks were carved into, which are resident. */
static void page_visit(extent_t *page, void *arg) {
  page_walk_t *w = arg;
  uint32_t used = __atomic_load_n(&page->used, __ATOMIC_RELAXED);
  uint64_t bytes = page->node.ndatablocks << MM_DATABLOCK_SHIFT;
  uint64_t step = page_step(page);
  uint64_t carved = step ? atomic_load_relaxed(&page->xcarved) / step * page->block_size : 0;
  carved = (carved + MM_DATABLOCK_SIZE - 1) & ~(uint64_t)(MM_DATABLOCK_SIZE - 1);
  uint64_t touched = carved < bytes ? carved : bytes;
  w->live += (uint64_t)used * page->block_size;
  w->touched += touched;
  /* a thread's empty page: its class's current one, or one it keeps */
  if (used == 0 && page_owner(page)) w->empty += touched;
}

/* A slot's management area that can be resident: its header datablock, the
 * extent map (written where extents begin and end: counted whole), the
 * descriptors ever handed out and, in secure mode, the guard map. */
static uint64_t slot_metadata(const slot_t *slot) {
  if (slot->huge) return MM_DATABLOCK_SIZE;
  uint64_t desc = (uint64_t)slot->desc_top * sizeof(extent_t);
  uint64_t end = MM_SLOT_EXTENTS_OFFSET + desc;
  uint64_t guards = options.secure ? MM_SLOT_DATABLOCKS / 8 : 0; /* the guard map */
  return ((end + MM_DATABLOCK_SIZE - 1) & ~(uint64_t)(MM_DATABLOCK_SIZE - 1)) + guards;
}

static void heap_stats_read(local_heap_t *h, heap_stats_t *s) {
  memset(s, 0, sizeof(*s));
  local_heap_lock_uncounted(h);
  for (slot_t *slot = h->slots; slot; slot = slot->next) {
    s->slots++;
    s->reserved += slot->size;
    s->committed += slot->committed;
    s->metadata += slot_metadata(slot);
  }
  s->metadata += h->meta_bytes;
  page_walk_t pw = {0, 0, 0};
  local_heap_foreach_page_locked(h, page_visit, &pw);
  s->small_live = pw.live;
  s->huge_cached = (uint64_t)h->huge_cached_datablocks << MM_DATABLOCK_SHIFT;
  s->huge_room = (uint64_t)h->huge_room_datablocks << MM_DATABLOCK_SHIFT;
  s->returned = h->returned_bytes;
  for (int t = 0; t < MM_TREES; t++) {
    s->free_bytes += (uint64_t)h->trees[t].total_datablocks << MM_DATABLOCK_SHIFT;
    s->free_extents += h->trees[t].count;
  }
  /* dirty_datablocks is an upper bound (see local_heap_t); nothing can be
   * resident that was never committed */
  s->dirty_bytes = (uint64_t)h->dirty_datablocks << MM_DATABLOCK_SHIFT;
  if (s->dirty_bytes > s->committed) s->dirty_bytes = s->committed;
  for (extent_t *c = h->cache.first; c; c = c->next)
    s->cached_bytes += c->node.ndatablocks << MM_DATABLOCK_SHIFT;
  for (extent_t *c = h->medium_cache.first; c; c = c->next)
    s->cached_bytes += c->node.ndatablocks << MM_DATABLOCK_SHIFT;
  uint64_t free_resident = local_heap_free_resident_locked(h);
  for (unsigned c = 0; c < MM_CLASSES; c++)
    for (extent_t *p = h->abandoned[c].first; p; p = p->next) s->abandoned_pages++;
  s->large_allocs = h->large_allocs;
  s->large_frees = h->large_frees;
  s->large_live = h->large_live_bytes;
  s->huge_allocs = h->huge_allocs;
  s->huge_live = h->huge_live_bytes;
  s->realloc_in_place = h->realloc_in_place;
  s->realloc_remapped = h->realloc_remapped;
  s->purged = h->purged_bytes;
  s->purges = h->purges;
  s->pressure_purges = h->pressure_purges;
  s->growth_purges = h->growth_purges;
  s->pages_out = h->pages_out;
  s->pages_back = h->pages_back;
  s->lent = h->lent_bytes;
  s->pages_taken_over = atomic_load_relaxed(&h->xpages_taken_over);
  s->lock_acquisitions = h->lock_acquisitions;
  s->lock_waits = h->lock_waits;
  s->lock_try_failures = atomic_load_relaxed(&h->xlock_try_failures);
  s->remote_batches = atomic_load_relaxed(&h->xremote_batches);
  s->remote_retries = atomic_load_relaxed(&h->xremote_retries);
  s->pages_abandoned = h->pages_abandoned;
  s->pages_adopted = h->pages_adopted;
  local_heap_unlock(h);
  thread_heap_counts(h->index, &s->threads_live, &s->threads_dead);
  /* blocks in the threads' stashes: freed, though the local heap counts
   * them live (a stash may change meanwhile: never below zero) */
  thread_heap_stash_sum_t stash;
  thread_heap_stash_sum(h->index, &stash);
  if (stash.bytes > s->large_live) stash.bytes = s->large_live;
  s->large_live -= stash.bytes;
  free_resident += stash.bytes;
  s->large_allocs += stash.allocs;
  s->large_frees += stash.frees;
  thread_heap_census_t c;
  thread_heap_census(h->index, &c);
  s->pages = c.pages;
  s->pages_lost = c.lost;
  /* resident: what may be resident of the heap's memory (an upper bound
   * but for blocks whose owners never touched them); the rest is live */
  s->live = s->small_live + s->large_live + s->huge_live + s->lent;
  s->free_resident = free_resident + s->huge_cached + s->huge_room;
  s->page_slack = pw.touched > pw.live ? pw.touched - pw.live : 0;
  s->empty_pages = pw.empty; /* within page_slack: such a page adds to touched, not to live */
  s->resident = pw.touched + s->large_live + s->huge_live + s->lent + s->free_resident +
                s->metadata;
}

static void heap_stats_add(heap_stats_t *t, const heap_stats_t *s) {
  const uint64_t *a = (const uint64_t *)s;
  uint64_t *b = (uint64_t *)t;
  for (size_t i = 0; i < sizeof(*s) / sizeof(uint64_t); i++) b[i] += a[i];
}

typedef struct out_s {
  char *buf;
  size_t size, len;
} out_t;

static void out(out_t *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = o->len < o->size ? o->size - o->len : 0;
  char scratch[1];
  size_t n = os_vformat(room ? o->buf + o->len : scratch, room ? room : 1, fmt, ap);
  va_end(ap);
  o->len += n;
}

static void out_heap(out_t *o, const heap_stats_t *s) {
  out(o,
      "{\"slots\":%lu,\"reserved\":%lu,\"committed\":%lu,\"free_bytes\":%lu,"
      "\"free_extents\":%lu,\"dirty_bytes\":%lu,\"cached_bytes\":%lu,"
      "\"abandoned_pages\":%lu,\"large_allocs\":%lu,\"large_frees\":%lu,"
      "\"large_live_bytes\":%lu,\"huge_allocs\":%lu,\"huge_live_bytes\":%lu,"
      "\"realloc_in_place\":%lu,\"realloc_remapped\":%lu,\"purged_bytes\":%lu,\"purges\":%lu,"
      "\"pages_out\":%lu,\"pages_back\":%lu,\"threads_live\":%lu,\"threads_dead\":%lu,"
      "\"pages_taken_over\":%lu,\"pages\":%lu,\"pages_lost\":%lu,\"pressure_purges\":%lu,\"growth_purges\":%lu,"
      "\"live_bytes\":%lu,\"small_live_bytes\":%lu,\"resident_bytes\":%lu,"
      "\"overhead_bytes\":%lu,\"free_resident_bytes\":%lu,\"page_slack_bytes\":%lu,"
      "\"empty_page_bytes\":%lu,"
      "\"metadata_bytes\":%lu,\"huge_cached_bytes\":%lu,\"huge_room_bytes\":%lu,"
      "\"returned_bytes\":%lu,\"lent_bytes\":%lu,\"lock_acquisitions\":%lu,\"lock_waits\":%lu,"
      "\"lock_try_failures\":%lu,\"remote_batches\":%lu,\"remote_cas_retries\":%lu,"
      "\"pages_abandoned\":%lu,\"pages_adopted\":%lu}",
      s->slots, s->reserved, s->committed, s->free_bytes, s->free_extents, s->dirty_bytes,
      s->cached_bytes, s->abandoned_pages, s->large_allocs, s->large_frees, s->large_live,
      s->huge_allocs, s->huge_live, s->realloc_in_place, s->realloc_remapped, s->purged, s->purges, s->pages_out,
      s->pages_back, s->threads_live, s->threads_dead, s->pages_taken_over, s->pages,
      s->pages_lost, s->pressure_purges, s->growth_purges, s->live, s->small_live, s->resident,
      s->resident - s->live, s->free_resident, s->page_slack, s->empty_pages, s->metadata,
      s->huge_cached,
      s->huge_room, s->returned, s->lent, s->lock_acquisitions, s->lock_waits, s->lock_try_failures,
      s->remote_batches, s->remote_retries, s->pages_abandoned, s->pages_adopted);
}

/* A string for JSON: what JSON must escape escaped, control bytes as '?'. */
static void out_string(out_t *o, const char *s) {
  for (const char *c = s; *c; c++)
    out(o, (*c == '"' || *c == '\\') ? "\\%c" : ((unsigned char)*c < 0x20 ? "?" : "%c"), *c);
}

typedef struct pool_out_s {
  out_t *o;
  unsigned n;
} pool_out_t;

static void out_pool(const struct mm_pool_s *pool, const mm_pool_stats_t *s, void *arg) {
  pool_out_t *po = arg;
  out(po->o, "%s{\"name\":\"", po->n++ ? "," : "");
  out_string(po->o, pool_name(pool));
  out(po->o, "\",\"object_size\":%lu,\"blocks\":%lu,\"bytes\":%lu,\"objects\":%lu,"
      "\"free_objects\":%lu,\"live_objects\":%lu}", (unsigned long)s->object_size,
      (unsigned long)s->blocks, (unsigned long)s->bytes, (unsigned long)s->objects,
      (unsigned long)s->free_objects, (unsigned long)(s->objects - s->free_objects));
}

static void out_heap_stats(const char *name, const mm_heap_stats_t *s, void *arg) {
  pool_out_t *po = arg;
  out(po->o, "%s{\"name\":\"", po->n++ ? "," : "");
  out_string(po->o, name);
  out(po->o, "\",\"blocks\":%lu,\"bytes\":%lu,\"live_objects\":%lu,\"live_bytes\":%lu}",
      (unsigned long)s->blocks, (unsigned long)s->bytes, (unsigned long)s->live_objects,
      (unsigned long)s->live_bytes);
}

/* Every local heap's statistics, summed. */
static void stats_total(heap_stats_t *total) {
  memset(total, 0, sizeof(*total));
  for (uint32_t i = 0; i < mm_nheaps; i++) {
    heap_stats_t s;
    heap_stats_read(&mm_heaps[i], &s);
    heap_stats_add(total, &s);
  }
}

void stats_memory(mm_memory_t *out) {
  heap_stats_t t;
  stats_total(&t);
  *out = (mm_memory_t){.live = t.live, .resident = t.resident, .free_resident = t.free_resident,
                       .page_slack = t.page_slack, .metadata = t.metadata, .huge_live = t.huge_live,
                       .returned = t.returned, .reserved = t.reserved, .committed = t.committed};
}

size_t stats_json(char *buf, size_t size) {
  out_t o = {buf, size, 0};
  if (size) buf[0] = 0;
  out(&o,
      "{\"version\":\"%d.%d.%d\",\"options\":{\"heaps\":%ld,\"hugepages\":%ld,"
      "\"purge_delay_ms\":%ld,\"purge_thread_mib\":%ld,\"secure\":%ld,\"cache_colour\":%ld},\"heaps\":[",
      MM_VERSION_MAJOR, MM_VERSION_MINOR, MM_VERSION_PATCH, options.heaps,
      option_live(&options.hugepages), option_live(&options.purge_delay_ms),
      option_live(&options.purge_thread_mib), options.secure, options.cache_colour);
  heap_stats_t total;
  memset(&total, 0, sizeof(total));
  for (uint32_t i = 0; i < mm_nheaps; i++) {
    heap_stats_t s;
    heap_stats_read(&mm_heaps[i], &s);
    heap_stats_add(&total, &s);
    if (i) out(&o, ",");
    out_heap(&o, &s);
  }
  out(&o, "],\"total\":");
  out_heap(&o, &total);
  uint32_t state;
  uint64_t purges, wakeups;
  local_heap_purger_stats(&state, &purges, &wakeups);
  out(&o, ",\"purge_thread\":{\"state\":\"%s\",\"purges\":%lu,\"wakeups\":%lu}",
      purger_state_name(state), purges, wakeups);
  uint64_t huge_limit, huge_cached, huge_over;
  local_heap_huge_cache_stats(&huge_limit, &huge_cached, &huge_over);
  out(&o, ",\"huge_cache\":{\"limit_bytes\":%lu,\"cached_bytes\":%lu,\"over_limit\":%lu}",
      huge_limit, huge_cached, huge_over);
  uint64_t probes, slow;
  os_hugepage_probe_stats(&probes, &slow);
  out(&o, ",\"huge_pages\":{\"probes\":%lu,\"slow\":%lu}", probes, slow);
  cgroup_stats_t cg;
  cgroup_stats(&cg);
  out(&o, ",\"cgroup\":{\"found\":%s,\"cpus\":%u,\"limit_bytes\":%lu,\"usage_bytes\":%lu,"
      "\"near_limit\":%lu,\"memory_dir\":\"", cg.found ? "true" : "false", cg.cpus,
      cg.limit_bytes, cg.usage_bytes, cg.near_limit);
  out_string(&o, cg.memory_dir);
  uint64_t held_blocks, held_bytes;
  pool_quarantine_stats(&held_blocks, &held_bytes);
  out(&o, "\"},\"pool_quarantine\":{\"blocks\":%lu,\"bytes\":%lu},\"pools\":[", held_blocks,
      held_bytes);
  pool_out_t po = {&o, 0};
  pool_foreach(out_pool, &po);
  out(&o, "],\"mm_heaps\":[");
  po.n = 0;
  heap_foreach(out_heap_stats, &po);
  out(&o, "]}");
  return o.len;
}

static void line(int fd, const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  size_t n = os_vformat(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  os_write_all(fd, buf, n < sizeof(buf) ? n : sizeof(buf) - 1);
}

static void print_pool(const struct mm_pool_s *pool, const mm_pool_stats_t *s, void *arg) {
  line(*(int *)arg, "pool \"%s\": %lu-byte objects, %lu live, %lu free, in %lu page blocks "
       "(%lu KiB)\n", pool_name(pool), (unsigned long)s->object_size,
       (unsigned long)(s->objects - s->free_objects), (unsigned long)s->free_objects,
       (unsigned long)s->blocks, (unsigned long)(s->bytes >> 10));
}

static void print_heap(const char *name, const mm_heap_stats_t *s, void *arg) {
  line(*(int *)arg, "heap \"%s\": %lu live objects (%lu KiB) in %lu page blocks (%lu KiB)\n",
       name, (unsigned long)s->live_objects, (unsigned long)(s->live_bytes >> 10),
       (unsigned long)s->blocks, (unsigned long)(s->bytes >> 10));
}

void stats_print(int fd) {
  line(fd, "mmalloc statistics (%u local heaps, purge delay %ld ms; KiB; mmalloc's "
       "docs/statistics.md explains every column)\n", mm_nheaps,
       option_live(&options.purge_delay_ms));
  line(fd, "%5s %10s %10s %10s %10s %10s %9s %11s %10s %4s\n", "heap", "live", "resident",
       "overhead", "free-res", "slack", "meta", "returned", "committed", "thr");
  heap_stats_t total;
  memset(&total, 0, sizeof(total));
  for (uint32_t i = 0; i <= mm_nheaps; i++) {
    heap_stats_t s;
    if (i < mm_nheaps) {
      heap_stats_read(&mm_heaps[i], &s);
      heap_stats_add(&total, &s);
    } else {
      s = total;
    }
    char name[16];
    os_format(name, sizeof(name), i < mm_nheaps ? "%u" : "total", i);
    line(fd, "%5s %10lu %10lu %10lu %10lu %10lu %9lu %11lu %10lu %4lu\n", name, s.live >> 10,
         s.resident >> 10, (s.resident - s.live) >> 10, s.free_resident >> 10,
         s.page_slack >> 10, s.metadata >> 10, s.returned >> 10, s.committed >> 10,
         s.threads_live);
  }
  line(fd, "purged %lu KiB in %lu purges; realloc: %lu large blocks resized in place, %lu "
       "huge blocks moved without a copy; %lu full pages taken over from idle threads\n",
       total.purged >> 10, total.purges, total.realloc_in_place, total.realloc_remapped,
       total.pages_taken_over);
  uint32_t state;
  uint64_t purges, wakeups;
  local_heap_purger_stats(&state, &purges, &wakeups);
  line(fd, "purge thread: %s, %lu heap purges in %lu wake-ups\n", purger_state_name(state),
       purges, wakeups);
  uint64_t huge_limit, huge_cached, huge_over;
  local_heap_huge_cache_stats(&huge_limit, &huge_cached, &huge_over);
  line(fd, "huge cache: %lu KiB of freed huge blocks kept for reuse (at most %lu KiB); %lu frees "
       "found it over that and unmapped at once\n", huge_cached >> 10, huge_limit >> 10, huge_over);
  uint64_t probes, slow;
  os_hugepage_probe_stats(&probes, &slow);
  if (probes)
    line(fd, "huge pages: %lu first writes timed, %lu found them slow (small pages for a while "
         "after each)\n", probes, slow);
  cgroup_stats_t cg;
  cgroup_stats(&cg);
  if (cg.found)
    line(fd, "cgroup: CPU quota %u (0: none), memory limit %lu KiB, usage %lu KiB at the last "
         "look, %lu looks near the limit, %lu heap purges forced by it\n", cg.cpus,
         cg.limit_bytes >> 10, cg.usage_bytes >> 10, cg.near_limit, total.pressure_purges);
  pool_foreach(print_pool, &fd);
  heap_foreach(print_heap, &fd);
}
