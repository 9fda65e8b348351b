/* recorder_threads.c — the recorder itself under ASan and TSan.  A
 * preloaded libmmtrace.so cannot sit under a sanitizer (the sanitizer's
 * own malloc comes first), so this test compiles record.c into itself with
 * every exported name renamed (CMakeLists.txt: malloc -> mmt_t_malloc,
 * ...) and calls those: the recorder's thread registration, buffers,
 * shadow map, flushes and exit path run in the sanitized program, on the
 * sanitizer's malloc.
 *
 * A forked child runs THREADS threads (made by the recorder's
 * pthread_create, so registered as they start) that allocate, realloc, free their
 * own blocks and hand blocks to the next thread through a mutex-guarded
 * mailbox, which frees them (remote frees), then exits; now and then a
 * realloc grows a block past 64 KiB (a timed call, and a timed free
 * wherever the block ends) and a thread sleeps 1 ms (a long gap: the
 * recorder reads the thread's CPU time).  The parent reads the child's
 * trace back and checks that it holds exactly those calls: every malloc,
 * realloc and free, each free naming a block the trace gave out, the
 * hand-overs as remote frees, timed calls and CPU times, and a normal end.
 *
 *   recorder_threads BASE   (with MMTRACE_OUT=BASE in the environment)
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "reader.h"

void *mmt_t_malloc(size_t);
void *mmt_t_realloc(void *, size_t);
void mmt_t_free(void *);
int mmt_t_pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

#define THREADS 4
#define ROUNDS 20000

typedef struct {
  pthread_mutex_t lock;
  void *items[256];
  int n;
} mailbox_t;
static mailbox_t box[THREADS];

static void *work(void *arg) {
  int me = (int)(intptr_t)arg;
  void *own[64] = {0};
  uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(me + 1);
  for (int i = 0; i < ROUNDS; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    int k = (int)(x % 64);
    if (own[k]) {                                   /* a free, a realloc or a hand-over */
      if (i % 3 == 0) {
        own[k] = mmt_t_realloc(own[k], i % 300 == 0 ? 70000 + x % 1000 : 16 + x % 4000);
      } else if (i % 3 == 1) {
        mailbox_t *m = &box[(me + 1) % THREADS];
        pthread_mutex_lock(&m->lock);
        if (m->n < 256) { m->items[m->n++] = own[k]; own[k] = NULL; }
        pthread_mutex_unlock(&m->lock);
        if (own[k]) { mmt_t_free(own[k]); own[k] = NULL; }
      } else {
        mmt_t_free(own[k]);
        own[k] = NULL;
      }
    } else {
      own[k] = mmt_t_malloc(8 + x % 1000);
    }
    if (i % 5000 == 4999) {                         /* a long gap */
      struct timespec nap = {0, 1000000};
      nanosleep(&nap, NULL);
    }
    if (i % 97 == 0) {                              /* what the previous thread handed over */
      mailbox_t *m = &box[me];
      pthread_mutex_lock(&m->lock);
      while (m->n > 0) mmt_t_free(m->items[--m->n]);
      pthread_mutex_unlock(&m->lock);
    }
  }
  for (int k = 0; k < 64; k++) mmt_t_free(own[k]);
  return NULL;
}

static int child(void) {
  mmt_t_free(mmt_t_malloc(1));                      /* the main thread is traced too */
  for (int i = 0; i < THREADS; i++) pthread_mutex_init(&box[i].lock, NULL);
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) mmt_t_pthread_create(&th[i], NULL, work, (void *)(intptr_t)i);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < THREADS; i++)
    while (box[i].n > 0) mmt_t_free(box[i].items[--box[i].n]);
  return 0;
}

/* Remove BASE.* left by earlier runs.  The child writes BASE.<its pid>,
 * or BASE.<pid>.1 when that name exists (the recorder never overwrites a
 * trace), and process ids wrap (at 32768 on many machines): an earlier
 * run's file of the same pid would be read back instead of this run's. */
static void remove_old_traces(const char *base) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", base);
  char *slash = strrchr(dir, '/');
  const char *name = slash ? slash + 1 : base;
  if (slash) *slash = 0;
  else snprintf(dir, sizeof dir, ".");
  size_t len = strlen(name);
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *ent; (ent = readdir(d)) != NULL;) {
    if (strncmp(ent->d_name, name, len) == 0 && ent->d_name[len] == '.') {
      char path[8400];
      snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
      unlink(path);
    }
  }
  closedir(d);
}

int main(int argc, char **argv) {
  if (argc < 2 || !getenv("MMTRACE_OUT") || strcmp(getenv("MMTRACE_OUT"), argv[1]) != 0) {
    fprintf(stderr, "usage: MMTRACE_OUT=BASE recorder_threads BASE\n");
    return 2;
  }
  remove_old_traces(argv[1]);
  pid_t pid = fork();
  if (pid == 0) exit(child());
  int st;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    printf("FAIL: the traced child ended with status %d\n", st);
    return 1;
  }
  char path[4200], err[600];
  snprintf(path, sizeof path, "%s.%d", argv[1], (int)pid);
  mmt_reader_t *r = mmt_reader_open(path, err, sizeof err);
  if (!r) { printf("FAIL: %s\n", err); return 1; }
  mmt_event_t e;
  int k;
  uint64_t mallocs = 0, reallocs = 0, frees = 0, nulls = 0, unknown = 0, remote = 0, threads_begun = 0;
  uint64_t timed_frees = 0, cpu_gaps = 0;
  while ((k = mmt_reader_next(r, &e)) > 0) {
    if (e.op == MMT_THREAD_BEGIN) threads_begun++;
    if (e.op == MMT_MALLOC) mallocs++;
    if (e.op == MMT_REALLOC) reallocs++;
    if (e.op == MMT_FREE) {
      if (e.ref == MMT_REF_IS_NULL) nulls++;
      else frees++;
    }
    if (e.ref == MMT_REF_IS_UNKNOWN) unknown++;
    if (e.ref == MMT_REF_IS_BLOCK && e.ref_thread != e.thread) remote++;
    if (e.op == MMT_FREE && e.timed) timed_frees++;
    if (e.gap_cpu_known) cpu_gaps++;
  }
  if (k < 0) { printf("FAIL: %s\n", mmt_reader_error(r)); return 1; }
  int bad = 0;
  if (strcmp(mmt_reader_ending(r), "exit") != 0) { printf("FAIL: the trace ends with %s\n", mmt_reader_ending(r)); bad = 1; }
  /* every block given out is freed: mallocs = frees (reallocs move blocks) */
  if (mallocs != frees) { printf("FAIL: %" PRIu64 " mallocs, %" PRIu64 " frees of blocks\n", mallocs, frees); bad = 1; }
  if (unknown) { printf("FAIL: %" PRIu64 " frees of pointers the trace never saw\n", unknown); bad = 1; }
  if (!remote) { printf("FAIL: no remote free among the hand-overs\n"); bad = 1; }
  if (threads_begun != THREADS + 1) { printf("FAIL: %" PRIu64 " threads\n", threads_begun); bad = 1; }
  if (!timed_frees) { printf("FAIL: no timed free (of a block grown past 64 KiB)\n"); bad = 1; }
  if (cpu_gaps < THREADS * (ROUNDS / 5000)) {
    printf("FAIL: %" PRIu64 " gaps with the thread's CPU time, under the %d sleeps\n", cpu_gaps, THREADS * (ROUNDS / 5000));
    bad = 1;
  }
  printf("%s: %" PRIu64 " mallocs, %" PRIu64 " reallocs, %" PRIu64 " frees (%" PRIu64 " remote, %" PRIu64
         " timed), %" PRIu64 " frees of NULL, %" PRIu64 " threads, %" PRIu64 " gaps with CPU time\n",
         bad ? "FAIL" : "ok", mallocs, reallocs, frees, remote, timed_frees, nulls, threads_begun, cpu_gaps);
  mmt_reader_close(r);
  return bad;
}
