// Every path from the program to the device that does not start with
// cudaMalloc: <<<>>> launches of kernels with different parameter kinds,
// cudaLaunchKernel (also of a function that is no kernel), function
// attributes, __device__/__constant__ symbols, 2D copies and memsets. Without
// a GPU each reports the runtime's error, which proves the registration path
// (the fat binary travels to the worker and is registered there).
#include <cuda_runtime.h>

#include <cstdio>

struct Triple {
  int a;
  double b;
  char c[8];
};

__device__ int d_counts[4];
__constant__ float c_scale;

__global__ void k_ptr_int(int *p, int v) {
  if (p)
    p[threadIdx.x] = v;
}
__global__ void k_struct(Triple t, float4 f, long long x) {
  if (threadIdx.x == 0)
    d_counts[0] = t.a + static_cast<int>(f.x * c_scale) + static_cast<int>(x);
}
__global__ void k_none() {}

static const char *name(cudaError_t e) { return cudaGetErrorName(e); }

int main() {
  std::printf("launch_paths\n");
  k_ptr_int<<<1, 32>>>(nullptr, 5);
  std::printf("<<<>>> k_ptr_int: %s\n", name(cudaGetLastError()));
  Triple t{1, 2.0, {0}};
  float4 f{3.0f, 0, 0, 0};
  const float scale = 2.0f;
  std::printf("cudaMemcpyToSymbol(c_scale): %s\n",
              name(cudaMemcpyToSymbol(c_scale, &scale, sizeof scale)));
  k_struct<<<1, 1>>>(t, f, 7);
  std::printf("<<<>>> k_struct: %s\n", name(cudaGetLastError()));
  k_none<<<1, 1>>>();
  std::printf("<<<>>> k_none, peek: %s\n", name(cudaPeekAtLastError()));
  void *no_args[] = {nullptr};
  std::printf("cudaLaunchKernel(k_none): %s\n",
              name(cudaLaunchKernel(reinterpret_cast<const void *>(k_none), dim3(1), dim3(1),
                                    no_args, 0, nullptr)));
  std::printf("cudaLaunchKernel(not a kernel): %s\n",
              name(cudaLaunchKernel(reinterpret_cast<const void *>(&name), dim3(1), dim3(1),
                                    no_args, 0, nullptr)));
  std::printf("cudaDeviceSynchronize: %s\n", name(cudaDeviceSynchronize()));
  // The runtime's own stream values (not objects) reach it as they are.
  k_none<<<1, 1, 0, cudaStreamPerThread>>>();
  std::printf("<<<>>> on cudaStreamPerThread: %s\n", name(cudaGetLastError()));
  std::printf("cudaStreamSynchronize(cudaStreamPerThread): %s\n",
              name(cudaStreamSynchronize(cudaStreamPerThread)));
  std::printf("cudaStreamQuery(cudaStreamLegacy): %s\n", name(cudaStreamQuery(cudaStreamLegacy)));
  int counts[4] = {0, 0, 0, 0};
  std::printf("cudaMemcpyFromSymbol(d_counts): %s, [0]=%d\n",
              name(cudaMemcpyFromSymbol(counts, d_counts, sizeof counts)), counts[0]);
  size_t size = 0;
  std::printf("cudaGetSymbolSize(d_counts): %s\n", name(cudaGetSymbolSize(&size, d_counts)));
  int host_var = 0;
  std::printf("cudaMemcpyToSymbol(not a symbol): %s\n",
              name(cudaMemcpyToSymbol(host_var, &scale, sizeof scale)));
  cudaFuncAttributes attr{};
  std::printf("cudaFuncGetAttributes(k_struct): %s\n",
              name(cudaFuncGetAttributes(&attr, reinterpret_cast<const void *>(k_struct))));
  int blocks = 0;
  std::printf("occupancy(k_none): %s\n",
              name(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                  &blocks, reinterpret_cast<const void *>(k_none), 128, 0)));
  char rect[4][16] = {};
  std::printf("cudaMemcpy2D host->host: %s\n",
              name(cudaMemcpy2D(rect[1], 16, rect[0], 16, 8, 2, cudaMemcpyHostToHost)));
  int devices = 0;
  const cudaError_t count_rc = cudaGetDeviceCount(&devices);
  if (count_rc != cudaSuccess || devices == 0) {
    std::printf("result: no CUDA device\n");
    return 2;
  }
  // With a device: the launches above ran; check what they left behind.
  void *pitched = nullptr;
  size_t pitch = 0;
  bool ok = cudaMallocPitch(&pitched, &pitch, 8, 4) == cudaSuccess &&
            cudaMemset2D(pitched, pitch, 0x5a, 8, 4) == cudaSuccess &&
            cudaMemcpy2D(rect, 16, pitched, pitch, 8, 4, cudaMemcpyDeviceToHost) == cudaSuccess &&
            rect[3][7] == 0x5a && rect[3][8] == 0;
  ok = ok && counts[0] == 1 + 6 + 7 && size == sizeof counts;
  cudaFree(pitched);
  std::printf("result: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
