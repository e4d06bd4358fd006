// SPDX-License-Identifier: MIT
// Unmodified libdemo programs under `ava run`: same output as natively over
// every channel, exit statuses, errors the remoting adds on purpose.
#include <criterion/criterion.h>

#include <unistd.h>

#include <cstdio>

#include <string>
#include <vector>

#include "e2e_env.hpp"
#include "proc.hpp"

namespace {

const char *const kChannels[] = {"unix", "tcp", "shm"};
constexpr int kTimeoutMs = 120000;

ProcResult native(const std::vector<std::string> &argv) {
  return run_proc(argv, clean_env(), kTimeoutMs);
}

ProcResult remoted(const char *channel, const std::vector<std::string> &argv) {
  std::vector<std::string> full = {AVA_BIN, "run", "--channel", channel, "--"};
  full.insert(full.end(), argv.begin(), argv.end());
  return run_proc(full, clean_env(), kTimeoutMs);
}

void expect_same_as_native(const std::vector<std::string> &argv) {
  const ProcResult n = native(argv);
  cr_assert_eq(n.exit_code, 0, "native %s failed (%d): %s", argv[0].c_str(), n.exit_code,
               n.err.c_str());
  for (const char *ch : kChannels) {
    const ProcResult r = remoted(ch, argv);
    cr_expect_eq(r.exit_code, n.exit_code, "[%s %s] exit %d, stderr:\n%s", ch, argv.back().c_str(),
                 r.exit_code, r.err.c_str());
    cr_expect(r.out == n.out, "[%s] output differs.\n--- native\n%s\n--- remoted\n%s", ch,
              n.out.c_str(), r.out.c_str());
    cr_expect(r.err.find("ava:") == std::string::npos, "[%s] unexpected ava message:\n%s", ch,
              r.err.c_str());
  }
}

} // namespace

Test(e2e_demo, demo_app_output_matches_native, .timeout = 300) {
  expect_same_as_native({DEMO_APP});
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
    const ProcResult r = remoted(ch, {DEMO_PROBE, "async-error"});
    cr_expect_eq(r.exit_code, 0);
    // The async fill returns at once; its failure is the result of the next sync call.
    cr_expect(r.out == "create a: 0\ncreate b: 0\nrelease a: 0\nfill released: 0\nwrite b: -1\n"
                       "write b again: 0\nrelease b: 0\n",
              "[%s] %s", ch, r.out.c_str());
  }
}

Test(e2e_demo, function_missing_from_spec_reports_itself, .timeout = 60) {
  const ProcResult n = native({DEMO_PROBE, "unsupported"});
  cr_expect(n.out == "reserved: 42\nversion: 10203\n", "%s", n.out.c_str());
  const ProcResult r = remoted("unix", {DEMO_PROBE, "unsupported"});
  cr_expect_eq(r.exit_code, 0);
  cr_expect(r.out == "reserved: -5\nversion: 10203\n", "%s", r.out.c_str());
  cr_expect(r.err.find("ava: demo_reserved_call is not supported by this spec") !=
                std::string::npos,
            "%s", r.err.c_str());
}

Test(e2e_demo, exit_status_is_the_programs, .timeout = 60) {
  for (const char *ch : kChannels) {
    cr_expect_eq(remoted(ch, {"/bin/sh", "-c", "exit 7"}).exit_code, 7);
    cr_expect_eq(remoted(ch, {"/bin/sh", "-c", "kill -TERM $$"}).exit_code, 128 + 15);
  }
  const ProcResult missing = remoted("unix", {"/nonexistent/program"});
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
