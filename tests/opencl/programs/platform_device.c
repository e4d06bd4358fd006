/* SPDX-License-Identifier: MIT */
/* Platforms and devices: every platform query, device lookup by type, many
 * device queries (size query first, then the value), sub-devices, timers. */
#include "common.h"

enum Kind { STR, UINT, ULONG, SIZE, BOOL, HEX, SIZES, PROPS, HANDLE_PLATFORM, NAMEVER, VER };

typedef struct {
  cl_uint param;
  const char *name;
  enum Kind kind;
} Param;

#define P(x, k)                                                                                    \
  { x, #x, k }

static const Param kPlatformParams[] = {
    P(CL_PLATFORM_PROFILE, STR),
    P(CL_PLATFORM_VERSION, STR),
    P(CL_PLATFORM_NAME, STR),
    P(CL_PLATFORM_VENDOR, STR),
    P(CL_PLATFORM_EXTENSIONS, STR),
    P(CL_PLATFORM_HOST_TIMER_RESOLUTION, ULONG),
    P(CL_PLATFORM_NUMERIC_VERSION, VER),
    P(CL_PLATFORM_EXTENSIONS_WITH_VERSION, NAMEVER),
    P(CL_PLATFORM_ICD_SUFFIX_KHR, STR),
};

static const Param kDeviceParams[] = {
    P(CL_DEVICE_TYPE, HEX),
    P(CL_DEVICE_VENDOR_ID, HEX),
    P(CL_DEVICE_MAX_COMPUTE_UNITS, UINT),
    P(CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, UINT),
    P(CL_DEVICE_MAX_WORK_GROUP_SIZE, SIZE),
    P(CL_DEVICE_MAX_WORK_ITEM_SIZES, SIZES),
    P(CL_DEVICE_PREFERRED_VECTOR_WIDTH_CHAR, UINT),
    P(CL_DEVICE_PREFERRED_VECTOR_WIDTH_INT, UINT),
    P(CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, UINT),
    P(CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE, UINT),
    P(CL_DEVICE_NATIVE_VECTOR_WIDTH_LONG, UINT),
    P(CL_DEVICE_MAX_CLOCK_FREQUENCY, UINT),
    P(CL_DEVICE_ADDRESS_BITS, UINT),
    P(CL_DEVICE_MAX_READ_IMAGE_ARGS, UINT),
    P(CL_DEVICE_MAX_WRITE_IMAGE_ARGS, UINT),
    P(CL_DEVICE_MAX_MEM_ALLOC_SIZE, ULONG),
    P(CL_DEVICE_IMAGE2D_MAX_WIDTH, SIZE),
    P(CL_DEVICE_IMAGE3D_MAX_DEPTH, SIZE),
    P(CL_DEVICE_IMAGE_SUPPORT, BOOL),
    P(CL_DEVICE_MAX_PARAMETER_SIZE, SIZE),
    P(CL_DEVICE_MAX_SAMPLERS, UINT),
    P(CL_DEVICE_MEM_BASE_ADDR_ALIGN, UINT),
    P(CL_DEVICE_SINGLE_FP_CONFIG, HEX),
    P(CL_DEVICE_DOUBLE_FP_CONFIG, HEX),
    P(CL_DEVICE_GLOBAL_MEM_CACHE_TYPE, HEX),
    P(CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE, UINT),
    P(CL_DEVICE_GLOBAL_MEM_SIZE, ULONG),
    P(CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE, ULONG),
    P(CL_DEVICE_MAX_CONSTANT_ARGS, UINT),
    P(CL_DEVICE_LOCAL_MEM_TYPE, HEX),
    P(CL_DEVICE_LOCAL_MEM_SIZE, ULONG),
    P(CL_DEVICE_ERROR_CORRECTION_SUPPORT, BOOL),
    P(CL_DEVICE_PROFILING_TIMER_RESOLUTION, SIZE),
    P(CL_DEVICE_ENDIAN_LITTLE, BOOL),
    P(CL_DEVICE_AVAILABLE, BOOL),
    P(CL_DEVICE_COMPILER_AVAILABLE, BOOL),
    P(CL_DEVICE_LINKER_AVAILABLE, BOOL),
    P(CL_DEVICE_EXECUTION_CAPABILITIES, HEX),
    P(CL_DEVICE_QUEUE_ON_HOST_PROPERTIES, HEX),
    P(CL_DEVICE_NAME, STR),
    P(CL_DEVICE_VENDOR, STR),
    P(CL_DRIVER_VERSION, STR),
    P(CL_DEVICE_PROFILE, STR),
    P(CL_DEVICE_VERSION, STR),
    P(CL_DEVICE_OPENCL_C_VERSION, STR),
    P(CL_DEVICE_EXTENSIONS, STR),
    P(CL_DEVICE_BUILT_IN_KERNELS, STR),
    P(CL_DEVICE_IL_VERSION, STR),
    P(CL_DEVICE_PLATFORM, HANDLE_PLATFORM),
    P(CL_DEVICE_HOST_UNIFIED_MEMORY, BOOL),
    P(CL_DEVICE_PRINTF_BUFFER_SIZE, SIZE),
    P(CL_DEVICE_PREFERRED_INTEROP_USER_SYNC, BOOL),
    P(CL_DEVICE_PARTITION_MAX_SUB_DEVICES, UINT),
    P(CL_DEVICE_PARTITION_PROPERTIES, PROPS),
    P(CL_DEVICE_PARTITION_AFFINITY_DOMAIN, HEX),
    P(CL_DEVICE_PARTITION_TYPE, PROPS),
    P(CL_DEVICE_REFERENCE_COUNT, UINT),
    P(CL_DEVICE_SVM_CAPABILITIES, HEX),
    P(CL_DEVICE_MAX_NUM_SUB_GROUPS, UINT),
    P(CL_DEVICE_NUMERIC_VERSION, VER),
    P(CL_DEVICE_OPENCL_C_ALL_VERSIONS, NAMEVER),
    P(CL_DEVICE_OPENCL_C_FEATURES, NAMEVER),
    P(CL_DEVICE_EXTENSIONS_WITH_VERSION, NAMEVER),
    P(CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES, HEX),
    P(CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT, BOOL),
    P(CL_DEVICE_WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT, BOOL),
    P(CL_DEVICE_GENERIC_ADDRESS_SPACE_SUPPORT, BOOL),
    P(CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, SIZE),
    P(CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED, STR),
};

static cl_platform_id g_platform;

static void print_value(const char *name, enum Kind kind, const unsigned char *v, size_t size) {
  printf("%s (%zu bytes): ", name, size);
  switch (kind) {
  case STR:
    printf("\"%.*s\"", size > 0 ? (int)size - 1 : 0, (const char *)v);
    EXPECT(size > 0 && v[size - 1] == '\0', "%s: string without NUL", name);
    break;
  case UINT:
    printf("%u", *(const cl_uint *)v);
    break;
  case ULONG:
    printf("%llu", (unsigned long long)*(const cl_ulong *)v);
    break;
  case SIZE:
    printf("%zu", *(const size_t *)v);
    break;
  case BOOL:
    printf("%s", *(const cl_bool *)v ? "true" : "false");
    break;
  case HEX:
    if (size == sizeof(cl_uint))
      printf("0x%x", *(const cl_uint *)v);
    else
      printf("0x%llx", (unsigned long long)*(const cl_ulong *)v);
    break;
  case SIZES:
    for (size_t i = 0; i < size / sizeof(size_t); ++i)
      printf("%s%zu", i ? " " : "", ((const size_t *)v)[i]);
    break;
  case PROPS:
    for (size_t i = 0; i < size / sizeof(cl_device_partition_property); ++i)
      printf("%s0x%llx", i ? " " : "",
             (unsigned long long)((const cl_device_partition_property *)v)[i]);
    break;
  case HANDLE_PLATFORM:
    printf("equals the platform: %s", yes_no(*(const cl_platform_id *)v == g_platform));
    EXPECT(*(const cl_platform_id *)v == g_platform, "%s is not the platform", name);
    break;
  case NAMEVER:
    for (size_t i = 0; i < size / sizeof(cl_name_version); ++i) {
      const cl_name_version *nv = &((const cl_name_version *)v)[i];
      printf("%s%s=%u.%u.%u", i ? " " : "", nv->name, CL_VERSION_MAJOR(nv->version),
             CL_VERSION_MINOR(nv->version), CL_VERSION_PATCH(nv->version));
    }
    break;
  case VER:
    printf("%u.%u.%u", CL_VERSION_MAJOR(*(const cl_version *)v),
           CL_VERSION_MINOR(*(const cl_version *)v), CL_VERSION_PATCH(*(const cl_version *)v));
    break;
  }
  printf("\n");
}

typedef cl_int (*InfoFn)(void *object, cl_uint param, size_t size, void *value, size_t *ret);

static cl_int platform_info(void *o, cl_uint p, size_t s, void *v, size_t *r) {
  return clGetPlatformInfo((cl_platform_id)o, p, s, v, r);
}

static cl_int device_info(void *o, cl_uint p, size_t s, void *v, size_t *r) {
  return clGetDeviceInfo((cl_device_id)o, p, s, v, r);
}

/* Size query with a NULL value, then the value itself with exactly that size. */
static void query(InfoFn fn, void *object, const Param *param) {
  size_t size = 0;
  cl_int err = fn(object, param->param, 0, NULL, &size);
  if (err != CL_SUCCESS) {
    printf("%s: %s\n", param->name, cl_err_name(err));
    return;
  }
  unsigned char *value = calloc(1, size + 1);
  size_t size2 = 0;
  CHECK(fn(object, param->param, size, value, &size2));
  EXPECT(size == size2, "%s: size %zu then %zu", param->name, size, size2);
  print_value(param->name, param->kind, value, size);
  free(value);
}

static cl_uint device_uint(cl_device_id d, cl_device_info p) {
  cl_uint v = 0;
  CHECK(clGetDeviceInfo(d, p, sizeof v, &v, NULL));
  return v;
}

static void sub_devices(cl_device_id device) {
  const cl_uint max_sub = device_uint(device, CL_DEVICE_PARTITION_MAX_SUB_DEVICES);
  if (max_sub < 2) {
    printf("sub-devices: not supported\n");
    return;
  }
  const cl_device_partition_property equally[] = {CL_DEVICE_PARTITION_EQUALLY, 1, 0};
  cl_uint n = 0;
  CHECK(clCreateSubDevices(device, equally, 0, NULL, &n));
  printf("partition equally by 1: %u sub-devices\n", n);
  EXPECT(n >= 2 && n <= 64, "sub-device count %u", n);
  if (n < 2 || n > 64)
    return;
  cl_device_id subs[64];
  cl_uint n2 = 0;
  CHECK(clCreateSubDevices(device, equally, n, subs, &n2));
  EXPECT(n2 == n, "second count %u", n2);
  for (cl_uint i = 0; i < n; ++i) {
    cl_device_id parent = NULL;
    CHECK(clGetDeviceInfo(subs[i], CL_DEVICE_PARENT_DEVICE, sizeof parent, &parent, NULL));
    cl_device_partition_property type[8] = {0};
    size_t type_size = 0;
    CHECK(clGetDeviceInfo(subs[i], CL_DEVICE_PARTITION_TYPE, sizeof type, type, &type_size));
    printf("sub %u: parent is the device: %s, compute units %u, partition type 0x%llx %lld "
           "(%zu bytes)\n",
           i, yes_no(parent == device), device_uint(subs[i], CL_DEVICE_MAX_COMPUTE_UNITS),
           (unsigned long long)type[0], (long long)type[1], type_size);
    EXPECT(parent == device, "sub %u: parent differs", i);
    EXPECT(subs[i] != device, "sub %u is the root device", i);
  }
  EXPECT(subs[0] != subs[1], "two sub-devices share a handle");
  cl_device_id root_parent = (cl_device_id)1;
  CHECK(clGetDeviceInfo(device, CL_DEVICE_PARENT_DEVICE, sizeof root_parent, &root_parent, NULL));
  printf("root parent is NULL: %s\n", yes_no(root_parent == NULL));

  CHECK(clRetainDevice(subs[0]));
  printf("sub 0 refcount after retain: %u\n", device_uint(subs[0], CL_DEVICE_REFERENCE_COUNT));
  CHECK(clReleaseDevice(subs[0]));
  printf("sub 0 refcount after release: %u\n", device_uint(subs[0], CL_DEVICE_REFERENCE_COUNT));
  /* Root devices are not reference counted. */
  CHECK(clRetainDevice(device));
  CHECK(clReleaseDevice(device));
  printf("root refcount: %u\n", device_uint(device, CL_DEVICE_REFERENCE_COUNT));

  /* A sub-device is a device: it can own a context. */
  cl_int err;
  cl_context ctx = clCreateContext(NULL, 1, &subs[0], NULL, NULL, &err);
  CHECK_ERR(err, "clCreateContext(sub-device)");
  cl_device_id ctx_dev = NULL;
  CHECK(clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof ctx_dev, &ctx_dev, NULL));
  /* PoCL answers with the root device here; the output shows which. */
  printf("context on sub 0: device is sub 0: %s, is the root device: %s\n",
         yes_no(ctx_dev == subs[0]), yes_no(ctx_dev == device));
  CHECK(clReleaseContext(ctx));
  for (cl_uint i = 0; i < n; ++i)
    CHECK(clReleaseDevice(subs[i]));

  const cl_device_partition_property counts[] = {CL_DEVICE_PARTITION_BY_COUNTS, 1, 1,
                                                 CL_DEVICE_PARTITION_BY_COUNTS_LIST_END, 0};
  err = clCreateSubDevices(device, counts, 2, subs, &n);
  printf("partition by counts {1,1}: %s", cl_err_name(err));
  if (err == CL_SUCCESS) {
    printf(", %u sub-devices, units %u %u", n, device_uint(subs[0], CL_DEVICE_MAX_COMPUTE_UNITS),
           device_uint(subs[1], CL_DEVICE_MAX_COMPUTE_UNITS));
    for (cl_uint i = 0; i < n && i < 2; ++i)
      CHECK(clReleaseDevice(subs[i]));
  }
  printf("\n");
  const cl_device_partition_property too_many[] = {CL_DEVICE_PARTITION_BY_COUNTS, 1000,
                                                   CL_DEVICE_PARTITION_BY_COUNTS_LIST_END, 0};
  err = clCreateSubDevices(device, too_many, 2, subs, &n);
  printf("partition by counts {1000}: %s\n", cl_err_name(err));
  EXPECT(err != CL_SUCCESS, "1000 compute units partitioned");
}

int main(void) {
  cl_uint num_platforms = 0;
  CHECK(clGetPlatformIDs(0, NULL, &num_platforms));
  printf("platforms: %u\n", num_platforms);
  EXPECT(num_platforms >= 1, "no platform");
  cl_platform_id platform;
  CHECK(clGetPlatformIDs(1, &platform, NULL));
  g_platform = platform;
  printf("clGetPlatformIDs(0, NULL, NULL): %s\n", cl_err_name(clGetPlatformIDs(0, NULL, NULL)));

  for (size_t i = 0; i < sizeof kPlatformParams / sizeof kPlatformParams[0]; ++i)
    query(platform_info, platform, &kPlatformParams[i]);

  static const struct {
    cl_device_type type;
    const char *name;
  } kTypes[] = {
      {CL_DEVICE_TYPE_ALL, "ALL"},
      {CL_DEVICE_TYPE_DEFAULT, "DEFAULT"},
      {CL_DEVICE_TYPE_CPU, "CPU"},
      {CL_DEVICE_TYPE_GPU, "GPU"},
      {CL_DEVICE_TYPE_ACCELERATOR, "ACCELERATOR"},
      {CL_DEVICE_TYPE_CUSTOM, "CUSTOM"},
  };
  for (size_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; ++i) {
    cl_uint n = 0;
    cl_int err = clGetDeviceIDs(platform, kTypes[i].type, 0, NULL, &n);
    printf("devices of type %s: %s, %u\n", kTypes[i].name, cl_err_name(err),
           err == CL_SUCCESS ? n : 0);
  }

  cl_device_id device;
  CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
  cl_device_id again;
  CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 1, &again, NULL));
  printf("same device handle twice: %s\n", yes_no(device == again));
  EXPECT(device == again, "the device handle changed between lookups");

  for (size_t i = 0; i < sizeof kDeviceParams / sizeof kDeviceParams[0]; ++i)
    query(device_info, device, &kDeviceParams[i]);

  sub_devices(device);

  cl_ulong dev_ts = 0, host_ts = 0;
  printf("clGetDeviceAndHostTimer: %s\n",
         cl_err_name(clGetDeviceAndHostTimer(device, &dev_ts, &host_ts)));
  printf("clGetHostTimer: %s\n", cl_err_name(clGetHostTimer(device, &host_ts)));
  return ocl_finish();
}
