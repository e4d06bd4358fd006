/* SPDX-License-Identifier: MIT */
/* A program that waits for the device sleeps while it waits: clFinish and
 * clWaitForEvents on commands held behind a user event block the calling
 * thread in the driver, leaving the CPUs to the driver's own threads. A
 * helper thread watches the waiting thread's scheduler state in /proc and
 * sets the user event once it has seen the thread asleep (or given up).
 *
 * Natively PoCL sleeps on a condition variable. Remoted, the wait is a reply
 * from the worker, which a waiter could spin for; tests/e2e/
 * test_e2e_opencl_waits.cpp runs this with spin budgets of a second, so a
 * remoted wait that spins shows as "awake". */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

/* How long the helper watches: under the test's spin budget of a second. */
#define WATCH_MS 800
/* Asleep at two looks this far apart: a thread that spins is never asleep. */
#define CONFIRM_MS 20

typedef struct {
  pid_t tid;            /* the waiting thread */
  cl_event gate;        /* the user event the waited-for commands wait on */
  volatile int waiting; /* set by the waiting thread just before its wait */
  int slept;            /* the helper saw it asleep */
} Watch;

/* The scheduler state of thread tid of this process ('R', 'S', ...). */
static char thread_state(pid_t tid) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return '?';
  const size_t n = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  line[n] = '\0';
  /* The name in parentheses may hold spaces: the state follows the last ')'. */
  const char *close = strrchr(line, ')');
  return close != NULL && close[1] == ' ' ? close[2] : '?';
}

static long elapsed_ms(const struct timespec *since) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000;
}

static void *watch_main(void *arg) {
  Watch *w = (Watch *)arg;
  while (!__atomic_load_n(&w->waiting, __ATOMIC_ACQUIRE))
    sleep_ms(1);
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (!w->slept && elapsed_ms(&start) < WATCH_MS) {
    if (thread_state(w->tid) == 'S') {
      sleep_ms(CONFIRM_MS);
      w->slept = thread_state(w->tid) == 'S';
    } else {
      sleep_ms(1);
    }
  }
  const cl_int err = clSetUserEventStatus(w->gate, CL_COMPLETE);
  if (err != CL_SUCCESS)
    ocl_fail(__FILE__, __LINE__, "clSetUserEventStatus -> %s", cl_err_name(err));
  return NULL;
}

typedef enum { WAIT_FINISH, WAIT_EVENTS } WaitKind;

static void wait_behind_gate(const OclEnv *env, cl_command_queue q, WaitKind kind) {
  cl_int err;
  Watch w = {.tid = (pid_t)syscall(SYS_gettid)};
  w.gate = clCreateUserEvent(env->context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  cl_event held;
  CHECK(clEnqueueMarkerWithWaitList(q, 1, &w.gate, &held));
  pthread_t helper;
  if (pthread_create(&helper, NULL, watch_main, &w) != 0) {
    fprintf(stderr, "pthread_create failed\n");
    exit(2);
  }
  __atomic_store_n(&w.waiting, 1, __ATOMIC_RELEASE);
  const char *what = kind == WAIT_FINISH ? "clFinish" : "clWaitForEvents";
  err = kind == WAIT_FINISH ? clFinish(q) : clWaitForEvents(1, &held);
  pthread_join(helper, NULL);
  cl_int status = 0;
  CHECK(clGetEventInfo(held, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
  printf("%s behind a user event: %s, command %s, the waiting thread %s\n", what,
         cl_err_name(err), status == CL_COMPLETE ? "complete" : "not complete",
         w.slept ? "slept" : "stayed awake");
  EXPECT(err == CL_SUCCESS, "%s -> %s", what, cl_err_name(err));
  EXPECT(w.slept, "%s: the waiting thread was not seen asleep within %d ms", what, WATCH_MS);
  CHECK(clReleaseEvent(held));
  CHECK(clReleaseEvent(w.gate));
}

int main(void) {
  OclEnv env = ocl_env_open();
  cl_command_queue q = ocl_queue(&env, 0);
  for (int round = 0; round < 2; ++round) {
    wait_behind_gate(&env, q, WAIT_FINISH);
    wait_behind_gate(&env, q, WAIT_EVENTS);
  }
  CHECK(clReleaseCommandQueue(q));
  ocl_env_close(&env);
  return ocl_finish();
}
