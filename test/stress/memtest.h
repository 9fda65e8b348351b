/* memtest.h — what the memory-return tests share (rss_return.c,
 * stats_rss.c, cgroup.c, purger_race.c): the process's resident size, the
 * statistics' figures by path, and the process's threads, all read without
 * calling the allocator (open/read/getdents into stack or static buffers,
 * mm_stats_json, api/json.h), so that a test can look while it promises
 * to make no allocator call.
 *
 *   rss_bytes()              resident bytes, from /proc/self/statm (0: unreadable)
 *   stats_number(path)       a number of mm_stats_json at a dotted path
 *                            ("total.live_bytes", "cgroup.cpus"), -1 if absent
 *   stats_bool(path)         a true/false there (false if absent)
 *   stats_string(path)       a string there ("purge_thread.state"), "missing"
 *   threads_named(prefix)    threads of this process whose name starts with
 *                            prefix ("" counts them all), -1 on error
 */
#ifndef MM_TEST_MEMTEST_H
#define MM_TEST_MEMTEST_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "api/json.h"
#include "mmalloc.h"

__attribute__((unused)) static size_t rss_bytes(void) {
  char buf[128];
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  char *p = strchr(buf, ' ');
  return p ? strtoull(p + 1, NULL, 10) * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

static char memtest_stats[1 << 16];

static const char *memtest_json(void) {
  mm_stats_json(memtest_stats, sizeof(memtest_stats));
  return memtest_stats;
}

__attribute__((unused)) static long long stats_number(const char *path) {
  double v;
  return json_number(memtest_json(), path, &v) ? (long long)v : -1;
}

__attribute__((unused)) static bool stats_bool(const char *path) {
  bool v = false;
  return json_bool(memtest_json(), path, &v) && v;
}

__attribute__((unused)) static const char *stats_string(const char *path) {
  static char s[256];
  return json_string(memtest_json(), path, s, sizeof(s)) ? s : "missing";
}

/* getdents64's record (the C library's struct dirent64 needs _GNU_SOURCE
 * before its first include, which a header cannot promise). */
struct memtest_dirent {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

__attribute__((unused)) static int threads_named(const char *prefix) {
  int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY);
  if (dir < 0) return -1;
  char buf[4096];
  int n = 0;
  long got;
  while ((got = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
    for (long off = 0; off < got;) {
      struct memtest_dirent *de = (struct memtest_dirent *)(buf + off);
      off += de->reclen;
      if (de->name[0] == '.') continue;
      char path[300], comm[32] = "";
      snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->name);
      int fd = open(path, O_RDONLY);
      if (fd < 0) continue;
      ssize_t len = read(fd, comm, sizeof(comm) - 1);
      close(fd);
      if (len > 0 && strncmp(comm, prefix, strlen(prefix)) == 0) n++;
    }
  }
  close(dir);
  return n;
}

#endif
