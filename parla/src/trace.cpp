// SPDX-License-Identifier: MIT
#include "src/trace.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace parla::detail {

std::string json_string(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out + "\"";
}

namespace {
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}
} // namespace

void Trace::process_name(int pid, const std::string &name) {
  events_.push_back("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) +
                    ",\"tid\":0,\"args\":{\"name\":" + json_string(name) + "}}");
}

void Trace::thread_name(int pid, int tid, const std::string &name) {
  events_.push_back("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) +
                    ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":" + json_string(name) +
                    "}}");
}

void Trace::slice(int pid, int tid, const std::string &name, const char *category, double ts_us,
                  double dur_us, const std::string &args_json) {
  std::string e = "{\"ph\":\"X\",\"name\":" + json_string(name) + ",\"cat\":\"" + category +
                  "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
                  ",\"ts\":" + number(ts_us) + ",\"dur\":" + number(dur_us);
  if (!args_json.empty())
    e += ",\"args\":" + args_json;
  events_.push_back(e + "}");
}

void Trace::flow(uint64_t id, int from_pid, int from_tid, double from_us, int to_pid, int to_tid,
                 double to_us) {
  const std::string ids = std::to_string(id);
  events_.push_back("{\"ph\":\"s\",\"name\":\"dependency\",\"cat\":\"dependency\",\"id\":" + ids +
                    ",\"pid\":" + std::to_string(from_pid) +
                    ",\"tid\":" + std::to_string(from_tid) + ",\"ts\":" + number(from_us) + "}");
  events_.push_back("{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"dependency\",\"cat\":\"dependency\","
                    "\"id\":" +
                    ids + ",\"pid\":" + std::to_string(to_pid) +
                    ",\"tid\":" + std::to_string(to_tid) + ",\"ts\":" + number(to_us) + "}");
}

void Trace::counter(const std::string &name, double ts_us, const std::string &series,
                    double value) {
  events_.push_back("{\"ph\":\"C\",\"name\":" + json_string(name) +
                    ",\"pid\":" + std::to_string(kDevices) + ",\"ts\":" + number(ts_us) +
                    ",\"args\":{" + json_string(series) + ":" + number(value) + "}}");
}

bool Trace::write(const std::string &path, std::string *why) const {
  std::ofstream out(path, std::ios::trunc);
  if (!out) {
    *why = path + ": " + std::strerror(errno);
    return false;
  }
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  for (size_t i = 0; i < events_.size(); ++i)
    out << events_[i] << (i + 1 < events_.size() ? ",\n" : "\n");
  out << "]}\n";
  out.flush();
  if (!out) {
    *why = path + ": write failed";
    return false;
  }
  return true;
}

} // namespace parla::detail
