// SPDX-License-Identifier: MIT
// Guests of one `ava worker` are isolated from each other: each connection
// is served by a worker process of its own (the listening supervisor loads no
// plugin or driver), confined with no_new_privs and, from the host
// configuration, its own user and memory cgroup; killing one guest's worker
// leaves the others untouched. `--shared` keeps every guest in one process.
// The serve-one mode takes a connection accepted by someone else (systemd
// Accept=yes) on a descriptor.
#include <criterion/criterion.h>

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "demo_worker.hpp"
#include "e2e_env.hpp"
#include "proc.hpp"
#include "remoted.hpp"

namespace {

constexpr int kTimeoutMs = 60000;

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A "Name:\tvalue" line of /proc/PID/status, or "".
std::string status_field(pid_t pid, const std::string &name) {
  std::istringstream in(read_text("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(name + ":")) {
      std::string value = line.substr(name.size() + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      return value;
    }
  return {};
}

// A guest holding its connection (a sleeping call) until it is done.
struct Sleeper {
  BackgroundProc proc;
  explicit Sleeper(const std::string &address, int ms = 3000)
      : proc({DEMO_PROBE, "sleep", std::to_string(ms)}, guest_env(address)) {}
  bool ready() { return proc.wait_for_line("ready", 20000); }
  std::string finish() {
    proc.wait_exit(kTimeoutMs);
    std::string out;
    proc.wait_for_line("\x01(end)", 5000, &out);
    return out;
  }
};

const char *const kPluginLibraries[] = {"libava_worker_", "libdemo.so", "libOpenCL", "libpocl",
                                        "libcuda"};

} // namespace

Test(e2e_isolation, each_guest_gets_a_confined_worker_process_of_its_own, .timeout = 120) {
  Worker w;
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  Sleeper a(w.address), b(w.address);
  cr_assert(a.ready() && b.ready(), "the guests did not get ready");
  const std::vector<pid_t> workers = child_pids(w.proc.pid());
  cr_expect_eq(workers.size(), 2u, "2 guests, %zu worker processes", workers.size());
  for (pid_t p : workers)
    cr_expect_eq(status_field(p, "NoNewPrivs"), "1", "worker %d may gain privileges", p);
  // The supervisor itself never loads a plugin, a driver or an API library.
  const std::string maps = read_text("/proc/" + std::to_string(w.proc.pid()) + "/maps");
  for (const char *lib : kPluginLibraries)
    cr_expect(maps.find(lib) == std::string::npos, "the supervisor maps %s", lib);
  const std::string out_a = a.finish(), out_b = b.finish();
  cr_expect(out_a.find("sleep: 0") != std::string::npos, "%s", out_a.c_str());
  cr_expect(out_b.find("sleep: 0") != std::string::npos, "%s", out_b.c_str());
  const remoted::WorkerReport r = w.stop();
  std::set<uint64_t> serving;
  for (const auto &s : r.sessions)
    serving.insert(s.worker_pid);
  cr_expect(r.sessions.size() == 2 && serving.size() == 2 &&
                !serving.count(static_cast<uint64_t>(w.proc.pid())),
            "expected 2 sessions in 2 worker processes other than the supervisor:\n%s",
            r.text.c_str());
}

Test(e2e_isolation, killing_one_guests_worker_leaves_the_others_untouched, .timeout = 120) {
  Worker w;
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  Sleeper victim(w.address, 20000);
  cr_assert(victim.ready());
  const std::vector<pid_t> first = child_pids(w.proc.pid());
  cr_assert_eq(first.size(), 1u);
  Sleeper other(w.address, 3000);
  cr_assert(other.ready());
  cr_assert_eq(kill(first[0], SIGKILL), 0);
  const std::string victim_out = victim.finish();
  cr_expect(victim_out.find("sleep: -5") != std::string::npos &&
                victim_out.find("ava: lost connection to the demo worker") != std::string::npos,
            "the guest whose worker died:\n%s", victim_out.c_str());
  const std::string other_out = other.finish();
  cr_expect(other_out.find("sleep: 0\n") != std::string::npos &&
                other_out.find("after sleep: ") != std::string::npos &&
                other_out.find("ava:") == std::string::npos,
            "the other guest was disturbed:\n%s", other_out.c_str());
  // The supervisor goes on taking guests.
  const ProcResult next = run_proc({DEMO_APP}, guest_env(w.address), kTimeoutMs);
  const ProcResult native = run_proc({DEMO_APP}, clean_env(), kTimeoutMs);
  cr_expect(next.exit_code == 0 && next.out == native.out, "a later guest (exit %d):\n%s",
            next.exit_code, next.err.c_str());
  const std::string why = remoted::not_remoted_reason(w.stop(), "demo", 2);
  cr_expect(why.empty(), "%s", why.c_str());
}

Test(e2e_isolation, shared_mode_serves_every_guest_in_one_process, .timeout = 120) {
  Worker w({"--shared"});
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  Sleeper a(w.address), b(w.address);
  cr_assert(a.ready() && b.ready());
  cr_expect(child_pids(w.proc.pid()).empty(), "--shared started worker processes");
  a.finish();
  b.finish();
  const remoted::WorkerReport r = w.stop();
  cr_expect_eq(r.sessions.size(), 2u, "%s", r.text.c_str());
  for (const auto &s : r.sessions)
    cr_expect_eq(s.worker_pid, static_cast<uint64_t>(w.proc.pid()), "%s", r.text.c_str());
}

// As systemd runs a service with Accept=yes: the connection on fd 0.
Test(e2e_isolation, serve_fd_takes_a_connection_accepted_elsewhere, .timeout = 120) {
  const std::string dir = make_temp_dir();
  const std::string path = dir + "/activated.sock";
  const std::string report = dir + "/sessions.report";
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
  cr_assert_eq(bind(listener, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
  cr_assert_eq(listen(listener, 4), 0);
  BackgroundProc guest({DEMO_APP}, guest_env("unix:" + path));
  const int conn = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  cr_assert_geq(conn, 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, conn, 0);
  const std::string listen_arg = "unix:" + path;
  std::vector<std::string> args = {AVA_BIN,    "worker", "--serve-fd", "0",        "--listen",
                                   listen_arg, "--spec", "demo",       "--report", report};
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t worker = -1;
  cr_assert_eq(posix_spawn(&worker, AVA_BIN, &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(conn);
  close(listener);
  cr_expect_eq(guest.wait_exit(kTimeoutMs), 0);
  std::string out;
  guest.wait_for_line("\x01(end)", 5000, &out);
  const ProcResult native = run_proc({DEMO_APP}, clean_env(), kTimeoutMs);
  cr_expect(out == native.out, "%s",
            remoted::line_diff(native.out, out, "native", "activated").c_str());
  int st = 0;
  cr_expect_eq(waitpid(worker, &st, 0), worker);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the serve-one worker ended with %d", st);
  const std::string why =
      remoted::not_remoted_reason(remoted::WorkerReport::read(report), "demo", 1);
  cr_expect(why.empty(), "%s", why.c_str());
  const std::string rm = "rm -rf " + dir;
  [[maybe_unused]] int rc = system(rm.c_str());
}

Test(e2e_isolation, host_configuration_sets_the_workers_user, .timeout = 120) {
  if (geteuid() != 0)
    cr_skip_test("needs root to start workers as another user");
  Worker w({}, "[guest]\nuser = 65534\ngroup = 65534\n");
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  Sleeper a(w.address);
  cr_assert(a.ready());
  const std::vector<pid_t> workers = child_pids(w.proc.pid());
  cr_assert_eq(workers.size(), 1u);
  const std::string uid = status_field(workers[0], "Uid"), gid = status_field(workers[0], "Gid");
  cr_expect(uid.starts_with("65534\t65534\t65534\t65534"), "worker Uid: %s", uid.c_str());
  cr_expect(gid.starts_with("65534\t65534\t65534\t65534"), "worker Gid: %s", gid.c_str());
  cr_expect_eq(status_field(workers[0], "Groups"), "", "supplementary groups kept");
  const std::string out = a.finish();
  cr_expect(out.find("sleep: 0") != std::string::npos, "%s", out.c_str());
  const std::string why = remoted::not_remoted_reason(w.stop(), "demo", 1);
  cr_expect(why.empty(), "%s", why.c_str());
}

namespace {

// A memory cgroup directory this test may make children in: cgroup v2 with
// the memory controller, or the v1 memory hierarchy.
std::string memory_cgroup_base() {
  for (const char *base : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    const std::string controllers = read_text(std::string(base) + "/cgroup.controllers");
    if (controllers.find("memory") != std::string::npos &&
        access((std::string(base) + "/cgroup.procs").c_str(), W_OK) == 0)
      return base;
  }
  if (access("/sys/fs/cgroup/memory/memory.limit_in_bytes", F_OK) == 0 &&
      access("/sys/fs/cgroup/memory/cgroup.procs", W_OK) == 0)
    return "/sys/fs/cgroup/memory";
  return {};
}

} // namespace

Test(e2e_isolation, a_guest_over_its_memory_limit_ends_alone, .timeout = 180) {
  const std::string base = memory_cgroup_base();
  if (base.empty())
    cr_skip_test("no writable memory cgroup (v2 with the memory controller, or v1) here");
  const std::string cgroup = base + "/ava-test-" + std::to_string(getpid());
  cr_assert_eq(mkdir(cgroup.c_str(), 0755), 0, "mkdir %s: %s", cgroup.c_str(), strerror(errno));
  {
    // 128 MiB per guest worker (room for a sanitizer build); the big guest moves 300 MiB buffers.
    Worker w({}, "[guest]\ncgroup = \"" + cgroup + "\"\nmemory_max = 134217728\n");
    cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
    Sleeper small(w.address, 3000);
    cr_assert(small.ready());
    const std::vector<pid_t> workers = child_pids(w.proc.pid());
    cr_assert_eq(workers.size(), 1u);
    const std::string membership = read_text("/proc/" + std::to_string(workers[0]) + "/cgroup");
    cr_expect(membership.find("/ava-test-" + std::to_string(getpid()) + "/ava-guest-") !=
                  std::string::npos,
              "the worker is not in its own cgroup:\n%s", membership.c_str());
    const ProcResult big = run_proc({DEMO_PROBE, "big", "300"}, guest_env(w.address), kTimeoutMs);
    cr_expect(big.err.find("ava: lost connection to the demo worker") != std::string::npos,
              "the guest over its limit (exit %d):\n%s%s", big.exit_code, big.out.c_str(),
              big.err.c_str());
    const std::string out = small.finish();
    cr_expect(out.find("sleep: 0\n") != std::string::npos && out.find("ava:") == std::string::npos,
              "the guest under its limit was disturbed:\n%s", out.c_str());
    w.stop();
  }
  // Each guest's cgroup went with its worker.
  cr_expect_eq(rmdir(cgroup.c_str()), 0, "%s is not empty: %s", cgroup.c_str(), strerror(errno));
}

// The host's limits hold for each guest of `ava worker` (here its device
// memory: demo objects are charged to "device_memory").
Test(e2e_isolation, host_limits_hold_for_each_guest, .timeout = 120) {
  Worker w({}, "[guest]\ndevice_memory = 8388608\n");
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  const ProcResult native = run_proc({DEMO_PROBE, "big", "10"}, clean_env(), kTimeoutMs);
  cr_assert_eq(native.exit_code, 0, "native big 10:\n%s", native.err.c_str());
  for (int guest = 0; guest < 2; ++guest) {
    const ProcResult r = run_proc({DEMO_PROBE, "big", "10"}, guest_env(w.address), kTimeoutMs);
    cr_expect(r.out.find("create: -") != std::string::npos && r.exit_code != 0,
              "guest %d made a 10 MiB object under an 8 MiB quota (exit %d):\n%s", guest,
              r.exit_code, r.out.c_str());
  }
  // Under the quota the same program works as natively.
  const ProcResult small = run_proc({DEMO_PROBE, "big", "4"}, guest_env(w.address), kTimeoutMs);
  const ProcResult small_native = run_proc({DEMO_PROBE, "big", "4"}, clean_env(), kTimeoutMs);
  cr_expect(small.exit_code == 0 && small.out == small_native.out, "big 4 under the quota:\n%s",
            small.err.c_str());
}

// Budgets from the host configuration (guest.connections,
// guest.connections_per_peer, guest.threads): guests cannot open connections
// without end (all together, or one peer), and a guest cannot make the worker
// start threads without end; what is over the budget is refused, the rest
// goes on.
struct ConnectionBudget {
  const char *host_toml; // a budget of 2
  const char *log_says;  // the worker's reason for the third
};

static void expect_third_connection_refused(const ConnectionBudget &c) {
  Worker w({}, c.host_toml);
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  Sleeper a(w.address, 4000), b(w.address, 4000);
  cr_assert(a.ready() && b.ready(), "the first two guests did not start");
  const ProcResult third = run_proc({DEMO_PROBE, "live"}, guest_env(w.address), kTimeoutMs);
  cr_expect(third.exit_code != 0 || third.out.find("live: 0") == std::string::npos ||
                third.err.find("ava:") != std::string::npos,
            "a third connection was served under %s:\n%s%s", c.host_toml, third.out.c_str(),
            third.err.c_str());
  std::string log;
  cr_expect(w.proc.wait_for_line(c.log_says, 10000, &log),
            "the worker did not say why it refused:\n%s", log.c_str());
  cr_expect(log.find("): refused: ") != std::string::npos, "%s", log.c_str());
  // The two served guests are untouched, and once they are done a new one is served.
  cr_expect(a.finish().find("after sleep: ") != std::string::npos);
  cr_expect(b.finish().find("after sleep: ") != std::string::npos);
  const ProcResult later = run_proc({DEMO_PROBE, "live"}, guest_env(w.address), kTimeoutMs);
  cr_expect_eq(later.exit_code, 0, "after the others left:\n%s", later.err.c_str());
  cr_expect(later.out.find("live: 0") != std::string::npos, "%s", later.out.c_str());
}

Test(e2e_isolation, a_peer_over_its_connection_budget_is_refused, .timeout = 120) {
  expect_third_connection_refused(
      {"[guest]\nconnections_per_peer = 2\n", "has 2 connections (guest.connections_per_peer)"});
}

Test(e2e_isolation, a_connection_over_the_workers_budget_is_refused, .timeout = 120) {
  expect_third_connection_refused(
      {"[guest]\nconnections = 2\n", "2 connections are served (guest.connections)"});
}

// Nor keep its buffers without end: libdemo holds on to each label's pointer,
// so the worker keeps a copy while the object lives. Past [guest] kept_bytes
// the call that would keep more fails (out of resources) and the worker goes
// on; what the guest released gives the room back.
Test(e2e_isolation, a_guest_keeps_at_most_its_budget_of_bytes, .timeout = 120) {
  Worker w({}, "[guest]\nkept_bytes = 65536\n");
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  // 16 labels of 4096 bytes and their terminating zeros pass 65536 bytes; a
  // call the worker refuses gets the demo spec's error value (DEMO_ERR_TRANSPORT).
  const ProcResult over =
      run_proc({DEMO_PROBE, "labels", "100", "4096"}, guest_env(w.address), kTimeoutMs);
  cr_expect(over.out.find("labels: 15 of 100 set, then -5\n") != std::string::npos,
            "labels kept past a budget of 65536 bytes:\n%s%s", over.out.c_str(), over.err.c_str());
  cr_expect(over.out.find("label again: 0\n") != std::string::npos,
            "no room after the object went:\n%s", over.out.c_str());
  std::string log;
  cr_expect(w.proc.wait_for_line("budget of kept bytes", 10000, &log), "%s", log.c_str());
  // Natively, and under the default budget, every label takes.
  const ProcResult native =
      run_proc({DEMO_PROBE, "labels", "100", "4096"}, clean_env(), kTimeoutMs);
  cr_expect(native.out.find("labels: 100 of 100 set") != std::string::npos, "%s",
            native.out.c_str());
  Worker roomy;
  cr_assert(roomy.ready, "the worker did not start:\n%s", roomy.output.c_str());
  const ProcResult within =
      run_proc({DEMO_PROBE, "labels", "100", "4096"}, guest_env(roomy.address), kTimeoutMs);
  cr_expect(within.out.find("labels: 100 of 100 set") != std::string::npos, "%s",
            within.out.c_str());
}

// Nor make its worker keep its largest message for good: the worker
// thread's receive buffer grows for a large call and shrinks back once the
// connection has been idle for a second.
Test(e2e_isolation_rss, a_workers_buffers_shrink_after_a_large_call, .timeout = 120) {
#if defined(__SANITIZE_ADDRESS__)
  cr_skip_test("under ASan freed memory stays in its quarantine: the worker's RSS tells nothing "
               "here (the normal build runs this test)");
#endif
  Worker w;
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  BackgroundProc guest({DEMO_PROBE, "big", "192", "8000"}, guest_env(w.address));
  std::string seen;
  cr_assert(guest.wait_for_line("holding", 60000, &seen), "the large round trip:\n%s",
            seen.c_str());
  cr_expect(seen.find("round trip of 192 MiB: identical") != std::string::npos, "%s", seen.c_str());
  const std::vector<pid_t> workers = child_pids(w.proc.pid());
  cr_assert_eq(workers.size(), 1u);
  // Bounded: the buffer goes a second after the call; give it five.
  long rss_kib = 0;
  for (int i = 0; i < 50; ++i) {
    rss_kib = std::atol(status_field(workers[0], "VmRSS").c_str());
    if (rss_kib < 64 * 1024)
      break;
    usleep(100 * 1000);
  }
  cr_expect_lt(rss_kib, 64 * 1024, "the idle worker still holds %ld KiB after a 192 MiB call",
               rss_kib);
  cr_expect(guest.wait_for_line("version: ", 30000, &seen), "%s", seen.c_str());
}

Test(e2e_isolation, a_guest_over_its_thread_budget_gets_errors_not_threads, .timeout = 120) {
  Worker w({}, "[guest]\nthreads = 4\n");
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  const ProcResult within =
      run_proc({DEMO_PROBE, "idle", "4", "0"}, guest_env(w.address), kTimeoutMs);
  cr_expect(within.out.find("4 threads, ok") != std::string::npos, "4 threads:\n%s%s",
            within.out.c_str(), within.err.c_str());
  const ProcResult over =
      run_proc({DEMO_PROBE, "idle", "8", "0"}, guest_env(w.address), kTimeoutMs);
  cr_expect(over.out.find("8 threads, failed") != std::string::npos,
            "8 guest threads were all served under a budget of 4:\n%s%s", over.out.c_str(),
            over.err.c_str());
  std::string log;
  cr_expect(w.proc.wait_for_line("too many guest threads", 10000, &log), "%s", log.c_str());
  // The guest's own connection still works for its threads within the budget.
  cr_expect(over.out.find("version: ") != std::string::npos, "%s", over.out.c_str());
}
