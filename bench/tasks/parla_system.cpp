// SPDX-License-Identifier: MIT
// parla: one runtime of host CPU devices; task (t, x) is T(t, x) of a fresh
// TaskSpace per run, after the tasks of row t-1 it reads. With the default
// vcus = 1 a device of k threads runs k tasks at once, so `devices` devices
// of cores/devices threads each run `cores` tasks at once either way.
// Threads as oneTBB's arena and OpenMP's team have them: cores - 1 workers
// and the calling thread, which runs tasks while it waits
// (Options::waiting_thread_helps); a worker per core besides the spawning
// thread made three threads share two cores while the graph was spawned.
#include <parla/parla.hpp>

#include "systems.hpp"

namespace taskbench {

namespace {

class ParlaSystem final : public System {
public:
  ParlaSystem(unsigned cores, unsigned devices)
      : devices_(devices), threads_(std::max(1u, cores / devices)),
        workers_(std::max(1u, cores - 1)),
        runtime_(parla::Options{.devices = parla::host_devices(devices_, threads_),
                                .threads = workers_,
                                .waiting_thread_helps = true}) {}

  std::string name() const override { return devices_ == 1 ? "parla" : "parla-devices"; }
  std::string config() const override {
    return std::to_string(devices_) + " host device(s) x " + std::to_string(threads_) +
           " thread(s), vcus=1; " + std::to_string(workers_) + " worker(s) + the waiting thread";
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
        runtime_.spawn(T(t, x),
                       {.after = parla::TaskRefs(std::move(after)), .placement = parla::Arch::cpu},
                       [g, values, t, x] { run_task(*g, values, t, x); });
      }
    }
    submitted();
    runtime_.wait(T);
  }

private:
  unsigned devices_, threads_, workers_;
  parla::Runtime runtime_;
};

} // namespace

std::unique_ptr<System> make_parla(unsigned cores, unsigned devices) {
  return std::make_unique<ParlaSystem>(cores, devices);
}

} // namespace taskbench
