/* names.h — one test source, two sets of names.
 *
 * Built with -DUSE_MM, F(malloc) is mm_malloc and the test exercises the
 * mm_-prefixed API of include/mmalloc.h; built without it, F(malloc) is the
 * standard malloc, which libmmalloc.so (linked into the test) replaces.
 * FREE_CALLS etc. are the CALL names the error line may carry.
 */
#ifndef MM_TEST_NAMES_H
#define MM_TEST_NAMES_H

#include <malloc.h>
#include <stdlib.h>

#include "mmalloc.h"

#ifdef USE_MM
#define F(name) mm_##name
#define API "mm_"
#define SUITE "api_mm"
#define FREE_CALLS "free|mm_free"
#define REALLOC_CALLS "realloc|mm_realloc"
#define USABLE_CALLS "malloc_usable_size|mm_malloc_usable_size"
#else
#define F(name) name
#define API "std"
#define SUITE "api_std"
#define FREE_CALLS "free"
#define REALLOC_CALLS "realloc"
#define USABLE_CALLS "malloc_usable_size"
#endif

#endif
