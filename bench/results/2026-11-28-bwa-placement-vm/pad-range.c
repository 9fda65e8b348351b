/* pad-range.c: preloaded in front of an allocator, malloc and calloc of LO to HI
 * bytes (environment) ask it for 64 bytes instead: LO=24 HI=24 gives each
 * 24-byte block a cache line of its own.
 *   gcc -O2 -shared -fPIC pad-range.c -o pad-range.so -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
static void *(*rmalloc)(size_t); static void *(*rcalloc)(size_t,size_t);
static size_t LO=0, HI=0;
static void env(void){ char*s=getenv("LO"); if(s) LO=atoi(s); s=getenv("HI"); if(s) HI=atoi(s); }
static size_t adj(size_t n){ return (n>=LO && n<=HI) ? 64 : n; }
void *malloc(size_t n){ if(!rmalloc){ rmalloc=dlsym(RTLD_NEXT,"malloc"); env(); } return rmalloc(adj(n)); }
void *calloc(size_t a,size_t b){ if(!rcalloc){ static char buf[4096]; static int busy; if(busy) return buf; busy=1; rcalloc=dlsym(RTLD_NEXT,"calloc"); busy=0; env(); } return rcalloc(1, adj(a*b)); }
