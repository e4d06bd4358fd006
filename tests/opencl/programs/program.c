/* SPDX-License-Identifier: MIT */
/* Programs: sources in pieces, builds with options and a notify callback, a
 * failing build, queries, binaries, separate compile + link with headers,
 * IL and built-in kernels, unloading the compiler. */
#include "common.h"

static OclEnv g_env;
static cl_command_queue g_q;

static volatile int g_notified;
static volatile int g_notify_user_ok;
static int g_notify_user = 5;

static void CL_CALLBACK build_notify(cl_program p, void *user) {
  (void)p;
  if (user == &g_notify_user)
    __atomic_store_n(&g_notify_user_ok, 1, __ATOMIC_RELEASE);
  __atomic_add_fetch(&g_notified, 1, __ATOMIC_ACQ_REL);
}

/* Runs kernel `name` of p over 16 ints (0..15) and prints the results. */
static void run(cl_program p, const char *name, const char *label) {
  cl_int data[16];
  for (int i = 0; i < 16; ++i)
    data[i] = i;
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof data, data);
  cl_kernel k = ocl_kernel(p, name);
  CHECK(clSetKernelArg(k, 0, sizeof m, &m));
  const size_t gws = 16;
  CHECK(clEnqueueNDRangeKernel(g_q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
  CHECK(clEnqueueReadBuffer(g_q, m, CL_TRUE, 0, sizeof data, data, 0, NULL, NULL));
  printf("%s: %s ->", label, name);
  for (int i = 0; i < 16; i += 3)
    printf(" %d", data[i]);
  printf("\n");
  CHECK(clReleaseKernel(k));
  CHECK(clReleaseMemObject(m));
}

static char *program_string(cl_program p, cl_program_info param) {
  size_t size = 0;
  CHECK(clGetProgramInfo(p, param, 0, NULL, &size));
  char *s = calloc(1, size + 1);
  CHECK(clGetProgramInfo(p, param, size, s, NULL));
  return s;
}

static char *build_string(cl_program p, cl_program_build_info param) {
  size_t size = 0;
  CHECK(clGetProgramBuildInfo(p, g_env.device, param, 0, NULL, &size));
  char *s = calloc(1, size + 1);
  CHECK(clGetProgramBuildInfo(p, g_env.device, param, size, s, NULL));
  return s;
}

static void build_info(const char *label, cl_program p) {
  cl_build_status status = 99;
  cl_program_binary_type type = 99;
  CHECK(clGetProgramBuildInfo(p, g_env.device, CL_PROGRAM_BUILD_STATUS, sizeof status, &status,
                              NULL));
  CHECK(clGetProgramBuildInfo(p, g_env.device, CL_PROGRAM_BINARY_TYPE, sizeof type, &type, NULL));
  char *options = build_string(p, CL_PROGRAM_BUILD_OPTIONS);
  char *log = build_string(p, CL_PROGRAM_BUILD_LOG);
  printf("%s: build status %d, binary type 0x%x, options \"%s\", log mentions error: %s\n", label,
         status, type, options, yes_no(strstr(log, "error") != NULL));
  free(options);
  free(log);
}

static const char kPart1[] = "__kernel void scale(__global int *d) {";
static const char kPart2[] = " d[get_global_id(0)] *= FACTOR; }";
static const char kPart3[] =
    "\n__kernel void offset(__global int *d) { d[get_global_id(0)] += 100; }\n";

static cl_program sources(void) {
  cl_int err;
  /* Lengths given: the pieces need no NUL; the trailing garbage must be ignored. */
  const char piece1[] = "__kernel void scale(__global int *d) {GARBAGE";
  const char *strings[3] = {piece1, kPart2, kPart3};
  size_t lengths[3] = {strlen(kPart1), strlen(kPart2), strlen(kPart3)};
  cl_program p = clCreateProgramWithSource(g_env.context, 3, strings, lengths, &err);
  CHECK_ERR(err, "clCreateProgramWithSource(lengths)");
  char *src = program_string(p, CL_PROGRAM_SOURCE);
  printf("source from 3 strings with lengths: %zu chars, checksum %08x\n", strlen(src),
         checksum(src, strlen(src)));
  EXPECT(strstr(src, "GARBAGE") == NULL && strstr(src, "+= 100") != NULL, "source pieces wrong");
  free(src);
  CHECK(clReleaseProgram(p));

  /* NULL lengths: every string is NUL-terminated. */
  const char *strings2[3] = {kPart1, kPart2, kPart3};
  p = clCreateProgramWithSource(g_env.context, 3, strings2, NULL, &err);
  CHECK_ERR(err, "clCreateProgramWithSource(NULL lengths)");
  char *src2 = program_string(p, CL_PROGRAM_SOURCE);
  printf("source from 3 strings, NULL lengths: %zu chars, checksum %08x\n", strlen(src2),
         checksum(src2, strlen(src2)));
  CHECK(clReleaseProgram(p));

  /* A zero length means that string is NUL-terminated. */
  size_t mixed[3] = {0, strlen(kPart2), 0};
  p = clCreateProgramWithSource(g_env.context, 3, strings2, mixed, &err);
  CHECK_ERR(err, "clCreateProgramWithSource(zero lengths)");
  char *src3 = program_string(p, CL_PROGRAM_SOURCE);
  printf("source with zero lengths: same as NULL lengths: %s\n", yes_no(strcmp(src2, src3) == 0));
  EXPECT(strcmp(src2, src3) == 0, "zero-length strings differ");
  free(src2);
  free(src3);

  const char *null_string[1] = {NULL};
  cl_program bad = clCreateProgramWithSource(g_env.context, 1, null_string, NULL, &err);
  printf("clCreateProgramWithSource(NULL string): %s\n", cl_err_name(err));
  EXPECT(bad == NULL && err == CL_INVALID_VALUE, "NULL string accepted");
  bad = clCreateProgramWithSource(g_env.context, 0, strings2, NULL, &err);
  printf("clCreateProgramWithSource(count 0): %s\n", cl_err_name(err));
  EXPECT(bad == NULL && err == CL_INVALID_VALUE, "count 0 accepted");
  return p;
}

static void build(cl_program p) {
  cl_build_status status = 99;
  CHECK(clGetProgramBuildInfo(p, g_env.device, CL_PROGRAM_BUILD_STATUS, sizeof status, &status,
                              NULL));
  printf("status before build: %d\n", status);
  cl_int err =
      clBuildProgram(p, 1, &g_env.device, "-DFACTOR=3 -cl-std=CL1.2", build_notify, &g_notify_user);
  printf("clBuildProgram with notify: %s\n", cl_err_name(err));
  CHECK_ERR(err, "clBuildProgram");
  /* With a callback the build may still be running when clBuildProgram returns. */
  const int ran = wait_for_count(&g_notified, 1);
  printf("build notify ran once: %s, user data ok: %s\n", yes_no(ran && g_notified == 1),
         yes_no(g_notify_user_ok));
  EXPECT(ran && g_notified == 1 && g_notify_user_ok, "build notify");
  build_info("after build", p);
  /* Counted before any kernel exists: PoCL frees a finished command (and the kernel and program
   * references it holds) on its own thread some time after the command's event completes, so a
   * count taken after run() depends on timing, natively as well as remoted. */
  cl_uint refs = 0;
  CHECK(clGetProgramInfo(p, CL_PROGRAM_REFERENCE_COUNT, sizeof refs, &refs, NULL));
  run(p, "scale", "built from source");
  run(p, "offset", "built from source");

  /* Queries that need a built program. */
  cl_uint ndev = 0;
  cl_context ctx = NULL;
  cl_device_id dev = NULL;
  size_t nkernels = 0, il_size = 99;
  CHECK(clGetProgramInfo(p, CL_PROGRAM_CONTEXT, sizeof ctx, &ctx, NULL));
  CHECK(clGetProgramInfo(p, CL_PROGRAM_NUM_DEVICES, sizeof ndev, &ndev, NULL));
  CHECK(clGetProgramInfo(p, CL_PROGRAM_DEVICES, sizeof dev, &dev, NULL));
  CHECK(clGetProgramInfo(p, CL_PROGRAM_NUM_KERNELS, sizeof nkernels, &nkernels, NULL));
  cl_int il_err = clGetProgramInfo(p, CL_PROGRAM_IL, 0, NULL, &il_size);
  char *names = program_string(p, CL_PROGRAM_KERNEL_NAMES);
  printf("program info: refs %u, context ok %s, devices %u, device ok %s, kernels %zu, names "
         "\"%s\", IL %s %zu\n",
         refs, yes_no(ctx == g_env.context), ndev, yes_no(dev == g_env.device), nkernels, names,
         cl_err_name(il_err), il_size);
  EXPECT(ctx == g_env.context && dev == g_env.device && nkernels == 2, "program info");
  free(names);
}

static void binaries(cl_program p) {
  size_t size = 0;
  CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL));
  printf("binary size > 0: %s\n", yes_no(size > 0));
  EXPECT(size > 0, "no binary");
  unsigned char *bin = malloc(size);
  unsigned char *bins[1] = {bin};
  CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL));
  /* The same binary twice: deterministic. */
  unsigned char *bin2 = malloc(size);
  unsigned char *bins2[1] = {bin2};
  CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins2, bins2, NULL));
  printf("binary read twice is the same: %s\n", yes_no(memcmp(bin, bin2, size) == 0));
  free(bin2);

  cl_int status = 99, err;
  const unsigned char *cbins[1] = {bin};
  cl_program pb =
      clCreateProgramWithBinary(g_env.context, 1, &g_env.device, &size, cbins, &status, &err);
  printf("clCreateProgramWithBinary: %s, binary status %s\n", cl_err_name(err),
         cl_err_name(status));
  CHECK_ERR(err, "clCreateProgramWithBinary");
  CHECK(clBuildProgram(pb, 1, &g_env.device, NULL, NULL, NULL));
  build_info("binary program", pb);
  run(pb, "scale", "from binary");
  CHECK(clReleaseProgram(pb));

  unsigned char junk[64];
  memset(junk, 0x5a, sizeof junk);
  const unsigned char *jbins[1] = {junk};
  const size_t jsize = sizeof junk;
  status = 99;
  pb = clCreateProgramWithBinary(g_env.context, 1, &g_env.device, &jsize, jbins, &status, &err);
  printf("clCreateProgramWithBinary(junk): %s, binary status %s\n", cl_err_name(err),
         cl_err_name(status));
  EXPECT(err != CL_SUCCESS && pb == NULL, "junk binary accepted");
  free(bin);
}

static void failing_build(void) {
  static const char bad_src[] = "__kernel void broken(__global int *d) { d[0] = ; }\n";
  const char *s = bad_src;
  cl_int err;
  cl_program p = clCreateProgramWithSource(g_env.context, 1, &s, NULL, &err);
  CHECK_ERR(err, "clCreateProgramWithSource(bad)");
  err = clBuildProgram(p, 1, &g_env.device, NULL, NULL, NULL);
  printf("clBuildProgram(syntax error): %s\n", cl_err_name(err));
  EXPECT(err == CL_BUILD_PROGRAM_FAILURE, "broken program built");
  build_info("failed build", p);
  char *log = build_string(p, CL_PROGRAM_BUILD_LOG);
  EXPECT(strstr(log, "error") != NULL, "build log without 'error':\n%s", log);
  free(log);
  cl_kernel k = clCreateKernel(p, "broken", &err);
  printf("clCreateKernel on a failed build: %s\n", cl_err_name(err));
  EXPECT(k == NULL && err == CL_INVALID_PROGRAM_EXECUTABLE, "kernel of a failed build");
  err = clBuildProgram(p, 1, &g_env.device, "-not-an-option", NULL, NULL);
  printf("clBuildProgram(bad option): %s\n", cl_err_name(err));
  EXPECT(err != CL_SUCCESS, "bad option accepted");
  CHECK(clReleaseProgram(p));
}

static void compile_link(void) {
  static const char header[] = "#define HEADER_ADD 40\nint header_fn(int x);\n";
  static const char helper[] = "#include \"inc/my_header.h\"\n"
                               "int header_fn(int x) { return x + HEADER_ADD; }\n";
  static const char main_src[] = "#include \"inc/my_header.h\"\n"
                                 "__kernel void linked(__global int *d) {\n"
                                 "  d[get_global_id(0)] = header_fn(d[get_global_id(0)]) + 2;\n"
                                 "}\n";
  cl_int err;
  const char *s = header;
  cl_program hdr = clCreateProgramWithSource(g_env.context, 1, &s, NULL, &err);
  CHECK_ERR(err, "header program");
  s = helper;
  cl_program a = clCreateProgramWithSource(g_env.context, 1, &s, NULL, &err);
  CHECK_ERR(err, "helper program");
  s = main_src;
  cl_program b = clCreateProgramWithSource(g_env.context, 1, &s, NULL, &err);
  CHECK_ERR(err, "main program");
  const char *names[1] = {"inc/my_header.h"};
  err = clCompileProgram(a, 1, &g_env.device, NULL, 1, &hdr, names, NULL, NULL);
  printf("clCompileProgram(helper, 1 header): %s\n", cl_err_name(err));
  CHECK_ERR(err, "clCompileProgram(helper)");
  err = clCompileProgram(b, 1, &g_env.device, "-DUNUSED=1", 1, &hdr, names, NULL, NULL);
  printf("clCompileProgram(main, 1 header): %s\n", cl_err_name(err));
  CHECK_ERR(err, "clCompileProgram(main)");
  build_info("compiled main", b);
  cl_program objs[2] = {a, b};
  cl_program linked =
      clLinkProgram(g_env.context, 1, &g_env.device, NULL, 2, objs, NULL, NULL, &err);
  printf("clLinkProgram: %s\n", cl_err_name(err));
  CHECK_ERR(err, "clLinkProgram");
  build_info("linked", linked);
  run(linked, "linked", "compiled + linked");

  err = clCompileProgram(b, 1, &g_env.device, NULL, 0, NULL, NULL, NULL, NULL);
  printf("clCompileProgram without the header: %s\n", cl_err_name(err));
  EXPECT(err == CL_COMPILE_PROGRAM_FAILURE, "compile without header");
  CHECK(clReleaseProgram(linked));
  CHECK(clReleaseProgram(hdr));
  CHECK(clReleaseProgram(a));
  CHECK(clReleaseProgram(b));
}

static void il_builtin_unload(void) {
  /* The SPIR-V magic number and nothing else. */
  static const cl_uint il[5] = {0x07230203u, 0x00010000u, 0, 1, 0};
  cl_int err;
  cl_program p = clCreateProgramWithIL(g_env.context, il, sizeof il, &err);
  printf("clCreateProgramWithIL: %s\n", cl_err_name(err));
  if (p != NULL)
    CHECK(clReleaseProgram(p));

  p = clCreateProgramWithBuiltInKernels(g_env.context, 1, &g_env.device, "no.such.kernel", &err);
  printf("clCreateProgramWithBuiltInKernels(no.such.kernel): %s\n", cl_err_name(err));
  EXPECT(p == NULL && err != CL_SUCCESS, "unknown built-in kernel");
  printf("clUnloadPlatformCompiler: %s\n", cl_err_name(clUnloadPlatformCompiler(g_env.platform)));
  /* The compiler comes back on demand. */
  static const char src[] = "__kernel void after_unload(__global int *d) { d[0] = 1; }\n";
  cl_program again = ocl_build(&g_env, src, NULL);
  printf("build after unloading the compiler: ok\n");
  CHECK(clReleaseProgram(again));
}

int main(void) {
  g_env = ocl_env_open();
  g_q = ocl_queue(&g_env, 0);
  cl_program p = sources();
  build(p);
  binaries(p);
  /* As in build(): the count may still include finished commands' references, so what is exact is
   * the step a retain adds. */
  cl_uint before = 0, after = 0;
  CHECK(clGetProgramInfo(p, CL_PROGRAM_REFERENCE_COUNT, sizeof before, &before, NULL));
  CHECK(clRetainProgram(p));
  CHECK(clGetProgramInfo(p, CL_PROGRAM_REFERENCE_COUNT, sizeof after, &after, NULL));
  printf("retain adds one reference: %s\n", yes_no(after == before + 1));
  EXPECT(after == before + 1, "clRetainProgram");
  CHECK(clReleaseProgram(p));
  CHECK(clReleaseProgram(p));
  failing_build();
  compile_link();
  il_builtin_unload();
  CHECK(clReleaseCommandQueue(g_q));
  ocl_env_close(&g_env);
  return ocl_finish();
}
