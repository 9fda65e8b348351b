/* lockq.h — the lock-based baseline queue's layout, shared by lockq.c and
 * queue.c (which reads its wait counter for the farm's statistics).
 *
 * Layer: stream, beside spsc.h.  See lockq.c for the protocol.
 */
#ifndef MM_STREAM_LOCKQ_H
#define MM_STREAM_LOCKQ_H

#include <pthread.h>
#include <stdint.h>

#include "mmalloc/stream.h"

struct mm_lockq {
  pthread_mutex_t mu;         /* guards every field below */
  pthread_cond_t not_empty;   /* signalled by a push when pop_waiters > 0 */
  pthread_cond_t not_full;    /* signalled by a pop when push_waiters > 0 */
  void **slots;               /* const after init */
  size_t mask;                /* const after init; capacity - 1 */
  size_t head, tail;          /* head <= tail <= head + capacity */
  unsigned pop_waiters;       /* threads in pthread_cond_wait(not_empty) */
  unsigned push_waiters;      /* threads in pthread_cond_wait(not_full) */
  bool closed;                /* set once by mm_lockq_close */
  uint64_t waits;             /* condition waits entered (statistics) */
};

#endif /* MM_STREAM_LOCKQ_H */
