// streams_events: thread A launches a producer on stream S1 and records event
// E; only then does thread B make stream S2 wait on E (cudaStreamWaitEvent)
// and launch a consumer of A's output. The host orders A's calls before B's,
// so the consumer must see all of the producer's results: under remoting the
// asynchronous launch and record from A must reach the device before B's wait.
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "cu_check.cuh"

namespace {

constexpr int kN = 1 << 16;
constexpr int kRounds = 24;
// The producer idles this many clock cycles per thread (about 50 us): slow on
// purpose, so that a consumer not ordered after it would run early.
constexpr long long kSpinCycles = 100000;

__host__ __device__ unsigned mix(unsigned x, unsigned seed) {
  x = (x ^ seed) * 2654435761u;
  return x ^ (x >> 15);
}

__global__ void produce(unsigned *buf, int n, unsigned seed, long long spin) {
  const long long start = clock64();
  while (clock64() - start < spin) {
  }
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    buf[i] = mix(static_cast<unsigned>(i), seed);
}

__global__ void consume(const unsigned *buf, unsigned long long *out, int n, short shift) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = (static_cast<unsigned long long>(buf[i]) << shift) | 1ull;
}

// A one-slot hand-off: A posts the round it has recorded, B takes it.
struct Handoff {
  std::mutex mu;
  std::condition_variable cv;
  int recorded = -1;
  bool failed = false;
};

struct Shared {
  unsigned *buf[kRounds] = {};
  unsigned long long *out[kRounds] = {};
  cudaEvent_t done[kRounds] = {};
  cudaStream_t s1 = nullptr, s2 = nullptr;
  Handoff h;
};

void thread_a(Shared &sh, cu::FirstError &err) {
  err.set("cudaSetDevice (A)", cudaSetDevice(0));
  for (int r = 0; r < kRounds && err.error == cudaSuccess; ++r) {
    produce<<<(kN + 255) / 256, 256, 0, sh.s1>>>(sh.buf[r], kN, 0x9e3779b9u + r, kSpinCycles);
    err.set("launch produce (A)", cudaGetLastError());
    err.set("cudaEventRecord (A)", cudaEventRecord(sh.done[r], sh.s1));
    std::lock_guard<std::mutex> lock(sh.h.mu);
    sh.h.recorded = r;
    sh.h.cv.notify_all();
  }
  std::lock_guard<std::mutex> lock(sh.h.mu);
  sh.h.failed = err.error != cudaSuccess;
  sh.h.cv.notify_all();
}

void thread_b(Shared &sh, cu::FirstError &err) {
  err.set("cudaSetDevice (B)", cudaSetDevice(0));
  for (int r = 0; r < kRounds && err.error == cudaSuccess; ++r) {
    {
      std::unique_lock<std::mutex> lock(sh.h.mu);
      sh.h.cv.wait(lock, [&] { return sh.h.recorded >= r || sh.h.failed; });
      if (sh.h.recorded < r)
        return;
    }
    err.set("cudaStreamWaitEvent (B)", cudaStreamWaitEvent(sh.s2, sh.done[r], 0));
    consume<<<(kN + 127) / 128, 128, 0, sh.s2>>>(sh.buf[r], sh.out[r], kN,
                                                 static_cast<short>(r % 8));
    err.set("launch consume (B)", cudaGetLastError());
  }
  err.set("cudaStreamSynchronize (B)", cudaStreamSynchronize(sh.s2));
}

} // namespace

int main() {
  std::printf("streams_events: n=%d rounds=%d\n", kN, kRounds);
  Shared sh;
  CU_CHECK(cudaStreamCreateWithFlags(&sh.s1, cudaStreamNonBlocking));
  CU_CHECK(cudaStreamCreateWithFlags(&sh.s2, cudaStreamNonBlocking));
  for (int r = 0; r < kRounds; ++r) {
    CU_CHECK(cudaMalloc(&sh.buf[r], sizeof(unsigned) * kN));
    CU_CHECK(cudaMalloc(&sh.out[r], sizeof(unsigned long long) * kN));
    // Stale data that a consumer running too early would pick up.
    CU_CHECK(cudaMemset(sh.buf[r], 0, sizeof(unsigned) * kN));
    CU_CHECK(cudaEventCreateWithFlags(&sh.done[r], cudaEventDisableTiming));
  }
  CU_CHECK(cudaDeviceSynchronize());

  cu::FirstError err_a, err_b;
  std::thread a(thread_a, std::ref(sh), std::ref(err_a));
  std::thread b(thread_b, std::ref(sh), std::ref(err_b));
  a.join();
  b.join();
  if (err_a.error != cudaSuccess)
    cu::fail(err_a.what, err_a.error);
  if (err_b.error != cudaSuccess)
    cu::fail(err_b.what, err_b.error);

  std::vector<unsigned long long> out(kN);
  int bad_rounds = 0;
  unsigned long long checksum = 0;
  for (int r = 0; r < kRounds; ++r) {
    CU_CHECK(
        cudaMemcpy(out.data(), sh.out[r], sizeof(unsigned long long) * kN, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < kN; ++i) {
      const unsigned long long want =
          (static_cast<unsigned long long>(mix(static_cast<unsigned>(i), 0x9e3779b9u + r))
           << (r % 8)) |
          1ull;
      bad += out[i] != want;
      checksum = checksum * 31 + out[i];
    }
    if (bad != 0) {
      std::printf("round %d: %d of %d results stale\n", r, bad, kN);
      ++bad_rounds;
    }
  }
  std::printf("rounds with the producer's results: %d of %d, checksum=%016llx\n",
              kRounds - bad_rounds, kRounds, checksum);
  for (int r = 0; r < kRounds; ++r) {
    CU_CHECK(cudaEventDestroy(sh.done[r]));
    CU_CHECK(cudaFree(sh.buf[r]));
    CU_CHECK(cudaFree(sh.out[r]));
  }
  CU_CHECK(cudaStreamDestroy(sh.s1));
  CU_CHECK(cudaStreamDestroy(sh.s2));
  CU_EXPECT(bad_rounds == 0);
  return cu::finish_ok();
}
