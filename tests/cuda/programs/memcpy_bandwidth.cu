// memcpy_bandwidth: host-to-device, device-to-device and device-to-host copies
// of a few sizes from pageable (malloc) and pinned (cudaMallocHost) memory,
// synchronous and cudaMemcpyAsync on a stream. stdout says only whether the
// data arrived intact; with CU_BANDWIDTH_TIMINGS=1 the rates go to stderr.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cu_check.cuh"

namespace {

constexpr size_t kSizes[] = {4096, 1 << 20, 16 << 20, 64 << 20};
constexpr int kRepeats = 3;

bool want_timings() {
  const char *v = std::getenv("CU_BANDWIDTH_TIMINGS");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

void fill(unsigned char *p, size_t n, unsigned seed) {
  unsigned x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = static_cast<unsigned char>(x >> 24);
  }
}

uint64_t fnv1a(const unsigned char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void report_rate(const char *kind, const char *dir, size_t n, double s) {
  if (want_timings() && s > 0)
    std::fprintf(stderr, "timing: %-8s %s %10zu B  %9.3f GB/s\n", kind, dir, n,
                 static_cast<double>(n) * kRepeats / s / 1e9);
}

// One size, one kind of host memory: src -> d1 -> d2 -> dst, compared.
void run_copies(const char *kind, unsigned char *src, unsigned char *dst, unsigned char *d1,
                unsigned char *d2, size_t n, cudaStream_t stream) {
  fill(src, n, static_cast<unsigned>(n));
  std::memset(dst, 0, n);
  CU_CHECK(cudaMemset(d2, 0, n));
  const bool async = stream != nullptr;

  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < kRepeats; ++r) {
    if (async)
      CU_CHECK(cudaMemcpyAsync(d1, src, n, cudaMemcpyHostToDevice, stream));
    else
      CU_CHECK(cudaMemcpy(d1, src, n, cudaMemcpyHostToDevice));
  }
  if (async)
    CU_CHECK(cudaStreamSynchronize(stream));
  report_rate(kind, "H2D", n, seconds_since(t0));

  t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < kRepeats; ++r) {
    if (async)
      CU_CHECK(cudaMemcpyAsync(d2, d1, n, cudaMemcpyDeviceToDevice, stream));
    else
      CU_CHECK(cudaMemcpy(d2, d1, n, cudaMemcpyDeviceToDevice));
  }
  CU_CHECK(async ? cudaStreamSynchronize(stream) : cudaDeviceSynchronize());
  report_rate(kind, "D2D", n, seconds_since(t0));

  t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < kRepeats; ++r) {
    if (async)
      CU_CHECK(cudaMemcpyAsync(dst, d2, n, cudaMemcpyDeviceToHost, stream));
    else
      CU_CHECK(cudaMemcpy(dst, d2, n, cudaMemcpyDeviceToHost));
  }
  if (async)
    CU_CHECK(cudaStreamSynchronize(stream));
  report_rate(kind, "D2H", n, seconds_since(t0));

  const bool same = std::memcmp(src, dst, n) == 0;
  std::printf("%-8s %9zu bytes: %s, fnv1a=%016llx\n", kind, n, same ? "intact" : "CORRUPTED",
              static_cast<unsigned long long>(fnv1a(dst, n)));
  CU_EXPECT(same);
}

} // namespace

int main() {
  constexpr size_t kMax = kSizes[sizeof(kSizes) / sizeof(kSizes[0]) - 1];
  std::printf("memcpy_bandwidth: %zu sizes up to %zu bytes, %d repeats\n",
              sizeof(kSizes) / sizeof(kSizes[0]), kMax, kRepeats);
  unsigned char *d1 = nullptr, *d2 = nullptr;
  CU_CHECK(cudaMalloc(&d1, kMax));
  CU_CHECK(cudaMalloc(&d2, kMax));
  cudaStream_t stream = nullptr;
  CU_CHECK(cudaStreamCreate(&stream));

  auto *pageable_src = static_cast<unsigned char *>(std::malloc(kMax));
  auto *pageable_dst = static_cast<unsigned char *>(std::malloc(kMax));
  if (pageable_src == nullptr || pageable_dst == nullptr)
    cu::fail_check("malloc of the pageable buffers");
  unsigned char *pinned_src = nullptr, *pinned_dst = nullptr;
  CU_CHECK(cudaMallocHost(&pinned_src, kMax));
  CU_CHECK(cudaHostAlloc(&pinned_dst, kMax, cudaHostAllocDefault));

  for (size_t n : kSizes) {
    run_copies("pageable", pageable_src, pageable_dst, d1, d2, n, nullptr);
    run_copies("pinned", pinned_src, pinned_dst, d1, d2, n, nullptr);
    run_copies("async", pinned_src, pinned_dst, d1, d2, n, stream);
  }

  std::free(pageable_src);
  std::free(pageable_dst);
  CU_CHECK(cudaFreeHost(pinned_src));
  CU_CHECK(cudaFreeHost(pinned_dst));
  CU_CHECK(cudaStreamDestroy(stream));
  CU_CHECK(cudaFree(d1));
  CU_CHECK(cudaFree(d2));
  return cu::finish_ok();
}
