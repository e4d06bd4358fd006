// SPDX-License-Identifier: MIT
// A guest that goes while commands wait for user events it never set
// (tests/opencl/abandoned_events.c). The API would wait for them as long
// as the worker lives: a shadow thread blocked in clWaitForEvents or in a
// blocking read never returned, so the guest's teardown never ended (its
// session was never reported, and a shared worker kept its connection and
// staging). The worker now fails a departed guest's unset user events
// (ava_w_at_departure): each session ends and is reported, and the worker
// goes on serving: a later guest's gated commands run as natively.
#include <criterion/criterion.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "opencl_worker.hpp"

namespace {

const std::string kProgram = std::string(OCL_DIR) + "/ocl_abandoned_events";
constexpr int kEndMs = 30000; // far beyond a teardown; a hang fails, bounded

void require_spec() {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
}

// Waits (bounded) until the worker's report shows `sessions` sessions.
remoted::WorkerReport wait_for_sessions(const OpenclWorker &w, size_t sessions) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kEndMs);
  remoted::WorkerReport r = remoted::WorkerReport::read(w.report);
  while (r.sessions.size() < sessions && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    r = remoted::WorkerReport::read(w.report);
  }
  return r;
}

std::vector<std::string> guest_env_of(const OpenclWorker &w) {
  std::vector<std::string> env = ocl::child_env();
  for (const std::string &e : guest_env(w.address))
    env.push_back(e);
  return env;
}

} // namespace

Test(e2e_opencl_abandoned, a_departed_guests_user_events_fail_and_its_session_ends,
     .timeout = 600) {
  require_spec();
  OpenclWorker w("");
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  size_t sessions = 0;

  // Table: how the guest leaves its gated commands behind.
  struct {
    const char *mode;
    bool killed; // blocked in a call, then killed; else it exits by itself
  } cases[] = {{"exit", false}, {"wait", true}, {"read", true}, {"released-exit", false}};
  for (const auto &c : cases) {
    if (c.killed) {
      BackgroundProc guest({kProgram, c.mode}, guest_env_of(w));
      std::string seen;
      cr_assert(guest.wait_for_line("waiting", kEndMs, &seen), "%s: the guest did not block:\n%s",
                c.mode, seen.c_str());
      // The guest's call is in the worker now (a sync call's thread blocks
      // in the driver); its death must end the wait there.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      guest.kill_now(SIGKILL);
      cr_expect_eq(guest.wait_exit(kEndMs), 128 + SIGKILL, "%s", c.mode);
    } else {
      const ProcResult r = w.run({kProgram, c.mode});
      cr_expect_eq(r.exit_code, 0, "%s: exit %d:\n%s", c.mode, r.exit_code, r.err.c_str());
    }
    ++sessions;
    const remoted::WorkerReport report = wait_for_sessions(w, sessions);
    cr_expect_eq(report.sessions.size(), sessions,
                 "%s: the guest's session did not end (its teardown waits for its user "
                 "events):\n%s",
                 c.mode, report.text.c_str());
  }

  // The worker still serves, and gated commands run once their events are set.
  const ProcResult r = w.run({kProgram, "set"});
  cr_expect_eq(r.exit_code, 0, "set: exit %d:\n%s%s", r.exit_code, r.out.c_str(), r.err.c_str());
  cr_expect(r.out.find("set: the gated commands ran") != std::string::npos, "%s", r.out.c_str());
  const std::string why = remoted::not_remoted_reason(w.stop(), "opencl", sessions + 1);
  cr_expect(why.empty(), "%s", why.c_str());
}

// A guest killed while it moves bytes through buffers that live in the shared
// heap: each blocking transfer is a gate (a command the worker holds behind a
// user event while the guest copies), and killed inside one the guest never
// closes it. The gate fails at the guest's departure like its own user
// events, so its session ends, and a later guest is served. The kill lands at
// a moment the test does not choose; several rounds put some of them inside
// a gate (each transfer is a few milliseconds of copying, its gate's open and
// close a few microseconds).
Test(e2e_opencl_abandoned, a_guest_killed_inside_a_heap_gate_leaves_the_worker_serving,
     .timeout = 600) {
  require_spec();
  OpenclWorker w("", "shm");
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  constexpr size_t kRounds = 4;
  for (size_t round = 1; round <= kRounds; ++round) {
    BackgroundProc guest({kProgram, "move"}, guest_env_of(w));
    std::string seen;
    cr_assert(guest.wait_for_line("waiting", kEndMs, &seen), "the guest did not start moving:\n%s",
              seen.c_str());
    // Not a timing the result depends on: only how far into its transfers
    // the guest gets before it dies.
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + 70 * round));
    guest.kill_now(SIGKILL);
    cr_expect_eq(guest.wait_exit(kEndMs), 128 + SIGKILL, "round %zu", round);
    const remoted::WorkerReport report = wait_for_sessions(w, round);
    cr_expect_eq(report.sessions.size(), round,
                 "round %zu: the killed guest's session did not end:\n%s", round,
                 report.text.c_str());
  }
  const ProcResult r = w.run({kProgram, "set"});
  cr_expect_eq(r.exit_code, 0, "set: exit %d:\n%s%s", r.exit_code, r.out.c_str(), r.err.c_str());
  const std::string why = remoted::not_remoted_reason(w.stop(), "opencl", kRounds + 1);
  cr_expect(why.empty(), "%s", why.c_str());
}

// A program that releases the events of queued kernels and then fails the
// user event they wait for: natively PoCL 3.1 aborts (it frees such an event
// inside its own failure cascade). Remoted, the worker keeps those events
// until they end: the program sees its kernels fail as the API says, another
// queue still runs, and the worker serves the next guest (in the shared
// variant, in the same process).
Test(e2e_opencl_abandoned, released_events_behind_a_failed_user_event_leave_the_worker_serving,
     .timeout = 600) {
  require_spec();
  OpenclWorker w("");
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  const ProcResult r = w.run({kProgram, "released"});
  cr_expect_eq(r.exit_code, 0, "exit %d:\n%s%s", r.exit_code, r.out.c_str(), r.err.c_str());
  cr_expect(r.out.find("released: a kernel on another queue ran once: yes") != std::string::npos,
            "%s", r.out.c_str());
  const ProcResult again = w.run({kProgram, "set"});
  cr_expect_eq(again.exit_code, 0, "the next guest: exit %d:\n%s", again.exit_code,
               again.err.c_str());
  const std::string why = remoted::not_remoted_reason(w.stop(), "opencl", 2);
  cr_expect(why.empty(), "%s", why.c_str());
}
