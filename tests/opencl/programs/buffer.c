/* SPDX-License-Identifier: MIT */
/* Buffers: creation flags, reads and writes (blocking, non-blocking, rect),
 * copies, fills, sub-buffers, queries, destructor callbacks, migration. */
#include "common.h"

enum { N = 4096 };

static OclEnv g_env;
static cl_command_queue g_q;

static void fill_pattern(cl_uint *p, size_t n, cl_uint seed) {
  for (size_t i = 0; i < n; ++i)
    p[i] = seed * 2654435761u + (cl_uint)i * 40503u;
}

static cl_uint *read_all(cl_mem m, size_t n) {
  cl_uint *out = calloc(n, sizeof(cl_uint));
  CHECK(clEnqueueReadBuffer(g_q, m, CL_TRUE, 0, n * sizeof(cl_uint), out, 0, NULL, NULL));
  return out;
}

static void print_sum(const char *label, cl_mem m, size_t n) {
  cl_uint *out = read_all(m, n);
  printf("%s: checksum %08x, first %08x, last %08x\n", label, checksum(out, n * sizeof(cl_uint)),
         out[0], out[n - 1]);
  free(out);
}

static void creation(void) {
  static cl_uint host[N];
  fill_pattern(host, N, 1);
  const uint32_t want = checksum(host, sizeof host);
  printf("host pattern checksum %08x\n", want);

  static const struct {
    const char *name;
    cl_mem_flags flags;
    int uses_host;
  } kCases[] = {
      {"COPY_HOST_PTR", CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 1},
      {"USE_HOST_PTR", CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, 1},
      {"ALLOC_HOST_PTR|COPY_HOST_PTR", CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR, 1},
      {"READ_ONLY|COPY_HOST_PTR", CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 1},
      {"WRITE_ONLY|HOST_READ_ONLY|COPY",
       CL_MEM_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_COPY_HOST_PTR, 1},
  };
  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {
    cl_mem m = ocl_buffer(&g_env, kCases[i].flags, sizeof host, host);
    cl_uint *out = read_all(m, N);
    const uint32_t got = checksum(out, sizeof host);
    printf("create %s: contents %s\n", kCases[i].name, got == want ? "match" : "DIFFER");
    EXPECT(got == want, "%s: contents differ", kCases[i].name);
    free(out);
    cl_mem_flags flags = 0;
    void *host_ptr = NULL;
    size_t size = 0;
    cl_mem_object_type type = 0;
    cl_context ctx = NULL;
    cl_uint refs = 0, maps = 0;
    cl_bool svm = CL_TRUE;
    CHECK(clGetMemObjectInfo(m, CL_MEM_FLAGS, sizeof flags, &flags, NULL));
    CHECK(clGetMemObjectInfo(m, CL_MEM_HOST_PTR, sizeof host_ptr, &host_ptr, NULL));
    CHECK(clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL));
    CHECK(clGetMemObjectInfo(m, CL_MEM_TYPE, sizeof type, &type, NULL));
    CHECK(clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof ctx, &ctx, NULL));
    CHECK(clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL));
    CHECK(clGetMemObjectInfo(m, CL_MEM_MAP_COUNT, sizeof maps, &maps, NULL));
    CHECK(clGetMemObjectInfo(m, CL_MEM_USES_SVM_POINTER, sizeof svm, &svm, NULL));
    const int use = (kCases[i].flags & CL_MEM_USE_HOST_PTR) != 0;
    printf("  flags 0x%llx, size %zu, type 0x%x, context ok %s, refs %u, maps %u, svm %u, "
           "host ptr %s\n",
           (unsigned long long)flags, size, type, yes_no(ctx == g_env.context), refs, maps, svm,
           use ? (host_ptr == host ? "is the host array" : "WRONG")
               : (host_ptr == NULL ? "NULL" : "WRONG"));
    EXPECT(use ? host_ptr == host : host_ptr == NULL, "%s: CL_MEM_HOST_PTR", kCases[i].name);
    EXPECT(ctx == g_env.context, "CL_MEM_CONTEXT differs");
    CHECK(clReleaseMemObject(m));
  }

  /* COPY_HOST_PTR copies at creation: later changes to the host array do not show. */
  cl_mem copy = ocl_buffer(&g_env, CL_MEM_COPY_HOST_PTR, sizeof host, host);
  host[0] ^= 0xffffffffu;
  cl_uint *out = read_all(copy, N);
  printf("COPY_HOST_PTR is a snapshot: %s\n", yes_no(out[0] != host[0]));
  EXPECT(out[0] != host[0], "COPY_HOST_PTR buffer followed the host array");
  host[0] ^= 0xffffffffu;
  free(out);
  CHECK(clReleaseMemObject(copy));

  cl_int err;
  cl_mem plain =
      clCreateBufferWithProperties(g_env.context, NULL, CL_MEM_READ_WRITE, 256, NULL, &err);
  printf("clCreateBufferWithProperties(NULL props): %s\n", cl_err_name(err));
  CHECK_ERR(err, "clCreateBufferWithProperties");
  size_t psize = 99;
  CHECK(clGetMemObjectInfo(plain, CL_MEM_PROPERTIES, 0, NULL, &psize));
  printf("  CL_MEM_PROPERTIES size: %zu\n", psize);
  CHECK(clReleaseMemObject(plain));
  const cl_mem_properties empty[] = {0};
  plain = clCreateBufferWithProperties(g_env.context, empty, CL_MEM_COPY_HOST_PTR, sizeof host,
                                       host, &err);
  printf("clCreateBufferWithProperties({0}): %s\n", cl_err_name(err));
  CHECK_ERR(err, "clCreateBufferWithProperties({0})");
  print_sum("  contents", plain, N);
  CHECK(clReleaseMemObject(plain));
  const cl_mem_properties unknown[] = {0x7777, 1, 0};
  plain = clCreateBufferWithProperties(g_env.context, unknown, 0, 256, NULL, &err);
  printf("clCreateBufferWithProperties(unknown property): %s\n", cl_err_name(err));
  EXPECT(err != CL_SUCCESS, "unknown buffer property accepted");
}

static void read_write(void) {
  cl_uint *src = malloc(N * sizeof(cl_uint));
  fill_pattern(src, N, 2);
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE, N * sizeof(cl_uint), NULL);
  CHECK(clEnqueueWriteBuffer(g_q, m, CL_TRUE, 0, N * sizeof(cl_uint), src, 0, NULL, NULL));
  print_sum("blocking write", m, N);

  /* Non-blocking: the host memory stays untouched until the event completes. */
  cl_uint *src2 = malloc(N * sizeof(cl_uint));
  fill_pattern(src2, N, 3);
  cl_event w;
  CHECK(clEnqueueWriteBuffer(g_q, m, CL_FALSE, 0, N * sizeof(cl_uint), src2, 0, NULL, &w));
  CHECK(clWaitForEvents(1, &w));
  CHECK(clReleaseEvent(w));
  print_sum("non-blocking write + wait", m, N);

  /* Partial writes at offsets, then non-blocking reads completed by clFinish. */
  CHECK(clEnqueueWriteBuffer(g_q, m, CL_FALSE, 100 * sizeof(cl_uint), 50 * sizeof(cl_uint), src, 0,
                             NULL, NULL));
  CHECK(clEnqueueWriteBuffer(g_q, m, CL_FALSE, (N - 7) * sizeof(cl_uint), 7 * sizeof(cl_uint),
                             src + 1000, 0, NULL, NULL));
  cl_uint *dst = calloc(N, sizeof(cl_uint));
  cl_uint *head = calloc(16, sizeof(cl_uint));
  CHECK(clEnqueueReadBuffer(g_q, m, CL_FALSE, 0, N * sizeof(cl_uint), dst, 0, NULL, NULL));
  CHECK(clEnqueueReadBuffer(g_q, m, CL_FALSE, 98 * sizeof(cl_uint), 16 * sizeof(cl_uint), head, 0,
                            NULL, NULL));
  CHECK(clFinish(g_q));
  printf("offset writes + non-blocking reads + finish: checksum %08x, head %08x %08x %08x\n",
         checksum(dst, N * sizeof(cl_uint)), head[0], head[2], head[15]);
  EXPECT(dst[100] == src[0] && dst[149] == src[49] && dst[150] == src2[150] &&
             dst[N - 7] == src[1000] && dst[N - 1] == src[1006] && head[2] == src[0],
         "partial writes misplaced");
  /* A non-blocking read waited on by its event. */
  cl_event r;
  memset(dst, 0, N * sizeof(cl_uint));
  CHECK(clEnqueueReadBuffer(g_q, m, CL_FALSE, 0, N * sizeof(cl_uint), dst, 0, NULL, &r));
  CHECK(clWaitForEvents(1, &r));
  cl_int status = 0;
  CHECK(clGetEventInfo(r, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
  printf("non-blocking read + wait: checksum %08x, status %d\n", checksum(dst, N * sizeof(cl_uint)),
         status);
  CHECK(clReleaseEvent(r));
  free(head);
  free(dst);
  free(src2);
  free(src);
  CHECK(clReleaseMemObject(m));
}

static void rect(void) {
  /* A 16x16 grid of uints viewed as rows of 64 bytes. */
  enum { W = 16, H = 16, D = 2 };
  cl_uint grid[D][H][W];
  for (int z = 0; z < D; ++z)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x)
        grid[z][y][x] = (cl_uint)(z * 10000 + y * 100 + x);
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE, sizeof grid, NULL);
  const cl_uint zero = 0;
  CHECK(clEnqueueFillBuffer(g_q, m, &zero, sizeof zero, 0, sizeof grid, 0, NULL, NULL));

  /* Host rows are 8 uints wide; write a 5x3 block (in bytes: 20x3) to (2,1) of slice 1. */
  cl_uint host[4][8];
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 8; ++x)
      host[y][x] = (cl_uint)(900 + y * 10 + x);
  const size_t buf_origin[3] = {2 * sizeof(cl_uint), 1, 1};
  const size_t host_origin[3] = {1 * sizeof(cl_uint), 1, 0};
  const size_t region[3] = {5 * sizeof(cl_uint), 3, 1};
  CHECK(clEnqueueWriteBufferRect(g_q, m, CL_TRUE, buf_origin, host_origin, region,
                                 W * sizeof(cl_uint), W * H * sizeof(cl_uint), 8 * sizeof(cl_uint),
                                 0, host, 0, NULL, NULL));
  cl_uint back[D][H][W];
  CHECK(clEnqueueReadBuffer(g_q, m, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL));
  printf("write rect: [1][1][2]=%u [1][3][6]=%u [1][0][2]=%u [1][1][7]=%u checksum %08x\n",
         back[1][1][2], back[1][3][6], back[1][0][2], back[1][1][7], checksum(back, sizeof back));
  EXPECT(back[1][1][2] == 911 && back[1][3][6] == 935 && back[1][0][2] == 0 && back[1][1][7] == 0,
         "write rect misplaced");

  /* Fill the whole grid, then read a 3D rect back into a tightly packed host block. */
  CHECK(clEnqueueWriteBuffer(g_q, m, CL_TRUE, 0, sizeof grid, grid, 0, NULL, NULL));
  cl_uint block[2][3][4];
  memset(block, 0, sizeof block);
  const size_t origin2[3] = {3 * sizeof(cl_uint), 4, 0};
  const size_t zero3[3] = {0, 0, 0};
  const size_t region2[3] = {4 * sizeof(cl_uint), 3, 2};
  CHECK(clEnqueueReadBufferRect(g_q, m, CL_FALSE, origin2, zero3, region2, W * sizeof(cl_uint),
                                W * H * sizeof(cl_uint), 0, 0, block, 0, NULL, NULL));
  CHECK(clFinish(g_q));
  printf("read rect (pitches 0 = tight): %u %u %u %u\n", block[0][0][0], block[0][2][3],
         block[1][0][0], block[1][2][3]);
  EXPECT(block[0][0][0] == 403 && block[1][2][3] == 10606, "read rect wrong");

  /* Copy a rect within the buffer to another buffer with different pitches. */
  cl_mem dst = ocl_buffer(&g_env, CL_MEM_READ_WRITE, 8 * 8 * sizeof(cl_uint), NULL);
  CHECK(
      clEnqueueFillBuffer(g_q, dst, &zero, sizeof zero, 0, 8 * 8 * sizeof(cl_uint), 0, NULL, NULL));
  const size_t dst_origin[3] = {sizeof(cl_uint), 2, 0};
  const size_t region3[3] = {3 * sizeof(cl_uint), 2, 1};
  CHECK(clEnqueueCopyBufferRect(g_q, m, dst, origin2, dst_origin, region3, W * sizeof(cl_uint), 0,
                                8 * sizeof(cl_uint), 0, 0, NULL, NULL));
  cl_uint small[8][8];
  CHECK(clEnqueueReadBuffer(g_q, dst, CL_TRUE, 0, sizeof small, small, 0, NULL, NULL));
  printf("copy rect: %u %u %u %u checksum %08x\n", small[2][1], small[3][3], small[2][0],
         small[4][1], checksum(small, sizeof small));
  EXPECT(small[2][1] == 403 && small[3][3] == 505 && small[2][0] == 0 && small[4][1] == 0,
         "copy rect wrong");
  CHECK(clReleaseMemObject(dst));
  CHECK(clReleaseMemObject(m));
}

static void copy_fill(void) {
  cl_uint *src = malloc(N * sizeof(cl_uint));
  fill_pattern(src, N, 4);
  cl_mem a = ocl_buffer(&g_env, CL_MEM_COPY_HOST_PTR, N * sizeof(cl_uint), src);
  cl_mem b = ocl_buffer(&g_env, CL_MEM_READ_WRITE, N * sizeof(cl_uint), NULL);
  CHECK(clEnqueueCopyBuffer(g_q, a, b, 0, 0, N * sizeof(cl_uint), 0, NULL, NULL));
  CHECK(clEnqueueCopyBuffer(g_q, a, b, 8, 4000, 64, 0, NULL, NULL));
  print_sum("copy + offset copy", b, N);
  cl_int err = clEnqueueCopyBuffer(g_q, a, a, 0, 16, 64, 0, NULL, NULL);
  err = and_finish(err, g_q);
  printf("overlapping copy in one buffer + clFinish: %s\n", cl_err_name(err));
  EXPECT(err == CL_MEM_COPY_OVERLAP, "overlapping copy accepted");

  static const size_t kSizes[] = {1, 2, 4, 8, 16, 32, 64, 128};
  for (size_t i = 0; i < sizeof kSizes / sizeof kSizes[0]; ++i) {
    unsigned char pattern[128];
    for (size_t j = 0; j < sizeof pattern; ++j)
      pattern[j] = (unsigned char)(0x11 * (i + 1) + j);
    const size_t offset = kSizes[i] * 3;
    const size_t size = kSizes[i] * 20;
    CHECK(clEnqueueFillBuffer(g_q, b, pattern, kSizes[i], offset, size, 0, NULL, NULL));
    unsigned char *got = malloc(N * sizeof(cl_uint));
    CHECK(clEnqueueReadBuffer(g_q, b, CL_TRUE, 0, N * sizeof(cl_uint), got, 0, NULL, NULL));
    int ok = 1;
    for (size_t j = 0; j < size; ++j)
      ok &= got[offset + j] == pattern[j % kSizes[i]];
    printf("fill pattern %3zu bytes at %zu: %s, checksum %08x\n", kSizes[i], offset,
           ok ? "ok" : "WRONG", checksum(got, N * sizeof(cl_uint)));
    EXPECT(ok, "fill %zu wrong", kSizes[i]);
    free(got);
  }
  unsigned char pattern[3] = {1, 2, 3};
  err = clEnqueueFillBuffer(g_q, b, pattern, 3, 0, 30, 0, NULL, NULL);
  err = and_finish(err, g_q);
  printf("fill with a 3-byte pattern + clFinish: %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_VALUE, "3-byte pattern accepted");
  free(src);
  CHECK(clReleaseMemObject(a));
  CHECK(clReleaseMemObject(b));
}

static void sub_buffers(void) {
  cl_uint align_bits = 0;
  CHECK(clGetDeviceInfo(g_env.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits,
                        NULL));
  const size_t align = align_bits / 8;
  cl_uint *src = malloc(N * sizeof(cl_uint));
  fill_pattern(src, N, 5);
  cl_mem parent =
      ocl_buffer(&g_env, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, N * sizeof(cl_uint), src);
  const cl_buffer_region region = {align, align * 2};
  cl_int err;
  cl_mem sub =
      clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  CHECK_ERR(err, "clCreateSubBuffer");
  cl_mem assoc = NULL;
  size_t offset = 0, size = 0;
  cl_uint refs = 0;
  CHECK(clGetMemObjectInfo(sub, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof assoc, &assoc, NULL));
  CHECK(clGetMemObjectInfo(sub, CL_MEM_OFFSET, sizeof offset, &offset, NULL));
  CHECK(clGetMemObjectInfo(sub, CL_MEM_SIZE, sizeof size, &size, NULL));
  CHECK(clGetMemObjectInfo(parent, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL));
  printf("sub-buffer: parent ok %s, offset is one alignment unit %s, size %zu units, parent "
         "refs %u\n",
         yes_no(assoc == parent), yes_no(offset == align), size / align, refs);
  EXPECT(assoc == parent && offset == align, "sub-buffer info");
  cl_mem none = (cl_mem)1;
  CHECK(clGetMemObjectInfo(parent, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof none, &none, NULL));
  printf("parent has no associated object: %s\n", yes_no(none == NULL));

  print_sum("sub-buffer contents", sub, size / sizeof(cl_uint));
  const cl_uint mark = 0xabcdef01u;
  CHECK(clEnqueueFillBuffer(g_q, sub, &mark, sizeof mark, 0, size, 0, NULL, NULL));
  cl_uint *all = read_all(parent, N);
  const size_t first = align / sizeof(cl_uint), count = size / sizeof(cl_uint);
  printf("fill through sub-buffer: before %s, inside %s, after %s\n",
         yes_no(all[first - 1] == src[first - 1]), yes_no(all[first] == mark),
         yes_no(all[first + count] == src[first + count]));
  EXPECT(all[first - 1] == src[first - 1] && all[first] == mark && all[first + count - 1] == mark &&
             all[first + count] == src[first + count],
         "sub-buffer fill misplaced");
  free(all);

  const cl_buffer_region misaligned = {1, 16};
  cl_mem bad = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION, &misaligned, &err);
  printf("misaligned sub-buffer: %s\n", cl_err_name(err));
  EXPECT(err == CL_MISALIGNED_SUB_BUFFER_OFFSET && bad == NULL, "misaligned sub-buffer");
  const cl_buffer_region beyond = {0, N * sizeof(cl_uint) + 1};
  bad = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION, &beyond, &err);
  printf("sub-buffer beyond the end: %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_VALUE && bad == NULL, "sub-buffer beyond the end");
  CHECK(clReleaseMemObject(sub));
  CHECK(clReleaseMemObject(parent));
  free(src);
}

static volatile int g_destroyed;
static volatile int g_destroy_order_ok = 1;
static int g_destroy_user = 7;

static void CL_CALLBACK destroyed_second(cl_mem m, void *user) {
  (void)m;
  if (user != &g_destroy_user)
    g_destroy_order_ok = 0;
  __atomic_add_fetch(&g_destroyed, 1, __ATOMIC_ACQ_REL);
}

static void CL_CALLBACK destroyed_first(cl_mem m, void *user) {
  (void)m;
  (void)user;
  /* Registered second, so called first. */
  if (__atomic_load_n(&g_destroyed, __ATOMIC_ACQUIRE) != 0)
    g_destroy_order_ok = 0;
  __atomic_add_fetch(&g_destroyed, 1, __ATOMIC_ACQ_REL);
}

static void destructor_and_migrate(void) {
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE, 1024, NULL);
  CHECK(clSetMemObjectDestructorCallback(m, destroyed_second, &g_destroy_user));
  CHECK(clSetMemObjectDestructorCallback(m, destroyed_first, NULL));
  const cl_uint v = 42;
  CHECK(clEnqueueFillBuffer(g_q, m, &v, sizeof v, 0, 1024, 0, NULL, NULL));
  CHECK(clFinish(g_q));
  printf("destructor before release: %d calls\n", g_destroyed);
  CHECK(clReleaseMemObject(m));
  const int ran = wait_for_count(&g_destroyed, 2);
  printf("destructors after release: %s, in reverse order with user data: %s\n", yes_no(ran),
         yes_no(g_destroy_order_ok));
  EXPECT(ran && g_destroy_order_ok && g_destroyed == 2, "mem destructor callbacks");

  cl_mem objs[2];
  cl_uint *src = malloc(N * sizeof(cl_uint));
  fill_pattern(src, N, 6);
  objs[0] = ocl_buffer(&g_env, CL_MEM_COPY_HOST_PTR, N * sizeof(cl_uint), src);
  objs[1] = ocl_buffer(&g_env, CL_MEM_READ_WRITE, N * sizeof(cl_uint), NULL);
  cl_event e;
  CHECK(clEnqueueMigrateMemObjects(g_q, 2, objs, 0, 0, NULL, &e));
  CHECK(clEnqueueMigrateMemObjects(g_q, 1, &objs[1], CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 1, &e,
                                   NULL));
  CHECK(clEnqueueMigrateMemObjects(g_q, 1, objs, CL_MIGRATE_MEM_OBJECT_HOST, 0, NULL, NULL));
  CHECK(clWaitForEvents(1, &e));
  cl_command_type type = 0;
  CHECK(clGetEventInfo(e, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL));
  printf("migrate event type is MIGRATE_MEM_OBJECTS: %s\n",
         yes_no(type == CL_COMMAND_MIGRATE_MEM_OBJECTS));
  CHECK(clReleaseEvent(e));
  print_sum("after migrations", objs[0], N);
  cl_int err = clEnqueueMigrateMemObjects(g_q, 0, objs, 0, 0, NULL, NULL);
  err = and_finish(err, g_q);
  printf("migrate 0 objects + clFinish: %s\n", cl_err_name(err));
  EXPECT(err == CL_INVALID_VALUE, "migrate 0 objects");
  CHECK(clReleaseMemObject(objs[0]));
  CHECK(clReleaseMemObject(objs[1]));
  free(src);
}

/*
 * Large non-blocking writes in a row (each reusing a host array right after
 * it is enqueued, as the program may once the write is done with it: here
 * only after clFinish), then reads: remoted over shm such writes lend the
 * channel's shared heap, which must not be reused before the worker is done.
 */
static void large_transfers(void) {
  enum { kBuffers = 6, kWords = 1 << 18 }; /* 1 MiB each */
  cl_mem m[kBuffers];
  cl_uint *src[kBuffers];
  cl_uint *dst = malloc(kWords * sizeof(cl_uint));
  for (int i = 0; i < kBuffers; ++i) {
    m[i] = ocl_buffer(&g_env, CL_MEM_READ_WRITE, kWords * sizeof(cl_uint), NULL);
    src[i] = malloc(kWords * sizeof(cl_uint));
    fill_pattern(src[i], kWords, 100u + (cl_uint)i);
    CHECK(clEnqueueWriteBuffer(g_q, m[i], CL_FALSE, 0, kWords * sizeof(cl_uint), src[i], 0, NULL,
                               NULL));
  }
  CHECK(clFinish(g_q));
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < kBuffers; ++i) {
      CHECK(
          clEnqueueReadBuffer(g_q, m[i], CL_TRUE, 0, kWords * sizeof(cl_uint), dst, 0, NULL, NULL));
      EXPECT(memcmp(dst, src[i], kWords * sizeof(cl_uint)) == 0, "large buffer %d differs", i);
      if (round == 0) {
        /* Write it again from a changed host array, without waiting. */
        fill_pattern(src[i], kWords, 200u + (cl_uint)i);
        CHECK(clEnqueueWriteBuffer(g_q, m[i], CL_FALSE, 0, kWords * sizeof(cl_uint), src[i], 0,
                                   NULL, NULL));
      }
    }
    CHECK(clFinish(g_q));
  }
  printf("large non-blocking writes: last checksum %08x\n",
         checksum(dst, kWords * sizeof(cl_uint)));
  for (int i = 0; i < kBuffers; ++i) {
    CHECK(clReleaseMemObject(m[i]));
    free(src[i]);
  }
  free(dst);
}

/* An extension function looked up by name (cl_pocl_content_size), and an unknown name. */
static void extension_function(void) {
  typedef cl_int (*set_content_size_fn)(cl_mem, cl_mem);
  set_content_size_fn set = (set_content_size_fn)clGetExtensionFunctionAddressForPlatform(
      g_env.platform, "clSetContentSizeBufferPoCL");
  printf("clSetContentSizeBufferPoCL found: %s\n", yes_no(set != NULL));
  printf("unknown extension function found: %s\n",
         yes_no(clGetExtensionFunctionAddressForPlatform(g_env.platform, "clNoSuchFunctionAVA") !=
                NULL));
  if (set == NULL)
    return;
  cl_mem data = ocl_buffer(&g_env, CL_MEM_READ_WRITE, 256, NULL);
  cl_mem size = ocl_buffer(&g_env, CL_MEM_READ_WRITE, sizeof(cl_ulong), NULL);
  printf("set content size buffer: %s\n", cl_err_name(set(data, size)));
  CHECK(clReleaseMemObject(size));
  CHECK(clReleaseMemObject(data));
}

int main(void) {
  g_env = ocl_env_open();
  g_q = ocl_queue(&g_env, 0);
  creation();
  read_write();
  rect();
  copy_fill();
  sub_buffers();
  destructor_and_migrate();
  large_transfers();
  extension_function();
  CHECK(clReleaseCommandQueue(g_q));
  ocl_env_close(&g_env);
  return ocl_finish();
}
