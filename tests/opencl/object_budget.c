/* SPDX-License-Identifier: MIT */
/* A guest that makes objects without end (issue 13, finding 6: budgets).
 * Under a host's [guest] objects = LIMIT it creates user events until one is
 * refused, which must happen before LIMIT of them (the guest's platform,
 * device and context count too) with the API's out-of-resources error;
 * after it releases half of them it may make objects again. Runs only
 * under ava, by tests/e2e/test_e2e_opencl_quota.cpp. Exit 0 when each step
 * went as the budget says. */
#include "common.h"

int main(int argc, char **argv) {
  const unsigned long limit = ocl_limit_arg(argc, argv, 8, 100000);
  OclEnv env = ocl_env_open();
  cl_command_queue q = ocl_queue(&env, 0);
  cl_event *events = calloc(limit + 1, sizeof *events);
  if (events == NULL)
    return 2;
  unsigned long made = 0;
  cl_int err = CL_SUCCESS;
  while (made <= limit) {
    events[made] = clCreateUserEvent(env.context, &err);
    if (events[made] == NULL)
      break;
    ++made;
  }
  printf("user events until one was refused: %s\n", cl_err_name(err));
  EXPECT(made < limit && made + 8 >= limit, "made %lu user events under a budget of %lu objects",
         made, limit);
  EXPECT(err == CL_OUT_OF_RESOURCES, "the refusal said %s", cl_err_name(err));
  /* An enqueue's event is one more object too: refused, and no id comes back. */
  cl_event marker = NULL;
  err = clEnqueueMarkerWithWaitList(q, 0, NULL, &marker);
  printf("a marker's event at the budget: %s\n", cl_err_name(err));
  EXPECT(err == CL_OUT_OF_RESOURCES, "the marker said %s", cl_err_name(err));
  CHECK(clFinish(q));
  for (unsigned long i = made / 2; i < made; ++i)
    CHECK(clReleaseEvent(events[i]));
  made /= 2;
  events[made] = clCreateUserEvent(env.context, &err);
  printf("after releasing half: %s\n", cl_err_name(err));
  EXPECT(events[made] != NULL && err == CL_SUCCESS, "no room after the releases");
  if (events[made] != NULL)
    ++made;
  for (unsigned long i = 0; i < made; ++i)
    CHECK(clReleaseEvent(events[i]));
  free(events);
  CHECK(clReleaseCommandQueue(q));
  ocl_env_close(&env);
  return ocl_finish();
}
