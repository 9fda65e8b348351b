/* cgroup.h — the container the process runs in: its CPU quota and how near
 * its memory limit it is (cgroup.c).
 *
 * Layer: os.  Reads files only (open/read/close into stack buffers, never
 * the allocator); knows nothing of heaps.  The local heap decides what to
 * do with the answers (decay.c: purge at once under pressure), start-up
 * how many heaps to make (lifecycle.c).
 *
 * Where it looks: MMALLOC_CGROUP unset, the process's own cgroup, found
 * from /proc/self/cgroup and /proc/self/mountinfo, v2 first, then the v1
 * memory and cpu hierarchies; the lowest limit of the cgroup and its
 * ancestors counts.  For the CPU quota at start-up the usual mount points
 * are tried first, and mountinfo (a line per mount for the kernel to
 * format) is read only when no CPU file is found there.  MMALLOC_CGROUP=DIR: that one directory, with either
 * version's file names (a test writes one).  MMALLOC_CGROUP=0: nothing is
 * read at all.
 *
 * When: the CPU quota at start-up (it sets the number of heaps); the memory
 * limit's files at the first look (the first check of a slow-path
 * heartbeat or the purge thread, or the statistics), so that a process
 * that never gets that far pays for none of it.
 *
 * Invariant: after cgroup_init the CPU quota does not change, and once
 * found, neither do the memory files; the limit and usage are re-read at
 * most once per MM_CGROUP_CHECK_MS, by whichever thread wins the check's
 * time stamp (the others go on).
 */
#ifndef MM_CGROUP_H
#define MM_CGROUP_H

#include "base.h"

MM_HIDDEN_BEGIN

/* Start-up, before the heaps are made (no allocation): the CPU quota, and
 * where to look for the memory limit later. */
void cgroup_init(void);
/* The CPUs the cgroup's CPU quota allows, rounded up; 0 when it has none. */
uint32_t cgroup_cpu_limit(void);
/* True when the cgroup's memory usage is within a tenth of its lowest
 * limit (memory.high or memory.max; v1 memory.limit_in_bytes), and after
 * that until it is back below three quarters of the limit.  Re-reads
 * the files at most once per MM_CGROUP_CHECK_MS (now: os_now_ms()); false
 * between reads, when no limit is set, and when the files cannot be read. */
bool cgroup_memory_near_limit(uint32_t now);
/* A memory limit was found (at the first look; false before it). */
bool cgroup_has_memory_limit(void);
/* The lowest memory limit in bytes at the last read (0: none, or not
 * readable); takes the first look if none was taken yet. */
uint64_t cgroup_memory_limit(void);

typedef struct cgroup_stats_s {
  bool found;           /* a cgroup with a CPU quota or a memory limit */
  uint32_t cpus;        /* cgroup_cpu_limit() */
  uint64_t limit_bytes; /* the lowest memory limit at the last read; 0: none */
  uint64_t usage_bytes; /* its usage at the last read */
  uint64_t near_limit;  /* reads that found it within a tenth of the limit */
  const char *memory_dir; /* where the limit was found ("" when none) */
} cgroup_stats_t;
void cgroup_stats(cgroup_stats_t *s);

MM_HIDDEN_END

#endif
