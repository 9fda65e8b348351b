#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdatomic.h>
#define B 512
#define N 4000
static void *volatile q[64]; static atomic_int head, tail;
static void push(void*p){ while(atomic_load(&head)-atomic_load(&tail)>=8); q[atomic_load(&head)%64]=p; atomic_fetch_add(&head,1);}
static void *pop(void){ while(atomic_load(&tail)==atomic_load(&head)); void*p=q[atomic_load(&tail)%64]; atomic_fetch_add(&tail,1); return p;}
static void *freer(void*a){(void)a; for(int i=0;i<N;i++){ void**b=pop(); for(int j=0;j<B;j++) free(b[j]); free(b);} return 0;}
int main(void){ pthread_t t; pthread_create(&t,0,freer,0); long seq=0,near=0,tot=0;
 for(int i=0;i<N;i++){ void**b=malloc(B*sizeof(void*)); for(int j=0;j<B;j++){ b[j]=malloc(64); *(long*)b[j]=j; if(j && i>N/2){ intptr_t d=(char*)b[j]-(char*)b[j-1]; tot++; if(d==64) seq++; if(d>-4096&&d<4096) near++; }} push(b);} 
 pthread_join(t,0); printf("sequential %.3f within 4KiB %.3f\n",(double)seq/tot,(double)near/tot); return 0;}
