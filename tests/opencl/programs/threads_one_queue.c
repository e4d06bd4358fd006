/* SPDX-License-Identifier: MIT */
/* Four threads enqueue non-blocking writes, kernels and non-blocking reads
 * (each on its own buffer) to ONE shared in-order queue. Results are checked
 * after all threads joined and the queue finished; printing is by thread. */
#include <pthread.h>

#include "common.h"

enum { THREADS = 4, ITERS = 40, M = 64, CHECK_EVERY = 10 };

static OclEnv g_env;
static cl_command_queue g_q;
static cl_program g_prog;

static const char kSource[] = "__kernel void inc(__global int *d, int by) {\n"
                              "  d[get_global_id(0)] += by;\n"
                              "}\n";

typedef struct {
  int id;
  cl_int src[ITERS][M];
  cl_int dst[ITERS][M];
  int blocking_ok;
  cl_int err;
} Worker;

static cl_int expected(int t, int it, int i) {
  return t * 1000000 + it * 1000 + i + (t + 1);
}

/* Errors are recorded, not fatal: the main thread reports them in order. */
#define TRY(call)                                                                                  \
  do {                                                                                             \
    cl_int try_err_ = (call);                                                                      \
    if (try_err_ != CL_SUCCESS) {                                                                  \
      w->err = try_err_;                                                                           \
      fprintf(stderr, "thread %d: %s -> %s\n", w->id, #call, cl_err_name(try_err_));               \
      return NULL;                                                                                 \
    }                                                                                              \
  } while (0)

static void *work(void *arg) {
  Worker *w = arg;
  cl_int err;
  /* A cl_kernel's arguments are not thread-safe: one kernel object per thread. */
  cl_kernel k = clCreateKernel(g_prog, "inc", &err);
  TRY(err);
  cl_mem m = clCreateBuffer(g_env.context, CL_MEM_READ_WRITE, M * sizeof(cl_int), NULL, &err);
  TRY(err);
  const cl_int by = w->id + 1;
  TRY(clSetKernelArg(k, 0, sizeof m, &m));
  TRY(clSetKernelArg(k, 1, sizeof by, &by));
  w->blocking_ok = 1;
  for (int it = 0; it < ITERS; ++it) {
    for (int i = 0; i < M; ++i)
      w->src[it][i] = w->id * 1000000 + it * 1000 + i;
    TRY(clEnqueueWriteBuffer(g_q, m, CL_FALSE, 0, sizeof w->src[it], w->src[it], 0, NULL, NULL));
    const size_t gws = M;
    TRY(clEnqueueNDRangeKernel(g_q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
    const cl_bool blocking = it % CHECK_EVERY == CHECK_EVERY - 1;
    TRY(clEnqueueReadBuffer(g_q, m, blocking, 0, sizeof w->dst[it], w->dst[it], 0, NULL, NULL));
    if (blocking)
      for (int i = 0; i < M; ++i)
        w->blocking_ok &= w->dst[it][i] == expected(w->id, it, i);
  }
  /* Release only after the queue drained this thread's commands. */
  TRY(clFinish(g_q));
  TRY(clReleaseMemObject(m));
  TRY(clReleaseKernel(k));
  return NULL;
}

int main(void) {
  g_env = ocl_env_open();
  g_q = ocl_queue(&g_env, 0);
  g_prog = ocl_build(&g_env, kSource, NULL);
  static Worker workers[THREADS];
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; ++t) {
    workers[t].id = t;
    if (pthread_create(&threads[t], NULL, work, &workers[t]) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      return 2;
    }
  }
  for (int t = 0; t < THREADS; ++t)
    pthread_join(threads[t], NULL);
  CHECK(clFinish(g_q));

  printf("%d threads x %d iterations of write + kernel + read on one queue\n", THREADS, ITERS);
  for (int t = 0; t < THREADS; ++t) {
    const Worker *w = &workers[t];
    int bad = 0;
    for (int it = 0; it < ITERS; ++it)
      for (int i = 0; i < M; ++i)
        bad += w->dst[it][i] != expected(t, it, i);
    printf("thread %d: %s, wrong values %d, blocking reads ok %s, checksum %08x\n", t,
           cl_err_name(w->err), bad, yes_no(w->blocking_ok), checksum(w->dst, sizeof w->dst));
    EXPECT(w->err == CL_SUCCESS && bad == 0 && w->blocking_ok, "thread %d", t);
  }
  CHECK(clReleaseProgram(g_prog));
  CHECK(clReleaseCommandQueue(g_q));
  ocl_env_close(&g_env);
  return ocl_finish();
}
