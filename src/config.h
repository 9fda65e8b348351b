/* config.h — every compile-time knob of mmalloc, in one place.
 *
 * Layer: none (included by every layer).  Values that CMake sets (MM_DEBUG,
 * MM_SECURE, MM_VALGRIND, MM_FAULT_INJECTION) arrive as -D definitions; the
 * rest are fixed here with the reason for their value.
 */
#ifndef MM_CONFIG_H
#define MM_CONFIG_H

/* Debug level: 0 none, 1 API misuse, 2 internal logic, 3 whole-structure
 * walks on entry and exit of mutators.  Corruption checks (bad pointer,
 * double free) are on at every level. */
#ifndef MM_DEBUG
#define MM_DEBUG 0
#endif
#ifndef MM_SECURE
#define MM_SECURE 0
#endif
#ifndef MM_VALGRIND
#define MM_VALGRIND 0
#endif
#ifndef MM_FAULT_INJECTION
#define MM_FAULT_INJECTION 0
#endif

/* A datablock (the paper's unit of the interval tree): 4 KiB, the OS page. */
#define MM_PAGE_SHIFT 12
#define MM_PAGE_SIZE ((size_t)1 << MM_PAGE_SHIFT)

#endif
