/* SPDX-License-Identifier: MIT */
/* Contexts: properties, notify callback, creation by type, queries,
 * reference counts, destructor callbacks at the final release. */
#include "common.h"

static int g_notify_user = 11;
static int g_destructor_user = 22;
static volatile int g_destructor_runs;
static volatile int g_destructor_user_ok;
static volatile int g_destructor_order_ok = 1;
static volatile int g_second_runs;

static void CL_CALLBACK notify(const char *errinfo, const void *info, size_t cb, void *user) {
  (void)errinfo;
  (void)info;
  (void)cb;
  /* Whether PoCL calls it is up to PoCL: only its user data is checked. */
  if (user != &g_notify_user)
    fprintf(stderr, "context notify: wrong user data\n");
}

/* Destructor callbacks run in reverse order of registration. */
static void CL_CALLBACK destructor(cl_context ctx, void *user) {
  (void)ctx;
  if (user == &g_destructor_user)
    __atomic_store_n(&g_destructor_user_ok, 1, __ATOMIC_RELEASE);
  if (__atomic_load_n(&g_second_runs, __ATOMIC_ACQUIRE) != 1)
    g_destructor_order_ok = 0;
  __atomic_add_fetch(&g_destructor_runs, 1, __ATOMIC_ACQ_REL);
}

static void CL_CALLBACK second_destructor(cl_context ctx, void *user) {
  (void)ctx;
  (void)user;
  __atomic_add_fetch(&g_second_runs, 1, __ATOMIC_ACQ_REL);
}

static cl_uint refcount(cl_context ctx) {
  cl_uint n = 0;
  CHECK(clGetContextInfo(ctx, CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, NULL));
  return n;
}

static void print_context(cl_context ctx, cl_platform_id platform, cl_device_id device) {
  cl_uint num = 0;
  CHECK(clGetContextInfo(ctx, CL_CONTEXT_NUM_DEVICES, sizeof num, &num, NULL));
  printf("  num devices: %u\n", num);
  size_t size = 0;
  CHECK(clGetContextInfo(ctx, CL_CONTEXT_DEVICES, 0, NULL, &size));
  printf("  devices size: %zu\n", size);
  cl_device_id devs[4] = {0};
  CHECK(clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof devs, devs, NULL));
  printf("  device is the device: %s\n", yes_no(devs[0] == device));
  EXPECT(devs[0] == device, "CL_CONTEXT_DEVICES differs");
  printf("  reference count: %u\n", refcount(ctx));
  CHECK(clGetContextInfo(ctx, CL_CONTEXT_PROPERTIES, 0, NULL, &size));
  printf("  properties size: %zu\n", size);
  cl_context_properties props[8] = {0};
  EXPECT(size <= sizeof props, "properties too long");
  /* PoCL reads through a NULL property list when asked for 0 bytes of it. */
  if (size == 0 || size > sizeof props)
    return;
  CHECK(clGetContextInfo(ctx, CL_CONTEXT_PROPERTIES, size, props, NULL));
  for (size_t i = 0; i + 1 < size / sizeof props[0]; i += 2) {
    if (props[i] == CL_CONTEXT_PLATFORM) {
      printf("  property CL_CONTEXT_PLATFORM is the platform: %s\n",
             yes_no((cl_platform_id)props[i + 1] == platform));
      EXPECT((cl_platform_id)props[i + 1] == platform, "property platform differs");
    } else {
      printf("  property 0x%llx = %lld\n", (unsigned long long)props[i], (long long)props[i + 1]);
    }
  }
  printf("  properties end with 0: %s\n", yes_no(props[size / sizeof props[0] - 1] == 0));
}

int main(void) {
  cl_platform_id platform;
  cl_device_id device;
  first_platform_device(&platform, &device);
  cl_int err;

  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
  cl_context ctx = clCreateContext(props, 1, &device, notify, &g_notify_user, &err);
  CHECK_ERR(err, "clCreateContext");
  printf("clCreateContext with platform property and notify: %s\n", cl_err_name(err));
  print_context(ctx, platform, device);

  CHECK(clRetainContext(ctx));
  CHECK(clRetainContext(ctx));
  printf("after two retains: %u\n", refcount(ctx));
  CHECK(clReleaseContext(ctx));
  printf("after one release: %u\n", refcount(ctx));

  CHECK(clSetContextDestructorCallback(ctx, destructor, &g_destructor_user));
  CHECK(clSetContextDestructorCallback(ctx, second_destructor, NULL));
  CHECK(clReleaseContext(ctx));
  printf("after second release: %u\n", refcount(ctx));
  printf("destructor ran before the final release: %s\n",
         yes_no(__atomic_load_n(&g_destructor_runs, __ATOMIC_ACQUIRE) != 0));
  CHECK(clReleaseContext(ctx));
  const int ran = wait_for_count(&g_destructor_runs, 1) && wait_for_count(&g_second_runs, 1);
  printf("destructors ran after the final release: %s\n", yes_no(ran));
  printf("destructor got its user data: %s\n", yes_no(g_destructor_user_ok));
  printf("destructors ran in reverse order: %s\n", yes_no(g_destructor_order_ok));
  EXPECT(ran && g_destructor_user_ok && g_destructor_order_ok, "context destructor callbacks");
  EXPECT(g_destructor_runs == 1 && g_second_runs == 1, "destructors ran %d and %d times",
         g_destructor_runs, g_second_runs);

  ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  CHECK_ERR(err, "clCreateContext(no properties)");
  printf("clCreateContext without properties:\n");
  print_context(ctx, platform, device);
  CHECK(clReleaseContext(ctx));

  static const struct {
    cl_device_type type;
    const char *name;
  } kTypes[] = {{CL_DEVICE_TYPE_ALL, "ALL"},
                {CL_DEVICE_TYPE_DEFAULT, "DEFAULT"},
                {CL_DEVICE_TYPE_CPU, "CPU"},
                {CL_DEVICE_TYPE_GPU, "GPU"}};
  for (size_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; ++i) {
    cl_context c = clCreateContextFromType(props, kTypes[i].type, notify, &g_notify_user, &err);
    printf("clCreateContextFromType(%s): %s\n", kTypes[i].name, cl_err_name(err));
    if (err == CL_SUCCESS) {
      print_context(c, platform, device);
      CHECK(clReleaseContext(c));
    }
  }

  /* Two contexts on the same device are different objects. */
  cl_context a = clCreateContext(props, 1, &device, NULL, NULL, &err);
  CHECK_ERR(err, "clCreateContext a");
  cl_context b = clCreateContext(props, 1, &device, NULL, NULL, &err);
  CHECK_ERR(err, "clCreateContext b");
  printf("two contexts differ: %s\n", yes_no(a != b));
  EXPECT(a != b, "two contexts share a handle");
  CHECK(clReleaseContext(a));
  CHECK(clReleaseContext(b));

  const cl_context_properties bad_props[] = {0x7777, 1, 0};
  cl_context bad = clCreateContext(bad_props, 1, &device, NULL, NULL, &err);
  printf("clCreateContext(unknown property): %s, NULL: %s\n", cl_err_name(err),
         yes_no(bad == NULL));
  EXPECT(err == CL_INVALID_PROPERTY && bad == NULL, "unknown property accepted");
  bad = clCreateContext(NULL, 0, &device, NULL, NULL, &err);
  printf("clCreateContext(0 devices): %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_VALUE && bad == NULL, "0 devices accepted");
  bad = clCreateContext(NULL, 1, &device, NULL, &g_notify_user, &err);
  printf("clCreateContext(user data without notify): %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_VALUE && bad == NULL, "user data without notify accepted");
  return ocl_finish();
}
