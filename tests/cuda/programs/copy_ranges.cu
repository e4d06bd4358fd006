// copy_ranges: valid copies and memsets at the edges of device allocations,
// the ones a worker that checks every device range against the guest's own
// allocations must still let through (issue 13): pointers into the middle
// of an allocation, ranges that end exactly at its end, device-to-device
// between parts of allocations, cudaMemcpyDefault, 2D copies and memsets in
// pitched memory, copies through a __device__ variable's address, stream-
// ordered allocations, cudaMemcpyPeer on one device, pointer attributes,
// and fresh allocations after cudaDeviceReset. Every byte is checked on the
// host. Also two frees the runtime refuses natively (a pointer into the
// middle, a second free), printed as refused or not, never by error code.
#include <cstdio>
#include <cstring>
#include <vector>

#include "cu_check.cuh"

namespace {

constexpr size_t kBytes = 4096;
constexpr int kTable = 64;

__device__ int d_table[kTable];

__global__ void add_one(unsigned char *p, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = static_cast<unsigned char>(p[i] + 1);
}

unsigned char pattern(size_t i) {
  return static_cast<unsigned char>((i * 31 + 7) & 0xff);
}

void expect_bytes(const char *what, const std::vector<unsigned char> &got,
                  const std::vector<unsigned char> &want) {
  if (got != want)
    cu::fail_check(what);
  std::printf("%s: ok\n", what);
}

const char *refused(cudaError_t e) {
  return e == cudaSuccess ? "accepted" : "refused";
}

// Edges of one allocation: the middle, its last byte, device to device
// between its halves, and a kernel that sees what the copies left.
void linear_copies() {
  unsigned char *d = nullptr;
  CU_CHECK(cudaMalloc(&d, kBytes));
  std::vector<unsigned char> host(kBytes), back(kBytes);
  for (size_t i = 0; i < kBytes; ++i)
    host[i] = pattern(i);
  CU_CHECK(cudaMemset(d, 0, kBytes));
  // The second half, from a pointer into the middle, up to the last byte.
  CU_CHECK(
      cudaMemcpy(d + kBytes / 2, host.data() + kBytes / 2, kBytes / 2, cudaMemcpyHostToDevice));
  // Its first half from its second, device to device.
  CU_CHECK(cudaMemcpy(d, d + kBytes / 2, kBytes / 2, cudaMemcpyDeviceToDevice));
  CU_CHECK(cudaMemcpy(back.data(), d, kBytes, cudaMemcpyDeviceToHost));
  std::vector<unsigned char> want(kBytes);
  for (size_t i = 0; i < kBytes; ++i)
    want[i] = pattern(kBytes / 2 + i % (kBytes / 2));
  expect_bytes("middle and end of one allocation", back, want);

  // The last byte alone, and a memset of a run in the middle.
  const unsigned char last = 0xa5;
  CU_CHECK(cudaMemcpy(d + kBytes - 1, &last, 1, cudaMemcpyHostToDevice));
  CU_CHECK(cudaMemset(d + 100, 0x3c, 200));
  add_one<<<4, 128>>>(d, kBytes);
  CU_CHECK_LAUNCH("add_one");
  CU_CHECK(cudaDeviceSynchronize());
  unsigned char tail[2] = {0, 0};
  CU_CHECK(cudaMemcpy(tail, d + kBytes - 2, 2, cudaMemcpyDeviceToHost));
  CU_CHECK(cudaMemcpy(back.data(), d, kBytes, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < kBytes; ++i)
    want[i] = static_cast<unsigned char>((i == kBytes - 1         ? last
                                          : (i >= 100 && i < 300) ? 0x3c
                                                                  : want[i]) +
                                         1);
  expect_bytes("last byte, memset run and kernel", back, want);
  CU_EXPECT(tail[1] == static_cast<unsigned char>(last + 1));

  // cudaMemcpyDefault: the runtime tells host from device memory.
  std::vector<unsigned char> other(kBytes, 0x11);
  CU_CHECK(cudaMemcpy(d + 8, other.data(), 64, cudaMemcpyDefault));
  CU_CHECK(cudaMemcpy(back.data(), d + 8, 64, cudaMemcpyDefault));
  expect_bytes("cudaMemcpyDefault", std::vector<unsigned char>(back.begin(), back.begin() + 64),
               std::vector<unsigned char>(64, 0x11));

  cudaPointerAttributes attr{};
  CU_CHECK(cudaPointerGetAttributes(&attr, d + kBytes / 2));
  std::printf("attributes of a pointer into it: %s\n",
              attr.type == cudaMemoryTypeDevice ? "device memory" : "NOT device memory");
  CU_EXPECT(attr.type == cudaMemoryTypeDevice);

  // Two allocations: a peer copy on one device from one into the other.
  CU_CHECK(cudaMemcpy(back.data(), d, kBytes, cudaMemcpyDeviceToHost));
  unsigned char *e = nullptr;
  CU_CHECK(cudaMalloc(&e, kBytes));
  CU_CHECK(cudaMemcpyPeer(e + 16, 0, d + 16, 0, kBytes - 32));
  std::vector<unsigned char> peer(kBytes);
  CU_CHECK(cudaMemcpy(peer.data(), e + 16, kBytes - 32, cudaMemcpyDeviceToHost));
  expect_bytes("cudaMemcpyPeer between two allocations",
               std::vector<unsigned char>(peer.begin(), peer.end() - 32),
               std::vector<unsigned char>(back.begin() + 16, back.end() - 16));

  std::printf("cudaFree of a pointer into an allocation: %s\n", refused(cudaFree(d + 8)));
  CU_CHECK(cudaFree(d));
  std::printf("cudaFree of it again: %s\n", refused(cudaFree(d)));
  CU_CHECK(cudaFree(e));
}

// A pitched rectangle: rows copied in, a column band set, all of it back.
void pitched_copies() {
  constexpr size_t kWidth = 24, kHeight = 5;
  unsigned char *p = nullptr;
  size_t pitch = 0;
  CU_CHECK(cudaMallocPitch(reinterpret_cast<void **>(&p), &pitch, kWidth, kHeight));
  CU_EXPECT(pitch >= kWidth);
  std::vector<unsigned char> rect(kWidth * kHeight), back(kWidth * kHeight, 0);
  for (size_t i = 0; i < rect.size(); ++i)
    rect[i] = pattern(i);
  CU_CHECK(cudaMemcpy2D(p, pitch, rect.data(), kWidth, kWidth, kHeight, cudaMemcpyHostToDevice));
  CU_CHECK(cudaMemset2D(p + 4, pitch, 0x7e, 8, kHeight));
  CU_CHECK(cudaMemcpy2D(back.data(), kWidth, p, pitch, kWidth, kHeight, cudaMemcpyDeviceToHost));
  for (size_t r = 0; r < kHeight; ++r)
    std::memset(rect.data() + r * kWidth + 4, 0x7e, 8);
  expect_bytes("2D copies and memset in pitched memory", back, rect);
  // The last row only, device to device into a second rectangle.
  unsigned char *q = nullptr;
  size_t qpitch = 0;
  CU_CHECK(cudaMallocPitch(reinterpret_cast<void **>(&q), &qpitch, kWidth, kHeight));
  CU_CHECK(cudaMemcpy2D(q + (kHeight - 1) * qpitch, qpitch, p + (kHeight - 1) * pitch, pitch,
                        kWidth, 1, cudaMemcpyDeviceToDevice));
  std::vector<unsigned char> row(kWidth);
  CU_CHECK(cudaMemcpy(row.data(), q + (kHeight - 1) * qpitch, kWidth, cudaMemcpyDeviceToHost));
  expect_bytes("2D copy of the last row", row,
               std::vector<unsigned char>(rect.end() - kWidth, rect.end()));
  CU_CHECK(cudaFree(p));
  CU_CHECK(cudaFree(q));
}

// A __device__ variable is device memory too, through its address.
void symbol_copies() {
  int *table = nullptr;
  CU_CHECK(cudaGetSymbolAddress(reinterpret_cast<void **>(&table), d_table));
  int values[kTable];
  for (int i = 0; i < kTable; ++i)
    values[i] = i * i;
  CU_CHECK(cudaMemcpy(table + 8, values + 8, sizeof(int) * (kTable - 8), cudaMemcpyHostToDevice));
  CU_CHECK(cudaMemset(table, 0, sizeof(int) * 8));
  int back[kTable];
  CU_CHECK(cudaMemcpyFromSymbol(back, d_table, sizeof back));
  for (int i = 0; i < 8; ++i)
    values[i] = 0;
  CU_EXPECT(std::memcmp(back, values, sizeof back) == 0);
  std::printf("copies through a __device__ variable's address: ok\n");
}

// Stream-ordered memory: allocated, filled and freed on a stream.
void stream_ordered() {
  cudaStream_t s = nullptr;
  CU_CHECK(cudaStreamCreate(&s));
  unsigned char *d = nullptr;
  CU_CHECK(cudaMallocAsync(reinterpret_cast<void **>(&d), kBytes, s));
  CU_CHECK(cudaMemsetAsync(d, 0x42, kBytes, s));
  std::vector<unsigned char> back(kBytes, 0);
  CU_CHECK(cudaMemcpyAsync(back.data(), d + kBytes / 4, kBytes / 2, cudaMemcpyDeviceToHost, s));
  CU_CHECK(cudaFreeAsync(d, s));
  CU_CHECK(cudaStreamSynchronize(s));
  CU_CHECK(cudaStreamDestroy(s));
  expect_bytes("cudaMallocAsync, memset and copy on a stream",
               std::vector<unsigned char>(back.begin(), back.begin() + kBytes / 2),
               std::vector<unsigned char>(kBytes / 2, 0x42));
}

// After a reset, fresh allocations (maybe at the old addresses) work.
void after_reset() {
  unsigned char *d = nullptr;
  CU_CHECK(cudaMalloc(&d, kBytes));
  CU_CHECK(cudaDeviceReset());
  unsigned char *f = nullptr;
  CU_CHECK(cudaMalloc(&f, kBytes));
  std::vector<unsigned char> host(kBytes, 0x99), back(kBytes, 0);
  CU_CHECK(cudaMemcpy(f, host.data(), kBytes, cudaMemcpyHostToDevice));
  CU_CHECK(cudaMemcpy(back.data(), f, kBytes, cudaMemcpyDeviceToHost));
  expect_bytes("a fresh allocation after cudaDeviceReset", back, host);
  CU_CHECK(cudaFree(f));
}

} // namespace

int main() {
  std::printf("copy_ranges\n");
  linear_copies();
  pitched_copies();
  symbol_copies();
  stream_ordered();
  after_reset();
  return cu::finish_ok();
}
