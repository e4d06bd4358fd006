// SPDX-License-Identifier: MIT
// Memory-aware placement on a device whose memory really is limited: one
// PoCL device behind an ava worker that grants this guest 256 MiB. The
// runtime takes the device's capacity from what it reports (the quota),
// and tasks that each need all of it run one after the other and all get
// it; the same tasks declaring nothing run side by side and one of them is
// refused by the host (the limit is real, not advisory).
#include <atomic>

#include "parla_test_support.hpp"

using namespace parla;

namespace {

constexpr uint64_t kQuota = 256ull << 20;

// Allocates (and touches) all of d's memory; true when it got it. The
// blocks are held until `meet` says both tasks have tried.
bool take_whole_memory(Device &d, parla_test::Rendezvous *meet) {
  std::vector<void *> blocks;
  uint64_t got = 0;
  const uint64_t step = std::min(d.max_allocation(), d.memory_capacity());
  while (got < d.memory_capacity()) {
    void *p = d.allocate(std::min(step, d.memory_capacity() - got));
    if (p == nullptr)
      break;
    blocks.push_back(p);
    got += std::min(step, d.memory_capacity() - got);
  }
  if (meet != nullptr)
    meet->arrive_and_wait(std::chrono::seconds(5));
  for (void *p : blocks)
    d.release(p);
  return got == d.memory_capacity();
}

} // namespace

Test(quota, the_device_reports_the_quota_as_its_memory) {
  Runtime rt(parla_test::options());
  cr_expect_eq(rt.device(parla_test::arch(), 0).memory_capacity(), kQuota);
}

Test(quota, whole_memory_tasks_run_one_at_a_time_and_all_get_their_memory) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  std::atomic<int> whole{0}, running{0};
  std::atomic<bool> overlap{false};
  for (int i = 0; i < 8; ++i)
    rt.spawn(T[i], {.placement = parla_test::arch(), .resources = {.memory = kQuota, .vcus = 0.25}},
             [&] {
               overlap = overlap || running.fetch_add(1) > 0;
               if (take_whole_memory(current_device(), nullptr))
                 whole.fetch_add(1);
               running.fetch_sub(1);
             });
  rt.wait();
  cr_expect(!overlap.load());
  cr_expect_eq(whole.load(), 8, "every task got the whole quota");
}

Test(quota, tasks_that_declare_no_memory_run_out) {
  // The control: without memory=, two tasks share the device, both try to
  // hold all of it at once, and the host refuses one.
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  parla_test::Rendezvous both(2);
  std::atomic<int> whole{0};
  for (int i = 0; i < 2; ++i)
    rt.spawn(T[i], {.placement = parla_test::arch(), .resources = {.vcus = 0.5}}, [&] {
      if (take_whole_memory(current_device(), &both))
        whole.fetch_add(1);
    });
  rt.wait();
  cr_expect_eq(whole.load(), 1, "one of the two got the quota, the other was refused");
}
