/* SPDX-License-Identifier: MIT */
/* Helpers shared by the OpenCL test programs. The programs are ordinary
 * OpenCL host programs: they link the system loader (-lOpenCL) and know
 * nothing of ava, so that the same binary runs natively and under `ava run`.
 *
 * Output rules: stdout carries only lines that are identical run to run and
 * natively vs remoted (names, values, error names, checksums); anything
 * that is wrong goes to stderr and makes the exit status non-zero. */
#ifndef AVA_TESTS_OPENCL_COMMON_H
#define AVA_TESTS_OPENCL_COMMON_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline const char *cl_err_name(cl_int err) {
  switch (err) {
#define ERR_CASE(e)                                                                                \
  case e:                                                                                          \
    return #e;
    ERR_CASE(CL_SUCCESS)
    ERR_CASE(CL_DEVICE_NOT_FOUND)
    ERR_CASE(CL_DEVICE_NOT_AVAILABLE)
    ERR_CASE(CL_COMPILER_NOT_AVAILABLE)
    ERR_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    ERR_CASE(CL_OUT_OF_RESOURCES)
    ERR_CASE(CL_OUT_OF_HOST_MEMORY)
    ERR_CASE(CL_PROFILING_INFO_NOT_AVAILABLE)
    ERR_CASE(CL_MEM_COPY_OVERLAP)
    ERR_CASE(CL_IMAGE_FORMAT_MISMATCH)
    ERR_CASE(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    ERR_CASE(CL_BUILD_PROGRAM_FAILURE)
    ERR_CASE(CL_MAP_FAILURE)
    ERR_CASE(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    ERR_CASE(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    ERR_CASE(CL_COMPILE_PROGRAM_FAILURE)
    ERR_CASE(CL_LINKER_NOT_AVAILABLE)
    ERR_CASE(CL_LINK_PROGRAM_FAILURE)
    ERR_CASE(CL_DEVICE_PARTITION_FAILED)
    ERR_CASE(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    ERR_CASE(CL_INVALID_VALUE)
    ERR_CASE(CL_INVALID_DEVICE_TYPE)
    ERR_CASE(CL_INVALID_PLATFORM)
    ERR_CASE(CL_INVALID_DEVICE)
    ERR_CASE(CL_INVALID_CONTEXT)
    ERR_CASE(CL_INVALID_QUEUE_PROPERTIES)
    ERR_CASE(CL_INVALID_COMMAND_QUEUE)
    ERR_CASE(CL_INVALID_HOST_PTR)
    ERR_CASE(CL_INVALID_MEM_OBJECT)
    ERR_CASE(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    ERR_CASE(CL_INVALID_IMAGE_SIZE)
    ERR_CASE(CL_INVALID_SAMPLER)
    ERR_CASE(CL_INVALID_BINARY)
    ERR_CASE(CL_INVALID_BUILD_OPTIONS)
    ERR_CASE(CL_INVALID_PROGRAM)
    ERR_CASE(CL_INVALID_PROGRAM_EXECUTABLE)
    ERR_CASE(CL_INVALID_KERNEL_NAME)
    ERR_CASE(CL_INVALID_KERNEL_DEFINITION)
    ERR_CASE(CL_INVALID_KERNEL)
    ERR_CASE(CL_INVALID_ARG_INDEX)
    ERR_CASE(CL_INVALID_ARG_VALUE)
    ERR_CASE(CL_INVALID_ARG_SIZE)
    ERR_CASE(CL_INVALID_KERNEL_ARGS)
    ERR_CASE(CL_INVALID_WORK_DIMENSION)
    ERR_CASE(CL_INVALID_WORK_GROUP_SIZE)
    ERR_CASE(CL_INVALID_WORK_ITEM_SIZE)
    ERR_CASE(CL_INVALID_GLOBAL_OFFSET)
    ERR_CASE(CL_INVALID_EVENT_WAIT_LIST)
    ERR_CASE(CL_INVALID_EVENT)
    ERR_CASE(CL_INVALID_OPERATION)
    ERR_CASE(CL_INVALID_GL_OBJECT)
    ERR_CASE(CL_INVALID_BUFFER_SIZE)
    ERR_CASE(CL_INVALID_MIP_LEVEL)
    ERR_CASE(CL_INVALID_GLOBAL_WORK_SIZE)
    ERR_CASE(CL_INVALID_PROPERTY)
    ERR_CASE(CL_INVALID_IMAGE_DESCRIPTOR)
    ERR_CASE(CL_INVALID_COMPILER_OPTIONS)
    ERR_CASE(CL_INVALID_LINKER_OPTIONS)
    ERR_CASE(CL_INVALID_DEVICE_PARTITION_COUNT)
    ERR_CASE(CL_INVALID_PIPE_SIZE)
    ERR_CASE(CL_INVALID_DEVICE_QUEUE)
    ERR_CASE(CL_INVALID_SPEC_ID)
    ERR_CASE(CL_MAX_SIZE_RESTRICTION_EXCEEDED)
#undef ERR_CASE
  case -1001:
    return "CL_PLATFORM_NOT_FOUND_KHR";
  default:
    return "CL_UNKNOWN_ERROR";
  }
}

/* Number of failed checks; main returns ocl_finish(). */
static int ocl_failures;

static inline void ocl_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  ++ocl_failures;
}

/* A call that must succeed; the program cannot go on without it. */
#define CHECK(call)                                                                                \
  do {                                                                                             \
    cl_int check_err_ = (call);                                                                    \
    if (check_err_ != CL_SUCCESS) {                                                                \
      fprintf(stderr, "%s:%d: %s -> %s (%d)\n", __FILE__, __LINE__, #call,                         \
              cl_err_name(check_err_), (int)check_err_);                                           \
      exit(2);                                                                                     \
    }                                                                                              \
  } while (0)

/* Same for creators that report through an out-parameter. */
#define CHECK_ERR(err, what)                                                                       \
  do {                                                                                             \
    if ((err) != CL_SUCCESS) {                                                                     \
      fprintf(stderr, "%s:%d: %s -> %s (%d)\n", __FILE__, __LINE__, what, cl_err_name(err),        \
              (int)(err));                                                                         \
      exit(2);                                                                                     \
    }                                                                                              \
  } while (0)

/* A condition that must hold; the program goes on and fails at the end. */
#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ocl_fail(__FILE__, __LINE__, __VA_ARGS__);                                                   \
  } while (0)

/* The budget a program under ava's host configuration was given: its one
 * argument, between lo and hi; exits 2 on a usage error. */
static inline unsigned long ocl_limit_arg(int argc, char **argv, unsigned long lo,
                                          unsigned long hi) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s LIMIT\n", argv[0]);
    exit(2);
  }
  const unsigned long limit = strtoul(argv[1], NULL, 0);
  if (limit < lo || limit > hi) {
    fprintf(stderr, "LIMIT must be between %lu and %lu\n", lo, hi);
    exit(2);
  }
  return limit;
}

static inline int ocl_finish(void) {
  fflush(stdout);
  if (ocl_failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", ocl_failures);
    return 1;
  }
  return 0;
}

/* Remoted, a non-blocking enqueue or clSetKernelArg may return at once and
 * report its error from the next synchronous call of the thread instead; the
 * first error of the call and a clFinish after it is the same either way. The
 * call is an argument, so it is made before the clFinish in the body (the
 * order of two calls that were both arguments would be unspecified). */
static inline cl_int and_finish(cl_int call_result, cl_command_queue q) {
  const cl_int finish = clFinish(q);
  return call_result != CL_SUCCESS ? call_result : finish;
}

/* Whether p lies in a mapping of /proc/self/maps whose name contains what
 * (ava's shared heap is a memfd named "ava-shm"). */
static inline int ocl_in_mapping_named(const void *p, const char *what) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  int found = 0;
  if (f == NULL)
    return 0;
  while (!found && fgets(line, sizeof line, f) != NULL) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)p >= lo && (uintptr_t)p < hi)
      found = strstr(line, what) != NULL;
  }
  fclose(f);
  return found;
}

static inline const char *yes_no(int v) {
  return v ? "yes" : "no";
}

static inline void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Callbacks run on other threads and may arrive after the call that caused
 * them returns (remoted, they travel back from the worker): wait for them a
 * bounded time, never forever. Returns whether *counter reached want. */
static inline int wait_for_count(volatile int *counter, int want) {
  for (int i = 0; i < 10000; ++i) {
    if (__atomic_load_n(counter, __ATOMIC_ACQUIRE) >= want)
      return 1;
    sleep_ms(1);
  }
  return __atomic_load_n(counter, __ATOMIC_ACQUIRE) >= want;
}

static inline void first_platform_device(cl_platform_id *platform, cl_device_id *device) {
  CHECK(clGetPlatformIDs(1, platform, NULL));
  CHECK(clGetDeviceIDs(*platform, CL_DEVICE_TYPE_ALL, 1, device, NULL));
}

/* The usual set-up: first platform, first device, one context. */
typedef struct {
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;
} OclEnv;

static inline OclEnv ocl_env_open(void) {
  OclEnv env;
  cl_int err;
  first_platform_device(&env.platform, &env.device);
  env.context = clCreateContext(NULL, 1, &env.device, NULL, NULL, &err);
  CHECK_ERR(err, "clCreateContext");
  return env;
}

static inline void ocl_env_close(OclEnv *env) {
  CHECK(clReleaseContext(env->context));
}

static inline cl_command_queue ocl_queue(const OclEnv *env, cl_command_queue_properties props) {
  cl_queue_properties list[] = {CL_QUEUE_PROPERTIES, props, 0};
  cl_int err;
  cl_command_queue q =
      clCreateCommandQueueWithProperties(env->context, env->device, props ? list : NULL, &err);
  CHECK_ERR(err, "clCreateCommandQueueWithProperties");
  return q;
}

/* Builds source for the env's device; a build failure prints the log. */
static inline cl_program ocl_build(const OclEnv *env, const char *src, const char *options) {
  cl_int err;
  cl_program p = clCreateProgramWithSource(env->context, 1, &src, NULL, &err);
  CHECK_ERR(err, "clCreateProgramWithSource");
  err = clBuildProgram(p, 1, &env->device, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    char log[8192] = "";
    clGetProgramBuildInfo(p, env->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    fprintf(stderr, "clBuildProgram -> %s\n%s\n", cl_err_name(err), log);
    exit(2);
  }
  return p;
}

static inline cl_kernel ocl_kernel(cl_program p, const char *name) {
  cl_int err;
  cl_kernel k = clCreateKernel(p, name, &err);
  CHECK_ERR(err, name);
  return k;
}

static inline cl_mem ocl_buffer(const OclEnv *env, cl_mem_flags flags, size_t size, void *host) {
  cl_int err;
  cl_mem m = clCreateBuffer(env->context, flags, size, host, &err);
  CHECK_ERR(err, "clCreateBuffer");
  return m;
}

/* A position-dependent checksum, so that swapped elements show. */
static inline uint32_t checksum(const void *data, size_t size) {
  const unsigned char *p = (const unsigned char *)data;
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; ++i)
    h = (h ^ p[i]) * 16777619u;
  return h;
}

#endif
