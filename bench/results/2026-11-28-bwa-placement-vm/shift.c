/* shift.c: preloaded in front of an allocator, blocks of 1 KiB to 1 MiB are
 * handed out SHIFT bytes (environment, default 64) past where the allocator
 * put them (a table maps them back for free and realloc), which moves
 * their offset in the 4 KiB page; SHIFT=4096 keeps the offset and the cost.
 *   gcc -O2 -shared -fPIC shift.c -o shift.so -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <malloc.h>
static void *(*rmalloc)(size_t); static void (*rfree)(void*); static void *(*rrealloc)(void*,size_t);
static size_t (*rusable)(void*);
#define N (1<<20)
static uintptr_t keys[N]; static size_t sizes[N]; static volatile int lk;
static size_t SHIFT=64, MINSZ=1024;
static void L(void){ while(__atomic_exchange_n(&lk,1,__ATOMIC_ACQUIRE)) ; } static void U(void){ __atomic_store_n(&lk,0,__ATOMIC_RELEASE);}
static size_t h(uintptr_t k){ return (k>>4)*0x9e3779b97f4a7c15ull >> 44; }
static void init(void){ if(!rmalloc){ rmalloc=dlsym(RTLD_NEXT,"malloc"); rfree=dlsym(RTLD_NEXT,"free"); rrealloc=dlsym(RTLD_NEXT,"realloc"); rusable=dlsym(RTLD_NEXT,"malloc_usable_size"); char*s=getenv("SHIFT"); if(s) SHIFT=atoi(s);} }
static int find(uintptr_t k){ size_t i=h(k); while(keys[i]){ if(keys[i]==k) return (int)i; i=(i+1)&(N-1);} return -1; }
static void del(size_t i){ /* linear probing deletion, backward shift */
  size_t j=i; for(;;){ j=(j+1)&(N-1); if(!keys[j]) break; size_t k=h(keys[j]);
    if( (j>i && (k<=i || k>j)) || (j<i && (k<=i && k>j)) ){ keys[i]=keys[j]; sizes[i]=sizes[j]; i=j; } }
  keys[i]=0; }
static void *smalloc(size_t n){ char*p=rmalloc(n+SHIFT); if(!p) return 0; uintptr_t q=(uintptr_t)p+SHIFT; L(); size_t i=h(q); while(keys[i]) i=(i+1)&(N-1); keys[i]=q; sizes[i]=n; U(); return (void*)q; }
void *malloc(size_t n){ init(); if(n>=MINSZ && n<=(1<<20) && SHIFT) return smalloc(n); return rmalloc(n); }
static void *(*rcalloc)(size_t,size_t);
void *calloc(size_t a,size_t b){ if(!rcalloc){ static char buf[4096]; static int busy; if(busy) return buf; busy=1; rcalloc=dlsym(RTLD_NEXT,"calloc"); busy=0; } init(); size_t n=a*b; if(n>=MINSZ && n<=(1<<20) && SHIFT){ void*p=smalloc(n); if(p) memset(p,0,n); return p;} return rcalloc(a,b); }
void free(void*q){ init(); if(!q) return; L(); int i=find((uintptr_t)q); if(i>=0){ del((size_t)i); U(); rfree((char*)q-SHIFT); return;} U(); rfree(q); }
void *realloc(void*q,size_t n){ init(); if(!q) return malloc(n); L(); int i=find((uintptr_t)q); size_t old = i>=0? sizes[i]:0; U(); if(i<0) old=rusable(q);
  if(n>=MINSZ || i>=0){ void*r=malloc(n); if(!r) return 0; memcpy(r,q,old<n?old:n); free(q); return r; } return rrealloc(q,n); }
