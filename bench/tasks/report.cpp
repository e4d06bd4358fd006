// SPDX-License-Identifier: MIT
#include "report.hpp"

#include "graph.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace taskbench {

namespace {

struct Target {
  std::string what;   // "per-task overhead (chain)"
  std::string system; // the one measured against the anchor
  std::string other;  // the anchor system
  double factor;      // system must be <= factor × other
  double parla, anchor;
  // A METG the system never reached: the largest granularity it was
  // measured at (the METG lies above it), NaN otherwise.
  double beyond_us = NAN;
  double ratio() const { return parla / (factor * anchor); }
  bool known() const { return std::isfinite(parla) && std::isfinite(anchor) && anchor > 0; }
};

std::string verdict(const Target &t) {
  char buf[96];
  if (std::isfinite(t.beyond_us) && std::isfinite(t.anchor) && t.anchor > 0) {
    std::snprintf(buf, sizeof buf, "missed: under 50%% up to %.0f us (> %.1fx)", t.beyond_us,
                  t.beyond_us / (t.factor * t.anchor));
    return buf;
  }
  if (!t.known())
    return "unknown (no figure)";
  if (t.ratio() <= 1.0)
    return "met";
  std::snprintf(buf, sizeof buf, "missed by %.2fx", t.ratio());
  return buf;
}

std::string json_number(double v) {
  if (!std::isfinite(v))
    return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string json_string(const std::string &s) {
  std::string out = "\"";
  for (char ch : s)
    out += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
  return out + "\"";
}

std::vector<std::string> ordered(const std::vector<SweepRow> &rows, bool pattern) {
  std::vector<std::string> out;
  for (const auto &r : rows) {
    const std::string &key = pattern ? r.pattern : r.system;
    if (std::find(out.begin(), out.end(), key) == out.end())
      out.push_back(key);
  }
  return out;
}

std::vector<Target> targets(const Report &r) {
  auto overhead = [&](const std::string &system, const std::string &shape) -> double {
    for (const auto &o : r.overhead)
      if (o.system == system && o.shape == shape)
        return o.us_per_task();
    return NAN;
  };
  std::vector<Target> out;
  for (const char *shape : {"chain", "independent"}) {
    const std::string what = std::string("per-task overhead, ") + shape;
    out.push_back(
        {what, "parla", "starpu", 1.0, overhead("parla", shape), overhead("starpu", shape)});
    out.push_back({what, "parla", "tbb", 2.0, overhead("parla", shape), overhead("tbb", shape)});
  }
  for (const char *pattern : {"stencil_1d", "nearest"})
    for (const char *anchor : {"starpu", "openmp"})
      out.push_back({std::string("METG(50%) ") + pattern, "parla", anchor, 1.0,
                     r.metg_us("parla", pattern), r.metg_us(anchor, pattern)});
  // Tasks on PoCL through ava (shm) against PoCL directly, when both ran
  // (with and without runahead).
  for (const std::string direct : {"parla-opencl", "parla-opencl-runahead"}) {
    const std::string remoted = direct + "@ava-shm";
    // The patterns both measured.
    std::vector<SweepRow> direct_rows;
    std::copy_if(r.sweep.begin(), r.sweep.end(), std::back_inserter(direct_rows),
                 [&](const SweepRow &row) {
                   return row.system == direct &&
                          std::any_of(r.sweep.begin(), r.sweep.end(), [&](const SweepRow &o) {
                            return o.system == remoted && o.pattern == row.pattern;
                          });
                 });
    if (r.configs.count(remoted))
      for (const auto &pattern : ordered(direct_rows, true))
        out.push_back({"METG(50%) " + pattern + " on PoCL", remoted, direct, 2.0,
                       r.metg_us(remoted, pattern), r.metg_us(direct, pattern),
                       r.largest_granularity_us(remoted, pattern)});
  }
  return out;
}

} // namespace

double Report::granularity_us(const SweepRow &row) const {
  return row.wall_s * 1e6 * cores / static_cast<double>(row.width * row.steps);
}

double Report::peak_of(const std::string &system) const {
  const auto it = device_peaks.find(system);
  return it == device_peaks.end() ? peak_flops : it->second;
}

double Report::efficiency(const SweepRow &row) const {
  const double flops = row.flops_per_task * static_cast<double>(row.width * row.steps);
  return flops / row.wall_s / peak_of(row.system);
}

double Report::metg_us(const std::string &system, const std::string &pattern) const {
  // In the order of the sweep's task size (iterations), not of measured
  // granularity: at tiny sizes the wall time is all overhead and noise, and
  // sorting by it would shuffle the points.
  std::vector<const SweepRow *> rows;
  for (const auto &row : sweep)
    if (row.system == system && row.pattern == pattern)
      rows.push_back(&row);
  std::sort(rows.begin(), rows.end(),
            [](const SweepRow *a, const SweepRow *b) { return a->iterations < b->iterations; });
  for (size_t i = 0; i < rows.size(); ++i) {
    const double e1 = efficiency(*rows[i]), g1 = granularity_us(*rows[i]);
    if (e1 < 0.5)
      continue;
    if (i == 0)
      return g1; // already efficient at the smallest task: an upper bound
    // Task Bench's linear interpolation between the last point below 50%
    // and the first one at or above it.
    const double e0 = efficiency(*rows[i - 1]), g0 = granularity_us(*rows[i - 1]);
    return e1 == e0 ? g1 : g0 + (0.5 - e0) * (g1 - g0) / (e1 - e0);
  }
  return NAN;
}

double Report::largest_granularity_us(const std::string &system, const std::string &pattern) const {
  if (std::isfinite(metg_us(system, pattern)))
    return NAN;
  double largest = NAN;
  for (const auto &row : sweep)
    if (row.system == system && row.pattern == pattern)
      largest =
          std::isfinite(largest) ? std::max(largest, granularity_us(row)) : granularity_us(row);
  return largest;
}

void Report::print() const {
  std::printf("\nper-task overhead (65,536 empty tasks, best of %d; µs/task = wall / tasks;\n"
              "submit: of the same run, until the last task was handed over)\n",
              rounds);
  std::printf("  %-14s %12s %12s %12s %12s   %s\n", "system", "chain", "(submit)", "independent",
              "(submit)", "configuration");
  for (const auto &[system, config] : configs) {
    const OverheadRow *row[2] = {nullptr, nullptr};
    for (const auto &o : overhead)
      if (o.system == system)
        row[o.shape == "chain" ? 0 : 1] = &o;
    std::printf("  %-14s", system.c_str());
    for (const OverheadRow *o : row)
      std::printf(" %12.3f %12.3f", o ? o->us_per_task() : NAN, o ? o->submit_us_per_task() : NAN);
    std::printf("   %s\n", config.c_str());
  }
  std::printf("\nMETG(50%%) in µs (smallest task granularity at >= 50%% efficiency; "
              "peak %.2f GFLOP/s)\n",
              peak_flops / 1e9);
  for (const auto &[system, peak] : device_peaks)
    std::printf("  (%s: against its devices' peak, %.2f GFLOP/s)\n", system.c_str(), peak / 1e9);
  const auto patterns = ordered(sweep, true);
  std::printf("  %-14s", "system");
  for (const auto &p : patterns)
    std::printf(" %12s", p.c_str());
  std::printf("\n");
  for (const auto &system : ordered(sweep, false)) {
    std::printf("  %-14s", system.c_str());
    for (const auto &p : patterns)
      std::printf(" %12.2f", metg_us(system, p));
    std::printf("\n");
  }
  // Task Bench rejects efficiencies above 150%; above 100% means the host
  // was busier while the peak was measured than during that point.
  int above = 0;
  for (const auto &row : sweep)
    above += efficiency(row) > 1.05;
  if (above > 0)
    std::printf("  (%d sweep points above 105%% efficiency: the host's load changed during the "
                "run, figures are noisy)\n",
                above);
  std::printf("\ntargets (issue 16; ratio = system / (factor x anchor), <= 1 is met)\n");
  for (const auto &t : targets(*this))
    std::printf("  %-32s %s <= %.0fx %s: %9.3f vs %9.3f  ratio %6.2f  %s\n", t.what.c_str(),
                t.system.c_str(), t.factor, t.other.c_str(), t.parla, t.anchor,
                t.known() ? t.ratio() : NAN, verdict(t).c_str());
  std::printf("\n(%s run: %.0f s; load average %.2f before, %.2f after, on %u cores)\n",
              quick ? "quick" : "full", elapsed_s, load_before, load_after, cores);
  if (load_before > 0.5 * cores) // "after" counts this run's own threads
    std::printf("(other work was running on this host: every figure is disturbed by it)\n");
}

void Report::write(const std::string &dir) const {
  std::ofstream csv(dir + "/tasks.csv");
  csv << "section,system,pattern,iterations,width,steps,tasks,wall_s,us_per_task,"
         "granularity_us,efficiency,submit_us_per_task\n";
  for (const auto &o : overhead)
    csv << "overhead," << o.system << "," << o.shape << ",0,,," << o.tasks << "," << o.wall_s << ","
        << o.us_per_task() << ",,\n";
  for (const auto &s : sweep)
    csv << "sweep," << s.system << "," << s.pattern << "," << s.iterations << "," << s.width << ","
        << s.steps << "," << s.width * s.steps << "," << s.wall_s << ",," << granularity_us(s)
        << "," << efficiency(s) << "\n";

  std::ofstream js(dir + "/tasks.json");
  js << "{\n  \"cores\": " << cores << ",\n  \"quick\": " << (quick ? "true" : "false")
     << ",\n  \"rounds\": " << rounds << ",\n  \"peak_flops\": " << json_number(peak_flops)
     << ",\n  \"device_peaks\": {";
  const char *sep = "";
  for (const auto &[system, peak] : device_peaks) {
    js << sep << json_string(system) << ": " << json_number(peak);
    sep = ", ";
  }
  js << "}"
     << ",\n  \"elapsed_s\": " << json_number(elapsed_s)
     << ",\n  \"load_before\": " << json_number(load_before)
     << ",\n  \"load_after\": " << json_number(load_after) << ",\n  \"systems\": {";
  sep = "\n";
  for (const auto &[system, config] : configs) {
    js << sep << "    " << json_string(system) << ": " << json_string(config);
    sep = ",\n";
  }
  js << "\n  },\n  \"overhead\": [";
  sep = "\n";
  for (const auto &o : overhead) {
    js << sep << "    {\"system\": " << json_string(o.system)
       << ", \"shape\": " << json_string(o.shape) << ", \"tasks\": " << o.tasks
       << ", \"us_per_task\": " << json_number(o.us_per_task())
       << ", \"submit_us_per_task\": " << json_number(o.submit_us_per_task()) << "}";
    sep = ",\n";
  }
  js << "\n  ],\n  \"sweep\": [";
  sep = "\n";
  for (const auto &s : sweep) {
    js << sep << "    {\"system\": " << json_string(s.system)
       << ", \"pattern\": " << json_string(s.pattern) << ", \"iterations\": " << s.iterations
       << ", \"width\": " << s.width << ", \"steps\": " << s.steps
       << ", \"wall_s\": " << json_number(s.wall_s)
       << ", \"granularity_us\": " << json_number(granularity_us(s))
       << ", \"efficiency\": " << json_number(efficiency(s)) << "}";
    sep = ",\n";
  }
  js << "\n  ],\n  \"metg_us\": [";
  sep = "\n";
  for (const auto &system : ordered(sweep, false))
    for (const auto &p : ordered(sweep, true)) {
      js << sep << "    {\"system\": " << json_string(system) << ", \"pattern\": " << json_string(p)
         << ", \"metg_us\": " << json_number(metg_us(system, p)) << "}";
      sep = ",\n";
    }
  js << "\n  ],\n  \"targets\": [";
  sep = "\n";
  for (const auto &t : targets(*this)) {
    js << sep << "    {\"what\": " << json_string(t.what)
       << ", \"system\": " << json_string(t.system) << ", \"anchor\": " << json_string(t.other)
       << ", \"factor\": " << t.factor << ", \"value\": " << json_number(t.parla)
       << ", \"anchor_value\": " << json_number(t.anchor)
       << ", \"ratio\": " << json_number(t.known() ? t.ratio() : NAN)
       << ", \"verdict\": " << json_string(verdict(t)) << "}";
    sep = ",\n";
  }
  js << "\n  ]\n}\n";
  if (!csv || !js)
    throw std::runtime_error("cannot write tasks.csv / tasks.json in " + dir);
}

void Report::merge(const std::string &tasks_json) {
  std::ifstream in(tasks_json);
  if (!in)
    throw std::runtime_error("cannot read " + tasks_json);
  // A number the writer could not express is null (json_number): NaN here.
  auto number = [](const nlohmann::json &v) {
    return v.is_number() ? v.get<double>() : std::nan("");
  };
  try {
    const auto j = nlohmann::json::parse(in);
    std::set<std::string> systems;
    for (const auto &[system, config] : j.at("systems").items()) {
      if (configs.count(system))
        throw std::runtime_error("system " + system + " is in both runs");
      configs[system] = config.get<std::string>();
      systems.insert(system);
    }
    const double other_peak = number(j.at("peak_flops"));
    for (const auto &system : systems) {
      const auto &peaks = j.at("device_peaks");
      device_peaks[system] = peaks.contains(system) ? number(peaks.at(system)) : other_peak;
    }
    for (const auto &o : j.at("overhead")) {
      const auto tasks = o.at("tasks").get<int64_t>();
      overhead.push_back({o.at("system").get<std::string>(), o.at("shape").get<std::string>(),
                          tasks, number(o.at("us_per_task")) * static_cast<double>(tasks) / 1e6,
                          number(o.at("submit_us_per_task")) * static_cast<double>(tasks) / 1e6});
    }
    for (const auto &s : j.at("sweep")) {
      const auto iterations = s.at("iterations").get<int64_t>();
      sweep.push_back({s.at("system").get<std::string>(), s.at("pattern").get<std::string>(),
                       iterations, s.at("width").get<int64_t>(), s.at("steps").get<int64_t>(),
                       number(s.at("wall_s")), Graph{.iterations = iterations}.flops_per_task()});
    }
    for (const auto &row : sweep)
      if (!configs.count(row.system))
        throw std::runtime_error("a sweep row names system " + row.system + ", which has no entry");
  } catch (const nlohmann::json::exception &e) {
    throw std::runtime_error(tasks_json + ": not a task_bench report (" + e.what() + ")");
  }
}

} // namespace taskbench
