/* libc-calls.c — a preloadable library whose constructor makes the libc
 * calls named in $CALLS (clock, atfork, file, aff, key, rand, errno, str,
 * auxv), to see which of them map another 64 KiB of libc's text:
 *   gcc -O1 -shared -fPIC -o libc-calls.so libc-calls.c
 *   ./avg.sh LD_PRELOAD=./libc-calls.so CALLS=clock */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <sched.h>
#include <pthread.h>
#include <errno.h>
#include <sys/random.h>
#include <sys/auxv.h>
static void nop(void){}
__attribute__((constructor)) static void init(void){
  const char *w = getenv("CALLS"); if(!w) return;
  struct timespec ts; char buf[256]; cpu_set_t cs; pthread_key_t k;
  if(strstr(w,"clock")) clock_gettime(CLOCK_MONOTONIC,&ts);
  if(strstr(w,"atfork")) pthread_atfork(nop,nop,nop);
  if(strstr(w,"file")){ int fd=open("/proc/self/stat",O_RDONLY); read(fd,buf,sizeof buf); close(fd); access("/nonexist",R_OK); }
  if(strstr(w,"aff")){ sched_getaffinity(0,sizeof cs,&cs); volatile int n=CPU_COUNT(&cs); (void)n; }
  if(strstr(w,"key")) pthread_key_create(&k,0);
  if(strstr(w,"rand")) getrandom(buf,16,GRND_NONBLOCK);
  if(strstr(w,"errno")) errno=0;
  if(strstr(w,"auxv")){ volatile unsigned long v=getauxval(AT_SYSINFO_EHDR); (void)v; }
  if(strstr(w,"str")){ volatile size_t x=strlen(w)+(size_t)strchr(w,'x')+(size_t)memchr(w,'q',3)+(size_t)strstr(w,"zz"); (void)x; memset(buf,0,200); memcpy(buf,w,3);}
}
