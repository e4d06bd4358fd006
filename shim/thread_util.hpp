// SPDX-License-Identifier: MIT
// Small thread helpers shared by the guest runtime's threads and calls.
#pragma once

#include <signal.h>

#include <cstdint>
#include <thread>
#include <utility>

namespace ava::guest {

// The kernel thread id of the caller, cached per thread.
uint64_t current_tid();

// The next per-thread CALL sequence number (1, 2, ...).
uint64_t next_thread_seq();

// In a fork child: the cached thread id belongs to the parent.
void reset_thread_cache_after_fork();

// Blocks every signal of the calling thread for its lifetime.
class SignalBlock {
public:
  SignalBlock();
  ~SignalBlock();
  SignalBlock(const SignalBlock &) = delete;
  SignalBlock &operator=(const SignalBlock &) = delete;

private:
  sigset_t saved_;
};

// Starts a runtime thread with every signal blocked, so the host program's
// signal handlers keep running on its own threads. Throws like std::thread.
template <typename F> std::thread start_quiet_thread(F &&fn) {
  SignalBlock block;
  return std::thread(std::forward<F>(fn));
}

} // namespace ava::guest
