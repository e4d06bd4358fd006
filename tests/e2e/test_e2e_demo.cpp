// SPDX-License-Identifier: MIT
// Unmodified libdemo programs under `ava run`: same output as natively over
// every channel, exit statuses, errors the remoting adds on purpose.
#include <criterion/criterion.h>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <iterator>
#include <string>
#include <vector>

#include "e2e_env.hpp"
#include "proc.hpp"
#include "remoted.hpp"

namespace {

const char *const kChannels[] = {"unix", "tcp", "shm"};
constexpr int kTimeoutMs = 120000;

remoted::Comparison demo_comparison() {
  remoted::Comparison cmp;
  cmp.spec = "demo";
  cmp.channels.assign(std::begin(kChannels), std::end(kChannels));
  cmp.native_env = clean_env();
  cmp.remoted_env = clean_env();
  cmp.timeout_ms = kTimeoutMs;
  return cmp;
}

ProcResult native(const std::vector<std::string> &argv) {
  return run_proc(argv, clean_env(), kTimeoutMs);
}

// A run whose output is not the native one on purpose: it must still have
// been served by the demo worker.
ProcResult remoted_demo(const char *channel, const std::vector<std::string> &argv) {
  const remoted::RemotedRun r = remoted::run_remoted(AVA_BIN, channel, argv, demo_comparison());
  const std::string why = remoted::not_remoted_reason(r.report, "demo");
  cr_expect(why.empty(), "[%s %s] %s", channel, argv.back().c_str(), why.c_str());
  return r.proc;
}

ProcResult ava_run(const char *channel, const std::vector<std::string> &argv) {
  std::vector<std::string> full = {AVA_BIN, "run", "--channel", channel, "--"};
  full.insert(full.end(), argv.begin(), argv.end());
  return run_proc(full, clean_env(), kTimeoutMs);
}

void expect_same_as_native(const std::vector<std::string> &argv) {
  remoted::expect_same_as_native(AVA_BIN, argv, demo_comparison());
}

} // namespace

Test(e2e_demo, demo_app_output_matches_native, .timeout = 300) {
  expect_same_as_native({DEMO_APP});
}

// The check the comparisons rely on: with the guest library directory
// pointing elsewhere the program loads the real libdemo and prints the native
// output, and only the worker's report tells that nothing was remoted.
Test(e2e_demo, a_program_that_loaded_the_real_library_is_not_remoted, .timeout = 120) {
  const std::string empty = make_temp_dir();
  remoted::Comparison cmp = demo_comparison();
  cmp.remoted_env.push_back("AVA_GUEST_LIB_DIR=" + empty);
  const ProcResult n = native({DEMO_APP});
  cr_assert_eq(n.exit_code, 0, "native demo_app failed:\n%s", n.err.c_str());
  for (const std::string &ch : cmp.channels) {
    const remoted::RemotedRun r = remoted::run_remoted(AVA_BIN, ch, {DEMO_APP}, cmp);
    cr_expect(r.proc.exit_code == 0 && r.proc.out == n.out,
              "[%s] with the real library the output should be the native one:\n%s%s", ch.c_str(),
              r.proc.out.c_str(), r.proc.err.c_str());
    const std::vector<std::string> diffs = remoted::differences(n, r, cmp);
    cr_expect(diffs.size() == 1 && diffs[0].starts_with("not remoted:"),
              "[%s] the helper did not report the run as not remoted (%zu differences)%s%s",
              ch.c_str(), diffs.size(), diffs.empty() ? "" : ":\n",
              diffs.empty() ? "" : diffs[0].c_str());
  }
  rmdir(empty.c_str());
}

Test(e2e_demo, bad_handles_and_null_buffers_match_native, .timeout = 120) {
  expect_same_as_native({DEMO_PROBE, "bad-handles"});
}

Test(e2e_demo, large_buffers_round_trip, .timeout = 300) {
  expect_same_as_native({DEMO_PROBE, "big", "200"});
}

Test(e2e_demo, zero_copy_buffers_round_trip, .timeout = 300) {
  // On shm, ava_zerocopy_alloc memory is handed to the worker in place.
  expect_same_as_native({DEMO_PROBE, "zerocopy", "64"});
}

Test(e2e_demo, async_error_surfaces_at_next_sync_call, .timeout = 60) {
  const ProcResult n = native({DEMO_PROBE, "async-error"});
  cr_expect(n.out.find("fill released: -1\nwrite b: 0\n") != std::string::npos, "%s",
            n.out.c_str());
  for (const char *ch : kChannels) {
    const ProcResult r = remoted_demo(ch, {DEMO_PROBE, "async-error"});
    cr_expect_eq(r.exit_code, 0);
    // The async fill returns at once; its failure is the result of the next sync call.
    cr_expect(r.out == "create a: 0\ncreate b: 0\nrelease a: 0\nfill released: 0\nwrite b: -1\n"
                       "write b again: 0\nrelease b: 0\n",
              "[%s] %s", ch, r.out.c_str());
  }
}

// Streams of async calls of one thread, each followed by a sync call: the
// worker's reader and the thread's shadow thread trade the read baton all the
// while, and calls the reader queued must still run before what the shadow
// thread reads itself (else the sync call waits for an async call queued
// behind it, for ever). Unbatched, so that every async call is a message.
Test(e2e_demo, async_streams_keep_their_order_on_every_channel, .timeout = 300) {
  for (const char *ch : kChannels) {
    std::vector<std::string> argv = {AVA_BIN,    "run",    "--channel", ch,        "--",
                                     DEMO_BENCH, "--only", "async",     "--iters", "100000"};
    std::vector<std::string> env = clean_env();
    env.push_back("AVA_BATCH=0");
    const ProcResult r = run_proc(argv, env, 60000);
    cr_expect(!r.timed_out, "[%s] async calls hung:\n%s", ch, r.err.c_str());
    cr_expect_eq(r.exit_code, 0, "[%s] exit %d:\n%s", ch, r.exit_code, r.err.c_str());
    cr_expect(r.out.find("async_rate") != std::string::npos, "[%s] no rate: %s", ch, r.out.c_str());
  }
}

Test(e2e_demo, function_missing_from_spec_reports_itself, .timeout = 60) {
  const ProcResult n = native({DEMO_PROBE, "unsupported"});
  cr_expect(n.out == "reserved: 42\nversion: 10203\n", "%s", n.out.c_str());
  const ProcResult r = remoted_demo("unix", {DEMO_PROBE, "unsupported"});
  cr_expect_eq(r.exit_code, 0);
  cr_expect(r.out == "reserved: -5\nversion: 10203\n", "%s", r.out.c_str());
  cr_expect(r.err.find("ava: demo_reserved_call is not supported by this spec") !=
                std::string::npos,
            "%s", r.err.c_str());
}

Test(e2e_demo, exit_status_is_the_programs, .timeout = 60) {
  for (const char *ch : kChannels) {
    cr_expect_eq(ava_run(ch, {"/bin/sh", "-c", "exit 7"}).exit_code, 7);
    cr_expect_eq(ava_run(ch, {"/bin/sh", "-c", "kill -TERM $$"}).exit_code, 128 + 15);
  }
  const ProcResult missing = ava_run("unix", {"/nonexistent/program"});
  cr_expect_eq(missing.exit_code, 127);
}

Test(e2e_demo, no_worker_configured_is_a_clear_error, .timeout = 60) {
  std::vector<std::string> env = clean_env();
  env.push_back(std::string("LD_LIBRARY_PATH=") + AVA_GUEST_LIB_DIR);
  const std::string dir = make_temp_dir();
  const std::string config = dir + "/guest.toml";
  FILE *f = fopen(config.c_str(), "w");
  cr_assert(f != nullptr);
  fputs("# a configuration that names no worker\nconnect_timeout_ms = 2000\n", f);
  fclose(f);
  env.push_back("AVA_CONFIG=" + config);
  const ProcResult r = run_proc({DEMO_PROBE, "live"}, env, 30000);
  remove(config.c_str());
  rmdir(dir.c_str());
  cr_expect(r.exit_code >= 0 && r.exit_code < 128, "crashed: %d", r.exit_code);
  cr_expect(r.err.find("ava: no worker configured for spec 'demo'") != std::string::npos, "%s",
            r.err.c_str());
}

namespace {

// `ava worker --io-uring` listening on address; its debug log names the
// carrier of each guest it serves.
struct UringWorker {
  std::string dir = make_temp_dir();
  std::string report = dir + "/sessions.report";
  BackgroundProc proc;
  std::string address;
  explicit UringWorker(const std::string &listen)
      : proc({AVA_BIN, "worker", "--spec", "demo", "--listen",
              listen.empty() ? "unix:" + dir + "/worker.sock" : listen, "--io-uring", "--ready-fd",
              "1", "--report", report},
             with_debug_log()) {
    // The ready line is the address; debug lines on stderr share the pipe.
    std::string seen;
    const char *scheme = listen.empty() ? "unix:" : "tcp:";
    if (proc.wait_for_line(scheme, 20000, &seen))
      for (const std::string &line : remoted::split_lines(seen))
        if (line.starts_with(scheme) && address.empty())
          address = line;
  }
  static std::vector<std::string> with_debug_log() {
    std::vector<std::string> env = clean_env();
    env.push_back("AVA_LOG=debug");
    return env;
  }
  // Stops the worker; returns everything it printed.
  std::string stop() {
    proc.kill_now(SIGTERM);
    proc.wait_exit(5000);
    // Returns at the pipe's EOF: the text is never printed.
    std::string log;
    proc.wait_for_line("\x01(end)", 5000, &log);
    return log;
  }
  ~UringWorker() {
    stop();
    const std::string rm = "rm -rf " + dir;
    [[maybe_unused]] int rc = system(rm.c_str());
  }
};

} // namespace

// The io_uring worker serves unmodified programs over unix and tcp exactly as
// the plain one does, and its log shows the guests were on io_uring channels.
Test(e2e_demo, io_uring_worker_matches_native, .timeout = 300) {
  const std::vector<std::vector<std::string>> programs = {
      {DEMO_APP}, {DEMO_PROBE, "bad-handles"}, {DEMO_PROBE, "big", "64"}};
  for (const char *listen : {"", "tcp:127.0.0.1:0"}) {
    UringWorker w(listen);
    cr_assert(!w.address.empty(), "the io_uring worker did not start");
    for (const std::vector<std::string> &argv : programs) {
      const ProcResult n = native(argv);
      cr_assert_eq(n.exit_code, 0, "native %s failed:\n%s", argv.back().c_str(), n.err.c_str());
      const ProcResult r = run_proc(argv, guest_env(w.address), kTimeoutMs);
      cr_expect(r.exit_code == n.exit_code && r.out == n.out,
                "[%s %s] differs from native (exit %d):\n%s%s", w.address.c_str(),
                argv.back().c_str(), r.exit_code,
                remoted::line_diff(n.out, r.out, "native", "io_uring").c_str(), r.err.c_str());
    }
    const std::string log = w.stop();
    if (log.find("io_uring is not available") != std::string::npos)
      cr_skip_test("this kernel has no usable io_uring:\n%s", log.c_str());
    const std::string why =
        remoted::not_remoted_reason(remoted::WorkerReport::read(w.report), "demo", programs.size());
    cr_expect(why.empty(), "[%s] %s", w.address.c_str(), why.c_str());
    size_t on_uring = 0;
    for (size_t at = log.find("(io_uring))"); at != std::string::npos;
         at = log.find("(io_uring))", at + 1))
      ++on_uring;
    cr_expect_geq(on_uring, programs.size(),
                  "[%s] %zu of %zu guests were served on io_uring channels; worker log:\n%s",
                  w.address.c_str(), on_uring, programs.size(), log.c_str());
  }
}
