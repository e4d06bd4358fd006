// SPDX-License-Identifier: MIT
// Small POSIX helpers shared by the socket carriers: an owning fd, a
// monotonic deadline, and errno text for messages.
#pragma once

#include <unistd.h>

#include <chrono>
#include <string>
#include <utility>

namespace ava::detail {

class UniqueFd {
public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd &&other) noexcept : fd_(other.release()) {}
  UniqueFd &operator=(UniqueFd &&other) noexcept {
    if (this != &other)
      reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd &) = delete;
  UniqueFd &operator=(const UniqueFd &) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = fd;
  }

private:
  int fd_ = -1;
};

// A point in time after which waiting stops; a negative timeout never expires.
class Deadline {
public:
  explicit Deadline(int timeout_ms) { restart(timeout_ms); }
  void restart(int timeout_ms) {
    forever_ = timeout_ms < 0;
    if (!forever_)
      end_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  }
  bool forever() const { return forever_; }
  // What poll() wants: -1 forever, 0 when expired, else the rest rounded up.
  int remaining_ms() const {
    if (forever_)
      return -1;
    auto left = end_ - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero())
      return 0;
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    return ms > 0x7fffffff ? 0x7fffffff : static_cast<int>(ms);
  }
  bool expired() const { return !forever_ && remaining_ms() == 0; }

private:
  bool forever_ = true;
  std::chrono::steady_clock::time_point end_{};
};

// strerror_r in a thread-safe, allocation-tolerant form.
std::string errno_text(int err);

// Waits until fd reports any of events or the deadline passes. Returns the
// revents (0 on timeout) or -errno.
int poll_fd(int fd, short events, const Deadline &deadline);

} // namespace ava::detail
