/* SPDX-License-Identifier: MIT */
/* Several queues: four threads with a queue each; event dependencies across
 * queues (a producer on one queue, a consumer on another waiting on its
 * event, enqueued from different threads); a chain across three queues. */
#include <pthread.h>

#include "common.h"

enum { THREADS = 4, ITERS = 30, M = 128 };

static OclEnv g_env;
static cl_program g_prog;

static const char kSource[] =
    "__kernel void inc(__global int *d, int by) {\n"
    "  d[get_global_id(0)] += by;\n"
    "}\n"
    "__kernel void muladd(__global int *out, __global const int *in, int mul, int add) {\n"
    "  size_t i = get_global_id(0);\n"
    "  out[i] = in[i] * mul + add;\n"
    "}\n";

static cl_kernel kernel(const char *name) {
  cl_int err;
  cl_kernel k = clCreateKernel(g_prog, name, &err);
  CHECK_ERR(err, name);
  return k;
}

static void enqueue_mad(cl_command_queue q, cl_kernel k, cl_mem out, cl_mem in, cl_int mul,
                        cl_int add, cl_uint nwait, const cl_event *wait, cl_event *ev) {
  CHECK(clSetKernelArg(k, 0, sizeof out, &out));
  CHECK(clSetKernelArg(k, 1, sizeof in, &in));
  CHECK(clSetKernelArg(k, 2, sizeof mul, &mul));
  CHECK(clSetKernelArg(k, 3, sizeof add, &add));
  const size_t gws = M;
  CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gws, NULL, nwait, wait, ev));
}

/* Part 1: each thread its own queue and buffer. */
typedef struct {
  int id;
  cl_int result[M];
  cl_int err;
} Own;

static void *own_queue(void *arg) {
  Own *w = arg;
  cl_command_queue q = ocl_queue(&g_env, 0);
  cl_kernel k = kernel("inc");
  cl_int init[M];
  for (int i = 0; i < M; ++i)
    init[i] = i * (w->id + 1);
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof init, init);
  CHECK(clSetKernelArg(k, 0, sizeof m, &m));
  for (int it = 0; it < ITERS; ++it) {
    const cl_int by = it + w->id;
    CHECK(clSetKernelArg(k, 1, sizeof by, &by));
    const size_t gws = M;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
    if (it % 7 == 0)
      CHECK(clFlush(q));
  }
  CHECK(clEnqueueReadBuffer(q, m, CL_FALSE, 0, sizeof w->result, w->result, 0, NULL, NULL));
  w->err = clFinish(q);
  CHECK(clReleaseMemObject(m));
  CHECK(clReleaseKernel(k));
  CHECK(clReleaseCommandQueue(q));
  return NULL;
}

/* Part 2: producer and consumer threads, each with a queue. The producer's
 * kernel is held back by a user event that the consumer completes only after
 * it enqueued the dependent kernel, so the dependency really orders them. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  cl_event produced; /* set by the producer */
  cl_event gate;
  cl_mem a, b;
  int round;
  cl_int consumed[M];
} Handoff;

static void *producer(void *arg) {
  Handoff *h = arg;
  cl_command_queue q = ocl_queue(&g_env, 0);
  cl_kernel k = kernel("muladd");
  cl_int src[M];
  for (int i = 0; i < M; ++i)
    src[i] = i;
  cl_mem in = ocl_buffer(&g_env, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof src, src);
  cl_event ev;
  enqueue_mad(q, k, h->a, in, 3, 1, 1, &h->gate, &ev);
  CHECK(clFlush(q));
  pthread_mutex_lock(&h->mu);
  h->produced = ev;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
  CHECK(clFinish(q));
  CHECK(clReleaseMemObject(in));
  CHECK(clReleaseKernel(k));
  CHECK(clReleaseCommandQueue(q));
  return NULL;
}

static void *consumer(void *arg) {
  Handoff *h = arg;
  cl_command_queue q = ocl_queue(&g_env, 0);
  cl_kernel k = kernel("muladd");
  pthread_mutex_lock(&h->mu);
  while (h->produced == NULL)
    pthread_cond_wait(&h->cv, &h->mu);
  cl_event produced = h->produced;
  pthread_mutex_unlock(&h->mu);
  cl_event ev;
  enqueue_mad(q, k, h->b, h->a, 2, 5, 1, &produced, &ev);
  CHECK(clFlush(q));
  CHECK(clSetUserEventStatus(h->gate, CL_COMPLETE));
  CHECK(clEnqueueReadBuffer(q, h->b, CL_TRUE, 0, sizeof h->consumed, h->consumed, 1, &ev, NULL));
  CHECK(clReleaseEvent(ev));
  CHECK(clReleaseKernel(k));
  CHECK(clReleaseCommandQueue(q));
  return NULL;
}

static void handoff(void) {
  static Handoff h;
  pthread_mutex_init(&h.mu, NULL);
  pthread_cond_init(&h.cv, NULL);
  cl_int err;
  h.gate = clCreateUserEvent(g_env.context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  h.a = ocl_buffer(&g_env, CL_MEM_READ_WRITE, M * sizeof(cl_int), NULL);
  h.b = ocl_buffer(&g_env, CL_MEM_READ_WRITE, M * sizeof(cl_int), NULL);
  pthread_t p, c;
  if (pthread_create(&c, NULL, consumer, &h) != 0 || pthread_create(&p, NULL, producer, &h) != 0) {
    fprintf(stderr, "pthread_create failed\n");
    exit(2);
  }
  pthread_join(p, NULL);
  pthread_join(c, NULL);
  int bad = 0;
  for (int i = 0; i < M; ++i)
    bad += h.consumed[i] != (i * 3 + 1) * 2 + 5;
  printf("producer thread (queue A) -> consumer thread (queue B, waits on A's event): wrong %d, "
         "[0]=%d [%d]=%d\n",
         bad, h.consumed[0], M - 1, h.consumed[M - 1]);
  EXPECT(bad == 0, "cross-queue dependency");
  CHECK(clReleaseEvent(h.produced));
  CHECK(clReleaseEvent(h.gate));
  CHECK(clReleaseMemObject(h.a));
  CHECK(clReleaseMemObject(h.b));
}

/* Part 3: a chain over three queues, each link waiting on the previous one. */
static void chain(void) {
  cl_command_queue q[3];
  cl_kernel k[3];
  cl_mem buf[4];
  for (int i = 0; i < 3; ++i) {
    q[i] = ocl_queue(&g_env, i == 1 ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0);
    k[i] = kernel("muladd");
  }
  cl_int src[M];
  for (int i = 0; i < M; ++i)
    src[i] = i - 10;
  for (int i = 0; i < 4; ++i)
    buf[i] = ocl_buffer(&g_env, CL_MEM_READ_WRITE, sizeof src, NULL);
  cl_event w, e[3];
  CHECK(clEnqueueWriteBuffer(q[0], buf[0], CL_FALSE, 0, sizeof src, src, 0, NULL, &w));
  enqueue_mad(q[0], k[0], buf[1], buf[0], 2, 0, 1, &w, &e[0]);
  enqueue_mad(q[1], k[1], buf[2], buf[1], 3, 7, 1, &e[0], &e[1]);
  enqueue_mad(q[2], k[2], buf[3], buf[2], -1, 1000, 1, &e[1], &e[2]);
  cl_int out[M];
  /* The read is on the first queue: it closes the loop back to where it began. */
  CHECK(clEnqueueReadBuffer(q[0], buf[3], CL_TRUE, 0, sizeof out, out, 1, &e[2], NULL));
  int bad = 0;
  for (int i = 0; i < M; ++i)
    bad += out[i] != 1000 - ((i - 10) * 2 * 3 + 7);
  printf("chain over 3 queues (write -> x2 -> x3+7 -> 1000-x, read on the first): wrong %d, "
         "checksum %08x\n",
         bad, checksum(out, sizeof out));
  EXPECT(bad == 0, "three-queue chain");
  cl_int status[3];
  for (int i = 0; i < 3; ++i)
    CHECK(clGetEventInfo(e[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status[i], &status[i],
                         NULL));
  printf("chain events complete: %s %s %s\n", yes_no(status[0] == CL_COMPLETE),
         yes_no(status[1] == CL_COMPLETE), yes_no(status[2] == CL_COMPLETE));
  /* Waiting on events of several queues at once. */
  CHECK(clWaitForEvents(3, e));
  CHECK(clReleaseEvent(w));
  for (int i = 0; i < 3; ++i) {
    CHECK(clReleaseEvent(e[i]));
    CHECK(clReleaseKernel(k[i]));
    CHECK(clReleaseCommandQueue(q[i]));
  }
  for (int i = 0; i < 4; ++i)
    CHECK(clReleaseMemObject(buf[i]));
}

int main(void) {
  g_env = ocl_env_open();
  g_prog = ocl_build(&g_env, kSource, NULL);

  static Own own[THREADS];
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; ++t) {
    own[t].id = t;
    if (pthread_create(&threads[t], NULL, own_queue, &own[t]) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      return 2;
    }
  }
  for (int t = 0; t < THREADS; ++t)
    pthread_join(threads[t], NULL);
  printf("%d threads, a queue each, %d kernels each\n", THREADS, ITERS);
  for (int t = 0; t < THREADS; ++t) {
    /* inc by it + id for it in 0..ITERS-1. */
    const cl_int add = ITERS * (ITERS - 1) / 2 + ITERS * t;
    int bad = 0;
    for (int i = 0; i < M; ++i)
      bad += own[t].result[i] != i * (t + 1) + add;
    printf("thread %d: finish %s, wrong %d, [%d]=%d\n", t, cl_err_name(own[t].err), bad, M - 1,
           own[t].result[M - 1]);
    EXPECT(own[t].err == CL_SUCCESS && bad == 0, "thread %d", t);
  }

  handoff();
  chain();
  CHECK(clReleaseProgram(g_prog));
  ocl_env_close(&g_env);
  return ocl_finish();
}
