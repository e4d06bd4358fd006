// SPDX-License-Identifier: MIT
// Options::waiting_thread_helps: a thread of the program that waits runs
// ready tasks meanwhile (as oneTBB's and OpenMP's waiting threads do), and
// only then; what it runs is counted as any worker's work, and a graph
// that cannot finish is still reported, not waited for. The suites of
// spawn, graphs, errors, finish and coroutines also run with PARLA_HELP=1
// (tests/parla/CMakeLists.txt).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "parla_test_support.hpp"

using namespace parla;
using parla_test::contains;
using parla_test::thrown;

namespace {

Options one_worker(bool helps) {
  Options o = parla_test::options();
  o.threads = 1;
  o.waiting_thread_helps = helps;
  return o;
}

// The threads that ran bodies, and whether the waiting thread was one.
struct Threads {
  std::mutex mu;
  std::set<std::thread::id> seen;
  void note() {
    std::lock_guard lock(mu);
    seen.insert(std::this_thread::get_id());
  }
  bool has(std::thread::id id) {
    std::lock_guard lock(mu);
    return seen.count(id) != 0;
  }
};

} // namespace

// Two tasks that must run at the same time, and one worker: they meet only
// if the waiting thread runs one of them.
Test(help, the_waiting_thread_runs_a_task_the_single_worker_cannot) {
  Runtime rt(one_worker(true));
  TaskSpace T("T");
  parla_test::Rendezvous both(2);
  Threads threads;
  std::atomic<int> met{0};
  for (int i = 0; i < 2; ++i)
    rt.spawn(T[i], {.placement = *rt.devices()[static_cast<size_t>(i)]}, [&] {
      threads.note();
      met += both.arrive_and_wait() ? 1 : 0;
    });
  rt.wait(T);
  cr_expect_eq(met.load(), 2, "the two tasks ran at the same time");
  cr_expect(threads.has(std::this_thread::get_id()), "one ran on the waiting thread");
  cr_expect_eq(rt.stats().completed, 2u);
}

Test(help, without_the_option_no_body_runs_on_the_waiting_thread) {
  Runtime rt(one_worker(false));
  TaskSpace T("T");
  Threads threads;
  for (int i = 0; i < 64; ++i)
    rt.spawn(T[i], [&] { threads.note(); });
  rt.wait(T);
  cr_expect(!threads.has(std::this_thread::get_id()));
  cr_expect_eq(rt.stats().completed, 64u);
}

// A body run by the waiting thread may wait itself (finish, a task's value):
// it is then a body blocked in a wait like a worker's, which lends its
// compute to what it waits for.
Test(help, a_body_the_waiting_thread_runs_may_wait_for_its_children) {
  Runtime rt(one_worker(true));
  TaskSpace T("T"), C("C");
  std::atomic<int> children{0};
  for (int i = 0; i < 8; ++i)
    rt.spawn(T[i], [&, i] {
      rt.finish([&] {
        for (int k = 0; k < 4; ++k)
          rt.spawn(C[i * 4 + k], [&] { ++children; });
      });
      return children.load();
    });
  rt.wait(T);
  cr_expect_eq(children.load(), 32);
  for (int i = 0; i < 8; ++i)
    cr_expect_geq(rt.get<int>(T[i]), 4, "T[%d] saw its own children done", i);
}

// The waiting thread runs no body while it waits: a graph that cannot
// finish is reported to it, not waited for by it.
Test(help, a_graph_that_cannot_finish_is_reported_to_a_helping_thread) {
  Runtime rt(one_worker(true));
  TaskSpace T("T"), U("U");
  rt.spawn(T[0], [] {});
  rt.spawn(T[1], {.after = U[7]}, [] {});
  const std::string e = thrown<GraphError>([&] { rt.wait(T); });
  cr_expect(contains(e, "T[1] -> U[7]: U[7] was never spawned"), "%s", e.c_str());
}

// Several threads of the program wait at once, each helping.
Test(help, several_waiting_threads_help_at_once) {
  Runtime rt(one_worker(true));
  constexpr int kThreads = 3, kTasks = 200;
  std::vector<TaskSpace> spaces;
  for (int i = 0; i < kThreads; ++i)
    spaces.emplace_back("S" + std::to_string(i));
  std::atomic<int> ran{0};
  std::vector<std::thread> waiters;
  for (int w = 0; w < kThreads; ++w)
    waiters.emplace_back([&, w] {
      for (int i = 0; i < kTasks; ++i)
        rt.spawn(spaces[static_cast<size_t>(w)][i],
                 {.after = i > 0 ? TaskRefs(spaces[static_cast<size_t>(w)][i - 1]) : TaskRefs()},
                 [&] { ++ran; });
      rt.wait(spaces[static_cast<size_t>(w)]);
    });
  for (auto &t : waiters)
    t.join();
  cr_expect_eq(ran.load(), kThreads * kTasks);
  cr_expect_eq(rt.stats().completed, static_cast<uint64_t>(kThreads * kTasks));
}

// The waiting thread runs only what its wait is for: a task finish() does
// not wait for (a grandchild) may itself wait for the program's thread,
// which would then never return from finish() to let it go. The single
// worker is kept busy while the grandchild is ready, so that only the
// waiting thread could take it (before, it did, and this never ended).
Test(help, the_waiting_thread_runs_only_what_its_wait_is_for, .timeout = 60) {
  Runtime rt(one_worker(true));
  TaskSpace T("T"), G("G");
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  Threads threads;
  bool started = false;
  rt.finish([&] {
    rt.spawn(T[0], [&] {
      {
        std::lock_guard lock(mu);
        started = true;
      }
      cv.notify_all();
      rt.spawn(G[0], [&] {
        threads.note();
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return release; });
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    });
    // T[0] on the worker, not on this thread (a wait of the block's own,
    // not the runtime's: this thread helps only in the runtime's waits).
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return started; });
  });
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  rt.wait(G);
  cr_expect(!threads.has(std::this_thread::get_id()), "the grandchild ran on the waiting thread");
  cr_expect_eq(rt.stats().completed, 2u);
}
