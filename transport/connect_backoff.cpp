// SPDX-License-Identifier: MIT
#include "transport/connect_backoff.hpp"

#include <poll.h>
#include <sys/inotify.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace ava::detail {

ConnectBackoff::ConnectBackoff(std::string unix_path, int max_ms)
    : unix_path_(std::move(unix_path)), max_ms_(max_ms) {}

void ConnectBackoff::watch() {
  watched_ = true;
  const size_t slash = unix_path_.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : unix_path_.substr(0, slash);
  UniqueFd fd(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  // Without inotify (or the directory) the timed backoff still works.
  if (fd.valid() && ::inotify_add_watch(fd.get(), dir.c_str(), IN_CREATE | IN_MOVED_TO) >= 0)
    inotify_ = std::move(fd);
}

void ConnectBackoff::wait(const Deadline &deadline) {
  const int left = deadline.remaining_ms();
  const int ms = left < 0 ? next_ms_ : std::min(left, next_ms_);
  next_ms_ = std::min(next_ms_ * 2, max_ms_);
  if (!unix_path_.empty() && !watched_)
    watch();
  if (!inotify_.valid()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return;
  }
  pollfd pfd{inotify_.get(), POLLIN, 0};
  if (::poll(&pfd, 1, ms) > 0) {
    // Any file created there ends the wait; the events themselves are not needed.
    alignas(inotify_event) char events[4096];
    while (::read(inotify_.get(), events, sizeof events) > 0) {
    }
  }
}

} // namespace ava::detail
