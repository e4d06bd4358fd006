/* SPDX-License-Identifier: MIT */
/* Blocking buffer reads whose wait list holds a user event that fails while
 * they wait (issue 14): natively PoCL 3.1 returns CL_SUCCESS and an event
 * whose status is an error, and leaves the destination as it was. Over a
 * socket, large blocking reads go staged (one staging block for 3 MiB, a
 * ring of segments for 40 MiB), and must do the same; a read after each
 * brings the buffer's bytes, whole. Compared with its native output by
 * tests/e2e/test_e2e_opencl_pipelined.cpp, on unix and tcp only: on shm such
 * a read goes in pieces, which differ (the note of the stop that added this
 * says how). An event failed before the read is enqueued makes PoCL itself
 * wait for ever, so it is not tried. */
#include "common.h"

#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

static const size_t kSizes[] = {3u << 20, (40u << 20) + 5};

static void *fail_later(void *event) {
  usleep(100000); /* the read is waiting by then */
  clSetUserEventStatus((cl_event)event, -5);
  return NULL;
}

int main(void) {
  OclEnv env = ocl_env_open();
  cl_command_queue q = ocl_queue(&env, 0);
  for (size_t s = 0; s < sizeof kSizes / sizeof kSizes[0]; ++s) {
    const size_t n = kSizes[s];
    uint8_t *src = malloc(n), *dst = malloc(n);
    if (src == NULL || dst == NULL)
      return 2;
    for (size_t i = 0; i < n; ++i)
      src[i] = (uint8_t)(i * 2654435761u >> 13);
    cl_mem buf = ocl_buffer(&env, CL_MEM_READ_WRITE, n, NULL);
    CHECK(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, n, src, 0, NULL, NULL));
    cl_int err = CL_SUCCESS;
    cl_event gate = clCreateUserEvent(env.context, &err);
    CHECK(err);
    pthread_t helper;
    if (pthread_create(&helper, NULL, fail_later, gate) != 0)
      return 2;
    memset(dst, 0x5a, n);
    cl_event ev = NULL;
    err = clEnqueueReadBuffer(q, buf, CL_TRUE, 0, n, dst, 1, &gate, &ev);
    pthread_join(helper, NULL);
    cl_int status = 0;
    if (ev != NULL)
      CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
    size_t touched = 0;
    for (size_t i = 0; i < n; ++i)
      touched += dst[i] != 0x5a;
    printf("%zu bytes behind an event that failed: %s, event %s (status %s), %zu bytes written\n",
           n, cl_err_name(err), ev == NULL ? "none" : "returned",
           status < 0 ? "an error" : "not an error", touched);
    if (ev != NULL)
      clReleaseEvent(ev);
    ev = NULL;
    err = clEnqueueReadBuffer(q, buf, CL_TRUE, 0, n, dst, 0, NULL, &ev);
    printf("%zu bytes after it: %s, %s\n", n, cl_err_name(err),
           memcmp(src, dst, n) == 0 ? "whole" : "differ");
    if (ev != NULL)
      clReleaseEvent(ev);
    clReleaseEvent(gate);
    clReleaseMemObject(buf);
    free(src);
    free(dst);
  }
  return 0;
}
