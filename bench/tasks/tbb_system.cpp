// SPDX-License-Identifier: MIT
// oneTBB flow graph: one continue_node per task, an edge from each task it
// reads; the nodes without inputs are started with try_put. The graph runs in a
// task_arena of `cores` threads (the calling thread joins it while waiting).
#include <deque>

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>

#include "systems.hpp"

namespace taskbench {

namespace {

using Node = tbb::flow::continue_node<tbb::flow::continue_msg>;

class TbbSystem final : public System {
public:
  explicit TbbSystem(unsigned cores) : cores_(cores), arena_(static_cast<int>(cores)) {}

  std::string name() const override { return "tbb"; }
  std::string config() const override {
    return "flow::continue_node, task_arena(" + std::to_string(cores_) + ")";
  }

  void run(const Graph &graph, uint64_t *values) override {
    arena_.execute([&] {
      tbb::flow::graph g;
      std::deque<Node> nodes; // continue_node is neither copyable nor movable
      std::vector<Node *> sources;
      int64_t deps[kMaxDeps];
      for (int64_t t = 0; t < graph.steps; ++t) {
        for (int64_t x = 0; x < graph.width; ++x) {
          nodes.emplace_back(g, [&graph, values, t, x](const tbb::flow::continue_msg &) {
            run_task(graph, values, t, x);
          });
          const int n = graph.dependencies(t, x, deps);
          if (n == 0)
            sources.push_back(&nodes.back());
          for (int i = 0; i < n; ++i)
            tbb::flow::make_edge(nodes[static_cast<size_t>((t - 1) * graph.width + deps[i])],
                                 nodes.back());
        }
      }
      // Tasks without inputs start only once the whole graph is built, so
      // that no edge is added to a node that already ran.
      for (Node *node : sources)
        node->try_put(tbb::flow::continue_msg());
      submitted();
      g.wait_for_all();
    });
  }

private:
  unsigned cores_;
  tbb::task_arena arena_;
};

} // namespace

std::unique_ptr<System> make_tbb(unsigned cores) {
  return std::make_unique<TbbSystem>(cores);
}

} // namespace taskbench
