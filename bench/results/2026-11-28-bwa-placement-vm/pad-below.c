/* pad-below.c: preloaded in front of an allocator, malloc and calloc of fewer than
 * PAD bytes (environment, default 64) ask it for PAD bytes instead.
 *   gcc -O2 -shared -fPIC pad-below.c -o pad-below.so -ldl
 *   LD_PRELOAD=./pad-below.so:<allocator.so> PAD=64 bwa mem ... */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
static void *(*rmalloc)(size_t); static void *(*rcalloc)(size_t,size_t);
static size_t PAD=64;
void *malloc(size_t n){ if(!rmalloc){ rmalloc=dlsym(RTLD_NEXT,"malloc"); char*s=getenv("PAD"); if(s) PAD=atoi(s);} return rmalloc(n<PAD?PAD:n); }
void *calloc(size_t a,size_t b){ if(!rcalloc){ static char buf[4096]; static int busy; if(busy) return buf; busy=1; rcalloc=dlsym(RTLD_NEXT,"calloc"); busy=0; char*s=getenv("PAD"); if(s) PAD=atoi(s);} size_t n=a*b; return rcalloc(1, n<PAD?PAD:n); }
