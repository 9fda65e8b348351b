/* options.h — run-time options (MMALLOC_* variables, mm_option_set) and the
 * process-wide modes decided once at start-up.
 *
 * Layer: os (every layer may read them; options.c reads the environment
 * and formats with format.c, nothing else).
 *
 * Who writes what:
 *   options.heaps, .secure, .zero_on_free: start-up only (before any
 *     allocation), plain reads afterwards;
 *   options.verbose, .stats, .hugepages, .purge_delay_ms, .purge_thread_mib:
 *     mm_option_set
 *     may change them while other threads run, so they are read with
 *     option_live() (a relaxed atomic load of the plain long);
 *   mm_canary_key, mm_list_key, mm_slow_only: set by the start-up
 *     (lifecycle.c) before the first block exists, constant afterwards.
 */
#ifndef MM_OPTIONS_H
#define MM_OPTIONS_H

#include "os.h"

MM_HIDDEN_BEGIN

typedef struct options_s {
  long verbose;        /* MMALLOC_VERBOSE: print the options in force */
  long stats;          /* MMALLOC_STATS: print statistics at exit */
  long heaps;          /* MMALLOC_HEAPS: local heaps (default: CPUs) */
  long hugepages;      /* MMALLOC_HUGEPAGES: 0 never, 1 always, 2 large blocks */
  long purge_delay_ms; /* MMALLOC_PURGE_DELAY_MS: idle time before purging */
  long purge_thread_mib; /* MMALLOC_PURGE_THREAD_MIB: free MiB that start the purge thread */
  long secure;         /* MMALLOC_SECURE: run-time part of secure mode (2: uniform shuffle) */
  long zero_on_free;   /* MMALLOC_ZERO_ON_FREE: freed small blocks are zeroed */
  long cache_colour;   /* MMALLOC_CACHE_COLOUR: large blocks at rotating line offsets */
} options_t;
extern options_t options;

/* An option mm_option_set may change at any time. */
MM_INLINE long option_live(const long *value) { return __atomic_load_n(value, __ATOMIC_RELAXED); }

void options_init(void);
void options_print(void);
/* mm_option_set / mm_option_get (api.c): 0, EINVAL or EBUSY; -1 if unknown */
int options_set(const char *name, long value);
long options_get(const char *name);

/* ---- process-wide modes ------------------------------------------------------
 * The free canary: a free block's second word is its address xor this
 * secret (odd, never 0).  mm_list_key: secure mode stores free-list links
 * xor'ed with it and the block's address (0 otherwise, so a plain link reads
 * the same either way).  mm_slow_only: the fast paths are off (secure mode,
 * zero on free, valgrind): every call takes the checked slow paths.
 * mm_fill_word: secure mode's fill pattern, eight bytes of 0xDF (zero with
 * MMALLOC_ZERO_ON_FREE).  mm_fast_checked: secure mode built in
 * (-DMM_SECURE=ON, not with valgrind): the fast paths stay on and carry
 * secure mode's checks themselves (thread_heap.h); the slow-path-only
 * modes' other paths are taken as with mm_slow_only. */
extern uintptr_t mm_canary_key;
extern uintptr_t mm_list_key;
extern bool mm_slow_only;
extern uint64_t mm_fill_word;
/* MM_FILL_BLOCK bytes of the pattern, which big blocks are compared with
 * (memcmp's wide loads); 16-aligned, so that its first 16 bytes are the
 * pattern as one vector load (page.h). */
#define MM_FILL_BLOCK 2048
extern _Alignas(16) uint8_t mm_fill_block[MM_FILL_BLOCK];
#define mm_fast_checked (MM_SECURE && !MM_VALGRIND)

MM_HIDDEN_END

#endif
