/* bigt SIZE K ROUNDS THREADS: each thread does ROUNDS of K mallocs of SIZE then K frees */
#include <stdlib.h>
#include <stdio.h>
#include <pthread.h>
#include <time.h>
static size_t n; static int k, rounds;
static void *run(void *a){ void *p[8]; size_t s=0; for(int r=0;r<rounds;r++){ for(int i=0;i<k;i++){p[i]=malloc(n);((char*)p[i])[0]=1;} for(int i=0;i<k;i++){s+=(size_t)p[i]&1;free(p[i]);} } return (void*)s; }
int main(int c,char**v){ n=atol(v[1]); k=atoi(v[2]); rounds=atoi(v[3]); int t=atoi(v[4]); pthread_t th[64]; struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a);
 for(int i=0;i<t;i++) pthread_create(&th[i],0,run,0); for(int i=0;i<t;i++) pthread_join(th[i],0);
 clock_gettime(CLOCK_MONOTONIC,&b); printf("{\"seconds\":%.6f}\n",(b.tv_sec-a.tv_sec)+(b.tv_nsec-a.tv_nsec)/1e9); }
