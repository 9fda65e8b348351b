#include <stdlib.h>
#include <malloc.h>
#include <stdio.h>
int main(int argc,char**argv){
  int use=atoi(argv[1]); size_t sz=argc>2?atoi(argv[2]):64; size_t s=0;
  void *p[64];
  for(int r=0;r<20000;r++){
    for(int i=0;i<64;i++){ p[i]=malloc(sz); if(use) s+=malloc_usable_size(p[i]); }
    for(int i=0;i<64;i++){ if(use) s+=malloc_usable_size(p[i]); free(p[i]); }
  }
  printf("%zu\n",s);
}
