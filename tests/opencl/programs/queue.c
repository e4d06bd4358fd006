/* SPDX-License-Identifier: MIT */
/* Command queues: both creators, their properties, queries, flush/finish. */
#include "common.h"

static OclEnv g_env;

static void describe(const char *label, cl_command_queue q) {
  cl_context ctx = NULL;
  cl_device_id dev = NULL;
  cl_command_queue_properties props = 0;
  cl_uint refs = 0;
  CHECK(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL));
  CHECK(clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL));
  CHECK(clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL));
  CHECK(clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof refs, &refs, NULL));
  printf("%s: context ok: %s, device ok: %s, properties 0x%llx, refs %u\n", label,
         yes_no(ctx == g_env.context), yes_no(dev == g_env.device), (unsigned long long)props,
         refs);
  EXPECT(ctx == g_env.context && dev == g_env.device, "%s: context/device differ", label);

  size_t size = 0;
  cl_int err = clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES_ARRAY, 0, NULL, &size);
  printf("  CL_QUEUE_PROPERTIES_ARRAY: %s, %zu bytes", cl_err_name(err), size);
  if (err == CL_SUCCESS && size > 0 && size <= 8 * sizeof(cl_queue_properties)) {
    cl_queue_properties arr[8] = {0};
    CHECK(clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES_ARRAY, size, arr, NULL));
    for (size_t i = 0; i < size / sizeof arr[0]; ++i)
      printf(" 0x%llx", (unsigned long long)arr[i]);
  }
  printf("\n");
  cl_command_queue def = (cl_command_queue)1;
  err = clGetCommandQueueInfo(q, CL_QUEUE_DEVICE_DEFAULT, sizeof def, &def, NULL);
  printf("  CL_QUEUE_DEVICE_DEFAULT: %s", cl_err_name(err));
  if (err == CL_SUCCESS)
    printf(", NULL: %s", yes_no(def == NULL));
  printf("\n");
  cl_uint qsize = 0;
  err = clGetCommandQueueInfo(q, CL_QUEUE_SIZE, sizeof qsize, &qsize, NULL);
  printf("  CL_QUEUE_SIZE: %s\n", cl_err_name(err));
  err = clGetCommandQueueInfo(q, 0x7fff, sizeof qsize, &qsize, NULL);
  printf("  unknown param: %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_VALUE, "unknown queue param accepted");
}

/* Work that shows the queue runs: fill, flush, finish, read. */
static void exercise(const char *label, cl_command_queue q) {
  enum { N = 1024 };
  cl_mem buf = ocl_buffer(&g_env, CL_MEM_READ_WRITE, N * sizeof(cl_int), NULL);
  const cl_int pattern = 0x01020304;
  CHECK(
      clEnqueueFillBuffer(q, buf, &pattern, sizeof pattern, 0, N * sizeof(cl_int), 0, NULL, NULL));
  CHECK(clFlush(q));
  CHECK(clFinish(q));
  cl_int out[N];
  CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
  int ok = 1;
  for (int i = 0; i < N; ++i)
    ok &= out[i] == pattern;
  printf("  %s: fill, flush, finish, read: %s\n", label, ok ? "ok" : "WRONG");
  EXPECT(ok, "%s: wrong data", label);
  CHECK(clReleaseMemObject(buf));
}

int main(void) {
  g_env = ocl_env_open();
  cl_int err;

  cl_command_queue q = clCreateCommandQueue(g_env.context, g_env.device, 0, &err);
  CHECK_ERR(err, "clCreateCommandQueue");
  describe("clCreateCommandQueue(0)", q);
  exercise("deprecated, in order", q);
  CHECK(clRetainCommandQueue(q));
  cl_uint refs = 0;
  CHECK(clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof refs, &refs, NULL));
  /* Commands PoCL has finished may still hold a reference until its driver thread
   * drops their events, so only a lower bound is stable. */
  printf("refs after retain at least 2: %s\n", yes_no(refs >= 2));
  EXPECT(refs >= 2, "retain not counted");
  CHECK(clReleaseCommandQueue(q));
  CHECK(clReleaseCommandQueue(q));

  q = clCreateCommandQueue(g_env.context, g_env.device, CL_QUEUE_PROFILING_ENABLE, &err);
  CHECK_ERR(err, "clCreateCommandQueue(profiling)");
  describe("clCreateCommandQueue(PROFILING)", q);
  CHECK(clReleaseCommandQueue(q));

  /* No CL_QUEUE_ON_DEVICE case: PoCL 3.1 exits the process on it. */
  static const struct {
    const char *name;
    cl_queue_properties props[5];
    int valid;
  } kCases[] = {
      {"NULL properties", {0}, 1},
      {"PROFILING", {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0}, 1},
      {"OUT_OF_ORDER", {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0}, 1},
      {"OUT_OF_ORDER|PROFILING",
       {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE, 0},
       1},
      {"unknown property bit", {CL_QUEUE_PROPERTIES, 1 << 12, 0}, 0},
      {"unknown property name", {0x7777, 1, 0}, 0},
  };
  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {
    const cl_queue_properties *props = kCases[i].props[0] == 0 ? NULL : kCases[i].props;
    q = clCreateCommandQueueWithProperties(g_env.context, g_env.device, props, &err);
    printf("clCreateCommandQueueWithProperties(%s): %s\n", kCases[i].name, cl_err_name(err));
    EXPECT((err == CL_SUCCESS) == kCases[i].valid, "%s: unexpected result", kCases[i].name);
    if (err != CL_SUCCESS)
      continue;
    describe(kCases[i].name, q);
    exercise(kCases[i].name, q);
    CHECK(clReleaseCommandQueue(q));
  }

  /* Several queues on one device are independent objects. */
  cl_command_queue a = ocl_queue(&g_env, 0);
  cl_command_queue b = ocl_queue(&g_env, 0);
  printf("two queues differ: %s\n", yes_no(a != b));
  EXPECT(a != b, "two queues share a handle");
  CHECK(clFinish(a));
  CHECK(clFinish(b));
  /* No clSetCommandQueueProperty: PoCL's ICD table has no entry for it (a NULL call). */
  CHECK(clReleaseCommandQueue(a));
  CHECK(clReleaseCommandQueue(b));

  ocl_env_close(&g_env);
  return ocl_finish();
}
