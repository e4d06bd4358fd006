/* SPDX-License-Identifier: MIT */
/* Coarse-grained shared virtual memory: allocation, map/unmap, kernels
 * taking SVM pointers (also into the middle of an allocation), memcpy in
 * every direction, fill, migration, exec info, and freeing (immediate and
 * enqueued with a callback). */
#include "common.h"

enum { N = 1024 };

static OclEnv g_env;
static cl_command_queue g_q;
static int g_freed;

static void CL_CALLBACK on_free(cl_command_queue q, cl_uint n, void *ptrs[], void *user) {
  (void)q;
  for (cl_uint i = 0; i < n; ++i)
    clSVMFree(g_env.context, ptrs[i]);
  g_freed = *(int *)user;
}

static cl_uint sum(const cl_uint *p, size_t n) {
  cl_uint s = 0;
  for (size_t i = 0; i < n; ++i)
    s = s * 31u + p[i];
  return s;
}

int main(void) {
  g_env = ocl_env_open();
  g_q = ocl_queue(&g_env, 0);
  cl_device_svm_capabilities caps = 0;
  CHECK(clGetDeviceInfo(g_env.device, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps, NULL));
  printf("coarse-grained SVM: %s\n", yes_no((caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0));
  if (!(caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER))
    return 0;

  cl_uint *a = clSVMAlloc(g_env.context, CL_MEM_READ_WRITE, N * sizeof(cl_uint), 0);
  cl_uint *b = clSVMAlloc(g_env.context, CL_MEM_READ_WRITE, N * sizeof(cl_uint), 64);
  EXPECT(a != NULL && b != NULL, "clSVMAlloc failed");
  if (a == NULL || b == NULL)
    return 1;
  printf("aligned to 64: %s\n", yes_no(((uintptr_t)b & 63) == 0));
  printf("clSVMAlloc(size 0) is NULL: %s\n",
         yes_no(clSVMAlloc(g_env.context, CL_MEM_READ_WRITE, 0, 0) == NULL));

  CHECK(clEnqueueSVMMap(g_q, CL_TRUE, CL_MAP_WRITE, a, N * sizeof(cl_uint), 0, NULL, NULL));
  for (cl_uint i = 0; i < N; ++i)
    a[i] = i * 3u;
  cl_event unmapped;
  CHECK(clEnqueueSVMUnmap(g_q, a, 0, NULL, &unmapped));
  cl_command_type type = 0;
  CHECK(clGetEventInfo(unmapped, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL));
  printf("unmap event is SVM_UNMAP: %s\n", yes_no(type == CL_COMMAND_SVM_UNMAP));
  CHECK(clReleaseEvent(unmapped));

  cl_program prog = ocl_build(&g_env,
                              "__kernel void add(__global uint *dst, __global const uint *src,"
                              " uint k) {\n"
                              "  size_t i = get_global_id(0);\n"
                              "  dst[i] = src[i] + k;\n"
                              "}\n",
                              "-cl-std=CL2.0");
  cl_kernel k = ocl_kernel(prog, "add");
  const cl_uint by = 7;
  CHECK(clSetKernelArgSVMPointer(k, 0, b));
  CHECK(clSetKernelArgSVMPointer(k, 1, a));
  CHECK(clSetKernelArg(k, 2, sizeof by, &by));
  void *both[2] = {a, b};
  CHECK(clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_SVM_PTRS, sizeof both, both));
  const size_t gws = N;
  CHECK(clEnqueueNDRangeKernel(g_q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
  /* Pointers into the middle: dst b[N/2..], src a[0..]. */
  CHECK(clSetKernelArgSVMPointer(k, 0, b + N / 2));
  const size_t half = N / 2;
  const cl_uint by2 = 1000;
  CHECK(clSetKernelArg(k, 2, sizeof by2, &by2));
  CHECK(clEnqueueNDRangeKernel(g_q, k, 1, NULL, &half, NULL, 0, NULL, NULL));
  CHECK(clFinish(g_q));

  CHECK(clEnqueueSVMMap(g_q, CL_TRUE, CL_MAP_READ, b, N * sizeof(cl_uint), 0, NULL, NULL));
  printf("kernel result: b[0]=%u b[%d]=%u b[%d]=%u sum %08x\n", b[0], N / 2 - 1, b[N / 2 - 1],
         N / 2, b[N / 2], sum(b, N));
  EXPECT(b[0] == 7 && b[N / 2] == 1000, "kernel on SVM gave the wrong result");
  CHECK(clEnqueueSVMUnmap(g_q, b, 0, NULL, NULL));

  /* memcpy: svm -> host, host -> svm, svm -> svm. */
  static cl_uint host[N];
  CHECK(clEnqueueSVMMemcpy(g_q, CL_TRUE, host, b, N * sizeof(cl_uint), 0, NULL, NULL));
  printf("svm -> host: host[1]=%u sum %08x\n", host[1], sum(host, N));
  for (cl_uint i = 0; i < N; ++i)
    host[i] = 5000u + i;
  CHECK(clEnqueueSVMMemcpy(g_q, CL_TRUE, a, host, N * sizeof(cl_uint), 0, NULL, NULL));
  CHECK(clEnqueueSVMMemcpy(g_q, CL_TRUE, b + 10, a + 20, 5 * sizeof(cl_uint), 0, NULL, NULL));
  CHECK(clEnqueueSVMMap(g_q, CL_TRUE, CL_MAP_READ, b, N * sizeof(cl_uint), 0, NULL, NULL));
  printf("svm -> svm: b[10]=%u b[14]=%u b[15]=%u\n", b[10], b[14], b[15]);
  CHECK(clEnqueueSVMUnmap(g_q, b, 0, NULL, NULL));

  const cl_uint pattern = 0xabcd1234u;
  CHECK(clEnqueueSVMMemFill(g_q, a, &pattern, sizeof pattern, 16 * sizeof(cl_uint), 0, NULL, NULL));
  const void *mig[1] = {a};
  CHECK(clEnqueueSVMMigrateMem(g_q, 1, mig, NULL, 0, 0, NULL, NULL));
  CHECK(clEnqueueSVMMap(g_q, CL_TRUE, CL_MAP_READ, a, N * sizeof(cl_uint), 0, NULL, NULL));
  printf("fill: a[0]=%08x a[15]=%08x a[16]=%u\n", a[0], a[15], a[16]);
  CHECK(clEnqueueSVMUnmap(g_q, a, 0, NULL, NULL));

  static int token = 42;
  void *to_free[1] = {a};
  CHECK(clEnqueueSVMFree(g_q, 1, to_free, on_free, &token, 0, NULL, NULL));
  CHECK(clFinish(g_q));
  wait_for_count(&g_freed, 42);
  printf("enqueued free ran its callback: %s\n", yes_no(g_freed == 42));
  clSVMFree(g_env.context, b);
  CHECK(clReleaseKernel(k));
  CHECK(clReleaseProgram(prog));
  CHECK(clReleaseCommandQueue(g_q));
  ocl_env_close(&g_env);
  return ocl_finish();
}
