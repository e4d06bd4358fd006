/* SPDX-License-Identifier: MIT */
/* Wait lists that name new events every time, as a program that chains
 * commands across queues makes them: ROUNDS rounds of a kernel on q1, a
 * kernel on q2 behind it and a barrier on q1 behind that, which must give
 * the values of that order (each round also releases its events and takes
 * and drops a reference to the buffer); then the errors a wait list can cause, made
 * after many lists of the same origins succeeded: an event of another
 * context (a command's or a user event's, first or second in the list)
 * gets CL_INVALID_CONTEXT, a NULL event or an inconsistent count
 * CL_INVALID_EVENT_WAIT_LIST, each from the call itself.
 *
 * Usage: ocl_wait_lists [ROUNDS]   (default 100)
 *
 * Remoted, a list is shaped by where its events come from, so the rounds
 * go without waiting once one round succeeded;
 * tests/e2e/test_e2e_opencl_wait_lists.cpp counts the calls the program
 * waited for at two ROUNDS. */
#include "common.h"

static const char kSource[] =
    "__kernel void inc(__global uint *d) { d[get_global_id(0)] += 1u; }\n"
    "__kernel void dbl(__global uint *d) { d[get_global_id(0)] *= 2u; }\n";

enum { N = 64 };

static void print_err(const char *what, cl_int err) {
  printf("%s: %s\n", what, cl_err_name(err));
}

int main(int argc, char **argv) {
  unsigned long rounds = 100;
  if (argc > 2 || (argc == 2 && (rounds = strtoul(argv[1], NULL, 0)) - 1 >= 100000)) {
    fprintf(stderr, "usage: %s [ROUNDS: 1..100000]\n", argv[0]);
    return 2;
  }
  OclEnv env = ocl_env_open();
  cl_command_queue q1 = ocl_queue(&env, 0), q2 = ocl_queue(&env, 0);
  cl_program prog = ocl_build(&env, kSource, "");
  cl_kernel inc = ocl_kernel(prog, "inc"), dbl = ocl_kernel(prog, "dbl");
  cl_uint host[N] = {0};
  cl_mem buf = ocl_buffer(&env, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host);
  const size_t global = N;
  CHECK(clSetKernelArg(inc, 0, sizeof buf, &buf));
  CHECK(clSetKernelArg(dbl, 0, sizeof buf, &buf));

  /* The chain: every wait list names the event of the command just enqueued. */
  cl_uint want = 0;
  for (unsigned long r = 0; r < rounds; ++r) {
    cl_event e1, e2;
    CHECK(clEnqueueNDRangeKernel(q1, inc, 1, NULL, &global, NULL, 0, NULL, &e1));
    CHECK(clEnqueueNDRangeKernel(q2, dbl, 1, NULL, &global, NULL, 1, &e1, &e2));
    CHECK(clEnqueueBarrierWithWaitList(q1, 1, &e2, NULL));
    CHECK(clReleaseEvent(e1));
    CHECK(clReleaseEvent(e2));
    CHECK(clRetainMemObject(buf));
    CHECK(clReleaseMemObject(buf));
    want = (want + 1u) * 2u;
  }
  CHECK(clEnqueueReadBuffer(q1, buf, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
  int same = 1;
  for (int i = 0; i < N; ++i)
    same = same && host[i] == want;
  printf("chain of %lu rounds over two queues: %s\n", rounds, same ? "device order" : "WRONG");
  EXPECT(same, "chain: got %u, want %u", host[0], want);

  /* Objects of another context on the same device. */
  cl_int err;
  cl_context other = clCreateContext(NULL, 1, &env.device, NULL, NULL, &err);
  CHECK_ERR(err, "clCreateContext");
  cl_command_queue q3 = clCreateCommandQueueWithProperties(other, env.device, NULL, &err);
  CHECK_ERR(err, "clCreateCommandQueueWithProperties");
  cl_event foreign, foreign_user = clCreateUserEvent(other, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  CHECK(clEnqueueMarkerWithWaitList(q3, 0, NULL, &foreign));

  /* Each error right after a success of the same function with a list of
   * events made the same way, so only the wait list differs. */
  cl_event mine, list[2];
  CHECK(clEnqueueMarkerWithWaitList(q2, 0, NULL, &mine));
  print_err("marker on q1 after q2's event", clEnqueueMarkerWithWaitList(q1, 1, &mine, NULL));
  print_err("marker on q1 after another context's event",
            clEnqueueMarkerWithWaitList(q1, 1, &foreign, NULL));
  print_err("marker on q1 after another context's user event",
            clEnqueueMarkerWithWaitList(q1, 1, &foreign_user, NULL));
  /* PoCL 3.1 checks neither contexts nor NULL events in a kernel's list. */
  const char *const kernel_cases[] = {"kernel on q1 after q2's event twice",
                                      "kernel on q1 after q2's event and another context's",
                                      "kernel on q1 after q2's event and NULL"};
  const cl_event seconds[] = {mine, foreign, NULL};
  cl_uint ran = 0;
  list[0] = mine;
  for (int i = 0; i < 3; ++i) {
    list[1] = seconds[i];
    err = clEnqueueNDRangeKernel(q1, inc, 1, NULL, &global, NULL, 2, list, NULL);
    print_err(kernel_cases[i], err);
    ran += err == CL_SUCCESS;
  }
  print_err("barrier on q1 after q2's event", clEnqueueBarrierWithWaitList(q1, 1, &mine, NULL));
  print_err("barrier on q1 after another context's event",
            clEnqueueBarrierWithWaitList(q1, 1, &foreign, NULL));
  print_err("barrier on q1, count 1 and no list", clEnqueueBarrierWithWaitList(q1, 1, NULL, NULL));
  print_err("barrier on q1, count 0 and a list", clEnqueueBarrierWithWaitList(q1, 0, list, NULL));
  print_err("clFinish(q1)", clFinish(q1));

  /* Each kernel that was accepted ran once. */
  CHECK(clEnqueueReadBuffer(q1, buf, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
  printf("after the errors: %s\n", host[0] == want + ran ? "only the valid commands ran" : "WRONG");
  EXPECT(host[0] == want + ran, "after the errors: got %u, want %u", host[0], want + ran);

  CHECK(clSetUserEventStatus(foreign_user, CL_COMPLETE));
  CHECK(clReleaseEvent(mine));
  CHECK(clReleaseEvent(foreign));
  CHECK(clReleaseEvent(foreign_user));
  CHECK(clReleaseCommandQueue(q3));
  CHECK(clReleaseContext(other));
  CHECK(clReleaseMemObject(buf));
  CHECK(clReleaseKernel(inc));
  CHECK(clReleaseKernel(dbl));
  CHECK(clReleaseProgram(prog));
  CHECK(clReleaseCommandQueue(q1));
  CHECK(clReleaseCommandQueue(q2));
  ocl_env_close(&env);
  return ocl_finish();
}
