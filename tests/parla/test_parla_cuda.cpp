// SPDX-License-Identifier: MIT
// CUDA devices (parla/cuda.hpp): found, placed on as `gpu`, sized by what
// the runtime reports, and arrays moved to and from them. Skipped, saying
// why, where the CUDA runtime shows no device (no GPU here: it runs on a
// lent GPU machine).
#include <atomic>
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

namespace {
void ok(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw Error(std::string(what) + ": " + cudaGetErrorName(e));
}

// A host function on the stream that holds the stream's later work back
// until the test opens it (CUDA's counterpart of an OpenCL user event).
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  static void CUDART_CB hold(void *self) {
    auto *g = static_cast<Gate *>(self);
    std::unique_lock lock(g->mu);
    g->cv.wait(lock, [g] { return g->open; });
  }
  void release() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
};
} // namespace

// Runahead on a GPU: B's body queues its copy while A's work is held back
// on the stream, and the copy still sees what A wrote (stream order, or
// cudaStreamWaitEvent on another GPU). Device-to-device, so that no copy
// can wait on the host.
Test(cuda, runahead_queues_a_dependent_behind_its_dependency) {
  auto d = gpus();
  Runtime rt({.devices = std::move(d), .runahead = true});
  TaskSpace T("T");
  std::vector<Device *> g = rt.devices(Arch::gpu);
  auto &a_dev = dynamic_cast<CudaDevice &>(*g.front());
  auto &b_dev = dynamic_cast<CudaDevice &>(*g.back());
  a_dev.make_current();
  uint32_t *buf = nullptr; // [0]: A's, [1]: B's copy of it
  ok(cudaMalloc(reinterpret_cast<void **>(&buf), 2 * sizeof(uint32_t)), "cudaMalloc");
  ok(cudaMemset(buf, 0, 2 * sizeof(uint32_t)), "cudaMemset");
  Gate gate;
  std::atomic<bool> a_done_when_b_ran{true};
  auto a = rt.spawn(T[0], {.placement = a_dev}, [&a_dev, &gate, buf] {
    a_dev.make_current();
    ok(cudaLaunchHostFunc(a_dev.stream(), Gate::hold, &gate), "cudaLaunchHostFunc");
    ok(cudaMemsetAsync(buf, 7, sizeof(uint32_t), a_dev.stream()), "cudaMemsetAsync");
  });
  parla_test::Rendezvous b_ran(2);
  rt.spawn(T[1], {.after = {T[0]}, .placement = b_dev},
           [&b_dev, buf, &a_done_when_b_ran, &b_ran, a] {
             b_dev.make_current();
             ok(cudaMemcpyAsync(buf + 1, buf, sizeof(uint32_t), cudaMemcpyDeviceToDevice,
                                b_dev.stream()),
                "cudaMemcpyAsync");
             a_done_when_b_ran = a.done();
             b_ran.arrive_and_wait();
           });
  cr_expect(b_ran.arrive_and_wait(), "B's body ran while A's work was held back");
  cr_expect(!a_done_when_b_ran.load(), "A was not done when B's body ran");
  gate.release();
  rt.wait();
  uint32_t seen = 0;
  a_dev.make_current();
  ok(cudaMemcpy(&seen, buf + 1, sizeof seen, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cr_expect_eq(seen, 0x07070707u, "B's copy ran after A's memset (got %#x)", seen);
  cudaFree(buf);
}
