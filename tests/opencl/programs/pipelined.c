/* SPDX-License-Identifier: MIT */
/* Large buffer reads and writes, which ava sends in pieces through the
 * shared heap (the e2e test runs this with small pieces, AVA_PIPELINE_CHUNK):
 * sizes and offsets around piece multiples, blocking and non-blocking, on an
 * in-order and an out-of-order queue, one transfer of 1 GiB, gated by a user event set only after
 * the calls returned, from several threads at once, and the errors of bad
 * arguments and of a failed event in the wait list. Every byte that lands is
 * checked, and so are the bytes around it that must keep their sentinel. */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "common.h"

enum { KiB = 1 << 10, MiB = 1 << 20, SENTINEL = 0x5A, WATCHDOG_S = 60, THREADS = 3 };

static OclEnv g_env;

/* A call that blocks for ever fails the program and names the case. */
static const char *volatile g_case = "";

static void on_alarm(int sig) {
  (void)sig;
  const char *s = g_case;
  size_t n = 0;
  while (s[n] != '\0')
    ++n;
  ssize_t r = write(2, "HANG in case ", 13);
  r = write(2, s, n);
  r = write(2, "\n", 1);
  (void)r;
  _exit(3);
}

static uint8_t *xmalloc(size_t n) {
  uint8_t *p = (uint8_t *)malloc(n);
  if (p == NULL) {
    fprintf(stderr, "out of memory (%zu bytes)\n", n);
    exit(2);
  }
  return p;
}

/* Byte i of the pattern for seed: differs between neighbours and pieces. */
static uint8_t pattern(uint32_t seed, size_t i) {
  uint32_t x = (uint32_t)i * 2654435761u + seed * 40503u;
  return (uint8_t)(x >> 13 ^ x >> 24 ^ (uint32_t)i);
}

static void fill(uint8_t *p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; ++i)
    p[i] = pattern(seed, i);
}

/* Where p[0..n) differs from the pattern; n when it does not. */
static size_t first_wrong(const uint8_t *p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != pattern(seed, i))
      return i;
  return n;
}

static int sentinels_kept(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != SENTINEL)
      return 0;
  return 1;
}

/* One round trip: write size bytes at offset, read them back into a
 * buffer with sentinels on both sides, check both. The read waits for the
 * write's event when it does not block, or when wait says so (a blocking
 * write has completed: the wait list is then one that completed already). */
static void round_trip(cl_command_queue q, cl_mem buf, size_t offset, size_t size, cl_bool blocking,
                       int wait, uint32_t seed, const char *what) {
  enum { GUARD = 64 };
  uint8_t *src = xmalloc(size);
  uint8_t *dst = xmalloc(size + 2 * GUARD);
  cl_event wev = NULL, rev = NULL;
  cl_command_type type = 0;

  /* The watchdog catches a hang of this case, not a slow machine's total. */
  alarm(size > 256 * MiB ? 4 * WATCHDOG_S : WATCHDOG_S);
  fill(src, size, seed);
  memset(dst, SENTINEL, size + 2 * GUARD);
  CHECK(clEnqueueWriteBuffer(q, buf, blocking, offset, size, src, 0, NULL, &wev));
  if (blocking) {
    /* The program may reuse its memory once a blocking write returned. */
    memset(src, 0, size);
  }
  const cl_uint waits = !blocking || wait ? 1 : 0;
  CHECK(clEnqueueReadBuffer(q, buf, blocking, offset, size, dst + GUARD, waits,
                            waits ? &wev : NULL, &rev));
  CHECK(clWaitForEvents(1, &rev));
  CHECK(clGetEventInfo(wev, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL));
  EXPECT(type == CL_COMMAND_WRITE_BUFFER, "%s: write event type %#x", what, (unsigned)type);
  CHECK(clGetEventInfo(rev, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL));
  EXPECT(type == CL_COMMAND_READ_BUFFER, "%s: read event type %#x", what, (unsigned)type);
  const size_t at = first_wrong(dst + GUARD, size, seed);
  EXPECT(at == size, "%s: byte %zu of %zu is wrong", what, at, size);
  EXPECT(sentinels_kept(dst, GUARD) && sentinels_kept(dst + GUARD + size, GUARD),
         "%s: a byte outside the destination changed", what);
  CHECK(clReleaseEvent(wev));
  CHECK(clReleaseEvent(rev));
  free(src);
  free(dst);
}

/* Sizes around multiples of the pieces the e2e test asks for (64 KiB) and
 * of the default (8 MiB). */
static const size_t kSizes[] = {
    1,           4095,          64 * KiB - 1,  64 * KiB, 64 * KiB + 1, 128 * KiB - 1,
    128 * KiB,   128 * KiB + 1, 192 * KiB + 7, MiB + 3,  8 * MiB,      16 * MiB + 1,
    24 * MiB + 5};
static const size_t kOffsets[] = {0, 1, 4093};

static void sizes_and_offsets(cl_command_queue q, const char *queue_name) {
  cl_mem buf = ocl_buffer(&g_env, CL_MEM_READ_WRITE, 24 * MiB + 5 + 4093, NULL);
  char what[128];
  uint32_t seed = 1;

  for (size_t s = 0; s < sizeof kSizes / sizeof kSizes[0]; ++s)
    for (size_t o = 0; o < sizeof kOffsets / sizeof kOffsets[0]; ++o)
      for (int blocking = 1; blocking >= 0; --blocking) {
        snprintf(what, sizeof what, "%s queue, %s, %zu bytes at %zu", queue_name,
                 blocking ? "blocking" : "non-blocking", kSizes[s], kOffsets[o]);
        g_case = what;
        round_trip(q, buf, kOffsets[o], kSizes[s], blocking ? CL_TRUE : CL_FALSE, o == 1, seed++,
                   what);
      }
  CHECK(clReleaseMemObject(buf));
  printf("%s queue: %zu sizes x %zu offsets, blocking and not: ok\n", queue_name,
         sizeof kSizes / sizeof kSizes[0], sizeof kOffsets / sizeof kOffsets[0]);
}

/* One blocking round trip of 1 GiB and 5 bytes at an odd offset: with 64
 * KiB pieces some 16000 of them each way, and a transfer four times the
 * shm heap. */
static void one_gib(cl_command_queue q) {
  const size_t size = (size_t)1 << 30 | 5, offset = 4093;
  cl_ulong max_alloc = 0;
  CHECK(clGetDeviceInfo(g_env.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc,
                        NULL));
  if (max_alloc < offset + size) {
    printf("1 GiB: the device allocates at most %llu bytes at once\n",
           (unsigned long long)max_alloc);
    return;
  }
  cl_mem buf = ocl_buffer(&g_env, CL_MEM_READ_WRITE, offset + size, NULL);
  g_case = "1 GiB + 5 bytes at 4093, blocking";
  round_trip(q, buf, offset, size, CL_TRUE, 1, 4242, g_case);
  CHECK(clReleaseMemObject(buf));
  alarm(WATCHDOG_S);
  printf("1 GiB + 5 bytes at 4093, blocking: ok\n");
}

/* Non-blocking transfers behind a user event the program sets only after
 * both calls returned: natively they return at once, and so must they here. */
static void gated_by_user_event(cl_command_queue q) {
  const size_t size = 3 * MiB + 17;
  cl_mem buf = ocl_buffer(&g_env, CL_MEM_READ_WRITE, size, NULL);
  uint8_t *src = xmalloc(size), *dst = xmalloc(size);
  cl_int err;
  cl_event gate = clCreateUserEvent(g_env.context, &err), wev, rev;
  cl_int status = 0;

  CHECK_ERR(err, "clCreateUserEvent");
  g_case = "gated by a user event";
  fill(src, size, 77);
  memset(dst, SENTINEL, size);
  CHECK(clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, size, src, 1, &gate, &wev));
  CHECK(clEnqueueReadBuffer(q, buf, CL_FALSE, 0, size, dst, 1, &wev, &rev));
  CHECK(clGetEventInfo(rev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
  EXPECT(status != CL_COMPLETE, "the read completed before its gate was set");
  EXPECT(sentinels_kept(dst, size), "bytes landed before the gate was set");
  CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &rev));
  EXPECT(first_wrong(dst, size, 77) == size, "gated transfer: wrong bytes");
  CHECK(clReleaseEvent(gate));
  CHECK(clReleaseEvent(wev));
  CHECK(clReleaseEvent(rev));
  CHECK(clReleaseMemObject(buf));
  free(src);
  free(dst);
  printf("non-blocking transfers gated by a user event: ok\n");
}

struct Worker {
  int index;
  cl_command_queue queue;
};

static void *thread_main(void *arg) {
  const struct Worker *w = (const struct Worker *)arg;
  const size_t size = 5 * MiB + (size_t)w->index * 4099;
  cl_mem buf = ocl_buffer(&g_env, CL_MEM_READ_WRITE, size + 11, NULL);
  char what[64];

  for (int round = 0; round < 4; ++round) {
    snprintf(what, sizeof what, "thread %d round %d", w->index, round);
    round_trip(w->queue, buf, (size_t)round * 3, size, round % 2 == 0 ? CL_TRUE : CL_FALSE, 1,
               (uint32_t)(1000 + w->index * 10 + round), what);
  }
  CHECK(clReleaseMemObject(buf));
  return NULL;
}

/* Threads with a queue each, and threads sharing one queue. */
static void threads(int shared_queue) {
  pthread_t tid[THREADS];
  struct Worker w[THREADS];
  cl_command_queue shared = shared_queue ? ocl_queue(&g_env, 0) : NULL;

  g_case = shared_queue ? "threads sharing a queue" : "threads with a queue each";
  for (int i = 0; i < THREADS; ++i) {
    w[i].index = i;
    w[i].queue = shared_queue ? shared : ocl_queue(&g_env, 0);
    if (pthread_create(&tid[i], NULL, thread_main, &w[i]) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      exit(2);
    }
  }
  for (int i = 0; i < THREADS; ++i) {
    pthread_join(tid[i], NULL);
    if (!shared_queue)
      CHECK(clReleaseCommandQueue(w[i].queue));
  }
  if (shared_queue)
    CHECK(clReleaseCommandQueue(shared));
  printf("%d threads, %s: ok\n", THREADS, shared_queue ? "one queue" : "a queue each");
}

/* The errors of the whole call, with nothing written. */
static void errors(cl_command_queue q) {
  const size_t size = 2 * MiB;
  cl_mem buf = ocl_buffer(&g_env, CL_MEM_READ_WRITE, size, NULL);
  uint8_t *host = xmalloc(2 * size);
  uint8_t *back = xmalloc(size);
  cl_event ev = NULL;
  cl_int err;

  g_case = "errors";
  fill(host, 2 * size, 5);
  CHECK(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, size, host, 0, NULL, NULL));
  printf("write past the end: %s\n",
         cl_err_name(clEnqueueWriteBuffer(q, buf, CL_TRUE, 1, size, host, 0, NULL, NULL)));
  printf("read past the end: %s\n",
         cl_err_name(clEnqueueReadBuffer(q, buf, CL_TRUE, MiB, size, back, 0, NULL, NULL)));
  printf("write to no buffer: %s\n",
         cl_err_name(clEnqueueWriteBuffer(q, NULL, CL_TRUE, 0, size, host, 0, NULL, NULL)));
  printf("read into NULL: %s\n",
         cl_err_name(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, size, NULL, 0, NULL, NULL)));
  printf("write with a count and no wait list: %s\n",
         cl_err_name(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, size, host, 1, NULL, NULL)));
  printf("write on no queue: %s\n",
         cl_err_name(clEnqueueWriteBuffer(NULL, buf, CL_TRUE, 0, size, host, 0, NULL, &ev)));

  /* A wait list whose user event failed: the write's event fails. (A
   * blocking write after it never returns from PoCL, natively.) */
  cl_event failed = clCreateUserEvent(g_env.context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  CHECK(clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, size, host + 1, 1, &failed, &ev));
  CHECK(clSetUserEventStatus(failed, -1));
  printf("waiting for a write after a failed event: %s\n", cl_err_name(clWaitForEvents(1, &ev)));
  CHECK(clReleaseEvent(ev));
  CHECK(clReleaseEvent(failed));
  CHECK(clFinish(q));

  /* None of the refused calls wrote a byte. */
  CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, size, back, 0, NULL, NULL));
  EXPECT(first_wrong(back, size, 5) == size, "a refused write changed the buffer");
  CHECK(clReleaseMemObject(buf));
  free(host);
  free(back);
}

int main(void) {
  signal(SIGALRM, on_alarm);
  alarm(WATCHDOG_S);
  g_env = ocl_env_open();

  cl_command_queue in_order = ocl_queue(&g_env, 0);
  sizes_and_offsets(in_order, "in-order");
  cl_command_queue_properties props = 0;
  CHECK(clGetDeviceInfo(g_env.device, CL_DEVICE_QUEUE_ON_HOST_PROPERTIES, sizeof props, &props,
                        NULL));
  if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
    cl_command_queue ooo = ocl_queue(&g_env, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    sizes_and_offsets(ooo, "out-of-order");
    CHECK(clReleaseCommandQueue(ooo));
  } else {
    printf("out-of-order queue: not supported\n");
  }
  one_gib(in_order);
  gated_by_user_event(in_order);
  threads(0);
  threads(1);
  errors(in_order);
  CHECK(clReleaseCommandQueue(in_order));
  ocl_env_close(&g_env);
  return ocl_finish();
}
