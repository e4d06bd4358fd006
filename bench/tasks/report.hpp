// SPDX-License-Identifier: MIT
// What task_bench measured, and what it derives: efficiency, granularity,
// METG(50%) per system and pattern, and issue 16's targets as met/missed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace taskbench {

struct OverheadRow {
  std::string system, shape; // "chain" or "independent"
  int64_t tasks;
  double wall_s;
  double submit_s; // of the same run: until the last task was handed over
  double us_per_task() const { return wall_s * 1e6 / static_cast<double>(tasks); }
  double submit_us_per_task() const { return submit_s * 1e6 / static_cast<double>(tasks); }
};

struct SweepRow {
  std::string system, pattern;
  int64_t iterations, width, steps;
  double wall_s, flops_per_task;
};

struct Report {
  unsigned cores = 0;
  bool quick = false;
  int rounds = 1;        // each figure is the best of this many runs
  double peak_flops = 0; // the host's cores
  // Systems whose tasks run elsewhere (OpenCL devices): their own peak,
  // which their efficiency is measured against.
  std::map<std::string, double> device_peaks;
  double elapsed_s = 0;
  double load_before = 0, load_after = 0;     // /proc/loadavg, 1 minute
  std::map<std::string, std::string> configs; // system -> how it was set up
  std::vector<OverheadRow> overhead;
  std::vector<SweepRow> sweep;

  // Average task duration × cores (µs) and achieved/peak FLOP/s of a point.
  double granularity_us(const SweepRow &row) const;
  double efficiency(const SweepRow &row) const;
  double peak_of(const std::string &system) const;
  // METG(50%) in µs: the granularity of the smallest task size with
  // efficiency >= 50%, interpolated linearly towards the size before it;
  // NaN if never reached.
  double metg_us(const std::string &system, const std::string &pattern) const;
  // Where metg_us is NaN though the system was measured: the largest
  // granularity of its sweep (the METG lies beyond); NaN otherwise.
  double largest_granularity_us(const std::string &system, const std::string &pattern) const;

  void print() const;
  // tasks.csv and tasks.json in dir.
  void write(const std::string &dir) const;
  // Adds the systems of another run's tasks.json (a run under `ava run`,
  // whose OpenCL library is remoted, cannot share a process with the
  // native one); throws std::runtime_error naming what is wrong in it.
  void merge(const std::string &tasks_json);
};

} // namespace taskbench
