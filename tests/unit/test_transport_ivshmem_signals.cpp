// SPDX-License-Identifier: MIT
// The worker's sleeps on an ivshmem slot (make_ivshmem_host_signals): the
// guest's doorbell is one eventfd for every sleeper of the slot, so one kick
// must wake them all. A kick one sleeper consumed used to leave the others
// asleep for their whole slice, which made large kmod replies crawl (the
// sender waiting for room slept while the reader took the guest's kick).
// Sleeps here are long (10 s) so that a lost wake-up shows as a timeout,
// never as a hang.
#include <criterion/criterion.h>

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "ava/ivshmem.h"
#include "transport/region_signals.hpp"

using ava::detail::RegionSignals;
using ava::detail::UniqueFd;

namespace {

constexpr int kLongMs = 10000;

struct Slot {
  ava_slot_entry entry{};
  int wait_fd = -1; // the doorbell's eventfd, as the guest kicks it
  int irq_fd = -1;  // the guest's interrupt eventfd
  std::unique_ptr<RegionSignals> signals;

  Slot() {
    wait_fd = ::eventfd(0, EFD_CLOEXEC);
    irq_fd = ::eventfd(0, EFD_CLOEXEC);
    cr_assert(wait_fd >= 0 && irq_fd >= 0);
    entry.guest_state = AVA_SLOT_CLAIMED;
    entry.guest_gen = 7;
    signals = ava::detail::make_ivshmem_host_signals(UniqueFd(::dup(wait_fd)),
                                                     UniqueFd(::dup(irq_fd)), &entry, 7);
  }
  ~Slot() {
    signals.reset();
    ::close(wait_fd);
    ::close(irq_fd);
  }
  void kick() const {
    const uint64_t one = 1;
    cr_assert_eq(::write(wait_fd, &one, sizeof one), (ssize_t)sizeof one);
  }
};

// Starts n sleepers and returns once all are inside sleep() or past it.
struct Sleepers {
  std::vector<std::thread> threads;
  std::vector<int> woken; // 1 woken, 0 timed out, -1 still asleep
  std::atomic<int> started{0};
  uint32_t words[8] = {1, 1, 1, 1, 1, 1, 1, 1}; // each announced its sleep

  Sleepers(RegionSignals &signals, int n, int ms) : woken(n, -1) {
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([this, &signals, i, ms] {
        started.fetch_add(1);
        woken[i] = signals.sleep(&words[i % 8], ms) ? 1 : 0;
      });
    }
    while (started.load() < n)
      std::this_thread::yield();
  }
  void join() {
    for (auto &t : threads)
      t.join();
  }
};

} // namespace

Test(ivshmem_signals, one_kick_wakes_every_sleeper) {
  // Table: how many threads sleep on the slot when the guest kicks once.
  for (int n : {1, 2, 3, 8}) {
    Slot slot;
    Sleepers s(*slot.signals, n, kLongMs);
    // Let them reach the eventfd or the followers' wait; a kick before that
    // is seen as well (the count stays until read), so this only makes the
    // case harder.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    slot.kick();
    s.join();
    for (int i = 0; i < n; ++i)
      cr_expect_eq(s.woken[i], 1, "%d sleepers: sleeper %d timed out after one kick", n, i);
  }
}

Test(ivshmem_signals, a_kick_read_before_the_sleep_still_wakes_its_sleeper) {
  // The guest clears a sleeper's word, then kicks. Here another thread reads
  // the kick before this sleeper reaches sleep(): its cleared word says it
  // was woken.
  Slot slot;
  for (int round = 0; round < 50; ++round) {
    uint32_t other = 1, mine = 1;
    std::thread t([&] { cr_expect(slot.signals->sleep(&other, kLongMs)); });
    mine = 0; // the guest's wake_if_sleeping
    slot.kick();
    t.join(); // the kick is gone
    cr_assert(slot.signals->sleep(&mine, kLongMs), "round %d: the sleeper missed its wake-up",
              round);
  }
}

Test(ivshmem_signals, a_quiet_slot_times_out_and_a_short_sleep_ends_first) {
  Slot slot;
  cr_expect(!slot.signals->sleep(nullptr, 30), "no kick, yet the sleep said it was woken");
  // A follower with a short sleep behind a leader with a long one ends on
  // its own time; the leader keeps polling and still gets the later kick.
  uint32_t w = 1;
  std::atomic<int> leader{-1};
  std::thread t([&] { leader = slot.signals->sleep(&w, kLongMs) ? 1 : 0; });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto t0 = std::chrono::steady_clock::now();
  cr_expect(!slot.signals->sleep(&w, 50));
  cr_expect(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(kLongMs / 2),
            "the short sleep waited for the long one");
  slot.kick();
  t.join();
  cr_expect_eq(leader.load(), 1);
}

Test(ivshmem_signals, the_leader_leaves_and_a_follower_polls_on) {
  Slot slot;
  uint32_t w = 1;
  // The first sleeper leads with a short sleep; the second follows with a
  // long one and must take over the eventfd when the first times out.
  std::atomic<int> follower{-1};
  std::thread first([&] { cr_expect(!slot.signals->sleep(&w, 50)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::thread second([&] { follower = slot.signals->sleep(&w, kLongMs) ? 1 : 0; });
  first.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  slot.kick();
  second.join();
  cr_expect_eq(follower.load(), 1, "nobody polled after the leader left");
}

Test(ivshmem_signals, wake_self_ends_every_sleep_and_wake_peer_rings_the_guest) {
  Slot slot;
  Sleepers s(*slot.signals, 3, kLongMs);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  slot.signals->wake_self(nullptr);
  s.join();
  for (int i = 0; i < 3; ++i)
    cr_expect_eq(s.woken[i], 1);
  slot.signals->wake_peer(nullptr);
  uint64_t count = 0;
  cr_expect_eq(::read(slot.irq_fd, &count, sizeof count), (ssize_t)sizeof count);
  cr_expect_eq(count, 1u);
  cr_expect(!slot.signals->peer_gone());
  slot.entry.guest_gen = 8; // the guest let go and claimed again
  cr_expect(slot.signals->peer_gone());
}
