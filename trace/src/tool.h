/* tool.h — the subcommands of the mmtrace command that live outside
 * tool.c (which owns main, record, dump and info). */
#ifndef MMTRACE_TOOL_H
#define MMTRACE_TOOL_H

#include <stddef.h>
#include <stdio.h>

/* argv[0] is the subcommand's name; the exit status is the command's. */
int mmt_cmd_stats(int argc, char **argv);    /* stats.c: one pass, JSON on stdout */
int mmt_cmd_replay(int argc, char **argv);   /* replay.c: prepare, run per allocator, measure */
int mmt_cmd_replay_run(int argc, char **argv);   /* replay.c: the child that runs one replay */

/* tool.c: the library an allocator name stands for (mmalloc, glibc,
 * jemalloc, tcmalloc, mimalloc, tbbmalloc, or a PATH.so); "" for glibc.
 * 0, or -1 after saying why on `why` (NULL: silently). */
int mmt_allocator_path(const char *name, char *out, size_t n, FILE *why);

/* tool.c: "mmtrace: out of memory" and exit status 2. */
void mmt_oom(void) __attribute__((noreturn));

#endif
