// SPDX-License-Identifier: MIT
// OpenMP tasks: one thread of a `cores`-thread team creates every task,
// each with depend(in:) on the values it reads (an OpenMP 5.0 iterator over
// its dependence list) and depend(out:) on the value it writes; the
// barrier at the end of the single construct waits for them all.
#include <omp.h>

#include "systems.hpp"

namespace taskbench {

namespace {

class OpenMpSystem final : public System {
public:
  explicit OpenMpSystem(unsigned cores) : cores_(cores) {}

  std::string name() const override { return "openmp"; }
  std::string config() const override {
    return "task depend, " + std::to_string(cores_) + " threads (" + vendor() + ")";
  }

  void run(const Graph &graph, uint64_t *values) override {
    const int64_t width = graph.width;
    // clang-format off
#pragma omp parallel num_threads(static_cast<int>(cores_))
    // clang-format on
#pragma omp single
    {
      for (int64_t t = 0; t < graph.steps; ++t) {
        for (int64_t x = 0; x < width; ++x) {
          int64_t deps[kMaxDeps];
          // The analyzer does not see the depend clauses read n.
          // NOLINTNEXTLINE(clang-analyzer-deadcode.DeadStores)
          const int n = graph.dependencies(t, x, deps);
          // Used only in the depend clauses, which GCC 12 does not count as uses.
          [[maybe_unused]] const uint64_t *previous = values + (t > 0 ? t - 1 : 0) * width;
          [[maybe_unused]] uint64_t *mine = values + t * width + x;
          // clang-format off
#pragma omp task firstprivate(t, x) depend(iterator(i = 0 : n), in : previous[deps[i]]) depend(out : mine[0])
          // clang-format on
          run_task(graph, values, t, x);
        }
      }
      // The tasks run at the single's closing barrier (or meanwhile).
      submitted();
    }
  }

private:
  static std::string vendor() {
#ifdef __clang__
    return "libomp";
#else
    return "libgomp";
#endif
  }
  unsigned cores_;
};

} // namespace

std::unique_ptr<System> make_openmp(unsigned cores) {
  return std::make_unique<OpenMpSystem>(cores);
}

} // namespace taskbench
