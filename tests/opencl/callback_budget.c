/* SPDX-License-Identifier: MIT */
/* A guest that registers callbacks without end (issue 13, finding 6:
 * budgets). Under a host's [guest] callbacks = LIMIT it sets event callbacks
 * on a user event it never completes until one is refused, which must
 * happen at LIMIT with the API's out-of-resources error; once it completes
 * the event its callbacks run, their registrations end, and it may
 * register again. Runs only under ava, by
 * tests/e2e/test_e2e_opencl_quota.cpp. Exit 0 when each step went as the
 * budget says. */
#include <pthread.h>
#include <time.h>

#include "common.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned long ran;

static void CL_CALLBACK count_run(cl_event event, cl_int status, void *user) {
  (void)event;
  (void)status;
  (void)user;
  pthread_mutex_lock(&mu);
  ++ran;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

/* How many callbacks ran, once `want` did or 30 s passed. */
static unsigned long wait_for_runs(unsigned long want) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 30;
  pthread_mutex_lock(&mu);
  while (ran < want && pthread_cond_timedwait(&cv, &mu, &until) == 0) {
  }
  const unsigned long n = ran;
  pthread_mutex_unlock(&mu);
  return n;
}

int main(int argc, char **argv) {
  const unsigned long limit = ocl_limit_arg(argc, argv, 4, 100000);
  OclEnv env = ocl_env_open();
  cl_int err = CL_SUCCESS;
  cl_event gate = clCreateUserEvent(env.context, &err);
  CHECK(err);
  unsigned long registered = 0;
  while (registered <= limit) {
    err = clSetEventCallback(gate, CL_COMPLETE, count_run, NULL);
    if (err != CL_SUCCESS)
      break;
    ++registered;
  }
  printf("callbacks until one was refused: %s\n", cl_err_name(err));
  EXPECT(registered == limit, "registered %lu callbacks under a budget of %lu", registered,
         limit);
  EXPECT(err == CL_OUT_OF_RESOURCES, "the refusal said %s", cl_err_name(err));
  /* The registrations end when their callbacks ran: room again. */
  CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &gate));
  cl_event second = clCreateUserEvent(env.context, &err);
  CHECK(err);
  /* They run on some thread of the library's, after the event completed. */
  const unsigned long runs = wait_for_runs(registered);
  printf("callbacks run: %lu of %lu\n", runs, registered);
  EXPECT(runs == registered, "%lu of %lu callbacks ran", runs, registered);
  err = clSetEventCallback(second, CL_COMPLETE, count_run, NULL);
  printf("after they ran: %s\n", cl_err_name(err));
  EXPECT(err == CL_SUCCESS, "no room after the callbacks ran: %s", cl_err_name(err));
  CHECK(clSetUserEventStatus(second, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &second));
  CHECK(clReleaseEvent(second));
  CHECK(clReleaseEvent(gate));
  ocl_env_close(&env);
  return ocl_finish();
}
