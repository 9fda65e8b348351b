/* stats.h — statistics (stats.c): mm_stats_json, mm_stats_print and
 * MMALLOC_STATS=1.
 *
 * Layer: api (it reads every local heap and every registry, each under its
 * own lock, one at a time).
 */
#ifndef MM_STATS_H
#define MM_STATS_H

#include "cgroup.h"
#include "mmalloc.h"
#include "thread_heap.h"

MM_HIDDEN_BEGIN

size_t stats_json(char *buf, size_t size);
void stats_memory(mm_memory_t *out);
void stats_print(int fd);

MM_HIDDEN_END

#endif
