/* dlthrow — a C program that loads a C++ library with dlopen and
 * RTLD_LOCAL (as an interpreter loads an extension) and calls its
 * throwlib_try (throwlib.cpp), whose operator new[] throws bad_alloc and is
 * caught there: under the recorder, the library's operator new finds the
 * recorder's, which must find the C++ library's own outside the global
 * scope, and the exception must unwind through the recorder's frames.
 * Prints caught=1 and exits 0 when it was caught. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlthrow: dlopen: %s\n", dlerror());
    return 2;
  }
  int (*try_new)(size_t) = (int (*)(size_t))dlsym(h, "throwlib_try");
  if (!try_new) return 2;
  int caught = try_new(SIZE_MAX / 2);
  printf("caught=%d\n", caught);
  return caught ? 0 : 1;
}
