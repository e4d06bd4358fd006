// SPDX-License-Identifier: MIT
// CUDA devices (parla/cuda.hpp): found, placed on as `gpu`, sized by what
// the runtime reports, and arrays moved to and from them. Skipped, saying
// why, where the CUDA runtime shows no device (no GPU here: it runs on a
// lent GPU machine).
#include <numeric>

#include "parla/cuda.hpp"
#include "parla_test_support.hpp"

using namespace parla;

namespace {
std::vector<std::unique_ptr<Device>> gpus() {
  std::string why;
  auto d = cuda_devices(&why);
  if (d.empty())
    cr_skip_test("no CUDA device (%s)", why.c_str());
  return d;
}
} // namespace

Test(cuda, devices_are_gpus_sized_by_what_they_report) {
  auto d = gpus();
  Runtime rt({.devices = std::move(d)});
  for (Device *dev : rt.devices(Arch::gpu)) {
    cr_expect_gt(dev->memory_capacity(), 0u);
    cr_expect_eq(dev->vcus(), 1.0);
  }
  TaskSpace T("T");
  auto h = rt.spawn(T[0], {.placement = Arch::gpu}, [] { return current_device().arch(); });
  cr_expect(h.get() == Arch::gpu);
}

Test(cuda, arrays_move_to_and_from_the_gpu) {
  auto d = gpus();
  Runtime rt({.devices = std::move(d)});
  TaskSpace T("T");
  std::vector<double> host(1 << 16);
  std::iota(host.begin(), host.end(), 0.0);
  Array a = Array::wrap(host);
  Device &gpu = *rt.devices(Arch::gpu).front();
  rt.spawn(T[0], {.placement = gpu, .inout = {a}}, [a] {
    std::vector<double> v(a.bytes() / sizeof(double));
    current_device().read(a.local(), 0, v.data(), a.bytes());
    for (double &x : v)
      x = -x;
    current_device().write(a.local(), 0, v.data(), a.bytes());
  });
  rt.wait();
  cr_expect_eq(a.valid_bytes_on(gpu), a.bytes());
  a.sync_host();
  for (size_t i = 0; i < host.size(); ++i)
    cr_assert_eq(host[i], -static_cast<double>(i));
}
