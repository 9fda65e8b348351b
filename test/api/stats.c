/* stats.c — mm_stats_json, mm_stats_print, mm_option_set/get, mm_collect
 * and malloc_trim, black-box.
 *
 *   - mm_stats_json returns valid JSON (checked by test/api/json.h and, when
 *     /usr/bin/python3 exists, by Python's json module), honours the length
 *     contract of snprintf (returns the length needed; truncates with a NUL;
 *     never writes past size), and shows the options in force and the
 *     allocations made;
 *   - options: unknown names EINVAL (get: -1), out-of-range values EINVAL,
 *     "heaps" and "secure" EBUSY after start-up, names case-insensitive;
 *   - mm_collect (and malloc_trim) give freed memory back: RSS falls by at
 *     least half of what was freed (a behaviour assertion, not a timing one;
 *     the purge delay is set out of reach first so that only the call can
 *     have returned the memory).
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>

#include "api/harness.h"
#include "api/json.h"
#include "api/stats_json.h"
#include "check.h"
#include "mmalloc.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static double json_num_or(const char *json, const char *path, double fallback) {
  double v;
  return json_number(json, path, &v) ? v : fallback;
}

static void test_json_checker(void) {
  /* The checker itself must be able to fail. */
  CHECK("json checker accepts valid JSON", json_valid("{\"a\":[1,2.5e3,-0,\"x\\n\"],\"b\":{}}"));
  CHECK("json checker rejects a trailing comma", !json_valid("{\"a\":1,}"));
  CHECK("json checker rejects an unquoted key", !json_valid("{a:1}"));
  CHECK("json checker rejects trailing text", !json_valid("{} x"));
  CHECK("json checker rejects a truncated object", !json_valid("{\"a\":[1,2"));
  double v = 0;
  CHECK("json checker finds a nested number",
        json_number("{\"a\":{\"b\":[7,{\"c\":42}]}}", "a.b.1.c", &v) && v == 42);
  CHECK("json checker counts an array", json_array_length("{\"h\":[{},{},{}]}", "h") == 3);
}

static void test_json(void) {
  char *json = stats_json();
  bool valid = json_valid(json);
  if (!valid) fprintf(stderr, "  invalid JSON: %s\n", json);
  CHECK("mm_stats_json is valid JSON", valid);
  if (access("/usr/bin/python3", X_OK) == 0) {
    FILE *py = popen("/usr/bin/python3 -c 'import json,sys; json.load(sys.stdin)'", "w");
    CHECK("python3 started", py != NULL);
    if (py) {
      fputs(json, py);
      int rc = pclose(py);
      CHECK("python3's json module parses mm_stats_json", rc == 0);
    }
  }
  char version[32] = "";
  char want[32];
  snprintf(want, sizeof(want), "%d.%d.%d", MM_VERSION_MAJOR, MM_VERSION_MINOR,
           MM_VERSION_PATCH);
  CHECK("JSON version is the header's", json_string(json, "version", version, sizeof(version)) &&
                                            strcmp(version, want) == 0);
  CHECK("mm_version() is the header's MM_VERSION", mm_version() == MM_VERSION &&
                                                     MM_VERSION == MM_VERSION_MAJOR * 10000 +
                                                                       MM_VERSION_MINOR * 100 +
                                                                       MM_VERSION_PATCH);
  double heaps = json_num_or(json, "options.heaps", -1);
  CHECK("JSON options.heaps == mm_option_get(heaps)", heaps == (double)mm_option_get("heaps"));
  CHECK("at least one local heap", heaps >= 1);
  CHECK("JSON heaps[] has one entry per local heap",
        json_array_length(json, "heaps") == (long)mm_option_get("heaps"));
  CHECK("JSON options.hugepages == mm_option_get",
        json_num_or(json, "options.hugepages", -1) == (double)mm_option_get("hugepages"));
  CHECK("JSON options.purge_delay_ms == mm_option_get",
        json_num_or(json, "options.purge_delay_ms", -1) == (double)mm_option_get("purge_delay_ms"));
  mm_free(json);

  /* The statistics follow the allocations. */
  json = stats_json();
  double large0 = json_num_or(json, "total.large_allocs", -1);
  double huge0 = json_num_or(json, "total.huge_allocs", -1);
  mm_free(json);
  void *l = mm_malloc(100 * KiB), *h = mm_malloc(40 * MiB);
  json = stats_json();
  double large1 = json_num_or(json, "total.large_allocs", -1);
  double huge1 = json_num_or(json, "total.huge_allocs", -1);
  double huge_live = json_num_or(json, "total.huge_live_bytes", -1);
  mm_free(json);
  CHECK("JSON total.large_allocs counts a 100 KiB malloc", large0 >= 0 && large1 == large0 + 1);
  CHECK("JSON total.huge_allocs counts a 40 MiB malloc", huge0 >= 0 && huge1 == huge0 + 1);
  CHECK("JSON total.huge_live_bytes >= 40 MiB", huge_live >= (double)(40 * MiB));
  mm_free(l);
  mm_free(h);

  /* Options set at run time show in the JSON. */
  long old = mm_option_get("purge_delay_ms");
  CHECK("set purge_delay_ms 250", mm_option_set("purge_delay_ms", 250) == 0);
  json = stats_json();
  CHECK("JSON shows purge_delay_ms 250", json_num_or(json, "options.purge_delay_ms", -1) == 250);
  mm_free(json);
  mm_option_set("purge_delay_ms", old);
}

static void test_json_length_contract(void) {
  /* The buffers first: live_bytes counts every block, so an allocation
   * between two calls may change the length needed (docs/statistics.md). */
  const size_t room = 1 << 16;
  char *full = mm_malloc(room);
  char *buf = mm_malloc(room);
  REQUIRE("buffers", full && buf);
  /* Nothing may change between the calls: no purge (the purge thread runs
   * them in the background) and no free memory whose residency the kernel
   * could change (free_resident_bytes is its count). */
  long delay = mm_option_get("purge_delay_ms");
  mm_option_set("purge_delay_ms", 1L << 30);
  mm_collect();
  size_t n = mm_stats_json(NULL, 0);
  CHECK("mm_stats_json(NULL, 0) returns the length needed", n > 2);
  REQUIRE("the buffers have room", n + 64 <= room);
  memset(full, '#', n + 64);
  size_t m = mm_stats_json(full, n + 1);
  CHECK("exact buffer: same length", m == n);
  CHECK("exact buffer: NUL-terminated at n", full[n] == 0 && strlen(full) == n);
  CHECK("exact buffer: nothing written past size", full[n + 1] == '#');
  /* size 0 with a real buffer: nothing written at all */
  memset(buf, '#', n + 64);
  m = mm_stats_json(buf, 0);
  CHECK("size 0: returns the length needed", m == n);
  CHECK("size 0: buffer untouched", buf[0] == '#');
  static const size_t sizes[] = {1, 2, 10, 100};
  int bad = 0;
  for (size_t k = 0; k < 5; k++) {
    size_t size = k < 4 ? sizes[k] : n; /* n: one byte short */
    if (size > n) continue;
    memset(buf, '#', n + 64);
    m = mm_stats_json(buf, size);
    bool ok = m == n && buf[size - 1] == 0 && strlen(buf) == size - 1 &&
              strncmp(buf, full, size - 1) == 0 && buf[size] == '#';
    if (!ok) {
      bad++;
      fprintf(stderr, "  mm_stats_json(buf, %zu) returned %zu (need %zu), strlen %zu\n", size, m, n,
              strlen(buf));
    }
  }
  CHECK("small buffer: returns the full length, truncates with a NUL, writes no further",
        bad == 0);
  mm_free(full);
  mm_free(buf);
  mm_option_set("purge_delay_ms", delay);
}

static void child_stats_print(void *arg) {
  (void)arg;
  void *p = mm_malloc(200 * KiB);
  mm_stats_print();
  mm_free(p);
}

static void test_stats_print(void) {
  static child_t c;
  child_run(&c, child_stats_print, NULL);
  CHECK("mm_stats_print: child exits normally", child_exited_ok(&c));
  CHECK("mm_stats_print writes to stderr, naming mmalloc", c.err_len > 0 && strstr(c.err, "mmalloc"));
  CHECK("mm_stats_print writes nothing to stdout", c.out_len == 0);
  CHECK("mm_stats_print output ends with a newline", c.err_len > 0 && c.err[c.err_len - 1] == '\n');
}

static void test_options(void) {
  CHECK("get(unknown) == -1", mm_option_get("no_such_option") == -1);
  CHECK("get(NULL) == -1", mm_option_get(NULL) == -1);
  CHECK("set(unknown) == EINVAL", mm_option_set("no_such_option", 1) == EINVAL);
  CHECK("set(NULL) == EINVAL", mm_option_set(NULL, 1) == EINVAL);
  CHECK("set(\"\") == EINVAL", mm_option_set("", 1) == EINVAL);
  CHECK("get(\"MMALLOC_HEAPS\") == -1 (names come without the prefix)",
        mm_option_get("MMALLOC_HEAPS") == -1);

  static const char *names[] = {"verbose", "stats", "heaps", "hugepages", "purge_delay_ms", "secure"};
  for (size_t k = 0; k < 6; k++) {
    long v = mm_option_get(names[k]);
    if (v < 0) fprintf(stderr, "  option %s: %ld\n", names[k], v);
    CHECK("every documented option has a value >= 0", v >= 0);
  }
  CHECK("heaps >= 1", mm_option_get("heaps") >= 1);

  /* run-time options: set, read back, case-insensitive */
  CHECK("set hugepages 0", mm_option_set("hugepages", 0) == 0 && mm_option_get("hugepages") == 0);
  CHECK("set hugepages 1", mm_option_set("hugepages", 1) == 0 && mm_option_get("hugepages") == 1);
  CHECK("set HugePages 2 (case-insensitive)",
        mm_option_set("HugePages", 2) == 0 && mm_option_get("hugepages") == 2);
  CHECK("get PURGE_DELAY_MS (case-insensitive)",
        mm_option_get("PURGE_DELAY_MS") == mm_option_get("purge_delay_ms"));
  long delay = mm_option_get("purge_delay_ms");
  CHECK("set purge_delay_ms 0", mm_option_set("purge_delay_ms", 0) == 0 &&
                                     mm_option_get("purge_delay_ms") == 0);
  CHECK("set purge_delay_ms 12345", mm_option_set("purge_delay_ms", 12345) == 0 &&
                                         mm_option_get("purge_delay_ms") == 12345);
  CHECK("set verbose 1 then 0", mm_option_set("verbose", 1) == 0 && mm_option_get("verbose") == 1 &&
                                     mm_option_set("verbose", 0) == 0);
  CHECK("set stats 1 then 0", mm_option_set("stats", 1) == 0 && mm_option_get("stats") == 1 &&
                                   mm_option_set("stats", 0) == 0 && mm_option_get("stats") == 0);

  /* out of range: EINVAL, value unchanged */
  CHECK("hugepages 3 == EINVAL", mm_option_set("hugepages", 3) == EINVAL);
  CHECK("hugepages -1 == EINVAL", mm_option_set("hugepages", -1) == EINVAL);
  CHECK("hugepages unchanged by bad sets", mm_option_get("hugepages") == 2);
  CHECK("purge_delay_ms -1 == EINVAL", mm_option_set("purge_delay_ms", -1) == EINVAL);
  CHECK("purge_delay_ms unchanged by a bad set", mm_option_get("purge_delay_ms") == 12345);
  CHECK("verbose 2 == EINVAL", mm_option_set("verbose", 2) == EINVAL);
  CHECK("stats -1 == EINVAL", mm_option_set("stats", -1) == EINVAL);
  CHECK("heaps 0 == EINVAL", mm_option_set("heaps", 0) == EINVAL);
  CHECK("heaps -3 == EINVAL", mm_option_set("heaps", -3) == EINVAL);
  mm_option_set("purge_delay_ms", delay);

  /* fixed at start-up */
  long heaps = mm_option_get("heaps");
  CHECK("heaps (a different value) == EBUSY after start", mm_option_set("heaps", heaps == 1 ? 2 : 1) == EBUSY);
  CHECK("heaps unchanged", mm_option_get("heaps") == heaps);
  long secure = mm_option_get("secure");
  CHECK("secure (a different value) == EBUSY after start",
        mm_option_set("secure", secure ? 0 : 1) == EBUSY);
  CHECK("secure unchanged", mm_option_get("secure") == secure);
}

/* Free a lot, then the call under test must give most of it back. */
static void rss_after_call(const char *what, size_t block, size_t total, void (*call)(void)) {
  size_t n = total / block;
  void **blocks = mm_malloc(n * sizeof(void *));
  REQUIRE("block table", blocks != NULL);
  for (size_t i = 0; i < n; i++) {
    blocks[i] = mm_malloc(block);
    REQUIRE("malloc for the collect test", blocks[i] != NULL);
    memset(blocks[i], 0x6B, block);
  }
  for (size_t i = 0; i < n; i++) mm_free(blocks[i]);
  size_t before = rss_bytes();
  call();
  size_t after = rss_bytes();
  bool ok = after < before && before - after >= total / 2;
  if (!ok)
    fprintf(stderr, "  %s after freeing %zu x %zu B: RSS %zu KiB -> %zu KiB (freed %zu KiB)\n", what,
            n, block, before >> 10, after >> 10, total >> 10);
  CHECK(what, ok);
  mm_free(blocks);
}

/* The statistics are consistent: memory freed but not yet returned (dirty)
 * is part of both the free memory and the committed memory, and nothing
 * exceeds the address space reserved. */
static void check_stats_invariants(const char *when) {
  char *json = stats_json();
  long heaps = json_array_length(json, "heaps");
  int bad = 0;
  for (long i = -1; i < heaps; i++) {
    char prefix[32], path[64];
    if (i < 0) snprintf(prefix, sizeof(prefix), "total");
    else snprintf(prefix, sizeof(prefix), "heaps.%ld", i);
#define FIELD(f) (snprintf(path, sizeof(path), "%s." #f, prefix), json_num_or(json, path, -1))
    double reserved = FIELD(reserved), committed = FIELD(committed), free_b = FIELD(free_bytes),
           dirty = FIELD(dirty_bytes), free_res = FIELD(free_resident_bytes),
           huge = FIELD(huge_cached_bytes) + FIELD(huge_room_bytes);
#undef FIELD
    /* the kernel's count of the free memory never exceeds its bound */
    bool ok = reserved >= 0 && committed >= 0 && free_b >= 0 && dirty >= 0 && committed <= reserved &&
              free_b <= reserved && dirty <= free_b && dirty <= committed && free_res >= 0 &&
              free_res <= dirty + huge;
    if (!ok && bad++ < 4)
      fprintf(stderr, "  %s: %s reserved %.0f committed %.0f free %.0f dirty %.0f\n", when, prefix,
              reserved, committed, free_b, dirty);
  }
  CHECK("statistics consistent: free resident <= dirty <= free, dirty <= committed <= reserved",
        bad == 0);
  mm_free(json);
}

static void test_stats_consistent(void) {
  long delay = mm_option_get("purge_delay_ms");
  mm_option_set("purge_delay_ms", 1L << 30);
  check_stats_invariants("at start");
  enum { N = 64 };
  void *p[N];
  for (int i = 0; i < N; i++) {
    p[i] = mm_malloc(MiB);
    memset(p[i], 1, MiB);
  }
  check_stats_invariants("64 x 1 MiB live");
  for (int i = 0; i < N; i++) mm_free(p[i]);
  check_stats_invariants("64 x 1 MiB freed");
  mm_collect();
  check_stats_invariants("after mm_collect");
  /* Blocks freed without ever being touched: the bound counts them, the
   * kernel does not, and free_resident_bytes is the kernel's count. */
  for (int i = 0; i < N / 4; i++) p[i] = mm_malloc(MiB);
  for (int i = 0; i < N / 4; i++) mm_free(p[i]);
  char *json = stats_json();
  double dirty = json_num_or(json, "total.dirty_bytes", -1);
  double free_res = json_num_or(json, "total.free_resident_bytes", -1);
  mm_free(json);
  if (!(dirty >= 16.0 * MiB && free_res < dirty / 2))
    fprintf(stderr, "  untouched 16 MiB freed: dirty %.0f, free resident %.0f\n", dirty, free_res);
  CHECK("free_resident_bytes leaves out freed memory that was never touched",
        dirty >= 16.0 * MiB && free_res < dirty / 2);
  check_stats_invariants("16 untouched MiB freed");
  mm_collect();
  mm_option_set("purge_delay_ms", delay);
}

/* mm_memory is the JSON's total, as numbers: both read with nothing
 * allocated or freed in between (the JSON's buffer comes first). */
static void check_memory_is_total(const char *when) {
  char *json = stats_json();
  mm_memory_t m;
  mm_memory(&m);
  mm_memory_t again;
  /* the purge thread may purge between the two readings: read again until
   * mm_memory reads the same before the JSON as after it (the JSON's
   * buffer is replaced by one of the same size, which changes nothing) */
  for (int tries = 0; tries < 1000; tries++) {
    mm_memory_t before;
    mm_memory(&before);
    mm_free(json);
    json = stats_json();
    mm_memory(&m);
    if (memcmp(&before, &m, sizeof m) == 0) break;
  }
  double live = json_num_or(json, "total.live_bytes", -1), res = json_num_or(json, "total.resident_bytes", -1);
  double fr = json_num_or(json, "total.free_resident_bytes", -1), sl = json_num_or(json, "total.page_slack_bytes", -1);
  double meta = json_num_or(json, "total.metadata_bytes", -1), ret = json_num_or(json, "total.returned_bytes", -1);
  double huge = json_num_or(json, "total.huge_live_bytes", -1), rsv = json_num_or(json, "total.reserved", -1);
  double com = json_num_or(json, "total.committed", -1);
  mm_free(json);
  mm_memory(&again);
  bool same = live == (double)m.live && res == (double)m.resident && fr == (double)m.free_resident &&
              sl == (double)m.page_slack && meta == (double)m.metadata && ret == (double)m.returned &&
              huge == (double)m.huge_live && rsv == (double)m.reserved && com == (double)m.committed;
  if (!same)
    fprintf(stderr, "  %s: JSON live %.0f resident %.0f, mm_memory live %zu resident %zu\n", when, live, res,
            m.live, m.resident);
  CHECK("mm_memory gives the JSON's total", same);
  CHECK("mm_memory: resident is live + free_resident + page_slack + metadata",
        again.resident == again.live + again.free_resident + again.page_slack + again.metadata);
}

static void test_memory(void) {
  check_memory_is_total("at start");
  enum { N = 32 };
  void *p[N];
  for (int i = 0; i < N; i++) p[i] = mm_malloc(i % 2 ? 300 : 200 * 1024);
  void *huge = mm_malloc(64 * MiB);
  memset(huge, 1, 64 * MiB);
  check_memory_is_total("small, large and huge blocks live");
  mm_memory_t m;
  mm_memory(&m);
  CHECK("mm_memory: the 64 MiB block is huge and live", m.huge_live >= 64 * MiB && m.live >= m.huge_live);
  mm_free(huge);
  for (int i = 0; i < N; i++) mm_free(p[i]);
  mm_collect();
  check_memory_is_total("freed and collected");
  mm_memory_t after;
  mm_memory(&after);
  CHECK("mm_memory: the freed huge block leaves live and is returned",
        after.huge_live + 64 * MiB <= m.huge_live && after.returned >= m.returned + 64 * MiB);
}

static void call_collect(void) { mm_collect(); }
static void call_trim(void) { malloc_trim(0); }

static void test_collect(void) {
  long delay = mm_option_get("purge_delay_ms");
  /* Out of reach: nothing is purged by decay while the test runs. */
  CHECK("purge delay 2^30 ms", mm_option_set("purge_delay_ms", 1L << 30) == 0);
  rss_after_call("mm_collect returns freed large blocks (64 x 1 MiB)", MiB, 64 * MiB, call_collect);
  rss_after_call("mm_collect returns freed small blocks (64 MiB of 512 B)", 512, 64 * MiB,
                 call_collect);
  rss_after_call("malloc_trim returns freed large blocks (64 x 256 KiB)", 256 * KiB, 64 * MiB,
                 call_trim);
  rss_after_call("malloc_trim returns freed small blocks (64 MiB of 2 KiB)", 2 * KiB, 64 * MiB,
                 call_trim);
  rss_after_call("mm_collect returns freed huge blocks (4 x 40 MiB)", 40 * MiB, 160 * MiB,
                 call_collect);
  mm_option_set("purge_delay_ms", delay);
  mm_collect(); /* harmless when nothing is free */
  void *p = mm_malloc(100);
  CHECK("allocation works after mm_collect", p != NULL);
  mm_free(p);
}

/* ---- the scaling counters ---------------------------------------------------------- */

static const char *const scaling[] = {"lock_acquisitions", "lock_waits", "lock_try_failures",
                                      "remote_batches", "remote_cas_retries", "pages_abandoned",
                                      "pages_adopted", "pages_taken_over"};
#define NSCALING (sizeof(scaling) / sizeof(scaling[0]))

static void read_scaling(double *v) {
  char *j = stats_json();
  for (size_t i = 0; i < NSCALING; i++) {
    char path[64];
    snprintf(path, sizeof(path), "total.%s", scaling[i]);
    v[i] = json_num_or(j, path, -1);
  }
  mm_free(j);
}

#define EXITING_BLOCKS 20000
static void *blocks[EXITING_BLOCKS];

/* A thread that allocates and exits with every block still live: its
 * pages are left without owner. */
static void *allocate_and_exit(void *arg) {
  (void)arg;
  for (int i = 0; i < EXITING_BLOCKS; i++) blocks[i] = mm_malloc(48);
  return NULL;
}

/* A thread that frees blocks another thread allocated: remote batches. */
static void *free_them(void *arg) {
  (void)arg;
  for (int i = 0; i < EXITING_BLOCKS; i++) mm_free(blocks[i]);
  return NULL;
}

/* The counters of the slow-path events that decide scaling count what
 * they say: pages a thread leaves behind at exit are abandoned, and
 * adopted by the thread that frees into them or allocates from them;
 * blocks freed by another thread travel in batches (at least one per
 * MM_REMOTE_BATCH = 32 blocks); every one of these takes a local heap's
 * lock.  Waits, failed try-locks and CAS retries depend on timing: they
 * are only checked to be counts (never more than the events they qualify). */
static void test_scaling_counters(void) {
  double a[NSCALING], b[NSCALING], c[NSCALING];
  read_scaling(a);
  for (size_t i = 0; i < NSCALING; i++) {
    char what[96];
    snprintf(what, sizeof(what), "total.%s is in the statistics", scaling[i]);
    CHECK(what, a[i] >= 0);
  }
  pthread_t t;
  REQUIRE("a thread", pthread_create(&t, NULL, allocate_and_exit, NULL) == 0);
  pthread_join(t, NULL);
  for (int i = 0; i < EXITING_BLOCKS; i++) REQUIRE("its blocks", blocks[i] != NULL);
  read_scaling(b);
  CHECK("a thread that exits with live blocks abandons its pages", b[5] > a[5]);
  CHECK("abandoning takes the local heap's lock", b[0] > a[0]);
  /* this thread frees half of them into the pages without owner (it adopts
   * them), then a second thread frees the rest (remote frees to this one) */
  for (int i = 0; i < EXITING_BLOCKS / 2; i++) {
    mm_free(blocks[i]);
    blocks[i] = mm_malloc(48); /* now this thread's own blocks */
  }
  REQUIRE("a second thread", pthread_create(&t, NULL, free_them, NULL) == 0);
  pthread_join(t, NULL);
  read_scaling(c);
  CHECK("a free into a page without owner adopts it", c[6] > b[6]);
  CHECK("frees by another thread travel in batches, one per 32 blocks or fewer",
        c[3] - b[3] >= (double)(EXITING_BLOCKS / 2) / 32);
  CHECK("lock waits never exceed lock acquisitions", c[1] <= c[0]);
  CHECK("every counter only grows", ({
          bool up = true;
          for (size_t i = 0; i < NSCALING; i++) up = up && c[i] >= b[i] && b[i] >= a[i];
          up;
        }));
}

/* ---- the pages a thread empties ------------------------------------------------------ */

/* The README's bound: a thread keeps up to 512 KiB of pages it emptied. */
#define KEPT_MAX (512 * KiB)
#define SMALL 64                     /* its pages are 64 KiB (1024 blocks) */
#define ROUND_BLOCKS (3 * 1024 + 100) /* four pages a round */
#define ROUNDS 50
#define BIG_BLOCKS (64 * 1024)       /* 4 MiB: 64 pages */

static double total(const char *field) {
  char path[64];
  snprintf(path, sizeof(path), "total.%s", field);
  char *j = stats_json();
  double v = json_num_or(j, path, -1);
  mm_free(j);
  return v;
}

typedef struct {
  double locks_rounds;  /* local heap lock acquisitions in rounds 2..ROUNDS */
  double back_big;      /* pages that went home when 4 MiB were freed */
  double out_before_exit; /* pages_out - pages_back at the thread's end */
  double empty_before_exit; /* empty_page_bytes then */
} kept_t;

static void *rounds_thread(void *arg) {
  kept_t *k = arg;
  static void *p[BIG_BLOCKS];
  for (int i = 0; i < ROUND_BLOCKS; i++) p[i] = mm_malloc(SMALL);
  for (int i = 0; i < ROUND_BLOCKS; i++) mm_free(p[i]);
  double before = total("lock_acquisitions");
  for (int r = 1; r < ROUNDS; r++) {
    for (int i = 0; i < ROUND_BLOCKS; i++) p[i] = mm_malloc(SMALL);
    for (int i = 0; i < ROUND_BLOCKS; i++) mm_free(p[i]);
  }
  k->locks_rounds = total("lock_acquisitions") - before;
  for (int i = 0; i < BIG_BLOCKS; i++) p[i] = mm_malloc(SMALL);
  double back = total("pages_back");
  for (int i = 0; i < BIG_BLOCKS; i++) mm_free(p[i]);
  k->back_big = total("pages_back") - back;
  k->out_before_exit = total("pages_out") - total("pages_back");
  k->empty_before_exit = total("empty_page_bytes");
  return NULL;
}

/* A thread that allocates a batch and frees it, over and over, keeps the
 * pages it empties and takes them back without its local heap's lock
 * (before: two acquisitions per page per round); it keeps no more than
 * 512 KiB of them (4 MiB freed: at least 64 - 8 pages, less the class's
 * current one, go home at once); at exit the 8 it kept and its current one
 * go home (the main thread may take or give back one page meanwhile: the
 * statistics' own buffer). */
static void test_kept_pages(void) {
  kept_t k = {0};
  pthread_t t;
  REQUIRE("a thread", pthread_create(&t, NULL, rounds_thread, &k) == 0);
  pthread_join(t, NULL);
  double out1 = total("pages_out") - total("pages_back");
  double empty1 = total("empty_page_bytes");
  CHECK("rounds of a batch freed and allocated again take fewer than one lock a round",
        k.locks_rounds >= 0 && k.locks_rounds < ROUNDS);
  CHECK("a thread keeps at most 512 KiB of empty pages",
        k.back_big >= (double)(BIG_BLOCKS * SMALL - KEPT_MAX) / (64 * KiB) - 1);
  CHECK("at thread exit the pages it kept go home",
        out1 >= 0 && k.out_before_exit - out1 >= KEPT_MAX / (64 * KiB));
  CHECK("empty_page_bytes counts the 512 KiB a thread keeps, and its fall at exit",
        k.empty_before_exit >= (double)KEPT_MAX && empty1 >= 0 &&
            k.empty_before_exit - empty1 >= (double)KEPT_MAX);
  CHECK("empty_page_bytes is part of page_slack_bytes",
        total("empty_page_bytes") <= total("page_slack_bytes"));
}

/* A thread whose batch is bigger than 512 KiB (here 1.5 MiB: 24 pages)
 * sends pages home at every round and takes as many back in the next; its
 * bound grows (doubling each round that happens, up to 4 MiB) until it
 * keeps the whole batch: after a few rounds a round takes no local heap
 * lock, and it holds the whole batch as empty pages (with a bound fixed at
 * 512 KiB it would take 16 pages a round from its heap, 32 or more
 * acquisitions).  Alone (one live thread besides main) its share of the
 * total allows it.  At exit they all go home. */
#define GROW_BLOCKS (24 * 1024)
typedef struct {
  double locks_late;  /* local heap lock acquisitions in the last 8 rounds */
  double empty_late;  /* empty_page_bytes after the last round's frees */
} grown_t;

static void *grow_thread(void *arg) {
  grown_t *g = arg;
  void **p = mm_malloc(GROW_BLOCKS * sizeof(void *));
  if (!p) return NULL;
  double before = 0;
  for (int r = 0; r < 20; r++) {
    if (r == 12) before = total("lock_acquisitions");
    for (int i = 0; i < GROW_BLOCKS; i++) p[i] = mm_malloc(SMALL);
    for (int i = 0; i < GROW_BLOCKS; i++) mm_free(p[i]);
  }
  g->locks_late = total("lock_acquisitions") - before;
  g->empty_late = total("empty_page_bytes");
  mm_free(p);
  return NULL;
}

static void test_kept_pages_grow(void) {
  grown_t g = {-1, -1};
  pthread_t t;
  REQUIRE("a thread", pthread_create(&t, NULL, grow_thread, &g) == 0);
  pthread_join(t, NULL);
  double after = total("empty_page_bytes");
  fprintf(stderr, "  a 1.5 MiB batch: %.0f lock acquisitions in its last 8 rounds, %.2f MiB kept\n",
          g.locks_late, g.empty_late / MiB);
  CHECK("a thread whose batches outgrow 512 KiB keeps them: under a lock a round, late on",
        g.locks_late >= 0 && g.locks_late < 8);
  CHECK("... and holds the batch's pages empty between rounds",
        g.empty_late >= (double)(GROW_BLOCKS * SMALL) - 128 * KiB);
  CHECK("... and they go home at its exit", after >= 0 && g.empty_late - after >= 1.0 * MiB);
}

/* A thread that exits holding full pages leaves them abandoned, for the
 * threads that free into them: a new thread's first malloc of the class
 * adopts only a page it can allocate from.  (Before, it took every full
 * page onto its own full list on the way, and gave them all back at its
 * exit: 470,000 adoptions in a run of the handoff workload at 32 threads.)
 * A fills nine 64 KiB pages of 64-byte blocks and part of a tenth. */
#define FULL_N 10000
static void **full_blocks;

static void *fill_and_exit(void *arg) {
  (void)arg;
  for (int i = 0; i < FULL_N; i++) full_blocks[i] = mm_malloc(64);
  return NULL;
}

static void *one_malloc(void *arg) {
  *(void **)arg = mm_malloc(64);
  return NULL;
}

static void test_full_pages_wait(void) {
  full_blocks = mm_malloc(FULL_N * sizeof(void *));
  REQUIRE("an array", full_blocks != NULL);
  double waiting_before = total("abandoned_pages");
  pthread_t t;
  REQUIRE("thread A", pthread_create(&t, NULL, fill_and_exit, NULL) == 0);
  pthread_join(t, NULL);
  double waiting = total("abandoned_pages") - waiting_before;
  double adopted_before = total("pages_adopted");
  void *p = NULL;
  REQUIRE("thread B", pthread_create(&t, NULL, one_malloc, &p) == 0);
  pthread_join(t, NULL);
  double adopted = total("pages_adopted") - adopted_before;
  fprintf(stderr, "  A left %.0f pages abandoned; B's first malloc adopted %.0f\n", waiting, adopted);
  CHECK("A's ten pages wait abandoned", waiting >= 10);
  CHECK("B adopts only the page it allocates from, not A's full ones", adopted == 1);
  for (int i = 0; i < FULL_N; i++) mm_free(full_blocks[i]);
  mm_free(p);
  mm_free(full_blocks);
  CHECK("the frees took every page A and B left", total("abandoned_pages") == waiting_before);
}

/* Many threads share 64 MiB of kept pages (the README's bound): 160
 * threads, all started (and holding a thread heap) before any frees, each
 * fill nine 64 KiB pages and free them, then wait; each may keep 64 MiB /
 * 161 (6 pages), not 512 KiB (8), so the empty pages they hold (kept, and
 * each one's current page) stay under 64 MiB + 160 x 64 KiB, where they
 * would be 90 MiB with 512 KiB each.  (The share is taken when a page is
 * kept: a thread that kept pages while fewer threads ran trims its list at
 * the next page it keeps, or when its pages stay idle two heartbeats.) */
#define MANY 160
static pthread_barrier_t many_started, many_freed, many_read;

static void *many_thread(void *arg) {
  (void)arg;
  enum { N = 9 * 1024 };
  mm_free(mm_malloc(SMALL)); /* a thread heap of its own before the others free */
  pthread_barrier_wait(&many_started);
  void **p = mm_malloc(N * sizeof(void *));
  if (p) {
    for (int i = 0; i < N; i++) p[i] = mm_malloc(SMALL);
    for (int i = 0; i < N; i++) mm_free(p[i]);
    mm_free(p);
  }
  pthread_barrier_wait(&many_freed);
  pthread_barrier_wait(&many_read);
  return NULL;
}

static void test_kept_pages_many(void) {
  pthread_t t[MANY];
  int started = 0;
  REQUIRE("barriers", pthread_barrier_init(&many_started, NULL, MANY + 1) == 0 &&
                          pthread_barrier_init(&many_freed, NULL, MANY + 1) == 0 &&
                          pthread_barrier_init(&many_read, NULL, MANY + 1) == 0);
  double before = total("empty_page_bytes");
  for (; started < MANY; started++)
    if (pthread_create(&t[started], NULL, many_thread, NULL) != 0) break;
  REQUIRE("160 threads", started == MANY);
  pthread_barrier_wait(&many_started);
  pthread_barrier_wait(&many_freed);
  double held = total("empty_page_bytes") - before;
  pthread_barrier_wait(&many_read);
  for (int i = 0; i < MANY; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&many_started);
  pthread_barrier_destroy(&many_freed);
  pthread_barrier_destroy(&many_read);
  fprintf(stderr, "  160 threads hold %.1f MiB of empty pages\n", held / MiB);
  CHECK("160 threads keep at most 64 MiB of empty pages in all (and their current pages)",
        held > 0 && held <= (double)(64 * MiB + MANY * 64 * KiB));
}

/* ---- the stash: medium blocks a thread frees, kept for its next malloc ----------------
 * The statistics are read into a static buffer here: stats_json's own
 * buffer could be a medium block on a machine with many local heaps. */
static char stash_json[1 << 20];

static double stash_total(const char *field) {
  char path[64];
  snprintf(path, sizeof(path), "total.%s", field);
  if (mm_stats_json(stash_json, sizeof(stash_json)) >= sizeof(stash_json)) return -1;
  return json_num_or(stash_json, path, -1);
}

#define MEDIUM (100 * KiB)

typedef struct {
  double locks, allocs, frees;   /* in 8 rounds of 4 medium mallocs and frees */
  double live_before, live_after; /* live_bytes before the first malloc, after the last free */
  double allocs_at_end, frees_at_end;
  double locks_after_idle;        /* the 4 mallocs after a stash sat through heartbeats */
  double locks_once, locks_twice; /* a malloc after a free of a size asked for once, twice */
} stash_t;

static void medium_round(void **p) {
  for (int i = 0; i < 4; i++) {
    p[i] = mm_malloc(MEDIUM);
    if (p[i]) memset(p[i], 0x5a, 64);
  }
  for (int i = 0; i < 4; i++) mm_free(p[i]);
}

static void *stash_thread(void *arg) {
  stash_t *s = arg;
  void *p[4];
  /* a size asked for once is not kept (an array realloc grew through many
   * sizes); asked for twice, it is */
  void *q = mm_malloc(72 * KiB);
  mm_free(q);
  double l0 = stash_total("lock_acquisitions");
  q = mm_malloc(72 * KiB);
  s->locks_once = stash_total("lock_acquisitions") - l0;
  mm_free(q);
  l0 = stash_total("lock_acquisitions");
  q = mm_malloc(72 * KiB);
  s->locks_twice = stash_total("lock_acquisitions") - l0;
  mm_free(q);
  s->live_before = stash_total("live_bytes");
  medium_round(p); /* from the local heap, into the stash */
  double locks = stash_total("lock_acquisitions"), allocs = stash_total("large_allocs"),
         frees = stash_total("large_frees");
  for (int r = 0; r < 8; r++) medium_round(p);
  s->locks = stash_total("lock_acquisitions") - locks;
  s->allocs = stash_total("large_allocs") - allocs;
  s->frees = stash_total("large_frees") - frees;
  s->live_after = stash_total("live_bytes");
  /* then no medium block for a while, but slow paths (20 KiB blocks, a
   * page of few), through several heartbeats: the stash goes home */
  for (int i = 0; i < 150; i++) {
    void *q[8];
    for (int j = 0; j < 8; j++) q[j] = mm_malloc(20 * KiB);
    for (int j = 0; j < 8; j++) mm_free(q[j]);
    usleep(1000);
  }
  locks = stash_total("lock_acquisitions");
  for (int i = 0; i < 4; i++) p[i] = mm_malloc(MEDIUM);
  s->locks_after_idle = stash_total("lock_acquisitions") - locks;
  for (int i = 0; i < 4; i++) mm_free(p[i]);
  s->allocs_at_end = stash_total("large_allocs");
  s->frees_at_end = stash_total("large_frees");
  return NULL;
}

/* A thread that allocates and frees medium blocks (zlib's pattern) gets
 * them back from its stash without its local heap's lock (before: two
 * acquisitions a pair, 64 in these rounds; one beat in 64 calls may still
 * take it; secure mode keeps no stash, its blocks having guards); statistics count the stash's blocks as allocated and freed, and
 * a stashed block as free, not live; the counts survive the thread's exit;
 * a stash that sits through heartbeats goes home, and mm_collect sends
 * this thread's home and gives it back to the OS. */
static void test_stash(void) {
  stash_t s = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
  pthread_t t;
  REQUIRE("a thread", pthread_create(&t, NULL, stash_thread, &s) == 0);
  pthread_join(t, NULL);
  if (mm_option_get("secure") == 1) /* no stash: every block has its guard */
    CHECK("secure mode: each of 32 medium pairs takes the local heap's lock",
          s.locks >= 32);
  else
    CHECK("rounds of medium blocks freed and allocated again take at most 4 local heap locks in 32 pairs",
          s.locks >= 0 && s.locks <= 4);
  CHECK("large_allocs and large_frees count the blocks the stash handed out and took in",
        s.allocs == 32 && s.frees == 32);
  CHECK("a stashed block is not live", s.live_before >= 0 && s.live_after == s.live_before);
  if (mm_option_get("secure") != 1) {
    CHECK("a block of a size malloc was asked for once is not kept: its next malloc takes the lock",
          s.locks_once >= 1);
    CHECK("asked for twice, it is kept: the third malloc takes no lock", s.locks_twice == 0);
  }
  CHECK("a stash left unused through heartbeats went home (its blocks come from the local heap)",
        s.locks_after_idle >= 1);
  CHECK("the thread's stash counts stay in the totals after it exits",
        stash_total("large_allocs") >= s.allocs_at_end && stash_total("large_frees") >= s.frees_at_end);
  /* this thread: 4 blocks stashed, then mm_collect */
  long delay = mm_option_get("purge_delay_ms");
  mm_option_set("purge_delay_ms", 1L << 30);
  void *p[4];
  for (int r = 0; r < 3; r++) medium_round(p); /* the size is one this thread's stash keeps */
  double held = stash_total("free_resident_bytes");
  mm_collect();
  double after = stash_total("free_resident_bytes");
  if (mm_option_get("secure") != 1) /* secure mode: no stash (above) */
    CHECK("free_resident_bytes counts a stash (4 x 100 KiB)", held >= 4.0 * MEDIUM);
  if (after >= MEDIUM) fprintf(stderr, "  free_resident_bytes %.0f before mm_collect, %.0f after\n", held, after);
  CHECK("mm_collect sends the caller's stash home and gives it back (less than one block's worth left)",
        after >= 0 && after < MEDIUM);
  mm_option_set("purge_delay_ms", delay);
}

/* With many live threads a thread's stash is smaller (all stashes share
 * 4 MiB), and it keeps a size only where its cap holds two of it.  With 64
 * threads parked (and main), under 64 KiB each: a 100 KiB block is not
 * kept, and every pair of 4 blocks takes the local heap's lock.  With 29
 * parked, about 135 KiB: room for one 100 KiB block, which it does not
 * keep either (a thread that frees one block and allocates it again would
 * keep it without that rule, and take no lock). */
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static int parked, park_release;

static void *park_thread(void *arg) {
  (void)arg;
  mm_free(mm_malloc(16)); /* a thread heap: a live thread */
  pthread_mutex_lock(&park_lock);
  parked++;
  pthread_cond_broadcast(&park_cond);
  while (!park_release) pthread_cond_wait(&park_cond, &park_lock);
  pthread_mutex_unlock(&park_lock);
  return NULL;
}

typedef struct {
  int per_round; /* blocks malloc'ed then freed in a round */
  double locks;  /* local heap lock acquisitions in 8 rounds */
} crowded_t;

static void *crowded_thread(void *arg) {
  crowded_t *c = arg;
  void *p[4];
  for (int r = 0; r < 2; r++) { /* the size becomes one the stash keeps, where it may */
    for (int i = 0; i < c->per_round; i++) p[i] = mm_malloc(MEDIUM);
    for (int i = 0; i < c->per_round; i++) mm_free(p[i]);
  }
  double before = stash_total("lock_acquisitions");
  for (int r = 0; r < 8; r++) {
    for (int i = 0; i < c->per_round; i++) p[i] = mm_malloc(MEDIUM);
    for (int i = 0; i < c->per_round; i++) mm_free(p[i]);
  }
  c->locks = stash_total("lock_acquisitions") - before;
  return NULL;
}

static double crowded(int nparked, int per_round) {
  pthread_t t[64], c;
  crowded_t arg = {per_round, -1};
  int started = 0;
  parked = park_release = 0;
  for (int i = 0; i < nparked; i++) started += pthread_create(&t[i], NULL, park_thread, NULL) == 0;
  pthread_mutex_lock(&park_lock);
  while (parked < started) pthread_cond_wait(&park_cond, &park_lock);
  pthread_mutex_unlock(&park_lock);
  REQUIRE("parked threads and one more", started == nparked &&
                                             pthread_create(&c, NULL, crowded_thread, &arg) == 0);
  pthread_join(c, NULL);
  pthread_mutex_lock(&park_lock);
  park_release = 1;
  pthread_cond_broadcast(&park_cond);
  pthread_mutex_unlock(&park_lock);
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
  return arg.locks;
}

static void test_stash_crowded(void) {
  CHECK("with 66 live threads a 100 KiB block is not stashed: 32 pairs take the lock each",
        crowded(64, 4) >= 32);
  CHECK("with 31 live threads the cap holds one 100 KiB block, and keeps none: 8 pairs take the lock",
        crowded(29, 1) >= 8);
}

int main(void) {
  test_json_checker();
  test_json();
  test_json_length_contract();
  test_stats_print();
  test_options();
  test_collect();
  test_stats_consistent();
  test_scaling_counters();
  test_kept_pages();
  test_kept_pages_grow();
  test_kept_pages_many();
  test_full_pages_wait();
  test_stash();
  test_stash_crowded();
  test_memory();
  return check_summary("api_stats");
}
