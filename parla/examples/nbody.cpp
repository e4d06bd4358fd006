// SPDX-License-Identifier: MIT
// N-body steps over whatever devices there are: the host's CPUs
// (`--host N`: N host CPU devices) or every OpenCL device (the default).
// Bodies are split in blocks; task S(step, block) reads every position of
// the step, writes its block's next positions and updates its velocities.
// One function, two variants: plain C++ on host CPU devices, an OpenCL
// kernel on OpenCL devices. The result is checked against the same steps
// run sequentially on the host.
//
//   parla_nbody [--host N] [BODIES] [BLOCKS] [STEPS]   (defaults 1024 8 4)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "parla/opencl.hpp"
#include "parla/parla.hpp"

namespace {

constexpr double kDt = 0.01, kSoft = 0.01;

const char *kSource = R"CL(
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF
__kernel void nbody_step(__global const double *pos, __global double *next, __global double *vel,
                   int n, int first, double dt, double soft) {
  const int i = first + get_global_id(0);
  double ax = 0, ay = 0, az = 0;
  for (int j = 0; j < n; ++j) {
    const double dx = pos[3 * j] - pos[3 * i], dy = pos[3 * j + 1] - pos[3 * i + 1],
                 dz = pos[3 * j + 2] - pos[3 * i + 2];
    const double r2 = dx * dx + dy * dy + dz * dz + soft;
    const double inv = 1.0 / (r2 * sqrt(r2));
    ax += dx * inv; ay += dy * inv; az += dz * inv;
  }
  vel[3 * i] += dt * ax; vel[3 * i + 1] += dt * ay; vel[3 * i + 2] += dt * az;
  next[3 * i] = pos[3 * i] + dt * vel[3 * i];
  next[3 * i + 1] = pos[3 * i + 1] + dt * vel[3 * i + 1];
  next[3 * i + 2] = pos[3 * i + 2] + dt * vel[3 * i + 2];
}
)CL";

// The same arithmetic as the kernel, for body i.
void step_body(const double *pos, double *next, double *vel, int n, int i) {
  double ax = 0, ay = 0, az = 0;
  for (int j = 0; j < n; ++j) {
    const double dx = pos[3 * j] - pos[3 * i], dy = pos[3 * j + 1] - pos[3 * i + 1],
                 dz = pos[3 * j + 2] - pos[3 * i + 2];
    const double r2 = dx * dx + dy * dy + dz * dz + kSoft;
    const double inv = 1.0 / (r2 * std::sqrt(r2));
    ax += dx * inv;
    ay += dy * inv;
    az += dz * inv;
  }
  vel[3 * i] += kDt * ax;
  vel[3 * i + 1] += kDt * ay;
  vel[3 * i + 2] += kDt * az;
  for (int d = 0; d < 3; ++d)
    next[3 * i + d] = pos[3 * i + d] + kDt * vel[3 * i + d];
}

} // namespace

int main(int argc, char **argv) {
  int arg = 1;
  unsigned host = 0;
  if (arg + 1 < argc && std::strcmp(argv[arg], "--host") == 0) {
    host = static_cast<unsigned>(std::atoi(argv[arg + 1]));
    arg += 2;
  }
  const int n = arg < argc ? std::atoi(argv[arg++]) : 1024;
  const int blocks = arg < argc ? std::atoi(argv[arg++]) : 8;
  const int steps = arg < argc ? std::atoi(argv[arg++]) : 4;
  if (n <= 0 || blocks <= 0 || n % blocks != 0 || steps <= 0) {
    std::fprintf(
        stderr,
        "usage: parla_nbody [--host N] [BODIES] [BLOCKS] [STEPS] (BLOCKS divides BODIES)\n");
    return 2;
  }
  const int per = n / blocks;
  std::vector<double> pos[2] = {std::vector<double>(3 * static_cast<size_t>(n)),
                                std::vector<double>(3 * static_cast<size_t>(n))};
  std::vector<double> vel(3 * static_cast<size_t>(n), 0.0);
  for (size_t i = 0; i < pos[0].size(); ++i)
    pos[0][i] = std::sin(1.7 * static_cast<double>(i)) * 10;
  std::vector<double> ref_pos[2] = {pos[0], pos[1]}, ref_vel = vel;
  try {
    auto devices = host > 0 ? parla::host_devices(host) : parla::opencl_devices();
    if (devices.empty()) {
      std::fprintf(stderr, "parla_nbody: no device\n");
      return 1;
    }
    const size_t count = devices.size();
    const parla::Arch arch = devices.front()->arch();
    parla::Runtime rt({.devices = std::move(devices)});
    parla::Array P[2] = {parla::Array::wrap(pos[0]), parla::Array::wrap(pos[1])};
    parla::Array V = parla::Array::wrap(vel);
    parla::KernelCache kernels(kSource, "nbody_step");
    parla::Variants<void(const parla::Array &, const parla::Array &, const parla::Array &, int)>
        step;
    step.on({parla::Arch::cpu}, [n, per](const parla::Array &p, const parla::Array &next,
                                         const parla::Array &v, int b) {
      for (int i = b * per; i < (b + 1) * per; ++i)
        step_body(p.host<double>(), next.host<double>() - next.offset() / sizeof(double),
                  v.host<double>() - v.offset() / sizeof(double), n, i);
    });
    auto on_opencl = [&kernels, n, per](const parla::Array &p, const parla::Array &next,
                                        const parla::Array &v, int b) {
      auto &d = dynamic_cast<parla::OpenclDevice &>(parla::current_device());
      cl_kernel k = kernels.get(d);
      cl_mem pm = static_cast<cl_mem>(p.local()), nm = static_cast<cl_mem>(next.local()),
             vm = static_cast<cl_mem>(v.local());
      const int first = b * per;
      const double dt = kDt, soft = kSoft;
      parla::set_kernel_args(k, pm, nm, vm, n, first, dt, soft);
      const size_t global = static_cast<size_t>(per);
      parla::cl_check(
          clEnqueueNDRangeKernel(d.queue(), k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel");
    };
    step.on({parla::Arch::cl_cpu}, on_opencl).on({parla::Arch::gpu}, on_opencl);
    parla::TaskSpace S("S");
    for (int s = 0; s < steps; ++s)
      for (int b = 0; b < blocks; ++b) {
        const parla::Array &cur = P[s % 2];
        parla::Array next = P[(s + 1) % 2].elements<double>(3 * static_cast<size_t>(b * per),
                                                            3 * static_cast<size_t>(per));
        parla::Array v =
            V.elements<double>(3 * static_cast<size_t>(b * per), 3 * static_cast<size_t>(per));
        // Step s reads every position of step s - 1 and overwrites the
        // buffer step s - 1 read.
        parla::TaskRefs after = s > 0 ? S(s - 1, parla::slice(0, blocks)) : parla::TaskRefs();
        rt.spawn(S(s, b),
                 {.after = after, .placement = arch, .in = {cur}, .out = {next}, .inout = {v}},
                 [&step, cur, next, v, b] { step(cur, next, v, b); });
      }
    rt.wait();
    P[steps % 2].sync_host();
    for (int s = 0; s < steps; ++s)
      for (int i = 0; i < n; ++i)
        step_body(ref_pos[s % 2].data(), ref_pos[(s + 1) % 2].data(), ref_vel.data(), n, i);
    double worst = 0;
    const std::vector<double> &got = pos[steps % 2], &want = ref_pos[steps % 2];
    for (size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, std::fabs(got[i] - want[i]) / std::max(1.0, std::fabs(want[i])));
    const bool ok = worst < 1e-9;
    std::printf(
        "parla_nbody: bodies=%d blocks=%d steps=%d devices=%zu (%s) max relative error=%.3g %s\n",
        n, blocks, steps, count, std::string(parla::to_string(arch)).c_str(), worst,
        ok ? "OK" : "WRONG");
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "parla_nbody: %s\n", e.what());
    return 1;
  }
}
