// SPDX-License-Identifier: MIT
#include "worker/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace ava {

bool worker_debug_enabled() {
  static const bool enabled = [] {
    const char *value = std::getenv("AVA_LOG");
    return value != nullptr && std::strcmp(value, "debug") == 0;
  }();
  return enabled;
}

namespace {

// A hostile or broken guest can cause a protocol error per message; the log
// must not become the bottleneck (or block the worker on a full stderr pipe).
// Token bucket: bursts of kBurst lines, then kPerSecond lines a second.
constexpr double kBurst = 50;
constexpr double kPerSecond = 20;

bool log_allowed(uint64_t *suppressed_before) {
  static std::mutex mu;
  static double tokens = kBurst;
  static std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  static uint64_t suppressed = 0;
  std::lock_guard<std::mutex> lock(mu);
  const auto now = std::chrono::steady_clock::now();
  tokens =
      std::min(kBurst, tokens + std::chrono::duration<double>(now - last).count() * kPerSecond);
  last = now;
  if (tokens < 1) {
    ++suppressed;
    return false;
  }
  tokens -= 1;
  *suppressed_before = suppressed;
  suppressed = 0;
  return true;
}

} // namespace

void worker_log(std::string_view message) {
  try {
    uint64_t suppressed = 0;
    if (!log_allowed(&suppressed))
      return;
    std::string line;
    if (suppressed > 0)
      line = "ava worker: (" + std::to_string(suppressed) + " more messages suppressed)\n";
    line += "ava worker: ";
    line.append(message);
    line.push_back('\n');
    const char *p = line.data();
    size_t left = line.size();
    while (left > 0) {
      ssize_t n = ::write(STDERR_FILENO, p, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return;
      p += n;
      left -= static_cast<size_t>(n);
    }
  } catch (const std::bad_alloc &) {
    // A log line is not worth failing the caller for.
  }
}

} // namespace ava
