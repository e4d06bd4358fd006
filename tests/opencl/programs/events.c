/* SPDX-License-Identifier: MIT */
/* Events: markers and barriers (new and 1.1 APIs), wait lists, user events
 * set from another thread, event callbacks, queries, profiling, refcounts. */
#include <pthread.h>

#include "common.h"

static OclEnv g_env;
static cl_command_queue g_q;
static cl_kernel g_inc;

static const char kSource[] = "__kernel void inc(__global int *d, int by) {\n"
                              "  d[get_global_id(0)] += by;\n"
                              "}\n";

enum { N = 256, MAX_CALLBACKS = 16 };

/* Callbacks run on implementation threads: they record, main prints. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int slot;
  cl_int status;
  int event_ok;
} g_calls[MAX_CALLBACKS];
static volatile int g_ncalls;

typedef struct {
  int slot;
  cl_event expected;
} CallbackUser;

static void CL_CALLBACK on_event(cl_event e, cl_int status, void *user) {
  const CallbackUser *u = user;
  pthread_mutex_lock(&g_mu);
  if (g_ncalls < MAX_CALLBACKS) {
    g_calls[g_ncalls].slot = u->slot;
    g_calls[g_ncalls].status = status;
    g_calls[g_ncalls].event_ok = e == u->expected;
    __atomic_add_fetch(&g_ncalls, 1, __ATOMIC_ACQ_REL);
  }
  pthread_mutex_unlock(&g_mu);
}

static int by_slot(const void *a, const void *b) {
  return ((const int *)a)[0] - ((const int *)b)[0];
}

static void print_callbacks(const char *label, int want) {
  const int all = wait_for_count(&g_ncalls, want);
  pthread_mutex_lock(&g_mu);
  qsort(g_calls, (size_t)g_ncalls, sizeof g_calls[0], by_slot);
  printf("%s: %d callbacks (all arrived: %s)\n", label, g_ncalls, yes_no(all));
  for (int i = 0; i < g_ncalls; ++i)
    printf("  slot %d: status %d, event ok %s\n", g_calls[i].slot, g_calls[i].status,
           yes_no(g_calls[i].event_ok));
  EXPECT(all && g_ncalls == want, "%s: %d callbacks, want %d", label, g_ncalls, want);
  g_ncalls = 0;
  pthread_mutex_unlock(&g_mu);
}

static cl_int event_status(cl_event e) {
  cl_int s = 0;
  CHECK(clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL));
  return s;
}

static const char *type_name(cl_command_type t) {
  switch (t) {
  case CL_COMMAND_NDRANGE_KERNEL:
    return "NDRANGE_KERNEL";
  case CL_COMMAND_MARKER:
    return "MARKER";
  case CL_COMMAND_BARRIER:
    return "BARRIER";
  case CL_COMMAND_USER:
    return "USER";
  case CL_COMMAND_WRITE_BUFFER:
    return "WRITE_BUFFER";
  case CL_COMMAND_READ_BUFFER:
    return "READ_BUFFER";
  case CL_COMMAND_FILL_BUFFER:
    return "FILL_BUFFER";
  default:
    return "other";
  }
}

static void describe(const char *label, cl_event e, cl_command_queue q) {
  cl_command_type type = 0;
  cl_command_queue eq = (cl_command_queue)1;
  cl_context ctx = NULL;
  CHECK(clGetEventInfo(e, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL));
  CHECK(clGetEventInfo(e, CL_EVENT_COMMAND_QUEUE, sizeof eq, &eq, NULL));
  CHECK(clGetEventInfo(e, CL_EVENT_CONTEXT, sizeof ctx, &ctx, NULL));
  printf("%s: type %s, queue ok %s, context ok %s\n", label, type_name(type), yes_no(eq == q),
         yes_no(ctx == g_env.context));
  EXPECT(eq == q && ctx == g_env.context, "%s: event queue/context", label);
}

static void enqueue_inc(cl_command_queue q, cl_mem m, cl_int by, cl_uint nwait,
                        const cl_event *wait, cl_event *out) {
  CHECK(clSetKernelArg(g_inc, 0, sizeof m, &m));
  CHECK(clSetKernelArg(g_inc, 1, sizeof by, &by));
  const size_t gws = N;
  CHECK(clEnqueueNDRangeKernel(q, g_inc, 1, NULL, &gws, NULL, nwait, wait, out));
}

static cl_int read_first(cl_command_queue q, cl_mem m) {
  cl_int v[N];
  CHECK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, sizeof v, v, 0, NULL, NULL));
  return v[0] == v[N - 1] ? v[0] : -999;
}

static void markers_barriers(cl_mem m) {
  cl_event k1, k2, marker, marker_all, barrier, old_marker;
  enqueue_inc(g_q, m, 1, 0, NULL, &k1);
  enqueue_inc(g_q, m, 2, 0, NULL, &k2);
  CHECK(clEnqueueMarkerWithWaitList(g_q, 1, &k1, &marker));
  CHECK(clEnqueueMarkerWithWaitList(g_q, 0, NULL, &marker_all));
  CHECK(clEnqueueBarrierWithWaitList(g_q, 2, (cl_event[]){k1, k2}, &barrier));
  CHECK(clEnqueueMarker(g_q, &old_marker));
  CHECK(clEnqueueBarrier(g_q));
  /* No clEnqueueWaitForEvents: PoCL 3.1 exits the process in it ("unimplemented"). */
  CHECK(clWaitForEvents(1, &marker_all));
  printf("after waiting for the marker of everything: k1 %d, k2 %d, value %d\n", event_status(k1),
         event_status(k2), read_first(g_q, m));
  describe("marker with wait list", marker, g_q);
  describe("barrier with wait list", barrier, g_q);
  describe("clEnqueueMarker", old_marker, g_q);
  describe("kernel", k1, g_q);
  const cl_event all[] = {k1, k2, marker, marker_all, barrier, old_marker};
  CHECK(clWaitForEvents(6, all));
  for (int i = 0; i < 6; ++i)
    CHECK(clReleaseEvent(all[i]));
  cl_int err = clWaitForEvents(0, NULL);
  printf("clWaitForEvents(0, NULL): %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_VALUE, "empty wait");
}

typedef struct {
  cl_event user;
  cl_int status;
  cl_int result;
} SetterArgs;

static void *setter(void *p) {
  SetterArgs *a = p;
  a->result = clSetUserEventStatus(a->user, a->status);
  return NULL;
}

static void user_events(cl_mem m) {
  cl_int err;
  cl_event user = clCreateUserEvent(g_env.context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  describe("user event", user, NULL);
  printf("user event status: %d (SUBMITTED is %d)\n", event_status(user), CL_SUBMITTED);

  static CallbackUser cbs[4];
  cl_event k;
  const cl_int before = read_first(g_q, m);
  enqueue_inc(g_q, m, 10, 1, &user, &k);
  CHECK(clFlush(g_q));
  cbs[0] = (CallbackUser){0, k};
  cbs[1] = (CallbackUser){1, k};
  cbs[2] = (CallbackUser){2, k};
  cbs[3] = (CallbackUser){3, user};
  CHECK(clSetEventCallback(k, CL_SUBMITTED, on_event, &cbs[0]));
  CHECK(clSetEventCallback(k, CL_RUNNING, on_event, &cbs[1]));
  CHECK(clSetEventCallback(k, CL_COMPLETE, on_event, &cbs[2]));
  CHECK(clSetEventCallback(user, CL_COMPLETE, on_event, &cbs[3]));
  printf("kernel waiting on the user event is complete: %s\n",
         yes_no(event_status(k) == CL_COMPLETE));
  EXPECT(event_status(k) != CL_COMPLETE, "ran before its user event");

  /* Another thread completes the user event while this one waits. */
  SetterArgs args = {user, CL_COMPLETE, -1};
  pthread_t t;
  EXPECT(pthread_create(&t, NULL, setter, &args) == 0, "pthread_create");
  CHECK(clWaitForEvents(1, &k));
  pthread_join(t, NULL);
  printf("clSetUserEventStatus(COMPLETE) from another thread: %s\n", cl_err_name(args.result));
  CHECK(clFinish(g_q));
  printf("kernel status %d, value %d -> %d\n", event_status(k), before, read_first(g_q, m));
  print_callbacks("callbacks of the gated kernel and the user event", 4);
  err = clSetUserEventStatus(user, CL_COMPLETE);
  printf("clSetUserEventStatus a second time: %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_OPERATION, "second set accepted");

  /* A callback registered on a finished event still runs. */
  static CallbackUser late = {9, NULL};
  late.expected = k;
  CHECK(clSetEventCallback(k, CL_COMPLETE, on_event, &late));
  print_callbacks("callback registered after completion", 1);
  CHECK(clReleaseEvent(k));
  CHECK(clReleaseEvent(user));

  /* A user event that fails: the command waiting on it does not run. (PoCL
   * calls no callback of such a command, so none is registered here.) */
  cl_event bad_user = clCreateUserEvent(g_env.context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  cl_command_queue q2 = ocl_queue(&g_env, 0);
  cl_mem m2 = ocl_buffer(&g_env, CL_MEM_READ_WRITE, N * sizeof(cl_int), NULL);
  const cl_int zero = 0;
  CHECK(clEnqueueFillBuffer(q2, m2, &zero, sizeof zero, 0, N * sizeof(cl_int), 0, NULL, NULL));
  CHECK(clFinish(q2));
  cl_event k2;
  enqueue_inc(q2, m2, 5, 1, &bad_user, &k2);
  CHECK(clSetUserEventStatus(bad_user, -77));
  err = clWaitForEvents(1, &k2);
  printf("wait for a kernel behind a failed user event: %s, status negative: %s\n",
         cl_err_name(err), yes_no(event_status(k2) < 0));
  EXPECT(err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, "failed dependency");
  CHECK(clReleaseEvent(k2));
  CHECK(clReleaseEvent(bad_user));
  CHECK(clReleaseMemObject(m2));
  /* The failed command may leave the queue in an error state; it is not used again. */
  clFinish(q2);
  CHECK(clReleaseCommandQueue(q2));
}

static void profiling(cl_mem m) {
  cl_command_queue pq = ocl_queue(&g_env, CL_QUEUE_PROFILING_ENABLE);
  cl_event k;
  enqueue_inc(pq, m, 1, 0, NULL, &k);
  CHECK(clWaitForEvents(1, &k));
  cl_ulong queued = 0, submit = 0, start = 0, end = 0, complete = 0;
  CHECK(clGetEventProfilingInfo(k, CL_PROFILING_COMMAND_QUEUED, sizeof queued, &queued, NULL));
  CHECK(clGetEventProfilingInfo(k, CL_PROFILING_COMMAND_SUBMIT, sizeof submit, &submit, NULL));
  CHECK(clGetEventProfilingInfo(k, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL));
  CHECK(clGetEventProfilingInfo(k, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL));
  cl_int cerr =
      clGetEventProfilingInfo(k, CL_PROFILING_COMMAND_COMPLETE, sizeof complete, &complete, NULL);
  printf("profiling: queued <= submit: %s, submit <= start: %s, start <= end: %s, COMPLETE %s\n",
         yes_no(queued <= submit), yes_no(submit <= start), yes_no(start <= end),
         cl_err_name(cerr));
  EXPECT(queued <= submit && submit <= start && start <= end, "profiling order");
  if (cerr == CL_SUCCESS)
    printf("profiling: end <= complete: %s\n", yes_no(end <= complete));
  cl_int err = clGetEventProfilingInfo(k, 0x7777, sizeof end, &end, NULL);
  printf("profiling unknown param: %s\n", cl_err_name(err));
  CHECK(clReleaseEvent(k));
  CHECK(clReleaseCommandQueue(pq));

  enqueue_inc(g_q, m, 1, 0, NULL, &k);
  CHECK(clWaitForEvents(1, &k));
  err = clGetEventProfilingInfo(k, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL);
  printf("profiling on a queue without profiling: %s\n", cl_err_name(err));
  EXPECT(err == CL_PROFILING_INFO_NOT_AVAILABLE, "profiling without the property");
  CHECK(clFinish(g_q));
  /* PoCL's driver thread may still drop its own reference to a finished event at any
   * time, so only a lower bound is stable. */
  cl_uint refs = 0;
  CHECK(clRetainEvent(k));
  CHECK(clGetEventInfo(k, CL_EVENT_REFERENCE_COUNT, sizeof refs, &refs, NULL));
  printf("refs after retain at least 2: %s\n", yes_no(refs >= 2));
  EXPECT(refs >= 2, "event retain not counted");
  CHECK(clReleaseEvent(k));
  CHECK(clReleaseEvent(k));

  cl_event user = clCreateUserEvent(g_env.context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  err = clGetEventProfilingInfo(user, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL);
  printf("profiling a user event: %s\n", cl_err_name(err));
  CHECK(clSetUserEventStatus(user, CL_COMPLETE));
  CHECK(clReleaseEvent(user));
}

static void out_of_order(void) {
  cl_command_queue oq = ocl_queue(&g_env, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE, N * sizeof(cl_int), NULL);
  const cl_int seed = 1000;
  cl_event fill, k1, k2, b;
  CHECK(clEnqueueFillBuffer(oq, m, &seed, sizeof seed, 0, N * sizeof(cl_int), 0, NULL, &fill));
  enqueue_inc(oq, m, 3, 1, &fill, &k1);
  enqueue_inc(oq, m, 4, 1, &k1, &k2);
  CHECK(clEnqueueBarrierWithWaitList(oq, 0, NULL, &b));
  cl_int v[N];
  CHECK(clEnqueueReadBuffer(oq, m, CL_TRUE, 0, sizeof v, v, 1, &b, NULL));
  printf("out-of-order chain fill -> +3 -> +4 -> barrier -> read: %d %d\n", v[0], v[N - 1]);
  EXPECT(v[0] == 1007 && v[N - 1] == 1007, "out-of-order chain");
  CHECK(clReleaseEvent(fill));
  CHECK(clReleaseEvent(k1));
  CHECK(clReleaseEvent(k2));
  CHECK(clReleaseEvent(b));
  CHECK(clReleaseMemObject(m));
  CHECK(clReleaseCommandQueue(oq));
}

int main(void) {
  g_env = ocl_env_open();
  g_q = ocl_queue(&g_env, 0);
  cl_program p = ocl_build(&g_env, kSource, NULL);
  g_inc = ocl_kernel(p, "inc");
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE, N * sizeof(cl_int), NULL);
  const cl_int zero = 0;
  CHECK(clEnqueueFillBuffer(g_q, m, &zero, sizeof zero, 0, N * sizeof(cl_int), 0, NULL, NULL));
  markers_barriers(m);
  user_events(m);
  profiling(m);
  out_of_order();
  printf("final value %d\n", read_first(g_q, m));
  CHECK(clReleaseMemObject(m));
  CHECK(clReleaseKernel(g_inc));
  CHECK(clReleaseProgram(p));
  CHECK(clReleaseCommandQueue(g_q));
  ocl_env_close(&g_env);
  return ocl_finish();
}
