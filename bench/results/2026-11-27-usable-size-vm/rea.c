#include <stdlib.h>
#include <stdio.h>
int main(int argc,char**argv){
  int mode=atoi(argv[1]); size_t s=0; void *p[64];
  for(int r=0;r<20000;r++){
    for(int i=0;i<64;i++) p[i]=malloc(64);
    if(mode==1) for(int i=0;i<64;i++) p[i]=realloc(p[i],56);      /* stays */
    if(mode==2) for(int i=0;i<64;i++) p[i]=realloc(p[i],200);     /* moves */
    for(int i=0;i<64;i++){ s+=(size_t)p[i]&1; free(p[i]); }
  }
  printf("%zu\n",s);
}
