/* order.c — in what order does a producer get its blocks back from a
 * thread that frees them?  The main thread allocates 64-byte blocks in
 * batches of 256 and hands each batch (through a ring of 64) to a
 * long-lived thread that frees it; over the second half of the run it
 * counts how often two consecutive allocations are neighbours (+64 B,
 * -64 B), near (within 1 KiB either way) or farther apart.  A hardware
 * prefetcher follows the first two; the README beside this file gives the
 * counts per allocator.
 *
 *   gcc -O2 -pthread order.c -o order && LD_PRELOAD=<allocator> ./order
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdatomic.h>
#define B 256
#define NB 4000
static void *ring[64][B]; static _Atomic long head, tail;
static void *freer(void *a){ (void)a; for(long k=0;k<NB;k++){ while(atomic_load(&tail)<=k){} for(int i=0;i<B;i++) free(ring[k%64][i]); atomic_store(&head,k+1);} return 0; }
int main(){
  pthread_t t; pthread_create(&t,0,freer,0);
  int c[5]={0}; void *prev=0;
  for(long k=0;k<NB;k++){ while(k-atomic_load(&head)>=60){}
    for(int i=0;i<B;i++){ void*p=malloc(64); *(long*)p=k; ring[k%64][i]=p; if(k>NB/2&&prev){ intptr_t d=(char*)p-(char*)prev; if(d==64)c[0]++; else if(d==-64)c[1]++; else if(d>0&&d<=1024)c[2]++; else if(d<0&&d>=-1024)c[3]++; else c[4]++; } prev=p; }
    atomic_store(&tail,k+1); }
  pthread_join(t,0);
  printf("+64:%d -64:%d small+:%d small-:%d other:%d\n",c[0],c[1],c[2],c[3],c[4]);
  return 0;
}
