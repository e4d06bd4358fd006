// SPDX-License-Identifier: MIT
// The wait between connect attempts to a worker that is not listening yet.
// Nothing tells a client when a listener appears, except, for a unix socket
// path, the file itself: there the wait ends when a file is created in the
// socket's directory (inotify). Waits grow from 5 ms to 250 ms, so a worker
// that is about to listen is found at once and one that never comes costs a
// few wake-ups a second until the deadline, not fifty.
#pragma once

#include <string>

#include "transport/fd_util.hpp"

namespace ava::detail {

class ConnectBackoff {
public:
  static constexpr int kFirstMs = 5;
  static constexpr int kMaxMs = 250;

  // unix_path: the socket's path, whose directory is watched; empty for
  // other carriers. max_ms: the longest step (tests lengthen it).
  explicit ConnectBackoff(std::string unix_path = {}, int max_ms = kMaxMs);
  // Waits before the next attempt: the next step of the backoff, at most
  // until the deadline, and for a unix path no longer than until a file
  // appears beside it.
  void wait(const Deadline &deadline);
  // The step the next wait takes (for tests).
  int next_ms() const { return next_ms_; }

private:
  void watch();

  std::string unix_path_;
  int max_ms_;
  int next_ms_ = kFirstMs;
  bool watched_ = false;
  UniqueFd inotify_;
};

} // namespace ava::detail
