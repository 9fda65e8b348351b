/* failalloc.c — an allocator for burst.c's test, preloaded under the
 * recorder: it fails every malloc of 77 bytes and calloc of 7 x 11 with
 * ENOMEM and hands every other call to the C library's own functions.  Its
 * free, as some allocators' do, calls into the malloc family through the
 * global symbols (a free(NULL), which comes back through the recorder): the
 * recorder must not record that call, which it makes inside a traced one. */
#include <errno.h>
#include <stddef.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t k, size_t n);
void __libc_free(void *p);
void free(void *p);

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

/* the global free, through a pointer the compiler cannot see through (a
 * direct free(NULL) here would be folded into this function) */
static void (*volatile again)(void *) = free;

void free(void *p) {
  if (!p) return;
  __libc_free(p);
  again(NULL);
}
