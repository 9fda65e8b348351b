/* uspsc.h — what the farm needs of the unbounded queue beyond its public
 * calls.  Layer: stream (uspsc.c defines it; farm.c uses it).
 */
#ifndef MM_STREAM_USPSC_H
#define MM_STREAM_USPSC_H

#include <stdbool.h>

#include "mmalloc/stream.h"

/* Consumer: true when a pop would succeed (used in wait predicates). */
bool uspsc_has_item(mm_uspsc_t *q);

#endif /* MM_STREAM_USPSC_H */
