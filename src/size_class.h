/* size_class.h — the size classes of small objects (size_class.c).
 *
 * Layer: page.  Pure arithmetic over a table built once at start-up.
 */
#ifndef MM_SIZE_CLASS_H
#define MM_SIZE_CLASS_H

#include "os.h"

MM_HIDDEN_BEGIN

/* A size class: objects of `size` bytes in pages of `ndatablocks`
 * datablocks. */
typedef struct size_class_s {
  uint32_t size;
  uint32_t ndatablocks;
  uint32_t capacity;
  uint32_t align; /* largest power of two dividing size (block alignment) */
  uint64_t magic; /* ceil(2^64 / size) */
} size_class_t;

extern size_class_t mm_size_classes[MM_CLASSES];
extern uint8_t mm_direct_class[MM_DIRECT_SLOTS];
extern uint8_t mm_medium_class[MM_MEDIUM_SLOTS];

void size_class_init(void);
unsigned size_class_of_slow(size_t n);
bool size_class_is_valid(char *why, size_t why_size);

/* The class of n in (MM_DIRECT_MAX, MM_SMALL_MAX]: n rounded up to a
 * multiple of MM_MEDIUM_STEP has the same smallest fitting class, every
 * class size there being such a multiple. */
MM_INLINE unsigned size_class_of_medium(size_t n) {
  return mm_medium_class[(n + MM_MEDIUM_STEP - 1) / MM_MEDIUM_STEP];
}

/* The smallest class whose blocks hold n bytes (0 < n <= MM_SMALL_MAX). */
MM_INLINE unsigned size_class_of(size_t n) {
  if (n <= MM_DIRECT_MAX) return mm_direct_class[(n + 15) >> 4];
  return size_class_of_medium(n);
}

/* The class a block that realloc grows to n bytes takes (0 < n <=
 * MM_SMALL_MAX): n's own, but a quarter class where n's own is the one an
 * eighth above a power of two (config.h): an array growing through the
 * sizes then visits the classes it would without those, each of which
 * keeps a page of free blocks only it reuses, and it will likely grow
 * again. */
MM_INLINE unsigned size_class_of_growing(size_t n) {
  unsigned c = size_class_of(n);
  return c >= MM_CLASS_FINE && (c - MM_CLASS_FINE) % 5 == 0 ? c + 1 : c;
}

/* The smallest class of at least n bytes (n <= MM_SMALL_MAX; 0 gives the
 * first) whose blocks are all `align`-aligned: its size a multiple of
 * align, pages being datablock-aligned (align at most a datablock).
 * MM_CLASSES if none.  A few steps at most: every fourth class (every
 * fifth above 1 KiB) is a power of two. */
MM_INLINE unsigned size_class_aligned(size_t n, size_t align) {
  if (n > MM_SMALL_MAX) return MM_CLASSES;
  unsigned c = size_class_of(n ? n : 1);
  while (c < MM_CLASSES && mm_size_classes[c].align < align) c++;
  return c;
}

MM_HIDDEN_END

#endif
