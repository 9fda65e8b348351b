/* reader.h — streaming decoder of one mmtrace file (format: trace_format.h).
 *
 * mmt_reader_next returns the events in file order: a thread's events in
 * the order it made the calls, threads interleaved chunk by chunk (a chunk
 * is up to 32 KiB of one thread's events).  Memory: one chunk and a few
 * words per thread; never the whole trace.
 *
 * Every malformed input is an error naming the file and the byte offset of
 * the record where it was found (mmt_reader_error); nothing is returned
 * from a chunk whose checksum fails.  A file that stops between records
 * without an end record (the program was killed with SIGKILL, or the file
 * was cut there) is an error too, unless the caller allows it
 * (mmt_reader_allow_partial): then it is the end, and mmt_reader_ending
 * says "partial".
 */
#ifndef MMTRACE_READER_H
#define MMTRACE_READER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "trace_format.h"

enum mmt_ref_kind { MMT_REF_NONE = 0, MMT_REF_IS_NULL, MMT_REF_IS_UNKNOWN, MMT_REF_IS_BLOCK };

typedef struct mmt_event {
  unsigned op;          /* enum mmt_op */
  bool failed;          /* returned NULL (or posix_memalign returned an error; fork failed) */
  bool inplace;         /* realloc: the new block has the old block's address */
  uint64_t thread;      /* trace thread index */
  uint64_t time_ns;     /* when the call began, since the trace started */
  uint64_t gap_ns;      /* the thread's own time since its previous call returned */
  uint64_t work_ns;     /* the gap less the recorder's own time in it: the program's */
  uint64_t dur_ns;      /* the call's time: the allocator's and the recorder's */
  bool timed;           /* dur_ns was measured (else it is the thread's sampled average) */
  bool stamped;         /* time_ns was read at this call (else it is its predecessor's) */
  bool gap_cpu_known;   /* after a long gap (version 2): how much of it the thread computed */
  uint64_t gap_cpu_ns;  /* ... in ns, at most gap_ns; the rest it was blocked */
  uint64_t size, nmemb, align;
  uint64_t os_tid;      /* THREAD_BEGIN */
  uint64_t child_pid;   /* FORK */
  /* the block this call releases (free, delete, realloc's old block) */
  int ref;              /* enum mmt_ref_kind; MMT_REF_NONE when the op has no ref */
  uint64_t ref_thread, ref_n;   /* MMT_REF_IS_BLOCK: block (ref_thread, ref_n) */
  uint64_t ref_addr;            /* MMT_REF_IS_UNKNOWN: the pointer */
  bool released;        /* the ref'd block is gone after this call */
  /* the block this call returns */
  bool allocated;
  uint64_t new_n;       /* its id is (thread, new_n) */
  uint64_t offset;      /* byte offset of the event's chunk */
} mmt_event_t;

typedef struct mmt_reader mmt_reader_t;

/* NULL with a message in err (file, offset, what) when the file cannot be
 * opened or its header is malformed. */
mmt_reader_t *mmt_reader_open(const char *path, char *err, size_t errlen);
void mmt_reader_close(mmt_reader_t *r);
void mmt_reader_allow_partial(mmt_reader_t *r, bool allow);

/* 1: *ev is the next event; 0: the end; -1: an error (mmt_reader_error). */
int mmt_reader_next(mmt_reader_t *r, mmt_event_t *ev);
const char *mmt_reader_error(const mmt_reader_t *r);

/* The header's value for key (the first), or NULL; for "arg", the i-th. */
const char *mmt_reader_header(const mmt_reader_t *r, const char *key, unsigned i);
unsigned mmt_reader_version(const mmt_reader_t *r);
/* After the end: "exit", "signal N", "exec" (the image exec'd another
 * program), "partial"; and how many exec records
 * were seen (the image called exec). */
const char *mmt_reader_ending(const mmt_reader_t *r);
unsigned mmt_reader_execs(const mmt_reader_t *r);
uint64_t mmt_reader_threads(const mmt_reader_t *r);     /* thread indices seen */
uint64_t mmt_reader_offset(const mmt_reader_t *r);      /* bytes consumed */
/* After the end: the image's resident memory when it ended (a version 3
 * trace's memory record), in KiB: its peak, and the part backed by files
 * and shared memory (its code and libraries, mapped files); false (and 0s)
 * if the trace has none (an older trace, a killed or exec'd image). */
bool mmt_reader_memory(const mmt_reader_t *r, uint64_t *peak_kb, uint64_t *file_kb);

#endif
