/* startup-smaps.c — one malloc, then the resident KiB of every mapping of
 * the process (/proc/self/smaps) and their total: what an allocator adds to
 * a small program before it does anything.
 *   gcc -O2 -o startup-smaps startup-smaps.c
 *   ./startup-smaps; LD_PRELOAD=<allocator> ./startup-smaps */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void){ void *p = malloc(100); memset(p,1,100);
  FILE *f=fopen("/proc/self/smaps","r"); char line[512], name[512]=""; long tot=0;
  while(fgets(line,sizeof line,f)){ unsigned long a,b; char perm[8]; 
    if(sscanf(line,"%lx-%lx %7s",&a,&b,perm)==3 && strchr(line,'-')<strchr(line,' ')){ char *n=strrchr(line,' '); snprintf(name,sizeof name,"%s %.60s",perm,n+1); name[strcspn(name,"\n")]=0; }
    long v; if(sscanf(line,"Rss: %ld kB",&v)==1 && v){ printf("%6ld %s\n",v,name); tot+=v; } }
  printf("%6ld total\n",tot); free(p); return 0; }
