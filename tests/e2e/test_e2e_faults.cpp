// SPDX-License-Identifier: MIT
// Faults: a worker that dies mid-call, a guest that dies mid-call, a call
// that crashes the worker, and garbage on the worker's socket.
#include <criterion/criterion.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "e2e_env.hpp"
#include "proc.hpp"
#include "remoted.hpp"

namespace {

struct Worker {
  explicit Worker(const char *scheme = "unix") : scheme_(scheme) {}
  std::string scheme_;
  std::string dir = make_temp_dir();
  std::string address = scheme_ + ":" + dir + "/worker.sock";
  std::string report = dir + "/sessions.report";
  // libdemo notes each sleep that begins here (specs/demo/lib/demo.c).
  std::string sleeps = dir + "/sleeps";
  BackgroundProc proc{with_report(worker_argv(address), report), with_sleep_log(sleeps)};
  static std::vector<std::string> with_sleep_log(const std::string &path) {
    std::vector<std::string> env = clean_env();
    env.push_back("DEMO_SLEEP_LOG=" + path);
    return env;
  }
  // The process running a demo_sleep_ms(ms) call (or that ran one), or -1.
  pid_t sleeping_pid(uint32_t ms) const {
    const std::string needle = "sleep " + std::to_string(ms) + " pid ";
    std::ifstream in(sleeps);
    for (std::string line; std::getline(in, line);)
      if (line.starts_with(needle))
        return static_cast<pid_t>(std::strtol(line.c_str() + needle.size(), nullptr, 10));
    return -1;
  }
  bool sleep_began(uint32_t ms) const { return sleeping_pid(ms) > 0; }
  static std::vector<std::string> with_report(std::vector<std::string> argv,
                                              const std::string &report) {
    argv.push_back("--report");
    argv.push_back(report);
    return argv;
  }
  // Whether the session of guest pid has ended: its line is written at the
  // end of its teardown, after its last call returned and its objects went.
  // The process serving the one guest connected now: the worker itself
  // when shared, else the supervisor's child for that guest.
  pid_t serving_pid() const {
    if (shared_worker_mode())
      return proc.pid();
    const std::vector<pid_t> children = child_pids(proc.pid());
    return children.size() == 1 ? children[0] : -1;
  }
  bool session_ended(pid_t pid) const {
    const std::string needle = " pid=" + std::to_string(pid) + " ";
    for (const std::string &line : remoted::split_lines(remoted::WorkerReport::read(report).text))
      if (line.find(needle) != std::string::npos)
        return true;
    return false;
  }
  ~Worker() {
    proc.kill_now(SIGTERM);
    proc.wait_exit(5000);
    const std::string rm = "rm -rf " + dir;
    [[maybe_unused]] int rc = system(rm.c_str());
  }
};

int live_objects(const std::string &address) {
  const ProcResult r = run_proc({DEMO_PROBE, "live"}, guest_env(address), 30000);
  unsigned long long n = 0;
  if (r.exit_code != 0 || sscanf(r.out.c_str(), "live: %llu", &n) != 1)
    return -1;
  return static_cast<int>(n);
}

} // namespace

static void worker_killed_mid_call(const char *scheme) {
  Worker w(scheme);
  BackgroundProc guest({DEMO_PROBE, "sleep", "20000"}, guest_env(w.address));
  std::string seen;
  cr_assert(guest.wait_for_line("ready", 20000, &seen), "guest never got ready:\n%s", seen.c_str());
  const pid_t serving = w.serving_pid();
  cr_assert_gt(serving, 0, "no single process serves the guest");
  cr_assert_eq(kill(serving, SIGKILL), 0);
  // The 20 s call must fail as soon as the connection drops, not when it would have ended.
  const int code = guest.wait_exit(5000);
  cr_assert_neq(code, -1, "the guest still waits on a dead worker");
  guest.wait_for_line("after sleep", 1000, &seen);
  cr_expect_eq(code, 0, "guest exit %d:\n%s", code, seen.c_str());
  cr_expect(seen.find("sleep: -5") != std::string::npos, "%s", seen.c_str());
  cr_expect(seen.find("after sleep: -1") != std::string::npos, "%s", seen.c_str());
  cr_expect(seen.find("ava: lost connection to the demo worker") != std::string::npos, "%s",
            seen.c_str());
}

Test(e2e_faults, worker_killed_mid_call_fails_the_call_quickly, .timeout = 60) {
  worker_killed_mid_call("unix");
}

Test(e2e_faults, worker_killed_mid_call_over_shm_fails_the_call_quickly, .timeout = 60) {
  worker_killed_mid_call("shm");
}

static void guest_killed_mid_call(const char *scheme) {
  Worker w(scheme);
  cr_assert_eq(live_objects(w.address), 0);
  BackgroundProc guest({DEMO_PROBE, "sleep", "3000"}, guest_env(w.address));
  std::string seen;
  cr_assert(guest.wait_for_line("ready", 20000, &seen), "%s", seen.c_str());
  cr_expect(seen.find("live: 3") != std::string::npos, "%s", seen.c_str());
  // "ready" comes before the call is sent: kill the guest only once the
  // worker runs its sleep, or there is no call in flight to outlive it.
  for (int i = 0; i < 200 && !w.sleep_began(3000); ++i)
    usleep(10000);
  cr_assert(w.sleep_began(3000), "the worker never began the guest's 3 s sleep");
  guest.kill_now(SIGKILL);
  guest.wait_exit(5000);
  // Other guests are served while the dead guest's call is still sleeping:
  // its session has not ended after the other guest got its answer. In one
  // shared process the other guest sees its three objects; with a process
  // per guest it sees none (its own libdemo has none), and the dead guest's
  // objects go with its worker's process.
  const pid_t dead = guest.pid();
  // The process that runs its sleep: with a process per guest, the worker
  // of an earlier guest (the probe above) may still be exiting beside it
  // (slowly under ASan's leak check at exit).
  const pid_t dead_worker = w.sleeping_pid(3000);
  cr_assert_gt(dead_worker, 0, "no process runs the dead guest's call");
  cr_expect(shared_worker_mode() ? dead_worker == w.proc.pid() : dead_worker != w.proc.pid(),
            "the dead guest's call runs in %d, the worker is %d", (int)dead_worker,
            (int)w.proc.pid());
  const int during = live_objects(w.address);
  cr_expect(!w.session_ended(dead),
            "the dead guest's 3 s call had ended before another guest was served");
  const int expected = shared_worker_mode() ? 3 : 0;
  cr_expect_eq(during, expected,
               "live objects seen by another guest while the dead guest's call "
               "still runs: %d, expected %d",
               during, expected);
  if (!shared_worker_mode()) {
    for (int i = 0; i < 100 && !w.session_ended(dead); ++i)
      usleep(100000);
    cr_expect(w.session_ended(dead), "the dead guest's session never ended");
    for (int i = 0; i < 50 && kill(dead_worker, 0) == 0; ++i)
      usleep(100000);
    cr_expect_neq(kill(dead_worker, 0), 0, "the dead guest's worker process %d is still there",
                  dead_worker);
  }
  int live = -1;
  for (int i = 0; i < 100 && live != 0; ++i) {
    live = live_objects(w.address);
    if (live != 0)
      usleep(100000);
  }
  cr_expect_eq(live, 0, "the dead guest's objects were not freed");
}

Test(e2e_faults, guest_killed_mid_call_leaks_nothing, .timeout = 90) {
  guest_killed_mid_call("unix");
}

Test(e2e_faults, guest_killed_mid_call_over_shm_leaks_nothing, .timeout = 90) {
  guest_killed_mid_call("shm");
}

Test(e2e_faults, call_that_crashes_the_worker_fails_cleanly, .timeout = 60) {
  const ProcResult r = run_proc({AVA_BIN, "run", "--", DEMO_CRASH_APP}, clean_env(), 30000);
  // demo_crash_app exits 3 when demo_crash() returned instead of killing it.
  cr_expect_eq(r.exit_code, 3, "exit %d\nstdout:\n%s\nstderr:\n%s", r.exit_code, r.out.c_str(),
               r.err.c_str());
  cr_expect(r.err.find("ava: lost connection to the demo worker") != std::string::npos, "%s",
            r.err.c_str());
}

Test(e2e_faults, garbage_on_the_socket_does_not_hurt_other_guests, .timeout = 60) {
  Worker w;
  cr_assert_eq(live_objects(w.address), 0);
  const std::string path = w.address.substr(5);
  // Plain text, a header cut short, and a header announcing an absurd length.
  static const char kText[] = "hello, worker";
  static const char kShort[] = "AVA1\x01\x00\x03\x00";
  static const char kHuge[] = "AVA1\x01\x00\x03\x00\x01\x00\x00\x00\x01\x00\x00\x00"
                              "\xff\xff\xff\xff\xff\xff\xff\xff";
  const std::string garbage[] = {std::string(kText, sizeof kText - 1),
                                 std::string(kShort, sizeof kShort - 1),
                                 std::string(kHuge, sizeof kHuge - 1) + std::string(40, '\0')};
  for (const std::string &g : garbage) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, path.c_str(), sizeof(sa.sun_path) - 1);
    cr_assert_eq(connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
    [[maybe_unused]] ssize_t n = write(fd, g.data(), g.size());
    close(fd);
  }
  cr_expect_eq(live_objects(w.address), 0, "the worker stopped serving after garbage");
  cr_expect_eq(w.proc.wait_exit(0), -1, "the worker exited");
}
