// SPDX-License-Identifier: MIT
// finish(): waits for the tasks its block spawned, not for their children
// (Parla's test_finish_nested).
#include <atomic>
#include <condition_variable>
#include <mutex>

#include "parla_test_support.hpp"

using namespace parla;

Test(finish, waits_for_the_tasks_its_block_spawned) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  std::atomic<int> ran{0};
  rt.finish([&] {
    for (int i = 0; i < 20; ++i)
      rt.spawn(T[i], [&] { ran.fetch_add(1); });
  });
  cr_expect_eq(ran.load(), 20);
}

Test(finish, does_not_wait_for_grandchildren) {
  Runtime rt(parla_test::options());
  TaskSpace T("T"), G("G");
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<bool> child_done{false}, grandchild_done{false};
  rt.finish([&] {
    rt.spawn(T[0], [&] {
      // The grandchild waits for the main thread, which waits in finish():
      // if finish waited for it too, this would never end.
      rt.spawn(G[0], [&] {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return release; });
        grandchild_done = true;
      });
      child_done = true;
    });
  });
  cr_expect(child_done.load());
  cr_expect(!grandchild_done.load());
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  rt.wait(G);
  cr_expect(grandchild_done.load());
}

Test(finish, nests) {
  Runtime rt(parla_test::options());
  TaskSpace A("A"), B("B");
  std::atomic<int> inner{0}, outer{0};
  rt.finish([&] {
    rt.spawn(A[0], [&] { outer.fetch_add(1); });
    rt.finish([&] {
      for (int i = 0; i < 5; ++i)
        rt.spawn(B[i], [&] { inner.fetch_add(1); });
    });
    cr_expect_eq(inner.load(), 5, "the inner finish waited for its own tasks");
  });
  cr_expect_eq(outer.load(), 1);
}

Test(finish, inside_a_task_waits_for_that_tasks_children) {
  Runtime rt(parla_test::options());
  TaskSpace T("T"), C("C");
  auto h = rt.spawn(T[0], [&] {
    std::atomic<int> n{0};
    rt.finish([&] {
      for (int i = 0; i < 6; ++i)
        rt.spawn(C[i], [&n] { n.fetch_add(1); });
    });
    return n.load();
  });
  cr_expect_eq(h.get(), 6);
}

Test(finish, rethrows_a_childs_error) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  const std::string e = parla_test::thrown<std::runtime_error>([&] {
    rt.finish([&] { rt.spawn(T[0], [] { throw std::runtime_error("child failed"); }); });
  });
  cr_expect(e == "child failed", "got: %s", e.c_str());
}
