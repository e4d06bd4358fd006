// vector_add: cudaMalloc, cudaMemcpy, cudaMemset, kernel launches with
// assorted parameter kinds (pointers and ints, a struct by value, float4),
// cudaDeviceSynchronize, cudaFree. Every element is checked on the host.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "cu_check.cuh"

namespace {

constexpr int kN = 1 << 20;
constexpr int kThreads = 256;

struct Axpb {
  float alpha;
  int n;
  float beta;
  unsigned char flags; // bit 0: also add the index
};

__global__ void add(const float *a, const float *b, float *c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}

__global__ void axpb(Axpb p, const float *x, float *y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n)
    y[i] = p.alpha * x[i] + p.beta + ((p.flags & 1) ? static_cast<float>(i) : 0.0f);
}

__global__ void shift4(float4 *v, float4 delta, int n4) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 e = v[i];
    e.x += delta.x;
    e.y += delta.y;
    e.z += delta.z;
    e.w += delta.w;
    v[i] = e;
  }
}

__global__ void iota(int *out, int base, int step, long long n) {
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    out[i] = base + step * static_cast<int>(i);
}

int blocks_for(int n) {
  return (n + kThreads - 1) / kThreads;
}

} // namespace

int main() {
  std::printf("vector_add: n=%d\n", kN);
  // Small integers: every sum below is exact in float, so results compare with ==.
  std::vector<float> a(kN), b(kN), c(kN);
  for (int i = 0; i < kN; ++i) {
    a[i] = static_cast<float>(i % 1000);
    b[i] = static_cast<float>((i * 7) % 500);
  }
  const size_t bytes = sizeof(float) * kN;
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  CU_CHECK(cudaMalloc(&da, bytes));
  CU_CHECK(cudaMalloc(&db, bytes));
  CU_CHECK(cudaMalloc(&dc, bytes));
  CU_CHECK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
  CU_CHECK(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
  CU_CHECK(cudaMemset(dc, 0xff, bytes));

  add<<<blocks_for(kN), kThreads>>>(da, db, dc, kN);
  CU_CHECK_LAUNCH("add");
  CU_CHECK(cudaDeviceSynchronize());
  CU_CHECK(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost));
  double sum = 0;
  for (int i = 0; i < kN; ++i) {
    CU_EXPECT(c[i] == a[i] + b[i]);
    sum += c[i];
  }
  std::printf("add: ok, sum=%.1f\n", sum);

  const Axpb p{2.0f, kN, 3.0f, 1};
  axpb<<<blocks_for(kN), kThreads>>>(p, dc, db);
  CU_CHECK_LAUNCH("axpb");
  CU_CHECK(cudaMemcpy(b.data(), db, bytes, cudaMemcpyDeviceToHost));
  sum = 0;
  for (int i = 0; i < kN; ++i) {
    CU_EXPECT(b[i] == 2.0f * c[i] + 3.0f + static_cast<float>(i));
    sum += b[i];
  }
  std::printf("axpb (struct by value): ok, sum=%.1f\n", sum);

  const float4 delta = make_float4(1.0f, -2.0f, 0.5f, 8.0f);
  shift4<<<blocks_for(kN / 4), kThreads>>>(reinterpret_cast<float4 *>(da), delta, kN / 4);
  CU_CHECK_LAUNCH("shift4");
  CU_CHECK(cudaMemcpy(c.data(), da, bytes, cudaMemcpyDeviceToHost));
  const float d[4] = {delta.x, delta.y, delta.z, delta.w};
  sum = 0;
  for (int i = 0; i < kN; ++i) {
    CU_EXPECT(c[i] == a[i] + d[i % 4]);
    sum += c[i];
  }
  std::printf("shift4 (float4): ok, sum=%.1f\n", sum);

  // A grid-stride loop with fewer threads than elements, into reused memory.
  int *di = reinterpret_cast<int *>(dc);
  iota<<<64, 128>>>(di, -5, 3, kN);
  CU_CHECK_LAUNCH("iota");
  std::vector<int> ints(kN);
  CU_CHECK(cudaMemcpy(ints.data(), di, sizeof(int) * kN, cudaMemcpyDeviceToHost));
  long long isum = 0;
  for (int i = 0; i < kN; ++i) {
    CU_EXPECT(ints[i] == -5 + 3 * i);
    isum += ints[i];
  }
  std::printf("iota (ints, long long): ok, sum=%lld\n", isum);

  CU_CHECK(cudaFree(da));
  CU_CHECK(cudaFree(db));
  CU_CHECK(cudaFree(dc));
  CU_CHECK(cudaFree(nullptr));
  return cu::finish_ok();
}
