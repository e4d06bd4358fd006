/* SPDX-License-Identifier: MIT */
/* The error codes of every call that ava may send asynchronously (the
 * non-blocking enqueues, clSetKernelArg*, clFlush), for the conditions of the
 * OpenCL 3.0 reference pages that a program's arguments can produce. Remoted,
 * each call must return exactly what PoCL returns, at the call itself.
 *
 * Every case runs right after a warm-up: a successful call of the same
 * function on the same queue with otherwise the same arguments, so a layer
 * that turned asynchronous after an earlier success would be caught. Each
 * function ends with a clFinish (an error must not leak into a later call)
 * and, where cheap, a checksum of the data it wrote. Each case knows the code
 * the spec documents; where PoCL 3.1 returns another one, the case expects
 * PoCL's and says so. `--functions` prints the functions covered.
 *
 * Conditions left out, since they crash or abort a native PoCL 3.1 (or
 * cannot be produced with valid objects on its single CPU device):
 *  - clEnqueueNDRangeKernel, clEnqueueTask: a NULL kernel (dereferenced before
 *    the checks; a NULL queue is fine, the ICD loader answers it), a wait list
 *    of count > 0 that is NULL (dereferenced: PoCL does not check NDRange wait
 *    lists), a local size with a 0 (PoCL divides the global size by it: the
 *    result is undefined); CL_INVALID_WORK_ITEM_SIZE (the device's max
 *    work-item sizes equal its max work-group size, so the work-group check
 *    fires first); a global size past the device's size_t (64-bit device);
 *    CL_INVALID_PROGRAM_EXECUTABLE (no kernel exists without one).
 *  - clEnqueueCopyBufferRect: a NULL src or dst buffer, clEnqueueCopyImageToBuffer:
 *    a NULL dst buffer (dereferenced before the NULL checks).
 *  - clEnqueueSVMMemFill: a NULL pattern (copied before any check).
 *  - clEnqueueWaitForEvents: any valid call and a count of 0 with a NULL list
 *    (PoCL exits: "unimplemented"); so its cases follow a successful
 *    clEnqueueMarkerWithWaitList instead of a warm-up of its own.
 *  - CL_MISALIGNED_SUB_BUFFER_OFFSET everywhere: PoCL refuses to create such a
 *    sub-buffer in a one-device context.
 *  - CL_INVALID_OPERATION for SVM calls without SVM, for image calls without
 *    images: the device supports both.
 *  - clSetKernelArg: CL_INVALID_MEM_OBJECT / CL_INVALID_SAMPLER for a handle
 *    that is not NULL but not an object (garbage handles crash PoCL); an
 *    object of another context (PoCL 3.1 takes it; the 3.0 pages list no
 *    code, and a launch with it is undefined).
 *  - clRetainEvent, clReleaseEvent, clRetainMemObject, clReleaseMemObject:
 *    an object released for good (natively a use after free).
 *  - Out-of-memory and resource errors, events with a negative status. */
/* common.h uses nanosleep, which strict -std=c11 hides. */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

enum { BUF = 1024, IMG = 8, LOCAL_BYTES = 256 };
/* The unmap cases' buffer and mapping: large enough that under ava the
 * mapping lies in the shared heap and its unmap lends it (shm). */
enum { MAP_BUF = 256 * 1024, MAP_KEPT = 128 * 1024 };

typedef struct {
  const char *name;
  cl_int expect;   /* the spec's code, or PoCL 3.1's where commented */
  int needs_image; /* skipped without image support */
} Head;
typedef cl_int (*Call)(const void *c);

static const char *const kFunctions[] = {"clEnqueueWriteBuffer",
                                         "clEnqueueWriteBufferRect",
                                         "clEnqueueWriteImage",
                                         "clEnqueueCopyBuffer",
                                         "clEnqueueCopyBufferRect",
                                         "clEnqueueFillBuffer",
                                         "clEnqueueFillImage",
                                         "clEnqueueCopyImage",
                                         "clEnqueueCopyImageToBuffer",
                                         "clEnqueueCopyBufferToImage",
                                         "clEnqueueMigrateMemObjects",
                                         "clEnqueueNDRangeKernel",
                                         "clEnqueueTask",
                                         "clEnqueueMarkerWithWaitList",
                                         "clEnqueueBarrierWithWaitList",
                                         "clEnqueueMarker",
                                         "clEnqueueBarrier",
                                         "clEnqueueWaitForEvents",
                                         "clSetKernelArg",
                                         "clFlush",
                                         "clEnqueueUnmapMemObject",
                                         "clEnqueueSVMUnmap",
                                         "clEnqueueSVMMemcpy",
                                         "clEnqueueSVMMemFill",
                                         "clSetKernelArgSVMPointer",
                                         "clRetainEvent",
                                         "clReleaseEvent",
                                         "clRetainMemObject",
                                         "clReleaseMemObject"};
enum { N_FUNCTIONS = sizeof kFunctions / sizeof kFunctions[0] };

static OclEnv g_env;
static cl_context g_ctx2; /* for objects of another context */
static cl_command_queue g_q, g_q2, g_null_q;
static cl_mem g_buf, g_buf_b, g_buf_hro, g_buf_hna, g_buf_map, g_buf2, g_null_mem;
static cl_mem g_img, g_img_b, g_img_f, g_img_hro, g_img2;
static cl_mem g_list_buf[1], g_list_null[2], g_list_other[1];
static cl_event g_ev, g_ev2, g_null_ev; /* g_ev, g_ev2: complete markers */
static cl_program g_prog, g_prog2;
static cl_kernel g_k, g_k_reqd, g_k_unset, g_k2, g_null_k;
static void *g_svm_a, *g_svm_b, *g_null_ptr, *g_map_kept;
static int g_images;

/* Host memory of the transfers, larger than any size a case passes, since a
 * remoting layer may copy size bytes before it learns of the error. */
static unsigned char g_init[2 * BUF], g_src[2 * BUF], g_host[2 * BUF];
static unsigned char g_pat[256];
static const unsigned char kLocal[LOCAL_BYTES];
static const cl_uint4 kColor = {{1, 2, 3, 4}};
static const cl_uint kBy = 3, kN = BUF / sizeof(cl_uint);
static const cl_ulong kU64 = 7;

static const size_t kZero3[3] = {0, 0, 0};
static const size_t kImg[3] = {IMG, IMG, 1}, kImgHalf[3] = {IMG / 2, IMG / 2, 1};
static const size_t kAt4[3] = {IMG / 2, 0, 0}, kAt22[3] = {2, 2, 0}, kAtZ1[3] = {0, 0, 1};
static const size_t kAtRow8[3] = {0, IMG, 0}, kOne[3] = {1, 1, 1};
static const size_t kImgZ2[3] = {IMG, IMG, 2}, kImgX0[3] = {0, IMG, 1};
static const size_t kImgY0[3] = {IMG, 0, 1}, kImgZ0[3] = {IMG, IMG, 0};
/* Buffer rectangles: 16 bytes x 4 rows, row pitch 32 unless a case says. */
static const size_t kRect[3] = {16, 4, 1}, kRectX0[3] = {0, 4, 1}, kRectZ0[3] = {16, 4, 0};
static const size_t kRow32[3] = {0, BUF / 32, 0}, kAt8[3] = {8, 0, 0};

typedef enum { W_NONE, W_VALID, W_COUNT_NO_LIST, W_LIST_NO_COUNT, W_NULL_EVENT, W_FOREIGN } Wait;

static cl_uint wn(Wait w) {
  return w == W_NONE || w == W_LIST_NO_COUNT ? 0 : 1;
}

static const cl_event *wl(Wait w) {
  switch (w) {
  case W_VALID:
  case W_LIST_NO_COUNT:
    return &g_ev;
  case W_NULL_EVENT:
    return &g_null_ev;
  case W_FOREIGN:
    return &g_ev2;
  default:
    return NULL;
  }
}

/* A case: C for all, CI for one that needs an image. */
#define C(name, expect, ...)                                                                       \
  { {name, expect, 0}, __VA_ARGS__ }
#define CI(name, expect, ...)                                                                      \
  { {name, expect, 1}, __VA_ARGS__ }
/* The four wait-list cases, the other arguments as in the warm-up. */
#define WAITS(...)                                                                                 \
  C("wait list: count 1, NULL list", CL_INVALID_EVENT_WAIT_LIST, __VA_ARGS__, W_COUNT_NO_LIST),    \
      C("wait list: count 0, a list", CL_INVALID_EVENT_WAIT_LIST, __VA_ARGS__, W_LIST_NO_COUNT),   \
      C("wait list: a NULL event", CL_INVALID_EVENT_WAIT_LIST, __VA_ARGS__, W_NULL_EVENT),         \
      C("wait list: an event of another context", CL_INVALID_CONTEXT, __VA_ARGS__, W_FOREIGN)

static int covered(const char *fn) {
  for (size_t i = 0; i < N_FUNCTIONS; ++i)
    if (strcmp(kFunctions[i], fn) == 0)
      return 1;
  return 0;
}

static void report(const char *fn, const char *what, cl_int got, cl_int want) {
  printf("%s: %s: %s\n", fn, what, cl_err_name(got));
  EXPECT(got == want, "%s: %s: got %s (%d), expected %s", fn, what, cl_err_name(got), (int)got,
         cl_err_name(want));
}

/* Each case right after its warm-up: warm_call(case) where given (a warm-up
 * that depends on the case), else call(warm). */
static void run_cases(const char *fn, Call call, const void *warm, Call warm_call,
                      const void *cases, size_t n, size_t stride) {
  EXPECT(covered(fn), "%s is not in the list of functions", fn);
  for (size_t i = 0; i < n; ++i) {
    const Head *c = (const void *)((const char *)cases + i * stride);
    if (c->needs_image && !g_images)
      continue;
    report(fn, "warm-up", warm_call ? warm_call(c) : call(warm), CL_SUCCESS);
    report(fn, c->name, call(c), c->expect);
  }
}
#define RUN(fn, call, warm, warm_call, cases)                                                      \
  run_cases(fn, call, warm, warm_call, cases, sizeof cases / sizeof cases[0], sizeof cases[0])

static void finish(const char *fn) {
  report(fn, "clFinish", clFinish(g_q), CL_SUCCESS);
}

static void buf_sum(const char *fn, cl_mem m) {
  unsigned char data[BUF];
  CHECK(clEnqueueReadBuffer(g_q, m, CL_TRUE, 0, BUF, data, 0, NULL, NULL));
  printf("%s: buffer checksum: %08x\n", fn, checksum(data, BUF));
}

static void img_sum(const char *fn, cl_mem img) {
  unsigned char data[IMG * IMG * 4];
  CHECK(clEnqueueReadImage(g_q, img, CL_TRUE, kZero3, kImg, 0, 0, data, 0, NULL, NULL));
  printf("%s: image checksum: %08x\n", fn, checksum(data, sizeof data));
}

/* ---- buffer writes, copies, fills ---- */

typedef struct {
  Head h;
  cl_command_queue *q;
  cl_mem *mem;
  size_t off, size;
  const void *ptr;
  Wait w;
} WriteBuf;

static cl_int write_buffer(const void *p) {
  const WriteBuf *c = p;
  return clEnqueueWriteBuffer(*c->q, *c->mem, CL_FALSE, c->off, c->size, c->ptr, wn(c->w), wl(c->w),
                              NULL);
}

static void test_write_buffer(void) {
  static const WriteBuf warm = C("warm-up", 0, &g_q, &g_buf, 64, 64, g_src, W_NONE);
  static const WriteBuf cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, &g_buf, 64, 64, g_src, W_NONE),
      C("NULL buffer", CL_INVALID_MEM_OBJECT, &g_q, &g_null_mem, 64, 64, g_src, W_NONE),
      C("buffer of another context", CL_INVALID_CONTEXT, &g_q, &g_buf2, 64, 64, g_src, W_NONE),
      C("NULL ptr", CL_INVALID_VALUE, &g_q, &g_buf, 64, 64, NULL, W_NONE),
      C("offset + size past the end", CL_INVALID_VALUE, &g_q, &g_buf, BUF - 32, 64, g_src, W_NONE),
      C("offset past the end", CL_INVALID_VALUE, &g_q, &g_buf, BUF + 4, 4, g_src, W_NONE),
      C("size larger than the buffer", CL_INVALID_VALUE, &g_q, &g_buf, 0, BUF + 4, g_src, W_NONE),
      C("HOST_READ_ONLY buffer", CL_INVALID_OPERATION, &g_q, &g_buf_hro, 64, 64, g_src, W_NONE),
      C("HOST_NO_ACCESS buffer", CL_INVALID_OPERATION, &g_q, &g_buf_hna, 64, 64, g_src, W_NONE),
      WAITS(&g_q, &g_buf, 64, 64, g_src),
  };
  RUN("clEnqueueWriteBuffer", write_buffer, &warm, NULL, cases);
  finish("clEnqueueWriteBuffer");
  buf_sum("clEnqueueWriteBuffer", g_buf);
}

typedef struct {
  Head h;
  cl_command_queue *q;
  cl_mem *mem;
  const size_t *bo, *ho, *region;
  size_t brp, bsp, hrp, hsp;
  const void *ptr;
  Wait w;
} WriteRect;

static cl_int write_rect(const void *p) {
  const WriteRect *c = p;
  return clEnqueueWriteBufferRect(*c->q, *c->mem, CL_FALSE, c->bo, c->ho, c->region, c->brp, c->bsp,
                                  c->hrp, c->hsp, c->ptr, wn(c->w), wl(c->w), NULL);
}

#define WR_REST 32, 0, 0, 0, g_src
static void test_write_rect(void) {
  static const WriteRect warm = C("warm-up", 0, &g_q, &g_buf, kAt8, kZero3, kRect, WR_REST, W_NONE);
  static const WriteRect cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, &g_buf, kAt8, kZero3, kRect, WR_REST,
        W_NONE),
      C("NULL buffer", CL_INVALID_MEM_OBJECT, &g_q, &g_null_mem, kAt8, kZero3, kRect, WR_REST,
        W_NONE),
      C("buffer of another context", CL_INVALID_CONTEXT, &g_q, &g_buf2, kAt8, kZero3, kRect,
        WR_REST, W_NONE),
      C("HOST_READ_ONLY buffer", CL_INVALID_OPERATION, &g_q, &g_buf_hro, kAt8, kZero3, kRect,
        WR_REST, W_NONE),
      C("NULL ptr", CL_INVALID_VALUE, &g_q, &g_buf, kAt8, kZero3, kRect, 32, 0, 0, 0, NULL, W_NONE),
      C("NULL buffer_origin", CL_INVALID_VALUE, &g_q, &g_buf, NULL, kZero3, kRect, WR_REST, W_NONE),
      C("NULL host_origin", CL_INVALID_VALUE, &g_q, &g_buf, kAt8, NULL, kRect, WR_REST, W_NONE),
      C("NULL region", CL_INVALID_VALUE, &g_q, &g_buf, kAt8, kZero3, NULL, WR_REST, W_NONE),
      C("region[0] 0", CL_INVALID_VALUE, &g_q, &g_buf, kAt8, kZero3, kRectX0, WR_REST, W_NONE),
      C("region[2] 0", CL_INVALID_VALUE, &g_q, &g_buf, kAt8, kZero3, kRectZ0, WR_REST, W_NONE),
      C("buffer rectangle past the end", CL_INVALID_VALUE, &g_q, &g_buf, kRow32, kZero3, kRect,
        WR_REST, W_NONE),
      C("buffer_row_pitch < region[0]", CL_INVALID_VALUE, &g_q, &g_buf, kAt8, kZero3, kRect, 8, 0,
        0, 0, g_src, W_NONE),
      C("host_row_pitch < region[0]", CL_INVALID_VALUE, &g_q, &g_buf, kAt8, kZero3, kRect, 32, 0, 8,
        0, g_src, W_NONE),
      C("buffer_slice_pitch < region[1] * row pitch", CL_INVALID_VALUE, &g_q, &g_buf, kAt8, kZero3,
        kRect, 32, 64, 0, 0, g_src, W_NONE),
      C("buffer_slice_pitch not a multiple of row pitch", CL_INVALID_VALUE, &g_q, &g_buf, kAt8,
        kZero3, kRect, 32, 136, 0, 0, g_src, W_NONE),
      C("host_slice_pitch < region[1] * row pitch", CL_INVALID_VALUE, &g_q, &g_buf, kAt8, kZero3,
        kRect, 32, 0, 16, 32, g_src, W_NONE),
      C("host_slice_pitch not a multiple of row pitch", CL_INVALID_VALUE, &g_q, &g_buf, kAt8,
        kZero3, kRect, 32, 0, 16, 72, g_src, W_NONE),
      CI("an image as the buffer", CL_INVALID_MEM_OBJECT, &g_q, &g_img, kAt8, kZero3, kRect,
         WR_REST, W_NONE),
      WAITS(&g_q, &g_buf, kAt8, kZero3, kRect, WR_REST),
  };
  RUN("clEnqueueWriteBufferRect", write_rect, &warm, NULL, cases);
  finish("clEnqueueWriteBufferRect");
  buf_sum("clEnqueueWriteBufferRect", g_buf);
}

typedef struct {
  Head h;
  cl_command_queue *q;
  cl_mem *src, *dst;
  size_t src_off, dst_off, size;
  Wait w;
} CopyBuf;

static cl_int copy_buffer(const void *p) {
  const CopyBuf *c = p;
  return clEnqueueCopyBuffer(*c->q, *c->src, *c->dst, c->src_off, c->dst_off, c->size, wn(c->w),
                             wl(c->w), NULL);
}

static void test_copy_buffer(void) {
  static const CopyBuf warm = C("warm-up", 0, &g_q, &g_buf, &g_buf_b, 0, 128, 256, W_NONE);
  static const CopyBuf cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, &g_buf, &g_buf_b, 0, 128, 256, W_NONE),
      C("NULL src_buffer", CL_INVALID_MEM_OBJECT, &g_q, &g_null_mem, &g_buf_b, 0, 128, 256, W_NONE),
      C("NULL dst_buffer", CL_INVALID_MEM_OBJECT, &g_q, &g_buf, &g_null_mem, 0, 128, 256, W_NONE),
      C("src_buffer of another context", CL_INVALID_CONTEXT, &g_q, &g_buf2, &g_buf_b, 0, 128, 256,
        W_NONE),
      C("dst_buffer of another context", CL_INVALID_CONTEXT, &g_q, &g_buf, &g_buf2, 0, 128, 256,
        W_NONE),
      C("src range past the end", CL_INVALID_VALUE, &g_q, &g_buf, &g_buf_b, BUF - 128, 128, 256,
        W_NONE),
      C("dst range past the end", CL_INVALID_VALUE, &g_q, &g_buf, &g_buf_b, 0, BUF - 128, 256,
        W_NONE),
      C("size larger than the buffers", CL_INVALID_VALUE, &g_q, &g_buf, &g_buf_b, 0, 0, BUF + 4,
        W_NONE),
      C("same buffer, overlapping", CL_MEM_COPY_OVERLAP, &g_q, &g_buf, &g_buf, 0, 128, 256, W_NONE),
      CI("an image as src_buffer", CL_INVALID_MEM_OBJECT, &g_q, &g_img, &g_buf_b, 0, 128, 256,
         W_NONE),
      CI("an image as dst_buffer", CL_INVALID_MEM_OBJECT, &g_q, &g_buf, &g_img, 0, 128, 256,
         W_NONE),
      WAITS(&g_q, &g_buf, &g_buf_b, 0, 128, 256),
  };
  RUN("clEnqueueCopyBuffer", copy_buffer, &warm, NULL, cases);
  finish("clEnqueueCopyBuffer");
  buf_sum("clEnqueueCopyBuffer", g_buf_b);
}

typedef struct {
  Head h;
  cl_command_queue *q;
  cl_mem *src, *dst;
  const size_t *so, *dO, *region;
  size_t srp, ssp, drp, dsp;
  Wait w;
} CopyRect;

static cl_int copy_rect(const void *p) {
  const CopyRect *c = p;
  return clEnqueueCopyBufferRect(*c->q, *c->src, *c->dst, c->so, c->dO, c->region, c->srp, c->ssp,
                                 c->drp, c->dsp, wn(c->w), wl(c->w), NULL);
}

#define CR_OK &g_buf, &g_buf_b, kZero3, kAt8
#define CR_P 32, 0, 32, 0
static void test_copy_rect(void) {
  static const CopyRect warm = C("warm-up", 0, &g_q, CR_OK, kRect, CR_P, W_NONE);
  static const CopyRect cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, CR_OK, kRect, CR_P, W_NONE),
      C("src_buffer of another context", CL_INVALID_CONTEXT, &g_q, &g_buf2, &g_buf_b, kZero3, kAt8,
        kRect, CR_P, W_NONE),
      C("dst_buffer of another context", CL_INVALID_CONTEXT, &g_q, &g_buf, &g_buf2, kZero3, kAt8,
        kRect, CR_P, W_NONE),
      C("NULL src_origin", CL_INVALID_VALUE, &g_q, &g_buf, &g_buf_b, NULL, kAt8, kRect, CR_P,
        W_NONE),
      C("NULL dst_origin", CL_INVALID_VALUE, &g_q, &g_buf, &g_buf_b, kZero3, NULL, kRect, CR_P,
        W_NONE),
      C("NULL region", CL_INVALID_VALUE, &g_q, CR_OK, NULL, CR_P, W_NONE),
      /* PoCL 3.1 returns CL_SUCCESS (a copy of nothing); the spec says CL_INVALID_VALUE. */
      C("region[0] 0", CL_SUCCESS, &g_q, CR_OK, kRectX0, CR_P, W_NONE),
      C("region[2] 0", CL_INVALID_VALUE, &g_q, CR_OK, kRectZ0, CR_P, W_NONE),
      C("src rectangle past the end", CL_INVALID_VALUE, &g_q, &g_buf, &g_buf_b, kRow32, kAt8, kRect,
        CR_P, W_NONE),
      C("dst rectangle past the end", CL_INVALID_VALUE, &g_q, &g_buf, &g_buf_b, kZero3, kRow32,
        kRect, CR_P, W_NONE),
      C("src_row_pitch < region[0]", CL_INVALID_VALUE, &g_q, CR_OK, kRect, 8, 0, 32, 0, W_NONE),
      C("dst_row_pitch < region[0]", CL_INVALID_VALUE, &g_q, CR_OK, kRect, 32, 0, 8, 0, W_NONE),
      C("src_slice_pitch < region[1] * row pitch", CL_INVALID_VALUE, &g_q, CR_OK, kRect, 32, 64, 32,
        0, W_NONE),
      C("src_slice_pitch not a multiple of row pitch", CL_INVALID_VALUE, &g_q, CR_OK, kRect, 32,
        136, 32, 0, W_NONE),
      C("dst_slice_pitch not a multiple of row pitch", CL_INVALID_VALUE, &g_q, CR_OK, kRect, 32, 0,
        32, 136, W_NONE),
      C("same buffer, different row pitches", CL_INVALID_VALUE, &g_q, &g_buf, &g_buf, kZero3,
        kAtRow8, kRect, 32, 0, 64, 0, W_NONE),
      C("same buffer, overlapping", CL_MEM_COPY_OVERLAP, &g_q, &g_buf, &g_buf, kZero3, kAt8, kRect,
        CR_P, W_NONE),
      CI("an image as src_buffer", CL_INVALID_MEM_OBJECT, &g_q, &g_img, &g_buf_b, kZero3, kAt8,
         kRect, CR_P, W_NONE),
      CI("an image as dst_buffer", CL_INVALID_MEM_OBJECT, &g_q, &g_buf, &g_img, kZero3, kAt8, kRect,
         CR_P, W_NONE),
      WAITS(&g_q, CR_OK, kRect, CR_P),
  };
  RUN("clEnqueueCopyBufferRect", copy_rect, &warm, NULL, cases);
  finish("clEnqueueCopyBufferRect");
  buf_sum("clEnqueueCopyBufferRect", g_buf_b);
}

typedef struct {
  Head h;
  cl_command_queue *q;
  cl_mem *mem;
  const void *pattern;
  size_t psize, off, size;
  Wait w;
} FillBuf;

static cl_int fill_buffer(const void *p) {
  const FillBuf *c = p;
  return clEnqueueFillBuffer(*c->q, *c->mem, c->pattern, c->psize, c->off, c->size, wn(c->w),
                             wl(c->w), NULL);
}

static void test_fill_buffer(void) {
  static const FillBuf warm = C("warm-up", 0, &g_q, &g_buf, g_pat, 4, 128, 256, W_NONE);
  static const FillBuf cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, &g_buf, g_pat, 4, 128, 256, W_NONE),
      C("NULL buffer", CL_INVALID_MEM_OBJECT, &g_q, &g_null_mem, g_pat, 4, 128, 256, W_NONE),
      C("buffer of another context", CL_INVALID_CONTEXT, &g_q, &g_buf2, g_pat, 4, 128, 256, W_NONE),
      C("NULL pattern", CL_INVALID_VALUE, &g_q, &g_buf, NULL, 4, 128, 256, W_NONE),
      C("pattern_size 0", CL_INVALID_VALUE, &g_q, &g_buf, g_pat, 0, 128, 256, W_NONE),
      C("pattern_size 3", CL_INVALID_VALUE, &g_q, &g_buf, g_pat, 3, 129, 255, W_NONE),
      C("pattern_size 12", CL_INVALID_VALUE, &g_q, &g_buf, g_pat, 12, 120, 240, W_NONE),
      C("pattern_size 256", CL_INVALID_VALUE, &g_q, &g_buf, g_pat, 256, 256, 256, W_NONE),
      C("offset not a multiple of pattern_size", CL_INVALID_VALUE, &g_q, &g_buf, g_pat, 4, 130, 256,
        W_NONE),
      C("size not a multiple of pattern_size", CL_INVALID_VALUE, &g_q, &g_buf, g_pat, 4, 128, 254,
        W_NONE),
      C("offset + size past the end", CL_INVALID_VALUE, &g_q, &g_buf, g_pat, 4, BUF - 128, 256,
        W_NONE),
      C("offset past the end", CL_INVALID_VALUE, &g_q, &g_buf, g_pat, 4, BUF + 4, 4, W_NONE),
      C("size larger than the buffer", CL_INVALID_VALUE, &g_q, &g_buf, g_pat, 4, 0, BUF + 4,
        W_NONE),
      CI("an image as the buffer", CL_INVALID_MEM_OBJECT, &g_q, &g_img, g_pat, 4, 128, 256, W_NONE),
      WAITS(&g_q, &g_buf, g_pat, 4, 128, 256),
  };
  RUN("clEnqueueFillBuffer", fill_buffer, &warm, NULL, cases);
  finish("clEnqueueFillBuffer");
  unsigned char data[BUF];
  CHECK(clEnqueueReadBuffer(g_q, g_buf, CL_TRUE, 0, BUF, data, 0, NULL, NULL));
  int filled = 1;
  for (size_t i = 128; i < 128 + 256; ++i)
    filled &= data[i] == g_pat[i % 4];
  printf("clEnqueueFillBuffer: region filled: %s\n", yes_no(filled));
  EXPECT(filled, "clEnqueueFillBuffer did not fill");
  buf_sum("clEnqueueFillBuffer", g_buf);
}

typedef struct {
  Head h;
  cl_command_queue *q;
  cl_uint num;
  const cl_mem *list;
  cl_mem_migration_flags flags;
  Wait w;
} Migrate;

static cl_int migrate(const void *p) {
  const Migrate *c = p;
  return clEnqueueMigrateMemObjects(*c->q, c->num, c->list, c->flags, wn(c->w), wl(c->w), NULL);
}

static void test_migrate(void) {
  static const Migrate warm = C("warm-up", 0, &g_q, 1, g_list_buf, 0, W_NONE);
  static const Migrate cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, 1, g_list_buf, 0, W_NONE),
      C("num_mem_objects 0", CL_INVALID_VALUE, &g_q, 0, g_list_buf, 0, W_NONE),
      C("NULL mem_objects", CL_INVALID_VALUE, &g_q, 1, NULL, 0, W_NONE),
      C("a NULL entry", CL_INVALID_MEM_OBJECT, &g_q, 2, g_list_null, 0, W_NONE),
      C("buffer of another context", CL_INVALID_CONTEXT, &g_q, 1, g_list_other, 0, W_NONE),
      C("unknown flag bit 7", CL_INVALID_VALUE, &g_q, 1, g_list_buf, (cl_mem_migration_flags)1 << 7,
        W_NONE),
      C("flags HOST | bit 2", CL_INVALID_VALUE, &g_q, 1, g_list_buf, CL_MIGRATE_MEM_OBJECT_HOST | 4,
        W_NONE),
      C("flags HOST", CL_SUCCESS, &g_q, 1, g_list_buf, CL_MIGRATE_MEM_OBJECT_HOST, W_NONE),
      WAITS(&g_q, 1, g_list_buf, 0),
  };
  RUN("clEnqueueMigrateMemObjects", migrate, &warm, NULL, cases);
  finish("clEnqueueMigrateMemObjects");
  buf_sum("clEnqueueMigrateMemObjects", g_buf);
}

/* ---- images ---- */

typedef struct {
  Head h;
  cl_command_queue *q;
  cl_mem *img;
  const size_t *origin, *region;
  size_t rp, sp;
  const void *ptr;
  Wait w;
} WriteImg;

static cl_int write_image(const void *p) {
  const WriteImg *c = p;
  return clEnqueueWriteImage(*c->q, *c->img, CL_FALSE, c->origin, c->region, c->rp, c->sp, c->ptr,
                             wn(c->w), wl(c->w), NULL);
}

static void test_write_image(void) {
  static const WriteImg warm = C("warm-up", 0, &g_q, &g_img, kZero3, kImg, 0, 0, g_src, W_NONE);
  static const WriteImg cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, &g_img, kZero3, kImg, 0, 0, g_src,
        W_NONE),
      C("NULL image", CL_INVALID_MEM_OBJECT, &g_q, &g_null_mem, kZero3, kImg, 0, 0, g_src, W_NONE),
      C("a buffer as the image", CL_INVALID_MEM_OBJECT, &g_q, &g_buf, kZero3, kImg, 0, 0, g_src,
        W_NONE),
      C("image of another context", CL_INVALID_CONTEXT, &g_q, &g_img2, kZero3, kImg, 0, 0, g_src,
        W_NONE),
      C("HOST_READ_ONLY image", CL_INVALID_OPERATION, &g_q, &g_img_hro, kZero3, kImg, 0, 0, g_src,
        W_NONE),
      C("NULL ptr", CL_INVALID_VALUE, &g_q, &g_img, kZero3, kImg, 0, 0, NULL, W_NONE),
      C("NULL origin", CL_INVALID_VALUE, &g_q, &g_img, NULL, kImg, 0, 0, g_src, W_NONE),
      C("NULL region", CL_INVALID_VALUE, &g_q, &g_img, kZero3, NULL, 0, 0, g_src, W_NONE),
      C("region past the edge", CL_INVALID_VALUE, &g_q, &g_img, kAt4, kImg, 0, 0, g_src, W_NONE),
      C("2D image, origin[2] 1", CL_INVALID_VALUE, &g_q, &g_img, kAtZ1, kImg, 0, 0, g_src, W_NONE),
      C("2D image, region[2] 2", CL_INVALID_VALUE, &g_q, &g_img, kZero3, kImgZ2, 0, 0, g_src,
        W_NONE),
      C("region[2] 0", CL_INVALID_VALUE, &g_q, &g_img, kZero3, kImgZ0, 0, 0, g_src, W_NONE),
      /* PoCL 3.1 returns CL_SUCCESS (writes nothing); the spec says CL_INVALID_VALUE. */
      C("region[0] 0", CL_SUCCESS, &g_q, &g_img, kZero3, kImgX0, 0, 0, g_src, W_NONE),
      /* PoCL 3.1 returns CL_SUCCESS (ignores it); the spec says CL_INVALID_VALUE. */
      C("2D image, input_slice_pitch not 0", CL_SUCCESS, &g_q, &g_img, kZero3, kImg, 0,
        IMG * IMG * 4, g_src, W_NONE),
      WAITS(&g_q, &g_img, kZero3, kImg, 0, 0, g_src),
  };
  RUN("clEnqueueWriteImage", write_image, &warm, NULL, cases);
  finish("clEnqueueWriteImage");
  img_sum("clEnqueueWriteImage", g_img);
}

typedef struct {
  Head h;
  cl_command_queue *q;
  cl_mem *img;
  const void *color;
  const size_t *origin, *region;
  Wait w;
} FillImg;

static cl_int fill_image(const void *p) {
  const FillImg *c = p;
  return clEnqueueFillImage(*c->q, *c->img, c->color, c->origin, c->region, wn(c->w), wl(c->w),
                            NULL);
}

static void test_fill_image(void) {
  static const FillImg warm = C("warm-up", 0, &g_q, &g_img, &kColor, kAt22, kImgHalf, W_NONE);
  static const FillImg cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, &g_img, &kColor, kAt22, kImgHalf,
        W_NONE),
      C("NULL image", CL_INVALID_MEM_OBJECT, &g_q, &g_null_mem, &kColor, kAt22, kImgHalf, W_NONE),
      C("a buffer as the image", CL_INVALID_MEM_OBJECT, &g_q, &g_buf, &kColor, kAt22, kImgHalf,
        W_NONE),
      C("image of another context", CL_INVALID_CONTEXT, &g_q, &g_img2, &kColor, kAt22, kImgHalf,
        W_NONE),
      C("NULL fill_color", CL_INVALID_VALUE, &g_q, &g_img, NULL, kAt22, kImgHalf, W_NONE),
      C("NULL origin", CL_INVALID_VALUE, &g_q, &g_img, &kColor, NULL, kImgHalf, W_NONE),
      C("NULL region", CL_INVALID_VALUE, &g_q, &g_img, &kColor, kAt22, NULL, W_NONE),
      C("region past the edge", CL_INVALID_VALUE, &g_q, &g_img, &kColor, kAt22, kImg, W_NONE),
      C("origin past the edge", CL_INVALID_VALUE, &g_q, &g_img, &kColor, kAtRow8, kOne, W_NONE),
      C("2D image, origin[2] 1", CL_INVALID_VALUE, &g_q, &g_img, &kColor, kAtZ1, kImgHalf, W_NONE),
      C("2D image, region[2] 2", CL_INVALID_VALUE, &g_q, &g_img, &kColor, kZero3, kImgZ2, W_NONE),
      C("region[2] 0", CL_INVALID_VALUE, &g_q, &g_img, &kColor, kZero3, kImgZ0, W_NONE),
      /* PoCL 3.1 returns CL_SUCCESS for these two (fills nothing); the spec
       * says CL_INVALID_VALUE ("the values in region cannot be 0"). */
      C("region[0] 0", CL_SUCCESS, &g_q, &g_img, &kColor, kZero3, kImgX0, W_NONE),
      C("region[1] 0", CL_SUCCESS, &g_q, &g_img, &kColor, kZero3, kImgY0, W_NONE),
      WAITS(&g_q, &g_img, &kColor, kAt22, kImgHalf),
  };
  RUN("clEnqueueFillImage", fill_image, &warm, NULL, cases);
  finish("clEnqueueFillImage");
  cl_uchar px[4] = {0, 0, 0, 0};
  CHECK(clEnqueueReadImage(g_q, g_img, CL_TRUE, kAt22, kOne, 0, 0, px, 0, NULL, NULL));
  printf("clEnqueueFillImage: pixel (2,2): %u %u %u %u\n", px[0], px[1], px[2], px[3]);
  EXPECT(px[0] == 1 && px[1] == 2 && px[2] == 3 && px[3] == 4, "clEnqueueFillImage did not fill");
  img_sum("clEnqueueFillImage", g_img);
}

/* The three image copies: one struct, src/dst offsets used as the buffer
 * side's offset where one side is a buffer. */
typedef struct {
  Head h;
  cl_command_queue *q;
  cl_mem *src, *dst;
  const size_t *so, *dO, *region;
  size_t off;
  Wait w;
} CopyImg;

static cl_int copy_image(const void *p) {
  const CopyImg *c = p;
  return clEnqueueCopyImage(*c->q, *c->src, *c->dst, c->so, c->dO, c->region, wn(c->w), wl(c->w),
                            NULL);
}

static cl_int copy_image_to_buffer(const void *p) {
  const CopyImg *c = p;
  return clEnqueueCopyImageToBuffer(*c->q, *c->src, *c->dst, c->so, c->region, c->off, wn(c->w),
                                    wl(c->w), NULL);
}

static cl_int copy_buffer_to_image(const void *p) {
  const CopyImg *c = p;
  return clEnqueueCopyBufferToImage(*c->q, *c->src, *c->dst, c->off, c->dO, c->region, wn(c->w),
                                    wl(c->w), NULL);
}

#define CI_OK kZero3, kZero3, kImg, 0
static void test_copy_image(void) {
  static const CopyImg warm = C("warm-up", 0, &g_q, &g_img, &g_img_b, CI_OK, W_NONE);
  static const CopyImg cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, &g_img, &g_img_b, CI_OK, W_NONE),
      C("NULL src_image", CL_INVALID_MEM_OBJECT, &g_q, &g_null_mem, &g_img_b, CI_OK, W_NONE),
      C("NULL dst_image", CL_INVALID_MEM_OBJECT, &g_q, &g_img, &g_null_mem, CI_OK, W_NONE),
      C("a buffer as src_image", CL_INVALID_MEM_OBJECT, &g_q, &g_buf, &g_img_b, CI_OK, W_NONE),
      C("a buffer as dst_image", CL_INVALID_MEM_OBJECT, &g_q, &g_img, &g_buf, CI_OK, W_NONE),
      C("src_image of another context", CL_INVALID_CONTEXT, &g_q, &g_img2, &g_img_b, CI_OK, W_NONE),
      C("dst_image of another context", CL_INVALID_CONTEXT, &g_q, &g_img, &g_img2, CI_OK, W_NONE),
      C("different formats", CL_IMAGE_FORMAT_MISMATCH, &g_q, &g_img, &g_img_f, CI_OK, W_NONE),
      C("NULL src_origin", CL_INVALID_VALUE, &g_q, &g_img, &g_img_b, NULL, kZero3, kImg, 0, W_NONE),
      C("NULL dst_origin", CL_INVALID_VALUE, &g_q, &g_img, &g_img_b, kZero3, NULL, kImg, 0, W_NONE),
      C("NULL region", CL_INVALID_VALUE, &g_q, &g_img, &g_img_b, kZero3, kZero3, NULL, 0, W_NONE),
      C("src region past the edge", CL_INVALID_VALUE, &g_q, &g_img, &g_img_b, kAt4, kZero3, kImg, 0,
        W_NONE),
      C("dst region past the edge", CL_INVALID_VALUE, &g_q, &g_img, &g_img_b, kZero3, kAt4, kImg, 0,
        W_NONE),
      C("2D image, src_origin[2] 1", CL_INVALID_VALUE, &g_q, &g_img, &g_img_b, kAtZ1, kZero3, kImg,
        0, W_NONE),
      C("2D image, region[2] 2", CL_INVALID_VALUE, &g_q, &g_img, &g_img_b, kZero3, kZero3, kImgZ2,
        0, W_NONE),
      /* PoCL 3.1 returns CL_SUCCESS (copies nothing); the spec says CL_INVALID_VALUE. */
      C("region[0] 0", CL_SUCCESS, &g_q, &g_img, &g_img_b, kZero3, kZero3, kImgX0, 0, W_NONE),
      C("same image, overlapping", CL_MEM_COPY_OVERLAP, &g_q, &g_img, &g_img, kZero3, kAt22,
        kImgHalf, 0, W_NONE),
      WAITS(&g_q, &g_img, &g_img_b, CI_OK),
  };
  RUN("clEnqueueCopyImage", copy_image, &warm, NULL, cases);
  finish("clEnqueueCopyImage");
  img_sum("clEnqueueCopyImage", g_img_b);
}

#define IB_OK kZero3, kZero3, kImg, 512
static void test_copy_image_to_buffer(void) {
  static const CopyImg warm = C("warm-up", 0, &g_q, &g_img, &g_buf, IB_OK, W_NONE);
  static const CopyImg cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, &g_img, &g_buf, IB_OK, W_NONE),
      C("NULL src_image", CL_INVALID_MEM_OBJECT, &g_q, &g_null_mem, &g_buf, IB_OK, W_NONE),
      C("a buffer as src_image", CL_INVALID_MEM_OBJECT, &g_q, &g_buf_b, &g_buf, IB_OK, W_NONE),
      C("an image as dst_buffer", CL_INVALID_MEM_OBJECT, &g_q, &g_img, &g_img_b, IB_OK, W_NONE),
      C("src_image of another context", CL_INVALID_CONTEXT, &g_q, &g_img2, &g_buf, IB_OK, W_NONE),
      C("dst_buffer of another context", CL_INVALID_CONTEXT, &g_q, &g_img, &g_buf2, IB_OK, W_NONE),
      C("NULL src_origin", CL_INVALID_VALUE, &g_q, &g_img, &g_buf, NULL, kZero3, kImg, 512, W_NONE),
      C("NULL region", CL_INVALID_VALUE, &g_q, &g_img, &g_buf, kZero3, kZero3, NULL, 512, W_NONE),
      C("src region past the edge", CL_INVALID_VALUE, &g_q, &g_img, &g_buf, kAt4, kZero3, kImg, 512,
        W_NONE),
      C("dst range past the end", CL_INVALID_VALUE, &g_q, &g_img, &g_buf, kZero3, kZero3, kImg,
        BUF - 128, W_NONE),
      C("2D image, src_origin[2] 1", CL_INVALID_VALUE, &g_q, &g_img, &g_buf, kAtZ1, kZero3, kImg,
        512, W_NONE),
      C("2D image, region[2] 2", CL_INVALID_VALUE, &g_q, &g_img, &g_buf, kZero3, kZero3, kImgZ2,
        512, W_NONE),
      WAITS(&g_q, &g_img, &g_buf, IB_OK),
  };
  RUN("clEnqueueCopyImageToBuffer", copy_image_to_buffer, &warm, NULL, cases);
  finish("clEnqueueCopyImageToBuffer");
  buf_sum("clEnqueueCopyImageToBuffer", g_buf);
}

#define BI_OK kZero3, kZero3, kImg, 256
static void test_copy_buffer_to_image(void) {
  static const CopyImg warm = C("warm-up", 0, &g_q, &g_buf, &g_img, BI_OK, W_NONE);
  static const CopyImg cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, &g_buf, &g_img, BI_OK, W_NONE),
      C("NULL src_buffer", CL_INVALID_MEM_OBJECT, &g_q, &g_null_mem, &g_img, BI_OK, W_NONE),
      C("NULL dst_image", CL_INVALID_MEM_OBJECT, &g_q, &g_buf, &g_null_mem, BI_OK, W_NONE),
      C("an image as src_buffer", CL_INVALID_MEM_OBJECT, &g_q, &g_img_b, &g_img, BI_OK, W_NONE),
      C("a buffer as dst_image", CL_INVALID_MEM_OBJECT, &g_q, &g_buf, &g_buf_b, BI_OK, W_NONE),
      C("src_buffer of another context", CL_INVALID_CONTEXT, &g_q, &g_buf2, &g_img, BI_OK, W_NONE),
      C("dst_image of another context", CL_INVALID_CONTEXT, &g_q, &g_buf, &g_img2, BI_OK, W_NONE),
      C("NULL dst_origin", CL_INVALID_VALUE, &g_q, &g_buf, &g_img, kZero3, NULL, kImg, 256, W_NONE),
      C("NULL region", CL_INVALID_VALUE, &g_q, &g_buf, &g_img, kZero3, kZero3, NULL, 256, W_NONE),
      C("dst region past the edge", CL_INVALID_VALUE, &g_q, &g_buf, &g_img, kZero3, kAt4, kImg, 256,
        W_NONE),
      C("src range past the end", CL_INVALID_VALUE, &g_q, &g_buf, &g_img, kZero3, kZero3, kImg,
        BUF - 128, W_NONE),
      C("2D image, dst_origin[2] 1", CL_INVALID_VALUE, &g_q, &g_buf, &g_img, kZero3, kAtZ1, kImg,
        256, W_NONE),
      C("2D image, region[2] 2", CL_INVALID_VALUE, &g_q, &g_buf, &g_img, kZero3, kZero3, kImgZ2,
        256, W_NONE),
      WAITS(&g_q, &g_buf, &g_img, BI_OK),
  };
  RUN("clEnqueueCopyBufferToImage", copy_buffer_to_image, &warm, NULL, cases);
  finish("clEnqueueCopyBufferToImage");
  img_sum("clEnqueueCopyBufferToImage", g_img);
}

/* ---- kernels ---- */

#define KBODY                                                                                      \
  "(__global uint *d, uint by, __local uint *tmp, uint n) {\n"                                     \
  "  size_t g = get_global_id(0), l = get_local_id(0);\n"                                          \
  "  tmp[l] = (uint)g * by;\n"                                                                     \
  "  barrier(CLK_LOCAL_MEM_FENCE);\n"                                                              \
  "  if (g < n) d[g] = tmp[l];\n"                                                                  \
  "}\n"
static const char kSource[] =
    "__kernel void ids" KBODY "__kernel __attribute__((reqd_work_group_size(4, 1, 1)))\n"
    "void ids4" KBODY;

static cl_int set_good_arg(cl_kernel k, cl_uint idx) {
  switch (idx) {
  case 0:
    return clSetKernelArg(k, 0, sizeof(cl_mem), &g_buf);
  case 1:
    return clSetKernelArg(k, 1, sizeof kBy, &kBy);
  case 2:
    return clSetKernelArg(k, 2, LOCAL_BYTES, NULL);
  default:
    return clSetKernelArg(k, 3, sizeof kN, &kN);
  }
}

/* Launches ids over 64 items and checks d[i] == i * by in dst (a buffer, or
 * the SVM allocation when svm). */
static void check_ids(const char *fn, cl_mem buf, void *svm) {
  static const size_t gws = 64, lws = 8;
  CHECK(clEnqueueNDRangeKernel(g_q, g_k, 1, NULL, &gws, &lws, 0, NULL, NULL));
  cl_uint d[64];
  if (svm)
    CHECK(clEnqueueSVMMemcpy(g_q, CL_TRUE, d, svm, sizeof d, 0, NULL, NULL));
  else
    CHECK(clEnqueueReadBuffer(g_q, buf, CL_TRUE, 0, sizeof d, d, 0, NULL, NULL));
  int ok = 1;
  for (cl_uint i = 0; i < 64; ++i)
    ok &= d[i] == i * kBy;
  printf("%s: kernel results right: %s, checksum %08x\n", fn, yes_no(ok), checksum(d, sizeof d));
  EXPECT(ok, "%s: wrong kernel results", fn);
}

typedef struct {
  Head h;
  cl_kernel *k;
  cl_uint idx;
  size_t size;
  const void *value;
} SetArg;

static cl_int set_arg(const void *p) {
  const SetArg *c = p;
  return clSetKernelArg(*c->k, c->idx, c->size, c->value);
}

static cl_int set_arg_warm(const void *p) {
  const SetArg *c = p;
  return set_good_arg(g_k, c->idx < 4 ? c->idx : 0);
}

static void test_set_kernel_arg(void) {
  static const SetArg cases[] = {
      C("NULL kernel", CL_INVALID_KERNEL, &g_null_k, 0, sizeof(cl_mem), &g_buf),
      C("arg index 4 (the number of args)", CL_INVALID_ARG_INDEX, &g_k, 4, sizeof kBy, &kBy),
      C("arg index 99", CL_INVALID_ARG_INDEX, &g_k, 99, sizeof kBy, &kBy),
      C("__global arg, size 4", CL_INVALID_ARG_SIZE, &g_k, 0, 4, &g_buf),
      C("uint arg, size 8", CL_INVALID_ARG_SIZE, &g_k, 1, sizeof kU64, &kU64),
      C("uint arg, size 2", CL_INVALID_ARG_SIZE, &g_k, 1, 2, &kBy),
      C("uint arg, NULL value", CL_INVALID_ARG_VALUE, &g_k, 1, sizeof kBy, NULL),
      C("__local arg, non-NULL value", CL_INVALID_ARG_VALUE, &g_k, 2, LOCAL_BYTES, kLocal),
      C("__local arg, size 0", CL_INVALID_ARG_SIZE, &g_k, 2, 0, NULL),
      C("__global arg, NULL value", CL_SUCCESS, &g_k, 0, sizeof(cl_mem), NULL),
      C("__global arg, a NULL buffer", CL_SUCCESS, &g_k, 0, sizeof(cl_mem), &g_null_mem),
  };
  RUN("clSetKernelArg", set_arg, NULL, set_arg_warm, cases);
  finish("clSetKernelArg");
  /* Only argument 0 was changed by a successful case: the failed ones must
   * have left the others as their warm-ups set them. */
  CHECK(set_good_arg(g_k, 0));
  check_ids("clSetKernelArg", g_buf, NULL);
}

typedef struct {
  Head h;
  cl_command_queue *q;
  cl_kernel *k;
  cl_uint dim;
  const size_t *off, *gws, *lws;
  Wait w;
} NDRange;

static cl_int ndrange(const void *p) {
  const NDRange *c = p;
  return clEnqueueNDRangeKernel(*c->q, *c->k, c->dim, c->off, c->gws, c->lws, wn(c->w), wl(c->w),
                                NULL);
}

static const size_t kG[4] = {64, 1, 1, 1}, kL[4] = {8, 1, 1, 1}, kL7[4] = {7, 1, 1, 1};
static const size_t kHuge[4] = {(size_t)1 << 20, 1, 1, 1}, kOffMax[4] = {SIZE_MAX - 31, 0, 0, 0};

static void test_ndrange(void) {
  static const NDRange warm = C("warm-up", 0, &g_q, &g_k, 1, NULL, kG, kL, W_NONE);
  static const NDRange cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, &g_k, 1, NULL, kG, kL, W_NONE),
      C("work_dim 0", CL_INVALID_WORK_DIMENSION, &g_q, &g_k, 0, NULL, kG, kL, W_NONE),
      C("work_dim 4", CL_INVALID_WORK_DIMENSION, &g_q, &g_k, 4, NULL, kG, kL, W_NONE),
      C("local size 7, global 64", CL_INVALID_WORK_GROUP_SIZE, &g_q, &g_k, 1, NULL, kG, kL7,
        W_NONE),
      C("local size 2^20", CL_INVALID_WORK_GROUP_SIZE, &g_q, &g_k, 1, NULL, kHuge, kHuge, W_NONE),
      C("local size 8, reqd_work_group_size 4", CL_INVALID_WORK_GROUP_SIZE, &g_q, &g_k_reqd, 1,
        NULL, kG, kL, W_NONE),
      C("arguments not set", CL_INVALID_KERNEL_ARGS, &g_q, &g_k_unset, 1, NULL, kG, kL, W_NONE),
      C("kernel of another context", CL_INVALID_CONTEXT, &g_q, &g_k2, 1, NULL, kG, kL, W_NONE),
      /* PoCL 3.1 returns CL_SUCCESS (ids wrap around; the kernel checks its
       * range); the spec says CL_INVALID_GLOBAL_OFFSET. */
      C("global offset + size past SIZE_MAX", CL_SUCCESS, &g_q, &g_k, 1, kOffMax, kG, kL, W_NONE),
      /* PoCL 3.1 does not check NDRange wait lists: CL_SUCCESS for these
       * three; the spec says CL_INVALID_EVENT_WAIT_LIST, ..._WAIT_LIST and
       * CL_INVALID_CONTEXT (count 1 with a NULL list crashes it). */
      C("wait list: count 0, a list", CL_SUCCESS, &g_q, &g_k, 1, NULL, kG, kL, W_LIST_NO_COUNT),
      C("wait list: a NULL event", CL_SUCCESS, &g_q, &g_k, 1, NULL, kG, kL, W_NULL_EVENT),
      C("wait list: an event of another context", CL_SUCCESS, &g_q, &g_k, 1, NULL, kG, kL,
        W_FOREIGN),
  };
  RUN("clEnqueueNDRangeKernel", ndrange, &warm, NULL, cases);
  finish("clEnqueueNDRangeKernel");
  check_ids("clEnqueueNDRangeKernel", g_buf, NULL);
}

typedef struct {
  Head h;
  cl_command_queue *q;
  cl_kernel *k;
  Wait w;
} Task;

static cl_int task(const void *p) {
  const Task *c = p;
  return clEnqueueTask(*c->q, *c->k, wn(c->w), wl(c->w), NULL);
}

static void test_task(void) {
  static const Task warm = C("warm-up", 0, &g_q, &g_k, W_NONE);
  static const Task cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, &g_k, W_NONE),
      C("arguments not set", CL_INVALID_KERNEL_ARGS, &g_q, &g_k_unset, W_NONE),
      C("reqd_work_group_size 4", CL_INVALID_WORK_GROUP_SIZE, &g_q, &g_k_reqd, W_NONE),
      C("kernel of another context", CL_INVALID_CONTEXT, &g_q, &g_k2, W_NONE),
      C("a valid wait list", CL_SUCCESS, &g_q, &g_k, W_VALID),
      /* As for clEnqueueNDRangeKernel: PoCL 3.1 returns CL_SUCCESS; the spec
       * says CL_INVALID_EVENT_WAIT_LIST, ..._WAIT_LIST, CL_INVALID_CONTEXT. */
      C("wait list: count 0, a list", CL_SUCCESS, &g_q, &g_k, W_LIST_NO_COUNT),
      C("wait list: a NULL event", CL_SUCCESS, &g_q, &g_k, W_NULL_EVENT),
      C("wait list: an event of another context", CL_SUCCESS, &g_q, &g_k, W_FOREIGN),
  };
  RUN("clEnqueueTask", task, &warm, NULL, cases);
  finish("clEnqueueTask");
  check_ids("clEnqueueTask", g_buf, NULL);
}

/* ---- markers, barriers, flush ---- */

typedef struct {
  Head h;
  cl_command_queue *q;
  Wait w;
} QWait;

static cl_int marker_wl(const void *p) {
  const QWait *c = p;
  return clEnqueueMarkerWithWaitList(*c->q, wn(c->w), wl(c->w), NULL);
}

static cl_int barrier_wl(const void *p) {
  const QWait *c = p;
  return clEnqueueBarrierWithWaitList(*c->q, wn(c->w), wl(c->w), NULL);
}

static cl_int wait_for_events(const void *p) {
  const QWait *c = p;
  return clEnqueueWaitForEvents(*c->q, wn(c->w), wl(c->w));
}

static cl_int wait_for_events_warm(const void *p) {
  (void)p;
  return clEnqueueMarkerWithWaitList(g_q, 1, &g_ev, NULL);
}

/* clEnqueueMarker when want_event, else clEnqueueBarrier or clFlush. */
typedef struct {
  Head h;
  cl_command_queue *q;
  int want_event;
} QOnly;

static cl_int marker(const void *p) {
  const QOnly *c = p;
  cl_event ev = NULL;
  cl_int err = clEnqueueMarker(*c->q, c->want_event ? &ev : NULL);
  if (ev != NULL)
    CHECK(clReleaseEvent(ev));
  return err;
}

static cl_int barrier(const void *p) {
  return clEnqueueBarrier(*((const QOnly *)p)->q);
}

static cl_int flush(const void *p) {
  return clFlush(*((const QOnly *)p)->q);
}

/* ---- references to events and memory objects ---- */

typedef struct {
  Head h;
  cl_event *ev;
  cl_mem *mem; /* when ev is NULL */
} RefOnly;

static cl_int retain_ref(const void *p) {
  const RefOnly *c = p;
  return c->ev ? clRetainEvent(*c->ev) : clRetainMemObject(*c->mem);
}

static cl_int release_ref(const void *p) {
  const RefOnly *c = p;
  return c->ev ? clReleaseEvent(*c->ev) : clReleaseMemObject(*c->mem);
}

/* The release's warm-ups give back the references the retain's took; the
 * object must then still be there. */
static void test_refs(void) {
  static const struct {
    const char *retain, *release;
    RefOnly warm, null_case;
  } kinds[] = {
      {"clRetainEvent", "clReleaseEvent", C("warm-up", 0, &g_ev, NULL),
       C("NULL event", CL_INVALID_EVENT, &g_null_ev, NULL)},
      {"clRetainMemObject", "clReleaseMemObject", C("warm-up", 0, NULL, &g_buf),
       C("NULL memory object", CL_INVALID_MEM_OBJECT, NULL, &g_null_mem)},
  };
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; ++i) {
    const RefOnly *cases = &kinds[i].null_case;
    run_cases(kinds[i].retain, retain_ref, &kinds[i].warm, NULL, cases, 1, sizeof *cases);
    run_cases(kinds[i].release, release_ref, &kinds[i].warm, NULL, cases, 1, sizeof *cases);
  }
  cl_command_type type = 0;
  size_t size = 0;
  report("clReleaseEvent", "the event is still held",
         clGetEventInfo(g_ev, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL), CL_SUCCESS);
  report("clReleaseMemObject", "the buffer is still held",
         clGetMemObjectInfo(g_buf, CL_MEM_SIZE, sizeof size, &size, NULL), CL_SUCCESS);
}

static void test_sync(void) {
  static const QWait warm = C("warm-up", 0, &g_q, W_NONE);
  static const QWait cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, W_NONE),
      C("a valid wait list", CL_SUCCESS, &g_q, W_VALID),
      WAITS(&g_q),
  };
  RUN("clEnqueueMarkerWithWaitList", marker_wl, &warm, NULL, cases);
  finish("clEnqueueMarkerWithWaitList");
  RUN("clEnqueueBarrierWithWaitList", barrier_wl, &warm, NULL, cases);
  finish("clEnqueueBarrierWithWaitList");

  static const QWait wait_cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, W_VALID),
      /* PoCL 3.1 returns CL_INVALID_EVENT_WAIT_LIST for these three; the
       * spec says CL_INVALID_VALUE, CL_INVALID_VALUE, and lists no code for
       * invalid events (1.x: CL_INVALID_EVENT). */
      C("count 1, NULL list", CL_INVALID_EVENT_WAIT_LIST, &g_q, W_COUNT_NO_LIST),
      C("count 0, a list", CL_INVALID_EVENT_WAIT_LIST, &g_q, W_LIST_NO_COUNT),
      C("a NULL event", CL_INVALID_EVENT_WAIT_LIST, &g_q, W_NULL_EVENT),
      C("an event of another context", CL_INVALID_CONTEXT, &g_q, W_FOREIGN),
  };
  /* The warm-up is a clEnqueueMarkerWithWaitList: see the top of the file. */
  RUN("clEnqueueWaitForEvents", wait_for_events, NULL, wait_for_events_warm, wait_cases);
  finish("clEnqueueWaitForEvents");

  static const QOnly q_warm = C("warm-up", 0, &g_q, 1);
  static const QOnly marker_cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, 1),
      C("NULL event", CL_INVALID_VALUE, &g_q, 0),
  };
  RUN("clEnqueueMarker", marker, &q_warm, NULL, marker_cases);
  finish("clEnqueueMarker");
  static const QOnly q_cases[] = {C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, 0)};
  RUN("clEnqueueBarrier", barrier, &q_warm, NULL, q_cases);
  finish("clEnqueueBarrier");
  RUN("clFlush", flush, &q_warm, NULL, q_cases);
  finish("clFlush");
}

/* ---- unmapping ---- */

typedef enum { P_FRESH, P_KEPT, P_HOST, P_NULL } Ptr;

typedef struct {
  Head h;
  cl_command_queue *q;
  cl_mem *mem;
  Ptr ptr;
  Wait w;
} Unmap;

/* P_FRESH maps for writing, right before, the region P_KEPT maps (the
 * warm-up, whose unmap has the cases' shape); P_KEPT is the mapping the
 * cases refer to, unmapped by the last case. */
static cl_int unmap(const void *p) {
  const Unmap *c = p;
  void *ptr = c->ptr == P_KEPT ? g_map_kept : c->ptr == P_HOST ? (void *)g_host : NULL;
  if (c->ptr == P_FRESH) {
    cl_int err;
    ptr =
        clEnqueueMapBuffer(g_q, g_buf_map, CL_TRUE, CL_MAP_WRITE, 0, MAP_KEPT, 0, NULL, NULL, &err);
    CHECK_ERR(err, "clEnqueueMapBuffer");
  }
  return clEnqueueUnmapMemObject(*c->q, *c->mem, ptr, wn(c->w), wl(c->w), NULL);
}

static void test_unmap(void) {
  cl_int err;
  g_map_kept =
      clEnqueueMapBuffer(g_q, g_buf_map, CL_TRUE, CL_MAP_WRITE, 0, MAP_KEPT, 0, NULL, NULL, &err);
  CHECK_ERR(err, "clEnqueueMapBuffer");
  memcpy(g_map_kept, g_src, 64);
  static const Unmap warm = C("warm-up", 0, &g_q, &g_buf_map, P_FRESH, W_NONE);
  static const Unmap cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, &g_buf_map, P_KEPT, W_NONE),
      C("NULL memobj", CL_INVALID_MEM_OBJECT, &g_q, &g_null_mem, P_KEPT, W_NONE),
      C("memobj of another context", CL_INVALID_CONTEXT, &g_q, &g_buf2, P_KEPT, W_NONE),
      C("a pointer never mapped", CL_INVALID_VALUE, &g_q, &g_buf_map, P_HOST, W_NONE),
      C("NULL mapped_ptr", CL_INVALID_VALUE, &g_q, &g_buf_map, P_NULL, W_NONE),
      C("a mapping of another buffer", CL_INVALID_VALUE, &g_q, &g_buf, P_KEPT, W_NONE),
      WAITS(&g_q, &g_buf_map, P_KEPT),
      C("the mapping the cases used", CL_SUCCESS, &g_q, &g_buf_map, P_KEPT, W_NONE),
  };
  RUN("clEnqueueUnmapMemObject", unmap, &warm, NULL, cases);
  finish("clEnqueueUnmapMemObject");
  unsigned char data[64];
  CHECK(clEnqueueReadBuffer(g_q, g_buf_map, CL_TRUE, 0, sizeof data, data, 0, NULL, NULL));
  const int ok = memcmp(data, g_src, sizeof data) == 0;
  printf("clEnqueueUnmapMemObject: mapped writes arrived: %s\n", yes_no(ok));
  EXPECT(ok, "writes through the mapping were lost");
}

/* ---- SVM ---- */

typedef struct {
  Head h;
  cl_command_queue *q;
  Ptr ptr;
  Wait w;
} SvmUnmap;

static cl_int svm_unmap(const void *p) {
  const SvmUnmap *c = p;
  void *ptr = c->ptr == P_KEPT ? g_svm_a : c->ptr == P_FRESH ? g_svm_b : NULL;
  if (c->ptr == P_FRESH)
    CHECK(clEnqueueSVMMap(g_q, CL_TRUE, CL_MAP_READ, ptr, 256, 0, NULL, NULL));
  return clEnqueueSVMUnmap(*c->q, ptr, wn(c->w), wl(c->w), NULL);
}

static char *at(void *const *p, size_t off) {
  return *p ? (char *)*p + off : NULL;
}

typedef struct {
  Head h;
  cl_command_queue *q;
  void **dst;
  size_t dst_off;
  void **src;
  size_t size;
  Wait w;
} SvmCopy;

static cl_int svm_memcpy(const void *p) {
  const SvmCopy *c = p;
  return clEnqueueSVMMemcpy(*c->q, CL_FALSE, at(c->dst, c->dst_off), *c->src, c->size, wn(c->w),
                            wl(c->w), NULL);
}

typedef struct {
  Head h;
  cl_command_queue *q;
  void **ptr;
  size_t off, psize, size;
  Wait w;
} SvmFill;

static cl_int svm_fill(const void *p) {
  const SvmFill *c = p;
  return clEnqueueSVMMemFill(*c->q, at(c->ptr, c->off), g_pat, c->psize, c->size, wn(c->w),
                             wl(c->w), NULL);
}

typedef struct {
  Head h;
  cl_kernel *k;
  cl_uint idx;
} SvmArg;

static cl_int svm_arg(const void *p) {
  const SvmArg *c = p;
  return clSetKernelArgSVMPointer(*c->k, c->idx, g_svm_b);
}

static void test_svm(void) {
  CHECK(clEnqueueSVMMap(g_q, CL_TRUE, CL_MAP_READ, g_svm_a, 256, 0, NULL, NULL));
  static const SvmUnmap unmap_warm = C("warm-up", 0, &g_q, P_FRESH, W_NONE);
  static const SvmUnmap unmap_cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, P_KEPT, W_NONE),
      C("NULL svm_ptr", CL_INVALID_VALUE, &g_q, P_NULL, W_NONE),
      WAITS(&g_q, P_KEPT),
      C("the mapping the cases used", CL_SUCCESS, &g_q, P_KEPT, W_NONE),
  };
  RUN("clEnqueueSVMUnmap", svm_unmap, &unmap_warm, NULL, unmap_cases);
  finish("clEnqueueSVMUnmap");

  static const SvmCopy copy_warm = C("warm-up", 0, &g_q, &g_svm_b, 0, &g_svm_a, 256, W_NONE);
  static const SvmCopy copy_cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, &g_svm_b, 0, &g_svm_a, 256, W_NONE),
      C("NULL dst_ptr", CL_INVALID_VALUE, &g_q, &g_null_ptr, 0, &g_svm_a, 256, W_NONE),
      C("NULL src_ptr", CL_INVALID_VALUE, &g_q, &g_svm_b, 0, &g_null_ptr, 256, W_NONE),
      C("overlapping", CL_MEM_COPY_OVERLAP, &g_q, &g_svm_a, 16, &g_svm_a, 256, W_NONE),
      WAITS(&g_q, &g_svm_b, 0, &g_svm_a, 256),
  };
  RUN("clEnqueueSVMMemcpy", svm_memcpy, &copy_warm, NULL, copy_cases);
  finish("clEnqueueSVMMemcpy");

  static const SvmFill fill_warm = C("warm-up", 0, &g_q, &g_svm_a, 0, 4, 256, W_NONE);
  static const SvmFill fill_cases[] = {
      C("NULL queue", CL_INVALID_COMMAND_QUEUE, &g_null_q, &g_svm_a, 0, 4, 256, W_NONE),
      C("NULL svm_ptr", CL_INVALID_VALUE, &g_q, &g_null_ptr, 0, 4, 256, W_NONE),
      C("svm_ptr not aligned to pattern_size", CL_INVALID_VALUE, &g_q, &g_svm_a, 2, 4, 256, W_NONE),
      C("pattern_size 0", CL_INVALID_VALUE, &g_q, &g_svm_a, 0, 0, 256, W_NONE),
      C("pattern_size 3", CL_INVALID_VALUE, &g_q, &g_svm_a, 0, 3, 255, W_NONE),
      C("pattern_size 256", CL_INVALID_VALUE, &g_q, &g_svm_a, 0, 256, 256, W_NONE),
      C("size not a multiple of pattern_size", CL_INVALID_VALUE, &g_q, &g_svm_a, 0, 4, 254, W_NONE),
      WAITS(&g_q, &g_svm_a, 0, 4, 256),
  };
  RUN("clEnqueueSVMMemFill", svm_fill, &fill_warm, NULL, fill_cases);
  finish("clEnqueueSVMMemFill");
  unsigned char a[256], b[256];
  CHECK(clEnqueueSVMMemcpy(g_q, CL_TRUE, a, g_svm_a, sizeof a, 0, NULL, NULL));
  CHECK(clEnqueueSVMMemcpy(g_q, CL_TRUE, b, g_svm_b, sizeof b, 0, NULL, NULL));
  int ok = memcmp(b, g_init, sizeof b) == 0;
  for (size_t i = 0; i < sizeof a; ++i)
    ok &= a[i] == g_pat[i % 4];
  printf("clEnqueueSVMMemFill: copied and filled: %s, checksums %08x %08x\n", yes_no(ok),
         checksum(a, sizeof a), checksum(b, sizeof b));
  EXPECT(ok, "SVM copy or fill wrong");

  static const SvmArg arg_cases[] = {
      C("NULL kernel", CL_INVALID_KERNEL, &g_null_k, 0),
      C("arg index 4 (the number of args)", CL_INVALID_ARG_INDEX, &g_k, 4),
      C("a uint arg", CL_INVALID_ARG_VALUE, &g_k, 1),
      C("a __local arg", CL_INVALID_ARG_VALUE, &g_k, 2),
  };
  static const SvmArg arg_warm = C("warm-up", 0, &g_k, 0);
  RUN("clSetKernelArgSVMPointer", svm_arg, &arg_warm, NULL, arg_cases);
  finish("clSetKernelArgSVMPointer");
  check_ids("clSetKernelArgSVMPointer", NULL, g_svm_b);
}

/* ---- set-up ---- */

static cl_mem image(cl_context ctx, cl_mem_flags flags, cl_channel_type type) {
  const cl_image_format fmt = {CL_RGBA, type};
  cl_image_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = IMG;
  desc.image_height = IMG;
  cl_int err;
  cl_mem m = clCreateImage(ctx, flags | CL_MEM_COPY_HOST_PTR, &fmt, &desc, g_init, &err);
  CHECK_ERR(err, "clCreateImage");
  return m;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--functions") == 0) {
    const char *names[N_FUNCTIONS];
    memcpy(names, kFunctions, sizeof names);
    qsort(names, N_FUNCTIONS, sizeof names[0], cmp_names);
    for (size_t i = 0; i < N_FUNCTIONS; ++i)
      puts(names[i]);
    return 0;
  }
  for (size_t i = 0; i < sizeof g_init; ++i) {
    g_init[i] = (unsigned char)(i ^ 0x5a);
    g_src[i] = (unsigned char)(i * 7 + 1);
    g_host[i] = (unsigned char)i;
  }
  for (size_t i = 0; i < sizeof g_pat; ++i)
    g_pat[i] = (unsigned char)(0x11 * (i % 4 + 1));

  g_env = ocl_env_open();
  cl_int err;
  g_ctx2 = clCreateContext(NULL, 1, &g_env.device, NULL, NULL, &err);
  CHECK_ERR(err, "clCreateContext");
  const OclEnv env2 = {g_env.platform, g_env.device, g_ctx2};
  g_q = ocl_queue(&g_env, 0);
  g_q2 = ocl_queue(&env2, 0);
  CHECK(clEnqueueMarkerWithWaitList(g_q, 0, NULL, &g_ev));
  CHECK(clEnqueueMarkerWithWaitList(g_q2, 0, NULL, &g_ev2));
  CHECK(clFinish(g_q));
  CHECK(clFinish(g_q2));

  const cl_mem_flags rw = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR;
  g_buf = ocl_buffer(&g_env, rw, BUF, g_init);
  g_buf_b = ocl_buffer(&g_env, rw, BUF, g_init);
  g_buf_hro = ocl_buffer(&g_env, rw | CL_MEM_HOST_READ_ONLY, BUF, g_init);
  g_buf_hna = ocl_buffer(&g_env, rw | CL_MEM_HOST_NO_ACCESS, BUF, g_init);
  g_buf_map = ocl_buffer(&g_env, CL_MEM_READ_WRITE, MAP_BUF, NULL);
  g_buf2 = ocl_buffer(&env2, rw, BUF, g_init);
  g_list_buf[0] = g_list_null[0] = g_buf;
  g_list_other[0] = g_buf2;

  g_prog = ocl_build(&g_env, kSource, NULL);
  g_prog2 = ocl_build(&env2, kSource, NULL);
  g_k = ocl_kernel(g_prog, "ids");
  g_k_reqd = ocl_kernel(g_prog, "ids4");
  g_k_unset = ocl_kernel(g_prog, "ids");
  g_k2 = ocl_kernel(g_prog2, "ids");
  for (cl_uint i = 0; i < 4; ++i) {
    CHECK(set_good_arg(g_k, i));
    CHECK(set_good_arg(g_k_reqd, i));
  }

  cl_bool images = CL_FALSE;
  CHECK(clGetDeviceInfo(g_env.device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, NULL));
  g_images = images == CL_TRUE;
  cl_device_svm_capabilities svm = 0;
  CHECK(clGetDeviceInfo(g_env.device, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL));
  if (g_images) {
    g_img = image(g_env.context, CL_MEM_READ_WRITE, CL_UNSIGNED_INT8);
    g_img_b = image(g_env.context, CL_MEM_READ_WRITE, CL_UNSIGNED_INT8);
    g_img_f = image(g_env.context, CL_MEM_READ_WRITE, CL_FLOAT);
    g_img_hro = image(g_env.context, CL_MEM_READ_WRITE | CL_MEM_HOST_READ_ONLY, CL_UNSIGNED_INT8);
    g_img2 = image(g_ctx2, CL_MEM_READ_WRITE, CL_UNSIGNED_INT8);
  }

  test_write_buffer();
  test_write_rect();
  test_copy_buffer();
  test_copy_rect();
  test_fill_buffer();
  test_migrate();
  if (g_images) {
    test_write_image();
    test_fill_image();
    test_copy_image();
    test_copy_image_to_buffer();
    test_copy_buffer_to_image();
  } else {
    printf("images: not supported, image functions skipped\n");
  }
  test_set_kernel_arg();
  test_ndrange();
  test_task();
  test_sync();
  test_refs();
  test_unmap();
  if (svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) {
    g_svm_a = clSVMAlloc(g_env.context, CL_MEM_READ_WRITE, BUF, 0);
    g_svm_b = clSVMAlloc(g_env.context, CL_MEM_READ_WRITE, BUF, 0);
    if (g_svm_a == NULL || g_svm_b == NULL) {
      fprintf(stderr, "clSVMAlloc failed\n");
      return 2;
    }
    CHECK(clEnqueueSVMMemcpy(g_q, CL_TRUE, g_svm_a, g_init, BUF, 0, NULL, NULL));
    CHECK(clEnqueueSVMMemcpy(g_q, CL_TRUE, g_svm_b, g_init, BUF, 0, NULL, NULL));
    test_svm();
    clSVMFree(g_env.context, g_svm_a);
    clSVMFree(g_env.context, g_svm_b);
  } else {
    printf("SVM: no coarse-grain buffer SVM, SVM functions skipped\n");
  }

  cl_kernel kernels[] = {g_k, g_k_reqd, g_k_unset, g_k2};
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; ++i)
    CHECK(clReleaseKernel(kernels[i]));
  CHECK(clReleaseProgram(g_prog));
  CHECK(clReleaseProgram(g_prog2));
  cl_mem mems[] = {g_buf, g_buf_b, g_buf_hro, g_buf_hna, g_buf_map, g_buf2,
                   g_img, g_img_b, g_img_f,   g_img_hro, g_img2};
  for (size_t i = 0; i < sizeof mems / sizeof mems[0]; ++i)
    if (mems[i] != NULL)
      CHECK(clReleaseMemObject(mems[i]));
  CHECK(clReleaseEvent(g_ev));
  CHECK(clReleaseEvent(g_ev2));
  CHECK(clReleaseCommandQueue(g_q));
  CHECK(clReleaseCommandQueue(g_q2));
  CHECK(clReleaseContext(g_ctx2));
  ocl_env_close(&g_env);
  return ocl_finish();
}
