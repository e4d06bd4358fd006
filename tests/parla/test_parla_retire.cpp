// SPDX-License-Identifier: MIT
// A long-running program does not grow: a completed task with nothing left
// to ask of it (no value, no error) retires, and a task space nobody holds
// any more is dropped, while everything a program can still ask stays
// right (a dependency on a retired task, a duplicate id, values, errors).
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "parla_test_support.hpp"

using namespace parla;
using parla_test::contains;
using parla_test::thrown;

namespace {

// Chains of `n` empty tasks in `space`, in batches, waiting for each batch.
void run_chain(Runtime &rt, TaskSpace &space, int n) {
  for (int i = 0; i < n; ++i)
    rt.spawn(space[i], {.after = i > 0 ? TaskRefs(space[i - 1]) : TaskRefs()}, [] {});
  rt.wait(space);
}

} // namespace

Test(retire, completed_tasks_without_a_value_give_their_state_up) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  constexpr int n = 20000;
  run_chain(rt, T, n);
  const Stats s = rt.stats();
  cr_expect_eq(s.completed, static_cast<uint64_t>(n));
  // Handles were dropped at once: nothing but "done" is left of them.
  cr_expect_eq(s.task_states, 0u, "%llu of %d task states kept",
               static_cast<unsigned long long>(s.task_states), n);
}

Test(retire, a_dependency_on_a_retired_task_is_satisfied_and_its_id_stays_taken) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  run_chain(rt, T, 100);
  cr_assert_eq(rt.stats().task_states, 0u);
  std::atomic<bool> ran{false};
  rt.spawn(T[1000], {.after = TaskRefs(T[50])}, [&] { ran = true; });
  rt.wait(T);
  cr_expect(ran.load(), "a task after a retired one ran");
  const std::string why = thrown<Error>([&] { rt.spawn(T[7], [] {}); });
  cr_expect(contains(why, "duplicate task id T[7]"), "%s", why.c_str());
  rt.wait(TaskRefs(T[7])); // done: returns at once
}

Test(retire, values_errors_and_held_handles_are_kept) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  auto held = rt.spawn(T[0], [] {});
  rt.spawn(T[1], [] { return 41 + 1; });
  rt.wait(T);
  cr_expect_eq(rt.get<int>(T[1]), 42, "a value stays reachable by its id");
  held.get(); // a held handle stays valid
  cr_expect(held.done());
  cr_expect_eq(rt.stats().task_states, 1u, "only the task with a value keeps its state");

  TaskSpace E("E");
  rt.spawn(E[0], [] { throw std::runtime_error("boom"); });
  cr_expect(contains(thrown([&] { rt.wait(E); }), "boom"));
  // The failed task keeps its error for tasks spawned after it.
  rt.spawn(E[1], {.after = TaskRefs(E[0])}, [] {});
  cr_expect(contains(thrown([&] { rt.wait(E); }), "boom"));
}

Test(retire, spaces_nobody_holds_are_dropped) {
  Runtime rt(parla_test::options());
  TaskSpace kept("kept");
  run_chain(rt, kept, 10);
  for (int round = 0; round < 200; ++round) {
    TaskSpace S("S" + std::to_string(round));
    run_chain(rt, S, 50);
  }
  const Stats s = rt.stats();
  cr_expect_eq(s.completed, 10u + 200u * 50u);
  // Pruned when as many spaces again were bound: at most about twice the
  // live ones (one, kept) plus the pruning threshold.
  cr_expect_leq(s.spaces, 16u, "%llu spaces kept", static_cast<unsigned long long>(s.spaces));
  cr_expect_eq(s.task_states, 0u);
  // The held one is still there: its ids are taken.
  cr_expect(contains(thrown<Error>([&] { rt.spawn(kept[3], [] {}); }), "duplicate task id"));
}

Test(retire, the_trace_keeps_every_task) {
  const std::string path = "/tmp/parla-retire-trace-" + std::to_string(getpid()) + ".json";
  {
    Options o = parla_test::options();
    o.trace_path = path;
    Runtime rt(std::move(o));
    TaskSpace T("T");
    run_chain(rt, T, 50);
    // Its flows and slices name finished tasks.
    cr_expect_eq(rt.stats().task_states, 50u);
  }
  std::remove(path.c_str());
}
