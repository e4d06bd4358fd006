// SPDX-License-Identifier: MIT
// Coroutine bodies: co_await of tasks and values, of tasks not spawned yet
// and of several at once; the continuation keeps its device; an awaiting
// task lends its compute units; errors come out of co_await.
#include <atomic>
#include <latch>

#include "parla_test_support.hpp"

using namespace parla;
using parla_test::thrown;

PARLA_TEST(coroutines, await_a_value) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  auto a = rt.spawn(T[0], [] { return 20; });
  auto b = rt.spawn(T[1], [a]() -> Coro<int> {
    const int v = co_await a;
    co_return v + 22;
  });
  cr_expect_eq(b.get(), 42);
}

PARLA_TEST(coroutines, await_a_task_spawned_later_and_several_at_once) {
  Runtime rt(parla_test::options());
  TaskSpace T("T"), U("U");
  std::atomic<int> sum{0};
  auto waiter = rt.spawn(T[0], [&]() -> Coro<int> {
    co_await U[slice(0, 4)]; // none of them is spawned yet
    co_return sum.load();
  });
  for (int i = 0; i < 4; ++i)
    rt.spawn(U[i], [&sum, i] { sum.fetch_add(i + 1); });
  cr_expect_eq(waiter.get(), 10);
}

PARLA_TEST(coroutines, a_chain_of_awaits) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  TaskHandle<int> prev = rt.spawn(T[0], [] { return 1; });
  for (int i = 1; i < 20; ++i)
    prev = rt.spawn(T[i], [prev]() -> Coro<int> { co_return 2 * co_await prev; });
  cr_expect_eq(prev.get(), 1 << 19);
}

// Parla's test_placement_await.
PARLA_TEST(coroutines, the_continuation_keeps_its_device) {
  Runtime rt(parla_test::options());
  TaskSpace T("T"), C("C");
  for (int d = 0; d < 2; ++d) {
    Device &mine = rt.device(parla_test::arch(), d);
    Device &other = rt.device(parla_test::arch(), 1 - d);
    auto h = rt.spawn(T[d], {.placement = mine}, [&rt, &C, &other, d]() -> Coro<bool> {
      Device *before = &current_device();
      // Spawned in a statement of its own (GCC 12: see Runtime::spawn).
      auto child = rt.spawn(C[d], {.placement = other}, [] { return &current_device(); });
      co_await child;
      co_return before == &current_device();
    });
    cr_expect(h.get(), "the task continued on %s", mine.name().c_str());
  }
}

PARLA_TEST(coroutines, an_awaiting_task_lends_its_compute_units) {
  // Both tasks need the whole (one-vcu) device: the child can run only if
  // the parent gives its vcus back while it awaits.
  Runtime rt(parla_test::options());
  TaskSpace T("T"), C("C");
  Device &dev = rt.device(parla_test::arch(), 0);
  auto h = rt.spawn(T[0], {.placement = dev}, [&]() -> Coro<int> {
    auto child = rt.spawn(C[0], {.placement = dev}, [] { return 7; });
    co_return co_await child;
  });
  cr_expect_eq(h.get(), 7);
}

PARLA_TEST(coroutines, an_error_comes_out_of_co_await) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  // T[0] fails once T[1] has started (fail-fast cancels only tasks that
  // have not).
  std::latch started(1);
  auto bad = rt.spawn(T[0], [&started]() -> int {
    started.wait();
    throw std::runtime_error("bad value");
  });
  auto h = rt.spawn(T[1], [bad, &started]() -> Coro<std::string> {
    started.count_down();
    try {
      co_await bad;
    } catch (const std::runtime_error &e) {
      co_return std::string("caught ") + e.what();
    }
    co_return std::string("nothing thrown");
  });
  cr_expect(h.get() == "caught bad value");
  const std::string e = thrown<std::runtime_error>([&] { rt.wait(); });
  cr_expect(e == "bad value", "wait rethrew: %s", e.c_str());
}

PARLA_TEST(coroutines, an_exception_in_a_coroutine_fails_its_task) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  auto a = rt.spawn(T[0], [] { return 1; });
  auto h = rt.spawn(T[1], [a]() -> Coro<int> {
    co_await a;
    throw std::logic_error("after the await");
  });
  const std::string e = thrown<std::logic_error>([&] { h.get(); });
  cr_expect(e == "after the await", "got: %s", e.c_str());
  cr_expect(!thrown<std::logic_error>([&] { rt.wait(); }).empty());
  cr_expect_eq(rt.stats().failed, 1u);
}
