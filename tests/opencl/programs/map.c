/* SPDX-License-Identifier: MIT */
/* Mapping: buffers (read, write, write-invalidate; blocking and not; with
 * offsets; host-pointer buffers), large mappings (several at once, many
 * rounds, a buffer released while mapped) and images (row pitch).
 *
 * MAP_EXPECT_SHARED_HEAP=yes|no (set by test_e2e_opencl_maps, never
 * natively): whether large blocking mappings must lie in ava's shared heap,
 * a memfd named "ava-shm" in /proc/self/maps; it changes no output. */
#include "common.h"

enum { N = 2048 };

static OclEnv g_env;
static cl_command_queue g_q;

static void fill_pattern(cl_uint *p, size_t n, cl_uint seed) {
  for (size_t i = 0; i < n; ++i)
    p[i] = seed * 0x9e3779b9u ^ (cl_uint)i * 2246822519u;
}

static cl_command_type command_type(cl_event ev) {
  cl_command_type type = 0;
  CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL));
  return type;
}

static void read_back_n(cl_mem m, cl_uint *out, size_t n) {
  CHECK(clEnqueueReadBuffer(g_q, m, CL_TRUE, 0, n * sizeof(cl_uint), out, 0, NULL, NULL));
}

static void read_back(cl_mem m, cl_uint *out) {
  read_back_n(m, out, N);
}

static cl_uint *map(cl_mem m, cl_bool blocking, cl_map_flags flags, size_t offset, size_t size,
                    cl_event *ev) {
  cl_int err;
  cl_uint *p = clEnqueueMapBuffer(g_q, m, blocking, flags, offset, size, 0, NULL, ev, &err);
  CHECK_ERR(err, "clEnqueueMapBuffer");
  return p;
}

static void unmap(cl_mem m, void *p) {
  CHECK(clEnqueueUnmapMemObject(g_q, m, p, 0, NULL, NULL));
}

static void buffers(void) {
  static cl_uint src[N], out[N];
  fill_pattern(src, N, 1);
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof src, src);

  cl_uint *p = map(m, CL_TRUE, CL_MAP_READ, 0, sizeof src, NULL);
  printf("blocking map READ: checksum %s\n",
         checksum(p, sizeof src) == checksum(src, sizeof src) ? "matches" : "DIFFERS");
  EXPECT(checksum(p, sizeof src) == checksum(src, sizeof src), "map READ contents");
  unmap(m, p);

  p = map(m, CL_TRUE, CL_MAP_WRITE, 0, sizeof src, NULL);
  for (int i = 0; i < N; i += 2)
    p[i] = (cl_uint)i;
  unmap(m, p);
  read_back(m, out);
  printf("blocking map WRITE (even elements): checksum %08x, [2]=%u [3]=%s\n",
         checksum(out, sizeof out), out[2], yes_no(out[3] == src[3]));
  EXPECT(out[2] == 2 && out[3] == src[3] && out[N - 2] == N - 2, "map WRITE lost writes");

  /* A region with an offset: the pointer addresses the region's first byte. */
  const size_t off = 100 * sizeof(cl_uint), len = 50 * sizeof(cl_uint);
  p = map(m, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, off, len, NULL);
  for (int i = 0; i < 50; ++i)
    p[i] = 0xc0de0000u + (cl_uint)i;
  unmap(m, p);
  read_back(m, out);
  printf("map WRITE_INVALIDATE_REGION at 100..149: [99] kept %s, [100]=%08x [149]=%08x, [150] "
         "kept %s\n",
         yes_no(out[99] == src[99]), out[100], out[149], yes_no(out[150] == 150));
  EXPECT(out[99] == src[99] && out[100] == 0xc0de0000u && out[149] == 0xc0de0031u &&
             out[150] == 150,
         "invalidate-region map misplaced");

  /* Non-blocking: the pointer's contents are valid once the event completes. */
  cl_event ev;
  p = map(m, CL_FALSE, CL_MAP_READ, off, len, &ev);
  CHECK(clWaitForEvents(1, &ev));
  cl_command_type type = 0;
  CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL));
  printf("non-blocking map READ + wait: [0]=%08x [49]=%08x, command MAP_BUFFER %s\n", p[0], p[49],
         yes_no(type == CL_COMMAND_MAP_BUFFER));
  EXPECT(p[0] == 0xc0de0000u && p[49] == 0xc0de0031u, "non-blocking map contents");
  CHECK(clReleaseEvent(ev));
  cl_event unmap_ev;
  CHECK(clEnqueueUnmapMemObject(g_q, m, p, 0, NULL, &unmap_ev));
  CHECK(clWaitForEvents(1, &unmap_ev));
  CHECK(clGetEventInfo(unmap_ev, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL));
  printf("unmap command UNMAP_MEM_OBJECT: %s\n", yes_no(type == CL_COMMAND_UNMAP_MEM_OBJECT));
  CHECK(clReleaseEvent(unmap_ev));

  /* Non-blocking write map, modified after the wait, unmapped, finished. */
  p = map(m, CL_FALSE, CL_MAP_WRITE, 0, 16 * sizeof(cl_uint), &ev);
  CHECK(clWaitForEvents(1, &ev));
  CHECK(clReleaseEvent(ev));
  for (int i = 0; i < 16; ++i)
    p[i] = 7000u + (cl_uint)i;
  unmap(m, p);
  CHECK(clFinish(g_q));
  read_back(m, out);
  printf("non-blocking map WRITE + wait: [0]=%u [15]=%u [16] kept %s\n", out[0], out[15],
         yes_no(out[16] == 16));
  EXPECT(out[0] == 7000 && out[15] == 7015 && out[16] == 16, "non-blocking write map");

  /* Two regions mapped at once. */
  cl_uint *a = map(m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, 64, NULL);
  cl_uint *b = map(m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 1024, 64, NULL);
  a[1] = 111;
  b[1] = 222;
  unmap(m, b);
  unmap(m, a);
  read_back(m, out);
  printf("two mapped regions: [1]=%u [257]=%u\n", out[1], out[257]);
  EXPECT(out[1] == 111 && out[257] == 222, "two maps");
  printf("final checksum %08x\n", checksum(out, sizeof out));
  CHECK(clReleaseMemObject(m));
}

static void expect_placement(const void *p, const char *what) {
  const char *expect = getenv("MAP_EXPECT_SHARED_HEAP");
  if (expect == NULL || *expect == '\0')
    return;
  const int in_heap = ocl_in_mapping_named(p, "ava-shm");
  if (in_heap != (strcmp(expect, "yes") == 0))
    fprintf(stderr, "FAIL: %s: mapping %s ava's shared heap (MAP_EXPECT_SHARED_HEAP=%s)\n", what,
            in_heap ? "in" : "not in", expect);
  EXPECT(in_heap == (strcmp(expect, "yes") == 0), "mapping placement");
}

enum { BIG = 1 << 20, PARTS = 8, ROUNDS = 24 }; /* elements: 4 MiB */

/* Large mappings: beyond the size that goes through the heap (64 KiB). */
static void large_buffers(void) {
  cl_uint *src = malloc(BIG * sizeof(cl_uint)), *out = malloc(BIG * sizeof(cl_uint));
  EXPECT(src != NULL && out != NULL, "memory");
  fill_pattern(src, BIG, 3);
  const size_t bytes = BIG * sizeof(cl_uint);
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, src);

  cl_uint *p = map(m, CL_TRUE, CL_MAP_READ, 0, bytes, NULL);
  expect_placement(p, "4 MiB READ map");
  printf("large map READ 4 MiB: contents %s\n", memcmp(p, src, bytes) == 0 ? "match" : "DIFFER");
  EXPECT(memcmp(p, src, bytes) == 0, "large map READ contents");

  /* A WRITE map over a range the READ map also covers, at an odd offset. */
  const size_t off = BIG / 4 + 1, len = BIG / 2 + 3;
  cl_uint *w = map(m, CL_TRUE, CL_MAP_WRITE, off * sizeof(cl_uint), len * sizeof(cl_uint), NULL);
  expect_placement(w, "2 MiB WRITE map");
  int same = memcmp(w, src + off, len * sizeof(cl_uint)) == 0;
  for (size_t i = 0; i < len; i += 3)
    w[i] = 0xa0000000u + (cl_uint)i;
  unmap(m, w);
  unmap(m, p);
  read_back_n(m, out, BIG);
  int ok = 1;
  for (size_t i = 0; i < BIG; ++i) {
    const int written = i >= off && i < off + len && (i - off) % 3 == 0;
    ok &= out[i] == (written ? 0xa0000000u + (cl_uint)(i - off) : src[i]);
  }
  printf("large map WRITE (every third of 2 MiB at an odd offset): filled %s, after unmap %s\n",
         yes_no(same), ok ? "every element right" : "WRONG");
  EXPECT(same && ok, "large map WRITE");

  /* WRITE_INVALIDATE_REGION: only what the program writes counts. */
  cl_uint *inv =
      map(m, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, BIG / 8 * sizeof(cl_uint), NULL);
  for (size_t i = 0; i < BIG / 8; ++i)
    inv[i] = (cl_uint)(7 * i);
  unmap(m, inv);
  read_back_n(m, out, BIG);
  ok = 1;
  for (size_t i = 0; i < BIG / 8; ++i)
    ok &= out[i] == (cl_uint)(7 * i);
  printf("large map WRITE_INVALIDATE_REGION 512 KiB: %s, next kept %s\n", ok ? "right" : "WRONG",
         yes_no(out[BIG / 8] == src[BIG / 8]));
  EXPECT(ok && out[BIG / 8] == src[BIG / 8], "large invalidate map");

  /* PARTS mappings at once, unmapped in another order, round after round:
   * each round's blocks come back for the next. */
  const size_t part = BIG / PARTS;
  ok = 1;
  for (int r = 0; r < ROUNDS; ++r) {
    cl_uint *parts[PARTS];
    for (int k = 0; k < PARTS; ++k) {
      parts[k] = map(m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, k * part * sizeof(cl_uint),
                     part * sizeof(cl_uint), NULL);
      const cl_uint want = r == 0 ? out[k * part + 5] : (cl_uint)(r - 1) * 1000u + (cl_uint)k;
      ok &= parts[k][5] == want;
    }
    for (int k = 0; k < PARTS; ++k)
      for (size_t i = 0; i < part; i += 1024)
        parts[k][i + 5] = (cl_uint)r * 1000u + (cl_uint)k;
    for (int k = PARTS - 1; k >= 0; k -= 2)
      unmap(m, parts[k]);
    for (int k = 0; k < PARTS; k += 2)
      unmap(m, parts[k]);
  }
  read_back_n(m, out, BIG);
  for (size_t i = 5; i < BIG; i += 1024)
    ok &= out[i] == (cl_uint)(ROUNDS - 1) * 1000u + (cl_uint)(i / part);
  printf("%d rounds of %d large maps at once: %s\n", ROUNDS, PARTS, ok ? "right" : "WRONG");
  EXPECT(ok, "rounds of large maps");

  /* A non-blocking map unmapped before it is done (it waits for a user
   * event set only after both calls): the unmapped memory must not receive
   * the map's bytes later. */
  cl_int err;
  cl_event gate = clCreateUserEvent(g_env.context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  cl_event unmapped;
  p = clEnqueueMapBuffer(g_q, m, CL_FALSE, CL_MAP_READ, 0, bytes, 1, &gate, NULL, &err);
  CHECK_ERR(err, "clEnqueueMapBuffer(non-blocking, gated)");
  CHECK(clEnqueueUnmapMemObject(g_q, m, p, 0, NULL, &unmapped));
  cl_int status = 0;
  CHECK(clGetEventInfo(unmapped, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
  CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &unmapped));
  CHECK(clReleaseEvent(unmapped));
  CHECK(clReleaseEvent(gate));
  void *scratch[16];
  for (int i = 0; i < 16; ++i) {
    scratch[i] = malloc(bytes);
    EXPECT(scratch[i] != NULL, "memory");
    memset(scratch[i], 0x5a, bytes);
  }
  CHECK(clFinish(g_q));
  ok = 1;
  for (int i = 0; i < 16; ++i) {
    for (size_t b = 0; b < bytes; b += 4096)
      ok &= ((unsigned char *)scratch[i])[b] == 0x5a;
    free(scratch[i]);
  }
  printf("non-blocking map unmapped before done: unmap waited %s, memory left alone %s\n",
         yes_no(status != CL_COMPLETE), yes_no(ok));
  EXPECT(ok && status != CL_COMPLETE, "an unmapped mapping was written");

  /* Released while mapped: the mapping stays readable. */
  p = map(m, CL_TRUE, CL_MAP_READ, 0, bytes, NULL);
  CHECK(clReleaseMemObject(m));
  printf("released while mapped: checksum %08x\n", checksum(p, bytes));
  free(src);
  free(out);
}

static void host_ptr_buffers(void) {
  static cl_uint host[N], out[N];
  fill_pattern(host, N, 2);
  cl_mem m = ocl_buffer(&g_env, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, sizeof host, host);
  /* With USE_HOST_PTR the mapped pointer is derived from the host pointer. */
  const size_t off = 64 * sizeof(cl_uint);
  cl_uint *p = map(m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, off, 128 * sizeof(cl_uint), NULL);
  printf("USE_HOST_PTR map: pointer is host + offset: %s, [0]=%s\n", yes_no(p == host + 64),
         yes_no(p[0] == host[64]));
  EXPECT(p == host + 64, "USE_HOST_PTR map pointer");
  p[0] = 4242;
  unmap(m, p);
  read_back(m, out);
  printf("USE_HOST_PTR after unmap: [64]=%u, checksum %08x\n", out[64], checksum(out, sizeof out));
  EXPECT(out[64] == 4242, "USE_HOST_PTR write through map");
  CHECK(clReleaseMemObject(m));

  cl_mem alloc = ocl_buffer(&g_env, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, sizeof host, NULL);
  p = map(alloc, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, sizeof host, NULL);
  for (int i = 0; i < N; ++i)
    p[i] = (cl_uint)(N - i);
  unmap(alloc, p);
  read_back(alloc, out);
  printf("ALLOC_HOST_PTR map write: [0]=%u [%d]=%u\n", out[0], N - 1, out[N - 1]);
  EXPECT(out[0] == N && out[N - 1] == 1, "ALLOC_HOST_PTR map");
  CHECK(clReleaseMemObject(alloc));
}

static void images(void) {
  enum { W = 64, H = 32 };
  const cl_image_format fmt = {CL_RGBA, CL_UNORM_INT8};
  cl_image_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = W;
  desc.image_height = H;
  static unsigned char pixels[H][W][4];
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < 4; ++c)
        pixels[y][x][c] = (unsigned char)(x * 3 + y * 5 + c);
  cl_int err;
  cl_mem img = clCreateImage(g_env.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &fmt, &desc,
                             pixels, &err);
  CHECK_ERR(err, "clCreateImage");

  const size_t origin[3] = {4, 2, 0}, region[3] = {8, 4, 1};
  size_t row_pitch = 0, slice_pitch = 99;
  cl_event map_ev, unmap_ev;
  unsigned char *p = clEnqueueMapImage(g_q, img, CL_TRUE, CL_MAP_READ, origin, region, &row_pitch,
                                       &slice_pitch, 0, NULL, &map_ev, &err);
  CHECK_ERR(err, "clEnqueueMapImage(READ)");
  int ok = 1;
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 8; ++x)
      for (int c = 0; c < 4; ++c)
        ok &= p[y * row_pitch + x * 4 + c] == pixels[2 + y][4 + x][c];
  printf("map image READ (8x4 at 4,2): row pitch >= 32: %s, contents %s\n", yes_no(row_pitch >= 32),
         ok ? "match" : "DIFFER");
  EXPECT(ok && row_pitch >= 32, "image map read");
  CHECK(clEnqueueUnmapMemObject(g_q, img, p, 0, NULL, &unmap_ev));
  CHECK(clWaitForEvents(1, &unmap_ev));
  printf("map image READ commands: MAP_IMAGE %s, UNMAP_MEM_OBJECT %s\n",
         yes_no(command_type(map_ev) == CL_COMMAND_MAP_IMAGE),
         yes_no(command_type(unmap_ev) == CL_COMMAND_UNMAP_MEM_OBJECT));
  CHECK(clReleaseEvent(map_ev));
  CHECK(clReleaseEvent(unmap_ev));

  cl_event ev;
  p = clEnqueueMapImage(g_q, img, CL_FALSE, CL_MAP_WRITE, origin, region, &row_pitch, NULL, 0, NULL,
                        &ev, &err);
  CHECK_ERR(err, "clEnqueueMapImage(WRITE)");
  CHECK(clWaitForEvents(1, &ev));
  const int map_type_ok = command_type(ev) == CL_COMMAND_MAP_IMAGE;
  CHECK(clReleaseEvent(ev));
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 8; ++x)
      for (int c = 0; c < 4; ++c)
        p[y * row_pitch + x * 4 + c] = (unsigned char)(200 + y + c);
  CHECK(clEnqueueUnmapMemObject(g_q, img, p, 0, NULL, &unmap_ev));
  CHECK(clWaitForEvents(1, &unmap_ev));
  printf("non-blocking map image WRITE commands: MAP_IMAGE %s, UNMAP_MEM_OBJECT %s\n",
         yes_no(map_type_ok), yes_no(command_type(unmap_ev) == CL_COMMAND_UNMAP_MEM_OBJECT));
  CHECK(clReleaseEvent(unmap_ev));
  static unsigned char back[H][W][4];
  const size_t zero[3] = {0, 0, 0}, all[3] = {W, H, 1};
  CHECK(clEnqueueReadImage(g_q, img, CL_TRUE, zero, all, 0, 0, back, 0, NULL, NULL));
  printf("map image WRITE: (4,2)=%u,%u (11,5)=%u,%u (3,2)=%s (12,5)=%s checksum %08x\n",
         back[2][4][0], back[2][4][3], back[5][11][0], back[5][11][3],
         yes_no(back[2][3][0] == pixels[2][3][0]), yes_no(back[5][12][1] == pixels[5][12][1]),
         checksum(back, sizeof back));
  EXPECT(back[2][4][0] == 200 && back[5][11][3] == 206 && back[2][3][0] == pixels[2][3][0] &&
             back[5][12][1] == pixels[5][12][1],
         "image map write");
  /* Unmapped before the (gated) non-blocking map is done: nothing may land later. */
  cl_event gate = clCreateUserEvent(g_env.context, &err);
  CHECK_ERR(err, "clCreateUserEvent");
  p = clEnqueueMapImage(g_q, img, CL_FALSE, CL_MAP_READ, zero, all, &row_pitch, NULL, 1, &gate,
                        NULL, &err);
  CHECK_ERR(err, "clEnqueueMapImage(non-blocking, gated)");
  CHECK(clEnqueueUnmapMemObject(g_q, img, p, 0, NULL, NULL));
  CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
  CHECK(clReleaseEvent(gate));
  CHECK(clFinish(g_q));
  printf("map image unmapped before done: finished\n");
  CHECK(clReleaseMemObject(img));
}

/* Maps of 1D arrays, 2D arrays and 3D images at an origin inside them: the
 * pitches the map reports address each pixel, and writes land only there. */
typedef struct {
  const char *name;
  cl_mem_object_type type;
  size_t w, h, d; /* d: depth or array size; h: height or array size (1D array) */
} ImageKind;

static void image_kinds(void) {
  static const ImageKind kinds[] = {
      {"1D array", CL_MEM_OBJECT_IMAGE1D_ARRAY, 9, 5, 1},
      {"2D array", CL_MEM_OBJECT_IMAGE2D_ARRAY, 7, 6, 4},
      {"3D", CL_MEM_OBJECT_IMAGE3D, 6, 5, 4},
  };
  const cl_image_format fmt = {CL_RGBA, CL_UNSIGNED_INT8};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; ++k) {
    const ImageKind *c = &kinds[k];
    const size_t n = c->w * c->h * c->d * 4;
    unsigned char *init = malloc(n), *back = malloc(n), *want = malloc(n);
    EXPECT(init != NULL && back != NULL && want != NULL, "memory");
    for (size_t i = 0; i < n; ++i)
      init[i] = (unsigned char)(i * 13 + k);
    cl_image_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.image_type = c->type;
    desc.image_width = c->w;
    if (c->type == CL_MEM_OBJECT_IMAGE1D_ARRAY) {
      desc.image_array_size = c->h;
    } else {
      desc.image_height = c->h;
      if (c->type == CL_MEM_OBJECT_IMAGE3D)
        desc.image_depth = c->d;
      else
        desc.image_array_size = c->d;
    }
    cl_int err;
    cl_mem img = clCreateImage(g_env.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &fmt, &desc,
                               init, &err);
    CHECK_ERR(err, "clCreateImage");
    const int one_d = c->type == CL_MEM_OBJECT_IMAGE1D_ARRAY;
    const size_t origin[3] = {2, 1, one_d ? 0 : 1};
    const size_t region[3] = {c->w - 3, c->h - 2, one_d ? 1 : c->d - 2};
    size_t row = 0, slice = 0;
    unsigned char *p = clEnqueueMapImage(g_q, img, CL_TRUE, CL_MAP_READ, origin, region, &row,
                                         &slice, 0, NULL, NULL, &err);
    CHECK_ERR(err, "clEnqueueMapImage(READ)");
    /* A 1D array's images lie a slice pitch apart; a 3D image's or 2D array's rows a row pitch. */
    const size_t ystride = one_d ? slice : row;
    int read_ok = 1;
    for (size_t z = 0; z < region[2]; ++z)
      for (size_t y = 0; y < region[1]; ++y)
        for (size_t x = 0; x < region[0] * 4; ++x) {
          const size_t at = ((z + origin[2]) * c->h + y + origin[1]) * c->w * 4 + origin[0] * 4 + x;
          read_ok &= p[z * slice + y * ystride + x] == init[at];
        }
    CHECK(clEnqueueUnmapMemObject(g_q, img, p, 0, NULL, NULL));
    cl_event ev;
    p = clEnqueueMapImage(g_q, img, CL_FALSE, CL_MAP_WRITE, origin, region, &row, &slice, 0, NULL,
                          &ev, &err);
    CHECK_ERR(err, "clEnqueueMapImage(WRITE)");
    CHECK(clWaitForEvents(1, &ev));
    CHECK(clReleaseEvent(ev));
    memcpy(want, init, n);
    for (size_t z = 0; z < region[2]; ++z)
      for (size_t y = 0; y < region[1]; ++y)
        for (size_t x = 0; x < region[0] * 4; ++x) {
          const unsigned char v = (unsigned char)(0xe0 + z * 7 + y * 3 + x);
          p[z * slice + (one_d ? y * slice : y * row) + x] = v;
          want[((z + origin[2]) * c->h + y + origin[1]) * c->w * 4 + origin[0] * 4 + x] = v;
        }
    CHECK(clEnqueueUnmapMemObject(g_q, img, p, 0, NULL, NULL));
    const size_t zero[3] = {0, 0, 0};
    const size_t all[3] = {c->w, c->h, one_d ? 1 : c->d};
    CHECK(clEnqueueReadImage(g_q, img, CL_TRUE, zero, all, 0, 0, back, 0, NULL, NULL));
    const int write_ok = memcmp(back, want, n) == 0;
    printf("map %s image at (2,1,%zu): read %s, write %s\n", c->name, origin[2],
           read_ok ? "right" : "WRONG", write_ok ? "right" : "WRONG");
    EXPECT(read_ok && write_ok, "image map of another kind");
    CHECK(clReleaseMemObject(img));
    free(init);
    free(back);
    free(want);
  }
}

int main(void) {
  g_env = ocl_env_open();
  g_q = ocl_queue(&g_env, 0);
  buffers();
  large_buffers();
  host_ptr_buffers();
  images();
  image_kinds();
  CHECK(clReleaseCommandQueue(g_q));
  ocl_env_close(&g_env);
  return ocl_finish();
}
