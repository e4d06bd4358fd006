// The CUDA driver API alone (libcuda.so.1): a module from PTX text, a kernel
// launched with kernelParams and with a flattened argument buffer, copies,
// error names and texts, cuGetProcAddress. Runs only where a driver is
// installed (natively it needs libcuda.so.1), so scripts/gpu-check.sh runs it.
#include <cuda.h>

#include <cstdio>
#include <cstring>

static const char kPtx[] = R"(
.version 7.0
.target sm_50
.address_size 64
.visible .entry scale(.param .u64 data, .param .u32 n, .param .f32 k)
{
  .reg .pred p;
  .reg .b32 r<5>;
  .reg .f32 f<3>;
  .reg .b64 rd<5>;
  ld.param.u64 rd1, [data];
  ld.param.u32 r1, [n];
  ld.param.f32 f1, [k];
  mov.u32 r2, %ctaid.x;
  mov.u32 r3, %ntid.x;
  mov.u32 r4, %tid.x;
  mad.lo.s32 r2, r2, r3, r4;
  setp.ge.u32 p, r2, r1;
  @p bra done;
  cvta.to.global.u64 rd2, rd1;
  mul.wide.u32 rd3, r2, 4;
  add.s64 rd4, rd2, rd3;
  ld.global.f32 f2, [rd4];
  mul.f32 f2, f2, f1;
  st.global.f32 [rd4], f2;
done:
  ret;
}
)";

static int g_failed;

static bool check(CUresult rc, const char *what) {
  if (rc == CUDA_SUCCESS)
    return true;
  const char *name = nullptr;
  cuGetErrorName(rc, &name);
  std::printf("%s: %s (%d)\n", what, name ? name : "?", static_cast<int>(rc));
  g_failed = 1;
  return false;
}

int main() {
  std::printf("driver_api\n");
  const char *name = nullptr, *text = nullptr;
  cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &name);
  std::printf("error name of 1: %s\n", name ? name : "?");
  if (!check(cuInit(0), "cuInit"))
    return 2;
  int version = 0, count = 0;
  check(cuDriverGetVersion(&version), "cuDriverGetVersion");
  std::printf("driver version >= 13000: %s\n", version >= 13000 ? "yes" : "no");
  if (!check(cuDeviceGetCount(&count), "cuDeviceGetCount") || count == 0)
    return 2;
  cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &text);
  std::printf("error text of 1 known: %s\n", text && *text ? "yes" : "no");
  CUdevice dev;
  CUcontext ctx;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  if (!check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
      !check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent"))
    return 1;
  CUmodule mod;
  CUfunction fn;
  if (!check(cuModuleLoadData(&mod, kPtx), "cuModuleLoadData") ||
      !check(cuModuleGetFunction(&fn, mod, "scale"), "cuModuleGetFunction"))
    return 1;
  const unsigned n = 4096;
  float host[4096];
  for (unsigned i = 0; i < n; ++i)
    host[i] = static_cast<float>(i);
  CUdeviceptr d;
  check(cuMemAlloc(&d, sizeof host), "cuMemAlloc");
  check(cuMemcpyHtoD(d, host, sizeof host), "cuMemcpyHtoD");
  float k = 2.0f;
  void *params[] = {&d, const_cast<unsigned *>(&n), &k};
  check(cuLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
        "cuLaunchKernel(kernelParams)");
  // The same kernel with a flattened buffer (8-byte pointer, u32, f32).
  struct {
    CUdeviceptr data;
    unsigned n;
    float k;
  } flat = {d, n, 0.5f};
  size_t flat_size = sizeof flat;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &flat, CU_LAUNCH_PARAM_BUFFER_SIZE, &flat_size,
                   CU_LAUNCH_PARAM_END};
  check(cuLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, nullptr, extra),
        "cuLaunchKernel(extra)");
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  std::memset(host, 0, sizeof host);
  check(cuMemcpyDtoH(host, d, sizeof host), "cuMemcpyDtoH");
  int wrong = 0;
  for (unsigned i = 0; i < n; ++i)
    wrong += host[i] != static_cast<float>(i);
  std::printf("x2 then x0.5: wrong %d, [4095]=%g\n", wrong, static_cast<double>(host[4095]));
  void *pfn = nullptr;
  check(cuGetProcAddress("cuMemAlloc", &pfn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, nullptr),
        "cuGetProcAddress");
  std::printf("cuGetProcAddress(cuMemAlloc) found: %s\n", pfn ? "yes" : "no");
  check(cuMemFree(d), "cuMemFree");
  check(cuModuleUnload(mod), "cuModuleUnload");
  check(cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
  if (wrong != 0)
    g_failed = 1;
  std::printf("result: %s\n", g_failed ? "FAILED" : "ok");
  return g_failed;
}
