// SPDX-License-Identifier: MIT
// Placement on architectures, devices, option lists and device sets;
// compute units (vcus) shared and exclusive; memory-aware mapping; the
// policy's formula; placements no device satisfies.
#include <atomic>
#include <map>
#include <set>

#include "parla_test_support.hpp"

using namespace parla;
using parla_test::contains;
using parla_test::thrown;

Test(placement, on_an_architecture) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  for (int i = 0; i < 8; ++i) {
    auto h =
        rt.spawn(T[i], {.placement = parla_test::arch()}, [] { return current_device().arch(); });
    cr_expect(h.get() == parla_test::arch());
  }
}

Test(placement, on_a_device) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  for (int d = 0; d < 2; ++d) {
    Device &dev = rt.device(parla_test::arch(), d);
    for (int i = 0; i < 4; ++i) {
      auto h = rt.spawn(T(d, i), {.placement = dev}, [] { return &current_device(); });
      cr_expect_eq(h.get(), &dev);
    }
  }
  cr_expect(rt.device(parla_test::arch(), 1).name() ==
            std::string(to_string(parla_test::arch())) + "(1)");
}

Test(placement, an_option_list_skips_options_that_cannot_hold_the_task) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  Device &d0 = rt.device(parla_test::arch(), 0);
  Device &d1 = rt.device(parla_test::arch(), 1);
  const uint64_t too_much = d1.memory_capacity() + 1;
  auto h = rt.spawn(T[0], {.placement = any_of({on(d1).with({.memory = too_much}), on(d0)})},
                    [] { return &current_device(); });
  cr_expect_eq(h.get(), &d0);
}

Test(placement, a_device_set_gives_one_task_distinct_devices) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  auto h = rt.spawn(T[0], {.placement = on(parla_test::arch(), parla_test::arch())},
                    [] { return current_devices(); });
  const std::vector<Device *> devices = h.get();
  cr_assert_eq(devices.size(), 2u);
  cr_expect_neq(devices[0], devices[1]);
  Device &d1 = rt.device(parla_test::arch(), 1);
  auto g =
      rt.spawn(T[1], {.placement = on(d1, parla_test::arch())}, [] { return current_devices(); });
  const std::vector<Device *> pinned = g.get();
  cr_expect(pinned.size() == 2 && pinned[0] == &d1 && pinned[1] != &d1);
}

Test(placement, a_placement_no_device_satisfies_fails_at_spawn_naming_task_and_need) {
  Runtime rt(parla_test::options(/*sequential=*/false));
  TaskSpace T("T");
  const Arch a = parla_test::arch();
  const std::string arch_name(to_string(a));
  struct Case {
    SpawnOptions options;
    std::vector<std::string> message;
  };
  const Case cases[] = {
      {{.placement = on(a, a, a)},
       {"task T[0] cannot be placed", "{" + arch_name + ", " + arch_name}},
      {{.placement = a, .resources = {.memory = 3ull << 30}},
       {"task T[0] cannot be placed", "3.0 GiB"}},
      {{.placement = a, .resources = {.vcus = 2}}, {"2.000000 vcus"}},
      {{.resources = {.vcus = 0}}, {"vcus must be a positive number"}},
      {{.placement = Arch::accelerator}, {"{accelerator}", "the devices have"}},
  };
  for (const Case &c : cases) {
    SpawnOptions o = c.options;
    const std::string e = thrown<Error>([&] { rt.spawn(T[0], std::move(o), [] {}); });
    for (const std::string &m : c.message)
      cr_expect(contains(e, m), "expected \"%s\" in \"%s\"", m.c_str(), e.c_str());
  }
  rt.spawn(T[0], [] {}); // the failed spawns left no task behind
  rt.wait();
  cr_expect_eq(rt.stats().spawned, 1u);
}

Test(placement, fractional_vcus_share_a_device) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  Device &dev = rt.device(parla_test::arch(), 0);
  parla_test::Rendezvous both(2);
  std::vector<TaskHandle<bool>> h;
  for (int i = 0; i < 2; ++i)
    h.push_back(rt.spawn(T[i], {.placement = dev, .resources = {.vcus = 0.5}},
                         [&] { return both.arrive_and_wait(); }));
  cr_expect(h[0].get() && h[1].get(), "two 0.5-vcu tasks ran on one device at the same time");
}

Test(placement, whole_vcus_serialise_on_a_device) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  Device &dev = rt.device(parla_test::arch(), 0);
  parla_test::Concurrency c;
  std::atomic<int> ran{0};
  for (int i = 0; i < 6; ++i)
    rt.spawn(T[i], {.placement = dev, .resources = {.vcus = i % 2 ? 1.0 : 0.75}}, [&] {
      c.enter();
      for (int k = 0; k < 200000; ++k)
        asm volatile("" ::: "memory"); // work the compiler cannot drop
      c.leave();
      ran.fetch_add(1);
    });
  rt.wait();
  cr_expect_eq(ran.load(), 6);
  cr_expect_eq(c.max(), 1, "tasks whose vcus add up past the device's never overlapped");
}

// Parla's test_memory_aware_scheduling: tasks that need a device's whole
// memory never share one, and they spread over the devices. Each really
// allocates (and touches) that memory: on PoCL the device's reported size
// (POCL_MEMORY_LIMIT), through ava what the host lets the guest have.
Test(placement, whole_memory_tasks_queue_per_device_and_spread) {
  parla::Options o;
  o.devices = parla_test::devices(64ull << 20);
  o.threads = 2;
  Runtime rt(std::move(o));
  TaskSpace T("T");
  std::mutex mu;
  std::map<Device *, int> running, used;
  bool overlap = false;
  std::atomic<int> allocated{0};
  for (int i = 0; i < 8; ++i) {
    Device &any = rt.device(parla_test::arch(), 0);
    const uint64_t whole = any.memory_capacity();
    rt.spawn(T[i], {.placement = parla_test::arch(), .resources = {.memory = whole, .vcus = 0.25}},
             [&] {
               Device &d = current_device();
               {
                 std::lock_guard lock(mu);
                 overlap = overlap || ++running[&d] > 1;
                 ++used[&d];
               }
               std::vector<void *> blocks;
               uint64_t got = 0;
               const uint64_t step = std::min(d.max_allocation(), d.memory_capacity());
               while (got < d.memory_capacity()) {
                 const uint64_t n = std::min(step, d.memory_capacity() - got);
                 void *p = d.allocate(n);
                 if (p == nullptr)
                   break;
                 blocks.push_back(p);
                 got += n;
               }
               if (got == d.memory_capacity())
                 allocated.fetch_add(1);
               for (void *p : blocks)
                 d.release(p);
               std::lock_guard lock(mu);
               --running[&d];
             });
  }
  rt.wait();
  cr_expect(!overlap, "two whole-memory tasks held one device at once");
  cr_expect_eq(used.size(), 2u, "both devices took tasks");
  cr_expect_eq(allocated.load(), 8, "every task got the whole memory of its device");
}

// The formula in parla/src/scheduler.cpp, term by term.
PARLA_TEST(placement, the_policy_weighs_load_and_memory) {
  Runtime rt(parla_test::options());
  TaskSpace Hold("Hold"), More("More"), Gate("Gate"), T("T");
  Device &d0 = rt.device(parla_test::arch(), 0);
  Device &d1 = rt.device(parla_test::arch(), 1);
  // Tasks that stay mapped (and keep their memory) without holding a
  // worker: they await a gate task spawned only when they may end.
  auto hold = [&Gate](int gate) { return [&Gate, gate]() -> Coro<void> { co_await Gate[gate]; }; };
  auto let_go = [&](int gate) { rt.spawn(Gate[gate], [] {}); };
  // M: d0 holds 3/4 of its memory, d1 has two tasks and no memory held. A
  // task needing 1/2 scores -10*1/4 - 10*5/4 = -15 on d0 and
  // -10*2/4 - 10*1/2 = -10 on d1: memory decides against the lighter load.
  const uint64_t cap = d0.memory_capacity();
  rt.spawn(Hold[0], {.placement = d0, .resources = {.memory = cap / 4 * 3, .vcus = 0.1}}, hold(0));
  rt.spawn(Hold[1], {.placement = d1, .resources = {.vcus = 0.1}}, hold(0));
  rt.spawn(Hold[2], {.placement = d1, .resources = {.vcus = 0.1}}, hold(0));
  auto m = rt.spawn(
      T[0], {.placement = parla_test::arch(), .resources = {.memory = cap / 2, .vcus = 0.1}},
      [] { return &current_device(); });
  cr_expect_eq(m.get(), &d1, "memory pressure decides");
  let_go(0);
  rt.wait(Hold);
  // T: two tasks mapped to d1, none to d0: 0 on d0 against -10*2/3 on d1.
  rt.spawn(More[0], {.placement = d1, .resources = {.vcus = 0.1}}, hold(1));
  rt.spawn(More[1], {.placement = d1, .resources = {.vcus = 0.1}}, hold(1));
  auto t = rt.spawn(T[1], {.placement = parla_test::arch(), .resources = {.vcus = 0.1}},
                    [] { return &current_device(); });
  cr_expect_eq(t.get(), &d0, "the device with fewer tasks mapped wins");
  let_go(1);
  rt.wait(More);
  // Ties rotate: equal devices take turns.
  std::set<Device *> seen;
  for (int i = 2; i < 6; ++i)
    seen.insert(
        rt.spawn(T[i], {.placement = parla_test::arch()}, [] { return &current_device(); }).get());
  cr_expect_eq(seen.size(), 2u);
}
