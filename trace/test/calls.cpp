// calls.cpp — a program with a known sequence of allocation calls, for the
// tracer's round-trip test (roundtrip.py): every malloc-family function and
// C++ operator, cross-thread frees and reallocs, realloc chains, calls that
// fail; and the process events (fork, exec, abort, a thread that exits
// while others run, a kill).  It writes what it did to EXPECT, one line per
// call, in `mmtrace dump`'s words, blocks named <thread>.<k> (the k-th block
// that thread got after its start marker), and the checker matches the
// trace against it.
//
//   calls EXPECT [mode]   mode: calls (default) | fork | exec | exec2 |
//                               abort | kill READYFILE | exitthread | churn
#include <dlfcn.h>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <new>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

constexpr size_t kMarker = 999983;   // a size nothing else asks for: a thread's start marker
// sizes no allocator can give (volatile: the compiler must not see them)
volatile size_t kHuge = SIZE_MAX / 2, kQuarter = SIZE_MAX / 4;

// glibc's own names of the family; C23's sized frees are looked up (a C
// library before glibc 2.43 lacks them; the recorder defines them)
extern "C" {
void *__libc_malloc(size_t);
void __libc_free(void *);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void *__libc_valloc(size_t);
void *__libc_pvalloc(size_t);
}
void calls_free_sized(void *p, size_t n) {
  auto fn = reinterpret_cast<void (*)(void *, size_t)>(dlsym(RTLD_DEFAULT, "free_sized"));
  if (!fn) abort();
  fn(p, n);
}
void calls_free_aligned_sized(void *p, size_t a, size_t n) {
  auto fn = reinterpret_cast<void (*)(void *, size_t, size_t)>(dlsym(RTLD_DEFAULT, "free_aligned_sized"));
  if (!fn) abort();
  fn(p, a, n);
}

FILE *expect;
pthread_mutex_t expect_lock = PTHREAD_MUTEX_INITIALIZER;

// One traced thread: its name, and the blocks it got after its marker.
// Nothing here allocates between begin() and end(): the lines go to a
// fixed buffer, so the trace of that span holds only the calls below.
struct Thread {
  char name[8] = "";
  char text[1 << 16];
  size_t len = 0;
  int blocks = 0;
  void *marker = nullptr;
  void begin() {
    marker = malloc(kMarker);
    say("begin");
  }
  // the id of the block just got, and of the k-th
  const char *got() {
    static thread_local char id[32];
    snprintf(id, sizeof id, "%s.%d", name, blocks++);
    return id;
  }
  void say(const char *fmt, ...) __attribute__((format(printf, 2, 3))) {
    va_list ap;
    va_start(ap, fmt);
    len += (size_t)snprintf(text + len, sizeof text - len, "%s ", name);
    len += (size_t)vsnprintf(text + len, sizeof text - len, fmt, ap);
    len += (size_t)snprintf(text + len, sizeof text - len, "\n");
    va_end(ap);
    if (len >= sizeof text) abort();
  }
  void end() {
    free(marker);
    pthread_mutex_lock(&expect_lock);
    fwrite(text, 1, len, expect);
    pthread_mutex_unlock(&expect_lock);
  }
};

struct Block {
  void *p;
  char id[16];
};

#define SZ "%zu"
// Remember block p under the id just given.
void keep(Block &b, void *p, const char *id) {
  b.p = p;
  snprintf(b.id, sizeof b.id, "%s", id);
}

// Every single-thread call of the family, each as the dump will print it.
// The blocks left live go to out[] (n of them).
int every_call(Thread &t, Block *out) {
  int n = 0;
  Block first;
  keep(first, malloc(24), t.got());
  t.say("malloc size=24 -> %s", first.id);
  keep(out[n], calloc(3, 40), t.got());
  t.say("calloc nmemb=3 size=40 -> %s", out[n++].id);
  // a realloc chain
  Block r;
  keep(r, malloc(16), t.got());
  t.say("malloc size=16 -> %s", r.id);
  for (size_t sz = 32; sz <= 8192; sz *= 4) {
    void *q = realloc(r.p, sz);
    const char *id = t.got();
    t.say("realloc %s size=" SZ " -> %s%s", r.id, sz, id, q == r.p ? " inplace" : "");
    keep(r, q, id);
  }
  void *q = reallocarray(r.p, 10, 100);
  const char *id = t.got();
  t.say("reallocarray %s nmemb=10 size=100 -> %s%s", r.id, id, q == r.p ? " inplace" : "");
  keep(r, q, id);
  free(r.p);
  t.say("free %s", r.id);
  void *a = nullptr;
  if (posix_memalign(&a, 64, 200) != 0) abort();
  keep(r, a, t.got());
  t.say("posix_memalign size=200 align=64 -> %s", r.id);
  free(r.p);
  t.say("free %s", r.id);
  keep(out[n], aligned_alloc(128, 256), t.got());
  t.say("aligned_alloc size=256 align=128 -> %s", out[n++].id);
  keep(out[n], memalign(32, 40), t.got());
  t.say("memalign size=40 align=32 -> %s", out[n++].id);
  keep(out[n], valloc(100), t.got());
  t.say("valloc size=100 -> %s", out[n++].id);
  keep(out[n], pvalloc(100), t.got());
  t.say("pvalloc size=100 -> %s", out[n++].id);
  free(nullptr);
  t.say("free NULL");
  // failures: recorded as such, no block
  errno = 0;
  if (malloc((size_t)kHuge) || errno != ENOMEM) abort();
  t.say("malloc size=" SZ " failed", (size_t)kHuge);
  if (calloc((size_t)kQuarter, 8)) abort();
  t.say("calloc nmemb=" SZ " size=8 failed", (size_t)kQuarter);
  if (posix_memalign(&a, 3, 16) != EINVAL) abort();
  t.say("posix_memalign size=16 align=3 failed");
  keep(r, malloc(64), t.got());
  t.say("malloc size=64 -> %s", r.id);
  if (realloc(r.p, (size_t)kHuge)) abort();
  t.say("realloc %s size=" SZ " failed kept", r.id, (size_t)kHuge);
  free(r.p);
  t.say("free %s", r.id);
  // glibc's own names and C23's sized frees: recorded as the calls they are
  keep(r, __libc_malloc(72), t.got());
  t.say("malloc size=72 -> %s", r.id);
  q = __libc_realloc(r.p, 700);
  id = t.got();
  t.say("realloc %s size=700 -> %s%s", r.id, id, q == r.p ? " inplace" : "");
  keep(r, q, id);
  __libc_free(r.p);
  t.say("free %s", r.id);
  keep(r, __libc_calloc(2, 36), t.got());
  t.say("calloc nmemb=2 size=36 -> %s", r.id);
  calls_free_sized(r.p, 72);
  t.say("free %s", r.id);
  keep(r, __libc_memalign(64, 80), t.got());
  t.say("memalign size=80 align=64 -> %s", r.id);
  calls_free_aligned_sized(r.p, 64, 80);
  t.say("free %s", r.id);
  keep(r, __libc_valloc(50), t.got());
  t.say("valloc size=50 -> %s", r.id);
  __libc_free(r.p);
  t.say("free %s", r.id);
  keep(r, __libc_pvalloc(50), t.got());
  t.say("pvalloc size=50 -> %s", r.id);
  free(r.p);
  t.say("free %s", r.id);
  // C++ operators
  keep(r, ::operator new(48), t.got());
  t.say("new size=48 -> %s", r.id);
  ::operator delete(r.p);
  t.say("delete %s", r.id);
  keep(r, ::operator new[](80), t.got());
  t.say("new[] size=80 -> %s", r.id);
  ::operator delete[](r.p, 80);
  t.say("delete[](size) %s size=80", r.id);
  keep(r, ::operator new(32, std::nothrow), t.got());
  t.say("new(nothrow) size=32 -> %s", r.id);
  ::operator delete(r.p, 32);
  t.say("delete(size) %s size=32", r.id);
  keep(r, ::operator new(64, std::align_val_t(256)), t.got());
  t.say("new(align) size=64 align=256 -> %s", r.id);
  ::operator delete(r.p, std::align_val_t(256));
  t.say("delete(align) %s align=256", r.id);
  keep(r, ::operator new[](64, std::align_val_t(512), std::nothrow), t.got());
  t.say("new[](align,nothrow) size=64 align=512 -> %s", r.id);
  ::operator delete[](r.p, 64, std::align_val_t(512));
  t.say("delete[](size,align) %s size=64 align=512", r.id);
  if (::operator new((size_t)kHuge, std::nothrow)) abort();
  t.say("new(nothrow) size=" SZ " failed", (size_t)kHuge);
  free(first.p);
  t.say("free %s", first.id);
  return n;
}

// Cross-thread: the producer's blocks handed to the consumer, which frees
// most and reallocs some.
struct Handoff {
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  Block blocks[64];
  int n = 0;
  bool ready = false;
};

struct Worker {
  Thread t;
  Handoff *give = nullptr, *take = nullptr;
};

void *worker(void *arg) {
  Worker *w = static_cast<Worker *>(arg);
  Thread &t = w->t;
  t.begin();
  Block mine[64];
  int n = every_call(t, mine);
  for (int i = 0; i < 50; i++) {
    size_t sz = 8 + 8 * (size_t)i;
    keep(mine[n], malloc(sz), t.got());
    t.say("malloc size=" SZ " -> %s", sz, mine[n++].id);
  }
  // a dense burst of small blocks the thread frees itself, in mixed order:
  // the recorder takes most of these calls on its fast path
  Block burst[24];
  for (int i = 0; i < 24; i++) {
    if (i % 3 == 2) {
      keep(burst[i], calloc(2, 8 + (size_t)i), t.got());
      t.say("calloc nmemb=2 size=" SZ " -> %s", 8 + (size_t)i, burst[i].id);
    } else {
      keep(burst[i], malloc(8 + 4 * (size_t)i), t.got());
      t.say("malloc size=" SZ " -> %s", 8 + 4 * (size_t)i, burst[i].id);
    }
  }
  for (int i = 1; i < 24; i += 2) {
    free(burst[i].p);
    t.say("free %s", burst[i].id);
  }
  for (int i = 22; i >= 0; i -= 2) {
    free(burst[i].p);
    t.say("free %s", burst[i].id);
  }
  pthread_mutex_lock(&w->give->lock);
  memcpy(w->give->blocks, mine, sizeof mine);
  w->give->n = n;
  w->give->ready = true;
  pthread_cond_signal(&w->give->cond);
  pthread_mutex_unlock(&w->give->lock);
  pthread_mutex_lock(&w->take->lock);
  while (!w->take->ready) pthread_cond_wait(&w->take->cond, &w->take->lock);
  pthread_mutex_unlock(&w->take->lock);
  Block *theirs = w->take->blocks;
  for (int i = 0; i < w->take->n; i++) {
    if (i % 5 == 0) {
      void *q = realloc(theirs[i].p, 3000);
      const char *id = t.got();
      t.say("realloc %s size=3000 -> %s%s", theirs[i].id, id, q == theirs[i].p ? " inplace" : "");
      free(q);
      t.say("free %s", id);
    } else {
      free(theirs[i].p);
      t.say("free %s", theirs[i].id);
    }
  }
  t.end();
  return nullptr;
}

// A ring: each worker hands its blocks to the next, which frees them.
int run_calls() {
  const int n = 4;
  static Handoff h[n];
  static Worker w[n];
  for (int i = 0; i < n; i++) {
    snprintf(w[i].t.name, sizeof w[i].t.name, "w%d", i);
    w[i].give = &h[i];
    w[i].take = &h[(i + n - 1) % n];
  }
  pthread_t th[n];
  for (int i = 0; i < n; i++) pthread_create(&th[i], nullptr, worker, &w[i]);
  for (int i = 0; i < n; i++) pthread_join(th[i], nullptr);
  // operator new that throws: the exception object is malloc'd inside the
  // failed call (untraced: the tracer records the outermost call only),
  // so its free is of a pointer the trace never saw
  static Thread m;
  snprintf(m.name, sizeof m.name, "m");
  m.begin();
  try {
    void *p = ::operator new[]((size_t)kHuge);
    (void)p;
    abort();
  } catch (const std::bad_alloc &) {
    m.say("new[] size=" SZ " failed", (size_t)kHuge);
  }
  m.say("free unknown:*");
  m.end();
  return 0;
}

// churn: threads allocating sizes from 8 B to 64 KiB, freeing their own
// blocks and each other's (handed over through mutex-guarded mailboxes),
// reallocing some: a pattern for the replayer, whose every free must find
// its block.
struct Mailbox {
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  void *items[4096];
  int n = 0;
};
constexpr int kChurnThreads = 4;
Mailbox mailbox[kChurnThreads];

void *churn_thread(void *arg) {
  int me = (int)(intptr_t)arg;
  uint64_t seed = 0x2545f4914f6cdd1dull * (uint64_t)(me + 1);
  auto next = [&seed]() { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; return seed; };
  void *own[256] = {};
  for (int i = 0; i < 20000; i++) {
    uint64_t r = next();
    int k = (int)(r % 256);
    switch ((r >> 8) % 8) {
    case 0: case 1: case 2:                 // allocate (replacing: free the old one)
      free(own[k]);
      own[k] = malloc((r >> 16) % 64 == 0 ? 65536 : 8 + (r >> 24) % 2048);
      break;
    case 3:                                 // grow
      if (own[k]) own[k] = realloc(own[k], 16 + (r >> 16) % 8192);
      break;
    case 4: case 5: {                       // hand a block to another thread
      if (!own[k]) break;
      Mailbox &m = mailbox[(me + 1 + (int)((r >> 16) % (kChurnThreads - 1))) % kChurnThreads];
      pthread_mutex_lock(&m.lock);
      if (m.n < 4096) { m.items[m.n++] = own[k]; own[k] = nullptr; }
      pthread_mutex_unlock(&m.lock);
      break;
    }
    default: {                              // free what others handed over
      Mailbox &m = mailbox[me];
      pthread_mutex_lock(&m.lock);
      while (m.n > 0) free(m.items[--m.n]);
      pthread_mutex_unlock(&m.lock);
    }
    }
  }
  for (auto &p : own) free(p);
  return nullptr;
}

void *exiting_thread(void *) {
  static Thread t;
  snprintf(t.name, sizeof t.name, "x");
  t.begin();
  void *p = malloc(4000);
  t.say("malloc size=4000 -> %s", t.got());
  free(p);
  t.say("free x.0");
  t.end();
  return nullptr;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: calls EXPECT [calls|fork|exec|exec2|abort|kill READY|exitthread|churn]\n");
    return 2;
  }
  const char *mode = argc > 2 ? argv[2] : "calls";
  if (strcmp(mode, "exec2") == 0) {      // the image exec'd by "exec"
    free(malloc(777));
    return 0;
  }
  expect = fopen(argv[1], "w");
  if (!expect) { perror(argv[1]); return 2; }
  int rc = 0;
  if (strcmp(mode, "calls") == 0) {
    rc = run_calls();
  } else if (strcmp(mode, "fork") == 0) {
    void *p = malloc(555);
    fflush(expect);
    pid_t pid = fork();
    if (pid == 0) {                      // the child frees the inherited block, allocates its own
      free(p);
      free(malloc(666));
      _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    free(p);
    fprintf(expect, "child %d\n", (int)pid);
    rc = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
  } else if (strcmp(mode, "exec") == 0) {
    free(malloc(444));
    fclose(expect);
    execl(argv[0], argv[0], argv[1], "exec2", (char *)nullptr);
    perror("execl");
    return 1;
  } else if (strcmp(mode, "abort") == 0) {
    void *p = malloc(333);
    (void)p;
    fclose(expect);
    abort();
  } else if (strcmp(mode, "kill") == 0) {     // enough events for several chunks, then wait to be killed
    for (int i = 0; i < 40000; i++) free(malloc(16 + (size_t)(i % 100)));
    const char *name = argc > 3 ? argv[3] : "ready";   // holds our pid, renamed into place whole
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", name);
    FILE *ready = fopen(tmp, "w");
    if (ready) {
      fprintf(ready, "%d\n", (int)getpid());
      fclose(ready);
      rename(tmp, name);
    }
    for (;;) pause();
  } else if (strcmp(mode, "churn") == 0) {
    pthread_t th[kChurnThreads];
    for (int i = 0; i < kChurnThreads; i++) pthread_create(&th[i], nullptr, churn_thread, (void *)(intptr_t)i);
    for (int i = 0; i < kChurnThreads; i++) pthread_join(th[i], nullptr);
    for (auto &m : mailbox)
      while (m.n > 0) free(m.items[--m.n]);
  } else if (strcmp(mode, "exitthread") == 0) {   // a thread exits while the main thread goes on
    pthread_t th;
    pthread_create(&th, nullptr, exiting_thread, nullptr);
    pthread_join(th, nullptr);
    for (int i = 0; i < 1000; i++) free(malloc(32));
  } else {
    fprintf(stderr, "calls: unknown mode %s\n", mode);
    return 2;
  }
  fclose(expect);
  return rc;
}
