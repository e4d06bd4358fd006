/* SPDX-License-Identifier: MIT */
/* A guest that forges a device pointer through clSetKernelArg (issue 13,
 * finding 4): 8 bytes of its choosing for a __global pointer argument of a
 * kernel from each kind of program PoCL can build: source, a binary
 * (rebuilt with and without -cl-kernel-arg-info) and a compiled object
 * linked without options, which in PoCL has no argument information unless
 * the link asks for it. The worker must know each kernel's argument kinds
 * (it asks for the information at every build and link) and refuse the
 * bytes as the API refuses a bad memory object, or refuse to create a
 * kernel whose kinds it cannot learn. Every kernel must still work with a
 * real buffer, and what the program sees of the argument information is
 * what it would see natively. A native PoCL would take the forged pointer
 * and crash, so this program runs only under ava. Prints one line per step;
 * exit 0 when each went as it must. */
#include "common.h"

static const char kSource[] = "__kernel void put(__global int *out, int v) { out[0] = v; }";
/* What the guest plants: an address that names nothing of its own. */
static const uint64_t kForged = 0x00007f4141410000ull;

static OclEnv g_env;
static cl_command_queue g_q;

/* clSetKernelArg may be remoted async: its error comes with a clFinish. */
static void attack_and_use(const char *what, cl_program p, int want_info) {
  cl_int err;
  cl_kernel k = clCreateKernel(p, "put", &err);
  printf("%s: clCreateKernel: %s\n", what, cl_err_name(err));
  if (k == NULL) {
    /* The one acceptable refusal: a kernel whose argument kinds are unknown. */
    EXPECT(err == CL_INVALID_PROGRAM_EXECUTABLE, "%s: clCreateKernel: %s", what,
           cl_err_name(err));
    return;
  }
  /* The program sees the argument information it asked for, as natively. */
  cl_kernel_arg_address_qualifier address = 0;
  err = clGetKernelArgInfo(k, 0, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof address, &address, NULL);
  printf("%s: argument information: %s\n", what, cl_err_name(err));
  EXPECT(want_info ? err == CL_SUCCESS : err == CL_KERNEL_ARG_INFO_NOT_AVAILABLE,
         "%s: clGetKernelArgInfo: %s", what, cl_err_name(err));
  err = and_finish(clSetKernelArg(k, 0, sizeof kForged, &kForged), g_q);
  printf("%s: forged pointer: %s\n", what, cl_err_name(err));
  EXPECT(err == CL_INVALID_MEM_OBJECT, "%s: a forged pointer got %s", what, cl_err_name(err));
  /* A real buffer works as ever. */
  cl_mem out = ocl_buffer(&g_env, CL_MEM_READ_WRITE, sizeof(cl_int), NULL);
  const cl_int v = 41;
  cl_int got = 0;
  const size_t one = 1;
  CHECK(clSetKernelArg(k, 0, sizeof out, &out));
  CHECK(clSetKernelArg(k, 1, sizeof v, &v));
  CHECK(clEnqueueNDRangeKernel(g_q, k, 1, NULL, &one, NULL, 0, NULL, NULL));
  CHECK(clEnqueueReadBuffer(g_q, out, CL_TRUE, 0, sizeof got, &got, 0, NULL, NULL));
  printf("%s: real buffer: %d\n", what, got);
  EXPECT(got == v, "%s: the kernel wrote %d", what, got);
  /* All kernels of the program, the same way. */
  cl_kernel all[2] = {NULL, NULL};
  cl_uint n = 0;
  err = clCreateKernelsInProgram(p, 2, all, &n);
  printf("%s: clCreateKernelsInProgram: %s, %u kernel(s)\n", what, cl_err_name(err), n);
  EXPECT(err == CL_SUCCESS && n == 1, "%s: clCreateKernelsInProgram", what);
  if (all[0] != NULL)
    CHECK(clReleaseKernel(all[0]));
  CHECK(clReleaseMemObject(out));
  CHECK(clReleaseKernel(k));
}

static unsigned char *binary_of(cl_program p, size_t *size) {
  CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof *size, size, NULL));
  unsigned char *bin = malloc(*size);
  if (bin == NULL)
    exit(2);
  CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL));
  return bin;
}

static void from_binary(const char *what, const char *first_options, const char *rebuild_options,
                        int want_info) {
  cl_program source = ocl_build(&g_env, kSource, first_options);
  size_t size = 0;
  unsigned char *bin = binary_of(source, &size);
  const unsigned char *bins[] = {bin};
  cl_int err, status;
  cl_program p =
      clCreateProgramWithBinary(g_env.context, 1, &g_env.device, &size, bins, &status, &err);
  CHECK_ERR(err, "clCreateProgramWithBinary");
  CHECK(clBuildProgram(p, 1, &g_env.device, rebuild_options, NULL, NULL));
  attack_and_use(what, p, want_info);
  CHECK(clReleaseProgram(p));
  CHECK(clReleaseProgram(source));
  free(bin);
}

static void linked(const char *what, const char *link_options, int want_info) {
  cl_int err;
  const char *src = kSource;
  cl_program object = clCreateProgramWithSource(g_env.context, 1, &src, NULL, &err);
  CHECK_ERR(err, "clCreateProgramWithSource");
  CHECK(clCompileProgram(object, 1, &g_env.device, "", 0, NULL, NULL, NULL, NULL));
  cl_program p =
      clLinkProgram(g_env.context, 1, &g_env.device, link_options, 1, &object, NULL, NULL, &err);
  CHECK_ERR(err, "clLinkProgram");
  /* The options the program gave, never ava's. */
  char options[256] = "";
  CHECK(clGetProgramBuildInfo(p, g_env.device, CL_PROGRAM_BUILD_OPTIONS, sizeof options, options,
                              NULL));
  printf("%s: link options: \"%s\"\n", what, options);
  EXPECT(strcmp(options, link_options) == 0, "%s: link options \"%s\"", what, options);
  attack_and_use(what, p, want_info);
  CHECK(clReleaseProgram(p));
  CHECK(clReleaseProgram(object));
}

int main(void) {
  g_env = ocl_env_open();
  g_q = ocl_queue(&g_env, 0);
  cl_program p = ocl_build(&g_env, kSource, "");
  attack_and_use("source", p, 0);
  CHECK(clReleaseProgram(p));
  p = ocl_build(&g_env, kSource, "-cl-kernel-arg-info");
  attack_and_use("source with arg info", p, 1);
  CHECK(clReleaseProgram(p));
  from_binary("binary with arg info, rebuilt with it", "-cl-kernel-arg-info",
              "-cl-kernel-arg-info", 1);
  from_binary("binary with arg info, rebuilt without", "-cl-kernel-arg-info", "", 0);
  from_binary("binary without arg info, rebuilt without", "", "", 0);
  linked("linked without options", "", 0);
  linked("linked with arg info", "-cl-kernel-arg-info", 1);
  CHECK(clReleaseCommandQueue(g_q));
  ocl_env_close(&g_env);
  return ocl_finish();
}
