// SPDX-License-Identifier: MIT
// Fail-fast (Parla #55): the first exception cancels the tasks not yet
// started, dependents and waiters get it, wait rethrows it, an error
// nobody observed ends the program, SIGINT ends it promptly; graph errors
// (never spawned, cycles) are reported instead of hanging.
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <latch>

#include "parla_test_support.hpp"

using namespace parla;
using parla_test::contains;
using parla_test::thrown;

Test(errors, wait_rethrows_the_first_exception) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  rt.spawn(T[0], [] { throw std::invalid_argument("first"); });
  const std::string e = thrown<std::invalid_argument>([&] { rt.wait(T); });
  cr_expect(e == "first", "got: %s", e.c_str());
  cr_expect_eq(rt.stats().failed, 1u);
}

Test(errors, dependents_are_cancelled_naming_the_failed_dependency) {
  Runtime rt(parla_test::options());
  TaskSpace T("T");
  std::atomic<int> ran{0};
  rt.spawn(T[0], [] { throw std::runtime_error("boom"); });
  std::vector<TaskHandle<void>> chain;
  for (int i = 1; i < 5; ++i)
    chain.push_back(rt.spawn(T[i], {.after = T[i - 1]}, [&] { ran.fetch_add(1); }));
  for (auto &h : chain) {
    try {
      h.get();
      cr_expect_fail("a dependent of a failed task ran");
    } catch (const Cancelled &c) {
      cr_expect(contains(c.what(), "was cancelled"), "got: %s", c.what());
      cr_expect(thrown<std::runtime_error>([&] { std::rethrow_exception(c.cause()); }) == "boom",
                "the cause is the first error");
    }
  }
  cr_expect_eq(ran.load(), 0);
  cr_expect(thrown<std::runtime_error>([&] { rt.wait(); }) == "boom");
  cr_expect_eq(rt.stats().cancelled, 4u);
}

Test(errors, tasks_not_yet_started_are_cancelled_and_running_ones_finish) {
  Runtime rt(parla_test::options());
  TaskSpace A("A"), G("G"), C("C");
  std::latch gate(1);
  std::atomic<bool> gate_finished{false}, later_ran{false};
  // G runs (and holds a worker) until the main thread opens the gate;
  // C waits for G. A fails meanwhile: C has not started, so it never will.
  auto g = rt.spawn(G[0], [&] {
    gate.wait();
    gate_finished = true;
  });
  auto c = rt.spawn(C[0], {.after = G[0]}, [&] { later_ran = true; });
  auto a = rt.spawn(A[0], [] { throw std::runtime_error("A failed"); });
  a.wait();
  gate.count_down();
  g.get(); // it had started: it ran to its end
  cr_expect(gate_finished.load());
  const std::string e = thrown<Cancelled>([&] { c.get(); });
  cr_expect(contains(e, "C[0] was cancelled: A[0] failed first (A failed)"), "got: %s", e.c_str());
  cr_expect(!later_ran.load());
  // Nothing new starts after a failure.
  auto late = rt.spawn(C[1], [&] { later_ran = true; });
  cr_expect(!thrown<Cancelled>([&] { late.get(); }).empty());
  cr_expect(!later_ran.load());
  cr_expect(thrown<std::runtime_error>([&] { rt.wait(); }) == "A failed");
}

Test(errors, graph_errors_are_reported_by_wait) {
  struct Case {
    const char *name;
    std::function<void(Runtime &, TaskSpace &, TaskSpace &)> build;
    const char *message;
  };
  const Case cases[] = {
      {"never spawned",
       [](Runtime &rt, TaskSpace &T, TaskSpace &U) { rt.spawn(T[0], {.after = U[7]}, [] {}); },
       "T[0] -> U[7]: U[7] was never spawned"},
      {"never spawned, deep",
       [](Runtime &rt, TaskSpace &T, TaskSpace &U) {
         rt.spawn(T[0], {.after = T[1]}, [] {});
         rt.spawn(T[1], {.after = U[3]}, [] {});
       },
       "T[0] -> T[1] -> U[3]: U[3] was never spawned"},
      {"cycle",
       [](Runtime &rt, TaskSpace &T, TaskSpace &U) {
         rt.spawn(T[0], {.after = U[0]}, [] {});
         rt.spawn(U[0], {.after = T[0]}, [] {});
       },
       "dependency cycle: T[0] -> U[0] -> T[0]"},
      {"self",
       [](Runtime &rt, TaskSpace &T, TaskSpace &) { rt.spawn(T[0], {.after = T[0]}, [] {}); },
       "T[0] depends on itself"},
  };
  for (const Case &c : cases) {
    for (bool sequential : {false, true}) {
      Runtime rt(parla_test::options(sequential));
      TaskSpace T("T"), U("U");
      c.build(rt, T, U);
      const std::string e = thrown<GraphError>([&] { rt.wait(T); });
      cr_expect(contains(e, c.message), "%s (%s): expected \"%s\", got \"%s\"", c.name,
                sequential ? "sequential" : "parallel", c.message, e.c_str());
    }
  }
}

PARLA_TEST(errors, a_coroutine_awaiting_a_task_never_spawned_is_reported) {
  Runtime rt(parla_test::options());
  TaskSpace T("T"), U("U");
  auto h = rt.spawn(T[0], [&U]() -> Coro<int> {
    try {
      co_await U[1];
    } catch (const GraphError &) {
      co_return -1;
    }
    co_return 1;
  });
  const std::string e = thrown<GraphError>([&] { rt.wait(); });
  cr_expect(contains(e, "U[1] was never spawned"), "got: %s", e.c_str());
  cr_expect_eq(h.get(), -1);
}

namespace {

// Runs child() in a forked process; its exit status and what it wrote to
// stderr. The parent waits at most limit_s for it (pidfd + poll: no naps).
struct ChildResult {
  int status = 0;
  bool timed_out = false;
  std::string err;
};

ChildResult run_child(const std::function<void(int notify_fd)> &child, int limit_s,
                      const std::function<void(pid_t, int ready_fd)> &parent = {}) {
  int err_pipe[2], ready_pipe[2];
  cr_assert_eq(pipe(err_pipe), 0);
  cr_assert_eq(pipe(ready_pipe), 0);
  const pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    dup2(err_pipe[1], STDERR_FILENO);
    close(err_pipe[0]);
    close(ready_pipe[0]);
    child(ready_pipe[1]);
    _exit(0);
  }
  close(err_pipe[1]);
  close(ready_pipe[1]);
  if (parent)
    parent(pid, ready_pipe[0]);
  ChildResult r;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  cr_assert_geq(pidfd, 0);
  pollfd p{pidfd, POLLIN, 0};
  if (poll(&p, 1, limit_s * 1000) != 1) {
    r.timed_out = true;
    kill(pid, SIGKILL);
  }
  waitpid(pid, &r.status, 0);
  char buf[4096];
  ssize_t n;
  while ((n = read(err_pipe[0], buf, sizeof buf)) > 0)
    r.err.append(buf, static_cast<size_t>(n));
  close(err_pipe[0]);
  close(ready_pipe[0]);
  close(pidfd);
  return r;
}

} // namespace

Test(errors, an_error_nobody_observed_ends_the_program_with_its_message) {
  ChildResult r = run_child(
      [](int) {
        Runtime rt(parla_test::options());
        TaskSpace T("T");
        rt.spawn(T[0], [] { throw std::runtime_error("lost error"); });
      },
      60);
  cr_expect(!r.timed_out);
  cr_expect(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT, "status %#x", r.status);
  cr_expect(contains(r.err, "parla: a task failed and nothing waited for its error: lost error"),
            "stderr: %s", r.err.c_str());
}

Test(errors, an_observed_error_ends_the_runtime_quietly) {
  ChildResult r = run_child(
      [](int) {
        Runtime rt(parla_test::options());
        TaskSpace T("T");
        rt.spawn(T[0], [] { throw std::runtime_error("seen"); });
        try {
          rt.wait();
        } catch (const std::runtime_error &) {
        }
      },
      60);
  cr_expect(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "status %#x: %s", r.status,
            r.err.c_str());
}

Test(errors, sigint_ends_a_program_whose_tasks_are_busy) {
  ChildResult r = run_child(
      [](int ready) {
        Runtime rt(parla_test::options());
        TaskSpace T("T");
        for (int i = 0; i < 2; ++i)
          rt.spawn(T[i], [ready, i] {
            if (i == 0 && write(ready, "r", 1) != 1)
              _exit(3);
            // Busy for at most 60 s: SIGINT must not wait for it.
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
            while (std::chrono::steady_clock::now() < until)
              asm volatile("" ::: "memory");
          });
        rt.wait();
        _exit(4);
      },
      20,
      [](pid_t pid, int ready) {
        char c;
        cr_assert_eq(read(ready, &c, 1), 1, "the child's task started");
        kill(pid, SIGINT);
      });
  cr_expect(!r.timed_out, "SIGINT did not end the program within 20 s");
  cr_expect(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGINT, "status %#x", r.status);
}
