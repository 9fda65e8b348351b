// cxx.cpp — C++ operator new/delete on mmalloc, black-box (label api).
//
// Linked to libmmalloc.so.  Every form of operator new must return a block
// that mmalloc owns (mm_malloc_usable_size answers for it; it aborts for a
// pointer mmalloc never handed out), aligned as asked; every operator delete
// must give the block back; nothrow forms return nullptr on impossible sizes;
// the throwing forms throw std::bad_alloc after calling the new_handler.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" {
#include "check.h"
#include "mmalloc.h"
}

namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

// Hide a size from the optimiser so that new(huge) is really called.
std::size_t opaque(std::size_t n) {
  __asm__ volatile("" : "+r"(n));
  return n;
}

bool aligned(const void *p, std::size_t a) { return (reinterpret_cast<std::uintptr_t>(p) & (a - 1)) == 0; }

// A block mmalloc owns reports a usable size >= what was asked.
bool owned(const void *p, std::size_t n) { return p && mm_malloc_usable_size(p) >= n; }

int destructed;
struct Counted {
  int v = 7;
  ~Counted() { destructed++; }
};
struct alignas(64) Line {
  char b[64];
};
struct alignas(4096) PageObj {
  char b[100];
};
struct alignas(128) Odd {
  char b[200];
  ~Odd() { destructed++; }
};

void plain_forms() {
  int *i = new int(42);
  long *li = new long[1000];
  CHECK("new long[1000]: owned by mmalloc", owned(li, 1000 * sizeof(long)));
  delete[] li;
  CHECK("new int: owned by mmalloc", owned(i, sizeof(int)));
  CHECK("new int: value", *i == 42);
  delete i;

  destructed = 0;
  Counted *arr = new Counted[100];
  // (arr is past the array cookie that holds the count: not the block's start)
  CHECK("new T[100]: constructed", arr[0].v == 7 && arr[99].v == 7);
  delete[] arr;
  CHECK("delete[]: 100 destructors", destructed == 100);

  // Sizes across the classes and beyond, through the operators directly.
  static const std::size_t sizes[] = {0, 1, 16, 100, 1000, 32 * KiB, 32 * KiB + 1, 100 * KiB, 40 * MiB};
  for (std::size_t n : sizes) {
    void *p = ::operator new(n);
    CHECK("operator new(n): owned", owned(p, n));
    std::memset(p, 0x33, n);
    ::operator delete(p);
    void *q = ::operator new[](n);
    CHECK("operator new[](n): owned", owned(q, n));
    ::operator delete[](q);
    void *r = ::operator new(n);
    ::operator delete(r, n);  // sized
    void *s = ::operator new[](n);
    ::operator delete[](s, n);  // sized array
    void *t = ::operator new(n, std::nothrow);
    CHECK("operator new(n, nothrow): owned", owned(t, n));
    ::operator delete(t, std::nothrow);
    void *u = ::operator new[](n, std::nothrow);
    CHECK("operator new[](n, nothrow): owned", owned(u, n));
    ::operator delete[](u, std::nothrow);
  }
  // delete of nullptr is a no-op in every form
  ::operator delete(nullptr);
  ::operator delete[](nullptr);
  ::operator delete(nullptr, std::align_val_t(64));
  delete static_cast<int *>(nullptr);
}

void aligned_forms() {
  Line *l = new Line;
  CHECK("new alignas(64): aligned", aligned(l, 64));
  CHECK("new alignas(64): owned", owned(l, sizeof(Line)));
  delete l;
  Line *ls = new Line[33];
  CHECK("new alignas(64)[33]: aligned", aligned(ls, 64));
  delete[] ls;
  PageObj *po = new PageObj;
  CHECK("new alignas(4096): aligned", aligned(po, 4096));
  CHECK("new alignas(4096): owned", owned(po, sizeof(PageObj)));
  delete po;
  PageObj *pos = new PageObj[5];
  CHECK("new alignas(4096)[5]: aligned", aligned(pos, 4096));
  delete[] pos;
  destructed = 0;
  Odd *odd = new Odd[10];  // aligned array with a cookie for the destructors
  CHECK("new alignas(128) T[10] with destructors: aligned", aligned(odd, 128));
  delete[] odd;
  CHECK("delete[] alignas(128) T[10]: 10 destructors", destructed == 10);
  Line *nl = new (std::nothrow) Line;
  CHECK("new (nothrow) alignas(64): aligned", nl && aligned(nl, 64));
  delete nl;

  int bad = 0;
  for (std::size_t a = 1; a <= 4 * MiB; a *= 2) {
    static const std::size_t sizes[] = {1, 100, 5000, 100 * KiB};
    for (std::size_t n : sizes) {
      std::align_val_t al{a};
      void *p = ::operator new(n, al);
      void *q = ::operator new[](n, al);
      void *r = ::operator new(n, al, std::nothrow);
      void *s = ::operator new[](n, al, std::nothrow);
      for (void *x : {p, q, r, s}) {
        if (!x || !aligned(x, a) || !owned(x, n)) bad++;
        else std::memset(x, 0x44, n);
      }
      ::operator delete(p, al);
      ::operator delete[](q, al);
      ::operator delete(r, al, std::nothrow);
      ::operator delete[](s, al, std::nothrow);
      void *t = ::operator new(n, al);
      ::operator delete(t, n, al);  // sized + aligned
      void *u = ::operator new[](n, al);
      ::operator delete[](u, n, al);
    }
  }
  CHECK("operator new(n, align_val_t) 1 B .. 4 MiB: aligned and owned", bad == 0);
}

int handler_calls;
void handler_gives_up() {
  if (++handler_calls == 3) std::set_new_handler(nullptr);
}
struct my_error {};
void handler_throws() {
  handler_calls++;
  throw my_error();
}

void failure_forms() {
  const std::size_t huge = opaque(SIZE_MAX / 2);
  void *p = ::operator new(huge, std::nothrow);
  CHECK("operator new(SIZE_MAX/2, nothrow) == nullptr", p == nullptr);
  p = ::operator new[](opaque(SIZE_MAX - 4096), std::nothrow);
  CHECK("operator new[](SIZE_MAX-4096, nothrow) == nullptr", p == nullptr);
  p = ::operator new(huge, std::align_val_t(64), std::nothrow);
  CHECK("operator new(SIZE_MAX/2, align 64, nothrow) == nullptr", p == nullptr);
  char *c = new (std::nothrow) char[huge];
  CHECK("new (nothrow) char[SIZE_MAX/2] == nullptr", c == nullptr);

  bool threw = false;
  try {
    p = ::operator new(huge);
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  CHECK("operator new(SIZE_MAX/2) throws std::bad_alloc", threw);
  threw = false;
  try {
    p = ::operator new[](huge);
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  CHECK("operator new[](SIZE_MAX/2) throws std::bad_alloc", threw);
  threw = false;
  try {
    p = ::operator new(huge, std::align_val_t(4096));
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  CHECK("operator new(SIZE_MAX/2, align 4096) throws std::bad_alloc", threw);
  threw = false;
  try {
    std::vector<char> v;
    v.reserve(opaque(PTRDIFF_MAX - 100));
  } catch (const std::bad_alloc &) {
    threw = true;
  } catch (const std::length_error &) {
    threw = true;  // libstdc++ may refuse before asking
  }
  CHECK("vector::reserve(huge) throws", threw);

  // The new_handler is called until it gives up; then bad_alloc.
  handler_calls = 0;
  std::set_new_handler(handler_gives_up);
  threw = false;
  try {
    p = ::operator new(huge);
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  CHECK("new_handler called until it uninstalls itself (3 calls)", handler_calls == 3);
  CHECK("then operator new throws std::bad_alloc", threw);
  CHECK("new_handler uninstalled", std::get_new_handler() == nullptr);

  // A handler that throws its own exception: it reaches the caller.
  handler_calls = 0;
  std::set_new_handler(handler_throws);
  bool mine = false;
  try {
    p = ::operator new(huge, std::align_val_t(64));
  } catch (const my_error &) {
    mine = true;
  }
  CHECK("aligned new: handler called once", handler_calls == 1);
  CHECK("aligned new: the handler's exception propagates", mine);
  // nothrow forms call the handler too, and turn its bad_alloc into nullptr
  handler_calls = 0;
  std::set_new_handler(handler_gives_up);
  p = ::operator new(huge, std::nothrow);
  CHECK("nothrow new calls the new_handler", handler_calls == 3);
  CHECK("nothrow new returns nullptr after the handler gives up", p == nullptr);
  std::set_new_handler(nullptr);
}

void containers() {
  std::map<std::string, std::vector<int>> m;
  for (int i = 0; i < 20000; i++) {
    std::string key = "key-" + std::to_string(i * 7919 % 20000) + std::string(i % 50, 'x');
    m[key].push_back(i);
  }
  long sum = 0;
  for (const auto &kv : m)
    for (int v : kv.second) sum += v + static_cast<long>(kv.first.size());
  long want = 0;
  for (int i = 0; i < 20000; i++) {
    want += i;
    want += static_cast<long>(("key-" + std::to_string(i * 7919 % 20000)).size() + i % 50);
  }
  CHECK("std::map<std::string, std::vector<int>> keeps every element", sum == want && m.size() == 20000);
  std::string big(3 * MiB, 'q');
  CHECK("std::string of 3 MiB owned by mmalloc", owned(big.data(), big.size()));
}

}  // namespace

int main() {
  plain_forms();
  aligned_forms();
  failure_forms();
  containers();
  return check_summary("api_cxx");
}
