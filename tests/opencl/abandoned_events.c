/* SPDX-License-Identifier: MIT */
/* A guest that leaves commands behind user events it never set (the worker
 * fails them when the guest goes: ava_w_at_departure in
 * specs/opencl/opencl_enqueue.spec.inc). Runs only under ava, by
 * tests/e2e/test_e2e_opencl_abandoned.cpp:
 *   exit   enqueues non-blocking reads and writes (and a marker) behind two
 *          user events, one of them already released, and exits unset
 *   wait   the same, then prints "waiting" and blocks in clWaitForEvents
 *          on the user event (natively for ever; the test kills it)
 *   read   the same, then prints "waiting" and blocks in a blocking read
 *          behind the user event
 *   set    the same, then sets the events and checks every read's bytes:
 *          the worker still serves, and gated commands run as natively
 *   move   the same, then prints "waiting" and moves 64 MiB to and from a
 *          buffer on a second queue, blocking, again and again: on shm the
 *          buffer lives in the heap and each transfer is a gate the guest
 *          copies through (opencl_heap.spec.inc), so a kill lands inside
 *          one (between its open and close) about as often as not
 *   released      kernels in order behind a user event, each one's event
 *                 but the last released at once; the program fails the
 *                 user event, and a kernel on another queue still runs.
 *                 Natively PoCL 3.1 aborts in pocl_update_event_failed (it
 *                 frees a released command's event inside its own failure
 *                 cascade); the worker keeps such events (ava_cl_let_go)
 *   released-exit the same, but the program exits without setting it:
 *                 the worker fails it at the guest's departure */
#include "common.h"

#include <unistd.h>

#define N (1u << 20) /* bytes per transfer: staged, and on shm a lent heap block */
#define CHAIN 8

static int released(OclEnv *env, int leave) {
  static const char *const src = "kernel void bump(global int *a) { a[get_global_id(0)] += 1; }";
  cl_command_queue q = ocl_queue(env, 0);
  cl_program p = ocl_build(env, src, NULL);
  cl_kernel k = ocl_kernel(p, "bump");
  const cl_int zero = 0;
  cl_mem buf = ocl_buffer(env, CL_MEM_READ_WRITE, 64 * sizeof(cl_int), NULL);
  CHECK(clEnqueueFillBuffer(q, buf, &zero, sizeof zero, 0, 64 * sizeof(cl_int), 0, NULL, NULL));
  CHECK(clFinish(q));
  CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
  cl_int err;
  cl_event gate = clCreateUserEvent(env->context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  cl_event last = NULL;
  const size_t gws = 64;
  for (int i = 0; i < CHAIN; ++i) {
    cl_event ev;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gws, NULL, i == 0 ? 1 : 0, i == 0 ? &gate : NULL,
                                 &ev));
    if (i + 1 < CHAIN)
      CHECK(clReleaseEvent(ev));
    else
      last = ev;
  }
  CHECK(clFlush(q));
  printf("enqueued\n");
  fflush(stdout);
  if (leave)
    _exit(0);
  CHECK(clSetUserEventStatus(gate, CL_DEVICE_NOT_AVAILABLE));
  cl_int status = CL_COMPLETE;
  CHECK(clGetEventInfo(last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
  printf("released: the last kernel ended with an error: %s\n", yes_no(status < 0));
  EXPECT(status < 0, "the last kernel's status is %d", status);
  /* PoCL queues a later command on q behind the failed one for ever. */
  cl_command_queue q2 = ocl_queue(env, 0);
  CHECK(clEnqueueNDRangeKernel(q2, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
  cl_int out[64];
  CHECK(clEnqueueReadBuffer(q2, buf, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
  printf("released: a kernel on another queue ran once: %s\n", yes_no(out[0] == 1 && out[63] == 1));
  EXPECT(out[0] == 1 && out[63] == 1, "out[0] = %d", out[0]);
  CHECK(clReleaseEvent(last));
  CHECK(clReleaseEvent(gate));
  CHECK(clReleaseCommandQueue(q2));
  CHECK(clReleaseMemObject(buf));
  CHECK(clReleaseKernel(k));
  CHECK(clReleaseProgram(p));
  CHECK(clReleaseCommandQueue(q));
  ocl_env_close(env);
  return ocl_finish();
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s exit|wait|read|set|move|released|released-exit\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  OclEnv env = ocl_env_open();
  if (strcmp(mode, "released") == 0 || strcmp(mode, "released-exit") == 0)
    return released(&env, strcmp(mode, "released-exit") == 0);
  cl_command_queue q = ocl_queue(&env, 0);
  unsigned char *src = malloc(N), *dst = malloc(N), *dst2 = malloc(N);
  if (src == NULL || dst == NULL || dst2 == NULL)
    return 2;
  for (unsigned i = 0; i < N; ++i)
    src[i] = (unsigned char)(i * 7 + 1);
  memset(dst, 0, N);
  memset(dst2, 0, N);
  cl_mem buf = ocl_buffer(&env, CL_MEM_READ_WRITE, N, NULL);
  cl_int err;
  cl_event user = clCreateUserEvent(env.context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  cl_event released = clCreateUserEvent(env.context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  cl_event gates[2] = {user, released};
  cl_event wrote, read, marker;
  CHECK(clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, N, src, 2, gates, &wrote));
  CHECK(clEnqueueReadBuffer(q, buf, CL_FALSE, 0, N, dst, 1, &wrote, &read));
  CHECK(clEnqueueMarkerWithWaitList(q, 1, &read, &marker));
  /* Natively the program could still set it through a command's wait list
   * only; here it lets go of its last reference. */
  if (strcmp(mode, "set") != 0)
    CHECK(clReleaseEvent(released));
  CHECK(clFlush(q));
  printf("enqueued\n");
  fflush(stdout);

  if (strcmp(mode, "exit") == 0) {
    _exit(0); /* no clean-up at all: the commands stay queued */
  } else if (strcmp(mode, "wait") == 0) {
    printf("waiting\n");
    fflush(stdout);
    err = clWaitForEvents(1, &marker);
    fprintf(stderr, "clWaitForEvents returned %s\n", cl_err_name(err));
    return 3;
  } else if (strcmp(mode, "read") == 0) {
    printf("waiting\n");
    fflush(stdout);
    err = clEnqueueReadBuffer(q, buf, CL_TRUE, 0, N, dst2, 1, &marker, NULL);
    fprintf(stderr, "the blocking read returned %s\n", cl_err_name(err));
    return 3;
  } else if (strcmp(mode, "move") == 0) {
    const size_t big = (size_t)64 << 20;
    cl_command_queue q2 = ocl_queue(&env, 0);
    cl_mem moved = ocl_buffer(&env, CL_MEM_READ_WRITE, big, NULL);
    unsigned char *bytes = malloc(big);
    if (bytes == NULL)
      return 2;
    memset(bytes, 0x3c, big);
    printf("waiting\n");
    fflush(stdout);
    /* Bounded: about a minute here, far longer than the test waits to kill it. */
    for (int i = 0; i < 4000; ++i) {
      CHECK(clEnqueueWriteBuffer(q2, moved, CL_TRUE, 0, big, bytes, 0, NULL, NULL));
      CHECK(clEnqueueReadBuffer(q2, moved, CL_TRUE, 0, big, bytes, 0, NULL, NULL));
    }
    fprintf(stderr, "moved for a minute without being killed\n");
    return 3;
  } else if (strcmp(mode, "set") == 0) {
    CHECK(clSetUserEventStatus(user, CL_COMPLETE));
    CHECK(clSetUserEventStatus(released, CL_COMPLETE));
    CHECK(clWaitForEvents(1, &marker));
    EXPECT(memcmp(dst, src, N) == 0, "the read behind the user events has other bytes");
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, N, dst2, 0, NULL, NULL));
    EXPECT(memcmp(dst2, src, N) == 0, "the blocking read has other bytes");
    printf("set: the gated commands ran\n");
    CHECK(clReleaseEvent(user));
    CHECK(clReleaseEvent(released));
    CHECK(clReleaseEvent(wrote));
    CHECK(clReleaseEvent(read));
    CHECK(clReleaseEvent(marker));
    CHECK(clReleaseMemObject(buf));
    CHECK(clReleaseCommandQueue(q));
    ocl_env_close(&env);
    free(src);
    free(dst);
    free(dst2);
    return ocl_finish();
  }
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
