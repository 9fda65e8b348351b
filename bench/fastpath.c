/*
 * fastpath — the malloc+free fast path, counted in instructions.
 *
 * Models: the cheapest thing an allocator does, one thread allocating a
 * batch of 64 objects of one size and freeing them (docs/design.md, "How
 * we know it works": instructions per malloc+free pair, counted by
 * callgrind, do not change with machine noise).  After a fixed warm-up (two batches, so that
 * every allocator has set up its thread cache and its pages for the size),
 * it runs `batches` batches of 64 malloc then 64 free.
 *
 * Method (bench/run.py): run it under `valgrind --tool=callgrind` twice,
 * with batches=N and batches=0, the allocator coming in by LD_PRELOAD;
 * (Ir(N) - Ir(0)) / (64 N) is the instructions per malloc+free pair,
 * including the loop's own few instructions.  Startup, the dynamic loader
 * and the allocator's initialisation cancel out.
 *
 * Parameters: size=<bytes> batches=<count>.  Prints one JSON line.  Links
 * only libc; no allocator is linked in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 64

static void *slot[BATCH];

/* Keeps the compiler from pairing and removing the calls. */
#define CLOBBER() __asm__ volatile("" : : "r"(slot) : "memory")

static __attribute__((noinline)) void run(size_t size, long batches)
{
    for (long b = 0; b < batches; b++) {
        for (int i = 0; i < BATCH; i++)
            slot[i] = malloc(size);
        CLOBBER();
        for (int i = 0; i < BATCH; i++)
            free(slot[i]);
        CLOBBER();
    }
}

int main(int argc, char **argv)
{
    size_t size = 16;
    long batches = 10000;
    for (int a = 1; a < argc; a++) {
        if (strncmp(argv[a], "size=", 5) == 0)
            size = strtoul(argv[a] + 5, NULL, 10);
        else if (strncmp(argv[a], "batches=", 8) == 0)
            batches = strtol(argv[a] + 8, NULL, 10);
        else {
            fprintf(stderr, "usage: fastpath size=<bytes> batches=<count>\n");
            return 2;
        }
    }
    run(size, 2);             /* warm-up, in every run including batches=0 */
    for (int i = 0; i < BATCH; i++)
        if (slot[i] == NULL) {
            fprintf(stderr, "fastpath: malloc(%zu) failed\n", size);
            return 3;
        }
    run(size, batches);
    printf("{\"workload\":\"fastpath\",\"size\":%zu,\"batches\":%ld,\"pairs\":%ld}\n",
           size, batches, batches * BATCH);
    return 0;
}
