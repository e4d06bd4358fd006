// SPDX-License-Identifier: MIT
// Unmodified OpenCL programs (tests/opencl) under `ava run`: the same exit
// status and byte-for-byte the same stdout as natively, over unix, tcp and shm;
// garbage handles get the spec's errors; bad guests do not disturb others.
#include <criterion/criterion.h>

#include <signal.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e_env.hpp"
#include "ocl_run.hpp"
#include "proc.hpp"

namespace {

std::string program(const char *name) {
  return std::string(OCL_DIR) + "/ocl_" + name;
}

void require_spec() {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
}

void expect_same_as_native(const char *name) {
  require_spec();
  // The programs check themselves: a native failure is a bug in the test program.
  remoted::expect_same_as_native(AVA_BIN, {program(name)}, ocl::comparison());
}

std::string read_file(const char *path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

// One test per program (tests/opencl/programs/<name>.c), so a report names it.
#define OCL_PROGRAMS(X)                                                                            \
  X(platform_device)                                                                               \
  X(context)                                                                                       \
  X(queue)                                                                                         \
  X(buffer)                                                                                        \
  X(map)                                                                                           \
  X(image_sampler)                                                                                 \
  X(program)                                                                                       \
  X(kernel_args)                                                                                   \
  X(events)                                                                                        \
  X(threads_one_queue)                                                                             \
  X(threads_many_queues)                                                                           \
  X(bad_input)                                                                                     \
  X(callbacks)                                                                                     \
  X(svm)                                                                                           \
  X(svm_alias)                                                                                     \
  X(nonblocking)

#define OCL_PROGRAM_TEST(name)                                                                     \
  Test(e2e_opencl, name, .timeout = 300) {                                                         \
    expect_same_as_native(#name);                                                                  \
  }
OCL_PROGRAMS(OCL_PROGRAM_TEST)

// Garbage handles crash a native PoCL, so this one is compared with the
// errors the OpenCL spec requires instead of with a native run.
Test(e2e_opencl, bad_handles_get_the_specs_errors, .timeout = 300) {
  require_spec();
  const std::string expected = read_file(BAD_HANDLES_EXPECTED);
  cr_assert(!expected.empty(), "cannot read %s", BAD_HANDLES_EXPECTED);
  const remoted::Comparison cmp = ocl::comparison();
  for (const std::string &ch : cmp.channels) {
    const remoted::RemotedRun run =
        remoted::run_remoted(AVA_BIN, ch, {program("bad_handles")}, cmp);
    const ProcResult &r = run.proc;
    cr_expect_eq(r.exit_code, 0, "[%s] exit %d, stderr:\n%s", ch.c_str(), r.exit_code,
                 r.err.c_str());
    cr_expect(r.out == expected, "[%s] output differs from %s:\n%s", ch.c_str(),
              BAD_HANDLES_EXPECTED, ocl::line_diff(expected, r.out, "expected", "remoted").c_str());
    cr_expect(r.err.find("ava: the local worker") == std::string::npos, "[%s] the worker died:\n%s",
              ch.c_str(), r.err.c_str());
    const std::string why = remoted::not_remoted_reason(run.report, "opencl");
    cr_expect(why.empty(), "[%s] %s", ch.c_str(), why.c_str());
  }
}

namespace {

struct SharedWorker {
  std::string dir = make_temp_dir();
  std::string address = "unix:" + dir + "/worker.sock";
  std::string report = dir + "/sessions.report";
  // --ready-fd 1: the worker prints its address on stdout once it listens.
  BackgroundProc proc{with_mode({AVA_BIN, "worker", "--spec", "opencl", "--listen", address,
                                 "--ready-fd", "1", "--report", report}),
                      ocl::child_env()};
  static std::vector<std::string> with_mode(std::vector<std::string> argv) {
    for (const std::string &a : worker_mode_args())
      argv.push_back(a);
    return argv;
  }
  // Stops the worker (every session ends and reports) and reads its report.
  remoted::WorkerReport stop() {
    proc.kill_now(SIGTERM);
    proc.wait_exit(5000);
    return remoted::WorkerReport::read(report);
  }
  ~SharedWorker() {
    stop();
    const std::string rm = "rm -rf " + dir;
    [[maybe_unused]] int rc = system(rm.c_str());
  }
};

ProcResult run_on(const std::string &address, const char *name) {
  return run_proc({AVA_BIN, "run", "--worker", address, "--", program(name)}, ocl::child_env(),
                  ocl::kTimeoutMs);
}

} // namespace

// Guests that pass bad input and garbage handles share one worker with a
// well-behaved guest: its output stays the native one and the worker lives.
Test(e2e_opencl, bad_guests_never_affect_another_guest, .timeout = 600) {
  require_spec();
  constexpr int kRounds = 3;
  const ProcResult reference = ocl::native({program("buffer")});
  cr_assert_eq(reference.exit_code, 0, "native buffer failed:\n%s", reference.err.c_str());
  SharedWorker w;
  std::string seen;
  cr_assert(w.proc.wait_for_line("worker.sock", 20000, &seen), "the worker did not start:\n%s",
            seen.c_str());

  std::vector<ProcResult> bad_runs(2 * kRounds);
  std::thread bad_input([&] {
    for (int i = 0; i < kRounds; ++i)
      bad_runs[static_cast<size_t>(i)] = run_on(w.address, "bad_input");
  });
  std::thread bad_handles([&] {
    for (int i = 0; i < kRounds; ++i)
      bad_runs[static_cast<size_t>(kRounds + i)] = run_on(w.address, "bad_handles");
  });
  std::vector<ProcResult> good_runs;
  for (int i = 0; i < kRounds; ++i)
    good_runs.push_back(run_on(w.address, "buffer"));
  bad_input.join();
  bad_handles.join();

  for (const ProcResult &r : good_runs) {
    cr_expect_eq(r.exit_code, 0, "buffer next to bad guests: exit %d, stderr:\n%s", r.exit_code,
                 r.err.c_str());
    cr_expect(r.out == reference.out, "buffer next to bad guests differs from native:\n%s",
              ocl::line_diff(reference.out, r.out, "native", "remoted").c_str());
  }
  for (const ProcResult &r : bad_runs)
    cr_expect(r.exit_code >= 0 && r.exit_code < 128, "a bad guest crashed (%d):\n%s", r.exit_code,
              r.err.c_str());
  std::string log; // what the worker printed so far (no wait: timeout 0)
  w.proc.wait_for_line("\n\n", 0, &log);
  cr_expect_eq(w.proc.wait_exit(0), -1, "the shared worker died:\n%s", log.c_str());
  const ProcResult after = run_on(w.address, "buffer");
  cr_expect(after.exit_code == 0 && after.out == reference.out,
            "the worker does not serve correctly after the bad guests (exit %d):\n%s\n%s",
            after.exit_code, ocl::line_diff(reference.out, after.out, "native", "after").c_str(),
            after.err.c_str());
  // Every run, good or bad, was a session of the shared worker.
  const std::string why =
      remoted::not_remoted_reason(w.stop(), "opencl", good_runs.size() + bad_runs.size() + 1);
  cr_expect(why.empty(), "%s", why.c_str());
}
