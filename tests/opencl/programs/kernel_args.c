/* SPDX-License-Identifier: MIT */
/* Kernels and their arguments: creation, queries, every kind of argument
 * (buffers, scalars, vectors, structs, __local, images, samplers, NULL
 * buffers), argument errors, clones, NDRange shapes and tasks. */
#include "common.h"

static OclEnv g_env;
static cl_command_queue g_q;

typedef struct {
  cl_int a;
  cl_float b;
  cl_long c;
} Pair;

static const char kSource[] =
    "typedef struct { int a; float b; long c; } Pair;\n"
    "__kernel void args(__global long *out, int i, float f, float4 v, long l, Pair s,\n"
    "                   __local int *scratch, __global const int *maybe_null) {\n"
    "  size_t g = get_global_id(0), lid = get_local_id(0);\n"
    "  scratch[lid] = (int)g;\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  long extra = maybe_null ? maybe_null[g] : -1;\n"
    "  out[g] = i * 1000000L + (long)(f * 100.0f) * 10000L + (long)(v.x + v.y + v.z + v.w) * 100L\n"
    "           + l + s.a + (long)s.b + s.c\n"
    "           + scratch[get_local_size(0) - 1 - lid] * 1000000000L + extra * 100000000000L;\n"
    "}\n"
    "__kernel void img(__read_only image2d_t im, sampler_t s, __global uint4 *out) {\n"
    "  int x = get_global_id(0);\n"
    "  out[x] = read_imageui(im, s, (int2)(x, 1));\n"
    "}\n"
    "__kernel void grid(__global int *ids, __global int *lids, int sx, int sy,\n"
    "                   int ox, int oy, int oz) {\n"
    "  int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);\n"
    "  int i = ((z - oz) * sy + (y - oy)) * sx + (x - ox);\n"
    "  ids[i] = x + 100 * y + 10000 * z;\n"
    "  lids[i] = get_local_id(0) + 10 * get_local_id(1) + 100 * get_local_id(2);\n"
    "}\n"
    "__kernel __attribute__((reqd_work_group_size(1, 1, 1)))\n"
    "void task(__global int *out) { out[0] = 12345; }\n";

static void kernel_queries(cl_program p, cl_kernel k) {
  size_t size = 0;
  CHECK(clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, NULL, &size));
  char name[64] = "";
  CHECK(clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL));
  cl_uint nargs = 0, refs = 0;
  cl_context ctx = NULL;
  cl_program prog = NULL;
  CHECK(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL));
  CHECK(clGetKernelInfo(k, CL_KERNEL_REFERENCE_COUNT, sizeof refs, &refs, NULL));
  CHECK(clGetKernelInfo(k, CL_KERNEL_CONTEXT, sizeof ctx, &ctx, NULL));
  CHECK(clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof prog, &prog, NULL));
  char attrs[256] = "";
  CHECK(clGetKernelInfo(k, CL_KERNEL_ATTRIBUTES, sizeof attrs, attrs, NULL));
  printf("kernel %s (name size %zu): args %u, refs %u, context ok %s, program ok %s, "
         "attributes \"%s\"\n",
         name, size, nargs, refs, yes_no(ctx == g_env.context), yes_no(prog == p), attrs);
  EXPECT(ctx == g_env.context && prog == p, "kernel info handles");

  size_t wg = 0, pref = 0, compile[3] = {9, 9, 9};
  cl_ulong local = 0, priv = 0;
  CHECK(clGetKernelWorkGroupInfo(k, g_env.device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL));
  CHECK(clGetKernelWorkGroupInfo(k, g_env.device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof compile,
                                 compile, NULL));
  CHECK(clGetKernelWorkGroupInfo(k, g_env.device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local, &local,
                                 NULL));
  CHECK(clGetKernelWorkGroupInfo(k, g_env.device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                 sizeof pref, &pref, NULL));
  CHECK(clGetKernelWorkGroupInfo(k, g_env.device, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof priv, &priv,
                                 NULL));
  size_t global_size[3];
  cl_int gerr = clGetKernelWorkGroupInfo(k, g_env.device, CL_KERNEL_GLOBAL_WORK_SIZE,
                                         sizeof global_size, global_size, NULL);
  printf("  work group: size %zu, compile %zu,%zu,%zu, local mem %llu, multiple %zu, private %llu, "
         "global work size %s\n",
         wg, compile[0], compile[1], compile[2], (unsigned long long)local, pref,
         (unsigned long long)priv, cl_err_name(gerr));

  for (cl_uint a = 0; a < nargs; ++a) {
    cl_kernel_arg_address_qualifier aq = 0;
    cl_kernel_arg_access_qualifier acc = 0;
    cl_kernel_arg_type_qualifier tq = 0;
    char type[64] = "", argname[64] = "";
    CHECK(clGetKernelArgInfo(k, a, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, NULL));
    CHECK(clGetKernelArgInfo(k, a, CL_KERNEL_ARG_ACCESS_QUALIFIER, sizeof acc, &acc, NULL));
    CHECK(clGetKernelArgInfo(k, a, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof tq, &tq, NULL));
    CHECK(clGetKernelArgInfo(k, a, CL_KERNEL_ARG_TYPE_NAME, sizeof type, type, NULL));
    CHECK(clGetKernelArgInfo(k, a, CL_KERNEL_ARG_NAME, sizeof argname, argname, NULL));
    printf("  arg %u: %s %s, address 0x%x, access 0x%x, type qualifier 0x%llx\n", a, type, argname,
           aq, acc, (unsigned long long)tq);
  }
  cl_kernel_arg_address_qualifier aq = 0;
  cl_int err = clGetKernelArgInfo(k, nargs, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, NULL);
  printf("  arg info past the last arg: %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_ARG_INDEX, "arg info past the end");
}

static void all_kernels(cl_program p) {
  cl_uint n = 0;
  CHECK(clCreateKernelsInProgram(p, 0, NULL, &n));
  printf("clCreateKernelsInProgram: %u kernels\n", n);
  EXPECT(n == 4, "kernel count %u", n);
  cl_kernel ks[8];
  if (n > 8)
    return;
  CHECK(clCreateKernelsInProgram(p, n, ks, NULL));
  /* The order is the implementation's; print names sorted. */
  char names[8][32];
  for (cl_uint i = 0; i < n; ++i)
    CHECK(clGetKernelInfo(ks[i], CL_KERNEL_FUNCTION_NAME, sizeof names[i], names[i], NULL));
  qsort(names, n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
  printf("  names:");
  for (cl_uint i = 0; i < n; ++i)
    printf(" %s", names[i]);
  printf("\n");
  for (cl_uint i = 0; i < n; ++i)
    CHECK(clReleaseKernel(ks[i]));
  cl_int err = clCreateKernelsInProgram(p, 1, ks, NULL);
  printf("clCreateKernelsInProgram(room for 1): %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_VALUE, "too small kernel array accepted");
}

static void set_scalar_args(cl_kernel k, cl_int i, cl_mem maybe_null, int null_by_pointer) {
  const cl_float f = 1.25f;
  const cl_float4 v = {{1.0f, 2.0f, 3.0f, 4.5f}};
  const cl_long l = 7000;
  const Pair s = {3, 4.75f, 50};
  CHECK(clSetKernelArg(k, 1, sizeof i, &i));
  CHECK(clSetKernelArg(k, 2, sizeof f, &f));
  CHECK(clSetKernelArg(k, 3, sizeof v, &v));
  CHECK(clSetKernelArg(k, 4, sizeof l, &l));
  CHECK(clSetKernelArg(k, 5, sizeof s, &s));
  CHECK(clSetKernelArg(k, 6, 4 * sizeof(cl_int), NULL));
  if (maybe_null != NULL || null_by_pointer)
    CHECK(clSetKernelArg(k, 7, sizeof maybe_null, &maybe_null));
  else
    CHECK(clSetKernelArg(k, 7, sizeof(cl_mem), NULL));
}

static void run_args(cl_kernel k, cl_mem out, const char *label) {
  const size_t gws = 8, lws = 4;
  CHECK(clEnqueueNDRangeKernel(g_q, k, 1, NULL, &gws, &lws, 0, NULL, NULL));
  cl_long res[8];
  CHECK(clEnqueueReadBuffer(g_q, out, CL_TRUE, 0, sizeof res, res, 0, NULL, NULL));
  printf("%s: %lld %lld %lld\n", label, (long long)res[0], (long long)res[3], (long long)res[7]);
}

static void arguments(cl_program p) {
  cl_kernel k = ocl_kernel(p, "args");
  kernel_queries(p, k);
  cl_mem out = ocl_buffer(&g_env, CL_MEM_READ_WRITE, 8 * sizeof(cl_long), NULL);
  cl_int extra[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  cl_mem extra_buf = ocl_buffer(&g_env, CL_MEM_COPY_HOST_PTR, sizeof extra, extra);
  CHECK(clSetKernelArg(k, 0, sizeof out, &out));
  set_scalar_args(k, 2, extra_buf, 0);
  run_args(k, out, "args with a buffer");
  set_scalar_args(k, 3, NULL, 1);
  run_args(k, out, "args with a NULL buffer (pointer to NULL)");
  set_scalar_args(k, 4, NULL, 0);
  run_args(k, out, "args with a NULL buffer (NULL arg_value)");
  cl_ulong local = 0;
  CHECK(clGetKernelWorkGroupInfo(k, g_env.device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local, &local,
                                 NULL));
  printf("local mem size with the __local arg set: %llu\n", (unsigned long long)local);

  /* Errors from clSetKernelArg may be reported by the next synchronous call. */
  const cl_int i = 1;
  cl_int err = and_finish(clSetKernelArg(k, 8, sizeof i, &i), g_q);
  printf("clSetKernelArg(index 8 of 8) + clFinish: %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_ARG_INDEX, "bad index");
  err = and_finish(clSetKernelArg(k, 1, 2, &i), g_q);
  printf("clSetKernelArg(int of 2 bytes) + clFinish: %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_ARG_SIZE, "bad size");
  err = and_finish(clSetKernelArg(k, 6, 0, NULL), g_q);
  printf("clSetKernelArg(__local of 0 bytes) + clFinish: %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_ARG_SIZE, "local 0");
  err = and_finish(clSetKernelArg(k, 1, sizeof i, NULL), g_q);
  printf("clSetKernelArg(int, NULL value) + clFinish: %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_ARG_VALUE, "NULL int value");
  /* The failed calls did not change the arguments. */
  set_scalar_args(k, 2, extra_buf, 0);
  run_args(k, out, "args again after the errors");

  /* A clone carries the arguments; changing the clone leaves the original alone. */
  cl_kernel clone = clCloneKernel(k, &err);
  CHECK_ERR(err, "clCloneKernel");
  run_args(clone, out, "clone with copied args");
  const cl_int seven = 7;
  CHECK(clSetKernelArg(clone, 1, sizeof seven, &seven));
  run_args(clone, out, "clone with i=7");
  run_args(k, out, "original after changing the clone");
  CHECK(clReleaseKernel(clone));

  size_t sg = 0;
  const size_t lws = 4;
  err = clGetKernelSubGroupInfo(k, g_env.device, CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
                                sizeof lws, &lws, sizeof sg, &sg, NULL);
  printf("clGetKernelSubGroupInfo(MAX_SUB_GROUP_SIZE_FOR_NDRANGE): %s", cl_err_name(err));
  if (err == CL_SUCCESS)
    printf(" %zu", sg);
  printf("\n");

  cl_kernel fresh = ocl_kernel(p, "args");
  err = and_finish(clEnqueueNDRangeKernel(g_q, fresh, 1, NULL, &lws, NULL, 0, NULL, NULL), g_q);
  printf("enqueue without args + clFinish: %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_KERNEL_ARGS, "kernel without args ran");
  CHECK(clReleaseKernel(fresh));
  cl_kernel none = clCreateKernel(p, "no_such_kernel", &err);
  printf("clCreateKernel(no_such_kernel): %s\n", cl_err_name(err));
  EXPECT(none == NULL && err == CL_INVALID_KERNEL_NAME, "unknown kernel name");

  CHECK(clRetainKernel(k));
  cl_uint refs = 0;
  CHECK(clGetKernelInfo(k, CL_KERNEL_REFERENCE_COUNT, sizeof refs, &refs, NULL));
  /* Commands PoCL has finished may still hold a reference until its driver thread
   * drops their events, so only a lower bound is stable. */
  printf("refs after retain at least 2: %s\n", yes_no(refs >= 2));
  EXPECT(refs >= 2, "retain not counted");
  CHECK(clReleaseKernel(k));
  CHECK(clReleaseKernel(k));
  CHECK(clReleaseMemObject(out));
  CHECK(clReleaseMemObject(extra_buf));
}

static void image_args(cl_program p) {
  enum { W = 8, H = 2 };
  cl_uchar px[H][W][4];
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < 4; ++c)
        px[y][x][c] = (cl_uchar)(y * 100 + x * 10 + c);
  const cl_image_format fmt = {CL_RGBA, CL_UNSIGNED_INT8};
  cl_image_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = W;
  desc.image_height = H;
  cl_int err;
  cl_mem im =
      clCreateImage(g_env.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &fmt, &desc, px, &err);
  CHECK_ERR(err, "clCreateImage");
  cl_sampler s = clCreateSampler(g_env.context, CL_FALSE, CL_ADDRESS_NONE, CL_FILTER_NEAREST, &err);
  CHECK_ERR(err, "clCreateSampler");
  cl_mem out = ocl_buffer(&g_env, CL_MEM_WRITE_ONLY, W * sizeof(cl_uint4), NULL);
  cl_kernel k = ocl_kernel(p, "img");
  CHECK(clSetKernelArg(k, 0, sizeof im, &im));
  CHECK(clSetKernelArg(k, 1, sizeof s, &s));
  CHECK(clSetKernelArg(k, 2, sizeof out, &out));
  const size_t gws = W;
  CHECK(clEnqueueNDRangeKernel(g_q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
  cl_uint4 res[W];
  CHECK(clEnqueueReadBuffer(g_q, out, CL_TRUE, 0, sizeof res, res, 0, NULL, NULL));
  printf("image + sampler args: (%u %u %u %u) (%u %u %u %u)\n", res[0].s[0], res[0].s[1],
         res[0].s[2], res[0].s[3], res[7].s[0], res[7].s[1], res[7].s[2], res[7].s[3]);
  EXPECT(res[7].s[0] == 170 && res[7].s[3] == 173, "image arg");
  /* A buffer where an image belongs. */
  err = and_finish(clSetKernelArg(k, 0, sizeof out, &out), g_q);
  printf("clSetKernelArg(buffer as image) + clFinish: %s\n", cl_err_name(err));
  CHECK(clReleaseKernel(k));
  CHECK(clReleaseMemObject(out));
  CHECK(clReleaseSampler(s));
  CHECK(clReleaseMemObject(im));
}

static void ndrange(cl_program p) {
  cl_kernel k = ocl_kernel(p, "grid");
  enum { MAX = 8 * 6 * 4 };
  cl_mem ids = ocl_buffer(&g_env, CL_MEM_READ_WRITE, MAX * sizeof(cl_int), NULL);
  cl_mem lids = ocl_buffer(&g_env, CL_MEM_READ_WRITE, MAX * sizeof(cl_int), NULL);
  static const struct {
    const char *name;
    cl_uint dims;
    size_t global[3], local[3], offset[3];
    int has_local, has_offset;
  } kCases[] = {
      {"1D", 1, {16, 1, 1}, {0}, {0}, 0, 0},
      {"1D local 4", 1, {16, 1, 1}, {4, 1, 1}, {0}, 1, 0},
      {"1D offset 5", 1, {16, 1, 1}, {0}, {5, 0, 0}, 0, 1},
      {"2D", 2, {8, 6, 1}, {0}, {0}, 0, 0},
      {"2D local 4x3 offset 1,2", 2, {8, 6, 1}, {4, 3, 1}, {1, 2, 0}, 1, 1},
      {"3D", 3, {8, 6, 4}, {0}, {0}, 0, 0},
      {"3D local 2x3x2", 3, {8, 6, 4}, {2, 3, 2}, {0}, 1, 0},
      {"3D local 4x2x1 offset 3,2,1", 3, {8, 6, 4}, {4, 2, 1}, {3, 2, 1}, 1, 1},
  };
  for (size_t c = 0; c < sizeof kCases / sizeof kCases[0]; ++c) {
    const cl_int zero = -1;
    CHECK(
        clEnqueueFillBuffer(g_q, ids, &zero, sizeof zero, 0, MAX * sizeof(cl_int), 0, NULL, NULL));
    const cl_int sx = (cl_int)kCases[c].global[0], sy = (cl_int)kCases[c].global[1];
    const cl_int o[3] = {(cl_int)kCases[c].offset[0], (cl_int)kCases[c].offset[1],
                         (cl_int)kCases[c].offset[2]};
    CHECK(clSetKernelArg(k, 0, sizeof ids, &ids));
    CHECK(clSetKernelArg(k, 1, sizeof lids, &lids));
    CHECK(clSetKernelArg(k, 2, sizeof sx, &sx));
    CHECK(clSetKernelArg(k, 3, sizeof sy, &sy));
    for (int d = 0; d < 3; ++d)
      CHECK(clSetKernelArg(k, 4 + (cl_uint)d, sizeof o[d], &o[d]));
    CHECK(clEnqueueNDRangeKernel(g_q, k, kCases[c].dims,
                                 kCases[c].has_offset ? kCases[c].offset : NULL, kCases[c].global,
                                 kCases[c].has_local ? kCases[c].local : NULL, 0, NULL, NULL));
    cl_int got[MAX], lgot[MAX];
    CHECK(clEnqueueReadBuffer(g_q, ids, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(g_q, lids, CL_TRUE, 0, sizeof lgot, lgot, 0, NULL, NULL));
    const size_t n = kCases[c].global[0] * kCases[c].global[1] * kCases[c].global[2];
    int ok = 1;
    for (size_t z = 0; z < kCases[c].global[2]; ++z)
      for (size_t y = 0; y < kCases[c].global[1]; ++y)
        for (size_t x = 0; x < kCases[c].global[0]; ++x) {
          const size_t i = (z * kCases[c].global[1] + y) * kCases[c].global[0] + x;
          ok &= got[i] == (cl_int)((x + kCases[c].offset[0]) + 100 * (y + kCases[c].offset[1]) +
                                   10000 * (z + kCases[c].offset[2]));
          if (kCases[c].has_local)
            ok &= lgot[i] == (cl_int)(x % kCases[c].local[0] + 10 * (y % kCases[c].local[1]) +
                                      100 * (z % kCases[c].local[2]));
        }
    printf("NDRange %s: ids %s, checksum %08x", kCases[c].name, ok ? "ok" : "WRONG",
           checksum(got, n * sizeof(cl_int)));
    if (kCases[c].has_local)
      printf(", local ids checksum %08x", checksum(lgot, n * sizeof(cl_int)));
    printf("\n");
    EXPECT(ok, "NDRange %s", kCases[c].name);
  }
  const size_t gws = 16, bad_lws = 5;
  cl_int err =
      and_finish(clEnqueueNDRangeKernel(g_q, k, 1, NULL, &gws, &bad_lws, 0, NULL, NULL), g_q);
  printf("NDRange 16 with local 5 + clFinish: %s\n", cl_err_name(err));
  err = and_finish(clEnqueueNDRangeKernel(g_q, k, 4, NULL, &gws, NULL, 0, NULL, NULL), g_q);
  printf("NDRange with 4 dimensions + clFinish: %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_WORK_DIMENSION, "4 dimensions");
  CHECK(clReleaseKernel(k));
  CHECK(clReleaseMemObject(ids));
  CHECK(clReleaseMemObject(lids));

  cl_kernel t = ocl_kernel(p, "task");
  cl_mem out = ocl_buffer(&g_env, CL_MEM_READ_WRITE, sizeof(cl_int), NULL);
  CHECK(clSetKernelArg(t, 0, sizeof out, &out));
  cl_event e;
  CHECK(clEnqueueTask(g_q, t, 0, NULL, &e));
  cl_int v = 0;
  CHECK(clEnqueueReadBuffer(g_q, out, CL_TRUE, 0, sizeof v, &v, 1, &e, NULL));
  cl_command_type type = 0;
  CHECK(clGetEventInfo(e, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL));
  printf("clEnqueueTask: %d, command type %s\n", v,
         type == CL_COMMAND_TASK ? "TASK" : (type == CL_COMMAND_NDRANGE_KERNEL ? "NDRANGE" : "?"));
  EXPECT(v == 12345, "task result");
  CHECK(clReleaseEvent(e));
  CHECK(clReleaseKernel(t));
  CHECK(clReleaseMemObject(out));
}

/* A kernel released while a command of it waits: the command still runs on
 * the buffer its argument names, and once the command is done nothing else
 * holds the buffer (under ava the worker holds what arguments name while
 * the guest holds the kernel, and no longer). */
static void released_while_queued(cl_program p) {
  cl_kernel k = ocl_kernel(p, "task");
  cl_int err = CL_SUCCESS;
  cl_mem out = clCreateBuffer(g_env.context, CL_MEM_READ_WRITE, sizeof(cl_int), NULL, &err);
  CHECK(err);
  const cl_int zero = 0;
  CHECK(clEnqueueWriteBuffer(g_q, out, CL_TRUE, 0, sizeof zero, &zero, 0, NULL, NULL));
  cl_event gate = clCreateUserEvent(g_env.context, &err);
  CHECK(err);
  CHECK(clSetKernelArg(k, 0, sizeof out, &out));
  cl_event done = NULL;
  CHECK(clEnqueueTask(g_q, k, 1, &gate, &done));
  CHECK(clReleaseKernel(k));
  CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &done));
  CHECK(clReleaseEvent(done));
  CHECK(clReleaseEvent(gate));
  CHECK(clFinish(g_q));
  cl_int got = 0;
  CHECK(clEnqueueReadBuffer(g_q, out, CL_TRUE, 0, sizeof got, &got, 0, NULL, NULL));
  cl_uint refs = 0;
  CHECK(clGetMemObjectInfo(out, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL));
  printf("kernel released while its task waited: task wrote %d, buffer refs then %u\n", got,
         refs);
  CHECK(clReleaseMemObject(out));
}

int main(void) {
  g_env = ocl_env_open();
  g_q = ocl_queue(&g_env, 0);
  cl_program p = ocl_build(&g_env, kSource, "-cl-kernel-arg-info");
  all_kernels(p);
  arguments(p);
  image_args(p);
  ndrange(p);
  released_while_queued(p);
  CHECK(clReleaseProgram(p));
  CHECK(clReleaseCommandQueue(g_q));
  ocl_env_close(&g_env);
  return ocl_finish();
}
