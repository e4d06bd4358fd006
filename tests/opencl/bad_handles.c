/* SPDX-License-Identifier: MIT */
/* Garbage, freed and wrongly typed handles for every object type. A native
 * PoCL dereferences them and crashes, so this program runs only under ava,
 * whose worker looks every handle up in a typed table: each call must return
 * the error the OpenCL spec names for an invalid object of that type. The
 * expected output is tests/opencl/expected/bad_handles.txt.
 *
 * As in bad_input.c, calls that may be remoted asynchronously are paired with
 * a clFinish on a good queue and the first error of the two is printed.
 *
 * Built with -DPRINT_EXPECTED (target ocl_bad_handles_expected), the program
 * prints the expected output (the errors written next to each call) without
 * making the calls with bad handles: that is how the expected file is made,
 * and a native test checks that the file and this source agree. */
#include "common.h"

static OclEnv g_env;
static cl_command_queue g_q;
static cl_mem g_buf;
static cl_program g_prog;
static cl_kernel g_kernel;
static cl_sampler g_sampler;
static cl_event g_event;

#define GARBAGE(type) ((type)(uintptr_t)0x123456789u)
#define ALL_ONES(type) ((type)(uintptr_t) ~(uintptr_t)0)

/* Creators report through g_err; it is read after the call's evaluation. */
static cl_int g_err;

#ifdef PRINT_EXPECTED
/* `if (0)` keeps the call compiled (and its variables used) but never made. */
#define BAD(label, call, want)                                                                     \
  do {                                                                                             \
    if (0)                                                                                         \
      (void)(call);                                                                                \
    printf("%s: %s\n", label, cl_err_name(want));                                                  \
  } while (0)
#define BAD_ASYNC(label, call, want)                                                               \
  do {                                                                                             \
    if (0)                                                                                         \
      (void)(call);                                                                                \
    printf("%s + clFinish: %s\n", label, cl_err_name(want));                                       \
  } while (0)
#define BAD_CREATE(label, call, want) BAD(label, call, want)
#else
static void expect_err(const char *label, cl_int got, cl_int want) {
  printf("%s: %s\n", label, cl_err_name(got));
  EXPECT(got == want, "%s: got %s, want %s", label, cl_err_name(got), cl_err_name(want));
}

static void expect_async(const char *label, cl_int got, cl_int want) {
  char full[256];
  snprintf(full, sizeof full, "%s + clFinish", label);
  expect_err(full, and_finish(got, g_q), want);
}

static void expect_create(const char *label, const void *handle, cl_int want) {
  expect_err(label, g_err, want);
  EXPECT(handle == NULL, "%s returned a handle", label);
}

#define BAD(label, call, want) expect_err(label, call, want)
#define BAD_ASYNC(label, call, want) expect_async(label, call, want)
#define BAD_CREATE(label, call, want) expect_create(label, call, want)
#endif

#define LABEL(call) (snprintf(label, sizeof label, "[%s] %s", b->what, call), label)

/* One representative query per object type, with the given bad handles. */
typedef struct {
  const char *what;
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
  cl_mem mem;
  cl_program program;
  cl_kernel kernel;
  cl_event event;
  cl_sampler sampler;
} BadSet;

static void queries(const BadSet *b) {
  char label[160];
  char value[64];
  size_t size = 0;
  BAD(LABEL("clGetPlatformInfo"),
      clGetPlatformInfo(b->platform, CL_PLATFORM_NAME, sizeof value, value, NULL),
      CL_INVALID_PLATFORM);
  cl_uint n = 0;
  BAD(LABEL("clGetDeviceIDs"), clGetDeviceIDs(b->platform, CL_DEVICE_TYPE_ALL, 0, NULL, &n),
      CL_INVALID_PLATFORM);
  BAD(LABEL("clGetDeviceInfo"),
      clGetDeviceInfo(b->device, CL_DEVICE_NAME, sizeof value, value, NULL), CL_INVALID_DEVICE);
  BAD(LABEL("clGetContextInfo"),
      clGetContextInfo(b->context, CL_CONTEXT_NUM_DEVICES, sizeof n, &n, NULL), CL_INVALID_CONTEXT);
  BAD(LABEL("clGetCommandQueueInfo"),
      clGetCommandQueueInfo(b->queue, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, NULL),
      CL_INVALID_COMMAND_QUEUE);
  BAD(LABEL("clFinish"), clFinish(b->queue), CL_INVALID_COMMAND_QUEUE);
  BAD(LABEL("clGetMemObjectInfo"),
      clGetMemObjectInfo(b->mem, CL_MEM_SIZE, sizeof size, &size, NULL), CL_INVALID_MEM_OBJECT);
  BAD(LABEL("clGetProgramInfo"),
      clGetProgramInfo(b->program, CL_PROGRAM_NUM_DEVICES, sizeof n, &n, NULL), CL_INVALID_PROGRAM);
  BAD(LABEL("clGetKernelInfo"), clGetKernelInfo(b->kernel, CL_KERNEL_NUM_ARGS, sizeof n, &n, NULL),
      CL_INVALID_KERNEL);
  BAD(LABEL("clGetEventInfo"),
      clGetEventInfo(b->event, CL_EVENT_REFERENCE_COUNT, sizeof n, &n, NULL), CL_INVALID_EVENT);
  BAD(LABEL("clWaitForEvents"), clWaitForEvents(1, &b->event), CL_INVALID_EVENT);
  BAD(LABEL("clGetSamplerInfo"),
      clGetSamplerInfo(b->sampler, CL_SAMPLER_REFERENCE_COUNT, sizeof n, &n, NULL),
      CL_INVALID_SAMPLER);
}

/* Bad handles as arguments of calls on good objects. */
/* Arguments PoCL 3.1 itself does not check: natively a SIGSEGV (NULL
 * objects, a NULL device in a list), an exit(2) (mipmaps), or a buffer
 * transfer on an image that never ends (and overran the worker's host side).
 * The worker must refuse each with the API's error however the guest sends
 * it (the fuzz corpus replays them raw: tests/fuzz/corpus/worker_opencl/regress-*). */
static void pocl_crashers(void) {
  const size_t origin[3] = {0, 0, 0};
  const size_t region[3] = {4, 2, 1};
  BAD_ASYNC("clEnqueueCopyBufferRect NULL source",
            clEnqueueCopyBufferRect(g_q, NULL, g_buf, origin, origin, region, 0, 0, 0, 0, 0, NULL,
                                    NULL),
            CL_INVALID_MEM_OBJECT);
  BAD_ASYNC("clEnqueueCopyBufferRect NULL destination",
            clEnqueueCopyBufferRect(g_q, g_buf, NULL, origin, origin, region, 0, 0, 0, 0, 0, NULL,
                                    NULL),
            CL_INVALID_MEM_OBJECT);
  const cl_image_format format = {CL_RGBA, CL_UNSIGNED_INT8};
  cl_image_desc desc = {0};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = 4;
  desc.image_height = 4;
  cl_int err;
  cl_mem image = clCreateImage(g_env.context, CL_MEM_READ_WRITE, &format, &desc, NULL, &err);
  CHECK_ERR(err, "clCreateImage");
  BAD_ASYNC("clEnqueueCopyImageToBuffer NULL destination",
            clEnqueueCopyImageToBuffer(g_q, image, NULL, origin, region, 0, 0, NULL, NULL),
            CL_INVALID_MEM_OBJECT);
  char host[64];
  BAD("clEnqueueReadBuffer of an image",
      clEnqueueReadBuffer(g_q, image, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL),
      CL_INVALID_MEM_OBJECT);
  BAD("clEnqueueWriteBuffer of an image",
      clEnqueueWriteBuffer(g_q, image, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL),
      CL_INVALID_MEM_OBJECT);
  CHECK(clReleaseMemObject(image));
  const cl_device_id none[1] = {NULL};
  BAD("clBuildProgram NULL device", clBuildProgram(g_prog, 1, none, NULL, NULL, NULL),
      CL_INVALID_DEVICE);
  BAD("clCompileProgram NULL device",
      clCompileProgram(g_prog, 1, none, NULL, 0, NULL, NULL, NULL, NULL), CL_INVALID_DEVICE);
  BAD_CREATE("clCreateProgramWithBuiltInKernels NULL device",
             clCreateProgramWithBuiltInKernels(g_env.context, 1, none, "inc", &g_err),
             CL_INVALID_DEVICE);
  /* A kernel enqueued after the program released the buffer it names:
   * natively PoCL uses freed memory (an abort in can_run_command, or worse);
   * the worker holds what a kernel's arguments name. */
  cl_mem doomed = ocl_buffer(&g_env, CL_MEM_READ_WRITE, 256, NULL);
  const cl_int by = 1;
  const size_t one = 1;
  CHECK(clSetKernelArg(g_kernel, 0, sizeof doomed, &doomed));
  CHECK(clSetKernelArg(g_kernel, 1, sizeof by, &by));
  CHECK(clReleaseMemObject(doomed));
  BAD("clEnqueueNDRangeKernel after its buffer's release",
      and_finish(clEnqueueNDRangeKernel(g_q, g_kernel, 1, NULL, &one, NULL, 0, NULL, NULL), g_q),
      CL_SUCCESS);
  /* With a context alive (g_env's), PoCL 3.1 aborts on the second type it has no device of. */
  const cl_device_type missing[] = {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ACCELERATOR,
                                    CL_DEVICE_TYPE_CUSTOM};
  for (size_t i = 0; i < sizeof missing / sizeof missing[0]; ++i)
    BAD_CREATE("clCreateContextFromType without such a device",
               clCreateContextFromType(NULL, missing[i], NULL, NULL, &g_err), CL_DEVICE_NOT_FOUND);
  desc.num_mip_levels = 1;
  BAD_CREATE("clCreateImage mipmaps",
             clCreateImage(g_env.context, CL_MEM_READ_WRITE, &format, &desc, NULL, &g_err),
             CL_INVALID_IMAGE_DESCRIPTOR);
  desc.num_mip_levels = 0;
  desc.num_samples = 2;
  BAD_CREATE("clCreateImageWithProperties samples",
             clCreateImageWithProperties(g_env.context, NULL, CL_MEM_READ_WRITE, &format, &desc,
                                         NULL, &g_err),
             CL_INVALID_IMAGE_DESCRIPTOR);
}

static void as_arguments(const BadSet *b) {
  char label[160];
  char host[64];
  BAD_CREATE(LABEL("clCreateBuffer"),
             clCreateBuffer(b->context, CL_MEM_READ_WRITE, 64, NULL, &g_err), CL_INVALID_CONTEXT);
  BAD_CREATE(LABEL("clCreateCommandQueueWithProperties device"),
             clCreateCommandQueueWithProperties(g_env.context, b->device, NULL, &g_err),
             CL_INVALID_DEVICE);
  BAD_CREATE(LABEL("clCreateContext device"),
             clCreateContext(NULL, 1, &b->device, NULL, NULL, &g_err), CL_INVALID_DEVICE);
  BAD_CREATE(LABEL("clCreateKernel"), clCreateKernel(b->program, "inc", &g_err),
             CL_INVALID_PROGRAM);
  const cl_buffer_region region = {0, 64};
  BAD_CREATE(LABEL("clCreateSubBuffer"),
             clCreateSubBuffer(b->mem, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &g_err),
             CL_INVALID_MEM_OBJECT);
  BAD(LABEL("clEnqueueReadBuffer queue"),
      clEnqueueReadBuffer(b->queue, g_buf, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL),
      CL_INVALID_COMMAND_QUEUE);
  BAD(LABEL("clEnqueueReadBuffer buffer"),
      clEnqueueReadBuffer(g_q, b->mem, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL),
      CL_INVALID_MEM_OBJECT);
  BAD(LABEL("clEnqueueReadBuffer wait list"),
      clEnqueueReadBuffer(g_q, g_buf, CL_TRUE, 0, sizeof host, host, 1, &b->event, NULL),
      CL_INVALID_EVENT_WAIT_LIST);
  const cl_event mixed[2] = {g_event, b->event};
  BAD(LABEL("clWaitForEvents good + bad"), clWaitForEvents(2, mixed), CL_INVALID_EVENT);
  BAD(LABEL("clBuildProgram"), clBuildProgram(b->program, 0, NULL, NULL, NULL, NULL),
      CL_INVALID_PROGRAM);
  BAD_ASYNC(LABEL("clSetKernelArg kernel"), clSetKernelArg(b->kernel, 0, sizeof g_buf, &g_buf),
            CL_INVALID_KERNEL);
  BAD_ASYNC(LABEL("clSetKernelArg buffer value"),
            clSetKernelArg(g_kernel, 0, sizeof b->mem, &b->mem), CL_INVALID_MEM_OBJECT);
  const size_t gws = 1;
  BAD_ASYNC(LABEL("clEnqueueNDRangeKernel kernel"),
            clEnqueueNDRangeKernel(g_q, b->kernel, 1, NULL, &gws, NULL, 0, NULL, NULL),
            CL_INVALID_KERNEL);
  BAD_ASYNC(LABEL("clEnqueueCopyBuffer source"),
            clEnqueueCopyBuffer(g_q, b->mem, g_buf, 0, 0, 16, 0, NULL, NULL),
            CL_INVALID_MEM_OBJECT);
  BAD_ASYNC(LABEL("clFlush"), clFlush(b->queue), CL_INVALID_COMMAND_QUEUE);
  BAD_ASYNC(LABEL("clRetainMemObject"), clRetainMemObject(b->mem), CL_INVALID_MEM_OBJECT);
  BAD_ASYNC(LABEL("clReleaseKernel"), clReleaseKernel(b->kernel), CL_INVALID_KERNEL);
  BAD_ASYNC(LABEL("clReleaseEvent"), clReleaseEvent(b->event), CL_INVALID_EVENT);
  BAD_ASYNC(LABEL("clReleaseSampler"), clReleaseSampler(b->sampler), CL_INVALID_SAMPLER);
  BAD_ASYNC(LABEL("clReleaseCommandQueue"), clReleaseCommandQueue(b->queue),
            CL_INVALID_COMMAND_QUEUE);
  BAD_ASYNC(LABEL("clReleaseContext"), clReleaseContext(b->context), CL_INVALID_CONTEXT);
}

/* Objects created and released again: their handles must now be invalid. */
static BadSet freed(void) {
  BadSet b = {.what = "freed", .platform = GARBAGE(cl_platform_id)};
  cl_int err;
  cl_device_id subs[8];
  cl_uint nsub = 0;
  const cl_device_partition_property equally[] = {CL_DEVICE_PARTITION_EQUALLY, 1, 0};
  if (clCreateSubDevices(g_env.device, equally, 8, subs, &nsub) == CL_SUCCESS && nsub > 0) {
    b.device = subs[0];
    for (cl_uint i = 0; i < nsub && i < 8; ++i)
      CHECK(clReleaseDevice(subs[i]));
  } else {
    b.device = GARBAGE(cl_device_id);
  }
  b.context = clCreateContext(NULL, 1, &g_env.device, NULL, NULL, &err);
  CHECK_ERR(err, "clCreateContext");
  b.queue = ocl_queue(&g_env, 0);
  b.mem = ocl_buffer(&g_env, CL_MEM_READ_WRITE, 64, NULL);
  const char *src = "__kernel void inc(__global int *d) { d[0] += 1; }";
  b.program = clCreateProgramWithSource(g_env.context, 1, &src, NULL, &err);
  CHECK_ERR(err, "clCreateProgramWithSource");
  b.kernel = ocl_kernel(g_prog, "inc");
  b.event = clCreateUserEvent(g_env.context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  b.sampler = clCreateSampler(g_env.context, CL_FALSE, CL_ADDRESS_NONE, CL_FILTER_NEAREST, &err);
  CHECK_ERR(err, "clCreateSampler");
  CHECK(clSetUserEventStatus(b.event, CL_COMPLETE));
  CHECK(clReleaseEvent(b.event));
  CHECK(clReleaseSampler(b.sampler));
  CHECK(clReleaseKernel(b.kernel));
  CHECK(clReleaseProgram(b.program));
  CHECK(clReleaseMemObject(b.mem));
  CHECK(clReleaseCommandQueue(b.queue));
  CHECK(clReleaseContext(b.context));
  return b;
}

int main(void) {
  g_env = ocl_env_open();
  g_q = ocl_queue(&g_env, 0);
  g_buf = ocl_buffer(&g_env, CL_MEM_READ_WRITE, 256, NULL);
  g_prog = ocl_build(&g_env,
                     "__kernel void inc(__global int *d, int by) {\n"
                     "  d[get_global_id(0)] += by;\n"
                     "}\n",
                     NULL);
  g_kernel = ocl_kernel(g_prog, "inc");
  cl_int err;
  g_sampler = clCreateSampler(g_env.context, CL_FALSE, CL_ADDRESS_NONE, CL_FILTER_NEAREST, &err);
  CHECK_ERR(err, "clCreateSampler");
  g_event = clCreateUserEvent(g_env.context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  CHECK(clSetUserEventStatus(g_event, CL_COMPLETE));

  const BadSet garbage = {"0x123456789",       GARBAGE(cl_platform_id),   GARBAGE(cl_device_id),
                          GARBAGE(cl_context), GARBAGE(cl_command_queue), GARBAGE(cl_mem),
                          GARBAGE(cl_program), GARBAGE(cl_kernel),        GARBAGE(cl_event),
                          GARBAGE(cl_sampler)};
  const BadSet ones = {"all ones",           ALL_ONES(cl_platform_id),   ALL_ONES(cl_device_id),
                       ALL_ONES(cl_context), ALL_ONES(cl_command_queue), ALL_ONES(cl_mem),
                       ALL_ONES(cl_program), ALL_ONES(cl_kernel),        ALL_ONES(cl_event),
                       ALL_ONES(cl_sampler)};
  /* Each slot holds a live object of another type. */
  const BadSet wrong = {"wrong type",         (cl_platform_id)g_buf,   (cl_device_id)g_env.context,
                        (cl_context)g_q,      (cl_command_queue)g_buf, (cl_mem)g_kernel,
                        (cl_program)g_kernel, (cl_kernel)g_prog,       (cl_event)g_buf,
                        (cl_sampler)g_event};
  const BadSet gone = freed();
  const BadSet *sets[] = {&garbage, &ones, &wrong, &gone};
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; ++i) {
    queries(sets[i]);
    as_arguments(sets[i]);
  }

  pocl_crashers();

  /* The good objects were not disturbed by any of it. */
  const cl_int by = 2;
  const cl_int zero = 0;
  CHECK(clEnqueueFillBuffer(g_q, g_buf, &zero, sizeof zero, 0, 256, 0, NULL, NULL));
  CHECK(clSetKernelArg(g_kernel, 0, sizeof g_buf, &g_buf));
  CHECK(clSetKernelArg(g_kernel, 1, sizeof by, &by));
  const size_t gws = 64;
  CHECK(clEnqueueNDRangeKernel(g_q, g_kernel, 1, NULL, &gws, NULL, 0, NULL, NULL));
  cl_int out[64];
  CHECK(clEnqueueReadBuffer(g_q, g_buf, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
  printf("good objects still work: %s\n", yes_no(out[0] == 2 && out[63] == 2));
  EXPECT(out[0] == 2 && out[63] == 2, "good objects broken");
  CHECK(clReleaseEvent(g_event));
  CHECK(clReleaseSampler(g_sampler));
  CHECK(clReleaseKernel(g_kernel));
  CHECK(clReleaseProgram(g_prog));
  CHECK(clReleaseMemObject(g_buf));
  CHECK(clReleaseCommandQueue(g_q));
  ocl_env_close(&g_env);
  return ocl_finish();
}
