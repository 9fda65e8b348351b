/* hot-text-hook.c — linked into a build of mmalloc compiled with
 * -finstrument-functions: records each function entered (once; a lock-free
 * open-addressed set) and at exit appends their offsets from the library's
 * load address to $FNDUMP, one hex number a line (tools/hot-text.sh). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 8192
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
static void *seen[N];

__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *site) {
  (void)site;
  uintptr_t h = ((uintptr_t)fn >> 4) % N;
  for (int i = 0; i < N; i++, h = (h + 1) % N) {
    void *c = __atomic_load_n(&seen[h], __ATOMIC_RELAXED);
    if (c == fn) return;
    if (!c) {
      void *z = NULL;
      if (__atomic_compare_exchange_n(&seen[h], &z, fn, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
      if (z == fn) return;
    }
  }
}

__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *site) {
  (void)fn, (void)site;
}

__attribute__((no_instrument_function, destructor(101))) static void dump(void) {
  const char *o = getenv("FNDUMP");
  if (!o) return;
  int fd = open(o, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;
  char buf[32];
  for (int i = 0; i < N; i++)
    if (seen[i]) {
      int n = snprintf(buf, sizeof buf, "%lx\n", (unsigned long)((uintptr_t)seen[i] - (uintptr_t)__ehdr_start));
      if (write(fd, buf, (size_t)n) != n) break;
    }
  close(fd);
}
