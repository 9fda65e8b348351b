// delete.cpp — operator delete with a bad pointer or twice: one clear line,
// then abort() (label robust).  The C++ side of badptr.c: the same format,
//     mmalloc: operator delete(): WHAT 0xHEX       (or operator delete[]())
// with WHAT containing "invalid pointer" or "double free".
//
// usage: robust_delete [CASE | --list]
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>

#include "api/harness.h"
extern "C" {
#include "check.h"
}

namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

// Called before the first delete (printf may allocate stdio's buffer).
void report(const void *p) {
  std::printf("pointer %p\n", p);
  std::fflush(stdout);
}

struct del_case {
  const char *name;
  const char *call; // expected CALL
  const char *what; // expected part of WHAT
  void (*run)();
};

void *fresh(std::size_t n) {
  void *p = ::operator new(n);
  std::memset(p, 0x5C, n);
  return p;
}

const del_case cases[] = {
    {"delete-stack", "operator delete", "invalid pointer",
     [] { int local[4] = {0}; void *p = opaque_ptr(&local[1]); report(p); ::operator delete(p); }},
    {"delete-interior-small", "operator delete", "invalid pointer",
     [] { char *p = static_cast<char *>(fresh(64)) + 16; report(p); ::operator delete(opaque_ptr(p)); }},
    {"delete[]-interior-large", "operator delete[]", "invalid pointer",
     [] { char *p = static_cast<char *>(::operator new[](200 * KiB)) + 4096; report(p); ::operator delete[](opaque_ptr(p)); }},
    {"sized-delete-interior-huge", "operator delete", "invalid pointer",
     [] { char *p = static_cast<char *>(fresh(40 * MiB)) + 64; report(p); ::operator delete(opaque_ptr(p), std::size_t{1000}); }},
    {"aligned-delete-interior", "operator delete", "invalid pointer",
     [] { char *p = static_cast<char *>(::operator new(256, std::align_val_t(128))) + 128; report(p); ::operator delete(opaque_ptr(p), std::align_val_t(128)); }},
    {"double-delete-small", "operator delete", "double free",
     [] { void *p = fresh(40); report(p); ::operator delete(opaque_ptr(p)); ::operator delete(opaque_ptr(p)); }},
    {"double-delete[]-small", "operator delete[]", "double free",
     [] { void *p = ::operator new[](100); report(p); ::operator delete[](opaque_ptr(p)); ::operator delete[](opaque_ptr(p)); }},
    {"double-sized-delete-small", "operator delete", "double free",
     [] { void *p = fresh(24); report(p); ::operator delete(opaque_ptr(p), std::size_t{24}); ::operator delete(opaque_ptr(p), std::size_t{24}); }},
    {"double-delete-large", "operator delete", "double free",
     [] { void *p = fresh(100 * KiB); void *fence = fresh(100 * KiB); report(p); ::operator delete(opaque_ptr(p)); ::operator delete(opaque_ptr(p)); ::operator delete(fence); }},
    {"double-delete-huge", "operator delete", "double free",
     [] { void *p = fresh(40 * MiB); report(p); ::operator delete(opaque_ptr(p)); ::operator delete(opaque_ptr(p)); }},
    {"double-aligned-delete", "operator delete", "double free",
     [] { void *p = ::operator new(256, std::align_val_t(64)); report(p); ::operator delete(opaque_ptr(p), std::align_val_t(64)); ::operator delete(opaque_ptr(p), std::align_val_t(64)); }},
};

child_t child;

void run_case(void *arg) {
  std::printf("case %s\n", static_cast<const del_case *>(arg)->name);
  std::fflush(stdout);
  static_cast<const del_case *>(arg)->run();
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "--list") == 0) {
    for (const del_case &c : cases) std::printf("%s\n", c.name);
    return 0;
  }
  if (argc > 1) {
    for (const del_case &c : cases)
      if (std::strcmp(c.name, argv[1]) == 0) {
        c.run();
        return 0;
      }
    std::fprintf(stderr, "no case %s (--list)\n", argv[1]);
    return 2;
  }
  for (const del_case &c : cases) {
    child_run(&child, run_case, const_cast<del_case *>(&c));
    void *passed = nullptr;
    char why[512] = "";
    bool ok;
    const char *ptr = std::strstr(child.out, "pointer ");
    if (!ptr || std::sscanf(ptr, "pointer %p", &passed) != 1) {
      std::snprintf(why, sizeof why, "the case did not get as far as the call");
      ok = false;
    } else if (!child_aborted(&child)) {
      std::snprintf(why, sizeof why, "the child was not killed by SIGABRT");
      ok = false;
    } else {
      ok = bad_pointer_line(child.err, c.call, c.what, passed, why, sizeof why);
    }
    if (!ok) {
      std::fprintf(stderr, "FAIL case %s: %s\n", c.name, why);
      child_describe(&child, c.name);
    }
    CHECK(c.name, ok);
  }
  return check_summary("robust_delete");
}
