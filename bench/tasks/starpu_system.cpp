// SPDX-License-Identifier: MIT
// StarPU (1.3): one task per point on `cores` CPU workers, ordered by tags
// (as StarPU's own tasks_overhead benchmark does): task (t, x) carries tag
// base + t*width + x and declares the tags of the tasks it reads. Tags are
// unique per run and removed after it, so runs do not accumulate them.
// StarPU's scheduler is left at its default (STARPU_SCHED may pick another).
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include <starpu.h>

#include "systems.hpp"

namespace taskbench {

namespace {

struct TaskArgs {
  const Graph *graph;
  uint64_t *values;
  int64_t t, x;
};

void cpu_body(void ** /*buffers*/, void *arg) {
  const auto *a = static_cast<const TaskArgs *>(arg);
  run_task(*a->graph, a->values, a->t, a->x);
}

class StarPuSystem final : public System {
public:
  explicit StarPuSystem(unsigned cores) : cores_(cores) {
    // Its banner and warnings would end up in the benchmark's table.
    setenv("STARPU_SILENT", "1", 0);
    starpu_conf conf;
    starpu_conf_init(&conf);
    conf.ncpus = static_cast<int>(cores);
    conf.ncuda = 0;
    conf.nopencl = 0; // its OpenCL workers would be PoCL, i.e. the same CPUs again
    if (int rc = starpu_init(&conf); rc != 0)
      throw std::runtime_error("starpu_init failed (" + std::to_string(rc) + ")");
    starpu_codelet_init(&codelet_);
    codelet_.cpu_funcs[0] = cpu_body;
    codelet_.nbuffers = 0;
    codelet_.name = "task_bench";
  }
  ~StarPuSystem() override { starpu_shutdown(); }

  std::string name() const override { return "starpu"; }
  std::string config() const override {
    const char *sched = std::getenv("STARPU_SCHED");
    return std::to_string(cores_) + " CPU workers, tags, scheduler " +
           (sched ? sched : "default (lws)");
  }

  void run(const Graph &graph, uint64_t *values) override {
    const size_t tasks = static_cast<size_t>(graph.tasks());
    std::vector<TaskArgs> args(tasks);
    // Independent tasks need no tags: StarPU pays for them only where used.
    const bool tagged = graph.steps > 1 && graph.pattern != Pattern::trivial;
    const starpu_tag_t base = next_tag_;
    next_tag_ += tasks;
    int64_t deps[kMaxDeps];
    starpu_tag_t dep_tags[kMaxDeps];
    for (int64_t t = 0; t < graph.steps; ++t) {
      for (int64_t x = 0; x < graph.width; ++x) {
        const size_t id = static_cast<size_t>(t * graph.width + x);
        args[id] = {&graph, values, t, x};
        starpu_task *task = starpu_task_create();
        task->cl = &codelet_;
        task->cl_arg = &args[id];
        task->cl_arg_size = sizeof(TaskArgs);
        if (tagged) {
          task->use_tag = 1;
          task->tag_id = base + id;
          const int n = graph.dependencies(t, x, deps);
          for (int i = 0; i < n; ++i)
            dep_tags[i] = base + static_cast<starpu_tag_t>((t - 1) * graph.width + deps[i]);
          if (n > 0)
            starpu_tag_declare_deps_array(task->tag_id, static_cast<unsigned>(n), dep_tags);
        }
        if (int rc = starpu_task_submit(task); rc != 0)
          throw std::runtime_error("starpu_task_submit failed (" + std::to_string(rc) + ")");
      }
    }
    submitted();
    starpu_task_wait_for_all();
    if (tagged)
      for (size_t id = 0; id < tasks; ++id)
        starpu_tag_remove(base + id);
  }

private:
  unsigned cores_;
  starpu_codelet codelet_;
  starpu_tag_t next_tag_ = 1;
};

} // namespace

std::unique_ptr<System> make_starpu(unsigned cores) {
  return std::make_unique<StarPuSystem>(cores);
}

} // namespace taskbench
