/* present.c — one malloc, then for each mapping of the file named by
 * argv[1] the 4 KiB pages present in this process's page table
 * (/proc/self/pagemap, bit 63), as offsets into the file, and their count.
 *   gcc -O2 -o present present.c; ./present libc.so */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <fcntl.h>
#include <unistd.h>
int main(int argc,char**argv){ void *p = malloc(100); memset(p,1,100);
  int pm=open("/proc/self/pagemap",O_RDONLY);
  FILE *f=fopen("/proc/self/maps","r"); char line[512];
  while(fgets(line,sizeof line,f)){ unsigned long a,b,off; char perm[8]; char name[256]="";
    if(sscanf(line,"%lx-%lx %7s %lx %*s %*s %255s",&a,&b,perm,&off,name)<4) continue;
    const char *want = argc>1?argv[1]:"";
    if(!strstr(name,want) || !*name) continue;
    int n=0; printf("%s %s off=%lx:", name, perm, off);
    for(unsigned long v=a; v<b; v+=4096){ uint64_t e; pread(pm,&e,8,(v/4096)*8);
      if(e>>63&1){ printf(" %lx",off+(v-a)); n++; } }
    printf("  (%d pages)\n",n); }
  free(p); return 0; }
