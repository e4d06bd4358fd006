// SPDX-License-Identifier: MIT
// Issue 13, finding 6: calls the reader queued for a guest's threads are
// bounded in bytes (256 MiB); past that the reader stops reading (the guest's
// sends wait), so a guest cannot make its worker hold unbounded memory. While
// a callback of the worker waits for the guest, the bound doubles (the
// guest's answer must still be read) but does not go away.
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "served_call.hpp"

using ava::testing::ServedCall;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t kMiB = 1ull << 20;

struct BoundCase {
  uint64_t queued;     // bytes queued
  bool callback_waits; // a worker callback waits for the guest's answer
  bool full;           // the reader must stop
};

BoundCase kCases[] = {
    {0, false, false},
    {256 * kMiB, false, false},
    {256 * kMiB + 1, false, true},
    {4096 * kMiB, false, true},
    {256 * kMiB + 1, true, false},
    {512 * kMiB, true, false},
    {512 * kMiB + 1, true, true},
};

} // namespace

ParameterizedTestParameters(worker_queue_bound, the_reader_stops_past_the_bound) {
  return cr_make_param_array(BoundCase, kCases, sizeof kCases / sizeof kCases[0]);
}

ParameterizedTest(BoundCase *c, worker_queue_bound, the_reader_stops_past_the_bound) {
  ServedCall s;
  if (c->callback_waits)
    s.connection->begin_callback_wait(7);
  s.connection->queued(c->queued);
  cr_expect_eq(s.connection->queue_full(), c->full, "%llu bytes queued%s",
               static_cast<unsigned long long>(c->queued),
               c->callback_waits ? ", a callback waiting" : "");
  s.connection->dequeued(c->queued);
  cr_expect(!s.connection->queue_full(), "nothing queued any more");
}

// The reader blocked past the bound goes on once the shadow threads have
// served enough, and at once when the guest goes (never for good).
Test(worker_queue_bound, a_blocked_reader_goes_on_when_calls_are_served_or_the_guest_goes,
     .timeout = 30) {
  for (bool by_shutdown : {false, true}) {
    ServedCall s;
    s.connection->queued(300 * kMiB);
    std::atomic<bool> through{false};
    std::thread reader([&] {
      s.connection->wait_for_queue_space();
      through = true;
    });
    std::this_thread::sleep_for(50ms);
    cr_expect(!through.load(), "the reader went on past the bound");
    if (by_shutdown)
      s.connection->shutdown();
    else
      s.connection->dequeued(100 * kMiB);
    reader.join();
    cr_expect(through.load());
  }
}

// The doubled bound lasts only while the callback waits.
Test(worker_queue_bound, the_bound_is_single_again_when_the_callback_is_answered) {
  ServedCall s;
  s.connection->begin_callback_wait(9);
  s.connection->queued(300 * kMiB);
  cr_expect(!s.connection->queue_full());
  cr_expect(s.connection->complete_callback(9, AVA_OK));
  cr_expect_eq(s.connection->wait_callback(9), AVA_OK);
  cr_expect(s.connection->queue_full(), "the bound stayed doubled after the answer");
}
