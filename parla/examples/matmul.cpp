// SPDX-License-Identifier: MIT
// Blocked matrix multiply over every OpenCL device (PoCL here; GPUs, or
// devices behind ava, elsewhere): C = A * B with n x n doubles in b x b
// blocks stored block after block, so that each block is one view. Task
// C(i, j) reads row i of A's blocks and column j of B's and runs one
// kernel per k on its device; the runtime moves the blocks. The result is
// checked against a sequential multiply on the host.
//
//   parla_matmul [N] [BLOCK]      (defaults 256 64)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "parla/opencl.hpp"
#include "parla/parla.hpp"

namespace {

const char *kSource = R"CL(
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
// c[b x b] += a[b x b] * bm[b x b], each at an element offset of its buffer.
__kernel void gemm_block(__global const double *a, ulong ao, __global const double *bm, ulong bo,
                         __global double *c, ulong co, int b) {
  const int i = get_global_id(0), j = get_global_id(1);
  double s = c[co + i * b + j];
  for (int k = 0; k < b; ++k)
    s += a[ao + i * b + k] * bm[bo + k * b + j];
  c[co + i * b + j] = s;
}
)CL";

} // namespace

int main(int argc, char **argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 256;
  const int b = argc > 2 ? std::atoi(argv[2]) : 64;
  if (n <= 0 || b <= 0 || n % b != 0) {
    std::fprintf(stderr, "usage: parla_matmul [N] [BLOCK] (BLOCK divides N)\n");
    return 2;
  }
  const int nb = n / b;
  const size_t block = static_cast<size_t>(b) * static_cast<size_t>(b);
  auto at = [&](int bi, int bj) { return static_cast<size_t>(bi * nb + bj) * block; };
  // Block-major matrices: block (bi, bj) is elements [at(bi, bj), + b*b).
  std::vector<double> a(static_cast<size_t>(n) * n), bm(a.size()), c(a.size(), 0.0);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = std::sin(0.001 * static_cast<double>(i));
    bm[i] = std::cos(0.002 * static_cast<double>(i));
  }
  try {
    auto devices = parla::opencl_devices();
    if (devices.empty()) {
      std::fprintf(stderr, "parla_matmul: no OpenCL device\n");
      return 1;
    }
    const size_t count = devices.size();
    parla::Runtime rt({.devices = std::move(devices)});
    parla::Array A = parla::Array::wrap(a), B = parla::Array::wrap(bm), C = parla::Array::wrap(c);
    parla::KernelCache kernels(kSource, "gemm_block");
    parla::TaskSpace T("C");
    const auto start = std::chrono::steady_clock::now();
    for (int bi = 0; bi < nb; ++bi)
      for (int bj = 0; bj < nb; ++bj) {
        parla::SpawnOptions o;
        for (int k = 0; k < nb; ++k) {
          o.in.push_back(A.elements<double>(at(bi, k), block));
          o.in.push_back(B.elements<double>(at(k, bj), block));
        }
        parla::Array out = C.elements<double>(at(bi, bj), block);
        o.inout.push_back(out);
        rt.spawn(T(bi, bj), std::move(o), [&, bi, bj, out] {
          auto &d = dynamic_cast<parla::OpenclDevice &>(parla::current_device());
          cl_kernel k = kernels.get(d);
          cl_mem am = static_cast<cl_mem>(A.local()), bmem = static_cast<cl_mem>(B.local()),
                 cm = static_cast<cl_mem>(out.local());
          for (int kk = 0; kk < nb; ++kk) {
            const cl_ulong ao = at(bi, kk), bo = at(kk, bj), co = at(bi, bj);
            parla::set_kernel_args(k, am, ao, bmem, bo, cm, co, b);
            const size_t global[2] = {static_cast<size_t>(b), static_cast<size_t>(b)};
            parla::cl_check(clEnqueueNDRangeKernel(d.queue(), k, 2, nullptr, global, nullptr, 0,
                                                   nullptr, nullptr),
                            "clEnqueueNDRangeKernel");
          }
        });
      }
    rt.wait();
    C.sync_host();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The sequential reference, same order of the k sum.
    double worst = 0;
    for (int bi = 0; bi < nb; ++bi)
      for (int bj = 0; bj < nb; ++bj)
        for (int i = 0; i < b; ++i)
          for (int j = 0; j < b; ++j) {
            double s = 0;
            for (int kk = 0; kk < nb; ++kk)
              for (int k = 0; k < b; ++k)
                s += a[at(bi, kk) + static_cast<size_t>(i * b + k)] *
                     bm[at(kk, bj) + static_cast<size_t>(k * b + j)];
            const double got = c[at(bi, bj) + static_cast<size_t>(i * b + j)];
            worst = std::max(worst, std::fabs(got - s) / std::max(1.0, std::fabs(s)));
          }
    const bool ok = worst < 1e-12;
    std::printf(
        "parla_matmul: n=%d block=%d tasks=%d devices=%zu time=%.3f s max relative error=%.3g %s\n",
        n, b, nb * nb, count, seconds, worst, ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "parla_matmul: %s\n", e.what());
    return 1;
  }
}
