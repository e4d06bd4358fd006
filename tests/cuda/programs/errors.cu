// errors: cudaGetErrorName and cudaGetErrorString for a table of codes
// (including one no CUDA version defines), then the last-error state:
// cudaPeekAtLastError keeps a non-sticky error, cudaGetLastError returns and
// clears it, and each host thread has its own.
#include <cstdio>
#include <thread>

#include "cu_check.cuh"

namespace {

const int kCodes[] = {0,   1,   2,   3,   9,   35,  46,  98,  100, 101,
                      200, 209, 400, 500, 700, 710, 719, 801, 999, 12345};

void print_table() {
  for (int code : kCodes) {
    const auto e = static_cast<cudaError_t>(code);
    std::printf("%5d %s: %s\n", code, cudaGetErrorName(e), cudaGetErrorString(e));
  }
}

} // namespace

int main() {
  std::printf("errors: %zu codes\n", sizeof(kCodes) / sizeof(kCodes[0]));
  print_table();

  cu::print_error("cudaPeekAtLastError at start", cudaPeekAtLastError());
  cu::print_error("cudaGetLastError at start", cudaGetLastError());

  // A failing call that needs no working device: an invalid device number.
  const cudaError_t bad_device = cudaSetDevice(1 << 20);
  if (cu::is_no_device(bad_device))
    cu::fail("cudaSetDevice(1 << 20)", bad_device);
  cu::print_error("cudaSetDevice(1 << 20)", bad_device);
  const cudaError_t after_bad_device = cudaGetLastError();
  cu::print_error("cudaGetLastError after it", after_bad_device);
  CU_EXPECT(bad_device == cudaErrorInvalidDevice && after_bad_device == bad_device);

  // An allocation no device can satisfy: a non-sticky error.
  void *p = nullptr;
  const cudaError_t huge = cudaMalloc(&p, size_t{1} << 62);
  cu::print_error("cudaMalloc(2^62 bytes)", huge);
  const cudaError_t peek1 = cudaPeekAtLastError();
  cu::print_error("cudaPeekAtLastError", peek1);
  const cudaError_t peek2 = cudaPeekAtLastError();
  cu::print_error("cudaPeekAtLastError again", peek2);

  // Another thread starts with a clean state of its own.
  cudaError_t other_thread = cudaErrorUnknown;
  std::thread t([&] { other_thread = cudaGetLastError(); });
  t.join();
  cu::print_error("cudaGetLastError in another thread", other_thread);

  const cudaError_t last = cudaGetLastError();
  cu::print_error("cudaGetLastError", last);
  const cudaError_t cleared = cudaGetLastError();
  cu::print_error("cudaGetLastError again", cleared);

  CU_EXPECT(huge == cudaErrorMemoryAllocation);
  CU_EXPECT(peek1 == huge && peek2 == huge);
  CU_EXPECT(other_thread == cudaSuccess);
  CU_EXPECT(last == huge && cleared == cudaSuccess);

  // A working device: the next call succeeds.
  CU_CHECK(cudaFree(nullptr));
  return cu::finish_ok();
}
