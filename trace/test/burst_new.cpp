// burst_new.cpp — dense bursts of the operators new and delete, for
// check_burst.py --new: traced over failalloc.c, whose malloc fails for 77
// bytes, so that operator new[](77) throws std::bad_alloc through the
// recorder's fast path, which must record it as failed and leave the
// traced call, and every other block gets its id.  Each round: 64
// allocations (i % 8 == 3: new[](77), which throws; other odd i:
// new[](100 + i); even i: new(40 + i)), then their deletes in reverse order,
// unsized and sized by turns; four rounds.
#include <cstdio>
#include <cstdlib>
#include <new>

int main() {
  void *p[64];
  for (int r = 0; r < 4; r++) {
    for (int i = 0; i < 64; i++) {
      if (i % 8 == 3) {
        try {
          p[i] = ::operator new[](77);
          std::fprintf(stderr, "burst_new: new[](77) did not throw\n");
          return 1;
        } catch (const std::bad_alloc &) {
          p[i] = nullptr;
        }
      } else if (i % 2) {
        p[i] = ::operator new[](100 + (size_t)i);
      } else {
        p[i] = ::operator new(40 + (size_t)i);
      }
    }
    for (int i = 63; i >= 0; i--) {
      if (!p[i]) continue;
      if (i % 4 == 1) ::operator delete[](p[i]);
      else if (i % 4 == 3) ::operator delete[](p[i], 100 + (size_t)i);
      else if (i % 4 == 0) ::operator delete(p[i]);
      else ::operator delete(p[i], 40 + (size_t)i);
    }
  }
  return 0;
}
