/* big.c SIZE K: 20,000 rounds of K mallocs of SIZE bytes (first byte
 * written) then K frees; for count.sh. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
int main(int argc,char**argv){
  size_t n=atol(argv[1]); int k=atoi(argv[2]); size_t s=0; void *p[8];
  for(int r=0;r<20000;r++){
    for(int i=0;i<k;i++){ p[i]=malloc(n); ((char*)p[i])[0]=1; }
    for(int i=0;i<k;i++){ s+=(size_t)p[i]&1; free(p[i]); }
  }
  printf("%zu\n",s);
}
