/* tool.c — the mmtrace command: record a program, dump or summarise a
 * trace; stats (stats.c), report (report.py) and replay (replay.c) are
 * dispatched from here.
 *
 *   mmtrace record [-o FILE] [--alloc NAME|PATH.so] -- CMD ARGS...
 *   mmtrace dump [--partial] [--times] TRACE
 *   mmtrace info [--partial] TRACE
 *
 * Exit status: the traced command's for record (128 + N when signal N
 * killed it); 2 for a usage error, an unreadable or corrupt trace; 0 else.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reader.h"
#include "tool.h"

#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#else
#define MULTIARCH "unknown-linux-gnu"
#endif

static void usage(FILE *out) {
  fprintf(out,
          "usage: mmtrace record [-o FILE] [--alloc NAME|PATH.so] -- CMD [ARGS...]\n"
          "       mmtrace dump [--partial] [--times] TRACE   (--times: each call's gap, dur, work in ns)\n"
          "       mmtrace info [--partial] TRACE\n"
          "       mmtrace stats [--partial] TRACE          (JSON: what the report plots)\n"
          "       mmtrace report [--partial] TRACE [-o DIR] (markdown and plots, default TRACE.report/)\n"
          "       mmtrace replay TRACE [--alloc NAME|PATH.so[VAR=VALUE,...]]... [--reps N] [--speed S]\n"
          "                      [--touch page|all] [--threads K | --copies N]"
          " [--partial] [--keep DIR]  (the calls again, on each allocator: time, RSS, faults)\n"
          "       mmtrace advise TRACE [--reps N] [-o FILE]  (replays on every allocator and mmalloc setting: advice)\n"
          "       mmtrace allocators                         (the allocators this machine has)\n"
          "Writes FILE (default CMD.mmtrace) for the traced process, FILE.<pid> for each\n"
          "process it forks or image it execs; the format is trace/FORMAT.md.\n");
}

void mmt_oom(void) {
  fputs("mmtrace: out of memory\n", stderr);
  exit(2);
}

/* The directory of this executable, for finding libmmtrace.so beside it. */
static void self_dir(char *out, size_t n) {
  ssize_t l = readlink("/proc/self/exe", out, n - 1);
  if (l <= 0) { snprintf(out, n, "."); return; }
  out[l] = 0;
  char *slash = strrchr(out, '/');
  if (slash) *slash = 0;
}

static bool exists(const char *p) { return access(p, R_OK) == 0; }

static int find_tracer(char *out, size_t n) {
  const char *env = getenv("MMTRACE_LIB");
  if (env && *env) {
    if (!exists(env)) { fprintf(stderr, "mmtrace: MMTRACE_LIB=%s does not exist\n", env); return -1; }
    snprintf(out, n, "%s", env);
    return 0;
  }
  char dir[PATH_MAX];
  self_dir(dir, sizeof dir);
  const char *cands[] = {"%s/libmmtrace.so", "%s/../lib/mmtrace/libmmtrace.so",
                         "%s/../lib64/mmtrace/libmmtrace.so", "%s/../lib/" MULTIARCH "/mmtrace/libmmtrace.so",
                         "%s/../build/libmmtrace.so"};
  for (size_t i = 0; i < sizeof cands / sizeof *cands; i++) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, cands[i], dir);
    if (exists(p) && realpath(p, out) && strlen(out) < n) return 0;
  }
  fprintf(stderr, "mmtrace: libmmtrace.so not found beside %s (run 'make', or set MMTRACE_LIB)\n", dir);
  return -1;
}

/* A line on why, unless why is NULL. */
static void say(FILE *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(FILE *why, const char *fmt, ...) {
  if (!why) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(why, fmt, ap);
  va_end(ap);
}

/* The allocator a name stands for, as bin/mmrun knows them (tool.h). */
int mmt_allocator_path(const char *name, char *out, size_t n, FILE *why) {
  const char *multi = MULTIARCH;
  static const struct { const char *name, *file, *pkg; } peers[] = {
    {"jemalloc", "libjemalloc.so.2", "libjemalloc2"},
    {"tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"},
    {"mimalloc", "libmimalloc.so.2", "libmimalloc2.0"},
    {"tbbmalloc", "libtbbmalloc_proxy.so.2", "libtbbmalloc2"},
  };
  out[0] = 0;
  if (strcmp(name, "glibc") == 0) return 0;
  if (strcmp(name, "mmalloc") == 0) {
    char dir[PATH_MAX];
    self_dir(dir, sizeof dir);
    const char *env = getenv("MMALLOC_LIB");
    const char *cands[] = {"%s/libmmalloc.so", "%s/../lib/libmmalloc.so", "%s/../build/libmmalloc.so"};
    if (env && exists(env)) { snprintf(out, n, "%s", env); return 0; }
    for (size_t i = 0; i < 3; i++) {
      char p[PATH_MAX + 64];
      snprintf(p, sizeof p, cands[i], dir);
      if (exists(p) && realpath(p, out) && strlen(out) < n) return 0;
    }
    say(why, "mmtrace: libmmalloc.so not found beside %s (run 'make', or set MMALLOC_LIB)\n", dir);
    return -1;
  }
  for (size_t i = 0; i < sizeof peers / sizeof *peers; i++) {
    if (strcmp(name, peers[i].name) != 0) continue;
    snprintf(out, n, "/usr/lib/%s/%s", multi, peers[i].file);
    if (exists(out)) return 0;
    say(why, "mmtrace: %s is not installed (apt-get install %s)\n", name, peers[i].pkg);
    return -1;
  }
  if (strstr(name, ".so")) {
    if (!exists(name)) { say(why, "mmtrace: %s does not exist\n", name); return -1; }
    snprintf(out, n, "%s", name);
    return 0;
  }
  say(why, "mmtrace: unknown allocator '%s' (mmalloc, glibc, jemalloc, tcmalloc, mimalloc, tbbmalloc, "
      "or a PATH.so)\n", name);
  return -1;
}

/* FILE, FILE.<pid> and FILE.<pid>.<k>: the names the tracer writes. */
static bool is_trace_name(const char *base, const char *name) {
  size_t bl = strlen(base);
  if (strncmp(name, base, bl) != 0) return false;
  const char *s = name + bl;
  if (!*s) return true;
  int dots = 0;
  for (; *s; s++) {
    if (*s == '.') { if (++dots > 2 || !s[1] || s[1] == '.') return false; }
    else if (*s < '0' || *s > '9') return false;
  }
  return name[bl] == '.';
}

typedef void (*trace_file_fn)(const char *path, void *arg);
static void for_trace_files(const char *out, trace_file_fn fn, void *arg) {
  char dirbuf[PATH_MAX], basebuf[PATH_MAX];
  snprintf(dirbuf, sizeof dirbuf, "%s", out);
  snprintf(basebuf, sizeof basebuf, "%s", out);
  const char *dir = dirname(dirbuf), *base = basename(basebuf);
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!is_trace_name(base, e->d_name)) continue;
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    fn(p, arg);
  }
  closedir(d);
}

static void remove_old(const char *path, void *arg) {
  (void)arg;
  if (unlink(path) != 0) fprintf(stderr, "mmtrace: cannot remove the old trace %s: %s\n", path, strerror(errno));
}
/* The files a recording wrote: the first few named, then a count, and the
 * largest (the image that made the most calls: when the command was a
 * wrapper, a shell script or `env`, the program it ran, not the first
 * file). */
typedef struct {
  int files;
  long long bytes, largest_bytes;
  char largest[2 * PATH_MAX + 32];
} written_t;
static void say_written(const char *path, void *arg) {
  written_t *w = arg;
  struct stat st;
  if (stat(path, &st) != 0) return;
  if (++w->files <= 8) fprintf(stderr, "mmtrace: wrote %s (%lld bytes)\n", path, (long long)st.st_size);
  w->bytes += st.st_size;
  if (st.st_size > w->largest_bytes) {
    w->largest_bytes = st.st_size;
    snprintf(w->largest, sizeof w->largest, "%s", path);
  }
}

/* The file execvp would run for cmd (cmd itself if it names a path, else
 * the first match on PATH): false if none. */
static bool find_program(const char *cmd, char *out, size_t n) {
  if (strchr(cmd, '/')) {
    snprintf(out, n, "%s", cmd);
    return access(out, X_OK) == 0;
  }
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path; *p;) {
    size_t len = strcspn(p, ":");
    snprintf(out, n, "%.*s%s%s", (int)len, p, len ? "/" : "", cmd);
    if (access(out, X_OK) == 0) return true;
    p += len + (p[len] == ':');
  }
  return false;
}

/* Why a recorded command left no trace at all (the recorder writes its
 * file's header when it is loaded, so no file means it never was): the
 * dynamic loader ignores LD_PRELOAD for a set-user-ID or set-group-ID
 * program, and a statically linked one has no loader (an ELF file without
 * an interpreter, PT_INTERP).  NULL when neither applies. */
static const char *no_preload_reason(const char *cmd) {
  char path[PATH_MAX];
  struct stat st;
  if (!find_program(cmd, path, sizeof path) || stat(path, &st) != 0) return NULL;
  if (st.st_mode & (S_ISUID | S_ISGID))
    return "is set-user-ID or set-group-ID, and the dynamic loader ignores LD_PRELOAD for such a program";
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  ElfW(Ehdr) eh;                                 /* this machine's class: the programs it runs */
  bool is_static = fread(&eh, sizeof eh, 1, f) == 1 && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
                   eh.e_ident[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) &&
                   eh.e_phentsize >= sizeof(ElfW(Phdr));
  for (unsigned k = 0; is_static && k < eh.e_phnum; k++) {
    ElfW(Phdr) ph;
    if (fseek(f, (long)(eh.e_phoff + (uint64_t)k * eh.e_phentsize), SEEK_SET) != 0 || fread(&ph, sizeof ph, 1, f) != 1)
      is_static = false;                         /* unreadable: say nothing */
    else if (ph.p_type == PT_INTERP)
      is_static = false;                         /* it has a loader */
  }
  fclose(f);
  return is_static ? "is statically linked: there is no dynamic loader to preload the recorder into it" : NULL;
}

static int cmd_record(int argc, char **argv) {
  const char *out = NULL, *alloc = NULL;
  int i = 1;
  for (; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) { i++; break; }
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out = argv[++i];
    else if (strcmp(argv[i], "--alloc") == 0 && i + 1 < argc) alloc = argv[++i];
    else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) { usage(stdout); return 0; }
    else if (argv[i][0] == '-') { fprintf(stderr, "mmtrace record: unknown option %s\n", argv[i]); return 2; }
    else break;
  }
  if (i >= argc) { usage(stderr); return 2; }
  char defname[PATH_MAX];
  if (!out) {
    char cmd[PATH_MAX];
    snprintf(cmd, sizeof cmd, "%s", argv[i]);
    snprintf(defname, sizeof defname, "%s.mmtrace", basename(cmd));
    out = defname;
  }
  char lib[PATH_MAX], peer[PATH_MAX] = "";
  if (find_tracer(lib, sizeof lib) != 0) return 2;
  if (alloc && mmt_allocator_path(alloc, peer, sizeof peer, stderr) != 0) return 2;
  char outabs[2 * PATH_MAX + 2];
  if (out[0] != '/') {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) { perror("mmtrace: getcwd"); return 2; }
    snprintf(outabs, sizeof outabs, "%s/%s", cwd, out);
  } else {
    snprintf(outabs, sizeof outabs, "%s", out);
  }
  for_trace_files(outabs, remove_old, NULL);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) { perror("mmtrace: fork"); return 2; }
  if (pid == 0) {
    char root[32], next[3 * PATH_MAX], preload[4 * PATH_MAX];
    snprintf(root, sizeof root, "%d", (int)getpid());
    const char *old = getenv("LD_PRELOAD");
    if (!old) old = "";
    /* under the recorder: --alloc's allocator, then whatever the
     * environment preloaded already; the header names them */
    snprintf(next, sizeof next, "%s%s%s", peer, peer[0] && old[0] ? ":" : "", old);
    snprintf(preload, sizeof preload, "%s%s%s", lib, next[0] ? ":" : "", next);
    setenv("MMTRACE_OUT", outabs, 1);
    setenv("MMTRACE_ROOT", root, 1);
    if (next[0])
      setenv("MMTRACE_NEXT_PRELOAD", next, 1);
    else
      unsetenv("MMTRACE_NEXT_PRELOAD");   /* not an outer trace's */
    setenv("LD_PRELOAD", preload, 1);
    execvp(argv[i], argv + i);
    fprintf(stderr, "mmtrace: cannot run %s: %s\n", argv[i], strerror(errno));
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) { perror("mmtrace: waitpid"); return 2; }
  written_t w = {0, 0, -1, ""};
  for_trace_files(outabs, say_written, &w);
  if (w.files > 8)
    fprintf(stderr, "mmtrace: ... %d trace files in all, %lld bytes (one per process image: %s and %s.<pid>...)\n",
            w.files, w.bytes, outabs, outabs);
  if (w.files > 1)
    fprintf(stderr, "mmtrace: the largest is %s (%lld bytes): the image that made the most calls\n", w.largest,
            w.largest_bytes);
  if (!w.files) {
    const char *why = no_preload_reason(argv[i]);
    if (why)
      fprintf(stderr, "mmtrace: %s %s: no trace written\n", argv[i], why);
    else
      fprintf(stderr, "mmtrace: %s did not load the recorder (it cleared LD_PRELOAD, or ran no program "
                      "that the dynamic loader loads): no trace written\n", argv[i]);
  }
  if (WIFSIGNALED(status)) {
    fprintf(stderr, "mmtrace: %s was killed by signal %d\n", argv[i], WTERMSIG(status));
    return 128 + WTERMSIG(status);
  }
  return WEXITSTATUS(status);
}

static void print_ref(FILE *o, const mmt_event_t *e) {
  switch (e->ref) {
  case MMT_REF_IS_NULL: fprintf(o, " NULL"); break;
  case MMT_REF_IS_UNKNOWN: fprintf(o, " unknown:0x%" PRIx64, e->ref_addr); break;
  case MMT_REF_IS_BLOCK: fprintf(o, " %" PRIu64 ".%" PRIu64, e->ref_thread, e->ref_n); break;
  default: break;
  }
}

/* One line per event: time thread op fields [-> new block] [flags]. */
static bool print_times;   /* dump --times: each event's gap, duration and work */

static void mmt_print_event(FILE *o, const mmt_event_t *e) {
  fprintf(o, "%" PRIu64 " T%" PRIu64 " %s", e->time_ns, e->thread, mmt_op_name(e->op));
  unsigned shape = mmt_op_shape(e->op);
  if (e->op == MMT_THREAD_BEGIN) fprintf(o, " tid=%" PRIu64, e->os_tid);
  if (e->op == MMT_FORK) fprintf(o, " pid=%" PRIu64, e->child_pid);
  if (shape & MMT_HAS_REF) print_ref(o, e);
  if (shape & MMT_HAS_NMEMB) fprintf(o, " nmemb=%" PRIu64, e->nmemb);
  if (shape & MMT_HAS_SIZE) fprintf(o, " size=%" PRIu64, e->size);
  if (shape & MMT_HAS_ALIGN) fprintf(o, " align=%" PRIu64, e->align);
  if (e->allocated) fprintf(o, " -> %" PRIu64 ".%" PRIu64, e->thread, e->new_n);
  if (e->failed) fprintf(o, " failed");
  if (e->inplace) fprintf(o, " inplace");
  if ((shape & MMT_RELEASES) && (shape & MMT_ALLOCATES) && e->ref != MMT_REF_IS_NULL && !e->released)
    fprintf(o, " kept");
  if (print_times && e->op != MMT_THREAD_BEGIN) {
    if (!e->stamped) fprintf(o, " unstamped");
    fprintf(o, " gap=%" PRIu64 " dur%c%" PRIu64, e->gap_ns, e->timed ? '=' : '~', e->dur_ns);
    if (e->gap_cpu_known) fprintf(o, " cpu=%" PRIu64, e->gap_cpu_ns);
    fprintf(o, " work=%" PRIu64, e->work_ns);
  }
  fputc('\n', o);
}

static mmt_reader_t *open_or_say(const char *path, bool partial) {
  char err[600];
  mmt_reader_t *r = mmt_reader_open(path, err, sizeof err);
  if (!r) { fprintf(stderr, "%s\n", err); return NULL; }
  mmt_reader_allow_partial(r, partial);
  return r;
}

static int parse_one(int argc, char **argv, const char *cmd, bool *partial, const char **path) {
  *partial = false;
  *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--partial") == 0) *partial = true;
    else if (strcmp(argv[i], "--times") == 0 && strcmp(cmd, "dump") == 0) print_times = true;
    else if (argv[i][0] == '-' && argv[i][1]) { fprintf(stderr, "mmtrace %s: unknown option %s\n", cmd, argv[i]); return 2; }
    else if (*path) { fprintf(stderr, "mmtrace %s: one trace at a time\n", cmd); return 2; }
    else *path = argv[i];
  }
  if (!*path) { usage(stderr); return 2; }
  return 0;
}

static int cmd_dump(int argc, char **argv) {
  bool partial;
  const char *path;
  if (parse_one(argc, argv, "dump", &partial, &path)) return 2;
  mmt_reader_t *r = open_or_say(path, partial);
  if (!r) return 2;
  printf("# mmtrace version %u\n", mmt_reader_version(r));
  const char *keys[] = {"program", "host", "machine", "cpus", "pid", "ppid", "forked_from", "preload"};
  for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
    const char *v = mmt_reader_header(r, keys[k], 0);
    if (v) printf("# %s=%s\n", keys[k], v);
  }
  for (unsigned a = 0; mmt_reader_header(r, "arg", a); a++) printf("# arg=%s\n", mmt_reader_header(r, "arg", a));
  mmt_event_t e;
  int k;
  uint64_t n = 0;
  while ((k = mmt_reader_next(r, &e)) > 0) { mmt_print_event(stdout, &e); n++; }
  int rc = 0;
  if (k < 0) {
    fflush(stdout);
    fprintf(stderr, "%s\n", mmt_reader_error(r));
    rc = 2;
  } else {
    uint64_t peak_kb, file_kb;
    printf("# end: %s; %" PRIu64 " events, %" PRIu64 " threads, %u exec", mmt_reader_ending(r), n,
           mmt_reader_threads(r), mmt_reader_execs(r));
    if (mmt_reader_memory(r, &peak_kb, &file_kb))
      printf("; memory peak_kb=%" PRIu64 " file_kb=%" PRIu64, peak_kb, file_kb);
    printf("\n");
  }
  mmt_reader_close(r);
  return rc;
}

static int cmd_info(int argc, char **argv) {
  bool partial;
  const char *path;
  if (parse_one(argc, argv, "info", &partial, &path)) return 2;
  mmt_reader_t *r = open_or_say(path, partial);
  if (!r) return 2;
  uint64_t count[MMT_NOPS] = {0}, failed = 0, unknown = 0, remote = 0, n = 0, releases = 0, last = 0;
  mmt_event_t e;
  int k;
  while ((k = mmt_reader_next(r, &e)) > 0) {
    n++;
    count[e.op]++;
    failed += e.failed;
    unknown += e.ref == MMT_REF_IS_UNKNOWN;
    if (e.ref == MMT_REF_IS_BLOCK) { releases++; remote += e.ref_thread != e.thread; }
    if (e.time_ns > last) last = e.time_ns;
  }
  if (k < 0) { fprintf(stderr, "%s\n", mmt_reader_error(r)); mmt_reader_close(r); return 2; }
  const char *prog = mmt_reader_header(r, "program", 0);
  printf("program   %s\n", prog ? prog : "?");
  printf("ending    %s\n", mmt_reader_ending(r));
  printf("events    %" PRIu64 " in %" PRIu64 " bytes (%.2f bytes per event)\n", n, mmt_reader_offset(r),
         n ? (double)mmt_reader_offset(r) / (double)n : 0.0);
  printf("threads   %" PRIu64 "\n", mmt_reader_threads(r));
  printf("duration  %.6f s\n", (double)last / 1e9);
  for (unsigned op = 0; op < MMT_NOPS; op++)
    if (count[op]) printf("  %-22s %" PRIu64 "\n", mmt_op_name(op), count[op]);
  printf("failed    %" PRIu64 "\n", failed);
  printf("remote    %" PRIu64 " of %" PRIu64 " releases of traced blocks\n", remote, releases);
  printf("unknown   %" PRIu64 " releases of pointers the trace never saw returned\n", unknown);
  uint64_t peak_kb, file_kb;
  if (mmt_reader_memory(r, &peak_kb, &file_kb))
    printf("memory    peak RSS %.1f MiB traced (the recorder's own memory included), %.1f MiB of it code and "
           "files\n", (double)peak_kb / 1024, (double)file_kb / 1024);
  else
    printf("memory    not in the trace (an older trace, or the image was killed or exec'd)\n");
  mmt_reader_close(r);
  return 0;
}

/* allocators: the ones this machine has, as replay and record name them. */
static int cmd_allocators(void) {
  const char *names[] = {"mmalloc", "glibc", "jemalloc", "tcmalloc", "mimalloc", "tbbmalloc"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char path[PATH_MAX];
    if (mmt_allocator_path(names[i], path, sizeof path, NULL) == 0)   /* the missing ones are not errors here */
      printf("%s %s\n", names[i], path[0] ? path : "(the C library)");
  }
  return 0;
}

/* report and advise: trace/report.py and trace/advise.py (from the source
 * tree this binary was built in, or the installed copies, which are named
 * mmtrace_report.py and mmtrace_advise.py), given this binary's path. */
static int run_script(const char *name, int argc, char **argv) {
  char dir[PATH_MAX], script[PATH_MAX + 64], self[PATH_MAX];
  self_dir(dir, sizeof dir);
  snprintf(script, sizeof script, "%s/../share/mmalloc/mmtrace_%s.py", dir, name);
  if (!exists(script)) snprintf(script, sizeof script, "%s/%s.py", MMT_SOURCE_DIR, name);
  if (!exists(script)) {
    fprintf(stderr, "mmtrace: %s.py is not installed beside %s (nor at %s)\n", name, dir, script);
    return 2;
  }
  ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
  if (l <= 0) { perror("mmtrace: /proc/self/exe"); return 2; }
  self[l] = 0;
  char **args = calloc((size_t)argc + 5, sizeof *args);
  if (!args) return 2;
  int n = 0;
  args[n++] = "python3";
  args[n++] = script;
  args[n++] = "--mmtrace";
  args[n++] = self;
  for (int i = 1; i < argc; i++) args[n++] = argv[i];
  execvp("python3", args);
  fprintf(stderr, "mmtrace: cannot run python3: %s\n", strerror(errno));
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 2) { usage(stderr); return 2; }
  const char *c = argv[1];
  if (strcmp(c, "record") == 0) return cmd_record(argc - 1, argv + 1);
  if (strcmp(c, "dump") == 0) return cmd_dump(argc - 1, argv + 1);
  if (strcmp(c, "info") == 0) return cmd_info(argc - 1, argv + 1);
  if (strcmp(c, "stats") == 0) return mmt_cmd_stats(argc - 1, argv + 1);
  if (strcmp(c, "report") == 0) return run_script("report", argc - 1, argv + 1);
  if (strcmp(c, "advise") == 0) return run_script("advise", argc - 1, argv + 1);
  if (strcmp(c, "replay") == 0) return mmt_cmd_replay(argc - 1, argv + 1);
  if (strcmp(c, "allocators") == 0) return cmd_allocators();
  if (strcmp(c, "replay-run") == 0) return mmt_cmd_replay_run(argc - 1, argv + 1);
  if (strcmp(c, "-h") == 0 || strcmp(c, "--help") == 0 || strcmp(c, "help") == 0) { usage(stdout); return 0; }
  fprintf(stderr, "mmtrace: unknown command '%s'\n", c);
  usage(stderr);
  return 2;
}
