/* smallprog — a small C program: one malloc and free, and the resident
 * size of each of its mappings, from its own smaps.  Built with
 * `cc -O1 -o smallprog smallprog.c`; recorded with
 * `mmtrace record -o T -- ./smallprog`; its memory record read with
 * `mmtrace dump T | tail -1`. */
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
int main(){ void *p = malloc(100); char b[64]; snprintf(b, sizeof b, "/proc/%d/smaps", getpid()); FILE *f=fopen(b,"r"); char line[512]; char name[512]=""; 
 while (fgets(line,sizeof line,f)) { unsigned long lo,hi; char perms[8]; if (sscanf(line,"%lx-%lx %7s",&lo,&hi,perms)==3) { char *s=strrchr(line,' '); snprintf(name,sizeof name,"%s",s?s+1:""); } else { unsigned long v; if (sscanf(line,"Rss: %lu kB",&v)==1 && v) printf("%6lu %s", v, name); } }
 free(p); return 0; }
