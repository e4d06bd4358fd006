// SPDX-License-Identifier: MIT
// A clean-room Task Bench-style task graph: `steps` rows of `width` points,
// where task (t, x) reads the outputs of some points of row t-1 chosen by a
// closed-form dependence pattern, runs a kernel, and writes one 64-bit
// value. The value hashes the task's coordinates, its inputs' values and the
// kernel's result, so a task that ran before one of its inputs was written
// (or read the wrong one) changes every value after it: comparing the last
// row with reference() checks that a runtime ran the right graph.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskbench {

enum class Pattern { trivial, no_comm, stencil_1d, nearest, fft, tree };
enum class Kernel { compute_bound, busy_wait };

inline constexpr int kMaxDeps = 16;

std::string_view name(Pattern pattern);
std::string_view name(Kernel kernel);
std::optional<Pattern> parse_pattern(std::string_view text);

struct Graph {
  Pattern pattern = Pattern::stencil_1d;
  int64_t width = 4;
  int64_t steps = 10;
  int radix = 5; // nearest: how many points of the previous row, centred on x
  Kernel kernel = Kernel::compute_bound;
  int64_t iterations = 0; // compute_bound: FMA rounds over the local array
  int64_t spin_ns = 0;    // busy_wait: how long each task spins

  int64_t tasks() const { return width * steps; }
  // The points of row t-1 that (t, x) reads, ascending and distinct, into
  // out (kMaxDeps at most); none in row 0.
  int dependencies(int64_t t, int64_t x, int64_t *out) const;
  // Floating-point operations of one compute_bound task.
  double flops_per_task() const;
  std::string describe() const;
};

// The body every adapter runs for (t, x): reads its inputs from
// values[(t-1)*width + d], runs the kernel, writes values[t*width + x].
// values holds tasks() entries, zeroed before a run.
void run_task(const Graph &graph, uint64_t *values, int64_t t, int64_t x);

// The values a correct run leaves, computed sequentially (the kernel's
// result depends only on the graph's kernel settings, so it runs once).
std::vector<uint64_t> reference(const Graph &graph);

// The compute_bound kernel alone (what the peak is measured with).
double compute_kernel(int64_t iterations);

} // namespace taskbench
