/* cgroup.c — the process's cgroup: its CPU quota at start-up, and whether
 * its memory usage is near its limit (see cgroup.h for where it looks).
 *
 * Layer: os.  Every read is open/read/close into a stack buffer; nothing
 * here calls the allocator, takes a lock, or changes errno as the program
 * sees it.
 *
 * The files, by version:
 *   v2  cpu.max ("max 100000" or "QUOTA PERIOD"), memory.max and
 *       memory.high ("max" or bytes), memory.current (bytes)
 *   v1  cpu.cfs_quota_us (-1: none) and cpu.cfs_period_us in the cpu
 *       hierarchy; memory.limit_in_bytes (a huge number: none) and
 *       memory.usage_in_bytes in the memory hierarchy
 * A limit of 2^60 bytes or more counts as none.  With both versions
 * mounted (a hybrid host), the v2 files win where they exist.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cgroup.h"
#include "os.h"

#define PATH_MAX_CG 512
#define NO_LIMIT ((uint64_t)1 << 60)

/* Where the memory limit is looked for: the limit is found at the first
 * look (xmem: UNKNOWN -> LOOKING -> FOUND or NONE, by one thread), not at
 * start-up, which a program that never makes a slow-path call (or never
 * runs 10 ms) would pay for nothing.  The paths are written before xmem
 * says FOUND (release) and never after. */
enum { MEM_UNKNOWN = 0, MEM_LOOKING = 1, MEM_FOUND = 2, MEM_NONE = 3 };

static struct {
  uint32_t cpus;
  /* where to look for the memory limit, and the top of each walk up:
   * MMALLOC_CGROUP's directory, or (look_mounts) the process's cgroups,
   * found at the first look */
  bool look_mounts;
  char look_dir[2][PATH_MAX_CG];
  size_t look_top[2];
  _Atomic(uint32_t) xmem;
  /* the first look: the files the limit and usage are read from */
  char limit_path[2][PATH_MAX_CG];
  char usage_path[PATH_MAX_CG];
  char memory_dir[PATH_MAX_CG];
  _Atomic(uint64_t) xnext_check; /* 0 before the first read, else (1 << 32) | ms */
  _Atomic(uint64_t) xlimit, xusage, xnear;
  _Atomic(uint32_t) xpressed; /* the last read found it near the limit */
} cg;

/* ---- reading files without the allocator -------------------------------- */

/* The first size - 1 bytes of a file, NUL-terminated; false if unreadable. */
static bool read_small(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n < 0) return false;
  buf[n] = 0;
  return true;
}

/* A file holding one unsigned number or "max"; NO_LIMIT for "max" and for
 * numbers of 2^60 and more; false if absent or not a number. */
static bool read_bytes(const char *path, uint64_t *out) {
  char buf[64];
  if (!path[0] || !read_small(path, buf, sizeof(buf))) return false;
  if (strncmp(buf, "max", 3) == 0) {
    *out = NO_LIMIT;
    return true;
  }
  char *end;
  unsigned long long v = strtoull(buf, &end, 10);
  if (end == buf) return false;
  *out = v >= NO_LIMIT ? NO_LIMIT : (uint64_t)v;
  return true;
}

static bool join(char *out, const char *dir, const char *name) {
  return os_format(out, PATH_MAX_CG, "%s/%s", dir, name) < PATH_MAX_CG;
}

static bool exists(const char *path) { return access(path, R_OK) == 0; }

/* Lines of a file of any length, through a stack buffer; a line longer
 * than the buffer is skipped. */
typedef struct lines_s {
  int fd;
  size_t len, pos;
  char buf[4096];
} lines_t;

static char *next_line(lines_t *l) {
  for (;;) {
    char *nl = memchr(l->buf + l->pos, '\n', l->len - l->pos);
    if (nl) {
      *nl = 0;
      char *line = l->buf + l->pos;
      l->pos = (size_t)(nl - l->buf) + 1;
      return line;
    }
    if (l->pos == 0 && l->len == sizeof(l->buf)) l->len = 0; /* too long: drop */
    memmove(l->buf, l->buf + l->pos, l->len - l->pos);
    l->len -= l->pos;
    l->pos = 0;
    ssize_t n = l->fd < 0 ? 0 : read(l->fd, l->buf + l->len, sizeof(l->buf) - l->len);
    if (n <= 0) {
      if (l->len == 0) return NULL;
      l->buf[l->len < sizeof(l->buf) ? l->len : sizeof(l->buf) - 1] = 0; /* last line */
      l->pos = l->len;
      return l->buf;
    }
    l->len += (size_t)n;
  }
}

/* The n-th space-separated field of line (0-based), cut at its end. */
static char *field(char *line, int n) {
  char *p = line;
  for (int i = 0; i < n; i++) {
    p = strchr(p, ' ');
    if (!p) return NULL;
    p++;
  }
  char *end = strchr(p, ' ');
  if (end) *end = 0;
  return p;
}

/* Does the comma-separated list hold word? */
static bool has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; p && *p;) {
    if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == 0)) return true;
    p = strchr(p, ',');
    if (p) p++;
  }
  return false;
}

/* ---- finding the cgroup's directories ----------------------------------- */

typedef struct mounts_s {
  char v2[PATH_MAX_CG], v2_root[PATH_MAX_CG];
  char mem[PATH_MAX_CG], mem_root[PATH_MAX_CG];
  char cpu[PATH_MAX_CG], cpu_root[PATH_MAX_CG];
} mounts_t;

/* mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS...] - FSTYPE SOURCE SUPER */
static void find_mounts(mounts_t *m) {
  lines_t l = {open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC), 0, 0, {0}};
  if (l.fd < 0) return;
  char *line;
  while ((line = next_line(&l)) != NULL) {
    char *dash = strstr(line, " - ");
    if (!dash) continue;
    *dash = 0;
    char *rest = dash + 3; /* FSTYPE SOURCE SUPER */
    char *sp = strchr(rest, ' ');
    if (!sp) continue;
    *sp = 0;
    const char *fstype = rest;
    char *super = strchr(sp + 1, ' ');
    super = super ? super + 1 : (char *)"";
    char root[PATH_MAX_CG], point[PATH_MAX_CG];
    char *f = field(line, 3);
    if (!f || os_format(root, sizeof(root), "%s", f) >= sizeof(root)) continue;
    f = field(f + strlen(f) + 1, 0);
    if (!f || os_format(point, sizeof(point), "%s", f) >= sizeof(point)) continue;
    if (strcmp(fstype, "cgroup2") == 0 && !m->v2[0]) {
      memcpy(m->v2, point, sizeof(point));
      memcpy(m->v2_root, root, sizeof(root));
    } else if (strcmp(fstype, "cgroup") == 0) {
      if (has_word(super, "memory") && !m->mem[0]) {
        memcpy(m->mem, point, sizeof(point));
        memcpy(m->mem_root, root, sizeof(root));
      }
      if (has_word(super, "cpu") && !m->cpu[0]) {
        memcpy(m->cpu, point, sizeof(point));
        memcpy(m->cpu_root, root, sizeof(root));
      }
    }
  }
  close(l.fd);
}

/* out = mount point + the cgroup path below the mount's root. */
static bool cgroup_dir(char *out, const char *point, const char *root, const char *path) {
  size_t n = strlen(root);
  if (strcmp(root, "/") != 0 && strncmp(path, root, n) == 0 && (path[n] == '/' || !path[n]))
    path += n;
  if (strcmp(path, "/") == 0) path = "";
  return os_format(out, PATH_MAX_CG, "%s%s", point, path) < PATH_MAX_CG;
}

/* /proc/self/cgroup: ID:CONTROLLERS:PATH; v2 is "0::PATH". */
static void find_dirs(const mounts_t *m, char *v2, char *mem, char *cpu) {
  lines_t l = {open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC), 0, 0, {0}};
  if (l.fd < 0) return;
  char *line;
  while ((line = next_line(&l)) != NULL) {
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    *c2 = 0;
    const char *controllers = c1 + 1, *path = c2 + 1;
    if (!controllers[0] && m->v2[0]) cgroup_dir(v2, m->v2, m->v2_root, path);
    if (has_word(controllers, "memory") && m->mem[0]) cgroup_dir(mem, m->mem, m->mem_root, path);
    if (has_word(controllers, "cpu") && m->cpu[0]) cgroup_dir(cpu, m->cpu, m->cpu_root, path);
  }
  close(l.fd);
}

static mounts_t mounts; /* cgroup_init or memory_discover: never both at once */

/* The process's v2 cgroup directory, and its v1 memory and cpu ones, each
 * with the length of its mount point (the top of a walk up); "" if none. */
static void find_cgroup_dirs(char dir[3][PATH_MAX_CG], size_t top[3]) {
  find_mounts(&mounts);
  find_dirs(&mounts, dir[0], dir[1], dir[2]);
  top[0] = strlen(mounts.v2);
  top[1] = strlen(mounts.mem);
  top[2] = strlen(mounts.cpu);
}

/* Cut the last component of dir; false once it is at or above top. */
static bool parent(char *dir, size_t top) {
  char *slash = strrchr(dir, '/');
  if (!slash || (size_t)(slash - dir) < top) return false;
  *slash = 0;
  return true;
}

/* ---- CPU quota ------------------------------------------------------------ */

static uint32_t quota_cpus(uint64_t quota, uint64_t period) {
  if (!period || quota >= NO_LIMIT) return 0;
  uint64_t n = (quota + period - 1) / period;
  return n ? (uint32_t)(n > 0xffff ? 0xffff : n) : 1;
}

/* The CPU quota of dir alone: v2's cpu.max, v1's cfs files (v: 2, 1, or
 * 0 for either, v2 first). */
static uint32_t dir_cpus(const char *dir, int v) {
  char path[PATH_MAX_CG], buf[64];
  if (v != 1 && join(path, dir, "cpu.max") && read_small(path, buf, sizeof(buf))) {
    if (strncmp(buf, "max", 3) == 0) return 0;
    char *end;
    unsigned long long quota = strtoull(buf, &end, 10);
    unsigned long long period = strtoull(end, NULL, 10);
    return quota_cpus(quota, period);
  }
  uint64_t period;
  if (v != 2 && join(path, dir, "cpu.cfs_quota_us") && read_small(path, buf, sizeof(buf)) &&
      buf[0] != '-' && join(path, dir, "cpu.cfs_period_us") && read_bytes(path, &period))
    return quota_cpus(strtoull(buf, NULL, 10), period);
  return 0;
}

/* The lowest quota of dir and its ancestors down to the mount (top). */
static uint32_t lowest_cpus(char *dir, size_t top, int v) {
  uint32_t best = 0;
  do {
    uint32_t n = dir_cpus(dir, v);
    if (n && (!best || n < best)) best = n;
  } while (parent(dir, top));
  return best;
}

/* The CPU quota where cgroups are usually mounted (/sys/fs/cgroup for v2,
 * /sys/fs/cgroup/unified beside v1, /sys/fs/cgroup/CONTROLLERS for v1),
 * tried before /proc/self/mountinfo, which costs the kernel a line per
 * mount (30 us of every process's start here).  False when no CPU file is
 * where it would be: then the mounts decide. */
static bool usual_cpus(uint32_t *cpus) {
  lines_t l = {open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC), 0, 0, {0}};
  if (l.fd < 0) return false;
  char v2[PATH_MAX_CG] = "", v1[PATH_MAX_CG] = "", dir[PATH_MAX_CG], file[PATH_MAX_CG];
  size_t v1_top = 0;
  char *line;
  while ((line = next_line(&l)) != NULL) {
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    *c2 = 0;
    const char *controllers = c1 + 1, *path = strcmp(c2 + 1, "/") == 0 ? "" : c2 + 1;
    if (!controllers[0]) {
      os_format(v2, sizeof(v2), "%s", path);
    } else if (has_word(controllers, "cpu")) {
      v1_top = os_format(v1, sizeof(v1), "/sys/fs/cgroup/%s", controllers);
      if (v1_top >= sizeof(v1) || os_format(v1 + v1_top, sizeof(v1) - v1_top, "%s", path) >=
                                      sizeof(v1) - v1_top)
        v1[0] = 0; /* too long for the usual place: the mounts decide */
    }
  }
  close(l.fd);
  static const char *const v2_mounts[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
  for (int i = 0; i < 2; i++) {
    if (os_format(dir, sizeof(dir), "%s%s", v2_mounts[i], v2) >= sizeof(dir) ||
        !join(file, dir, "cpu.max") || !exists(file))
      continue;
    *cpus = lowest_cpus(dir, strlen(v2_mounts[i]), 2);
    return true;
  }
  if (!v1[0] || !join(file, v1, "cpu.cfs_quota_us") || !exists(file)) return false;
  *cpus = lowest_cpus(v1, v1_top, 1);
  return true;
}

/* ---- memory limit ----------------------------------------------------------- */

/* Take dir's memory files if they hold a limit lower than the one found. */
static void consider_memory_dir(const char *dir, uint64_t *best) {
  static const char *const v2_limits[2] = {"memory.high", "memory.max"};
  char path[2][PATH_MAX_CG], usage[PATH_MAX_CG];
  uint64_t lowest = NO_LIMIT, v;
  bool v2 = false;
  for (int i = 0; i < 2; i++) {
    if (join(path[i], dir, v2_limits[i]) && read_bytes(path[i], &v)) {
      v2 = true;
      if (v < lowest) lowest = v;
    } else {
      path[i][0] = 0;
    }
  }
  if (v2) {
    if (!join(usage, dir, "memory.current")) return;
  } else {
    if (!join(path[0], dir, "memory.limit_in_bytes") || !read_bytes(path[0], &lowest)) return;
    path[1][0] = 0;
    if (!join(usage, dir, "memory.usage_in_bytes")) return;
  }
  if (lowest >= NO_LIMIT || lowest >= *best || !exists(usage)) return;
  *best = lowest;
  memcpy(cg.limit_path, path, sizeof(path));
  memcpy(cg.usage_path, usage, sizeof(usage));
  os_format(cg.memory_dir, sizeof(cg.memory_dir), "%s", dir);
}

/* The first look for the memory limit: the lowest of the directories
 * noted at start-up and their ancestors.  One thread, once. */
static void memory_discover(void) {
  uint32_t unknown = MEM_UNKNOWN;
  if (!atomic_cas_strong_acq_rel(&cg.xmem, &unknown, MEM_LOOKING)) return;
  int saved = errno;
  if (cg.look_mounts) { /* v2 first, then v1's memory hierarchy */
    char dir[3][PATH_MAX_CG] = {"", "", ""};
    size_t top[3];
    find_cgroup_dirs(dir, top);
    for (int i = 0; i < 2; i++) {
      memcpy(cg.look_dir[i], dir[i], PATH_MAX_CG);
      cg.look_top[i] = top[i];
    }
  }
  uint64_t limit = NO_LIMIT;
  for (int i = 0; i < 2 && limit >= NO_LIMIT; i++) {
    char *dir = cg.look_dir[i]; /* walked up in place: it is not needed again */
    if (!dir[0]) continue;
    do consider_memory_dir(dir, &limit);
    while (parent(dir, cg.look_top[i]));
  }
  atomic_store_relaxed(&cg.xlimit, limit < NO_LIMIT ? limit : 0);
  atomic_store_release(&cg.xmem, limit < NO_LIMIT ? MEM_FOUND : MEM_NONE);
  errno = saved;
}

static bool memory_found(void) { return atomic_load_acquire(&cg.xmem) == MEM_FOUND; }

/* ---- the interface -------------------------------------------------------------- */

void cgroup_init(void) {
  int saved = errno;
  const char *env = getenv("MMALLOC_CGROUP");
  if (env && (strcmp(env, "0") == 0 || strcasecmp(env, "off") == 0)) {
    atomic_store_relaxed(&cg.xmem, MEM_NONE);
  } else if (env && env[0]) {
    /* one directory, either version's names, no walk up */
    if (os_format(cg.look_dir[0], PATH_MAX_CG, "%s", env) < PATH_MAX_CG) {
      cg.cpus = dir_cpus(cg.look_dir[0], 0);
      cg.look_top[0] = strlen(cg.look_dir[0]);
    } else {
      cg.look_dir[0][0] = 0;
    }
  } else {
    cg.look_mounts = true; /* the memory limit: at the first look */
    if (!usual_cpus(&cg.cpus)) {
      char dir[3][PATH_MAX_CG] = {"", "", ""};
      size_t top[3];
      find_cgroup_dirs(dir, top);
      if (dir[0][0]) cg.cpus = lowest_cpus(dir[0], top[0], 2);
      if (!cg.cpus && dir[2][0]) cg.cpus = lowest_cpus(dir[2], top[2], 1);
    }
  }
  errno = saved;
}

uint32_t cgroup_cpu_limit(void) { return cg.cpus; }

bool cgroup_has_memory_limit(void) { return memory_found(); }

uint64_t cgroup_memory_limit(void) {
  memory_discover();
  return memory_found() ? atomic_load_relaxed(&cg.xlimit) : 0;
}

bool cgroup_memory_near_limit(uint32_t now) {
  uint32_t mem = atomic_load_relaxed(&cg.xmem);
  if (mem == MEM_NONE || mem == MEM_LOOKING) return false;
  uint64_t next = atomic_load_relaxed(&cg.xnext_check);
  if (next && !time_reached(now, (uint32_t)next)) return false;
  uint64_t want = ((uint64_t)1 << 32) | (uint32_t)(now + MM_CGROUP_CHECK_MS);
  if (!atomic_cas_strong_acq_rel(&cg.xnext_check, &next, want)) return false; /* another reads */
  memory_discover();
  if (!memory_found()) return false;
  int saved = errno;
  uint64_t limit = NO_LIMIT, v, usage;
  for (int i = 0; i < 2; i++)
    if (read_bytes(cg.limit_path[i], &v) && v < limit) limit = v;
  bool ok = read_bytes(cg.usage_path, &usage);
  errno = saved;
  if (!ok) return false;
  atomic_store_relaxed(&cg.xlimit, limit < NO_LIMIT ? limit : 0);
  atomic_store_relaxed(&cg.xusage, usage);
  /* near: within a tenth of the limit, and then until back below three
   * quarters of it (a purge that frees a little must not end the pressure
   * while most of the free memory is still held) */
  uint64_t mark = atomic_load_relaxed(&cg.xpressed) ? limit - limit / 4 : limit - limit / 10;
  bool near = limit < NO_LIMIT && usage >= mark;
  atomic_store_relaxed(&cg.xpressed, near);
  if (near) atomic_fetch_add_relaxed(&cg.xnear, 1);
  return near;
}

void cgroup_stats(cgroup_stats_t *s) {
  memory_discover(); /* the statistics show the limit even before the first look */
  bool mem = memory_found();
  s->found = cg.cpus || mem;
  s->cpus = cg.cpus;
  s->limit_bytes = cgroup_memory_limit();
  s->usage_bytes = atomic_load_relaxed(&cg.xusage);
  s->near_limit = atomic_load_relaxed(&cg.xnear);
  s->memory_dir = mem ? cg.memory_dir : "";
}
