// SPDX-License-Identifier: MIT
// parla-opencl: the same graphs, each task's kernel run on an OpenCL device
// (PoCL here; natively, or through ava when task_bench runs under `ava run`,
// which is what the "PoCL through ava within 2x of PoCL directly" target
// compares). A task enqueues compute_kernel's OpenCL twin on its device and
// computes its value on the host; the runtime completes the task once the
// device's queue has finished (one clFinish per task), so a dependent starts
// after its inputs' kernels ran. Every device takes one task at a time
// (vcus = 1), as one in-order queue runs one kernel at a time anyway.
// parla-opencl-runahead: the same with Options::runahead, where a task
// completes in its marker's callback and a dependent's body queues its
// kernel behind its inputs' on the devices (a barrier on their markers)
// as soon as their bodies returned.
//
// Its efficiency is against the devices' own peak (peak_flops: the kernel
// alone, queued back to back on every device at once), not the host's.
#include <parla/opencl.hpp>
#include <parla/parla.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "systems.hpp"

namespace taskbench {

namespace {

// graph.cpp's compute_kernel: 16 independent lanes, one multiply and one
// add per lane per round (32 FLOP per iteration).
constexpr const char *kSource = R"CLC(
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void task_kernel(long iterations, __global double *out) {
  double a[16];
  for (int i = 0; i < 16; ++i)
    a[i] = 1.0 + i * 1e-3;
  const double m = 0.9999999, c = 1e-7;
  for (long it = 0; it < iterations; ++it)
    for (int i = 0; i < 16; ++i)
      a[i] = a[i] * m + c;
  double sum = 0;
  for (int i = 0; i < 16; ++i)
    sum += a[i];
  out[get_global_id(0)] = sum;
}
)CLC";

std::vector<std::unique_ptr<parla::Device>> devices_or_throw() {
  auto devices = parla::opencl_devices();
  if (devices.empty())
    throw std::runtime_error("parla-opencl: no OpenCL device (is PoCL installed?)");
  return devices;
}

class OpenclSystem final : public System {
public:
  OpenclSystem(std::string name, bool runahead)
      : name_(std::move(name)), runahead_(runahead),
        runtime_(parla::Options{.devices = devices_or_throw(), .runahead = runahead}),
        kernels_(kSource, "task_kernel") {
    for (parla::Device *d : runtime_.devices()) {
      auto &cl = dynamic_cast<parla::OpenclDevice &>(*d);
      cl_int e = CL_SUCCESS;
      cl_mem out = clCreateBuffer(cl.context(), CL_MEM_READ_WRITE, sizeof(double), nullptr, &e);
      parla::cl_check(e, "clCreateBuffer");
      outputs_.push_back({&cl, out});
      kernels_.get(cl); // built before any timing
    }
  }
  ~OpenclSystem() override {
    runtime_.wait();
    for (auto &[device, out] : outputs_)
      clReleaseMemObject(out);
  }

  std::string name() const override { return name_; }
  std::string config() const override {
    std::string s = std::to_string(outputs_.size()) + " OpenCL device(s), vcus=1" +
                    (runahead_ ? ", runahead:" : ":");
    for (auto &[device, out] : outputs_)
      s += " [" + device->description() + "]";
    return s;
  }

  void run(const Graph &graph, uint64_t *values) override {
    parla::TaskSpace T("T");
    const Graph *g = &graph;
    int64_t deps[kMaxDeps];
    for (int64_t t = 0; t < graph.steps; ++t) {
      for (int64_t x = 0; x < graph.width; ++x) {
        const int n = graph.dependencies(t, x, deps);
        std::vector<parla::TaskRef> after;
        after.reserve(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i)
          after.push_back(T(t - 1, deps[i]));
        runtime_.spawn(T(t, x), {.after = parla::TaskRefs(std::move(after))},
                       [this, g, values, t, x] {
                         if (g->kernel == Kernel::compute_bound && g->iterations > 0)
                           enqueue(dynamic_cast<parla::OpenclDevice &>(parla::current_device()),
                                   g->iterations, 1);
                         run_task(*g, values, t, x);
                       });
      }
    }
    submitted();
    runtime_.wait(T);
  }

  double peak_flops(int64_t iterations, int reps) override {
    // Enough kernels per device that one queue's start and end do not count.
    const auto once = [&] {
      const auto start = std::chrono::steady_clock::now();
      for (auto &[device, out] : outputs_)
        enqueue(*device, iterations, 1);
      for (auto &[device, out] : outputs_)
        parla::cl_check(clFinish(device->queue()), "clFinish");
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    once(); // warm up
    const int per_device = std::clamp(static_cast<int>(0.05 / once()), 4, 1000);
    double best = 0;
    for (int r = 0; r < reps; ++r) {
      const auto start = std::chrono::steady_clock::now();
      for (int k = 0; k < per_device; ++k)
        for (auto &[device, out] : outputs_)
          enqueue(*device, iterations, 1);
      for (auto &[device, out] : outputs_)
        parla::cl_check(clFinish(device->queue()), "clFinish");
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best = std::max(best, Graph{.iterations = iterations}.flops_per_task() * per_device *
                                static_cast<double>(outputs_.size()) / wall);
    }
    return best;
  }

private:
  // One work-item of the kernel on the device's compute queue; called from
  // one thread per device at a time (a task, with vcus 1, has the device).
  void enqueue(parla::OpenclDevice &device, int64_t iterations, size_t items) {
    cl_mem out = nullptr;
    for (auto &[d, o] : outputs_)
      if (d == &device)
        out = o;
    cl_kernel k = kernels_.get(device);
    const cl_long n = iterations;
    parla::set_kernel_args(k, n, out);
    parla::cl_check(
        clEnqueueNDRangeKernel(device.queue(), k, 1, nullptr, &items, nullptr, 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel");
  }

  std::string name_;
  bool runahead_;
  parla::Runtime runtime_;
  parla::KernelCache kernels_;
  std::vector<std::pair<parla::OpenclDevice *, cl_mem>> outputs_;
};

} // namespace

std::unique_ptr<System> make_parla_opencl(const std::string &name, bool runahead) {
  return std::make_unique<OpenclSystem>(name, runahead);
}

} // namespace taskbench
