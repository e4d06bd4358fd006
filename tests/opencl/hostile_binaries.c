// SPDX-License-Identifier: MIT
// Crafted PoCL program binaries (issue 13; specs/opencl/poclbin.h). Run only
// under ava: natively PoCL unpacks them as they say, writing a file named
// by the binary outside its cache directory or reading past the binary.
// Under ava the worker refuses each with CL_INVALID_BINARY before PoCL sees
// it, and the binary PoCL itself wrote still builds and runs afterwards
// (tests/e2e/test_e2e_opencl_binaries.cpp).
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const char kSource[] =
    "__kernel void put(__global int *out, int v) { out[get_global_id(0)] = v; }";

static OclEnv g_env;

static unsigned char *program_binary(cl_program p, size_t *size) {
  CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof *size, size, NULL));
  unsigned char *b = malloc(*size);
  CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof b, &b, NULL));
  return b;
}

/* Where name first occurs in b[0, size), or NULL. */
static unsigned char *find(unsigned char *b, size_t size, const char *name) {
  const size_t n = strlen(name);
  for (size_t i = 0; i + n <= size; ++i)
    if (memcmp(b + i, name, n) == 0)
      return b + i;
  return NULL;
}

static void expect_refused(const char *what, const unsigned char *b, size_t size) {
  cl_int status = 99, err = 99;
  cl_program p =
      clCreateProgramWithBinary(g_env.context, 1, &g_env.device, &size, &b, &status, &err);
  printf("%s: %s, binary status %s\n", what, cl_err_name(err), cl_err_name(status));
  EXPECT(p == NULL && err == CL_INVALID_BINARY && status == CL_INVALID_BINARY,
         "%s: not refused", what);
  if (p != NULL)
    clReleaseProgram(p);
}

static void build_and_run(const unsigned char *b, size_t size) {
  cl_int status = 99, err;
  cl_program p =
      clCreateProgramWithBinary(g_env.context, 1, &g_env.device, &size, &b, &status, &err);
  CHECK_ERR(err, "clCreateProgramWithBinary(PoCL's own)");
  CHECK(clBuildProgram(p, 1, &g_env.device, NULL, NULL, NULL));
  cl_kernel k = ocl_kernel(p, "put");
  cl_command_queue q = ocl_queue(&g_env, 0);
  cl_mem out = ocl_buffer(&g_env, CL_MEM_WRITE_ONLY, 4 * sizeof(cl_int), NULL);
  const cl_int v = 41;
  CHECK(clSetKernelArg(k, 0, sizeof out, &out));
  CHECK(clSetKernelArg(k, 1, sizeof v, &v));
  const size_t global = 4;
  CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
  cl_int got[4] = {0};
  CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
  printf("PoCL's own binary: status %s, ran: %d %d %d %d\n", cl_err_name(status), got[0],
         got[1], got[2], got[3]);
  EXPECT(got[0] == 41 && got[3] == 41, "the kernel of PoCL's own binary did not run");
  CHECK(clReleaseMemObject(out));
  CHECK(clReleaseCommandQueue(q));
  CHECK(clReleaseKernel(k));
  CHECK(clReleaseProgram(p));
}

int main(void) {
  g_env = ocl_env_open();
  cl_program built = ocl_build(&g_env, kSource, "");
  size_t size;
  unsigned char *real = program_binary(built, &size);
  CHECK(clReleaseProgram(built));
  unsigned char *b = malloc(size + 16);

  /* The kernel's file climbs four directories out of PoCL's cache. */
  memcpy(b, real, size);
  unsigned char *path = find(b, size, "/put/0-0-0/put.so");
  EXPECT(path != NULL, "PoCL's binary has no /put/0-0-0/put.so");
  if (path != NULL) {
    memcpy(path, "/../../../../x.so", 17);
    expect_refused("a file name climbing out of the cache", b, size);
  }

  /* A length that runs past the end: PoCL would copy from beyond it. */
  memcpy(b, real, size);
  path = find(b, size, "/program.bc");
  if (path != NULL) {
    memcpy(path + 11, "\xff\xff\xff\x7f", 4); /* program.bc's content length */
    expect_refused("a file longer than the binary", b, size);
  }

  /* Cut short: only the magic and half a header. */
  expect_refused("half a header", real, 40);

  /* Trailing bytes after the last kernel. */
  memcpy(b, real, size);
  memset(b + size, 0, 16);
  expect_refused("bytes after the last kernel", b, size + 16);

  /* The worker still serves this guest, and PoCL's own binary still works. */
  build_and_run(real, size);
  free(b);
  free(real);
  ocl_env_close(&g_env);
  return ocl_finish();
}
