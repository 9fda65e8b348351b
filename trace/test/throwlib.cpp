// throwlib — a C++ library a C program loads with dlopen (RTLD_LOCAL): its
// function asks operator new[] for more than can be had and catches the
// bad_alloc, which unwinds through the recorder's frames when traced.
#include <cstddef>
#include <new>
extern "C" int throwlib_try(size_t n) {
  try {
    char *volatile p = new char[n];
    delete[] p;
    return 0;
  } catch (const std::bad_alloc &) {
    return 1;
  }
}
