// SPDX-License-Identifier: MIT
// Idle costs nothing: a worker with idle guests (each with several shadow
// threads) and a guest blocked in one long call wake up at most a few times a
// second. Waiting threads block on a wake-up from the other side (the read
// baton, transport/read_baton.hpp; futexes and sockets below it), never on a
// nap. What is counted is context switches of every thread of every process
// involved (/proc/PID/task/TID/status), not time, so a slow machine does not
// make the test fail; a thread that naps every few milliseconds makes
// hundreds of switches a second and does.
#include <criterion/criterion.h>

#include <dirent.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e_env.hpp"
#include "proc.hpp"

namespace {

constexpr int kTimeoutMs = 60000;
// The window over which switches are counted.
constexpr auto kWindow = std::chrono::seconds(2);
// Allowed per process over the window: "a few times a second". A thread that
// naps 1 ms makes ~2000 in the window.
constexpr uint64_t kMaxSwitchesPerProcess = 6;

uint64_t field(const std::string &status, const std::string &name) {
  std::istringstream in(status);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(name + ":"))
      return std::stoull(line.substr(name.size() + 1));
  return 0;
}

// Voluntary and involuntary context switches of every thread of pid.
uint64_t switches(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  uint64_t total = 0;
  std::unique_ptr<DIR, int (*)(DIR *)> d(opendir(dir.c_str()), closedir);
  if (!d)
    return 0;
  while (dirent *e = readdir(d.get())) {
    if (e->d_name[0] == '.')
      continue;
    std::ifstream in(dir + "/" + e->d_name + "/status");
    std::ostringstream s;
    s << in.rdbuf();
    total +=
        field(s.str(), "voluntary_ctxt_switches") + field(s.str(), "nonvoluntary_ctxt_switches");
  }
  return total;
}

struct Counted {
  std::string what;
  pid_t pid;
  uint64_t before = 0;
};

// Switches of each process over the window.
std::vector<uint64_t> count_over_window(std::vector<Counted> &procs) {
  for (Counted &p : procs) {
    p.before = switches(p.pid);
    // Every process here has started and talked: a zero means /proc was not read.
    cr_assert_gt(p.before, 0, "no context switches read for %s (pid %d)", p.what.c_str(), p.pid);
  }
  std::this_thread::sleep_for(kWindow);
  std::vector<uint64_t> counts;
  for (const Counted &p : procs)
    counts.push_back(switches(p.pid) - p.before);
  return counts;
}

// Fails for any process above the bound.
void expect_quiet(std::vector<Counted> procs) {
  const std::vector<uint64_t> counts = count_over_window(procs);
  for (size_t i = 0; i < procs.size(); ++i) {
    const Counted &p = procs[i];
    const uint64_t n = counts[i];
    cr_log_info("%s (pid %d): %llu context switches in %lld s", p.what.c_str(), p.pid,
                static_cast<unsigned long long>(n), static_cast<long long>(kWindow.count()));
    cr_expect_leq(n, kMaxSwitchesPerProcess,
                  "%s (pid %d) woke %llu times in %lld s while idle (at most %llu allowed)",
                  p.what.c_str(), p.pid, static_cast<unsigned long long>(n),
                  static_cast<long long>(kWindow.count()),
                  static_cast<unsigned long long>(kMaxSwitchesPerProcess));
  }
}

std::vector<std::string> argv(const std::string &address) {
  std::vector<std::string> a = worker_argv(address);
  a.insert(a.end(), {"--ready-fd", "1"});
  return a;
}

struct Worker {
  std::string dir = make_temp_dir();
  std::string address = "unix:" + dir + "/worker.sock";
  BackgroundProc proc{argv(address), clean_env()};
  bool ready = proc.wait_for_line("worker.sock", 20000);
  ~Worker() {
    proc.kill_now(SIGTERM);
    proc.wait_exit(10000);
    const std::string rm = "rm -rf " + dir;
    [[maybe_unused]] int rc = system(rm.c_str());
  }
  // The worker process and its per-guest workers (none in the shared mode).
  std::vector<Counted> processes() const {
    std::vector<Counted> all = {{"worker", proc.pid()}};
    for (pid_t child : child_pids(proc.pid()))
      all.push_back({"per-guest worker", child});
    return all;
  }
};

} // namespace

Test(idle, a_worker_with_idle_guests_does_not_wake_up, .timeout = 120) {
  Worker worker;
  cr_assert(worker.ready, "worker did not start");
  constexpr int kGuests = 6;
  constexpr int kThreads = 8;
  std::vector<std::unique_ptr<BackgroundProc>> guests;
  for (int i = 0; i < kGuests; ++i)
    guests.push_back(std::make_unique<BackgroundProc>(
        std::vector<std::string>{DEMO_PROBE, "idle", std::to_string(kThreads), "20000"},
        guest_env(worker.address)));
  for (auto &g : guests) {
    std::string seen;
    cr_assert(g->wait_for_line("ready", kTimeoutMs, &seen), "guest did not start: %s",
              seen.c_str());
    cr_assert(seen.find("threads, ok") != std::string::npos, "guest calls failed: %s",
              seen.c_str());
  }
  std::vector<Counted> procs = worker.processes(); // now with every per-guest worker
  for (auto &g : guests)
    procs.push_back({"idle guest", g->pid()});
  // Let the baton's grace periods and start-up wake-ups pass first.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  expect_quiet(procs);
  for (auto &g : guests)
    g->kill_now(SIGTERM);
}

Test(idle, a_guest_blocked_in_a_long_call_does_not_wake_up, .timeout = 120) {
  Worker worker;
  cr_assert(worker.ready, "worker did not start");
  BackgroundProc guest({DEMO_PROBE, "sleep", "5000"}, guest_env(worker.address));
  std::string seen;
  cr_assert(guest.wait_for_line("ready", kTimeoutMs, &seen), "guest did not start: %s",
            seen.c_str());
  std::vector<Counted> procs = worker.processes();
  procs.push_back({"guest in a 5 s call", guest.pid()});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  expect_quiet(procs);
  cr_expect_eq(guest.wait_exit(kTimeoutMs), 0);
  guest.wait_for_line("after sleep: ", 5000, &seen);
  cr_expect(seen.find("sleep: 0") != std::string::npos, "the long call failed: %s", seen.c_str());
}

// The same over shared memory, under `ava run` (which starts its own worker):
// sleepers on the rings' futexes need no timeout to notice a dead peer.
Test(idle, a_guest_on_shm_blocked_in_a_long_call_does_not_wake_up, .timeout = 120) {
  BackgroundProc run({AVA_BIN, "run", "--channel", "shm", "--", DEMO_PROBE, "sleep", "5000"},
                     clean_env());
  std::string seen;
  cr_assert(run.wait_for_line("ready", kTimeoutMs, &seen), "guest did not start: %s", seen.c_str());
  std::vector<Counted> procs = {{"ava run", run.pid()}};
  for (pid_t child : child_pids(run.pid())) {
    procs.push_back({"child of ava run", child});
    for (pid_t grandchild : child_pids(child))
      procs.push_back({"grandchild of ava run", grandchild});
  }
  cr_assert_geq(procs.size(), 3u, "expected ava run, its worker and the program");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  expect_quiet(procs);
  cr_expect_eq(run.wait_exit(kTimeoutMs), 0);
}

// The counter itself: a process that naps every 10 ms is seen waking.
Test(idle, a_napping_process_is_counted, .timeout = 60) {
  BackgroundProc napper({"/bin/sh", "-c", "echo ready; while :; do sleep 0.01; done"}, {});
  cr_assert(napper.wait_for_line("ready", 10000));
  std::vector<Counted> procs = {{"napping shell", napper.pid()}};
  const uint64_t n = count_over_window(procs)[0];
  cr_log_info("napping shell: %llu context switches", static_cast<unsigned long long>(n));
  cr_expect_gt(n, 20 * kMaxSwitchesPerProcess, "a napping shell made only %llu switches",
               static_cast<unsigned long long>(n));
  napper.kill_now(SIGKILL);
}
