// SPDX-License-Identifier: MIT
// The Chrome/Perfetto trace: valid trace-event JSON, one slice per task on
// its worker and on a lane of its device, slices on one track nest (what
// Perfetto requires), every flow has both ends, counters of reserved
// memory and vcus, names for every track.
#include <unistd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "graphs.hpp"
#include "parla_test_support.hpp"

using namespace parla;
using nlohmann::json;

namespace {

json traced_run(bool sequential, int *tasks) {
  const std::string path = "/tmp/parla-trace-" + std::to_string(getpid()) + ".json";
  {
    parla::Options o = parla_test::options(sequential);
    o.trace_path = path;
    Runtime rt(std::move(o));
    TaskSpace T("T"), M("M");
    std::vector<double> data;
    parla_test::spawn_graph(rt, parla_test::Graph::reduction_scatter, 16, 3, data, T);
    for (int i = 0; i < 4; ++i)
      rt.spawn(M[i], {.resources = {.memory = 1 << 20, .vcus = 0.5}}, [] {});
    rt.wait();
    *tasks = static_cast<int>(rt.stats().completed);
  }
  std::ifstream in(path);
  cr_assert(in.good(), "the trace %s was written", path.c_str());
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  unlink(path.c_str());
  return j;
}

void check_trace(const json &j, int tasks) {
  cr_assert(j.is_object() && j.contains("traceEvents") && j["traceEvents"].is_array(),
            "a JSON object with a traceEvents array");
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
  std::set<std::pair<int, int>> named;
  std::map<uint64_t, int> flows;
  int worker_slices = 0, device_slices = 0, counters = 0;
  for (const json &e : j["traceEvents"]) {
    cr_assert(e.contains("ph") && e["ph"].is_string() && e.contains("pid") &&
              e["pid"].is_number_integer());
    const std::string ph = e["ph"];
    const int pid = e["pid"];
    if (ph == "M") {
      cr_expect(e["args"]["name"].is_string());
      if (e["name"] == "thread_name")
        named.insert({pid, e["tid"].get<int>()});
    } else if (ph == "X") {
      cr_assert(e["name"].is_string() && e["ts"].is_number() && e["dur"].is_number() &&
                e["tid"].is_number_integer());
      cr_expect_geq(e["dur"].get<double>(), 0.0);
      tracks[{pid, e["tid"].get<int>()}].push_back({e["ts"].get<double>(), e["dur"].get<double>()});
      (pid == 1 ? worker_slices : device_slices)++;
    } else if (ph == "s" || ph == "f") {
      cr_assert(e["id"].is_number_unsigned() && e["ts"].is_number());
      flows[e["id"].get<uint64_t>()] += ph == "s" ? 1 : 10;
      if (ph == "f")
        cr_expect(e["bp"] == "e");
    } else if (ph == "C") {
      cr_assert(e["args"].is_object() && !e["args"].empty());
      for (const auto &[k, v] : e["args"].items())
        cr_expect(v.is_number(), "counter %s is a number", k.c_str());
      ++counters;
    } else {
      cr_expect_fail("unexpected phase %s", ph.c_str());
    }
  }
  cr_expect_eq(worker_slices, tasks, "one worker slice per task");
  cr_expect_eq(device_slices, tasks, "one device slice per task (one device each)");
  cr_expect_gt(counters, 0);
  cr_expect(!flows.empty());
  for (const auto &[id, ends] : flows)
    cr_expect_eq(ends, 11, "flow %llu has one start and one end",
                 static_cast<unsigned long long>(id));
  for (auto &[track, slices] : tracks) {
    cr_expect(named.count(track), "track %d/%d has a name", track.first, track.second);
    // Slices on one track nest: sorted by start (longer first on ties),
    // each one ends before the enclosing one does.
    std::sort(slices.begin(), slices.end(), [](auto a, auto b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<double> open_ends;
    for (auto [ts, dur] : slices) {
      while (!open_ends.empty() && open_ends.back() <= ts)
        open_ends.pop_back();
      const bool nests = open_ends.empty() || ts + dur <= open_ends.back() + 1e-3;
      cr_expect(nests, "track %d/%d: a slice at %.3f overlaps its neighbour", track.first,
                track.second, ts);
      open_ends.push_back(ts + dur);
    }
  }
}

} // namespace

Test(trace, a_parallel_run_writes_a_valid_trace) {
  int tasks = 0;
  json j = traced_run(false, &tasks);
  check_trace(j, tasks);
}

Test(trace, a_sequential_run_writes_a_valid_trace) {
  int tasks = 0;
  json j = traced_run(true, &tasks);
  check_trace(j, tasks);
}

Test(trace, write_trace_without_tracing_is_an_error) {
  Runtime rt(parla_test::options());
  const std::string e = parla_test::thrown<Error>([&] { rt.write_trace("/tmp/x.json"); });
  cr_expect(parla_test::contains(e, "tracing is off"));
}
