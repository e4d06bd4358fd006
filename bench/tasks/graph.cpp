// SPDX-License-Identifier: MIT
#include "graph.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>

namespace taskbench {

namespace {

constexpr std::string_view kPatternNames[] = {"trivial", "no_comm", "stencil_1d",
                                              "nearest", "fft",     "tree"};

// splitmix64's finaliser: every input bit reaches every output bit.
uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// What the kernel contributes to every value. It depends on the kernel
// settings only, so reference() can compute it once while every task of a
// run still has to execute the kernel to produce it.
uint64_t kernel_bits(const Graph &graph) {
  if (graph.kernel == Kernel::busy_wait) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(graph.spin_ns);
    while (std::chrono::steady_clock::now() < until) {
    }
    return static_cast<uint64_t>(graph.spin_ns);
  }
  const double sum = compute_kernel(graph.iterations);
  uint64_t bits;
  std::memcpy(&bits, &sum, sizeof bits);
  return bits;
}

uint64_t task_value(const Graph &graph, const uint64_t *values, int64_t t, int64_t x,
                    uint64_t kernel) {
  uint64_t h = mix(static_cast<uint64_t>(t * graph.width + x) + 1);
  int64_t deps[kMaxDeps];
  const int n = graph.dependencies(t, x, deps);
  const uint64_t *previous = values + (t - 1) * graph.width;
  for (int i = 0; i < n; ++i)
    h = mix(h ^ previous[deps[i]]);
  return mix(h ^ kernel);
}

} // namespace

std::string_view name(Pattern pattern) {
  return kPatternNames[static_cast<int>(pattern)];
}

std::string_view name(Kernel kernel) {
  return kernel == Kernel::compute_bound ? "compute_bound" : "busy_wait";
}

std::optional<Pattern> parse_pattern(std::string_view text) {
  for (size_t i = 0; i < std::size(kPatternNames); ++i)
    if (text == kPatternNames[i])
      return static_cast<Pattern>(i);
  return std::nullopt;
}

int Graph::dependencies(int64_t t, int64_t x, int64_t *out) const {
  if (t == 0)
    return 0;
  int n = 0;
  // Points [first, last] of the previous row, clipped to the row.
  auto span = [&](int64_t first, int64_t last) {
    for (int64_t d = std::max<int64_t>(first, 0); d <= std::min(last, width - 1); ++d)
      out[n++] = d;
  };
  switch (pattern) {
  case Pattern::trivial:
    break;
  case Pattern::no_comm:
    out[n++] = x;
    break;
  case Pattern::stencil_1d:
    span(x - 1, x + 1);
    break;
  case Pattern::nearest: {
    // radix points centred on x (one more to the right for an even radix).
    const int r = std::clamp(radix, 1, kMaxDeps);
    span(x - (r - 1) / 2, x + r / 2);
    break;
  }
  case Pattern::fft: {
    // A butterfly: x and its partner 2^k away, k cycling over the row's
    // bits, so that after log2(width) rows every point has seen every other.
    const int bits =
        std::max(1, static_cast<int>(std::bit_width(static_cast<uint64_t>(width - 1))));
    const int64_t partner = x ^ (int64_t{1} << ((t - 1) % bits));
    if (partner < width) {
      out[n++] = std::min(x, partner);
      out[n++] = std::max(x, partner);
    } else {
      out[n++] = x;
    }
    break;
  }
  case Pattern::tree:
    // A binary broadcast tree, rebuilt every row: x reads its parent x/2.
    out[n++] = x / 2;
    break;
  }
  return n;
}

double Graph::flops_per_task() const {
  // compute_kernel: 16 lanes, one multiply and one add per lane per round.
  return kernel == Kernel::compute_bound ? 32.0 * static_cast<double>(iterations) : 0.0;
}

std::string Graph::describe() const {
  std::string s = std::string(name(pattern));
  if (pattern == Pattern::nearest)
    s += "(radix " + std::to_string(radix) + ")";
  s += " " + std::to_string(width) + "x" + std::to_string(steps) + " " + std::string(name(kernel));
  s += kernel == Kernel::compute_bound ? " iterations=" + std::to_string(iterations)
                                       : " spin_ns=" + std::to_string(spin_ns);
  return s;
}

double compute_kernel(int64_t iterations) {
  // Independent lanes so the loop can use every FMA/SIMD unit; a multiplier
  // below 1 keeps the values bounded however long it runs. Few enough lanes
  // to live in registers once the lane loop is unrolled: an array in memory
  // made the kernel's speed depend on where the caller's stack happened to
  // be (store forwarding), i.e. on the runtime calling it.
  constexpr int kLanes = 16;
  double a[kLanes];
  for (int i = 0; i < kLanes; ++i)
    a[i] = 1.0 + i * 1e-3;
  const double m = 0.9999999, c = 1e-7;
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (double &v : a)
      v = v * m + c;
  }
  double sum = 0;
  for (double v : a)
    sum += v;
  return sum;
}

void run_task(const Graph &graph, uint64_t *values, int64_t t, int64_t x) {
  values[t * graph.width + x] = task_value(graph, values, t, x, kernel_bits(graph));
}

std::vector<uint64_t> reference(const Graph &graph) {
  std::vector<uint64_t> values(static_cast<size_t>(graph.tasks()));
  const uint64_t kernel = kernel_bits(graph);
  for (int64_t t = 0; t < graph.steps; ++t)
    for (int64_t x = 0; x < graph.width; ++x)
      values[t * graph.width + x] = task_value(graph, values.data(), t, x, kernel);
  return values;
}

} // namespace taskbench
