/* os.h — what mmalloc asks of the operating system (os.c), and messages
 * that never allocate (format.c).
 *
 * Layer: os, the bottom.  No other file makes a system call for memory.
 */
#ifndef MM_OS_H
#define MM_OS_H

#include <stdarg.h>

#include "base.h"
#include "debug.h"

MM_HIDDEN_BEGIN

/* ---- os.c: address space, clock, CPUs, randomness ---------------------------- */

/* Fault injection (MM_FAULT_INJECTION builds): the kinds of call a test can
 * make fail (mm_test_fault_set). */
enum {
  MM_FAULT_RESERVE = 0,
  MM_FAULT_COMMIT = 1,
  MM_FAULT_PURGE = 2,
  MM_FAULT_THREAD = 3,
  MM_FAULT_HUGE_SLOW = 4, /* not a failure: the huge-page probe reads "slow" */
  MM_FAULT_KINDS = 5
};

void os_init(void);
void *os_reserve(size_t size, size_t align);
/* The same, at hint exactly when that is free and aligned (else anywhere):
 * the region asks for its slots in rising address order, so that first fit
 * by address (the local heaps) reuses the oldest, most likely resident,
 * memory before it touches a newer slot's. */
void *os_reserve_above(size_t size, size_t align, uintptr_t hint);
void *os_reserve_offset(size_t size, size_t align, size_t offset);
bool os_reserve_at(void *p, size_t size);
void os_release(void *p, size_t size);
bool os_commit(void *p, size_t size);
bool os_purge(void *p, size_t size);
/* How many bytes of [p, p + size) (page aligned) are resident now
 * (mincore; 0 where the kernel cannot tell).  For statistics: a system call
 * per 16 MiB. */
size_t os_resident_bytes(const void *p, size_t size);
void os_hugepages(void *p, size_t size, bool on, bool whole);
/* Huge pages for a big block about to be handed out (whole: the range as
 * it is; else its 2 MiB-aligned interior): advised, or, while a recent
 * probe found fresh huge pages slow here (MM_HUGE_PAGE_RECHECK_MS),
 * advised back to small pages (a range keeps an earlier block's advice).
 * probe: the block's content does not matter (not a calloc's, or a grown
 * part past the old data): time the first write of its first whole huge
 * page, if nothing of it is resident, and start a slow period (the rest of
 * the block back to small pages) if that took MM_HUGE_PAGE_SLOW_US. */
void os_hugepages_block(void *p, size_t size, bool whole, bool probe);
/* Probes made, and those that found huge pages slow, since start-up. */
void os_hugepage_probe_stats(uint64_t *probes, uint64_t *slow);
bool os_guard(void *p, size_t size, bool on);
/* Whether os_guard uses the light guards (which do not split mappings). */
bool os_guard_is_light(void);
bool os_remap_to(void *old, size_t size, void *to);
/* The same without fault injection: undoing a move that went half way. */
bool os_remap_back(void *old, size_t size, void *to);
uint32_t os_now_ms(void);
/* Whether the clock is read through the vDSO (else libc's clock_gettime). */
bool os_clock_is_vdso(void);
int os_current_cpu(void);
/* Give the CPU to another runnable thread, if there is one. */
void os_yield(void);
int os_cpu_count(void);
/* The machine's physical memory in bytes (0 if the OS does not say). */
uint64_t os_physical_memory(void);
uint64_t os_random(void);

/* A background thread of the allocator's own: detached, every signal
 * blocked (the program's handlers never run on it), named `name` for ps
 * and debuggers.  False when the OS refuses (the caller does without).
 * pthread_create may call malloc: never call this holding a lock of ours. */
bool os_thread_start(void *(*fn)(void *), void *arg, const char *name);
/* Sleep while *word == expected, at most timeout_ms (0: no limit), or until
 * os_wake(word); may return early for no reason (callers loop). */
void os_wait(_Atomic(uint32_t) *word, uint32_t expected, uint32_t timeout_ms);
void os_wake(_Atomic(uint32_t) *word);

/* True once `now` has reached `deadline` on the wrapping millisecond clock. */
MM_INLINE bool time_reached(uint32_t now, uint32_t deadline) {
  return (int32_t)(now - deadline) >= 0;
}

/* The calling thread's id: its thread pointer, one instruction to read.
 * (A forked child's only thread keeps the forking thread's id.) */
MM_INLINE uintptr_t mm_thread_id(void) {
  uintptr_t tid;
#if defined(__x86_64__)
  __asm__("movq %%fs:0, %0" : "=r"(tid));
#elif defined(__aarch64__)
  __asm__("mrs %0, tpidr_el0" : "=r"(tid));
#else
  tid = (uintptr_t)__builtin_thread_pointer();
#endif
  return tid;
}
/* w == mm_thread_id().  On x86-64 the compare reads %fs:0 itself: one
 * instruction, not a load and a compare (the free fast path's owner test). */
MM_INLINE bool mm_thread_id_is(uintptr_t w) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool eq;
  __asm__("cmpq %%fs:0, %1" : "=@cce"(eq) : "r"(w));
  return eq;
#else
  return w == mm_thread_id();
#endif
}

/* ---- format.c: text without malloc --------------------------------------------
 * A printf subset (%s %p %c %d %u %x with l, ll, z and a width) into a
 * caller's buffer; the messages go out with one write(2) from the stack.
 * Safe inside malloc, after a corruption and in a forked child.  Every
 * checker of the allocator writes its one-line reason with os_format. */
size_t os_vformat(char *buf, size_t size, const char *fmt, va_list ap);
size_t os_format(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void os_write_all(int fd, const char *s, size_t n);
void os_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
MM_NORETURN void os_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

MM_HIDDEN_END

#endif
