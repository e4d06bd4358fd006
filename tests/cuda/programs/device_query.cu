// device_query: versions, the device count and each device's properties
// (name, compute capability, SM count, memory, limits), through
// cudaGetDeviceProperties and cudaDeviceGetAttribute; nothing that changes
// from run to run (free memory, clocks in use) is printed.
#include <cstdio>

#include "cu_check.cuh"

int main() {
  int runtime = 0;
  CU_CHECK(cudaRuntimeGetVersion(&runtime));
  std::printf("runtime version: %d\n", runtime);
  int driver = 0;
  CU_CHECK(cudaDriverGetVersion(&driver));
  std::printf("driver version: %d\n", driver);

  int count = 0;
  CU_CHECK(cudaGetDeviceCount(&count));
  std::printf("devices: %d\n", count);
  if (count == 0)
    cu::fail("cudaGetDeviceCount", cudaErrorNoDevice);

  for (int d = 0; d < count; ++d) {
    cudaDeviceProp p{};
    CU_CHECK(cudaGetDeviceProperties(&p, d));
    std::printf("device %d: %s\n", d, p.name);
    std::printf("  compute capability: %d.%d\n", p.major, p.minor);
    std::printf("  multiprocessors: %d\n", p.multiProcessorCount);
    std::printf("  global memory: %zu MiB\n", p.totalGlobalMem >> 20);
    std::printf("  shared memory per block: %zu (opt-in %zu)\n", p.sharedMemPerBlock,
                p.sharedMemPerBlockOptin);
    std::printf("  max threads per block: %d, warp size: %d\n", p.maxThreadsPerBlock, p.warpSize);
    std::printf("  max block: %d x %d x %d, max grid: %d x %d x %d\n", p.maxThreadsDim[0],
                p.maxThreadsDim[1], p.maxThreadsDim[2], p.maxGridSize[0], p.maxGridSize[1],
                p.maxGridSize[2]);
    std::printf("  L2 cache: %d bytes, memory bus: %d bits\n", p.l2CacheSize, p.memoryBusWidth);
    std::printf("  pci: %04x:%02x:%02x\n", p.pciDomainID, p.pciBusID, p.pciDeviceID);

    int sms = 0, cc_major = 0;
    CU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d));
    CU_CHECK(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, d));
    CU_EXPECT(sms == p.multiProcessorCount && cc_major == p.major);
    char bus_id[32] = {};
    CU_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), d));
    std::printf("  bus id: %s\n", bus_id);
  }

  CU_CHECK(cudaSetDevice(count - 1));
  int current = -1;
  CU_CHECK(cudaGetDevice(&current));
  std::printf("current device after cudaSetDevice(%d): %d\n", count - 1, current);
  CU_EXPECT(current == count - 1);
  const cudaError_t bad = cudaSetDevice(count + 7);
  cu::print_error("cudaSetDevice(count + 7)", bad);
  const cudaError_t last = cudaGetLastError();
  cu::print_error("cudaGetLastError", last);
  const cudaError_t cleared = cudaGetLastError();
  cu::print_error("cudaGetLastError again", cleared);
  CU_EXPECT(bad == cudaErrorInvalidDevice && last == bad && cleared == cudaSuccess);
  return cu::finish_ok();
}
