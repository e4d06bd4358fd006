// SPDX-License-Identifier: MIT
// How long a thread waiting for its peer spins before it sleeps, adapted to
// how its recent waits ended.
//
// Spinning pays when the peer answers within the budget from another CPU.
// It hurts when the peer shares the waiter's CPU: every microsecond spent
// spinning (pausing or yielding) is one the peer does not run, so the peer
// answers only after the spin, by which time its own next wait has run out
// too. Both sides then sleep on every message and each round trip costs two
// futex wake-ups (on 2 vCPUs: ~50 us instead of ~1 us, in about half of the
// runs of a sync call loop). A waiter whose full spins keep ending in sleep
// therefore spins only briefly for a while, then tries the full budget again.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace ava {

class SpinGovernor {
public:
  // Short spins: long enough for a peer on another CPU that is already
  // working on the answer, short enough not to hold a CPU-sharing peer back.
  static constexpr std::chrono::nanoseconds kShortSpin{2000};
  // Full spins that must end in sleep, one after the other, to go short.
  static constexpr uint32_t kMissesToShorten = 2;
  // Waits spent short before the full budget is tried again.
  static constexpr uint32_t kShortWaits = 256;

  explicit SpinGovernor(std::chrono::nanoseconds budget) : budget_(budget) {}

  // The budget of the next wait; *full says whether it is the whole one
  // (only those tell whether the full budget pays).
  std::chrono::nanoseconds next(bool *full) {
    const uint32_t left = short_left_.load(std::memory_order_relaxed);
    *full = left == 0 || budget_ <= kShortSpin;
    if (*full)
      return budget_;
    // Several waiters may count down at once: a few waits more or less.
    short_left_.store(left - 1, std::memory_order_relaxed);
    return kShortSpin;
  }

  // A wait with the full budget ended: its data came while it spun, or only
  // after it slept.
  void ended(bool full, bool slept) {
    if (!full)
      return;
    if (!slept) {
      misses_.store(0, std::memory_order_relaxed);
      return;
    }
    if (misses_.fetch_add(1, std::memory_order_relaxed) + 1 >= kMissesToShorten) {
      misses_.store(0, std::memory_order_relaxed);
      short_left_.store(kShortWaits, std::memory_order_relaxed);
    }
  }

private:
  const std::chrono::nanoseconds budget_;
  std::atomic<uint32_t> misses_{0};
  std::atomic<uint32_t> short_left_{0};
};

} // namespace ava
