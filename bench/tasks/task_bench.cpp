// SPDX-License-Identifier: MIT
// task_bench: per-task overhead and METG(50%) of parla, oneTBB flow graph,
// OpenMP task depend and StarPU, all in one run on the same graphs (see
// bench/README.md, "Task benchmark"). Every run is checked against a
// sequential reference; a wrong graph is an error (exit status 1).
//
//   task_bench [--verify] [--quick] [--out DIR] [--systems a,b] [--patterns a,b]
//              [--cores N] [--reps N] [--label L] [--merge TASKS.json]
// --verify runs a few hundred tasks of every pattern on every system and
// only checks them (the ctest). AVA_BENCH_QUICK=1 is --quick. --label
// appends L to every system's name (parla-opencl@ava-shm, for a run under
// `ava run`); --merge adds another run's systems to this run's report, so
// that the targets compare them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "report.hpp"
#include "systems.hpp"

using namespace taskbench;

namespace {

struct Config {
  bool verify_only = false;
  bool quick = false;
  std::string out_dir;
  std::vector<std::string> systems{"parla", "tbb", "openmp", "starpu"};
  std::vector<std::string> patterns{"stencil_1d", "nearest", "trivial", "fft", "tree"};
  unsigned cores = 0;
  int reps = 5; // rounds: a figure is the best of them
  std::string label;
  std::vector<std::string> merge;
};

std::vector<std::string> split(const std::string &s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    if (comma > start)
      out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: task_bench [--verify] [--quick] [--out DIR] [--systems a,b] "
               "[--patterns a,b] [--cores N] [--reps N] [--label L] [--merge TASKS.json]\n");
  std::exit(2);
}

Config parse(int argc, char **argv) {
  Config c;
  bool reps_given = false;
  const char *quick = std::getenv("AVA_BENCH_QUICK");
  c.quick = quick && *quick && std::strcmp(quick, "0") != 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage();
      return argv[++i];
    };
    if (a == "--verify")
      c.verify_only = true;
    else if (a == "--quick")
      c.quick = true;
    else if (a == "--out")
      c.out_dir = value();
    else if (a == "--systems")
      c.systems = split(value());
    else if (a == "--patterns")
      c.patterns = split(value());
    else if (a == "--cores")
      c.cores = static_cast<unsigned>(std::stoul(value()));
    else if (a == "--reps")
      c.reps = std::max(1, std::stoi(value())), reps_given = true;
    else if (a == "--label")
      c.label = value();
    else if (a == "--merge")
      c.merge.push_back(value());
    else
      usage();
  }
  if (c.cores == 0)
    c.cores = std::max(1u, std::thread::hardware_concurrency());
  if (c.quick) {
    if (!reps_given)
      c.reps = 3;
    c.patterns.resize(std::min<size_t>(c.patterns.size(), 2)); // stencil_1d, nearest
  }
  for (const auto &p : c.patterns)
    if (!parse_pattern(p))
      throw std::runtime_error("unknown pattern '" + p + "'");
  return c;
}

// A deliberately wrong system (rows in reverse order), so that the test can
// check that a wrong graph is caught.
class ReversedSystem final : public System {
public:
  std::string name() const override { return "reversed"; }
  std::string config() const override { return "sequential, rows in reverse order"; }
  void run(const Graph &graph, uint64_t *values) override {
    for (int64_t t = graph.steps - 1; t >= 0; --t)
      for (int64_t x = 0; x < graph.width; ++x)
        run_task(graph, values, t, x);
  }
};

std::unique_ptr<System> make_system(const std::string &name, unsigned cores,
                                    const std::string &label) {
  if (name == "parla-opencl" || name == "parla-opencl-runahead")
    return make_parla_opencl(name + label, name == "parla-opencl-runahead");
  if (!label.empty())
    throw std::runtime_error("--label is for parla-opencl(-runahead) (the systems ava remotes)");
  if (name == "reversed")
    return std::make_unique<ReversedSystem>();
  if (name == "parla")
    return make_parla(cores, 1);
  if (name == "parla-devices") // one device per core: the alternative layout
    return make_parla(cores, cores);
  if (name == "tbb")
    return make_tbb(cores);
  if (name == "openmp")
    return make_openmp(cores);
  if (name == "starpu")
    return make_starpu(cores);
  throw std::runtime_error("unknown system '" + name + "'");
}

// The 1-minute load average: other work on the host shows in every figure.
double load_average() {
  double load = NAN;
  std::ifstream("/proc/loadavg") >> load;
  return load;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Timing {
  double wall_s = INFINITY;
  double submit_s = 0; // until every task was handed over
};

// Runs the graph once on the system. Throws if any value differs from the
// sequential reference.
Timing timed_run(System &system, const Graph &graph, const std::vector<uint64_t> &expected) {
  std::vector<uint64_t> values(expected.size(), 0);
  const auto start = std::chrono::steady_clock::now();
  system.run(graph, values.data());
  const auto end = std::chrono::steady_clock::now();
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] != expected[i])
      throw std::runtime_error(system.name() + " computed a wrong graph (" + graph.describe() +
                               "): task (" + std::to_string(i / graph.width) + ", " +
                               std::to_string(i % graph.width) +
                               ") differs from the sequential run");
  using seconds = std::chrono::duration<double>;
  return {seconds(end - start).count(), seconds(system.submitted_at() - start).count()};
}

// The run with the shortest wall time.
Timing best_of(System &system, const Graph &graph, int reps) {
  const auto expected = reference(graph);
  Timing best;
  for (int r = 0; r < reps; ++r)
    if (const Timing t = timed_run(system, graph, expected); t.wall_s < best.wall_s)
      best = t;
  return best;
}

// The kernel alone on every core in parallel, without any runtime.
double measure_peak(unsigned cores, int64_t iterations, int reps) {
  // Long enough (~50 ms) that starting the threads does not count.
  const double once_s = [&] {
    const double start = now_s();
    if (compute_kernel(iterations) == 0)
      std::fprintf(stderr, "(kernel returned 0)\n");
    return now_s() - start;
  }();
  const int per_thread = std::clamp(static_cast<int>(0.05 / once_s), 4, 1000);
  double best_flops = 0;
  for (int r = 0; r < reps; ++r) {
    std::vector<std::thread> threads;
    std::vector<double> sink(cores);
    const double start = now_s();
    for (unsigned c = 0; c < cores; ++c)
      threads.emplace_back([&, c] {
        for (int k = 0; k < per_thread; ++k)
          sink[c] += compute_kernel(iterations);
      });
    for (auto &t : threads)
      t.join();
    const double wall = now_s() - start;
    best_flops = std::max(best_flops, Graph{.iterations = iterations}.flops_per_task() *
                                          per_thread * cores / wall);
    if (sink[0] == 0)
      std::fprintf(stderr, "(kernel returned 0)\n");
  }
  return best_flops;
}

int verify(const Config &c) {
  // Every pattern, a few hundred tasks each, plus short chains and fans.
  std::vector<Graph> graphs;
  for (int p = 0; p <= static_cast<int>(Pattern::tree); ++p)
    graphs.push_back({.pattern = static_cast<Pattern>(p),
                      .width = 2 * c.cores + 1, // odd: fft and tree meet a ragged edge
                      .steps = 40,
                      .iterations = 16});
  graphs.push_back({.pattern = Pattern::no_comm, .width = 1, .steps = 300});
  graphs.push_back({.pattern = Pattern::trivial, .width = 300, .steps = 1});
  graphs.push_back({.pattern = Pattern::stencil_1d,
                    .width = 4,
                    .steps = 20,
                    .kernel = Kernel::busy_wait,
                    .spin_ns = 2000});
  for (const auto &name : c.systems) {
    auto system = make_system(name, c.cores, c.label);
    for (const auto &g : graphs)
      best_of(*system, g, 2);
    std::printf("%-14s %zu graphs identical to the sequential run\n", system->name().c_str(),
                graphs.size());
  }
  return 0;
}

// The systems run one after another, never side by side: StarPU's idle
// workers spin, and would take the cores from whichever system runs next to
// it. Each round runs every system once on every graph, and a figure is the
// best of its rounds, so that a busy minute on a shared host lands on every
// system alike instead of on the one that happened to run then.
int bench(const Config &c) {
  Report report;
  report.cores = c.cores;
  report.quick = c.quick;
  report.rounds = c.reps;
  report.load_before = load_average();
  const double started = now_s();
  // The largest task of the sweep sets the peak (Task Bench measures it
  // empirically); it is measured at every round and the best one kept.
  const int lo = 0, hi = c.quick ? 16 : 18;
  const int64_t peak_iterations = int64_t{1} << hi;
  // Each sweep point runs about this long when efficient; the row count is
  // bounded at both ends so small tasks still make a measurable graph.
  const double point_s = c.quick ? 0.04 : 0.25;
  const int64_t width = 2 * c.cores;
  const int64_t overhead_tasks = 65536;
  // The sweep's graphs, made from the first round's peak: every round runs the same ones.
  std::vector<Graph> sweep;
  bool planned = false;
  std::map<std::pair<std::string, size_t>, Timing> best; // (system, graph) -> best run
  std::vector<Graph> overhead = {
      {.pattern = Pattern::no_comm, .width = 1, .steps = overhead_tasks},
      {.pattern = Pattern::trivial, .width = overhead_tasks, .steps = 1}};

  for (int round = 0; round < c.reps; ++round) {
    report.peak_flops = std::max(report.peak_flops, measure_peak(c.cores, peak_iterations, 2));
    if (!planned) {
      planned = true;
      const double task_s = Graph{.iterations = 1}.flops_per_task() *
                            static_cast<double>(peak_iterations) / (report.peak_flops / c.cores);
      std::printf("peak %.2f GFLOP/s on %u cores (kernel alone, %lld iterations: %.0f us/task)\n",
                  report.peak_flops / 1e9, c.cores, static_cast<long long>(peak_iterations),
                  task_s * 1e6);
      for (const auto &pattern_name : c.patterns)
        for (int k = lo; k <= hi; ++k) {
          Graph g{.pattern = *parse_pattern(pattern_name),
                  .width = width,
                  .iterations = int64_t{1} << k};
          const double size_s = task_s / static_cast<double>(int64_t{1} << (hi - k));
          g.steps = std::clamp<int64_t>(
              std::llround(point_s * c.cores / (size_s * static_cast<double>(width))), 8,
              c.quick ? 250 : 1000);
          sweep.push_back(g);
        }
    }
    for (const auto &name : c.systems) {
      // Also between systems: the best moment of the run is the peak.
      report.peak_flops = std::max(report.peak_flops, measure_peak(c.cores, peak_iterations, 1));
      auto system = make_system(name, c.cores, c.label);
      report.configs[system->name()] = system->config();
      if (const double peak = system->peak_flops(peak_iterations, 2); peak > 0)
        report.device_peaks[system->name()] = std::max(report.device_peaks[system->name()], peak);
      auto keep = [&](size_t key, Timing t) {
        Timing &kept = best[{name, key}];
        if (t.wall_s < kept.wall_s)
          kept = t;
      };
      for (size_t i = 0; i < overhead.size(); ++i)
        keep(sweep.size() + i, best_of(*system, overhead[i], 1));
      for (size_t i = 0; i < sweep.size(); ++i)
        keep(i, best_of(*system, sweep[i], 1));
      std::fprintf(stderr, "round %d/%d: %s done (%s)\n", round + 1, c.reps, name.c_str(),
                   system->config().c_str());
    }
  }
  for (const auto &system : c.systems) {
    const std::string name = system + c.label;
    for (size_t i = 0; i < overhead.size(); ++i)
      report.overhead.push_back({name, i == 0 ? "chain" : "independent", overhead[i].tasks(),
                                 best.at({system, sweep.size() + i}).wall_s,
                                 best.at({system, sweep.size() + i}).submit_s});
    for (size_t i = 0; i < sweep.size(); ++i) {
      const Graph &g = sweep[i];
      report.sweep.push_back({name, std::string(taskbench::name(g.pattern)), g.iterations, g.width,
                              g.steps, best.at({system, i}).wall_s, g.flops_per_task()});
    }
  }
  report.elapsed_s = now_s() - started;
  report.load_after = load_average();
  for (const auto &file : c.merge)
    report.merge(file);
  report.print();
  if (!c.out_dir.empty())
    report.write(c.out_dir);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    const Config c = parse(argc, argv);
    return c.verify_only ? verify(c) : bench(c);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "task_bench: %s\n", e.what());
    return 1;
  }
}
