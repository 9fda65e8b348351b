/* failalloc.c — an allocator for burst.c's test, preloaded under the
 * recorder: it fails every malloc of 77 bytes and calloc of 7 x 11 with
 * ENOMEM and hands every other call to the C library's own functions. */
#include <errno.h>
#include <stddef.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t k, size_t n);

void *malloc(size_t n) {
  if (n == 77) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_malloc(n);
}

void *calloc(size_t k, size_t n) {
  if (k == 7 && n == 11) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_calloc(k, n);
}
