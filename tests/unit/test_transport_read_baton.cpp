// SPDX-License-Identifier: MIT
// The read baton (transport/read_baton.hpp): one reader at a time, handed
// from holder to the oldest waiting member, free between a member's calls,
// and the fallback's only once free for its grace or handed to it.
#include <criterion/criterion.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/read_baton.hpp"

using ava::ReadBaton;
using namespace std::chrono_literals;

namespace {

struct TestMember {
  std::mutex mu;
  std::condition_variable cv;
  ReadBaton::Member member{mu, cv};
  bool holds() {
    std::lock_guard lock(mu);
    return member.holds();
  }
  void wait_until_holds() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return member.holds(); });
  }
};

// The fallback, taking the baton on a thread of its own; taken tells.
std::thread fallback_in_background(ReadBaton &baton, std::atomic<bool> &taken) {
  return std::thread([&baton, &taken] {
    if (baton.fallback_take())
      taken = true;
  });
}

} // namespace

Test(read_baton, starts_with_the_fallback) {
  ReadBaton baton(1ms);
  TestMember m;
  cr_expect(!baton.try_take(m.member));
  cr_expect(!baton.enlist(m.member), "enlisting while the fallback holds it must wait");
  cr_expect(baton.fallback_take());
  cr_expect(baton.fallback_offer(), "an enlisted member was waiting");
  cr_expect(m.holds());
}

Test(read_baton, handed_to_the_oldest_waiting_member_in_turn) {
  ReadBaton baton(1ms);
  TestMember a, b, c;
  cr_assert(!baton.enlist(a.member));
  cr_assert(!baton.enlist(b.member));
  cr_assert(!baton.enlist(c.member));
  cr_assert(baton.fallback_offer());
  cr_expect(a.holds() && !b.holds() && !c.holds());
  baton.pass(a.member);
  cr_expect(!a.holds() && b.holds() && !c.holds());
  cr_expect(!baton.withdraw(a.member), "a let go: it does not hold it");
  cr_expect(baton.withdraw(c.member) == false, "c was still waiting");
  baton.pass(b.member);
  cr_expect(!b.holds() && !c.holds(), "c withdrew: nobody waits, the baton is free");
  cr_expect(baton.try_take(c.member));
  cr_expect(c.holds());
  cr_expect(!baton.try_take(a.member), "held by c");
}

Test(read_baton, a_member_handed_it_while_withdrawing_holds_it) {
  ReadBaton baton(1ms);
  TestMember m;
  cr_assert(!baton.enlist(m.member));
  cr_assert(baton.fallback_offer());
  cr_expect(baton.withdraw(m.member), "it was handed over before the withdrawal");
  cr_expect(m.holds());
}

Test(read_baton, enlisting_takes_a_free_baton) {
  ReadBaton baton(1ms);
  TestMember a, b;
  cr_assert(!baton.enlist(a.member));
  cr_assert(baton.fallback_offer());
  baton.pass(a.member); // nobody waits: free
  cr_expect(baton.enlist(b.member), "nobody would hand a free baton over");
  cr_expect(b.holds());
}

Test(read_baton, the_fallback_takes_a_baton_left_free) {
  ReadBaton baton(1ms);
  TestMember m;
  cr_assert(!baton.enlist(m.member));
  cr_assert(baton.fallback_offer());
  baton.pass(m.member);
  cr_expect(baton.fallback_take(), "free for the grace: the fallback's");
  cr_expect(!baton.try_take(m.member));
  cr_expect(!baton.fallback_offer(), "nobody waits: the fallback keeps it");
}

Test(read_baton, the_fallback_waits_while_a_member_holds_it) {
  ReadBaton baton(1ms);
  TestMember m;
  cr_assert(!baton.enlist(m.member));
  cr_assert(baton.fallback_offer());
  std::atomic<bool> taken{false};
  std::thread fallback = fallback_in_background(baton, taken);
  // Long past the grace: a fallback that took a held baton would show here.
  std::this_thread::sleep_for(50ms);
  cr_expect(!taken.load(), "the fallback took a baton a member holds");
  baton.pass_to_fallback(m.member);
  fallback.join();
  cr_expect(taken.load());
  cr_expect(!m.holds());
}

// A member busy with calls frees and retakes the baton around each one. The
// fallback must not be told of every free (a system call for the member, and
// a wake-up on a CPU the busy threads need): it looks once per grace.
Test(read_baton, a_busy_member_wakes_the_fallback_once_per_grace, .timeout = 60) {
  constexpr auto kGrace = 5ms;
  ReadBaton baton(kGrace);
  TestMember m;
  cr_assert(!baton.enlist(m.member));
  cr_assert(baton.fallback_offer());
  std::atomic<bool> taken{false};
  std::thread fallback = fallback_in_background(baton, taken);
  const auto start = std::chrono::steady_clock::now();
  uint64_t calls = 0;
  // The member retakes at once; only a member descheduled for a whole grace
  // (a loaded machine) loses it to the fallback, which ends the busy period.
  while (std::chrono::steady_clock::now() - start < 250ms) {
    baton.pass(m.member);
    ++calls;
    if (!baton.try_take(m.member))
      break;
  }
  const auto graces = (std::chrono::steady_clock::now() - start) / kGrace;
  const uint64_t wakeups = baton.fallback_wakeups();
  if (!taken.load())
    baton.pass_to_fallback(m.member);
  fallback.join();
  cr_expect(wakeups <= static_cast<uint64_t>(graces) + 3,
            "%llu fallback wake-ups in %lld graces of %llu calls",
            static_cast<unsigned long long>(wakeups), static_cast<long long>(graces),
            static_cast<unsigned long long>(calls));
}

Test(read_baton, passed_to_the_reader_it_goes_to_the_fallback_at_once_or_to_a_waiter) {
  // A grace far longer than the test: a fallback that got the baton only
  // after the grace would time the test out instead of passing.
  ReadBaton baton(std::chrono::hours(1));
  TestMember m, waiter;
  cr_assert(!baton.enlist(m.member));
  cr_assert(baton.fallback_offer());
  std::atomic<bool> taken{false};
  std::thread fallback = fallback_in_background(baton, taken);
  cr_assert(!baton.enlist(waiter.member));
  baton.pass_to_reader(m.member);
  cr_expect(waiter.holds() && !m.holds(), "an enlisted member comes first");
  baton.pass_to_reader(waiter.member);
  fallback.join();
  cr_expect(taken.load(), "nobody enlisted: the fallback reads now, not after the grace");
  cr_expect(!waiter.holds());
  baton.pass_to_reader(m.member); // not the holder: nothing happens
  cr_expect(!baton.try_take(m.member), "still the fallback's");
}

Test(read_baton, close_wakes_the_fallback) {
  ReadBaton baton(1ms);
  TestMember m;
  cr_assert(!baton.enlist(m.member));
  cr_assert(baton.fallback_offer());
  std::atomic<int> result{-1};
  std::thread fallback([&] { result = baton.fallback_take() ? 1 : 0; });
  baton.close();
  fallback.join();
  cr_expect_eq(result.load(), 0);
  cr_expect(!baton.try_take(m.member), "closed");
}

Test(read_baton, one_reader_at_a_time_under_contention, .timeout = 60) {
  constexpr int kMembers = 4;
  constexpr int kRounds = 2000;
  ReadBaton baton(100us);
  std::atomic<int> readers{0};
  std::atomic<int> overlaps{0};
  std::atomic<bool> stop{false};
  auto read_once = [&] {
    if (readers.fetch_add(1) != 0)
      overlaps.fetch_add(1);
    std::this_thread::yield();
    readers.fetch_sub(1);
  };
  std::vector<TestMember> members(kMembers);
  std::vector<std::thread> threads;
  for (int i = 0; i < kMembers; ++i) {
    threads.emplace_back([&, i] {
      TestMember &m = members[i];
      for (int r = 0; r < kRounds; ++r) {
        if (!baton.try_take(m.member) && !baton.enlist(m.member)) {
          m.wait_until_holds();
          baton.withdraw(m.member);
        }
        read_once();
        baton.pass(m.member);
      }
    });
  }
  std::thread fallback([&] {
    while (!stop.load() && baton.fallback_take()) {
      read_once();
      baton.fallback_offer();
    }
  });
  for (auto &t : threads)
    t.join();
  stop = true;
  baton.close();
  fallback.join();
  cr_expect_eq(overlaps.load(), 0, "%d times two threads read at once", overlaps.load());
}
