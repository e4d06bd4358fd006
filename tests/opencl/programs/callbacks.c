/* SPDX-License-Identifier: MIT */
/* Every kind of callback in one program, each checking that its user data
 * came back unchanged: context notify, build/compile/link notify, event
 * callbacks (some calling the API themselves), memory-object and context
 * destructors. Callbacks run on implementation threads and may arrive after
 * the call that triggered them has returned, so each is waited for a bounded
 * time and results are printed from the main thread. */
#include <pthread.h>

#include "common.h"

enum { EVENTS = 24 };

typedef struct {
  const char *name;
  int id;
  volatile int calls;
  volatile int wrong_user;
  volatile cl_int status;
  volatile cl_int queried_status;
} Record;

static Record g_context_notify = {"context notify", 1, 0, 0, 0, 0};
static Record g_build = {"build notify", 2, 0, 0, 0, 0};
static Record g_compile = {"compile notify", 3, 0, 0, 0, 0};
static Record g_link = {"link notify", 4, 0, 0, 0, 0};
static Record g_mem = {"mem destructor", 5, 0, 0, 0, 0};
static Record g_sub_mem = {"sub-buffer destructor", 6, 0, 0, 0, 0};
static Record g_ctx = {"context destructor", 7, 0, 0, 0, 0};
static Record g_events[EVENTS];
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static volatile int g_event_calls;

static void hit(Record *r, void *user, int id) {
  if (user != r || r->id != id)
    __atomic_store_n(&r->wrong_user, 1, __ATOMIC_RELEASE);
  __atomic_add_fetch(&r->calls, 1, __ATOMIC_ACQ_REL);
}

static void CL_CALLBACK context_notify(const char *errinfo, const void *info, size_t cb,
                                       void *user) {
  (void)errinfo;
  (void)info;
  (void)cb;
  hit(&g_context_notify, user, 1);
}

static void CL_CALLBACK program_notify(cl_program p, void *user) {
  (void)p;
  Record *r = user;
  hit(r, user, r->id);
}

static void CL_CALLBACK mem_destroyed(cl_mem m, void *user) {
  (void)m;
  Record *r = user;
  hit(r, user, r->id);
}

static void CL_CALLBACK context_destroyed(cl_context c, void *user) {
  (void)c;
  hit(&g_ctx, user, 7);
}

/* An event callback may call non-blocking API functions on its event. */
static void CL_CALLBACK event_done(cl_event e, cl_int status, void *user) {
  Record *r = user;
  cl_int queried = 99;
  if (clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof queried, &queried, NULL) !=
      CL_SUCCESS)
    queried = 98;
  r->status = status;
  r->queried_status = queried;
  hit(r, user, r->id);
  pthread_mutex_lock(&g_mu);
  g_event_calls++;
  pthread_mutex_unlock(&g_mu);
}

static void print_record(const Record *r, int want_calls) {
  const int arrived = wait_for_count((volatile int *)&r->calls, want_calls);
  printf("%s: called %d time(s), user data ok: %s\n", r->name, r->calls, yes_no(!r->wrong_user));
  EXPECT(arrived && r->calls == want_calls && !r->wrong_user, "%s", r->name);
}

static const char kHeader[] = "#define BUMP 3\n";
static const char kSource[] = "#include \"bump.h\"\n"
                              "__kernel void bump(__global int *d) {\n"
                              "  d[get_global_id(0)] += BUMP;\n"
                              "}\n";

int main(void) {
  cl_platform_id platform;
  cl_device_id device;
  first_platform_device(&platform, &device);
  cl_int err;
  cl_context ctx = clCreateContext(NULL, 1, &device, context_notify, &g_context_notify, &err);
  CHECK_ERR(err, "clCreateContext");
  CHECK(clSetContextDestructorCallback(ctx, context_destroyed, &g_ctx));
  cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
  CHECK_ERR(err, "clCreateCommandQueueWithProperties");

  /* Build, compile and link notifications. */
  const char *src = kSource;
  cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  CHECK_ERR(err, "clCreateProgramWithSource");
  const char *hsrc = kHeader;
  cl_program header = clCreateProgramWithSource(ctx, 1, &hsrc, NULL, &err);
  CHECK_ERR(err, "clCreateProgramWithSource(header)");
  const char *names[1] = {"bump.h"};
  CHECK(clCompileProgram(p, 1, &device, NULL, 1, &header, names, program_notify, &g_compile));
  print_record(&g_compile, 1);
  cl_build_status status = 99;
  CHECK(clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, NULL));
  printf("compile status after the notify: %d\n", status);
  cl_program linked = clLinkProgram(ctx, 1, &device, NULL, 1, &p, program_notify, &g_link, &err);
  CHECK_ERR(err, "clLinkProgram");
  print_record(&g_link, 1);
  cl_program built = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  CHECK_ERR(err, "clCreateProgramWithSource(built)");
  err = clBuildProgram(built, 1, &device, "-I/nonexistent", program_notify, &g_build);
  printf("clBuildProgram without the header: %s\n", cl_err_name(err));
  /* A failed build notifies too. */
  print_record(&g_build, 1);

  /* Event callbacks: many events, callbacks that query their own event. */
  cl_kernel k = clCreateKernel(linked, "bump", &err);
  CHECK_ERR(err, "clCreateKernel");
  cl_int zeros[64] = {0};
  cl_mem buf =
      clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zeros, zeros, &err);
  CHECK_ERR(err, "clCreateBuffer");
  CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
  cl_event gate = clCreateUserEvent(ctx, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  cl_event evs[EVENTS];
  for (int i = 0; i < EVENTS; ++i) {
    g_events[i].name = "event callback";
    g_events[i].id = 100 + i;
    const size_t gws = 64;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gws, NULL, i == 0 ? 1 : 0, i == 0 ? &gate : NULL,
                                 &evs[i]));
    CHECK(clSetEventCallback(evs[i], CL_COMPLETE, event_done, &g_events[i]));
  }
  CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
  CHECK(clFinish(q));
  const int all = wait_for_count(&g_event_calls, EVENTS);
  int ok = 1;
  for (int i = 0; i < EVENTS; ++i)
    ok &= g_events[i].calls == 1 && !g_events[i].wrong_user && g_events[i].status == CL_COMPLETE &&
          g_events[i].queried_status == CL_COMPLETE;
  printf("%d event callbacks: all arrived %s, each once with its user data, status COMPLETE and "
         "the event queried COMPLETE from inside: %s\n",
         EVENTS, yes_no(all), yes_no(ok));
  EXPECT(all && ok, "event callbacks");
  cl_int out[64];
  CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
  printf("kernel ran %d times\n", out[0] / 3);
  for (int i = 0; i < EVENTS; ++i)
    CHECK(clReleaseEvent(evs[i]));
  CHECK(clReleaseEvent(gate));

  /* Destructors: a sub-buffer's before its parent's, each at its last release. */
  const cl_buffer_region region = {0, 64};
  cl_mem sub = clCreateSubBuffer(buf, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  CHECK_ERR(err, "clCreateSubBuffer");
  CHECK(clSetMemObjectDestructorCallback(buf, mem_destroyed, &g_mem));
  CHECK(clSetMemObjectDestructorCallback(sub, mem_destroyed, &g_sub_mem));
  CHECK(clReleaseKernel(k));
  CHECK(clReleaseMemObject(sub));
  print_record(&g_sub_mem, 1);
  printf("parent destructor before its release: %d\n", g_mem.calls);
  CHECK(clReleaseMemObject(buf));
  print_record(&g_mem, 1);

  CHECK(clReleaseProgram(built));
  CHECK(clReleaseProgram(linked));
  CHECK(clReleaseProgram(header));
  CHECK(clReleaseProgram(p));
  CHECK(clReleaseCommandQueue(q));
  printf("context destructor before the release: %d\n", g_ctx.calls);
  CHECK(clReleaseContext(ctx));
  print_record(&g_ctx, 1);
  /* Whether PoCL reports anything through the context notify is its choice. */
  EXPECT(!g_context_notify.wrong_user, "context notify user data");
  return ocl_finish();
}
