// SPDX-License-Identifier: MIT
#include "worker/log.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ava {

bool worker_debug_enabled() {
  static const bool enabled = [] {
    const char *value = std::getenv("AVA_LOG");
    return value != nullptr && std::strcmp(value, "debug") == 0;
  }();
  return enabled;
}

void worker_log(std::string_view message) {
  try {
    std::string line = "ava worker: ";
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
