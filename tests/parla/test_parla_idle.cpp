// SPDX-License-Identifier: MIT
// An idle runtime costs no CPU: its workers sleep (after a spin of at most
// PARLA_SPIN_US) while the program waits, and there is no scheduler
// thread. Measured from the process's CPU time (getrusage), against a
// limit of 1 % of a core.
#include <sys/resource.h>

#include <thread>

#include "parla_test_support.hpp"

using namespace parla;

namespace {
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
} // namespace

Test(idle, a_runtime_waiting_for_an_event_uses_under_one_percent_of_a_core) {
  Runtime rt(parla_test::options());
  TaskSpace T("T"), U("U");
  // Warm up: the workers have run tasks and gone idle.
  for (int i = 0; i < 100; ++i)
    rt.spawn(U[i], [] {});
  rt.wait(U);
  // T[0] waits 2 s for an event from outside (a sleep here: its worker is
  // blocked, not spinning); the other worker has nothing to do and the
  // main thread waits in wait().
  rt.spawn(T[0], [] { std::this_thread::sleep_for(std::chrono::seconds(2)); });
  const double before = cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  rt.wait(T);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double used = cpu_seconds() - before;
  cr_expect_geq(wall, 1.9);
  cr_expect_lt(used, 0.01 * wall, "the idle runtime used %.4f s of CPU in %.2f s", used, wall);
}
