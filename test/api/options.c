/* options.c — the MMALLOC_* environment variables, black-box.
 *
 * The test re-executes itself ("--child") with one environment per case and
 * reads what the child reports: mm_option_get of every option, the options
 * and the number of local heaps in mm_stats_json, and its stderr, where
 *   MMALLOC_VERBOSE=1  must print "mmalloc <version>: heaps=N ..." before main
 *   MMALLOC_STATS=1    must print statistics after main has returned
 * and a bad value must be ignored (the default stays) with one message that
 * names the variable.  The child's environment holds no other MMALLOC_*.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <sys/auxv.h>

#include "api/harness.h"
#include "api/json.h"
#include "check.h"
#include "mmalloc.h"

#define MARK_START "[child main starts]\n"
#define MARK_END "[child main ends]\n"

static int child_main(void) {
  fputs(MARK_START, stderr);
  /* allocate a little through every layer */
  void *a = malloc(100), *b = malloc(100 << 10), *c = malloc(40 << 20);
  memset(a, 1, 100);
  memset(b, 1, 100 << 10);
  /* as a user should: the figures (live bytes) may change between calls,
   * so the length needed is asked again until the buffer holds it all */
  size_t n = mm_stats_json(NULL, 0), cap = 0;
  char *json = NULL;
  while (n >= cap) {
    free(json);
    cap = n + 256;
    json = malloc(cap);
    n = mm_stats_json(json, cap);
  }
  double v;
  printf("verbose=%ld stats=%ld heaps=%ld hugepages=%ld purge_delay_ms=%ld\n",
         mm_option_get("verbose"), mm_option_get("stats"), mm_option_get("heaps"),
         mm_option_get("hugepages"), mm_option_get("purge_delay_ms"));
  printf("json_heaps=%ld json_opt_heaps=%ld json_hugepages=%ld json_purge_delay_ms=%ld\n",
         json_array_length(json, "heaps"),
         json_number(json, "options.heaps", &v) ? (long)v : -1L,
         json_number(json, "options.hugepages", &v) ? (long)v : -1L,
         json_number(json, "options.purge_delay_ms", &v) ? (long)v : -1L);
  free(json);
  free(a);
  free(b);
  free(c);
  fflush(stdout);
  fputs(MARK_END, stderr);
  return 0;
}

/* ---- parent ------------------------------------------------------------------ */
static char self[4096];
static child_t c;

typedef struct report_s {
  long verbose, stats, heaps, hugepages, purge_delay_ms;
  long json_heaps, json_opt_heaps, json_hugepages, json_purge_delay_ms;
} report_t;

/* Run the child with exactly the given MMALLOC_* settings (NULL-terminated). */
static bool run_child(const char *const *settings, report_t *r) {
  extern char **environ;
  char *envp[512];
  int n = 0;
  for (char **e = environ; *e && n < 400; e++)
    if (strncmp(*e, "MMALLOC_", 8) != 0 && strncmp(*e, "LD_PRELOAD=", 11) != 0) envp[n++] = *e;
  for (const char *const *s = settings; s && *s; s++) envp[n++] = (char *)*s;
  envp[n] = NULL;
  char *argv[] = {self, (char *)"--child", NULL};
  child_exec(&c, argv, envp);
  memset(r, -1, sizeof(*r));
  int got = sscanf(c.out,
                   "verbose=%ld stats=%ld heaps=%ld hugepages=%ld purge_delay_ms=%ld\n"
                   "json_heaps=%ld json_opt_heaps=%ld json_hugepages=%ld json_purge_delay_ms=%ld",
                   &r->verbose, &r->stats, &r->heaps, &r->hugepages, &r->purge_delay_ms,
                   &r->json_heaps, &r->json_opt_heaps, &r->json_hugepages,
                   &r->json_purge_delay_ms);
  bool ok = child_exited_ok(&c) && got == 9;
  if (!ok) {
    fprintf(stderr, "  child with");
    for (const char *const *s = settings; s && *s; s++) fprintf(stderr, " %s", *s);
    fprintf(stderr, ": stdout \"%s\"\n", c.out);
    child_describe(&c, "options child");
  }
  return ok;
}

/* stderr of the last child with the start/end markers and `skip` removed;
 * returns the part before the start marker in pre, after the end in post. */
static void split_err(char *pre, char *mid, char *post, size_t n) {
  const char *s = strstr(c.err, MARK_START);
  const char *e = strstr(c.err, MARK_END);
  pre[0] = mid[0] = post[0] = 0;
  if (!s || !e || e < s) {
    snprintf(pre, n, "%s", c.err); /* markers missing: everything is "pre" */
    return;
  }
  snprintf(pre, n, "%.*s", (int)(s - c.err), c.err);
  snprintf(mid, n, "%.*s", (int)(e - s - strlen(MARK_START)), s + strlen(MARK_START));
  snprintf(post, n, "%s", e + strlen(MARK_END));
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

static char pre[CHILD_BUF], mid[CHILD_BUF], post[CHILD_BUF];

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--child") == 0) return child_main();
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  REQUIRE("readlink /proc/self/exe", len > 0);
  self[len] = 0;

  /* defaults */
  report_t def;
  const char *none[] = {NULL};
  REQUIRE("child runs with no MMALLOC_* set", run_child(none, &def));
  split_err(pre, mid, post, sizeof(pre));
  CHECK("default: nothing on stderr but the child's own lines",
        pre[0] == 0 && mid[0] == 0 && post[0] == 0);
  CHECK("default verbose 0", def.verbose == 0);
  CHECK("default stats 0", def.stats == 0);
  CHECK("default heaps >= 1", def.heaps >= 1);
  /* one heap per CPU the affinity mask allows (fewer under a cgroup quota) */
  cpu_set_t mask;
  REQUIRE("sched_getaffinity", sched_getaffinity(0, sizeof(mask), &mask) == 0);
  CHECK("default heaps: at most the CPUs of the affinity mask", def.heaps <= CPU_COUNT(&mask));
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET(cpu, &mask)) {
      CPU_SET(cpu, &one);
      break;
    }
  report_t pinned;
  REQUIRE("pin to one CPU", sched_setaffinity(0, sizeof(one), &one) == 0);
  bool ran = run_child(none, &pinned);
  REQUIRE("unpin", sched_setaffinity(0, sizeof(mask), &mask) == 0);
  if (ran) {
    if (pinned.heaps != 1) fprintf(stderr, "  pinned to one CPU: heaps=%ld\n", pinned.heaps);
    CHECK("a process pinned to one CPU gets one heap", pinned.heaps == 1);
  }
  CHECK("default: JSON heaps[] has `heaps` entries", def.json_heaps == def.heaps);
  CHECK("default: JSON options agree with mm_option_get",
        def.json_opt_heaps == def.heaps && def.json_hugepages == def.hugepages &&
            def.json_purge_delay_ms == def.purge_delay_ms);

  report_t r;
  /* MMALLOC_VERBOSE=1: one line at start, before main */
  const char *verbose[] = {"MMALLOC_VERBOSE=1", NULL};
  if (run_child(verbose, &r)) {
    split_err(pre, mid, post, sizeof(pre));
    char want[64];
    snprintf(want, sizeof(want), "mmalloc %d.%d.%d: heaps=%ld ", MM_VERSION_MAJOR,
             MM_VERSION_MINOR, MM_VERSION_PATCH, def.heaps);
    if (strncmp(pre, want, strlen(want)) != 0)
      fprintf(stderr, "  MMALLOC_VERBOSE=1: before main \"%s\", expected it to start \"%s\"\n", pre,
              want);
    CHECK("MMALLOC_VERBOSE=1 prints \"mmalloc <version>: heaps=N \" before main",
          strncmp(pre, want, strlen(want)) == 0);
    CHECK("MMALLOC_VERBOSE=1 prints one line", count_lines(pre) == 1);
    CHECK("MMALLOC_VERBOSE=1: nothing else on stderr", mid[0] == 0 && post[0] == 0);
    CHECK("MMALLOC_VERBOSE=1: get(verbose) == 1", r.verbose == 1);
    /* the clock is the vDSO's wherever the kernel maps one (valgrind hides it) */
    const char *clock = getauxval(AT_SYSINFO_EHDR) ? "clock=vdso " : "clock=libc ";
    if (!strstr(pre, clock)) fprintf(stderr, "  MMALLOC_VERBOSE=1: expected \"%s\" in \"%s\"\n", clock, pre);
    CHECK("MMALLOC_VERBOSE=1: the clock is the vDSO's where there is one", strstr(pre, clock) != NULL);
  }
  /* MMALLOC_VERBOSE=1 MMALLOC_HEAPS=3: the line shows the heaps in force */
  const char *verbose3[] = {"MMALLOC_VERBOSE=1", "MMALLOC_HEAPS=3", NULL};
  if (run_child(verbose3, &r)) {
    split_err(pre, mid, post, sizeof(pre));
    char want[64];
    snprintf(want, sizeof(want), "mmalloc %d.%d.%d: heaps=3 ", MM_VERSION_MAJOR,
             MM_VERSION_MINOR, MM_VERSION_PATCH);
    CHECK("MMALLOC_VERBOSE=1 MMALLOC_HEAPS=3 prints heaps=3", strncmp(pre, want, strlen(want)) == 0);
  }

  /* MMALLOC_STATS=1: statistics after main */
  const char *stats[] = {"MMALLOC_STATS=1", NULL};
  if (run_child(stats, &r)) {
    split_err(pre, mid, post, sizeof(pre));
    if (!(post[0] && strstr(post, "mmalloc"))) fprintf(stderr, "  MMALLOC_STATS=1 stderr: \"%s\"\n", c.err);
    CHECK("MMALLOC_STATS=1 prints statistics naming mmalloc after main", post[0] && strstr(post, "mmalloc"));
    CHECK("MMALLOC_STATS=1: nothing before or during main", pre[0] == 0 && mid[0] == 0);
    CHECK("MMALLOC_STATS=1: get(stats) == 1", r.stats == 1);
  }

  /* MMALLOC_HEAPS */
  static const long heap_values[] = {1, 3, 7, 64};
  for (size_t k = 0; k < 4; k++) {
    char setting[64];
    snprintf(setting, sizeof(setting), "MMALLOC_HEAPS=%ld", heap_values[k]);
    const char *env[] = {setting, NULL};
    if (!run_child(env, &r)) {
      CHECK("MMALLOC_HEAPS child runs", 0);
      continue;
    }
    if (r.heaps != heap_values[k] || r.json_heaps != heap_values[k])
      fprintf(stderr, "  %s: get %ld, JSON heaps[] %ld, options.heaps %ld\n", setting, r.heaps,
              r.json_heaps, r.json_opt_heaps);
    CHECK("MMALLOC_HEAPS=N: get(heaps) == N", r.heaps == heap_values[k]);
    CHECK("MMALLOC_HEAPS=N: JSON has N heaps", r.json_heaps == heap_values[k] &&
                                                    r.json_opt_heaps == heap_values[k]);
    CHECK("MMALLOC_HEAPS=N: stderr quiet", c.err_len == strlen(MARK_START) + strlen(MARK_END));
  }
  /* MMALLOC_HUGEPAGES */
  for (long v = 0; v <= 2; v++) {
    char setting[64];
    snprintf(setting, sizeof(setting), "MMALLOC_HUGEPAGES=%ld", v);
    const char *env[] = {setting, NULL};
    if (run_child(env, &r)) {
      CHECK("MMALLOC_HUGEPAGES=v: get == v", r.hugepages == v);
      CHECK("MMALLOC_HUGEPAGES=v: JSON == v", r.json_hugepages == v);
    } else {
      CHECK("MMALLOC_HUGEPAGES child runs", 0);
    }
  }
  /* MMALLOC_PURGE_DELAY_MS */
  static const long delays[] = {0, 250, 60000};
  for (size_t k = 0; k < 3; k++) {
    char setting[64];
    snprintf(setting, sizeof(setting), "MMALLOC_PURGE_DELAY_MS=%ld", delays[k]);
    const char *env[] = {setting, NULL};
    if (run_child(env, &r)) {
      CHECK("MMALLOC_PURGE_DELAY_MS=v: get == v", r.purge_delay_ms == delays[k]);
      CHECK("MMALLOC_PURGE_DELAY_MS=v: JSON == v", r.json_purge_delay_ms == delays[k]);
    } else {
      CHECK("MMALLOC_PURGE_DELAY_MS child runs", 0);
    }
  }

  /* Bad values: ignored (the default stays), with one message naming the variable. */
  static const struct { const char *setting, *var; } bad[] = {
      {"MMALLOC_HEAPS=abc", "MMALLOC_HEAPS"},          {"MMALLOC_HEAPS=0", "MMALLOC_HEAPS"},
      {"MMALLOC_HEAPS=-2", "MMALLOC_HEAPS"},           {"MMALLOC_HEAPS=3x", "MMALLOC_HEAPS"},
      {"MMALLOC_HEAPS=100000", "MMALLOC_HEAPS"},       {"MMALLOC_HEAPS=", "MMALLOC_HEAPS"},
      {"MMALLOC_HEAPS=99999999999999999999", "MMALLOC_HEAPS"},
      {"MMALLOC_HUGEPAGES=3", "MMALLOC_HUGEPAGES"},    {"MMALLOC_HUGEPAGES=-1", "MMALLOC_HUGEPAGES"},
      {"MMALLOC_HUGEPAGES=yes", "MMALLOC_HUGEPAGES"},
      {"MMALLOC_PURGE_DELAY_MS=-5", "MMALLOC_PURGE_DELAY_MS"},
      {"MMALLOC_PURGE_DELAY_MS=fast", "MMALLOC_PURGE_DELAY_MS"},
      {"MMALLOC_PURGE_DELAY_MS=1.5", "MMALLOC_PURGE_DELAY_MS"},
      {"MMALLOC_VERBOSE=2", "MMALLOC_VERBOSE"},        {"MMALLOC_VERBOSE=on", "MMALLOC_VERBOSE"},
      {"MMALLOC_STATS=yes", "MMALLOC_STATS"},          {"MMALLOC_STATS=-1", "MMALLOC_STATS"},
  };
  for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
    const char *env[] = {bad[k].setting, NULL};
    bool ran = run_child(env, &r);
    CHECK("a bad MMALLOC_* value does not stop the program", ran);
    if (!ran) continue;
    split_err(pre, mid, post, sizeof(pre));
    bool same = r.verbose == def.verbose && r.stats == def.stats && r.heaps == def.heaps &&
                r.hugepages == def.hugepages && r.purge_delay_ms == def.purge_delay_ms;
    bool message = count_lines(pre) == 1 && strstr(pre, "mmalloc") && strstr(pre, bad[k].var) &&
                   mid[0] == 0 && post[0] == 0;
    if (!same || !message)
      fprintf(stderr, "  %s: options %s; stderr \"%s\"\n", bad[k].setting,
              same ? "unchanged" : "CHANGED", c.err);
    CHECK("bad MMALLOC_* value ignored: every option keeps its default", same);
    CHECK("bad MMALLOC_* value: one message on stderr before main naming mmalloc and the variable",
          message);
  }
  return check_summary("api_options");
}
