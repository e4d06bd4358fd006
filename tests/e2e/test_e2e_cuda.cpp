// SPDX-License-Identifier: MIT
// Unmodified CUDA programs (tests/cuda/programs, built with `nvcc -cudart
// shared`) under `ava run`: the same exit status and byte-for-byte the same
// stdout as natively, over shm and tcp, and no ava messages. Without a GPU
// (or driver) both runs report the same errors and exit with the programs'
// "no CUDA device" code; with one, the programs' own checks must hold.
#include <criterion/criterion.h>

#include <sys/stat.h>

#include <iterator>
#include <string>
#include <vector>

#include "e2e_env.hpp"
#include "ocl_run.hpp"
#include "proc.hpp"
#include "remoted.hpp"

namespace {

const char *const kChannels[] = {"shm", "tcp"};
constexpr int kTimeoutMs = 180000;
// The programs' exit codes (tests/cuda/programs/cu_check.cuh).
constexpr int kExitOk = 0;
constexpr int kExitNoDevice = 2;

const char *const kAsanOptions = "ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0";

std::vector<std::string> native_env() {
  std::vector<std::string> env = clean_env();
  env.push_back(kAsanOptions);
  return env;
}

std::vector<std::string> remoted_env() {
  std::vector<std::string> env = native_env();
#ifdef ASAN_RUNTIME
  // The programs are not instrumented but the guest libcudart.so.13 they load
  // is: the sanitizer runtimes must come first in the process.
  env.push_back(std::string("LD_PRELOAD=") + ASAN_RUNTIME + ":" + UBSAN_RUNTIME);
#endif
  return env;
}

std::string program_path(const char *name) {
  return std::string(CUDA_PROGRAMS_DIR) + "/cu_" + name;
}

// Every piece must exist: without them each remoted run fails, and that must
// read as a failure with a reason, not as a skipped test.
std::string missing_pieces(const char *name) {
  const std::string files[] = {
      std::string(AVA_GUEST_LIB_DIR) + "/libcudart.so.13",
      std::string(AVA_PLUGIN_DIR) + "/libava_worker_cudart.so",
      program_path(name),
  };
  for (const std::string &f : files) {
    struct stat st {};
    if (stat(f.c_str(), &st) != 0)
      return f + " is missing (targets ava_guest_cudart, ava_worker_cudart, cuda_programs)";
  }
  return {};
}

// What every program must exit with natively on this machine: device_query
// tells whether there is a usable device at all.
int expected_native_exit() {
  const ProcResult q = run_proc({program_path("device_query")}, native_env(), kTimeoutMs);
  cr_assert(q.exit_code == kExitOk || q.exit_code == kExitNoDevice,
            "native device_query exited %d:\n%s\n%s", q.exit_code, q.out.c_str(), q.err.c_str());
  if (q.exit_code == kExitNoDevice)
    cr_log_info("no CUDA device here: the programs must fail alike natively and remoted");
  return q.exit_code;
}

void expect_same_as_native(const char *name, const std::vector<std::string> &args) {
  const std::string missing = missing_pieces(name);
  cr_assert(missing.empty(), "%s", missing.c_str());
  std::vector<std::string> argv = {program_path(name)};
  argv.insert(argv.end(), args.begin(), args.end());
  remoted::Comparison cmp;
  // Without a device the programs fail at their first call, which the
  // cudart worker must still have served.
  cmp.spec = "cudart";
  cmp.channels.assign(std::begin(kChannels), std::end(kChannels));
  cmp.native_env = native_env();
  cmp.remoted_env = remoted_env();
  cmp.timeout_ms = kTimeoutMs;
  cmp.native_exit = expected_native_exit();
  remoted::expect_same_as_native(AVA_BIN, argv, cmp);
}

} // namespace

// One test per program run (tests/cuda/programs/<program>.cu, arguments), so
// a report names it.
#define CUDA_RUNS(X)                                                                               \
  X(device_query, device_query, )                                                                  \
  X(errors, errors, )                                                                              \
  X(vector_add, vector_add, )                                                                      \
  X(streams_events, streams_events, )                                                              \
  X(memcpy_bandwidth, memcpy_bandwidth, )                                                          \
  X(host_callback, host_callback, )                                                                \
  X(failing_launch_trap, failing_launch, )                                                         \
  X(failing_launch_oob, failing_launch, "oob")                                                     \
  X(launch_paths, launch_paths, )                                                                  \
  X(copy_ranges, copy_ranges, )                                                                    \
  X(async_errors, async_errors, )

#define CUDA_RUN_TEST(test, program, ...)                                                          \
  Test(e2e_cuda, test, .timeout = 900) {                                                           \
    expect_same_as_native(#program, {__VA_ARGS__});                                                \
  }
CUDA_RUNS(CUDA_RUN_TEST)
