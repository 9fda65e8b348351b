/*
 * pool_fastpath — instructions per allocation + free pair for the pool and
 * heap calls against malloc's, counted by callgrind (which does not drift
 * on a noisy machine).  Links libmmalloc.  Each round allocates 64 objects
 * of 64 bytes and frees them; the difference between two round counts is
 * the steady state, with the loop's own 7 or so instructions per pair:
 *
 *   for m in 0 1 2 3 4; do for n in 1000 2000; do
 *     valgrind --tool=callgrind --callgrind-out-file=/dev/null \
 *       build/bench/pool_fastpath $n $m 2>&1 | grep Collected; done; done
 *
 * then (Ir at 2000 - Ir at 1000) / 64000.  Modes: 0 mm_pool_alloc +
 * mm_pool_free, 1 mm_pool_alloc + mm_pool_free_unchecked, 2 mm_malloc +
 * mm_free, 3 mm_heap_malloc + mm_heap_free, 4 the loop alone.
 */
#include <mmalloc.h>
#include <stdio.h>
#include <stdlib.h>

static void *v[64];

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: pool_fastpath ROUNDS MODE(0-4)\n");
        return 2;
    }
    mm_pool_options_t o = { .object_size = 64, .name = "fastpath" };
    mm_pool_t *p = mm_pool_create(&o);
    mm_heap_t *h = mm_heap_new("fastpath");
    if (!p || !h)
        return 1;
    long n = atol(argv[1]);
    int mode = atoi(argv[2]);
    for (long r = 0; r < n; r++) {
        switch (mode) {
        case 0:
            for (int i = 0; i < 64; i++) v[i] = mm_pool_alloc(p);
            for (int i = 0; i < 64; i++) mm_pool_free(p, v[i]);
            break;
        case 1:
            for (int i = 0; i < 64; i++) v[i] = mm_pool_alloc(p);
            for (int i = 0; i < 64; i++) mm_pool_free_unchecked(p, v[i]);
            break;
        case 2:
            for (int i = 0; i < 64; i++) v[i] = mm_malloc(64);
            for (int i = 0; i < 64; i++) mm_free(v[i]);
            break;
        case 3:
            for (int i = 0; i < 64; i++) v[i] = mm_heap_malloc(h, 64);
            for (int i = 0; i < 64; i++) mm_heap_free(h, v[i]);
            break;
        default:
            for (int i = 0; i < 64; i++) v[i] = (void *)(long)i;
            for (int i = 0; i < 64; i++) __asm__ volatile("" : : "r"(v[i]));
            break;
        }
    }
    mm_heap_destroy(h);
    mm_pool_destroy(p);
    return 0;
}
