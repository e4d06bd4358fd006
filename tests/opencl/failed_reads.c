/* SPDX-License-Identifier: MIT */
/* Blocking buffer reads whose wait list holds a user event that fails while
 * they wait (issue 14): natively PoCL 3.1 returns CL_SUCCESS and an event
 * whose status is an error, and leaves the destination as it was. Remoted,
 * such a read goes staged (over a socket one staging block for 3 MiB, a ring
 * of segments for 40 MiB; on shm a lent block of the heap) or, for a buffer
 * in shm's heap, gated, and must do the same; a read after each brings the
 * buffer's bytes, whole. Compared with its native output by
 * tests/e2e/test_e2e_opencl_pipelined.cpp on unix, tcp and shm. An event
 * failed before the read is enqueued makes PoCL itself wait for ever, so it
 * is not tried. */
#include "common.h"

#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

/* Sizes, each on a buffer of the device's memory (on shm one in the shared
 * heap: a gated transfer) and on one over the program's memory
 * (CL_MEM_USE_HOST_PTR, never in the heap: on shm the read goes in pieces). */
static const size_t kSizes[] = {4096, 3u << 20, (40u << 20) + 5};

static void *fail_later(void *event) {
  usleep(100000); /* the read is waiting by then */
  clSetUserEventStatus((cl_event)event, -5);
  return NULL;
}

/* A blocking read of mem (a buffer, or an image's region when region is
 * not NULL) into dst (n bytes) behind a user event that fails while it
 * waits; then the same read again with no wait list, compared with src. */
static void read_twice(const OclEnv *env, cl_command_queue q, cl_mem mem, const size_t *region,
                       const uint8_t *src, uint8_t *dst, size_t n) {
  static const size_t origin[3] = {0, 0, 0};
  cl_int err = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(env->context, &err);
  CHECK(err);
  pthread_t helper;
  if (pthread_create(&helper, NULL, fail_later, gate) != 0)
    exit(2);
  memset(dst, 0x5a, n);
  cl_event ev = NULL;
  err = region != NULL
            ? clEnqueueReadImage(q, mem, CL_TRUE, origin, region, 0, 0, dst, 1, &gate, &ev)
            : clEnqueueReadBuffer(q, mem, CL_TRUE, 0, n, dst, 1, &gate, &ev);
  pthread_join(helper, NULL);
  cl_int status = 0;
  if (ev != NULL)
    CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
  size_t touched = 0;
  for (size_t i = 0; i < n; ++i)
    touched += dst[i] != 0x5a;
  printf("%zu bytes behind an event that failed: %s, event %s (status %s), %zu bytes written\n", n,
         cl_err_name(err), ev == NULL ? "none" : "returned",
         status < 0 ? "an error" : "not an error", touched);
  if (ev != NULL)
    clReleaseEvent(ev);
  ev = NULL;
  err = region != NULL
            ? clEnqueueReadImage(q, mem, CL_TRUE, origin, region, 0, 0, dst, 0, NULL, &ev)
            : clEnqueueReadBuffer(q, mem, CL_TRUE, 0, n, dst, 0, NULL, &ev);
  printf("%zu bytes after it: %s, %s\n", n, cl_err_name(err),
         memcmp(src, dst, n) == 0 ? "whole" : "differ");
  if (ev != NULL)
    clReleaseEvent(ev);
  clReleaseEvent(gate);
}

static uint8_t *pattern(size_t n) {
  uint8_t *p = malloc(n);
  if (p == NULL)
    exit(2);
  for (size_t i = 0; i < n; ++i)
    p[i] = (uint8_t)(i * 2654435761u >> 13);
  return p;
}

int main(void) {
  OclEnv env = ocl_env_open();
  cl_command_queue q = ocl_queue(&env, 0);
  for (size_t c = 0; c < 2 * sizeof kSizes / sizeof kSizes[0]; ++c) {
    const size_t n = kSizes[c / 2];
    const int over_host = c % 2;
    uint8_t *src = pattern(n), *dst = malloc(n), *host = over_host ? malloc(n) : NULL;
    if (dst == NULL || (over_host && host == NULL))
      return 2;
    printf("%s:\n", over_host ? "a buffer over the program's memory" : "a buffer");
    cl_mem buf = ocl_buffer(&env, CL_MEM_READ_WRITE | (over_host ? CL_MEM_USE_HOST_PTR : 0), n,
                            host);
    CHECK(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, n, src, 0, NULL, NULL));
    read_twice(&env, q, buf, NULL, src, dst, n);
    clReleaseMemObject(buf);
    free(src);
    free(dst);
    free(host);
  }
  /* An image (its read's destination is out only: no bytes go to the worker). */
  const size_t region[3] = {64, 64, 1}, n = 64 * 64 * 4;
  const cl_image_format format = {CL_RGBA, CL_UNSIGNED_INT8};
  const cl_image_desc desc = {.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = 64,
                              .image_height = 64};
  cl_int err = CL_SUCCESS;
  uint8_t *src = pattern(n), *dst = malloc(n);
  if (dst == NULL)
    return 2;
  cl_mem image = clCreateImage(env.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &format,
                               &desc, src, &err);
  CHECK(err);
  printf("an image:\n");
  read_twice(&env, q, image, region, src, dst, n);
  clReleaseMemObject(image);
  free(src);
  free(dst);
  return 0;
}
