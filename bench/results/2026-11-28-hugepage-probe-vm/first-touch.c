/* first-touch.c — what the first write of fresh memory costs, per 2 MiB:
 * one transparent huge page (argument 2: 1) or 512 small pages (0), over
 * a mapping of argument 1 MiB.  gcc -O2 -o first-touch first-touch.c &&
 * ./first-touch 64 1 && ./first-touch 64 0 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <stdint.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
int main(int argc,char**argv){ size_t mb=argc>1?atoi(argv[1]):64; int hp=argc>2?atoi(argv[2]):1; size_t n=mb<<20;
 char *p=mmap(0,n+(2<<20),PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); p=(char*)(((uintptr_t)p+(2<<20)-1)&~(uintptr_t)((2<<20)-1));
 if(hp) madvise(p,n,MADV_HUGEPAGE);
 double t[4096]; int k=0; for(size_t o=0;o<n;o+=2<<20){ double a=now(); if(hp) p[o]=1; else for(size_t q=0;q<(2<<20);q+=4096) p[o+q]=1; t[k++]=now()-a; }
 double s=0,mx=0,mn=1e9; for(int i=0;i<k;i++){s+=t[i]; if(t[i]>mx)mx=t[i]; if(t[i]<mn)mn=t[i];}
 printf("hp=%d first %.0f us, mean %.0f, min %.0f, max %.0f us per 2 MiB\n",hp,t[0],s/k,mn,mx); return 0; }
