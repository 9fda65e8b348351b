/* prodcons.c — one producer, C consumers: every free is remote (the
 * Streamflow "consume" pattern).  Each object carries a pattern from its
 * address, checked by the consumer before it frees it.  Not a benchmark.
 *
 * usage: prodcons CONSUMERS OBJECTS [SEED] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mmalloc.h"

#define BATCH 256
#define DEPTH 8 /* batches in flight per consumer */

typedef struct chan_s {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  void **batches[DEPTH];
  size_t sizes[DEPTH][BATCH];
  int head, tail, count;
  int done;
} chan_t;

static chan_t *chans;
static atomic_long consumed, corrupt;

static unsigned char pat(uintptr_t a, size_t j) { return (unsigned char)((a >> 4) + j * 13); }

static void *consumer(void *arg) {
  chan_t *ch = arg;
  for (;;) {
    pthread_mutex_lock(&ch->lock);
    while (ch->count == 0 && !ch->done) pthread_cond_wait(&ch->cond, &ch->lock);
    if (ch->count == 0 && ch->done) {
      pthread_mutex_unlock(&ch->lock);
      return NULL;
    }
    int slot = ch->head;
    void **objs = ch->batches[slot];
    size_t sizes[BATCH];
    memcpy(sizes, ch->sizes[slot], sizeof(sizes));
    ch->head = (ch->head + 1) % DEPTH;
    ch->count--;
    pthread_cond_broadcast(&ch->cond);
    pthread_mutex_unlock(&ch->lock);
    for (int i = 0; i < BATCH; i++) {
      unsigned char *p = objs[i];
      for (size_t j = 0; j < sizes[i]; j++)
        if (p[j] != pat((uintptr_t)p, j)) {
          corrupt++;
          break;
        }
      mm_free(p);
      consumed++;
    }
    mm_free(objs);
  }
}

int main(int argc, char **argv) {
  int nc = argc > 1 ? atoi(argv[1]) : 4;
  long objects = argc > 2 ? atol(argv[2]) : 2000000;
  uint64_t s = argc > 3 ? strtoull(argv[3], NULL, 0) : 99;
  fprintf(stderr, "prodcons: 1 producer, %d consumers, %ld objects, seed %llu (not a benchmark)\n",
          nc, objects, (unsigned long long)s);
  chans = calloc((size_t)nc, sizeof(chan_t));
  pthread_t *t = calloc((size_t)nc, sizeof(pthread_t));
  for (int i = 0; i < nc; i++) {
    pthread_mutex_init(&chans[i].lock, NULL);
    pthread_cond_init(&chans[i].cond, NULL);
    pthread_create(&t[i], NULL, consumer, &chans[i]);
  }
  long produced = 0;
  for (int c = 0; produced < objects; c = (c + 1) % nc) {
    void **objs = mm_malloc(BATCH * sizeof(void *));
    size_t sizes[BATCH];
    for (int i = 0; i < BATCH; i++) {
      s ^= s << 13; s ^= s >> 7; s ^= s << 17;
      sizes[i] = (s % 16 == 0) ? 1024 + s % 40000 : 8 + s % 300;
      unsigned char *p = mm_malloc(sizes[i]);
      if (!p) {
        fprintf(stderr, "prodcons: malloc(%zu) failed\n", sizes[i]);
        return 1;
      }
      for (size_t j = 0; j < sizes[i]; j++) p[j] = pat((uintptr_t)p, j);
      objs[i] = p;
    }
    produced += BATCH;
    chan_t *ch = &chans[c];
    pthread_mutex_lock(&ch->lock);
    while (ch->count == DEPTH) pthread_cond_wait(&ch->cond, &ch->lock);
    ch->batches[ch->tail] = objs;
    memcpy(ch->sizes[ch->tail], sizes, sizeof(sizes));
    ch->tail = (ch->tail + 1) % DEPTH;
    ch->count++;
    pthread_cond_broadcast(&ch->cond);
    pthread_mutex_unlock(&ch->lock);
  }
  for (int i = 0; i < nc; i++) {
    pthread_mutex_lock(&chans[i].lock);
    chans[i].done = 1;
    pthread_cond_broadcast(&chans[i].cond);
    pthread_mutex_unlock(&chans[i].lock);
  }
  for (int i = 0; i < nc; i++) pthread_join(t[i], NULL);
  CHECK("every object consumed", consumed == produced);
  CHECK("no object changed between producer and consumer", corrupt == 0);
  free(t);
  free(chans);
  return check_summary("prodcons");
}
