/* Large buffers, as a program uses them: created with each kind of host
 * pointer flags (and their sub-buffers and an image over one), written and
 * read whole and at odd offsets, in queue order behind kernels and behind a
 * user event another thread sets later, non-blocking on an idle queue and
 * behind an unset user event, mapped blocking and not, created and released
 * over and over. Under ava on a channel with a shared
 * heap these buffers live in the heap (specs/opencl/opencl_heap.spec.inc);
 * the output must be the native one all the same.
 *
 * HEAP_BUFFERS_EXPECT=yes|no (set by test_e2e_opencl_maps, never natively):
 * whether the buffers' mappings must lie in ava's shared heap (a memfd named
 * "ava-shm" in /proc/self/maps); it changes no output. */
#include <pthread.h>

#include "common.h"

enum { MIB = 1 << 20 };

static OclEnv g_env;
static cl_command_queue g_q;
static cl_kernel g_add;

static const char *kSource = "__kernel void add(__global uint *p, uint v) {\n"
                             "  p[get_global_id(0)] += v;\n"
                             "}\n";

static void add_all(cl_mem m, size_t words, cl_uint v) {
  CHECK(clSetKernelArg(g_add, 0, sizeof m, &m));
  CHECK(clSetKernelArg(g_add, 1, sizeof v, &v));
  CHECK(clEnqueueNDRangeKernel(g_q, g_add, 1, NULL, &words, NULL, 0, NULL, NULL));
}

static cl_uint pattern(size_t i, cl_uint seed) {
  return seed * 0x9e3779b9u ^ (cl_uint)i * 2246822519u;
}

static int in_heap(const void *p) {
  return ocl_in_mapping_named(p, "ava-shm");
}

static void check_placement(const void *p, const char *what) {
  const char *expect = getenv("HEAP_BUFFERS_EXPECT");
  if (expect == NULL || *expect == '\0')
    return;
  const int want = strcmp(expect, "yes") == 0;
  EXPECT(in_heap(p) == want, "%s: mapping %s ava's shared heap (HEAP_BUFFERS_EXPECT=%s)", what,
         in_heap(p) ? "in" : "not in", expect);
}

static void print_mem(const char *what, cl_mem m) {
  cl_mem_flags flags = 0;
  void *host = (void *)1;
  size_t size = 0;
  CHECK(clGetMemObjectInfo(m, CL_MEM_FLAGS, sizeof flags, &flags, NULL));
  CHECK(clGetMemObjectInfo(m, CL_MEM_HOST_PTR, sizeof host, &host, NULL));
  CHECK(clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL));
  printf("%s: flags 0x%llx host_ptr %s size %zu\n", what, (unsigned long long)flags,
         host == NULL ? "NULL" : "set", size);
}

/* What the program asked for is what it is told, for each kind of flags. */
static void flags(void) {
  static const cl_mem_flags kFlags[] = {
      0,
      CL_MEM_READ_ONLY,
      CL_MEM_COPY_HOST_PTR,
      CL_MEM_ALLOC_HOST_PTR,
      CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR,
      CL_MEM_WRITE_ONLY | CL_MEM_HOST_READ_ONLY,
  };
  cl_uint *src = malloc(MIB);
  EXPECT(src != NULL, "memory");
  for (size_t i = 0; i < MIB / 4; ++i)
    src[i] = pattern(i, 1);
  for (size_t k = 0; k < sizeof kFlags / sizeof kFlags[0]; ++k) {
    const cl_mem_flags f = kFlags[k];
    cl_mem m = ocl_buffer(&g_env, f, MIB, (f & CL_MEM_COPY_HOST_PTR) ? src : NULL);
    char what[64];
    snprintf(what, sizeof what, "buffer 0x%llx", (unsigned long long)f);
    print_mem(what, m);
    cl_buffer_region r = {64 * 1024, 256 * 1024};
    cl_int err;
    cl_mem sub = clCreateSubBuffer(m, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    CHECK_ERR(err, "clCreateSubBuffer");
    snprintf(what, sizeof what, "  its sub-buffer");
    print_mem(what, sub);
    if (f & CL_MEM_COPY_HOST_PTR) {
      cl_uint *back = malloc(r.size);
      EXPECT(back != NULL, "memory");
      CHECK(clEnqueueReadBuffer(g_q, sub, CL_TRUE, 0, r.size, back, 0, NULL, NULL));
      EXPECT(memcmp(back, (char *)src + r.origin, r.size) == 0, "copied bytes of 0x%llx",
             (unsigned long long)f);
      free(back);
    }
    CHECK(clReleaseMemObject(sub));
    if (k == 0) {
      cl_image_format fmt = {CL_RGBA, CL_UNSIGNED_INT32};
      cl_image_desc desc = {0};
      desc.image_type = CL_MEM_OBJECT_IMAGE1D_BUFFER;
      desc.image_width = MIB / 16;
      desc.mem_object = m;
      cl_mem image = clCreateImage(g_env.context, 0, &fmt, &desc, NULL, &err);
      printf("  an image over it: %s\n", cl_err_name(err));
      if (image != NULL) {
        print_mem("  its image", image);
        CHECK(clReleaseMemObject(image));
      }
    }
    CHECK(clReleaseMemObject(m));
  }
  free(src);
}

/* Blocking transfers in queue order, whole and at odd offsets. */
static void transfers(void) {
  const size_t bytes = 4 * MIB, words = bytes / 4;
  cl_uint *src = malloc(bytes), *out = malloc(bytes);
  EXPECT(src != NULL && out != NULL, "memory");
  for (size_t i = 0; i < words; ++i)
    src[i] = pattern(i, 2);
  cl_mem m = ocl_buffer(&g_env, 0, bytes, NULL);
  cl_event ev;
  CHECK(clEnqueueWriteBuffer(g_q, m, CL_TRUE, 0, bytes, src, 0, NULL, &ev));
  cl_command_type type = 0;
  cl_int status = 1;
  CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL));
  CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
  printf("blocking write: event type 0x%x status %d\n", (unsigned)type, (int)status);
  CHECK(clReleaseEvent(ev));
  add_all(m, words, 5); /* not waited for: the read is behind it in the queue */
  CHECK(clEnqueueReadBuffer(g_q, m, CL_TRUE, 0, bytes, out, 0, NULL, NULL));
  size_t wrong = 0;
  for (size_t i = 0; i < words; ++i)
    wrong += out[i] != src[i] + 5;
  printf("read behind a kernel: %zu wrong\n", wrong);
  /* An odd offset and size, both ways. */
  const size_t off = MIB + 12, len = MIB + 36;
  CHECK(clEnqueueWriteBuffer(g_q, m, CL_TRUE, off, len, (char *)src + 8, 0, NULL, NULL));
  memset(out, 0, bytes);
  CHECK(clEnqueueReadBuffer(g_q, m, CL_TRUE, off - 4, len + 8, out, 0, NULL, NULL));
  int same = memcmp((char *)out + 4, (char *)src + 8, len) == 0;
  printf("odd offset: %s, bytes around it %s\n", yes_no(same),
         yes_no(out[0] == src[(off - 4) / 4] + 5));
  CHECK(clReleaseMemObject(m));
  free(src);
  free(out);
}

struct Later {
  cl_event event;
  cl_int status;
};

static void *set_later(void *arg) {
  struct Later *l = arg;
  sleep_ms(50);
  clSetUserEventStatus(l->event, l->status);
  return NULL;
}

/* A blocking transfer whose wait list holds a user event another thread sets
 * later: the call waits for it. (Behind a failed event PoCL 3.1's blocking
 * write never returns natively, so that case is not run.) */
static void user_events(void) {
  const size_t bytes = 2 * MIB, words = bytes / 4;
  cl_uint *src = malloc(bytes), *out = malloc(bytes);
  EXPECT(src != NULL && out != NULL, "memory");
  for (size_t i = 0; i < words; ++i)
    src[i] = pattern(i, 3);
  cl_mem m = ocl_buffer(&g_env, 0, bytes, NULL);
  cl_int err;
  struct Later later = {clCreateUserEvent(g_env.context, &err), CL_COMPLETE};
  CHECK_ERR(err, "clCreateUserEvent");
  pthread_t t;
  EXPECT(pthread_create(&t, NULL, set_later, &later) == 0, "thread");
  err = clEnqueueWriteBuffer(g_q, m, CL_TRUE, 0, bytes, src, 1, &later.event, NULL);
  pthread_join(t, NULL);
  CHECK(clEnqueueReadBuffer(g_q, m, CL_TRUE, 0, bytes, out, 0, NULL, NULL));
  printf("write behind a user event set later: %s, bytes %s\n", cl_err_name(err),
         yes_no(memcmp(out, src, bytes) == 0));
  CHECK(clReleaseEvent(later.event));

  CHECK(clReleaseMemObject(m));
  free(src);
  free(out);
}

/* Non-blocking transfers: on an idle queue, and behind a user event set
 * later (the call returns at once, the bytes move when it is set); a read's
 * bytes are those of its place in the queue, not those of a kernel queued
 * after it. */
static void non_blocking(void) {
  const size_t bytes = 2 * MIB, words = bytes / 4;
  cl_uint *src = malloc(bytes), *out = malloc(bytes), *out2 = malloc(bytes);
  EXPECT(src != NULL && out != NULL && out2 != NULL, "memory");
  for (size_t i = 0; i < words; ++i)
    src[i] = pattern(i, 5);
  cl_mem m = ocl_buffer(&g_env, 0, bytes, NULL);
  cl_event w, r;
  CHECK(clEnqueueWriteBuffer(g_q, m, CL_FALSE, 0, bytes, src, 0, NULL, &w));
  CHECK(clEnqueueReadBuffer(g_q, m, CL_FALSE, 0, bytes, out, 0, NULL, &r));
  add_all(m, words, 9);
  CHECK(clFinish(g_q));
  cl_command_type tw = 0, tr = 0;
  CHECK(clGetEventInfo(w, CL_EVENT_COMMAND_TYPE, sizeof tw, &tw, NULL));
  CHECK(clGetEventInfo(r, CL_EVENT_COMMAND_TYPE, sizeof tr, &tr, NULL));
  printf("non-blocking on an idle queue: events 0x%x 0x%x, read before the kernel %s\n",
         (unsigned)tw, (unsigned)tr, yes_no(memcmp(out, src, bytes) == 0));
  CHECK(clReleaseEvent(w));
  CHECK(clReleaseEvent(r));
  cl_int err;
  cl_event gate = clCreateUserEvent(g_env.context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  for (size_t i = 0; i < words; ++i)
    out2[i] = pattern(i, 6);
  CHECK(clEnqueueWriteBuffer(g_q, m, CL_FALSE, 0, bytes, out2, 1, &gate, &w));
  memset(out, 0, bytes);
  CHECK(clEnqueueReadBuffer(g_q, m, CL_FALSE, 0, bytes, out, 0, NULL, &r));
  cl_int status = 0;
  CHECK(clGetEventInfo(r, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
  printf("behind an unset event: read %s\n", status == CL_COMPLETE ? "complete" : "not complete");
  CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &r));
  printf("once it is set the read has the write's bytes: %s\n",
         yes_no(memcmp(out, out2, bytes) == 0));
  CHECK(clReleaseEvent(w));
  CHECK(clReleaseEvent(r));
  CHECK(clReleaseEvent(gate));
  CHECK(clReleaseMemObject(m));
  free(src);
  free(out);
  free(out2);
}

/* Maps: blocking and not, behind a user event, overlapping. */
static void maps(void) {
  const size_t bytes = 4 * MIB, words = bytes / 4, off = 64 * 1024, len = MIB;
  cl_mem m = ocl_buffer(&g_env, 0, bytes, NULL);
  cl_int err;
  cl_uint *w = clEnqueueMapBuffer(g_q, m, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, bytes, 0,
                                  NULL, NULL, &err);
  CHECK_ERR(err, "clEnqueueMapBuffer");
  check_placement(w, "a blocking map");
  for (size_t i = 0; i < words; ++i)
    w[i] = pattern(i, 4);
  CHECK(clEnqueueUnmapMemObject(g_q, m, w, 0, NULL, NULL));
  add_all(m, words, 3);
  cl_event gate = clCreateUserEvent(g_env.context, &err), mapped;
  CHECK_ERR(err, "clCreateUserEvent");
  cl_uint *r = clEnqueueMapBuffer(g_q, m, CL_FALSE, CL_MAP_READ, off, len, 1, &gate, &mapped, &err);
  CHECK_ERR(err, "non-blocking clEnqueueMapBuffer");
  cl_int status = 0;
  CHECK(clGetEventInfo(mapped, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
  printf("non-blocking map behind an unset event: %s\n",
         status == CL_COMPLETE ? "complete" : "not complete");
  CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &mapped));
  check_placement(r, "a non-blocking map");
  size_t wrong = 0;
  for (size_t i = 0; i < len / 4; ++i)
    wrong += r[i] != pattern(off / 4 + i, 4) + 3;
  printf("mapped bytes after the kernel: %zu wrong\n", wrong);
  cl_uint *r2 = clEnqueueMapBuffer(g_q, m, CL_TRUE, CL_MAP_READ, off + 4096, 4096, 0, NULL, NULL,
                                   &err);
  CHECK_ERR(err, "overlapping clEnqueueMapBuffer");
  printf("overlapping maps agree: %s\n", yes_no(memcmp(r2, r + 1024, 4096) == 0));
  CHECK(clEnqueueUnmapMemObject(g_q, m, r2, 0, NULL, NULL));
  CHECK(clEnqueueUnmapMemObject(g_q, m, r, 0, NULL, NULL));
  printf("unmap of a pointer not mapped: %s\n",
         cl_err_name(clEnqueueUnmapMemObject(g_q, m, r, 0, NULL, NULL)));
  CHECK(clFinish(g_q));
  CHECK(clReleaseEvent(mapped));
  CHECK(clReleaseEvent(gate));
  CHECK(clReleaseMemObject(m));
}

/* Made and released over and over: the memory of each must come back. */
static void churn(void) {
  const size_t bytes = 6 * MIB;
  cl_uint *src = malloc(bytes);
  EXPECT(src != NULL, "memory");
  size_t bad = 0;
  for (cl_uint round = 0; round < 12; ++round) {
    for (size_t i = 0; i < bytes / 4; ++i)
      src[i] = pattern(i, round);
    cl_mem m = ocl_buffer(&g_env, CL_MEM_COPY_HOST_PTR, bytes, src);
    cl_int err;
    cl_uint *p = clEnqueueMapBuffer(g_q, m, CL_TRUE, CL_MAP_READ, 0, bytes, 0, NULL, NULL, &err);
    CHECK_ERR(err, "clEnqueueMapBuffer");
    check_placement(p, "a buffer made after others were released");
    bad += memcmp(p, src, bytes) != 0;
    CHECK(clEnqueueUnmapMemObject(g_q, m, p, 0, NULL, NULL));
    CHECK(clFinish(g_q));
    CHECK(clReleaseMemObject(m));
  }
  printf("12 buffers made and released: %zu wrong\n", bad);
  free(src);
}

int main(void) {
  g_env = ocl_env_open();
  g_q = ocl_queue(&g_env, 0);
  cl_program p = ocl_build(&g_env, kSource, NULL);
  g_add = ocl_kernel(p, "add");
  flags();
  transfers();
  user_events();
  non_blocking();
  maps();
  churn();
  CHECK(clReleaseKernel(g_add));
  CHECK(clReleaseProgram(p));
  CHECK(clReleaseCommandQueue(g_q));
  ocl_env_close(&g_env);
  return ocl_finish();
}
