// SPDX-License-Identifier: MIT
// A Chrome/Perfetto trace (the JSON trace-event format): complete slices
// ("X") per worker and per device lane, flows ("s"/"f") for dependencies,
// counters ("C") for what each device has reserved, and the names of the
// tracks ("M"). Events are kept in memory and written once; the runtime
// records them under its own lock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace parla::detail {

class Trace {
public:
  // Track groups: pid 1 holds the workers, pid 2 the devices' lanes.
  static constexpr int kWorkers = 1;
  static constexpr int kDevices = 2;

  void process_name(int pid, const std::string &name);
  void thread_name(int pid, int tid, const std::string &name);
  void slice(int pid, int tid, const std::string &name, const char *category, double ts_us,
             double dur_us, const std::string &args_json = {});
  // A flow from the end of one slice to the start of another; the "f"
  // event binds to the slice enclosing its timestamp ("bp": "e").
  void flow(uint64_t id, int from_pid, int from_tid, double from_us, int to_pid, int to_tid,
            double to_us);
  void counter(const std::string &name, double ts_us, const std::string &series, double value);
  // False and *why when the file cannot be written.
  bool write(const std::string &path, std::string *why) const;
  size_t size() const { return events_.size(); }

private:
  std::vector<std::string> events_;
};

// JSON string literal of s (quotes included).
std::string json_string(const std::string &s);

} // namespace parla::detail
