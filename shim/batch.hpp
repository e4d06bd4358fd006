// SPDX-License-Identifier: MIT
// Coalescing of async calls: they are copied into one buffer and leave in a
// single channel write, ahead of the next sync call, when the buffer is full,
// or when the oldest has waited max_delay. One write per call would cost a
// system call (or a wake-up of the worker) per async call.
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstdint>
#include <vector>

namespace ava::guest {

class Batch {
public:
  struct Limits {
    bool enabled = true;
    uint64_t max_bytes = 256 * 1024;
    uint32_t max_calls = 1024;
    std::chrono::microseconds max_delay{1000};
    // AVA_BATCH=0 turns batching off, AVA_BATCH=1 on; without it, batching is
    // on where a send costs a system call (sockets) and off on shm, where a
    // send is a ring write and the copy into the batch would cost more.
    // AVA_BATCH_BYTES, AVA_BATCH_CALLS and AVA_BATCH_US set the bounds.
    static Limits from_env(bool cheap_sends);
  };

  explicit Batch(Limits limits) : limits_(limits) {}
  const Limits &limits() const { return limits_; }
  // Whether a message of total bytes may wait in the batch at all.
  bool accepts(uint64_t total) const { return limits_.enabled && total <= limits_.max_bytes / 2; }
  bool empty() const { return bytes_.empty(); }
  bool full() const { return bytes_.size() >= limits_.max_bytes || calls_ >= limits_.max_calls; }
  std::chrono::steady_clock::time_point deadline() const { return oldest_ + limits_.max_delay; }
  // Copies one whole message; false if memory ran out (nothing appended).
  bool append(const struct iovec *iov, int iovcnt, uint64_t total);
  struct iovec as_iovec() {
    return {bytes_.data(), bytes_.size()};
  }
  void clear();

private:
  Limits limits_;
  std::vector<uint8_t> bytes_;
  uint32_t calls_ = 0;
  std::chrono::steady_clock::time_point oldest_;
};

} // namespace ava::guest
