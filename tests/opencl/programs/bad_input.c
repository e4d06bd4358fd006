/* SPDX-License-Identifier: MIT */
/* Bad input that a native OpenCL stack survives: NULL handles, out-of-range
 * sizes and offsets, absurd allocations, invalid flags and parameter names. Every line prints the
 * error the call returned; the program checks only that each one failed, since what matters is that
 * remoted runs print the same as native ones.
 *
 * Calls that may be remoted asynchronously (non-blocking enqueues, kernel
 * arguments, releases) are paired with a clFinish on a good queue and the
 * first error of the pair is printed. */
#include "common.h"

static OclEnv g_env;
static cl_command_queue g_q;
static cl_mem g_buf;
static cl_kernel g_kernel;
static cl_program g_prog;

enum { BUF_SIZE = 1024 };

static void report(const char *label, cl_int err) {
  printf("%s: %s\n", label, cl_err_name(err));
  EXPECT(err != CL_SUCCESS, "%s succeeded", label);
}

/* Calls the spec lets succeed (or where PoCL chose to): printed only. */
static void report_any(const char *label, cl_int err) {
  printf("%s: %s\n", label, cl_err_name(err));
}

static void report_async_as(void (*print)(const char *, cl_int), const char *label, cl_int err) {
  char full[256];
  snprintf(full, sizeof full, "%s + clFinish", label);
  print(full, and_finish(err, g_q));
}

static void report_async(const char *label, cl_int err) {
  report_async_as(report, label, err);
}

/* Creators: the error and whether a handle came back anyway. */
static void report_create(const char *label, const void *handle, cl_int err) {
  printf("%s: %s, NULL handle: %s\n", label, cl_err_name(err), yes_no(handle == NULL));
  EXPECT(err != CL_SUCCESS && handle == NULL, "%s succeeded", label);
}

static void null_handles(void) {
  char name[64];
  size_t size = 0;
  cl_int err;
  report("clGetDeviceInfo(NULL device)",
         clGetDeviceInfo(NULL, CL_DEVICE_NAME, sizeof name, name, NULL));
  report("clGetContextInfo(NULL)",
         clGetContextInfo(NULL, CL_CONTEXT_NUM_DEVICES, sizeof size, &size, NULL));
  report("clGetCommandQueueInfo(NULL)",
         clGetCommandQueueInfo(NULL, CL_QUEUE_CONTEXT, sizeof size, &size, NULL));
  report("clGetMemObjectInfo(NULL)",
         clGetMemObjectInfo(NULL, CL_MEM_SIZE, sizeof size, &size, NULL));
  report("clGetProgramInfo(NULL)",
         clGetProgramInfo(NULL, CL_PROGRAM_NUM_DEVICES, sizeof size, &size, NULL));
  report("clGetKernelInfo(NULL)",
         clGetKernelInfo(NULL, CL_KERNEL_NUM_ARGS, sizeof size, &size, NULL));
  report("clGetEventInfo(NULL)",
         clGetEventInfo(NULL, CL_EVENT_COMMAND_TYPE, sizeof size, &size, NULL));
  report("clGetSamplerInfo(NULL)",
         clGetSamplerInfo(NULL, CL_SAMPLER_REFERENCE_COUNT, sizeof size, &size, NULL));
  /* The loader may pick a default platform for NULL: printed, not checked. */
  printf("clGetDeviceIDs(NULL platform): %s\n",
         cl_err_name(clGetDeviceIDs(NULL, CL_DEVICE_TYPE_ALL, 0, NULL, (cl_uint *)&size)));

  cl_mem m = clCreateBuffer(NULL, CL_MEM_READ_WRITE, 64, NULL, &err);
  report_create("clCreateBuffer(NULL context)", m, err);
  cl_command_queue q = clCreateCommandQueueWithProperties(NULL, g_env.device, NULL, &err);
  report_create("clCreateCommandQueueWithProperties(NULL context)", q, err);
  q = clCreateCommandQueueWithProperties(g_env.context, NULL, NULL, &err);
  report_create("clCreateCommandQueueWithProperties(NULL device)", q, err);
  const char *src = "__kernel void k(void) {}";
  cl_program p = clCreateProgramWithSource(NULL, 1, &src, NULL, &err);
  report_create("clCreateProgramWithSource(NULL context)", p, err);
  cl_kernel k = clCreateKernel(NULL, "k", &err);
  report_create("clCreateKernel(NULL program)", k, err);
  cl_device_id null_dev = NULL;
  cl_context c = clCreateContext(NULL, 1, &null_dev, NULL, NULL, &err);
  report_create("clCreateContext({NULL device})", c, err);
  c = clCreateContext(NULL, 1, NULL, NULL, NULL, &err);
  report_create("clCreateContext(NULL device list)", c, err);
  cl_event e = clCreateUserEvent(NULL, &err);
  report_create("clCreateUserEvent(NULL context)", e, err);
  cl_sampler s = clCreateSampler(NULL, CL_FALSE, CL_ADDRESS_NONE, CL_FILTER_NEAREST, &err);
  report_create("clCreateSampler(NULL context)", s, err);

  char host[64];
  report("clEnqueueReadBuffer(NULL queue, blocking)",
         clEnqueueReadBuffer(NULL, g_buf, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
  report("clEnqueueReadBuffer(NULL buffer, blocking)",
         clEnqueueReadBuffer(g_q, NULL, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
  report("clEnqueueWriteBuffer(NULL buffer, blocking)",
         clEnqueueWriteBuffer(g_q, NULL, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
  report("clFinish(NULL)", clFinish(NULL));
  report("clBuildProgram(NULL)", clBuildProgram(NULL, 0, NULL, NULL, NULL, NULL));
  report("clWaitForEvents({NULL})", clWaitForEvents(1, &e));
  report("clWaitForEvents(1, NULL list)", clWaitForEvents(1, NULL));
  report_async("clSetKernelArg(NULL kernel)", clSetKernelArg(NULL, 0, sizeof g_buf, &g_buf));
  /* No clEnqueueNDRangeKernel(NULL kernel): PoCL 3.1 dereferences it. */
  report_async("clFlush(NULL)", clFlush(NULL));
  report_async("clReleaseMemObject(NULL)", clReleaseMemObject(NULL));
  report_async("clReleaseKernel(NULL)", clReleaseKernel(NULL));
  report_async("clRetainContext(NULL)", clRetainContext(NULL));
}

/* PoCL does not check handle types: a buffer passed as a queue, kernel or
 * event makes it crash, and most other mix-ups "succeed" with garbage. So
 * handles of the wrong type are tested in bad_handles.c (under ava only)
 * against the errors the spec requires. The loader itself checks platforms. */
static void wrong_types(void) {
  char name[64];
  report("clGetPlatformInfo(buffer as platform)",
         clGetPlatformInfo((cl_platform_id)g_buf, CL_PLATFORM_NAME, sizeof name, name, NULL));
}

static void sizes_and_ranges(void) {
  char *host = calloc(1, 2 * BUF_SIZE);
  report("read of size+1 (blocking)",
         clEnqueueReadBuffer(g_q, g_buf, CL_TRUE, 0, BUF_SIZE + 1, host, 0, NULL, NULL));
  report("write of size+1 (blocking)",
         clEnqueueWriteBuffer(g_q, g_buf, CL_TRUE, 0, BUF_SIZE + 1, host, 0, NULL, NULL));
  report("read at offset size-8, 16 bytes (blocking)",
         clEnqueueReadBuffer(g_q, g_buf, CL_TRUE, BUF_SIZE - 8, 16, host, 0, NULL, NULL));
  report("write at offset size, 1 byte (blocking)",
         clEnqueueWriteBuffer(g_q, g_buf, CL_TRUE, BUF_SIZE, 1, host, 0, NULL, NULL));
  /* Offsets and sizes that wrap around when added. */
  report("read at offset SIZE_MAX, 2 bytes (blocking)",
         clEnqueueReadBuffer(g_q, g_buf, CL_TRUE, SIZE_MAX, 2, host, 0, NULL, NULL));
  report("read of SIZE_MAX bytes (blocking)",
         clEnqueueReadBuffer(g_q, g_buf, CL_TRUE, 0, SIZE_MAX, host, 0, NULL, NULL));
  report("write of 2^40 bytes from a 2 KiB array (blocking)",
         clEnqueueWriteBuffer(g_q, g_buf, CL_TRUE, 0, (size_t)1 << 40, host, 0, NULL, NULL));
  report("read into NULL, 16 bytes (blocking)",
         clEnqueueReadBuffer(g_q, g_buf, CL_TRUE, 0, 16, NULL, 0, NULL, NULL));
  report("write from NULL, 16 bytes (blocking)",
         clEnqueueWriteBuffer(g_q, g_buf, CL_TRUE, 0, 16, NULL, 0, NULL, NULL));
  report_any("read of 0 bytes (blocking)",
             clEnqueueReadBuffer(g_q, g_buf, CL_TRUE, 0, 0, host, 0, NULL, NULL));
  report_async("non-blocking read of size+1",
               clEnqueueReadBuffer(g_q, g_buf, CL_FALSE, 0, BUF_SIZE + 1, host, 0, NULL, NULL));
  report_async("non-blocking write of 2^40 bytes",
               clEnqueueWriteBuffer(g_q, g_buf, CL_FALSE, 0, (size_t)1 << 40, host, 0, NULL, NULL));
  cl_mem other = ocl_buffer(&g_env, CL_MEM_READ_WRITE, BUF_SIZE, NULL);
  report_async("copy beyond the source end",
               clEnqueueCopyBuffer(g_q, g_buf, other, 8, 0, BUF_SIZE, 0, NULL, NULL));
  report_async("copy beyond the destination end",
               clEnqueueCopyBuffer(g_q, g_buf, other, 0, 8, BUF_SIZE, 0, NULL, NULL));
  const cl_uint pattern = 1;
  report_async("fill beyond the end", clEnqueueFillBuffer(g_q, g_buf, &pattern, sizeof pattern,
                                                          BUF_SIZE - 4, 8, 0, NULL, NULL));
  report_async("fill with a NULL pattern",
               clEnqueueFillBuffer(g_q, g_buf, NULL, sizeof pattern, 0, 8, 0, NULL, NULL));
  cl_int err;
  void *p =
      clEnqueueMapBuffer(g_q, g_buf, CL_TRUE, CL_MAP_READ, BUF_SIZE - 4, 8, 0, NULL, NULL, &err);
  report_create("blocking map beyond the end", p, err);
  const cl_buffer_region region = {BUF_SIZE, 16};
  cl_mem sub = clCreateSubBuffer(g_buf, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  report_create("sub-buffer beyond the end", sub, err);
  sub = clCreateSubBuffer(g_buf, 0, CL_BUFFER_CREATE_TYPE_REGION, NULL, &err);
  report_create("sub-buffer with a NULL region", sub, err);
  const size_t origin[3] = {0, 0, 0}, region3[3] = {64, 64, 1};
  report("read rect larger than the buffer (blocking)",
         clEnqueueReadBufferRect(g_q, g_buf, CL_TRUE, origin, origin, region3, 64, 0, 64, 0, host,
                                 0, NULL, NULL));
  report("wait list count 1 with a NULL list (blocking read)",
         clEnqueueReadBuffer(g_q, g_buf, CL_TRUE, 0, 16, host, 1, NULL, NULL));
  cl_event none = NULL;
  report("wait list count 0 with a list (blocking read)",
         clEnqueueReadBuffer(g_q, g_buf, CL_TRUE, 0, 16, host, 0, &none, NULL));
  CHECK(clReleaseMemObject(other));
  free(host);
}

static void allocations(void) {
  cl_int err;
  static const struct {
    const char *name;
    cl_mem_flags flags;
    size_t size;
    int needs_host;
  } kCases[] = {
      {"clCreateBuffer(2^40 bytes)", CL_MEM_READ_WRITE, (size_t)1 << 40, 0},
      {"clCreateBuffer(2^40 bytes, ALLOC_HOST_PTR)", CL_MEM_ALLOC_HOST_PTR, (size_t)1 << 40, 0},
      {"clCreateBuffer(SIZE_MAX bytes)", CL_MEM_READ_WRITE, SIZE_MAX, 0},
      {"clCreateBuffer(0 bytes)", CL_MEM_READ_WRITE, 0, 0},
      {"clCreateBuffer(READ_ONLY|WRITE_ONLY)", CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY, 64, 0},
      {"clCreateBuffer(unknown flag bit 30)", (cl_mem_flags)1 << 30, 64, 0},
      {"clCreateBuffer(USE_HOST_PTR, NULL host)", CL_MEM_USE_HOST_PTR, 64, 0},
      {"clCreateBuffer(COPY_HOST_PTR, NULL host)", CL_MEM_COPY_HOST_PTR, 64, 0},
      {"clCreateBuffer(host pointer without a host flag)", CL_MEM_READ_WRITE, 64, 1},
      {"clCreateBuffer(USE_HOST_PTR|ALLOC_HOST_PTR)", CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR,
       64, 1},
      {"clCreateBuffer(HOST_READ_ONLY|HOST_NO_ACCESS)",
       CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS, 64, 0},
  };
  static char host[64];
  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {
    cl_mem m = clCreateBuffer(g_env.context, kCases[i].flags, kCases[i].size,
                              kCases[i].needs_host ? host : NULL, &err);
    report_create(kCases[i].name, m, err);
    if (m != NULL)
      clReleaseMemObject(m);
  }
  cl_image_format fmt = {CL_RGBA, CL_UNORM_INT8};
  cl_image_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = (size_t)1 << 30;
  desc.image_height = (size_t)1 << 30;
  cl_mem img = clCreateImage(g_env.context, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
  report_create("clCreateImage(2^30 x 2^30)", img, err);
  img = clCreateImage(g_env.context, CL_MEM_READ_WRITE, &fmt, NULL, NULL, &err);
  report_create("clCreateImage(NULL descriptor)", img, err);
  img = clCreateImage(g_env.context, CL_MEM_READ_WRITE, NULL, &desc, NULL, &err);
  report_create("clCreateImage(NULL format)", img, err);
  /* Transfers outside a small image, with a host buffer only as big as the image. */
  desc.image_width = 4;
  desc.image_height = 4;
  img = clCreateImage(g_env.context, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
  printf("clCreateImage(4 x 4): %s\n", cl_err_name(err));
  if (img != NULL) {
    static unsigned char pixels[4 * 4 * 4];
    const size_t origin[3] = {0, 0, 0}, at[3] = {3, 3, 0}, big[3] = {64, 64, 1}, two[3] = {2, 2, 1};
    report("read image region larger than the image",
           clEnqueueReadImage(g_q, img, CL_TRUE, origin, big, 0, 0, pixels, 0, NULL, NULL));
    report("write image region past the edge (blocking)",
           clEnqueueWriteImage(g_q, img, CL_TRUE, at, two, 0, 0, pixels, 0, NULL, NULL));
    report("read image with a NULL region",
           clEnqueueReadImage(g_q, img, CL_TRUE, origin, NULL, 0, 0, pixels, 0, NULL, NULL));
    clReleaseMemObject(img);
  }
}

static void params(void) {
  char small[4];
  size_t size = 0;
  report("clGetDeviceInfo(unknown param 0x7fff)",
         clGetDeviceInfo(g_env.device, 0x7fff, sizeof small, small, NULL));
  report("clGetDeviceInfo(NAME into 4 bytes)",
         clGetDeviceInfo(g_env.device, CL_DEVICE_NAME, sizeof small, small, NULL));
  report("clGetDeviceInfo(MAX_MEM_ALLOC_SIZE into 4 bytes)",
         clGetDeviceInfo(g_env.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof small, small, NULL));
  report("clGetPlatformInfo(unknown param)",
         clGetPlatformInfo(g_env.platform, 0x7fff, sizeof small, small, NULL));
  report("clGetPlatformInfo(NAME into 4 bytes)",
         clGetPlatformInfo(g_env.platform, CL_PLATFORM_NAME, sizeof small, small, NULL));
  report("clGetMemObjectInfo(unknown param)",
         clGetMemObjectInfo(g_buf, 0x7fff, sizeof size, &size, NULL));
  report("clGetMemObjectInfo(SIZE into 4 bytes)",
         clGetMemObjectInfo(g_buf, CL_MEM_SIZE, sizeof small, small, NULL));
  report("clGetKernelInfo(FUNCTION_NAME into 4 bytes)",
         clGetKernelInfo(g_kernel, CL_KERNEL_FUNCTION_NAME, 2, small, NULL));
  report("clGetProgramBuildInfo(NULL device)",
         clGetProgramBuildInfo(g_prog, NULL, CL_PROGRAM_BUILD_STATUS, sizeof size, &size, NULL));
  report("clGetDeviceIDs(type 0)", clGetDeviceIDs(g_env.platform, 0, 0, NULL, (cl_uint *)&size));
  report("clGetDeviceIDs(0 entries, no count)",
         clGetDeviceIDs(g_env.platform, CL_DEVICE_TYPE_ALL, 0, NULL, NULL));
  report("clGetPlatformIDs(0 entries, a list)", clGetPlatformIDs(0, &g_env.platform, NULL));
  /* A huge size with a NULL value asks only for the size: that is fine. */
  cl_int err = clGetDeviceInfo(g_env.device, CL_DEVICE_NAME, SIZE_MAX, NULL, &size);
  printf("clGetDeviceInfo(NAME, SIZE_MAX, NULL value): %s, size > 1: %s\n", cl_err_name(err),
         yes_no(size > 1));
  EXPECT(err == CL_SUCCESS, "size query with a huge size");
  report_async("clSetKernelArg(index 99)", clSetKernelArg(g_kernel, 99, sizeof g_buf, &g_buf));
  report_async("clSetKernelArg(buffer arg, size 3)", clSetKernelArg(g_kernel, 0, 3, &g_buf));
  const size_t gws = 16, lws = 1 << 20;
  const cl_int by = 1;
  CHECK(clSetKernelArg(g_kernel, 0, sizeof g_buf, &g_buf));
  CHECK(clSetKernelArg(g_kernel, 1, sizeof by, &by));
  report_async("NDRange with local size 2^20",
               clEnqueueNDRangeKernel(g_q, g_kernel, 1, NULL, &gws, &lws, 0, NULL, NULL));
  report_async("NDRange with 0 dimensions",
               clEnqueueNDRangeKernel(g_q, g_kernel, 0, NULL, &gws, NULL, 0, NULL, NULL));
  report_async_as(report_any, "NDRange with a NULL global size",
                  clEnqueueNDRangeKernel(g_q, g_kernel, 1, NULL, NULL, NULL, 0, NULL, NULL));
}

int main(void) {
  g_env = ocl_env_open();
  g_q = ocl_queue(&g_env, 0);
  g_buf = ocl_buffer(&g_env, CL_MEM_READ_WRITE, BUF_SIZE, NULL);
  g_prog = ocl_build(&g_env,
                     "__kernel void inc(__global int *d, int by) {\n"
                     "  d[get_global_id(0)] += by;\n"
                     "}\n",
                     NULL);
  g_kernel = ocl_kernel(g_prog, "inc");
  null_handles();
  wrong_types();
  sizes_and_ranges();
  allocations();
  params();
  /* After all that, the objects still work. */
  const cl_uint v = 5;
  CHECK(clEnqueueFillBuffer(g_q, g_buf, &v, sizeof v, 0, BUF_SIZE, 0, NULL, NULL));
  const size_t gws = BUF_SIZE / sizeof(cl_int);
  CHECK(clEnqueueNDRangeKernel(g_q, g_kernel, 1, NULL, &gws, NULL, 0, NULL, NULL));
  cl_uint out[BUF_SIZE / sizeof(cl_uint)];
  CHECK(clEnqueueReadBuffer(g_q, g_buf, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
  printf("objects still work: %s\n", yes_no(out[0] == 6 && out[gws - 1] == 6));
  EXPECT(out[0] == 6 && out[gws - 1] == 6, "objects broken after bad input");
  CHECK(clReleaseKernel(g_kernel));
  CHECK(clReleaseProgram(g_prog));
  CHECK(clReleaseMemObject(g_buf));
  CHECK(clReleaseCommandQueue(g_q));
  ocl_env_close(&g_env);
  return ocl_finish();
}
