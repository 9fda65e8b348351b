/* options.c — run-time options, from the environment and mm_option_set.
 *
 * Layer: os.  Read once at start-up (before the first allocation, without
 * allocating); verbose, stats, hugepages, purge_delay_ms and
 * purge_thread_mib may change
 * later through mm_option_set (see options.h for who reads them how).
 *
 *   MMALLOC_VERBOSE=1         print the options in force at start-up
 *   MMALLOC_STATS=1|2         print statistics at exit: a table (1), one JSON line (2)
 *   MMALLOC_HEAPS=N           local heaps (default: the CPUs we may run on)
 *   MMALLOC_HUGEPAGES=0|1|2   transparent huge pages: 0 never, 1 all heap
 *                             memory, 2 (default) large and huge blocks >= 8 MiB
 *   MMALLOC_PURGE_DELAY_MS=N  free memory idle N ms goes back to the OS (100)
 *   MMALLOC_PURGE_THREAD_MIB=N  once N MiB of free memory are held, a purge
 *                             thread gives it back on time even if no thread
 *                             calls the allocator (32; 0: never start it)
 *   MMALLOC_SECURE=1|2        secure-mode checks that can be chosen at run time;
 *                             2 carves blocks in a uniform shuffle
 *   MMALLOC_ZERO_ON_FREE=1    freed small blocks are zeroed (checked on reuse
 *                             in secure mode)
 *   MMALLOC_CACHE_COLOUR=0|1  large blocks start at rotating cache-line offsets
 *                             (1, the default) or on a datablock (0)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#include "mmalloc.h"
#include "options.h"

options_t options = {
    .verbose = 0,
    .stats = 0,
    .heaps = 0,
    .hugepages = 2,
    .purge_delay_ms = MM_PURGE_DELAY_MS_DEFAULT,
    .purge_thread_mib = MM_PURGE_THREAD_MIB_DEFAULT,
    .secure = MM_SECURE,
    .zero_on_free = 0,
    .cache_colour = 1,
};

uintptr_t mm_canary_key;
uintptr_t mm_list_key;
bool mm_slow_only;
uint64_t mm_fill_word = 0xDFDFDFDFDFDFDFDFull;
_Alignas(16) uint8_t mm_fill_block[MM_FILL_BLOCK] = {[0 ... MM_FILL_BLOCK - 1] = 0xDF};

typedef struct option_desc_s {
  const char *name;
  long *value;
  long min, max;
  bool startup_only;
} option_desc_t;

static const option_desc_t option_table[] = {
    {"verbose", &options.verbose, 0, 1, false},
    {"stats", &options.stats, 0, 2, false},
    {"heaps", &options.heaps, 1, MM_MAX_HEAPS, true},
    {"hugepages", &options.hugepages, 0, 2, false},
    {"purge_delay_ms", &options.purge_delay_ms, 0, 1L << 30, false},
    {"purge_thread_mib", &options.purge_thread_mib, 0, 1L << 30, false},
    {"secure", &options.secure, 0, 2, true},
    {"zero_on_free", &options.zero_on_free, 0, 1, true},
    {"cache_colour", &options.cache_colour, 0, 1, true},
};
#define NOPTIONS (sizeof(option_table) / sizeof(option_table[0]))

static const option_desc_t *option_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < NOPTIONS; i++)
    if (strcasecmp(option_table[i].name, name) == 0) return &option_table[i];
  return NULL;
}

static bool parse_long(const char *s, long *out) {
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

void options_init(void) {
  int saved = errno;
  char env[64];
  for (size_t i = 0; i < NOPTIONS; i++) {
    const option_desc_t *o = &option_table[i];
    size_t n = os_format(env, sizeof(env), "MMALLOC_%s", o->name);
    for (size_t k = 8; k < n; k++)
      if (env[k] >= 'a' && env[k] <= 'z') env[k] = (char)(env[k] - 32);
    const char *s = getenv(env);
    if (!s) continue;
    long v;
    if (!parse_long(s, &v) || v < o->min || v > o->max) {
      os_message("mmalloc: ignoring %s=%s (expected an integer in %ld..%ld)\n", env, s,
                 o->min, o->max);
      continue;
    }
    *o->value = v;
  }
#if MM_SECURE
  if (options.secure == 0) options.secure = 1;
#endif
  /* secure mode: a large block ends where its guard starts (a colour's
   * room would leave unguarded bytes past its end) */
  if (options.secure) options.cache_colour = 0;
  errno = saved;
}

void options_print(void) {
  os_message("mmalloc %d.%d.%d: heaps=%ld hugepages=%ld purge_delay_ms=%ld purge_thread_mib=%ld"
             " stats=%ld secure=%ld zero_on_free=%ld cache_colour=%ld clock=%s (debug level %d%s)\n",
             MM_VERSION_MAJOR, MM_VERSION_MINOR, MM_VERSION_PATCH, options.heaps,
             options.hugepages, options.purge_delay_ms, options.purge_thread_mib, options.stats,
             options.secure, options.zero_on_free, options.cache_colour, os_clock_is_vdso() ? "vdso" : "libc", MM_DEBUG,
             mm_slow_only ? ", fast paths off" : "");
}

int options_set(const char *name, long value) {
  const option_desc_t *o = option_find(name);
  if (!o || value < o->min || value > o->max) return EINVAL;
  if (o->startup_only) return *o->value == value ? 0 : EBUSY;
  __atomic_store_n(o->value, value, __ATOMIC_RELAXED); /* see option_live() */
  return 0;
}

long options_get(const char *name) {
  const option_desc_t *o = option_find(name);
  return o ? option_live(o->value) : -1;
}
