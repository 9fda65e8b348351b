/* mmsw.c — the Smith-Waterman test-bed of the streaming module: scans every
 * sequence of a protein database with one query, on a farm.
 *
 * Layer: program; uses stream/sw (kernels, FASTA, matrices) and the farm of
 * include/mmalloc/stream.h.  This is the FastFlow paper's SWPS3 port
 * ([FastFlow] in docs/sources.md, section 3.2) on our farm:
 *
 *   emitter (reads DB.fa,      workers (striped SW,       collector (prints
 *   one task per sequence) --> score one task each) --> "score\tname" in
 *                                                         database order)
 *
 * Tasks come from mm_farm_task_alloc (allocation over queues: the blocks go
 * back to the emitter to be freed there); collection is ordered; scheduling
 * is round-robin by default: with ordered collection a long sequence holds
 * back the output of every later one anyway, so on-demand balancing buys
 * little, and its extra queue (the collector's log) cost 10-20% at query
 * 100 when measured (--sched demand keeps it available).  The query
 * profiles are built once before the farm starts and shared read-only; each
 * worker builds its own scratch rows in its own thread (init hook).
 *
 * Exit status: 0 success; 2 bad usage or bad input (FASTA errors are one
 * line "mmsw: FILE:LINE: what is wrong"); 1 anything else (out of memory, a
 * thread that cannot start, a write error).
 *
 * Invariants
 *   task->codes[0..len) and task->name live in the task block itself;
 *   the run's counters are touched by the collector only (or the single
 *   thread of --serial) until the farm has been waited for;
 *   aligners[i] belongs to worker i.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mmalloc/stream.h"
#include "sw_fasta.h"
#include "sw_matrix.h"
#include "sw_striped.h"

#define MMSW_EXIT_FAIL 1
#define MMSW_EXIT_INPUT 2

/* One database sequence on its way through the farm. */
typedef struct mmsw_task {
  size_t len;       /* residues */
  int score;        /* set by the worker */
  sw_width_t width; /* set by the worker */
  char *name;       /* points into this block, after codes */
  uint8_t codes[];  /* len codes, then the name and its NUL */
} mmsw_task_t;

typedef struct mmsw_run {
  /* const while the farm runs */
  const sw_query_t *query;
  sw_fasta_t *db;
  sw_aligner_t **aligners; /* [nworkers] */
  /* written by the emitter, read after the join */
  char error[600];
  /* collector only */
  uint64_t sequences, residues;
  uint64_t width_count[3];
  bool write_failed;
} mmsw_run_t;

static void usage(FILE *out) {
  fprintf(out,
    "usage: mmsw -q QUERY.fa -d DB.fa [-m blosum50|blosum62] [-o GAP_OPEN]\n"
    "            [-e GAP_EXTEND] [-t THREADS] [--queue lockfree|mutex]\n"
    "            [--sched demand|rr] [--isa auto|sse2|avx2] [--serial]\n"
    "\n"
    "Scores every sequence of DB.fa against the (single) sequence of QUERY.fa\n"
    "with Smith-Waterman local alignment, Farrar's striped SIMD method, and\n"
    "prints one line per database sequence, in database order:\n"
    "    score<TAB>name\n"
    "then a summary on stderr (cells, seconds, GCUPS = query length x\n"
    "database residues / seconds).\n"
    "\n"
    "  -m MATRIX     substitution matrix: blosum50 (default) or blosum62\n"
    "  -o GAP_OPEN   default 10    a gap of length k costs\n"
    "  -e GAP_EXTEND default 2         GAP_OPEN + (k - 1) * GAP_EXTEND\n"
    "                (parasail's -o/-e; SWPS3/FastFlow's \"O-Ek\" penalty, a\n"
    "                gap costing O + E*k, is -o O+E -e E)\n"
    "  -t THREADS    worker threads (default: online CPUs); the farm also\n"
    "                runs an emitter and a collector thread\n"
    "  --queue KIND  the farm's queues: lockfree (default) or mutex\n"
    "  --sched S     task scheduling: rr (round-robin, default) or demand\n"
    "  --isa ISA     auto (default: avx2 if the CPU has it), sse2 or avx2\n"
    "  --serial      no farm: read, align and print in one thread\n");
}

static int parse_int(const char *opt, const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "mmsw: %s wants an integer in %ld..%ld, not '%s'\n", opt, lo, hi, s);
    return -1;
  }
  *out = v;
  return 0;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Reads QUERY.fa: exactly one sequence.  NULL after printing the error. */
static uint8_t *mmsw_read_query(const char *path, size_t *len) {
  char err[600];
  sw_fasta_t *f = sw_fasta_open(path, err, sizeof err);
  if (f == NULL) {
    fprintf(stderr, "mmsw: %s\n", err);
    return NULL;
  }
  sw_record_t rec;
  uint8_t *codes = NULL;
  int rc = sw_fasta_next(f, &rec);
  if (rc == 1) {
    codes = malloc(rec.len);
    if (codes == NULL) {
      fprintf(stderr, "mmsw: %s: out of memory\n", path);
    } else {
      memcpy(codes, rec.codes, rec.len);
      *len = rec.len;
      rc = sw_fasta_next(f, &rec);
      if (rc == 1) {
        fprintf(stderr, "mmsw: %s:%zu: a second sequence '%s': the query file must hold one\n",
                path, rec.line, rec.name);
        free(codes);
        codes = NULL;
      }
    }
  }
  if (rc < 0) {
    fprintf(stderr, "mmsw: %s\n", sw_fasta_error(f));
    free(codes);
    codes = NULL;
  }
  sw_fasta_close(f);
  return codes;
}

/* The collector's work (and --serial's): one output line, the counters. */
static void mmsw_report(mmsw_run_t *run, const mmsw_task_t *task) {
  if (printf("%d\t%s\n", task->score, task->name) < 0) run->write_failed = true;
  run->sequences++;
  run->residues += task->len;
  run->width_count[task->width]++;
}

/* ---- farm nodes ------------------------------------------------------ */

static void *mmsw_emit(void *unused, mm_ctx_t *ctx) {
  (void)unused;
  mmsw_run_t *run = mm_ctx_user(ctx);
  sw_record_t rec;
  int rc = sw_fasta_next(run->db, &rec);
  if (rc == 0) return MM_EOS;
  if (rc < 0) {
    snprintf(run->error, sizeof run->error, "%s", sw_fasta_error(run->db));
    return mm_ctx_fail(ctx, MMSW_EXIT_INPUT);
  }
  mmsw_task_t *task = mm_farm_task_alloc(ctx, sizeof *task + rec.len + rec.name_len + 1);
  if (task == NULL) {
    snprintf(run->error, sizeof run->error, "out of memory");
    return mm_ctx_fail(ctx, MMSW_EXIT_FAIL);
  }
  task->len = rec.len;
  memcpy(task->codes, rec.codes, rec.len);
  task->name = (char *)task->codes + rec.len;
  memcpy(task->name, rec.name, rec.name_len + 1);
  return task;
}

static int mmsw_worker_init(mm_ctx_t *ctx) {
  mmsw_run_t *run = mm_ctx_user(ctx);
  sw_aligner_t *a = sw_aligner_create(run->query);
  if (a == NULL) return MMSW_EXIT_FAIL;
  run->aligners[mm_ctx_index(ctx)] = a;
  return 0;
}

static void mmsw_worker_end(mm_ctx_t *ctx) {
  mmsw_run_t *run = mm_ctx_user(ctx);
  unsigned i = mm_ctx_index(ctx);
  sw_aligner_destroy(run->aligners[i]);
  run->aligners[i] = NULL;
}

static void *mmsw_work(void *item, mm_ctx_t *ctx) {
  mmsw_run_t *run = mm_ctx_user(ctx);
  mmsw_task_t *task = item;
  task->score = sw_align(run->aligners[mm_ctx_index(ctx)], task->codes, task->len,
                         &task->width);
  if (task->score < 0) {
    mm_farm_task_free(ctx, task);
    return mm_ctx_fail(ctx, MMSW_EXIT_FAIL); /* the 32-bit rung's malloc */
  }
  return task;
}

static void *mmsw_collect(void *item, mm_ctx_t *ctx) {
  mmsw_run_t *run = mm_ctx_user(ctx);
  mmsw_report(run, item);
  mm_farm_task_free(ctx, item);
  return MM_GO_ON;
}

static void mmsw_drop(void *item, void *user) {
  (void)user;
  free(item); /* a task block may always go to plain free() */
}

static int mmsw_run_farm(mmsw_run_t *run, unsigned nworkers, mm_queue_kind_t kind,
                         mm_sched_t sched) {
  run->aligners = calloc(nworkers, sizeof *run->aligners);
  if (run->aligners == NULL) {
    snprintf(run->error, sizeof run->error, "out of memory");
    return MMSW_EXIT_FAIL;
  }
  mm_farm_config_t cfg;
  mm_farm_config_init(&cfg);
  cfg.nworkers = nworkers;
  cfg.emitter.svc = mmsw_emit;
  cfg.emitter.user = run;
  cfg.worker.svc = mmsw_work;
  cfg.worker.user = run;
  cfg.worker.init = mmsw_worker_init;
  cfg.worker.end = mmsw_worker_end;
  cfg.collector.svc = mmsw_collect;
  cfg.collector.user = run;
  cfg.collect = true;
  cfg.sched = sched;
  cfg.order = MM_ORDER_ORDERED;
  cfg.queue = kind;
  cfg.drop = mmsw_drop;
  mm_farm_t *farm = mm_farm_create(&cfg);
  if (farm == NULL) {
    snprintf(run->error, sizeof run->error, "cannot create the farm: %s", strerror(errno));
    free(run->aligners);
    return MMSW_EXIT_FAIL;
  }
  int rc = mm_farm_run(farm);
  mm_farm_destroy(farm);
  free(run->aligners);
  run->aligners = NULL;
  if (rc != 0 && run->error[0] == '\0') {
    snprintf(run->error, sizeof run->error, "the farm stopped: %s",
             rc == MMSW_EXIT_FAIL ? "out of memory" : strerror(rc));
  }
  if (rc != 0 && rc != MMSW_EXIT_INPUT) rc = MMSW_EXIT_FAIL;
  return rc;
}

/* --serial: the same work in one thread, no queue at all (a baseline). */
static int mmsw_run_serial(mmsw_run_t *run) {
  sw_aligner_t *a = sw_aligner_create(run->query);
  mmsw_task_t task;
  if (a == NULL) {
    snprintf(run->error, sizeof run->error, "out of memory");
    return MMSW_EXIT_FAIL;
  }
  sw_record_t rec;
  int rc;
  while ((rc = sw_fasta_next(run->db, &rec)) == 1) {
    task.len = rec.len;
    task.score = sw_align(a, rec.codes, rec.len, &task.width);
    task.name = (char *)rec.name;
    if (task.score < 0) {
      snprintf(run->error, sizeof run->error, "out of memory");
      sw_aligner_destroy(a);
      return MMSW_EXIT_FAIL;
    }
    mmsw_report(run, &task);
  }
  sw_aligner_destroy(a);
  if (rc < 0) {
    snprintf(run->error, sizeof run->error, "%s", sw_fasta_error(run->db));
    return MMSW_EXIT_INPUT;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *query_path = NULL, *db_path = NULL, *matrix_name = "blosum50";
  long open = 10, extend = 2;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  long threads = cpus > 0 ? cpus : 1;
  mm_queue_kind_t kind = MM_QUEUE_LOCKFREE;
  mm_sched_t sched = MM_SCHED_ROUND_ROBIN;
  sw_isa_t isa = sw_isa_best();
  bool serial = false;

  enum { OPT_QUEUE = 256, OPT_SCHED, OPT_ISA, OPT_SERIAL };
  static const struct option longopts[] = {
      {"queue", required_argument, NULL, OPT_QUEUE},
      {"sched", required_argument, NULL, OPT_SCHED},
      {"isa", required_argument, NULL, OPT_ISA},
      {"serial", no_argument, NULL, OPT_SERIAL},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "q:d:m:o:e:t:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'q': query_path = optarg; break;
    case 'd': db_path = optarg; break;
    case 'm': matrix_name = optarg; break;
    case 'o':
      if (parse_int("-o", optarg, 0, SW_GAP_MAX, &open)) return MMSW_EXIT_INPUT;
      break;
    case 'e':
      if (parse_int("-e", optarg, 0, SW_GAP_MAX, &extend)) return MMSW_EXIT_INPUT;
      break;
    case 't':
      if (parse_int("-t", optarg, 1, 1024, &threads)) return MMSW_EXIT_INPUT;
      break;
    case OPT_QUEUE:
      if (mm_queue_kind_parse(optarg, &kind) != 0) {
        fprintf(stderr, "mmsw: --queue wants lockfree or mutex, not '%s'\n", optarg);
        return MMSW_EXIT_INPUT;
      }
      break;
    case OPT_SCHED:
      if (strcmp(optarg, "demand") == 0) {
        sched = MM_SCHED_ON_DEMAND;
      } else if (strcmp(optarg, "rr") == 0) {
        sched = MM_SCHED_ROUND_ROBIN;
      } else {
        fprintf(stderr, "mmsw: --sched wants demand or rr, not '%s'\n", optarg);
        return MMSW_EXIT_INPUT;
      }
      break;
    case OPT_ISA:
      if (sw_isa_parse(optarg, &isa) != 0) {
        fprintf(stderr, "mmsw: --isa wants auto, sse2 or avx2, not '%s'\n", optarg);
        return MMSW_EXIT_INPUT;
      }
      if (!sw_isa_supported(isa)) {
        fprintf(stderr, "mmsw: this CPU has no %s\n", sw_isa_name(isa));
        return MMSW_EXIT_INPUT;
      }
      break;
    case OPT_SERIAL: serial = true; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return MMSW_EXIT_INPUT;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "mmsw: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return MMSW_EXIT_INPUT;
  }
  if (query_path == NULL || db_path == NULL) {
    fprintf(stderr, "mmsw: -q QUERY.fa and -d DB.fa are required\n");
    usage(stderr);
    return MMSW_EXIT_INPUT;
  }
  const sw_matrix_t *matrix = sw_matrix_lookup(matrix_name);
  if (matrix == NULL) {
    fprintf(stderr, "mmsw: -m wants blosum50 or blosum62, not '%s'\n", matrix_name);
    return MMSW_EXIT_INPUT;
  }

  size_t qlen = 0;
  uint8_t *qcodes = mmsw_read_query(query_path, &qlen);
  if (qcodes == NULL) return MMSW_EXIT_INPUT;
  char err[600];
  mmsw_run_t run;
  memset(&run, 0, sizeof run);
  run.db = sw_fasta_open(db_path, err, sizeof err);
  if (run.db == NULL) {
    fprintf(stderr, "mmsw: %s\n", err);
    free(qcodes);
    return MMSW_EXIT_INPUT;
  }
  sw_query_t *query = sw_query_create(qcodes, qlen, matrix, (int)open, (int)extend, isa);
  free(qcodes);
  if (query == NULL) {
    fprintf(stderr, "mmsw: cannot build the query profile: %s\n", strerror(errno));
    sw_fasta_close(run.db);
    return MMSW_EXIT_FAIL;
  }
  run.query = query;
  static char outbuf[1 << 16];
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);

  double t0 = now_seconds();
  int rc = serial ? mmsw_run_serial(&run)
                  : mmsw_run_farm(&run, (unsigned)threads, kind, sched);
  double secs = now_seconds() - t0;
  if (fflush(stdout) != 0) run.write_failed = true;
  sw_fasta_close(run.db);
  sw_query_destroy(query);

  if (rc != 0) {
    fprintf(stderr, "mmsw: %s\n", run.error);
    return rc;
  }
  if (run.write_failed) {
    fprintf(stderr, "mmsw: cannot write the results: %s\n", strerror(errno));
    return MMSW_EXIT_FAIL;
  }
  double cells = (double)qlen * (double)run.residues;
  double n = run.sequences ? (double)run.sequences : 1.0;
  char how[64];
  if (serial)
    snprintf(how, sizeof how, "serial");
  else
    snprintf(how, sizeof how, "%ld workers, %s queues, %s", threads,
             mm_queue_kind_name(kind), sched == MM_SCHED_ON_DEMAND ? "on-demand" : "round-robin");
  fprintf(stderr,
          "mmsw: %" PRIu64 " sequences, %" PRIu64 " residues, query %zu, cells %.3g, "
          "%.3f s, %.2f GCUPS (%s, 8-bit %.2f%%, 16-bit %.2f%%, 32-bit %" PRIu64 "; %s)\n",
          run.sequences, run.residues, qlen, cells, secs,
          secs > 0 ? cells / secs * 1e-9 : 0.0, sw_isa_name(isa),
          100.0 * (double)run.width_count[SW_WIDTH_8] / n,
          100.0 * (double)run.width_count[SW_WIDTH_16] / n,
          run.width_count[SW_WIDTH_32], how);
  return 0;
}
