/* SPDX-License-Identifier: MIT */
/* Buffers that alias shared virtual memory: a CL_MEM_USE_HOST_PTR buffer
 * over a coarse-grained SVM allocation, a sub-buffer of it and a buffer over
 * part of the allocation are the same memory as the allocation. A kernel writing through
 * one is seen through the others and by a later SVM map (OpenCL 3.0, 5.2.1:
 * host_ptr may be an SVM pointer, and the buffer then uses that memory).
 * (A 1D image over such a buffer crashes PoCL 3.1 natively, so it is left out.) */
#include "common.h"

enum { N = 256 };

static OclEnv g_env;
static cl_command_queue g_q;

/* The allocation's values, read through an SVM map. */
static void print_svm(const char *what, cl_uint *svm, const cl_uint want[4]) {
  CHECK(clEnqueueSVMMap(g_q, CL_TRUE, CL_MAP_READ, svm, N * sizeof(cl_uint), 0, NULL, NULL));
  printf("%s: [0] %u [%d] %u [%d] %u [%d] %u, checksum %08x\n", what, svm[0], N / 4, svm[N / 4],
         N / 2, svm[N / 2], N - 1, svm[N - 1], checksum(svm, N * sizeof(cl_uint)));
  EXPECT(svm[0] == want[0] && svm[N / 4] == want[1] && svm[N / 2] == want[2] &&
             svm[N - 1] == want[3],
         "%s: want %u %u %u %u", what, want[0], want[1], want[2], want[3]);
  CHECK(clEnqueueSVMUnmap(g_q, svm, 0, NULL, NULL));
  CHECK(clFinish(g_q));
}

static void run(cl_kernel k, cl_mem buf, size_t n) {
  CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
  CHECK(clEnqueueNDRangeKernel(g_q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
  CHECK(clFinish(g_q));
}

int main(void) {
  g_env = ocl_env_open();
  g_q = ocl_queue(&g_env, 0);
  cl_device_svm_capabilities caps = 0;
  CHECK(clGetDeviceInfo(g_env.device, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps, NULL));
  printf("coarse-grained SVM: %s\n", yes_no((caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0));
  if (!(caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER))
    return ocl_finish();

  cl_uint *svm = clSVMAlloc(g_env.context, CL_MEM_READ_WRITE, N * sizeof(cl_uint), 0);
  EXPECT(svm != NULL, "clSVMAlloc failed");
  if (svm == NULL)
    return ocl_finish();
  CHECK(clEnqueueSVMMap(g_q, CL_TRUE, CL_MAP_WRITE, svm, N * sizeof(cl_uint), 0, NULL, NULL));
  for (cl_uint i = 0; i < N; ++i)
    svm[i] = 17;
  CHECK(clEnqueueSVMUnmap(g_q, svm, 0, NULL, NULL));

  cl_program prog = ocl_build(&g_env,
                              "__kernel void twice(__global uint *p) {\n"
                              "  p[get_global_id(0)] *= 2u;\n"
                              "}\n",
                              NULL);
  cl_kernel twice = ocl_kernel(prog, "twice");

  /* A buffer over the allocation: the kernel doubles the allocation's values. */
  cl_int err = CL_SUCCESS;
  cl_mem buf = clCreateBuffer(g_env.context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                              N * sizeof(cl_uint), svm, &err);
  CHECK(err);
  run(twice, buf, N);
  print_svm("after a kernel on the buffer", svm, (const cl_uint[4]){34, 34, 34, 34});

  /* A kernel on the SVM pointer is seen through the buffer. */
  CHECK(clSetKernelArgSVMPointer(twice, 0, svm));
  size_t n = N;
  CHECK(clEnqueueNDRangeKernel(g_q, twice, 1, NULL, &n, NULL, 0, NULL, NULL));
  cl_uint via_buffer[N];
  CHECK(clEnqueueReadBuffer(g_q, buf, CL_TRUE, 0, sizeof via_buffer, via_buffer, 0, NULL, NULL));
  printf("buffer after a kernel on the SVM pointer: [0] %u, checksum %08x\n", via_buffer[0],
         checksum(via_buffer, sizeof via_buffer));
  EXPECT(via_buffer[0] == 68 && via_buffer[N - 1] == 68, "the buffer must read 68s");

  /* The second half as a sub-buffer. */
  cl_buffer_region half = {N / 2 * sizeof(cl_uint), N / 2 * sizeof(cl_uint)};
  cl_mem sub = clCreateSubBuffer(buf, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &half, &err);
  CHECK(err);
  run(twice, sub, N / 2);
  print_svm("after a kernel on the second half's sub-buffer", svm,
            (const cl_uint[4]){68, 68, 136, 136});

  /* A buffer over the middle of the allocation. */
  cl_mem mid = clCreateBuffer(g_env.context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                              16 * sizeof(cl_uint), svm + N / 4, &err);
  CHECK(err);
  run(twice, mid, 16);
  print_svm("after a kernel on a buffer over 16 values at N/4", svm,
            (const cl_uint[4]){68, 136, 136, 136});

  CHECK(clReleaseMemObject(mid));
  CHECK(clReleaseMemObject(sub));
  CHECK(clReleaseMemObject(buf));
  /* The allocation outlives the buffers over it. */
  print_svm("after releasing the buffers", svm, (const cl_uint[4]){68, 136, 136, 136});
  /* Freed before a buffer over it is released: the buffer still works. */
  cl_mem last = clCreateBuffer(g_env.context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                               N * sizeof(cl_uint), svm, &err);
  CHECK(err);
  CHECK(clReleaseKernel(twice));
  CHECK(clReleaseProgram(prog));
  clSVMFree(g_env.context, svm);
  CHECK(clReleaseMemObject(last));
  CHECK(clReleaseCommandQueue(g_q));
  ocl_env_close(&g_env);
  return ocl_finish();
}
