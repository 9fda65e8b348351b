/* loop.c: MODE SIZE — 20,000 rounds of 64 allocations then 64 frees, the
 * allocation by malloc (0), calloc (1), posix_memalign(64) (2),
 * aligned_alloc(32) (3) or memalign(16) (4), for count.sh. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <malloc.h>
int main(int argc,char**argv){
  int mode=atoi(argv[1]); size_t n=argc>2?atoi(argv[2]):64; size_t s=0; void *p[64];
  for(int r=0;r<20000;r++){
    for(int i=0;i<64;i++){
      switch(mode){
      case 0: p[i]=malloc(n); break;
      case 1: p[i]=calloc(1,n); break;
      case 2: if(posix_memalign(&p[i],64,n)) p[i]=0; break;
      case 3: p[i]=aligned_alloc(32,n); break;
      case 4: p[i]=memalign(16,n); break;
      }
    }
    for(int i=0;i<64;i++){ s+=(size_t)p[i]&1; free(p[i]); }
  }
  printf("%zu\n",s);
}
