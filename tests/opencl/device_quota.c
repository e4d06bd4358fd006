/* SPDX-License-Identifier: MIT */
/* A guest under a device-memory quota (the host's [guest] device_memory;
 * issue 13, finding 7). "info" prints what the device says of its memory
 * (the same natively and under ava without a quota). "QUOTA" checks, under
 * a quota of QUOTA bytes (at least 8 MiB), that the device reports the
 * quota as its memory (at most) and that buffers, images, pipes and SVM
 * are all charged while they live: what passes the quota is refused,
 * releasing makes room again. Prints one line per step; exit 0 when each went as the
 * quota says. Only under ava with a quota is QUOTA meaningful. */
#include "common.h"

static OclEnv g_env;
static cl_ulong g_quota;

static cl_ulong device_ulong(cl_device_info what) {
  cl_ulong v = 0;
  CHECK(clGetDeviceInfo(g_env.device, what, sizeof v, &v, NULL));
  return v;
}

static cl_mem buffer(size_t size, int want_ok, const char *what) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(g_env.context, CL_MEM_READ_WRITE, size, NULL, &err);
  printf("buffer of %zu (%s): %s\n", size, what, cl_err_name(err));
  /* A refusal is NULL with an error code, never NULL with CL_SUCCESS. */
  EXPECT(want_ok ? m != NULL && err == CL_SUCCESS : m == NULL && err != CL_SUCCESS,
         "buffer of %zu (%s): %s", size, what, cl_err_name(err));
  return m;
}

static cl_mem image(size_t width, size_t height, size_t depth, int want_ok, const char *what) {
  const cl_image_format format = {CL_RGBA, CL_UNORM_INT8};
  cl_image_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.image_type = depth > 1 ? CL_MEM_OBJECT_IMAGE3D : CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = width;
  desc.image_height = height;
  desc.image_depth = depth;
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateImage(g_env.context, CL_MEM_READ_WRITE, &format, &desc, NULL, &err);
  printf("image %zux%zux%zu RGBA8 (%s): %s\n", width, height, depth, what, cl_err_name(err));
  EXPECT(want_ok ? m != NULL && err == CL_SUCCESS : m == NULL && err != CL_SUCCESS,
         "image (%s): %s", what, cl_err_name(err));
  return m;
}

static void *svm(size_t size, int want_ok, const char *what) {
  void *p = clSVMAlloc(g_env.context, CL_MEM_READ_WRITE, size, 0);
  printf("SVM of %zu (%s): %s\n", size, what, p != NULL ? "allocated" : "refused");
  EXPECT(want_ok ? p != NULL : p == NULL, "SVM of %zu (%s)", size, what);
  return p;
}

/* A pipe of packets past the quota: refused where the device has pipes; where
 * it has none (PoCL 3.1's CPU device) the driver's own error, as natively. */
static void pipe_past_quota(void) {
  cl_bool pipes = CL_FALSE;
  CHECK(clGetDeviceInfo(g_env.device, CL_DEVICE_PIPE_SUPPORT, sizeof pipes, &pipes, NULL));
  cl_int err = CL_SUCCESS;
  cl_mem p = clCreatePipe(g_env.context, CL_MEM_READ_WRITE, 4, (cl_uint)(g_quota / 4) + 1, NULL,
                          &err);
  printf("pipe of %llu bytes (pipes: %s): %s\n", (unsigned long long)(g_quota + 4),
         yes_no(pipes), cl_err_name(err));
  EXPECT(p == NULL && (pipes ? err != CL_SUCCESS : err == CL_INVALID_OPERATION),
         "pipe past the quota: %s", cl_err_name(err));
  if (p != NULL)
    CHECK(clReleaseMemObject(p));
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s info|QUOTA\n", argv[0]);
    return 2;
  }
  g_env = ocl_env_open();
  const cl_ulong global = device_ulong(CL_DEVICE_GLOBAL_MEM_SIZE);
  const cl_ulong max_alloc = device_ulong(CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  printf("CL_DEVICE_GLOBAL_MEM_SIZE: %llu\n", (unsigned long long)global);
  printf("CL_DEVICE_MAX_MEM_ALLOC_SIZE: %llu\n", (unsigned long long)max_alloc);
  if (strcmp(argv[1], "info") == 0) {
    ocl_env_close(&g_env);
    return ocl_finish();
  }
  g_quota = strtoull(argv[1], NULL, 0);
  if (g_quota < (8u << 20)) {
    fprintf(stderr, "the quota must be at least 8 MiB\n");
    return 2;
  }
  EXPECT(global <= g_quota && max_alloc <= g_quota, "the device shows more than the quota");
  const size_t half = (size_t)(g_quota / 2), quarter = (size_t)(g_quota / 4);
  buffer((size_t)g_quota + 1, 0, "over the quota");
  pipe_past_quota();
  cl_mem a = buffer(half, 1, "half");
  /* RGBA8: 4 bytes a pixel, a quarter of the quota. */
  cl_mem img = image(1024, quarter / 4096, 1, 1, "a quarter");
  buffer(half, 0, "half more, past the quota with the image");
  image(64, 64, half / (64 * 64 * 4), 0, "3D, half more");
  CHECK(clReleaseMemObject(img));
  cl_mem b = buffer(half, 1, "half more, after the image's release");
  svm(1, 0, "one byte past the quota");
  CHECK(clReleaseMemObject(a));
  void *s = svm(half, 1, "half, after a buffer's release");
  buffer(1, 0, "one byte past the quota with SVM");
  clSVMFree(g_env.context, s);
  cl_mem c = buffer(half, 1, "half, after the SVM's release");
  CHECK(clReleaseMemObject(c));
  CHECK(clReleaseMemObject(b));
  /* Everything given back: the whole quota in one buffer. */
  cl_mem all = buffer((size_t)g_quota, 1, "the whole quota");
  CHECK(clReleaseMemObject(all));
  ocl_env_close(&g_env);
  return ocl_finish();
}
