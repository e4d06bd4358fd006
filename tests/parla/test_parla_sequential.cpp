// SPDX-License-Identifier: MIT
// Sequential mode (Parla #46): every task runs on the spawning thread as
// soon as its dependencies are done, in spawn order, with the results of a
// parallel run bit for bit.
#include <cstdlib>
#include <cstring>
#include <thread>

#include "graphs.hpp"
#include "parla_test_support.hpp"

using namespace parla;
using parla_test::Graph;

PARLA_TEST(sequential, tasks_run_on_the_spawning_thread_in_spawn_order) {
  Runtime rt(parla_test::options(/*sequential=*/true));
  cr_expect(rt.sequential());
  cr_expect_eq(rt.threads(), 0u, "no worker threads");
  TaskSpace T("T"), U("U");
  const auto me = std::this_thread::get_id();
  std::vector<std::string> order;
  bool elsewhere = false;
  auto note = [&](std::string s) {
    elsewhere = elsewhere || std::this_thread::get_id() != me;
    order.push_back(std::move(s));
  };
  rt.spawn(T[0], [&] { note("T0"); });
  cr_expect_eq(order.size(), 1u, "a task whose dependencies are done runs at its spawn");
  // Spawned before their dependency: they run when it is done, in the
  // order they were spawned.
  rt.spawn(T[2], {.after = U[0]}, [&] { note("T2"); });
  rt.spawn(T[1], {.after = U[0]}, [&] { note("T1"); });
  cr_expect_eq(order.size(), 1u);
  rt.spawn(U[0], [&] { note("U0"); });
  auto co = rt.spawn(T[3], [&]() -> Coro<int> {
    note("T3 starts");
    co_await U[1]; // spawned later
    note("T3 continues");
    co_return 3;
  });
  rt.spawn(U[1], [&] { note("U1"); });
  rt.wait();
  const std::vector<std::string> expected{"T0",        "U0", "T2",          "T1",
                                          "T3 starts", "U1", "T3 continues"};
  cr_expect(order == expected, "order: %zu entries", order.size());
  cr_expect(!elsewhere, "every task ran on the spawning thread");
  cr_expect_eq(co.get(), 3);
}

Test(sequential, parla_sequential_in_the_environment_turns_it_on) {
  setenv("PARLA_SEQUENTIAL", "1", 1);
  Runtime rt(parla_test::options());
  unsetenv("PARLA_SEQUENTIAL");
  cr_expect(rt.sequential());
}

Test(sequential, results_are_bit_identical_to_a_parallel_run) {
  for (Graph g : {Graph::independent, Graph::serial, Graph::reduction, Graph::reduction_scatter}) {
    std::vector<double> runs[2];
    for (int sequential = 0; sequential < 2; ++sequential) {
      Runtime rt(parla_test::options(sequential == 1));
      TaskSpace T("T");
      parla_test::spawn_graph(rt, g, 32, 5, runs[sequential], T);
      rt.wait(T);
    }
    cr_expect(std::memcmp(runs[0].data(), runs[1].data(), runs[0].size() * sizeof(double)) == 0,
              "%s: the sequential run differs", graph_name(g));
  }
}

Test(sequential, errors_behave_as_in_a_parallel_run) {
  Runtime rt(parla_test::options(true));
  TaskSpace T("T");
  rt.spawn(T[0], [] { throw std::runtime_error("seq"); });
  auto later = rt.spawn(T[1], [] {});
  cr_expect(!parla_test::thrown<Cancelled>([&] { later.get(); }).empty(), "fail-fast");
  cr_expect(parla_test::thrown<std::runtime_error>([&] { rt.wait(); }) == "seq");
}
