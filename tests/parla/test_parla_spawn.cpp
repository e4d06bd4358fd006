// SPDX-License-Identifier: MIT
// Spawning and waiting: values through handles, chains, dependencies on
// tasks spawned later, loop values captured at spawn, duplicate ids.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "parla_test_support.hpp"

using namespace parla;
using parla_test::contains;
using parla_test::thrown;

Test(spawn, a_task_runs_and_returns_its_value) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  auto h = rt.spawn(T[0], [] { return 6 * 7; });
  cr_expect_eq(h.get(), 42);
  cr_expect_eq(rt.get<int>(T[0]), 42, "a value is also reachable by the task's id");
  rt.wait(T);
  cr_expect_eq(rt.stats().spawned, 1u);
  cr_expect_eq(rt.stats().completed, 1u);
}

Test(spawn, values_of_every_type_come_back) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  auto s = rt.spawn(T[0], [] { return std::string("parla"); });
  auto v = rt.spawn(T[1], [] { return std::vector<double>{1.5, 2.5}; });
  auto n = rt.spawn(T[2], [] {});
  cr_expect(s.get() == "parla");
  cr_expect(v.get() == (std::vector<double>{1.5, 2.5}));
  n.get();
  cr_expect(n.done());
}

Test(spawn, a_chain_runs_in_order_and_passes_values_along) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  constexpr int n = 200;
  std::vector<int> order;
  std::mutex mu;
  for (int i = 0; i < n; ++i)
    rt.spawn(T[i], {.after = i > 0 ? TaskRefs(T[i - 1]) : TaskRefs()}, [&, i] {
      std::lock_guard lock(mu);
      order.push_back(i);
      return i;
    });
  rt.wait(T);
  cr_assert_eq(order.size(), static_cast<size_t>(n));
  cr_expect(std::is_sorted(order.begin(), order.end()));
  cr_expect_eq(rt.get<int>(T[n - 1]), n - 1);
}

// Parla's test_dependencies: B[i] names C[i], spawned only after it; C[i]
// waits for B[i-1]. The order is C0 B0 C1 B1 ...
Test(spawn, dependencies_may_name_tasks_spawned_later) {
  Runtime rt(parla_test::options());
  TaskSpace B("B"), C("C");
  std::vector<std::string> order;
  std::mutex mu;
  auto record = [&](std::string s) {
    std::lock_guard lock(mu);
    order.push_back(std::move(s));
  };
  for (int i = 0; i < 10; ++i) {
    rt.spawn(B[i], {.after = C[i]}, [&, i] { record("B" + std::to_string(i)); });
    rt.spawn(C[i], {.after = i > 0 ? TaskRefs(B[i - 1]) : TaskRefs()},
             [&, i] { record("C" + std::to_string(i)); });
  }
  rt.wait();
  std::vector<std::string> expected;
  for (int i = 0; i < 10; ++i) {
    expected.push_back("C" + std::to_string(i));
    expected.push_back("B" + std::to_string(i));
  }
  cr_expect(order == expected);
}

// Parla's test_closure_detachment: each task sees the loop value of its spawn.
Test(spawn, loop_values_are_captured_at_spawn) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  std::vector<TaskHandle<int>> handles;
  int shared = 0;
  for (int i = 0; i < 50; ++i) {
    shared = i;
    handles.push_back(rt.spawn(T[i], [value = shared] { return value * 2; }));
  }
  shared = -1;
  for (int i = 0; i < 50; ++i)
    cr_expect_eq(handles[static_cast<size_t>(i)].get(), i * 2);
}

Test(spawn, many_dependencies_and_dependents) {
  Runtime rt(parla_test::options());
  TaskSpace A("A"), Z("Z");
  std::atomic<int> done{0};
  for (int i = 0; i < 64; ++i)
    rt.spawn(A[i], [&] { done.fetch_add(1); });
  auto sum = rt.spawn(Z[0], {.after = A[slice(0, 64)]}, [&] { return done.load(); });
  cr_expect_eq(sum.get(), 64, "the join ran after all 64 tasks");
}

Test(spawn, a_duplicate_id_is_an_error_naming_it) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  rt.spawn(T(1, 2), [] {});
  const std::string e = thrown<Error>([&] { rt.spawn(T(1, 2), [] {}); });
  cr_expect(contains(e, "duplicate task id T[1,2]"), "message: %s", e.c_str());
  rt.wait();
  cr_expect_eq(rt.stats().spawned, 1u);
}

Test(spawn, tasks_spawn_tasks) {
  Runtime rt(parla_test::options());
  TaskSpace T("T"), U("U");
  std::atomic<int> ran{0};
  for (int i = 0; i < 8; ++i)
    rt.spawn(T[i], [&rt, &U, &ran, i] {
      for (int j = 0; j < 8; ++j)
        rt.spawn(U(i, j), [&ran] { ran.fetch_add(1); });
    });
  rt.wait(T);
  rt.wait(U);
  cr_expect_eq(ran.load(), 64);
  cr_expect_eq(U.spawned(), 64u);
}

Test(spawn, a_task_may_wait_for_another_without_blocking_the_runtime) {
  // Both workers block in get() on tasks that need a worker to run: the
  // waiting workers run them meanwhile.
  Runtime rt(parla_test::options());
  TaskSpace T("T"), U("U");
  std::vector<TaskHandle<int>> outer;
  for (int i = 0; i < 4; ++i)
    outer.push_back(rt.spawn(T[i], [&rt, &U, i] {
      auto inner = rt.spawn(U[i], [i] { return i + 100; });
      return inner.get();
    }));
  for (int i = 0; i < 4; ++i)
    cr_expect_eq(outer[static_cast<size_t>(i)].get(), i + 100);
}

Test(spawn, the_runtime_ends_only_after_its_tasks) {
  std::atomic<int> ran{0};
  {
    Runtime rt(parla_test::options());
    TaskSpace T("T");
    for (int i = 0; i < 100; ++i)
      rt.spawn(T[i], {.after = i > 0 ? TaskRefs(T[i - 1]) : TaskRefs()}, [&] { ran.fetch_add(1); });
  }
  cr_expect_eq(ran.load(), 100);
}

Test(spawn, current_task_names_the_running_task) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  auto h = rt.spawn(T(3, 4), [] { return current_task()->name(); });
  cr_expect(h.get() == "T[3,4]");
  cr_expect(current_task() == nullptr);
}
