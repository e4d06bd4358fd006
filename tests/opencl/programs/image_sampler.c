/* SPDX-License-Identifier: MIT */
/* Images and samplers: formats, 1D-buffer/2D/3D images (new and deprecated
 * creators), read/write/copy/fill, image<->buffer copies, queries, samplers
 * and a kernel that samples an image. */
#include "common.h"

static OclEnv g_env;
static cl_command_queue g_q;

static const char kSource[] =
    "__kernel void sample(__read_only image2d_t img, sampler_t s, float2 scale,\n"
    "                     __global float4 *out) {\n"
    "  int x = get_global_id(0), y = get_global_id(1);\n"
    "  float2 pos = ((float2)(x, y) + 0.5f) * scale;\n"
    "  out[y * get_global_size(0) + x] = read_imagef(img, s, pos);\n"
    "}\n";

static void formats(void) {
  static const struct {
    cl_mem_object_type type;
    const char *name;
  } kTypes[] = {{CL_MEM_OBJECT_IMAGE2D, "IMAGE2D"},
                {CL_MEM_OBJECT_IMAGE3D, "IMAGE3D"},
                {CL_MEM_OBJECT_IMAGE1D_BUFFER, "IMAGE1D_BUFFER"}};
  for (size_t t = 0; t < sizeof kTypes / sizeof kTypes[0]; ++t) {
    cl_uint n = 0;
    CHECK(
        clGetSupportedImageFormats(g_env.context, CL_MEM_READ_WRITE, kTypes[t].type, 0, NULL, &n));
    cl_image_format *f = calloc(n ? n : 1, sizeof *f);
    cl_uint n2 = 0;
    CHECK(clGetSupportedImageFormats(g_env.context, CL_MEM_READ_WRITE, kTypes[t].type, n, f, &n2));
    int rgba8 = 0;
    for (cl_uint i = 0; i < n; ++i)
      rgba8 |= f[i].image_channel_order == CL_RGBA && f[i].image_channel_data_type == CL_UNORM_INT8;
    printf("formats for %s: count > 0: %s, same count twice: %s, RGBA/UNORM_INT8: %s, "
           "checksum %08x\n",
           kTypes[t].name, yes_no(n > 0), yes_no(n == n2), yes_no(rgba8),
           checksum(f, n * sizeof *f));
    EXPECT(n > 0 && rgba8, "%s: formats", kTypes[t].name);
    free(f);
  }
}

static void image_info(const char *label, cl_mem img) {
  cl_image_format fmt;
  size_t elem = 0, row = 0, slice = 0, w = 0, h = 0, d = 0, arr = 0;
  cl_uint mips = 9, samples = 9;
  cl_mem buffer = (cl_mem)1;
  CHECK(clGetImageInfo(img, CL_IMAGE_FORMAT, sizeof fmt, &fmt, NULL));
  CHECK(clGetImageInfo(img, CL_IMAGE_ELEMENT_SIZE, sizeof elem, &elem, NULL));
  CHECK(clGetImageInfo(img, CL_IMAGE_ROW_PITCH, sizeof row, &row, NULL));
  CHECK(clGetImageInfo(img, CL_IMAGE_SLICE_PITCH, sizeof slice, &slice, NULL));
  CHECK(clGetImageInfo(img, CL_IMAGE_WIDTH, sizeof w, &w, NULL));
  CHECK(clGetImageInfo(img, CL_IMAGE_HEIGHT, sizeof h, &h, NULL));
  CHECK(clGetImageInfo(img, CL_IMAGE_DEPTH, sizeof d, &d, NULL));
  CHECK(clGetImageInfo(img, CL_IMAGE_ARRAY_SIZE, sizeof arr, &arr, NULL));
  CHECK(clGetImageInfo(img, CL_IMAGE_NUM_MIP_LEVELS, sizeof mips, &mips, NULL));
  CHECK(clGetImageInfo(img, CL_IMAGE_NUM_SAMPLES, sizeof samples, &samples, NULL));
  CHECK(clGetImageInfo(img, CL_IMAGE_BUFFER, sizeof buffer, &buffer, NULL));
  cl_mem_object_type type = 0;
  CHECK(clGetMemObjectInfo(img, CL_MEM_TYPE, sizeof type, &type, NULL));
  printf("%s: type 0x%x, format 0x%x/0x%x, element %zu, row pitch %zu, slice pitch %zu, "
         "%zux%zux%zu, array %zu, mips %u, samples %u, buffer NULL: %s\n",
         label, type, fmt.image_channel_order, fmt.image_channel_data_type, elem, row, slice, w, h,
         d, arr, mips, samples, yes_no(buffer == NULL));
}

static void images(void) {
  enum { W = 16, H = 8, D = 4 };
  const cl_image_format rgba = {CL_RGBA, CL_UNSIGNED_INT8};
  static unsigned char px[D][H][W][4];
  for (int z = 0; z < D; ++z)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x)
        for (int c = 0; c < 4; ++c)
          px[z][y][x][c] = (unsigned char)(z * 60 + y * 7 + x * 3 + c);
  cl_int err;
  cl_image_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = W;
  desc.image_height = H;
  cl_mem img2d = clCreateImage(g_env.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &rgba,
                               &desc, px[0], &err);
  CHECK_ERR(err, "clCreateImage(2D)");
  image_info("clCreateImage 2D", img2d);
  cl_mem img2d_old = clCreateImage2D(g_env.context, CL_MEM_READ_WRITE, &rgba, W, H, 0, NULL, &err);
  CHECK_ERR(err, "clCreateImage2D");
  image_info("clCreateImage2D", img2d_old);
  desc.image_type = CL_MEM_OBJECT_IMAGE3D;
  desc.image_depth = D;
  cl_mem img3d = clCreateImage(g_env.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &rgba,
                               &desc, px, &err);
  CHECK_ERR(err, "clCreateImage(3D)");
  image_info("clCreateImage 3D", img3d);
  cl_mem img3d_old =
      clCreateImage3D(g_env.context, CL_MEM_READ_WRITE, &rgba, W, H, D, 0, 0, NULL, &err);
  printf("clCreateImage3D: %s\n", cl_err_name(err));
  if (err == CL_SUCCESS)
    CHECK(clReleaseMemObject(img3d_old));

  /* Read a region of the 3D image back with explicit host pitches. */
  unsigned char region_px[2][3][5][4];
  memset(region_px, 0, sizeof region_px);
  const size_t origin[3] = {2, 1, 1}, region[3] = {5, 3, 2};
  CHECK(clEnqueueReadImage(g_q, img3d, CL_TRUE, origin, region, 5 * 4, 3 * 5 * 4, region_px, 0,
                           NULL, NULL));
  printf("read 3D region: %u %u, checksum %08x\n", region_px[0][0][0][0], region_px[1][2][4][3],
         checksum(region_px, sizeof region_px));
  EXPECT(region_px[0][0][0][0] == px[1][1][2][0] && region_px[1][2][4][3] == px[2][3][6][3],
         "3D read region");

  /* Write into the deprecated-API image, copy 2D -> 2D, read. */
  const size_t z3[3] = {0, 0, 0}, all2[3] = {W, H, 1};
  CHECK(clEnqueueWriteImage(g_q, img2d_old, CL_FALSE, z3, all2, 0, 0, px[1], 0, NULL, NULL));
  const size_t src_o[3] = {0, 0, 0}, dst_o[3] = {4, 2, 0}, reg[3] = {6, 3, 1};
  CHECK(clEnqueueCopyImage(g_q, img2d, img2d_old, src_o, dst_o, reg, 0, NULL, NULL));
  static unsigned char out2[H][W][4];
  CHECK(clEnqueueReadImage(g_q, img2d_old, CL_TRUE, z3, all2, 0, 0, out2, 0, NULL, NULL));
  printf("write + copy image: (4,2)=%u (3,2)=%u checksum %08x\n", out2[2][4][0], out2[2][3][0],
         checksum(out2, sizeof out2));
  EXPECT(out2[2][4][0] == px[0][0][0][0] && out2[2][3][0] == px[1][2][3][0], "copy image");

  /* A 3D slice to a 2D image. */
  const size_t slice_o[3] = {0, 0, 3}, slice_r[3] = {W, H, 1};
  CHECK(clEnqueueCopyImage(g_q, img3d, img2d_old, slice_o, z3, slice_r, 0, NULL, NULL));
  CHECK(clEnqueueReadImage(g_q, img2d_old, CL_TRUE, z3, all2, 0, 0, out2, 0, NULL, NULL));
  printf("3D slice 3 -> 2D: %s\n", yes_no(memcmp(out2, px[3], sizeof out2) == 0));
  EXPECT(memcmp(out2, px[3], sizeof out2) == 0, "3D slice copy");

  /* Image <-> buffer. */
  cl_mem buf = ocl_buffer(&g_env, CL_MEM_READ_WRITE, sizeof px, NULL);
  CHECK(clEnqueueCopyImageToBuffer(g_q, img3d, buf, z3, (size_t[3]){W, H, D}, 0, 0, NULL, NULL));
  static unsigned char bufdata[D][H][W][4];
  CHECK(clEnqueueReadBuffer(g_q, buf, CL_TRUE, 0, sizeof bufdata, bufdata, 0, NULL, NULL));
  printf("image -> buffer: %s\n", yes_no(memcmp(bufdata, px, sizeof px) == 0));
  EXPECT(memcmp(bufdata, px, sizeof px) == 0, "image to buffer");
  CHECK(clEnqueueCopyBufferToImage(g_q, buf, img2d, W * H * 4 * 2, z3, all2, 0, NULL, NULL));
  CHECK(clEnqueueReadImage(g_q, img2d, CL_TRUE, z3, all2, 0, 0, out2, 0, NULL, NULL));
  printf("buffer (slice 2) -> image: %s\n", yes_no(memcmp(out2, px[2], sizeof out2) == 0));
  EXPECT(memcmp(out2, px[2], sizeof out2) == 0, "buffer to image");

  /* Fill a rectangle: the fill colour of an integer image is a uint4. */
  const cl_uint4 colour = {{9, 8, 7, 6}};
  const size_t fo[3] = {1, 1, 0}, fr[3] = {3, 2, 1};
  CHECK(clEnqueueFillImage(g_q, img2d, &colour, fo, fr, 0, NULL, NULL));
  CHECK(clEnqueueReadImage(g_q, img2d, CL_TRUE, z3, all2, 0, 0, out2, 0, NULL, NULL));
  printf("fill image: (1,1)=%u,%u,%u,%u (3,2)=%u (4,2)=%s (0,0)=%s\n", out2[1][1][0], out2[1][1][1],
         out2[1][1][2], out2[1][1][3], out2[2][3][0], yes_no(out2[2][4][0] == px[2][2][4][0]),
         yes_no(out2[0][0][0] == px[2][0][0][0]));
  EXPECT(out2[1][1][0] == 9 && out2[1][1][3] == 6 && out2[2][3][0] == 9 &&
             out2[2][4][0] == px[2][2][4][0],
         "fill image");

  /* 1D image over a buffer. */
  desc.image_type = CL_MEM_OBJECT_IMAGE1D_BUFFER;
  desc.image_width = W * H;
  desc.image_height = 0;
  desc.image_depth = 0;
  desc.buffer = buf;
  cl_mem img1d = clCreateImage(g_env.context, CL_MEM_READ_WRITE, &rgba, &desc, NULL, &err);
  printf("clCreateImage(1D buffer): %s\n", cl_err_name(err));
  if (err == CL_SUCCESS) {
    cl_mem backing = NULL;
    CHECK(clGetImageInfo(img1d, CL_IMAGE_BUFFER, sizeof backing, &backing, NULL));
    printf("  CL_IMAGE_BUFFER is the buffer: %s\n", yes_no(backing == buf));
    EXPECT(backing == buf, "CL_IMAGE_BUFFER differs");
    unsigned char first[4][4];
    const size_t o1[3] = {0, 0, 0}, r1[3] = {4, 1, 1};
    CHECK(clEnqueueReadImage(g_q, img1d, CL_TRUE, o1, r1, 0, 0, first, 0, NULL, NULL));
    printf("  first texels match the buffer: %s\n", yes_no(memcmp(first, px, sizeof first) == 0));
    CHECK(clReleaseMemObject(img1d));
  }

  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = 0;
  desc.image_height = H;
  desc.buffer = NULL;
  cl_mem bad = clCreateImage(g_env.context, CL_MEM_READ_WRITE, &rgba, &desc, NULL, &err);
  printf("clCreateImage(width 0): %s\n", cl_err_name(err));
  EXPECT(bad == NULL && err != CL_SUCCESS, "width 0 accepted");
  const cl_image_format nonsense = {0x1234, CL_UNORM_INT8};
  desc.image_width = W;
  bad = clCreateImage(g_env.context, CL_MEM_READ_WRITE, &nonsense, &desc, NULL, &err);
  printf("clCreateImage(bad channel order): %s\n", cl_err_name(err));
  EXPECT(bad == NULL && err != CL_SUCCESS, "bad channel order accepted");

  CHECK(clReleaseMemObject(buf));
  CHECK(clReleaseMemObject(img2d));
  CHECK(clReleaseMemObject(img2d_old));
  CHECK(clReleaseMemObject(img3d));
}

static void sampler_info(const char *label, cl_sampler s) {
  cl_uint refs = 0;
  cl_context ctx = NULL;
  cl_bool norm = 9;
  cl_addressing_mode addr = 0;
  cl_filter_mode filt = 0;
  size_t props_size = 0;
  CHECK(clGetSamplerInfo(s, CL_SAMPLER_REFERENCE_COUNT, sizeof refs, &refs, NULL));
  CHECK(clGetSamplerInfo(s, CL_SAMPLER_CONTEXT, sizeof ctx, &ctx, NULL));
  CHECK(clGetSamplerInfo(s, CL_SAMPLER_NORMALIZED_COORDS, sizeof norm, &norm, NULL));
  CHECK(clGetSamplerInfo(s, CL_SAMPLER_ADDRESSING_MODE, sizeof addr, &addr, NULL));
  CHECK(clGetSamplerInfo(s, CL_SAMPLER_FILTER_MODE, sizeof filt, &filt, NULL));
  cl_int err = clGetSamplerInfo(s, CL_SAMPLER_PROPERTIES, 0, NULL, &props_size);
  printf("%s: refs %u, context ok %s, normalized %u, addressing 0x%x, filter 0x%x, properties "
         "%s %zu bytes\n",
         label, refs, yes_no(ctx == g_env.context), norm, addr, filt, cl_err_name(err), props_size);
  EXPECT(ctx == g_env.context, "sampler context");
}

static void sample(cl_kernel k, cl_mem img, cl_sampler s, float scale, const char *label) {
  enum { OW = 4, OH = 4 };
  cl_mem out = ocl_buffer(&g_env, CL_MEM_WRITE_ONLY, OW * OH * sizeof(cl_float4), NULL);
  const cl_float2 sc = {{scale, scale}};
  CHECK(clSetKernelArg(k, 0, sizeof img, &img));
  CHECK(clSetKernelArg(k, 1, sizeof s, &s));
  CHECK(clSetKernelArg(k, 2, sizeof sc, &sc));
  CHECK(clSetKernelArg(k, 3, sizeof out, &out));
  const size_t gws[2] = {OW, OH};
  CHECK(clEnqueueNDRangeKernel(g_q, k, 2, NULL, gws, NULL, 0, NULL, NULL));
  cl_float4 res[OW * OH];
  CHECK(clEnqueueReadBuffer(g_q, out, CL_TRUE, 0, sizeof res, res, 0, NULL, NULL));
  printf("%s:", label);
  for (int i = 0; i < OW * OH; i += 5)
    printf(" (%.4f %.4f %.4f %.4f)", res[i].s[0], res[i].s[1], res[i].s[2], res[i].s[3]);
  printf("\n");
  CHECK(clReleaseMemObject(out));
}

static void samplers(void) {
  cl_int err;
  cl_sampler nearest =
      clCreateSampler(g_env.context, CL_FALSE, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_NEAREST, &err);
  CHECK_ERR(err, "clCreateSampler");
  sampler_info("clCreateSampler(unnormalized, clamp to edge, nearest)", nearest);
  const cl_sampler_properties props[] = {CL_SAMPLER_NORMALIZED_COORDS,
                                         CL_TRUE,
                                         CL_SAMPLER_ADDRESSING_MODE,
                                         CL_ADDRESS_REPEAT,
                                         CL_SAMPLER_FILTER_MODE,
                                         CL_FILTER_LINEAR,
                                         0};
  cl_sampler linear = clCreateSamplerWithProperties(g_env.context, props, &err);
  CHECK_ERR(err, "clCreateSamplerWithProperties");
  sampler_info("clCreateSamplerWithProperties(normalized, repeat, linear)", linear);
  CHECK(clRetainSampler(linear));
  sampler_info("after retain", linear);
  CHECK(clReleaseSampler(linear));
  const cl_sampler_properties bad_props[] = {0x7777, 1, 0};
  cl_sampler bad = clCreateSamplerWithProperties(g_env.context, bad_props, &err);
  printf("clCreateSamplerWithProperties(unknown property): %s\n", cl_err_name(err));
  EXPECT(bad == NULL && err != CL_SUCCESS, "bad sampler property accepted");
  bad = clCreateSampler(g_env.context, CL_FALSE, CL_ADDRESS_REPEAT, CL_FILTER_NEAREST, &err);
  printf("clCreateSampler(unnormalized + repeat): %s\n", cl_err_name(err));
  if (bad != NULL)
    CHECK(clReleaseSampler(bad));

  enum { W = 8, H = 8 };
  static unsigned char px[H][W][4];
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      px[y][x][0] = (unsigned char)(x * 32);
      px[y][x][1] = (unsigned char)(y * 32);
      px[y][x][2] = (unsigned char)((x + y) * 16);
      px[y][x][3] = 255;
    }
  const cl_image_format fmt = {CL_RGBA, CL_UNORM_INT8};
  cl_image_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = W;
  desc.image_height = H;
  cl_mem img =
      clCreateImage(g_env.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &fmt, &desc, px, &err);
  CHECK_ERR(err, "clCreateImage(sampled)");
  cl_program p = ocl_build(&g_env, kSource, NULL);
  cl_kernel k = ocl_kernel(p, "sample");
  sample(k, img, nearest, 2.0f, "nearest, unnormalized, every 2nd texel");
  sample(k, img, linear, 1.0f / 3.0f, "linear, normalized, scale 1/3");
  CHECK(clReleaseKernel(k));
  CHECK(clReleaseProgram(p));
  CHECK(clReleaseMemObject(img));
  CHECK(clReleaseSampler(nearest));
  CHECK(clReleaseSampler(linear));
}

int main(void) {
  g_env = ocl_env_open();
  g_q = ocl_queue(&g_env, 0);
  formats();
  images();
  samplers();
  CHECK(clReleaseCommandQueue(g_q));
  ocl_env_close(&g_env);
  return ocl_finish();
}
