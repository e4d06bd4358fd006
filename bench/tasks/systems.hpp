// SPDX-License-Identifier: MIT
// The task systems the benchmark compares. Each adapter builds the graph
// as its system's own tasks and dependencies, runs it to the end, and
// leaves every task's value in `values` (zeroed by the caller). A system is
// set up once (threads, runtime) and runs many graphs; the time of run()
// includes building and submitting the graph, as a program would pay it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "graph.hpp"

namespace taskbench {

class System {
public:
  virtual ~System() = default;
  virtual std::string name() const = 0;
  // How the system is configured ("1 device x 2 threads"), for the report.
  virtual std::string config() const = 0;
  virtual void run(const Graph &graph, uint64_t *values) = 0;
  // The FLOP/s of compute_bound tasks of `iterations` run without any
  // runtime on what this system runs its tasks on, best of `reps`; 0: the
  // host's cores (measured by task_bench itself).
  virtual double peak_flops(int64_t iterations, int reps) {
    (void)iterations, (void)reps;
    return 0;
  }
  // When the last run() had handed every task to the system: the time to
  // submit apart from the time to run (as StarPU's tasks_overhead reports).
  std::chrono::steady_clock::time_point submitted_at() const { return submitted_at_; }

protected:
  void submitted() { submitted_at_ = std::chrono::steady_clock::now(); }

private:
  std::chrono::steady_clock::time_point submitted_at_{};
};

// `cores` worker threads each (the spawning thread also builds the graph).
std::unique_ptr<System> make_parla(unsigned cores, unsigned devices);
std::unique_ptr<System> make_tbb(unsigned cores);
std::unique_ptr<System> make_openmp(unsigned cores);
std::unique_ptr<System> make_starpu(unsigned cores);
// parla over every OpenCL device the OpenCL library shows (through ava when
// the program runs under `ava run`), named `name`.
std::unique_ptr<System> make_parla_opencl(const std::string &name, bool runahead);

} // namespace taskbench
