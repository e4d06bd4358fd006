/* SPDX-License-Identifier: MIT */
/* Non-blocking transfers never block. Each case enqueues a non-blocking
 * read, write or map whose dependencies (user events, a marker, a kernel on
 * another queue) the program releases only after the enqueue call has
 * returned, then sees it complete one way (clWaitForEvents, clFinish, an event
 * callback, polling the status) and checks every byte that lands in its own
 * memory, and that the bytes it must not touch keep their sentinel.
 * Remoted, a worker that ran such a command blocking would wait for a user
 * event that the program can set only later, forever: a watchdog turns that
 * hang into a failure that names the case. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include "common.h"

enum { MiB = 1 << 20, SENTINEL = 0xA5, WATCHDOG_S = 20, CALLBACK_WAIT_S = 10 };

static OclEnv g_env;
static cl_command_queue g_q;
static cl_program g_prog;
static cl_kernel g_kernel;

static const char kSource[] = "__kernel void three_i_plus_1(__global uint *p) {\n"
                              "  uint i = get_global_id(0);\n"
                              "  p[i] = i * 3u + 1u;\n"
                              "}\n";

/* --- watchdog: a call that blocks fails the program instead of hanging it --- */

static const char *volatile g_case = "";

static void write_str(int fd, const char *s) {
  size_t n = 0;
  while (s[n] != '\0') /* strlen is not on every async-signal-safe list */
    ++n;
  ssize_t r = write(fd, s, n);
  (void)r;
}

static void on_alarm(int sig) {
  (void)sig;
  for (int fd = 1; fd <= 2; ++fd) {
    write_str(fd, "HANG in case ");
    write_str(fd, g_case);
    write_str(fd, "\n");
  }
  _exit(3);
}

/* --- helpers --- */

static void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (p == NULL) {
    fprintf(stderr, "out of memory (%zu bytes)\n", n);
    exit(2);
  }
  return p;
}

/* Position-dependent bytes, different per seed, so that a misplaced or
 * stale block shows. */
static unsigned char pattern_byte(size_t i, unsigned seed) {
  return (unsigned char)((i + (i >> 8) * 7u + (i >> 16) * 13u) * 131u + seed * 29u);
}

static unsigned char *pattern(size_t n, unsigned seed) {
  unsigned char *p = xmalloc(n);
  for (size_t i = 0; i < n; ++i)
    p[i] = pattern_byte(i, seed);
  return p;
}

static unsigned char *sentinel_filled(size_t n) {
  unsigned char *p = xmalloc(n);
  memset(p, SENTINEL, n);
  return p;
}

/* A buffer holding `data`, written blocking. */
static cl_mem buffer_with(const void *data, size_t size) {
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE, size, NULL);
  CHECK(clEnqueueWriteBuffer(g_q, m, CL_TRUE, 0, size, data, 0, NULL, NULL));
  return m;
}

static int untouched(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != SENTINEL)
      return 0;
  return 1;
}

static cl_event user_event(void) {
  cl_int err;
  cl_event e = clCreateUserEvent(g_env.context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  return e;
}

static cl_int status_of(cl_event e) {
  cl_int s = 0;
  CHECK(clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL));
  return s;
}

static const char *type_name(cl_command_type t) {
  switch (t) {
  case CL_COMMAND_READ_BUFFER:
    return "READ_BUFFER";
  case CL_COMMAND_WRITE_BUFFER:
    return "WRITE_BUFFER";
  case CL_COMMAND_READ_BUFFER_RECT:
    return "READ_BUFFER_RECT";
  case CL_COMMAND_READ_IMAGE:
    return "READ_IMAGE";
  case CL_COMMAND_MAP_BUFFER:
    return "MAP_BUFFER";
  case CL_COMMAND_UNMAP_MEM_OBJECT:
    return "UNMAP_MEM_OBJECT";
  case CL_COMMAND_MARKER:
    return "MARKER";
  case CL_COMMAND_NDRANGE_KERNEL:
    return "NDRANGE_KERNEL";
  case CL_COMMAND_USER:
    return "USER";
  case CL_COMMAND_SVM_MAP:
    return "SVM_MAP";
  case CL_COMMAND_SVM_UNMAP:
    return "SVM_UNMAP";
  default:
    return "other";
  }
}

/* Queried while the command's dependencies are unreleased: it cannot have
 * run. QUEUED or SUBMITTED may depend on timing, so both print "pending". */
static const char *pending(const char *name, const char *what, cl_event e) {
  const cl_int s = status_of(e);
  EXPECT(s > CL_COMPLETE, "%s: %s has status %d before its dependencies were set", name, what, s);
  return s > CL_COMPLETE ? "pending" : s == CL_COMPLETE ? "complete" : "failed";
}

/* After completion was observed: the event says CL_COMPLETE and its type. */
static void describe_done(const char *name, const char *what, cl_event e, cl_command_type want) {
  cl_command_type type = 0;
  CHECK(clGetEventInfo(e, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL));
  const cl_int s = status_of(e);
  printf("%s: %s: status %d, type %s\n", name, what, s, type_name(type));
  EXPECT(s == CL_COMPLETE && type == want, "%s: %s: status %d type %#x, want COMPLETE %#x", name,
         what, s, (unsigned)type, (unsigned)want);
}

/* Every byte compared; the checksum and a few bytes make the line. */
static void report_data(const char *name, const unsigned char *got, const unsigned char *want,
                        size_t n) {
  size_t wrong = 0, first = n;
  for (size_t i = 0; i < n; ++i)
    if (got[i] != want[i] && wrong++ == 0)
      first = i;
  printf("%s: data: wrong bytes %zu of %zu, checksum %08x, [0] %u [%zu] %u [%zu] %u\n", name, wrong,
         n, checksum(got, n), got[0], n / 2, got[n / 2], n - 1, got[n - 1]);
  EXPECT(wrong == 0, "%s: %zu wrong bytes, first at %zu: %u, want %u", name, wrong, first,
         first < n ? got[first] : 0u, first < n ? want[first] : 0u);
}

/* --- cases --- */

static void read_after_two_user_events(const char *name) {
  const size_t size = 4 * MiB;
  unsigned char *want = pattern(size, 1), *host = sentinel_filled(size);
  cl_mem m = buffer_with(want, size);
  cl_event users[2] = {user_event(), user_event()}, read;
  CHECK(clEnqueueReadBuffer(g_q, m, CL_FALSE, 0, size, host, 2, users, &read));
  CHECK(clFlush(g_q));
  /* Getting here is the point. The read cannot have run, so looking at the
   * host memory is no race. */
  printf("%s: enqueue returned, read %s, host untouched %s\n", name, pending(name, "read", read),
         yes_no(untouched(host, size)));
  EXPECT(untouched(host, size), "%s: host memory written before the read could run", name);
  CHECK(clSetUserEventStatus(users[0], CL_COMPLETE));
  printf("%s: first user event set, read %s\n", name, pending(name, "read", read));
  CHECK(clSetUserEventStatus(users[1], CL_COMPLETE));
  CHECK(clWaitForEvents(1, &read));
  describe_done(name, "read", read, CL_COMMAND_READ_BUFFER);
  report_data(name, host, want, size);
  CHECK(clReleaseEvent(read));
  CHECK(clReleaseEvent(users[0]));
  CHECK(clReleaseEvent(users[1]));
  CHECK(clReleaseMemObject(m));
  free(host);
  free(want);
}

static void write_then_read_behind_user_event(const char *name) {
  const size_t size = MiB;
  unsigned char *src = pattern(size, 2), *host = sentinel_filled(size);
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE, size, NULL);
  cl_event u = user_event(), write, read;
  /* src stays as it is until the write completes, as OpenCL requires. */
  CHECK(clEnqueueWriteBuffer(g_q, m, CL_FALSE, 0, size, src, 1, &u, &write));
  /* No wait list: the in-order queue runs the read after the write. */
  CHECK(clEnqueueReadBuffer(g_q, m, CL_FALSE, 0, size, host, 0, NULL, &read));
  CHECK(clFlush(g_q));
  const char *ws = pending(name, "write", write);
  const char *rs = pending(name, "read", read);
  printf("%s: both enqueues returned, write %s, read %s\n", name, ws, rs);
  CHECK(clSetUserEventStatus(u, CL_COMPLETE));
  CHECK(clFinish(g_q));
  describe_done(name, "write", write, CL_COMMAND_WRITE_BUFFER);
  describe_done(name, "read", read, CL_COMMAND_READ_BUFFER);
  report_data(name, host, src, size);
  CHECK(clReleaseEvent(read));
  CHECK(clReleaseEvent(write));
  CHECK(clReleaseEvent(u));
  CHECK(clReleaseMemObject(m));
  free(host);
  free(src);
}

static void read_behind_marker(const char *name) {
  const size_t size = MiB;
  unsigned char *want = pattern(size, 3), *host = sentinel_filled(size);
  cl_mem m = buffer_with(want, size);
  cl_event u = user_event(), marker, read;
  CHECK(clEnqueueMarkerWithWaitList(g_q, 1, &u, &marker));
  CHECK(clEnqueueReadBuffer(g_q, m, CL_FALSE, 0, size, host, 1, &marker, &read));
  CHECK(clFlush(g_q));
  const char *ms = pending(name, "marker", marker);
  const char *rs = pending(name, "read", read);
  printf("%s: enqueue returned, marker %s, read %s\n", name, ms, rs);
  CHECK(clSetUserEventStatus(u, CL_COMPLETE));
  CHECK(clFinish(g_q));
  describe_done(name, "marker", marker, CL_COMMAND_MARKER);
  describe_done(name, "read", read, CL_COMMAND_READ_BUFFER);
  report_data(name, host, want, size);
  CHECK(clReleaseEvent(read));
  CHECK(clReleaseEvent(marker));
  CHECK(clReleaseEvent(u));
  CHECK(clReleaseMemObject(m));
  free(host);
  free(want);
}

static void read_waits_for_other_queue(const char *name) {
  enum { N = 256 * 1024 };
  const size_t size = N * sizeof(cl_uint);
  cl_command_queue q2 = ocl_queue(&g_env, 0);
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE, size, NULL);
  const cl_uint zero = 0;
  CHECK(clEnqueueFillBuffer(q2, m, &zero, sizeof zero, 0, size, 0, NULL, NULL));
  CHECK(clFinish(q2));
  cl_uint *host = (cl_uint *)sentinel_filled(size);
  cl_event u = user_event(), kernel, read;
  CHECK(clSetKernelArg(g_kernel, 0, sizeof m, &m));
  const size_t gws = N;
  CHECK(clEnqueueNDRangeKernel(q2, g_kernel, 1, NULL, &gws, NULL, 1, &u, &kernel));
  /* Another queue may wait on q2's event only once q2 is flushed (OpenCL
   * asks for it, else the wait may never end). */
  CHECK(clFlush(q2));
  CHECK(clEnqueueReadBuffer(g_q, m, CL_FALSE, 0, size, host, 1, &kernel, &read));
  CHECK(clFlush(g_q));
  const char *ks = pending(name, "kernel", kernel);
  const char *rs = pending(name, "read", read);
  printf("%s: enqueues returned, kernel on the second queue %s, read on the first %s\n", name, ks,
         rs);
  CHECK(clSetUserEventStatus(u, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &read));
  describe_done(name, "kernel", kernel, CL_COMMAND_NDRANGE_KERNEL);
  describe_done(name, "read", read, CL_COMMAND_READ_BUFFER);
  cl_command_queue kq = NULL, rq = NULL;
  CHECK(clGetEventInfo(kernel, CL_EVENT_COMMAND_QUEUE, sizeof kq, &kq, NULL));
  CHECK(clGetEventInfo(read, CL_EVENT_COMMAND_QUEUE, sizeof rq, &rq, NULL));
  size_t wrong = 0;
  for (size_t i = 0; i < N; ++i)
    wrong += host[i] != (cl_uint)(i * 3u + 1u);
  printf("%s: events' queues right %s, values wrong %zu of %d, [0] %u [1] %u [%d] %u, "
         "checksum %08x\n",
         name, yes_no(kq == q2 && rq == g_q), wrong, N, host[0], host[1], N - 1, host[N - 1],
         checksum(host, size));
  EXPECT(kq == q2 && rq == g_q, "%s: event queues", name);
  EXPECT(wrong == 0, "%s: %zu values are not i*3+1", name, wrong);
  CHECK(clReleaseEvent(read));
  CHECK(clReleaseEvent(kernel));
  CHECK(clReleaseEvent(u));
  CHECK(clReleaseMemObject(m));
  CHECK(clFinish(q2));
  CHECK(clReleaseCommandQueue(q2));
  free(host);
}

/* Filled in on the callback's thread; static, as a late callback may still
 * come after the main thread gave up waiting. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  cl_int status;
  uint32_t sum;
  const unsigned char *host;
  size_t size;
} g_cb = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, NULL, 0};

static void CL_CALLBACK on_read_complete(cl_event e, cl_int status, void *user) {
  (void)e;
  (void)user;
  /* Taken here, on the callback's thread: at CL_COMPLETE the data must
   * already be in host memory. */
  const uint32_t sum = checksum(g_cb.host, g_cb.size);
  pthread_mutex_lock(&g_cb.mu);
  g_cb.status = status;
  g_cb.sum = sum;
  g_cb.done = 1;
  pthread_cond_signal(&g_cb.cv);
  pthread_mutex_unlock(&g_cb.mu);
}

/* Whether the callback came within the bound; copies what it recorded. */
static int wait_for_callback(cl_int *status, uint32_t *sum) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += CALLBACK_WAIT_S;
  pthread_mutex_lock(&g_cb.mu);
  int rc = 0;
  while (!g_cb.done && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&g_cb.cv, &g_cb.mu, &deadline);
  const int done = g_cb.done;
  *status = g_cb.status;
  *sum = g_cb.sum;
  pthread_mutex_unlock(&g_cb.mu);
  return done;
}

static void read_completion_seen_in_callback(const char *name) {
  const size_t size = MiB;
  unsigned char *want = pattern(size, 5), *host = sentinel_filled(size);
  cl_mem m = buffer_with(want, size);
  g_cb.host = host;
  g_cb.size = size;
  cl_event u = user_event(), read;
  CHECK(clEnqueueReadBuffer(g_q, m, CL_FALSE, 0, size, host, 1, &u, &read));
  CHECK(clSetEventCallback(read, CL_COMPLETE, on_read_complete, NULL));
  CHECK(clFlush(g_q));
  printf("%s: enqueue returned, read %s\n", name, pending(name, "read", read));
  CHECK(clSetUserEventStatus(u, CL_COMPLETE));
  cl_int status = 0;
  uint32_t sum = 0;
  const int done = wait_for_callback(&status, &sum);
  const uint32_t want_sum = checksum(want, size);
  printf("%s: callback ran %s, status %d, checksum in the callback %08x, right %s\n", name,
         yes_no(done), status, sum, yes_no(done && sum == want_sum));
  EXPECT(done, "%s: no callback within %d s", name, CALLBACK_WAIT_S);
  if (!done)
    return; /* the memory stays: a late callback still reads it */
  EXPECT(status == CL_COMPLETE, "%s: callback status %d", name, status);
  EXPECT(sum == want_sum, "%s: callback saw checksum %08x, want %08x", name, sum, want_sum);
  CHECK(clWaitForEvents(1, &read));
  describe_done(name, "read", read, CL_COMMAND_READ_BUFFER);
  report_data(name, host, want, size);
  CHECK(clReleaseEvent(read));
  CHECK(clReleaseEvent(u));
  CHECK(clReleaseMemObject(m));
  free(host);
  free(want);
}

static void read_polled_with_get_event_info(const char *name) {
  const size_t size = MiB;
  unsigned char *want = pattern(size, 6), *host = sentinel_filled(size);
  cl_mem m = buffer_with(want, size);
  cl_event u = user_event(), read;
  CHECK(clEnqueueReadBuffer(g_q, m, CL_FALSE, 0, size, host, 1, &u, &read));
  /* Flushed, so that polling alone (no wait, no finish) sees it complete. */
  CHECK(clFlush(g_q));
  printf("%s: enqueue returned, read %s\n", name, pending(name, "read", read));
  CHECK(clSetUserEventStatus(u, CL_COMPLETE));
  cl_int s = CL_QUEUED;
  for (long polls = 0; polls < 10000000 && s > CL_COMPLETE; ++polls) {
    s = status_of(read);
    if (s > CL_COMPLETE)
      sched_yield();
  }
  /* Straight away, before any call that could wait: CL_COMPLETE means the
   * data is in host memory. */
  printf("%s: polled status %d\n", name, s);
  EXPECT(s == CL_COMPLETE, "%s: polled status %d", name, s);
  report_data(name, host, want, size);
  describe_done(name, "read", read, CL_COMMAND_READ_BUFFER);
  CHECK(clReleaseEvent(read));
  CHECK(clReleaseEvent(u));
  CHECK(clReleaseMemObject(m));
  free(host);
  free(want);
}

static void rect_read_nonblocking(const char *name) {
  /* Buffer: 4 slices of 32 rows of 256 bytes. Host: 3 slices of 26 rows of
   * 128 bytes. The 100x20x2 region lands at host (5, 3, 1): everything around
   * it, including host slice 0, is a gap that must keep its sentinel. */
  enum { B_ROW = 256, B_SLICE = B_ROW * 32, B_SIZE = B_SLICE * 4 };
  enum { H_ROW = 128, H_SLICE = H_ROW * 26, H_SIZE = H_SLICE * 3 };
  const size_t region[3] = {100, 20, 2}, b_origin[3] = {16, 8, 1}, h_origin[3] = {5, 3, 1};
  unsigned char *src = pattern(B_SIZE, 7), *host = sentinel_filled(H_SIZE);
  unsigned char *want = sentinel_filled(H_SIZE);
  for (size_t z = 0; z < region[2]; ++z)
    for (size_t y = 0; y < region[1]; ++y)
      memcpy(want + (h_origin[2] + z) * H_SLICE + (h_origin[1] + y) * H_ROW + h_origin[0],
             src + (b_origin[2] + z) * B_SLICE + (b_origin[1] + y) * B_ROW + b_origin[0],
             region[0]);
  cl_mem m = buffer_with(src, B_SIZE);
  cl_event u = user_event(), read;
  CHECK(clEnqueueReadBufferRect(g_q, m, CL_FALSE, b_origin, h_origin, region, B_ROW, B_SLICE, H_ROW,
                                H_SLICE, host, 1, &u, &read));
  CHECK(clFlush(g_q));
  printf("%s: enqueue returned, read %s\n", name, pending(name, "read", read));
  CHECK(clSetUserEventStatus(u, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &read));
  describe_done(name, "read", read, CL_COMMAND_READ_BUFFER_RECT);
  size_t gap = 0, gap_kept = 0;
  for (size_t i = 0; i < H_SIZE; ++i) {
    const size_t x = i % H_ROW, y = i % H_SLICE / H_ROW, z = i / H_SLICE;
    if (x < h_origin[0] || x >= h_origin[0] + region[0] || y < h_origin[1] ||
        y >= h_origin[1] + region[1] || z < h_origin[2] || z >= h_origin[2] + region[2]) {
      ++gap;
      gap_kept += host[i] == SENTINEL;
    }
  }
  const size_t first = h_origin[2] * H_SLICE + h_origin[1] * H_ROW + h_origin[0];
  const size_t last = first + (region[2] - 1) * H_SLICE + (region[1] - 1) * H_ROW + region[0] - 1;
  printf("%s: gap bytes kept %zu of %zu, region's first byte %u, last %u\n", name, gap_kept, gap,
         host[first], host[last]);
  EXPECT(gap_kept == gap, "%s: %zu gap bytes written", name, gap - gap_kept);
  report_data(name, host, want, H_SIZE);
  CHECK(clReleaseEvent(read));
  CHECK(clReleaseEvent(u));
  CHECK(clReleaseMemObject(m));
  free(want);
  free(host);
  free(src);
}

static void image_read_nonblocking(const char *name) {
  cl_bool images = CL_FALSE;
  CHECK(clGetDeviceInfo(g_env.device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, NULL));
  if (!images) {
    printf("%s: images: not supported\n", name);
    return;
  }
  /* A 64x32 RGBA8 image; a 40x20 pixel read at (8, 4) into host rows of 192
   * bytes, 32 more than the 160 a row needs: those keep the sentinel. */
  enum { W = 64, H = 32, PX = 4, ROW = W * PX, RW = 40, RH = 20, HROW = RW * PX + 32 };
  const size_t origin[3] = {8, 4, 0}, region[3] = {RW, RH, 1};
  const size_t size = HROW * RH;
  unsigned char *src = pattern(ROW * H, 8), *host = sentinel_filled(size);
  unsigned char *want = sentinel_filled(size);
  for (size_t y = 0; y < RH; ++y)
    memcpy(want + y * HROW, src + (origin[1] + y) * ROW + origin[0] * PX, RW * PX);
  const cl_image_format fmt = {CL_RGBA, CL_UNSIGNED_INT8};
  cl_image_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = W;
  desc.image_height = H;
  cl_int err;
  cl_mem img = clCreateImage(g_env.context, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
  CHECK_ERR(err, "clCreateImage");
  const size_t all[3] = {W, H, 1}, zero[3] = {0, 0, 0};
  CHECK(clEnqueueWriteImage(g_q, img, CL_TRUE, zero, all, ROW, 0, src, 0, NULL, NULL));
  cl_event u = user_event(), read;
  CHECK(clEnqueueReadImage(g_q, img, CL_FALSE, origin, region, HROW, 0, host, 1, &u, &read));
  CHECK(clFlush(g_q));
  printf("%s: images supported, enqueue returned, read %s\n", name, pending(name, "read", read));
  CHECK(clSetUserEventStatus(u, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &read));
  describe_done(name, "read", read, CL_COMMAND_READ_IMAGE);
  size_t gaps_kept = 0;
  for (size_t y = 0; y < RH; ++y)
    for (size_t x = RW * PX; x < HROW; ++x)
      gaps_kept += host[y * HROW + x] == SENTINEL;
  printf("%s: row gap bytes kept %zu of %d\n", name, gaps_kept, (HROW - RW * PX) * RH);
  EXPECT(gaps_kept == (size_t)(HROW - RW * PX) * RH, "%s: row gaps written", name);
  report_data(name, host, want, size);
  CHECK(clReleaseEvent(read));
  CHECK(clReleaseEvent(u));
  CHECK(clReleaseMemObject(img));
  free(want);
  free(host);
  free(src);
}

static void failed_dependency(const char *name) {
  /* A queue of its own: after a failed command the queue's state is up to
   * the implementation, and the other cases' queue must stay usable. */
  cl_command_queue qf = ocl_queue(&g_env, 0);
  const size_t size = MiB;
  unsigned char *src = pattern(size, 9), *host = sentinel_filled(size);
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE, size, NULL);
  CHECK(clEnqueueWriteBuffer(qf, m, CL_TRUE, 0, size, src, 0, NULL, NULL));
  cl_event u = user_event(), read;
  CHECK(clEnqueueReadBuffer(qf, m, CL_FALSE, 0, size, host, 1, &u, &read));
  CHECK(clFlush(qf));
  printf("%s: enqueue returned, read %s\n", name, pending(name, "read", read));
  CHECK(clSetUserEventStatus(u, -1234));
  const cl_int err = clWaitForEvents(1, &read);
  const cl_int us = status_of(u), rs = status_of(read);
  printf("%s: clWaitForEvents -> %d (%s), user event status %d, read status %d\n", name, err,
         cl_err_name(err), us, rs);
  EXPECT(err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, "%s: wait -> %s", name,
         cl_err_name(err));
  EXPECT(us == -1234 && rs < 0, "%s: statuses %d %d", name, us, rs);
  /* The read was terminated, so not one byte of host memory was written. */
  printf("%s: host untouched %s\n", name, yes_no(untouched(host, size)));
  EXPECT(untouched(host, size), "%s: a failed read wrote host memory", name);
  clFinish(qf); /* may report the failure; only its return matters */
  CHECK(clReleaseEvent(read));
  CHECK(clReleaseEvent(u));
  CHECK(clReleaseMemObject(m));
  CHECK(clReleaseCommandQueue(qf));
  free(host);
  free(src);
}

static void many_reads_in_flight(const char *name) {
  enum { SLICES = 16, SLICE = 256 * 1024, SIZE = SLICES * SLICE };
  unsigned char *src = pattern(SIZE, 10), *host = sentinel_filled(SIZE), *want = xmalloc(SIZE);
  cl_mem m = buffer_with(src, SIZE);
  cl_event u = user_event(), reads[SLICES];
  /* Slice i lands in host slot 5*i mod 16 (a permutation), so that each read
   * is seen to use its own destination. */
  for (size_t i = 0; i < SLICES; ++i) {
    const size_t slot = i * 5 % SLICES;
    memcpy(want + slot * SLICE, src + i * SLICE, SLICE);
    CHECK(clEnqueueReadBuffer(g_q, m, CL_FALSE, i * SLICE, SLICE, host + slot * SLICE, 1, &u,
                              &reads[i]));
  }
  CHECK(clFlush(g_q));
  int pending_reads = 0;
  for (size_t i = 0; i < SLICES; ++i)
    pending_reads += status_of(reads[i]) > CL_COMPLETE;
  printf("%s: %d enqueues returned, pending %d, host untouched %s\n", name, SLICES, pending_reads,
         yes_no(untouched(host, SIZE)));
  EXPECT(pending_reads == SLICES && untouched(host, SIZE), "%s: reads ran early", name);
  CHECK(clSetUserEventStatus(u, CL_COMPLETE));
  CHECK(clFinish(g_q));
  int complete = 0, right_slices = 0;
  for (size_t i = 0; i < SLICES; ++i) {
    complete += status_of(reads[i]) == CL_COMPLETE;
    const size_t slot = i * 5 % SLICES;
    right_slices += memcmp(host + slot * SLICE, src + i * SLICE, SLICE) == 0;
  }
  printf("%s: complete %d, slices right %d of %d\n", name, complete, right_slices, SLICES);
  EXPECT(complete == SLICES && right_slices == SLICES, "%s: slices", name);
  report_data(name, host, want, SIZE);
  for (size_t i = 0; i < SLICES; ++i)
    CHECK(clReleaseEvent(reads[i]));
  CHECK(clReleaseEvent(u));
  CHECK(clReleaseMemObject(m));
  free(want);
  free(host);
  free(src);
}

static void map_nonblocking(const char *name) {
  const size_t size = MiB;
  unsigned char *want = pattern(size, 11);
  cl_mem m = buffer_with(want, size);
  cl_event u = user_event(), map, unmap;
  cl_int err = CL_INVALID_VALUE;
  unsigned char *p = clEnqueueMapBuffer(g_q, m, CL_FALSE, CL_MAP_READ, 0, size, 1, &u, &map, &err);
  CHECK_ERR(err, "clEnqueueMapBuffer");
  CHECK(clFlush(g_q));
  /* The pointer comes at once; its contents only once the map completes. */
  printf("%s: enqueue returned, pointer %s, errcode %s, map %s\n", name,
         p != NULL ? "non-null" : "null", cl_err_name(err), pending(name, "map", map));
  EXPECT(p != NULL, "%s: no pointer", name);
  CHECK(clSetUserEventStatus(u, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &map));
  describe_done(name, "map", map, CL_COMMAND_MAP_BUFFER);
  if (p != NULL) {
    report_data(name, p, want, size);
    CHECK(clEnqueueUnmapMemObject(g_q, m, p, 0, NULL, &unmap));
    CHECK(clFinish(g_q));
    describe_done(name, "unmap", unmap, CL_COMMAND_UNMAP_MEM_OBJECT);
    CHECK(clReleaseEvent(unmap));
  }
  CHECK(clReleaseEvent(map));
  CHECK(clReleaseEvent(u));
  CHECK(clReleaseMemObject(m));
  free(want);
}

/* Unmaps never block either: one that writes back the program's bytes and
 * one of a read-only mapping, each behind a user event. */
static void unmap_behind_user_event(const char *name) {
  const size_t size = MiB;
  unsigned char *want = pattern(size, 12), *host = sentinel_filled(size);
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE, size, NULL);
  cl_int err = CL_INVALID_VALUE;
  unsigned char *p =
      clEnqueueMapBuffer(g_q, m, CL_TRUE, CL_MAP_WRITE, 0, size, 0, NULL, NULL, &err);
  CHECK_ERR(err, "clEnqueueMapBuffer");
  if (p == NULL) {
    clReleaseMemObject(m);
    free(want);
    free(host);
    return;
  }
  memcpy(p, want, size);
  cl_event u = user_event(), unmap;
  CHECK(clEnqueueUnmapMemObject(g_q, m, p, 1, &u, &unmap));
  CHECK(clFlush(g_q));
  printf("%s: write-back unmap returned, unmap %s\n", name, pending(name, "unmap", unmap));
  CHECK(clSetUserEventStatus(u, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &unmap));
  describe_done(name, "unmap", unmap, CL_COMMAND_UNMAP_MEM_OBJECT);
  CHECK(clEnqueueReadBuffer(g_q, m, CL_TRUE, 0, size, host, 0, NULL, NULL));
  report_data(name, host, want, size);
  CHECK(clReleaseEvent(unmap));
  CHECK(clReleaseEvent(u));

  p = clEnqueueMapBuffer(g_q, m, CL_TRUE, CL_MAP_READ, 0, size, 0, NULL, NULL, &err);
  CHECK_ERR(err, "clEnqueueMapBuffer");
  u = user_event();
  if (p != NULL) {
    CHECK(clEnqueueUnmapMemObject(g_q, m, p, 1, &u, &unmap));
    CHECK(clFlush(g_q));
    printf("%s: read-only unmap returned, unmap %s\n", name, pending(name, "unmap", unmap));
    CHECK(clSetUserEventStatus(u, CL_COMPLETE));
    CHECK(clWaitForEvents(1, &unmap));
    describe_done(name, "unmap", unmap, CL_COMMAND_UNMAP_MEM_OBJECT);
    CHECK(clReleaseEvent(unmap));
  }
  CHECK(clReleaseEvent(u));
  CHECK(clReleaseMemObject(m));
  free(want);
  free(host);
}

/* Coarse-grained SVM: a non-blocking map and an unmap that writes back,
 * each behind a user event. */
static void svm_map_and_unmap_behind_user_events(const char *name) {
  cl_device_svm_capabilities caps = 0;
  CHECK(clGetDeviceInfo(g_env.device, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps, NULL));
  if (!(caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)) {
    printf("%s: coarse-grained SVM not supported\n", name);
    return;
  }
  const size_t size = MiB;
  unsigned char *want = pattern(size, 13), *again = pattern(size, 14);
  unsigned char *svm = clSVMAlloc(g_env.context, CL_MEM_READ_WRITE, size, 0);
  EXPECT(svm != NULL, "%s: clSVMAlloc failed", name);
  if (svm == NULL) {
    free(want);
    free(again);
    return;
  }
  CHECK(clEnqueueSVMMap(g_q, CL_TRUE, CL_MAP_WRITE, svm, size, 0, NULL, NULL));
  memcpy(svm, want, size);
  CHECK(clEnqueueSVMUnmap(g_q, svm, 0, NULL, NULL));
  CHECK(clFinish(g_q));

  cl_event u = user_event(), map, unmap;
  CHECK(clEnqueueSVMMap(g_q, CL_FALSE, CL_MAP_READ | CL_MAP_WRITE, svm, size, 1, &u, &map));
  CHECK(clFlush(g_q));
  printf("%s: map returned, map %s\n", name, pending(name, "map", map));
  CHECK(clSetUserEventStatus(u, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &map));
  describe_done(name, "map", map, CL_COMMAND_SVM_MAP);
  report_data(name, svm, want, size);
  CHECK(clReleaseEvent(u));

  memcpy(svm, again, size);
  u = user_event();
  CHECK(clEnqueueSVMUnmap(g_q, svm, 1, &u, &unmap));
  CHECK(clFlush(g_q));
  printf("%s: unmap returned, unmap %s\n", name, pending(name, "unmap", unmap));
  CHECK(clSetUserEventStatus(u, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &unmap));
  describe_done(name, "unmap", unmap, CL_COMMAND_SVM_UNMAP);
  CHECK(clEnqueueSVMMap(g_q, CL_TRUE, CL_MAP_READ, svm, size, 0, NULL, NULL));
  report_data(name, svm, again, size);
  CHECK(clEnqueueSVMUnmap(g_q, svm, 0, NULL, NULL));
  CHECK(clFinish(g_q));
  CHECK(clReleaseEvent(map));
  CHECK(clReleaseEvent(unmap));
  CHECK(clReleaseEvent(u));
  clSVMFree(g_env.context, svm);
  free(want);
  free(again);
}

typedef void (*CaseFn)(const char *name);

#define CASE(f)                                                                                    \
  { #f, f }
static const struct {
  const char *name;
  CaseFn run;
} kCases[] = {
    CASE(read_after_two_user_events),
    CASE(write_then_read_behind_user_event),
    CASE(read_behind_marker),
    CASE(read_waits_for_other_queue),
    CASE(read_completion_seen_in_callback),
    CASE(read_polled_with_get_event_info),
    CASE(rect_read_nonblocking),
    CASE(image_read_nonblocking),
    CASE(failed_dependency),
    CASE(many_reads_in_flight),
    CASE(map_nonblocking),
    CASE(unmap_behind_user_event),
    CASE(svm_map_and_unmap_behind_user_events),
};
#undef CASE

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGALRM, &sa, NULL) != 0) {
    perror("sigaction");
    return 2;
  }
  g_env = ocl_env_open();
  g_q = ocl_queue(&g_env, 0);
  /* Built before the watchdog runs: a slow compile is no hang. */
  g_prog = ocl_build(&g_env, kSource, NULL);
  g_kernel = ocl_kernel(g_prog, "three_i_plus_1");
  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {
    fflush(stdout); /* what came before a hang is not lost in the buffer */
    g_case = kCases[i].name;
    alarm(WATCHDOG_S);
    kCases[i].run(kCases[i].name);
    alarm(0);
  }
  CHECK(clReleaseKernel(g_kernel));
  CHECK(clReleaseProgram(g_prog));
  CHECK(clReleaseCommandQueue(g_q));
  ocl_env_close(&g_env);
  return ocl_finish();
}
