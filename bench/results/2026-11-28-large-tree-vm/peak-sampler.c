/* peak-sampler.c: preloaded after libmmalloc.so built with slack-by-class.diff;
 * every 2 ms it reads /proc/self/statm and mm_memory(), and at exit prints
 * the breakdown taken at the highest RSS it saw: live, free resident (by
 * where it sits), page slack by size class.  Sampling takes the heaps' locks,
 * so a sampled run is slower and its peak lower than an unsampled one.
 *   gcc -O2 -shared -fPIC -Iinclude peak-sampler.c -o peak-sampler.so -Lbuild -lmmalloc -lpthread
 *   LD_PRELOAD="build/libmmalloc.so ./peak-sampler.so" build/bench/pipeline threads=32 mb=24
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <time.h>
#include <stdint.h>
#include "mmalloc.h"
uint64_t *mm_dbg(int k);
static volatile int stop;
static size_t best_rss; static mm_memory_t best; static uint64_t bs[64],be[64],bp[64];
static long rss_pages(void){char b[128];int fd=open("/proc/self/statm",O_RDONLY);int n=read(fd,b,127);close(fd);b[n>0?n:0]=0;long a,r;sscanf(b,"%ld %ld",&a,&r);return r;}
static void *run(void*x){(void)x;while(!stop){long r=rss_pages()*4096; for(int k=0;k<3;k++) memset(mm_dbg(k),0,64*8); mm_memory_t m; mm_memory(&m); if((size_t)r>best_rss){best_rss=r;best=m;memcpy(bs,mm_dbg(0),512);memcpy(be,mm_dbg(1),512);memcpy(bp,mm_dbg(2),512);} struct timespec ts={0,2000000}; nanosleep(&ts,0);}return 0;}
__attribute__((constructor)) static void init(void){pthread_t t;pthread_create(&t,0,run,0);}
__attribute__((destructor)) static void fini(void){stop=1;fprintf(stderr,"peakrss %.1f live %.1f freeres %.1f slack %.1f meta %.1f resident %.1f MiB\n",best_rss/1048576.0,best.live/1048576.0,best.free_resident/1048576.0,best.page_slack/1048576.0,best.metadata/1048576.0,best.resident/1048576.0);
 const char *fr[]={"page-block cache","medium cache","main tree","medium tree","large tree"}; for(int c=50;c<55;c++) fprintf(stderr,"  free resident, %s: %.0f KiB\n",fr[c-50],bs[c]/1024.0); for(int c=0;c<40;c++) if(bp[c]) fprintf(stderr,"  class %2d pages %3lu slack %6.0f KiB empty %6.0f KiB\n",c,bp[c],bs[c]/1024.0,be[c]/1024.0);}
