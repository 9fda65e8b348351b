/* tool.h — the subcommands of the mmtrace command that live outside
 * tool.c (which owns main, record, dump and info). */
#ifndef MMTRACE_TOOL_H
#define MMTRACE_TOOL_H

/* argv[0] is the subcommand's name; the exit status is the command's. */
int mmt_cmd_stats(int argc, char **argv);    /* stats.c: one pass, JSON on stdout */

#endif
