/* static_libc.c — a program linked wholly statically (-static: libc.a too)
 * with libmmalloc.a, calling glibc's malloc introspection and tuning
 * (mallopt, mallinfo2, mallinfo, malloc_stats, malloc_info) as programs
 * do (label api).  glibc's malloc defines all of these in one object with
 * its malloc and free, so one of them left to glibc would pull that object
 * in and the link would fail on a second malloc; mmalloc defines them all,
 * and they must answer from mmalloc's numbers (mm_memory).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mmalloc.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* mallinfo: deprecated, still replaced */

int main(void) {
  CHECK("mallopt(M_ARENA_MAX) accepted", mallopt(M_ARENA_MAX, 2) == 1);
  void *p[100];
  for (int i = 0; i < 100; i++) p[i] = malloc(3000);
  struct mallinfo2 mi = mallinfo2();
  mm_memory_t m;
  mm_memory(&m);
  CHECK("mallinfo2 is mmalloc's: uordblks + hblkhd is mm_memory's live", mi.uordblks + mi.hblkhd == m.live);
  CHECK("mallinfo2 counts the blocks", mi.uordblks >= 100 * 3000);
  struct mallinfo old = mallinfo();
  CHECK("mallinfo is mmalloc's", (size_t)old.arena == mi.arena);
  char buf[4096];
  FILE *f = fmemopen(buf, sizeof buf, "w");
  CHECK("malloc_info is mmalloc's", f && malloc_info(0, f) == 0);
  if (f) fclose(f);
  CHECK("malloc_info wrote mmalloc's XML", strncmp(buf, "<malloc version=\"mmalloc-", 25) == 0);
  for (int i = 0; i < 100; i++) free(p[i]);
  return check_summary("api_static_libc");
}
