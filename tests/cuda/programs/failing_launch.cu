// failing_launch: errors of launches. Too many threads per block is
// cudaErrorInvalidConfiguration, reported at once and cleared by
// cudaGetLastError; so is too much dynamic shared memory. A kernel that
// traps (or, with the argument "oob", writes far out of bounds) is a sticky
// error: the synchronization and every later call return it.
#include <cstdio>
#include <cstring>

#include "cu_check.cuh"

namespace {

struct Pair {
  int a;
  double b;
};

__global__ void store(Pair p, int *out) {
  out[threadIdx.x] = p.a + static_cast<int>(p.b);
}

__global__ void trap_if(int *out, int when) {
  if (static_cast<int>(threadIdx.x) == when)
    __trap();
  out[threadIdx.x] = 1;
}

__global__ void write_far(int *out, long long offset) {
  out[offset + threadIdx.x] = 7;
}

bool is_execution_error(cudaError_t e) {
  return e == cudaErrorLaunchFailure || e == cudaErrorIllegalInstruction ||
         e == cudaErrorIllegalAddress || e == cudaErrorMisalignedAddress ||
         e == cudaErrorHardwareStackError;
}

} // namespace

int main(int argc, char **argv) {
  const bool oob = argc > 1 && std::strcmp(argv[1], "oob") == 0;
  std::printf("failing_launch: %s\n", oob ? "out-of-bounds write" : "trap");
  int *out = nullptr;
  CU_CHECK(cudaMalloc(&out, 1024 * sizeof(int)));

  // Configuration errors: reported by the launch, not sticky.
  store<<<1, 4096>>>(Pair{1, 2.0}, out);
  const cudaError_t too_many = cudaGetLastError();
  cu::print_error("4096 threads per block", too_many);
  const cudaError_t cleared = cudaGetLastError();
  cu::print_error("cudaGetLastError after it", cleared);
  store<<<dim3(1, 1, 1), dim3(32, 32, 2)>>>(Pair{1, 2.0}, out);
  const cudaError_t too_deep = cudaGetLastError();
  cu::print_error("block 32x32x2", too_deep);
  store<<<1, 32, size_t{1} << 30>>>(Pair{1, 2.0}, out);
  const cudaError_t too_much_shared = cudaGetLastError();
  cu::print_error("1 GiB dynamic shared memory", too_much_shared);
  CU_EXPECT(too_many == cudaErrorInvalidConfiguration);
  CU_EXPECT(cleared == cudaSuccess);
  CU_EXPECT(too_deep == cudaErrorInvalidConfiguration);
  CU_EXPECT(too_much_shared != cudaSuccess);

  // The context still works.
  store<<<1, 32>>>(Pair{40, 2.5}, out);
  CU_CHECK_LAUNCH("store");
  int got[32] = {};
  CU_CHECK(cudaMemcpy(got, out, sizeof(got), cudaMemcpyDeviceToHost));
  int sum = 0;
  for (int v : got)
    sum += v;
  std::printf("store after the errors: sum=%d\n", sum);
  CU_EXPECT(sum == 32 * 42);

  // Execution errors: sticky for the rest of the process.
  if (oob)
    write_far<<<1, 32>>>(out, 1ll << 40);
  else
    trap_if<<<1, 32>>>(out, 5);
  const cudaError_t launched = cudaPeekAtLastError();
  const cudaError_t sync = cudaDeviceSynchronize();
  cu::print_error("cudaDeviceSynchronize", sync);
  const cudaError_t peek = cudaPeekAtLastError();
  cu::print_error("cudaPeekAtLastError", peek);
  const cudaError_t last = cudaGetLastError();
  cu::print_error("cudaGetLastError", last);
  const cudaError_t last_again = cudaGetLastError();
  cu::print_error("cudaGetLastError again", last_again);
  int *more = nullptr;
  const cudaError_t malloc_after = cudaMalloc(&more, 64);
  cu::print_error("cudaMalloc afterwards", malloc_after);
  const cudaError_t copy_after = cudaMemcpy(got, out, sizeof(got), cudaMemcpyDeviceToHost);
  cu::print_error("cudaMemcpy afterwards", copy_after);

  // The launch itself may or may not have seen the failure yet: not printed.
  CU_EXPECT(launched == cudaSuccess || launched == sync);
  CU_EXPECT(is_execution_error(sync));
  CU_EXPECT(peek == sync && last == sync && last_again == sync);
  CU_EXPECT(malloc_after == sync && copy_after == sync);
  return cu::finish_ok();
}
