/*
 * broken_alloc — a deliberately wrong allocator for the bench smoke tests
 * (not a benchmark, never measured).
 *
 * Through LD_PRELOAD it forwards the malloc family to glibc, except that
 * every BROKEN_EVERY-th malloc (default 97) after the first BROKEN_AFTER
 * calls (default 2000) hands out, a second time, the block it returned just
 * before on the same thread, when that block is big enough: two live objects
 * share memory, the classic allocator bug.  free() of such a duplicate is
 * ignored.  A workload that verifies what it wrote before freeing must fail
 * on it rather than print a result: tests/smoke.py --broken checks that each
 * one does.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

#define FAKES (1u << 16)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *fake[FAKES];          /* open addressing; duplicates handed out */
static unsigned long calls;        /* approximate across threads: good enough */
static long every = -1, after;
static __thread void *last;

static unsigned slot_of(const void *p)
{
    return (unsigned)(((uintptr_t)p >> 4) * 0x9e3779b1u) & (FAKES - 1);
}

static void fake_add(void *p)
{
    pthread_mutex_lock(&lock);
    unsigned s = slot_of(p);
    for (unsigned i = 0; i < FAKES; i++, s = (s + 1) & (FAKES - 1))
        if (fake[s] == NULL || fake[s] == p) {
            fake[s] = p;
            break;
        }
    pthread_mutex_unlock(&lock);
}

/* Removes p from the table; true if it was a duplicate. */
static int fake_take(void *p)
{
    int found = 0;
    pthread_mutex_lock(&lock);
    unsigned s = slot_of(p);
    for (unsigned i = 0; i < FAKES && fake[s] != NULL; i++, s = (s + 1) & (FAKES - 1))
        if (fake[s] == p) {
            fake[s] = (void *)1;   /* tombstone */
            found = 1;
            break;
        }
    pthread_mutex_unlock(&lock);
    return found;
}

void *malloc(size_t n)
{
    if (every < 0) {
        const char *e = getenv("BROKEN_EVERY"), *a = getenv("BROKEN_AFTER");
        after = a ? atol(a) : 2000;
        every = e ? atol(e) : 97;
    }
    unsigned long c = __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    if (every > 0 && (long)c > after && c % (unsigned long)every == 0 && last != NULL &&
        malloc_usable_size(last) >= n) {
        fake_add(last);
        return last;
    }
    void *p = __libc_malloc(n);
    last = p;
    return p;
}

void free(void *p)
{
    if (p == NULL || fake_take(p))
        return;
    if (p == last)
        last = NULL;
    __libc_free(p);
}

void *calloc(size_t k, size_t n)
{
    void *p = __libc_calloc(k, n);
    last = p;
    return p;
}

void *realloc(void *p, size_t n)
{
    if (p != NULL && fake_take(p)) {
        void *q = __libc_malloc(n);
        if (q != NULL)
            memcpy(q, p, n < malloc_usable_size(p) ? n : malloc_usable_size(p));
        return q;
    }
    if (p == last)
        last = NULL;
    return __libc_realloc(p, n);
}
