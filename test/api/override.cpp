// override.cpp — every entry point of the malloc family and every C++
// operator new/delete is mmalloc's, in each linking mode (label api).
//
// Built three ways (test/api/CMakeLists.txt):
//   api_override_shared   linked to libmmalloc.so            (-DMODE_SHARED)
//   api_override_static   linked with libmmalloc.a           (-DMODE_STATIC)
//   api_override_preload  linked to neither, run with LD_PRELOAD=libmmalloc.so
//                         (and api_override_mmrun: through bin/mmrun)
// In preload mode the mm_ functions are found with dlsym(RTLD_DEFAULT, ...),
// which also proves the library was loaded.
//
// What proves a block came from mmalloc: mm_malloc_usable_size(p) answers
// only for mmalloc's blocks (for any other pointer it aborts with an mmalloc
// message), so it is asked in a forked child.  What proves a standard free
// or operator delete gave a block back to mmalloc: afterwards mm_free(p) in
// a child aborts with mmalloc's message.  And dladdr() says which object
// defines each entry point: libmmalloc.so, or the program itself when
// libmmalloc.a is linked in.  The statistics (mm_stats_json) count the
// large blocks the standard names hand out.
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

extern "C" {
#include "check.h"
#include "mmalloc.h"
// glibc's own names of the family, which some programs call (not in a header)
void *__libc_malloc(std::size_t);
void __libc_free(void *);
void *__libc_calloc(std::size_t, std::size_t);
void *__libc_realloc(void *, std::size_t);
void *__libc_memalign(std::size_t, std::size_t);
void *__libc_valloc(std::size_t);
void *__libc_pvalloc(std::size_t);
#ifndef MODE_PRELOAD
// C23's sized frees under names of their own (a C library that declares
// them, glibc 2.43 on, declares them its way); in the preload mode they are
// looked up, the C library here may lack them
void test_free_sized(void *, std::size_t) __asm__("free_sized");
void test_free_aligned_sized(void *, std::size_t, std::size_t) __asm__("free_aligned_sized");
#endif
}

#if defined(MODE_SHARED)
#define MODE "shared"
#elif defined(MODE_STATIC)
#define MODE "static"
#elif defined(MODE_PRELOAD)
#define MODE "preload"
#else
#error "define MODE_SHARED, MODE_STATIC or MODE_PRELOAD"
#endif

namespace {

constexpr std::size_t KiB = 1024;

// mmalloc's own functions: linked, or looked up in the running process.
struct mm_api {
  std::size_t (*usable)(const void *);
  void (*free)(void *);
  void *(*malloc)(std::size_t);
  void *(*aligned_alloc)(std::size_t, std::size_t);
  std::size_t (*stats_json)(char *, std::size_t);
  void (*memory)(mm_memory_t *);
} mm;

bool mm_lookup() {
#ifdef MODE_PRELOAD
  mm.usable = reinterpret_cast<std::size_t (*)(const void *)>(dlsym(RTLD_DEFAULT, "mm_malloc_usable_size"));
  mm.free = reinterpret_cast<void (*)(void *)>(dlsym(RTLD_DEFAULT, "mm_free"));
  mm.malloc = reinterpret_cast<void *(*)(std::size_t)>(dlsym(RTLD_DEFAULT, "mm_malloc"));
  mm.aligned_alloc =
      reinterpret_cast<void *(*)(std::size_t, std::size_t)>(dlsym(RTLD_DEFAULT, "mm_aligned_alloc"));
  mm.stats_json = reinterpret_cast<std::size_t (*)(char *, std::size_t)>(dlsym(RTLD_DEFAULT, "mm_stats_json"));
  mm.memory = reinterpret_cast<void (*)(mm_memory_t *)>(dlsym(RTLD_DEFAULT, "mm_memory"));
#else
  mm.usable = mm_malloc_usable_size;
  mm.free = mm_free;
  mm.malloc = mm_malloc;
  mm.aligned_alloc = mm_aligned_alloc;
  mm.stats_json = mm_stats_json;
  mm.memory = mm_memory;
#endif
  return mm.usable && mm.free && mm.malloc && mm.aligned_alloc && mm.stats_json && mm.memory;
}

template <typename T> T opaque(T v) {
  __asm__ volatile("" : "+r"(v));
  return v;
}

// ---- child processes --------------------------------------------------------
struct child_result {
  int status;
  std::string out, err;
};

template <typename Fn> child_result in_child(Fn fn) {
  int out[2], err[2];
  if (pipe(out) || pipe(err)) std::abort();
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]), close(out[1]), close(err[0]), close(err[1]);
    fn();
    std::fflush(stdout);
    _exit(0);
  }
  close(out[1]);
  close(err[1]);
  child_result r;
  char buf[4096];
  ssize_t n;
  // The child writes little: read stdout, then stderr.
  while ((n = read(out[0], buf, sizeof buf)) > 0) r.out.append(buf, static_cast<std::size_t>(n));
  while ((n = read(err[0], buf, sizeof buf)) > 0) r.err.append(buf, static_cast<std::size_t>(n));
  close(out[0]);
  close(err[0]);
  waitpid(pid, &r.status, 0);
  return r;
}

// p is a live mmalloc block of at least n bytes.
bool owned(const char *what, const void *p, std::size_t n) {
  if (!p) {
    std::fprintf(stderr, "  [%s] %s returned NULL\n", MODE, what);
    return false;
  }
  child_result r = in_child([&] { std::printf("%zu\n", mm.usable(opaque(p))); });
  bool ok = WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 && std::strtoull(r.out.c_str(), nullptr, 10) >= n;
  if (!ok)
    std::fprintf(stderr, "  [%s] %s: block %p not mmalloc's: mm_malloc_usable_size -> status %d, \"%s%s\"\n",
                 MODE, what, p, r.status, r.out.c_str(), r.err.c_str());
  return ok;
}

// p was a live mmalloc block and has been given back to mmalloc.
bool released(const char *what, void *p) {
  child_result r = in_child([&] { mm.free(opaque(p)); });
  bool ok = WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT && r.err.rfind("mmalloc: ", 0) == 0;
  if (!ok)
    std::fprintf(stderr, "  [%s] %s: block %p still live in mmalloc (mm_free again: status %d, \"%s\")\n",
                 MODE, what, p, r.status, r.err.c_str());
  return ok;
}

// ---- who defines each entry point ------------------------------------------------
std::string main_object;

bool defined_by_mmalloc(const char *name, const void *fn) {
  Dl_info info;
  if (!dladdr(fn, &info) || !info.dli_fname) {
    std::fprintf(stderr, "  [%s] dladdr(%s) failed\n", MODE, name);
    return false;
  }
#ifdef MODE_STATIC
  bool ok = main_object == info.dli_fname;
  const char *want = "the program (libmmalloc.a)";
#else
  bool ok = std::strstr(info.dli_fname, "libmmalloc.so") != nullptr;
  const char *want = "libmmalloc.so";
#endif
  if (!ok) std::fprintf(stderr, "  [%s] %s is defined by %s, not %s\n", MODE, name, info.dli_fname, want);
  return ok;
}

#define ENTRY(fn) {#fn, reinterpret_cast<const void *>(fn)}
struct entry {
  const char *name;
  const void *fn;
};

void test_definitions();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // mallinfo: deprecated, still replaced
void test_definitions() {
  Dl_info self;
  dladdr(reinterpret_cast<const void *>(&test_definitions), &self);
  main_object = self.dli_fname ? self.dli_fname : "";
  using std::size_t;
  using std::nothrow_t;
  using std::align_val_t;
  const entry entries[] = {
      ENTRY(&malloc),
      ENTRY(&free),
      ENTRY(&calloc),
      ENTRY(&realloc),
      ENTRY(&reallocarray),
      ENTRY(&posix_memalign),
      ENTRY(&aligned_alloc),
      ENTRY(&memalign),
      ENTRY(&valloc),
      ENTRY(&pvalloc),
      ENTRY(&malloc_usable_size),
      ENTRY(&malloc_trim),
      ENTRY(&__libc_malloc),
      ENTRY(&__libc_free),
      ENTRY(&__libc_calloc),
      ENTRY(&__libc_realloc),
      ENTRY(&__libc_memalign),
      ENTRY(&__libc_valloc),
      ENTRY(&__libc_pvalloc),
      ENTRY(&mallinfo2),
      ENTRY(&mallinfo),
      ENTRY(&malloc_stats),
      ENTRY(&malloc_info),
      ENTRY(&mallopt),
      ENTRY(static_cast<void *(*)(size_t)>(&::operator new)),
      ENTRY(static_cast<void *(*)(size_t)>(&::operator new[])),
      ENTRY(static_cast<void *(*)(size_t, const nothrow_t &) noexcept>(&::operator new)),
      ENTRY(static_cast<void *(*)(size_t, const nothrow_t &) noexcept>(&::operator new[])),
      ENTRY(static_cast<void *(*)(size_t, align_val_t)>(&::operator new)),
      ENTRY(static_cast<void *(*)(size_t, align_val_t)>(&::operator new[])),
      ENTRY(static_cast<void *(*)(size_t, align_val_t, const nothrow_t &) noexcept>(&::operator new)),
      ENTRY(static_cast<void *(*)(size_t, align_val_t, const nothrow_t &) noexcept>(&::operator new[])),
      ENTRY(static_cast<void (*)(void *) noexcept>(&::operator delete)),
      ENTRY(static_cast<void (*)(void *) noexcept>(&::operator delete[])),
      ENTRY(static_cast<void (*)(void *, size_t) noexcept>(&::operator delete)),
      ENTRY(static_cast<void (*)(void *, size_t) noexcept>(&::operator delete[])),
      ENTRY(static_cast<void (*)(void *, const nothrow_t &) noexcept>(&::operator delete)),
      ENTRY(static_cast<void (*)(void *, const nothrow_t &) noexcept>(&::operator delete[])),
      ENTRY(static_cast<void (*)(void *, align_val_t) noexcept>(&::operator delete)),
      ENTRY(static_cast<void (*)(void *, align_val_t) noexcept>(&::operator delete[])),
      ENTRY(static_cast<void (*)(void *, size_t, align_val_t) noexcept>(&::operator delete)),
      ENTRY(static_cast<void (*)(void *, size_t, align_val_t) noexcept>(&::operator delete[])),
      ENTRY(static_cast<void (*)(void *, align_val_t, const nothrow_t &) noexcept>(&::operator delete)),
      ENTRY(static_cast<void (*)(void *, align_val_t, const nothrow_t &) noexcept>(&::operator delete[])),
  };
  for (const entry &e : entries) CHECK("entry point defined by mmalloc (dladdr)", defined_by_mmalloc(e.name, e.fn));
}
#pragma GCC diagnostic pop

// ---- blocks from every standard entry point are mmalloc's --------------------------
void test_allocators() {
  void *p = malloc(opaque<std::size_t>(100));
  CHECK("malloc: mmalloc block", owned("malloc(100)", p, 100));
  free(p);
  p = malloc(opaque<std::size_t>(100 * KiB));
  CHECK("malloc large: mmalloc block", owned("malloc(100 KiB)", p, 100 * KiB));
  free(p);
  p = calloc(10, opaque<std::size_t>(10));
  CHECK("calloc: mmalloc block", owned("calloc(10, 10)", p, 100));
  free(p);
  p = realloc(nullptr, opaque<std::size_t>(100));
  CHECK("realloc(NULL): mmalloc block", owned("realloc(NULL, 100)", p, 100));
  free(p);
  p = reallocarray(nullptr, 10, opaque<std::size_t>(10));
  CHECK("reallocarray(NULL): mmalloc block", owned("reallocarray(NULL, 10, 10)", p, 100));
  free(p);
  p = nullptr;
  int rc = posix_memalign(&p, 64, opaque<std::size_t>(100));
  CHECK("posix_memalign: mmalloc block", rc == 0 && owned("posix_memalign(64, 100)", p, 100));
  free(p);
  p = aligned_alloc(64, opaque<std::size_t>(128));
  CHECK("aligned_alloc: mmalloc block", owned("aligned_alloc(64, 128)", p, 128));
  free(p);
  p = memalign(64, opaque<std::size_t>(100));
  CHECK("memalign: mmalloc block", owned("memalign(64, 100)", p, 100));
  free(p);
  p = valloc(opaque<std::size_t>(100));
  CHECK("valloc: mmalloc block", owned("valloc(100)", p, 100));
  free(p);
  p = pvalloc(opaque<std::size_t>(100));
  CHECK("pvalloc: mmalloc block of a whole page", owned("pvalloc(100)", p, 4096));
  CHECK("malloc_usable_size(pvalloc(100)) >= 4096", p && malloc_usable_size(p) >= 4096);
  free(p);

  // realloc of an mmalloc block (glibc's realloc would not know it)
  p = mm.malloc(100);
  std::memset(p, 0x21, 100);
  void *q = realloc(p, opaque<std::size_t>(5000));
  CHECK("realloc(mm_malloc block): mmalloc block, contents kept",
        owned("realloc(p, 5000)", q, 5000) && static_cast<unsigned char *>(q)[99] == 0x21);
  free(q);

  // malloc_usable_size is mmalloc's: same answers, and mmalloc's error for a stack pointer
  p = mm.malloc(1000);
  CHECK("malloc_usable_size == mm_malloc_usable_size", malloc_usable_size(p) == mm.usable(p));
  mm.free(p);
  child_result r = in_child([] {
    int local = 0;
    std::printf("%zu\n", malloc_usable_size(opaque<void *>(&local)));
  });
  CHECK("malloc_usable_size(stack pointer): mmalloc's error",
        r.err.rfind("mmalloc: malloc_usable_size(): ", 0) == 0 && WIFSIGNALED(r.status));
  r = in_child([] {
    int local = 0;
    free(opaque<void *>(&local));
  });
  CHECK("free(stack pointer): mmalloc's error", r.err.rfind("mmalloc: free(): ", 0) == 0 && WIFSIGNALED(r.status));

  // free and realloc(p, 0) give mmalloc blocks back
  p = mm.malloc(48);
  free(p);
  CHECK("free gives the block back to mmalloc", released("free(mm_malloc(48))", p));
  p = mm.malloc(48);
  q = realloc(p, opaque<std::size_t>(0));
  CHECK("realloc(p, 0) gives the block back to mmalloc", q == nullptr && released("realloc(p, 0)", p));
}

// ---- libc's own allocations go to mmalloc too ------------------------------------------
// glibc's own names: their blocks are mmalloc's, freed by free(), and
// __libc_free frees malloc's (with glibc's, either way aborted in free)
void test_libc_names() {
  void *p = __libc_malloc(opaque<std::size_t>(100));
  CHECK("__libc_malloc: mmalloc block", owned("__libc_malloc(100)", p, 100));
  free(p);
  p = __libc_calloc(opaque<std::size_t>(10), 10);
  CHECK("__libc_calloc: mmalloc block, zeroed", owned("__libc_calloc(10, 10)", p, 100) &&
                                                    static_cast<unsigned char *>(p)[99] == 0);
  p = __libc_realloc(p, opaque<std::size_t>(1000));
  CHECK("__libc_realloc: mmalloc block", owned("__libc_realloc(p, 1000)", p, 1000));
  free(p);
  p = __libc_memalign(64, opaque<std::size_t>(100));
  CHECK("__libc_memalign: mmalloc block, aligned", owned("__libc_memalign(64, 100)", p, 100) &&
                                                       reinterpret_cast<std::uintptr_t>(p) % 64 == 0);
  free(p);
  p = __libc_valloc(opaque<std::size_t>(100));
  CHECK("__libc_valloc: mmalloc block", owned("__libc_valloc(100)", p, 100));
  free(p);
  p = __libc_pvalloc(opaque<std::size_t>(100));
  CHECK("__libc_pvalloc: mmalloc block of a page", owned("__libc_pvalloc(100)", p, 4096));
  free(p);
  p = malloc(opaque<std::size_t>(100));
  __libc_free(p);
  CHECK("__libc_free gave malloc's block back to mmalloc", released("__libc_free", p));
}

// C23's free_sized and free_aligned_sized: mmalloc's, checking the pointer
// as free does (the size and alignment are hints)
void test_sized_frees() {
  using free_sized_fn = void (*)(void *, std::size_t);
  using free_aligned_sized_fn = void (*)(void *, std::size_t, std::size_t);
#ifdef MODE_PRELOAD
  auto fs = reinterpret_cast<free_sized_fn>(dlsym(RTLD_DEFAULT, "free_sized"));
  auto fas = reinterpret_cast<free_aligned_sized_fn>(dlsym(RTLD_DEFAULT, "free_aligned_sized"));
#else
  free_sized_fn fs = test_free_sized;
  free_aligned_sized_fn fas = test_free_aligned_sized;
#endif
  CHECK("free_sized and free_aligned_sized found", fs && fas);
  if (!fs || !fas) return;
  CHECK("free_sized defined by mmalloc (dladdr)", defined_by_mmalloc("free_sized", reinterpret_cast<const void *>(fs)));
  CHECK("free_aligned_sized defined by mmalloc (dladdr)",
        defined_by_mmalloc("free_aligned_sized", reinterpret_cast<const void *>(fas)));
  void *p = malloc(opaque<std::size_t>(100));
  fs(p, 100);
  CHECK("free_sized gave the block back to mmalloc", released("free_sized", p));
  p = aligned_alloc(64, opaque<std::size_t>(128));
  fas(p, 64, 128);
  CHECK("free_aligned_sized gave the block back to mmalloc", released("free_aligned_sized", p));
  fs(nullptr, 5);
  fas(nullptr, 64, 5);
  child_result r = in_child([&] {
    int x = 0;
    fs(opaque(static_cast<void *>(&x)), sizeof x);
  });
  CHECK("free_sized(stack pointer): one line naming free_sized",
        WIFSIGNALED(r.status) && r.err.rfind("mmalloc: free_sized(): ", 0) == 0);
}

void test_libc_internal() {
  char *s = strdup(opaque<const char *>("an mmalloc string"));
  CHECK("strdup (libc calls malloc): mmalloc block", owned("strdup", s, 18));
  free(s);
  char *a = nullptr;
  int n = asprintf(&a, "%s-%d", "asprintf", 12345);
  CHECK("asprintf: mmalloc block", n > 0 && owned("asprintf", a, static_cast<std::size_t>(n) + 1));
  free(a);
  char *line = nullptr;
  std::size_t cap = 0;
  FILE *f = fmemopen(const_cast<char *>("first line\nsecond\n"), 18, "r");
  CHECK("fmemopen", f != nullptr);
  if (f) {
    ssize_t got = getline(&line, &cap, f);
    CHECK("getline buffer: mmalloc block", got == 11 && owned("getline", line, cap));
    std::fclose(f);
  }
  free(line);
  char *mem = nullptr;
  std::size_t memsize = 0;
  FILE *ms = open_memstream(&mem, &memsize);
  if (ms) {
    for (int i = 0; i < 1000; i++) std::fprintf(ms, "%d,", i);
    std::fclose(ms);
  }
  CHECK("open_memstream buffer: mmalloc block", ms && owned("open_memstream", mem, memsize));
  free(mem);
  char *rp = realpath("/", nullptr);
  CHECK("realpath(path, NULL): mmalloc block", rp && owned("realpath", rp, 2));
  free(rp);
}

// ---- C++ operators -------------------------------------------------------------------
void test_cxx() {
  int *i = new int(5);
  CHECK("new: mmalloc block", owned("new int", i, sizeof(int)));
  delete i;
  int *arr = new int[1000];
  CHECK("new[]: mmalloc block", owned("new int[1000]", arr, 1000 * sizeof(int)));
  delete[] arr;
  void *p = ::operator new(opaque<std::size_t>(40), std::nothrow);
  CHECK("new(nothrow): mmalloc block", owned("operator new(40, nothrow)", p, 40));
  ::operator delete(p);
  p = ::operator new[](opaque<std::size_t>(40), std::nothrow);
  CHECK("new[](nothrow): mmalloc block", owned("operator new[](40, nothrow)", p, 40));
  ::operator delete[](p);
  for (std::size_t a : {std::size_t{64}, std::size_t{4096}}) {
    p = ::operator new(opaque<std::size_t>(100), std::align_val_t(a));
    CHECK("new(align_val_t): mmalloc block, aligned",
          owned("operator new(100, align)", p, 100) && reinterpret_cast<std::uintptr_t>(p) % a == 0);
    ::operator delete(p, std::align_val_t(a));
    p = ::operator new[](opaque<std::size_t>(100), std::align_val_t(a), std::nothrow);
    CHECK("new[](align_val_t, nothrow): mmalloc block, aligned",
          owned("operator new[](100, align, nothrow)", p, 100) && reinterpret_cast<std::uintptr_t>(p) % a == 0);
    ::operator delete[](p, std::align_val_t(a));
  }
  std::string s(5000, 'z');
  CHECK("std::string storage: mmalloc block", owned("std::string(5000)", s.data(), 5000));

  // Each operator delete gives an mmalloc block back to mmalloc.
  p = mm.malloc(40); ::operator delete(p);
  CHECK("operator delete(p)", released("operator delete(p)", p));
  p = mm.malloc(40); ::operator delete[](p);
  CHECK("operator delete[](p)", released("operator delete[](p)", p));
  p = mm.malloc(40); ::operator delete(p, std::size_t{40});
  CHECK("operator delete(p, size)", released("operator delete(p, size)", p));
  p = mm.malloc(40); ::operator delete[](p, std::size_t{40});
  CHECK("operator delete[](p, size)", released("operator delete[](p, size)", p));
  p = mm.malloc(40); ::operator delete(p, std::nothrow);
  CHECK("operator delete(p, nothrow)", released("operator delete(p, nothrow)", p));
  p = mm.malloc(40); ::operator delete[](p, std::nothrow);
  CHECK("operator delete[](p, nothrow)", released("operator delete[](p, nothrow)", p));
  const std::align_val_t al{256};
  p = mm.aligned_alloc(256, 256); ::operator delete(p, al);
  CHECK("operator delete(p, align)", released("operator delete(p, align)", p));
  p = mm.aligned_alloc(256, 256); ::operator delete[](p, al);
  CHECK("operator delete[](p, align)", released("operator delete[](p, align)", p));
  p = mm.aligned_alloc(256, 256); ::operator delete(p, std::size_t{256}, al);
  CHECK("operator delete(p, size, align)", released("operator delete(p, size, align)", p));
  p = mm.aligned_alloc(256, 256); ::operator delete[](p, std::size_t{256}, al);
  CHECK("operator delete[](p, size, align)", released("operator delete[](p, size, align)", p));
  p = mm.aligned_alloc(256, 256); ::operator delete(p, al, std::nothrow);
  CHECK("operator delete(p, align, nothrow)", released("operator delete(p, align, nothrow)", p));
  p = mm.aligned_alloc(256, 256); ::operator delete[](p, al, std::nothrow);
  CHECK("operator delete[](p, align, nothrow)", released("operator delete[](p, align, nothrow)", p));
}

// ---- the statistics agree: each standard call made one large block --------------------
double large_allocs() {
  char buf[1 << 15];
  std::size_t n = mm.stats_json(buf, sizeof buf);
  if (n >= sizeof buf) return -1;
  const char *t = std::strstr(buf, "\"total\":");
  const char *k = t ? std::strstr(t, "\"large_allocs\":") : nullptr;
  return k ? std::strtod(k + 15, nullptr) : -1;
}

void test_stats_agree() {
  struct call {
    const char *name;
    void *(*fn)(std::size_t);
  };
  const call calls[] = {
      {"malloc", [](std::size_t n) { return malloc(n); }},
      {"calloc", [](std::size_t n) { return calloc(1, n); }},
      {"realloc(NULL)", [](std::size_t n) { return realloc(nullptr, n); }},
      {"reallocarray(NULL)", [](std::size_t n) { return reallocarray(nullptr, 1, n); }},
      {"posix_memalign", [](std::size_t n) { void *p = nullptr; return posix_memalign(&p, 4096, n) ? nullptr : p; }},
      {"aligned_alloc", [](std::size_t n) { return aligned_alloc(4096, n); }},
      {"memalign", [](std::size_t n) { return memalign(4096, n); }},
      {"valloc", [](std::size_t n) { return valloc(n); }},
      {"pvalloc", [](std::size_t n) { return pvalloc(n); }},
      {"operator new", [](std::size_t n) { return ::operator new(n); }},
      {"operator new[]", [](std::size_t n) { return ::operator new[](n); }},
  };
  for (const call &c : calls) {
    double before = large_allocs();
    void *p = c.fn(opaque<std::size_t>(100 * KiB));
    double after = large_allocs();
    if (after != before + 1)
      std::fprintf(stderr, "  [%s] %s(100 KiB): large_allocs %.0f -> %.0f\n", MODE, c.name, before, after);
    CHECK("mm_stats_json counts the large block a standard call returned", before >= 0 && after == before + 1);
    mm.free(p);
  }
}

// ---- glibc's introspection answers from mmalloc's numbers --------------------------
// (in the static mode, calling these at all proves that linking them does
// not pull glibc's malloc in beside mmalloc's: the link failed before)
// mallinfo2 and mm_memory read at one moment: between two equal readings of
// mm_memory (a purge by the purge thread may change resident in between).
struct mallinfo2 mallinfo2_at(mm_memory_t *m) {
  for (int tries = 0;; tries++) {
    mm_memory_t before, after;
    mm.memory(&before);
    struct mallinfo2 mi = mallinfo2();
    mm.memory(&after);
    if (std::memcmp(&before, &after, sizeof before) == 0 || tries == 1000) {
      *m = after;
      return mi;
    }
  }
}

void test_introspection() {
  const std::size_t small = 1000, nsmall = 200, large = 256 * KiB, huge = 64 * 1024 * KiB;
  mm_memory_t m;
  struct mallinfo2 a = mallinfo2_at(&m);
  CHECK("mallinfo2: arena + hblkhd is mm_memory's resident", a.arena + a.hblkhd == m.resident);
  CHECK("mallinfo2: uordblks + hblkhd is mm_memory's live", a.uordblks + a.hblkhd == m.live);
  CHECK("mallinfo2: uordblks + fordblks is arena", a.uordblks + a.fordblks == a.arena);
  CHECK("mm_memory: resident is live, free, slack and metadata",
        m.resident == m.live + m.free_resident + m.page_slack + m.metadata);
  void *p[nsmall];
  for (std::size_t i = 0; i < nsmall; i++) p[i] = malloc(opaque(small));
  void *l = malloc(opaque(large)), *h = malloc(opaque(huge));
  mm_memory_t mb;
  struct mallinfo2 b = mallinfo2_at(&mb);
  CHECK("mallinfo2: a 64 MiB block is in hblkhd (a mapping of its own)", b.hblkhd >= huge && mb.huge_live >= huge);
  CHECK("mallinfo2 with a huge block live: arena + hblkhd is resident", b.arena + b.hblkhd == mb.resident);
  CHECK("mallinfo2 with a huge block live: uordblks + hblkhd is live", b.uordblks + b.hblkhd == mb.live);
  std::size_t in_use_a = a.uordblks + a.hblkhd, in_use_b = b.uordblks + b.hblkhd;
  if (in_use_b < in_use_a + nsmall * small + large + huge)
    std::fprintf(stderr, "  [%s] in use %zu -> %zu\n", MODE, in_use_a, in_use_b);
  CHECK("mallinfo2 counts the blocks handed out", in_use_b >= in_use_a + nsmall * small + large + huge);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  struct mallinfo old = mallinfo();
#pragma GCC diagnostic pop
  struct mallinfo2 b2 = mallinfo2();
  CHECK("mallinfo: the same numbers in int", (std::size_t)old.uordblks == b2.uordblks &&
                                                  (std::size_t)old.hblkhd == b2.hblkhd &&
                                                  (std::size_t)old.arena == b2.arena);
  for (std::size_t i = 0; i < nsmall; i++) free(p[i]);
  free(l);
  free(h);
  struct mallinfo2 c = mallinfo2();
  CHECK("mallinfo2: freed blocks leave in use", c.uordblks + c.hblkhd + large + huge <= in_use_b);
  // malloc_info: XML whose current size is the resident size
  char *xml = nullptr;
  std::size_t xml_len = 0;
  FILE *f = open_memstream(&xml, &xml_len);
  int r = f ? malloc_info(0, f) : -1;
  if (f) std::fclose(f);
  mm.memory(&m);
  std::size_t current = 0;
  const char *at = xml ? std::strstr(xml, "<system type=\"current\" size=\"") : nullptr;
  if (at) current = std::strtoull(at + std::strlen("<system type=\"current\" size=\""), nullptr, 10);
  CHECK("malloc_info(0) writes mmalloc's XML", r == 0 && xml && std::strncmp(xml, "<malloc version=\"mmalloc-", 25) == 0);
  // open_memstream's own buffer may have grown after the figure was read
  CHECK("malloc_info: current size is the resident size", at && current <= m.resident + 64 * KiB &&
                                                              current + 64 * KiB >= m.resident);
  free(xml);
  FILE *g = std::tmpfile();
  errno = 0;
  CHECK("malloc_info(1) is refused with EINVAL", g && malloc_info(1, g) == -1 && errno == EINVAL);
  if (g) std::fclose(g);
  FILE *ro = std::fopen("/dev/null", "r");  // a stream that cannot be written: the write fails
  CHECK("malloc_info to a stream it cannot write says so (-1)", ro && malloc_info(0, ro) == -1);
  if (ro) std::fclose(ro);
  // malloc_stats: mmalloc's table on stderr
  child_result st = in_child([] { malloc_stats(); });
  CHECK("malloc_stats prints mmalloc's table on stderr",
        st.status == 0 && st.err.find("mmalloc statistics") != std::string::npos);
  // mallopt: glibc's parameters accepted, a fast-bin size out of range refused
  CHECK("mallopt(M_ARENA_MAX) accepted", mallopt(M_ARENA_MAX, 2) == 1);
  CHECK("mallopt(M_MMAP_THRESHOLD) accepted", mallopt(M_MMAP_THRESHOLD, 1 << 20) == 1);
  CHECK("mallopt(M_MXFAST, -1) refused", mallopt(M_MXFAST, -1) == 0);
}

}  // namespace

int main() {
  if (!mm_lookup()) {
    std::fprintf(stderr, "[%s] mmalloc's mm_ functions not found: is libmmalloc loaded?\n", MODE);
    CHECK("mmalloc loaded", false);
    return check_summary("api_override_" MODE);
  }
  test_definitions();
  test_allocators();
  test_libc_internal();
  test_libc_names();
  test_sized_frees();
  test_cxx();
  test_stats_agree();
  test_introspection();
  return check_summary("api_override_" MODE);
}
