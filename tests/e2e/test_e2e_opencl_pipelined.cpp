// SPDX-License-Identifier: MIT
// Pipelined transfers (issue 15): a large buffer read or write goes as a run
// of pieces through the shared heap. tests/opencl/programs/pipelined.c moves
// sizes around piece multiples at odd offsets, blocking and not, on in-order
// and out-of-order queues, behind a user event, from several threads, and
// makes the errors of the whole call; remoted with 64 KiB pieces its output
// must be the native one on every channel (unix and tcp have no heap and
// send the transfers whole). On shm the pieces must really have gone: the
// worker ran thousands more calls than with pipelining off
// (AVA_PIPELINE_CHUNK=0), one per piece.
#include <criterion/criterion.h>

#include <string>

#include "ocl_run.hpp"

namespace {

const std::string kProgram = std::string(OCL_DIR) + "/ocl_pipelined";
// The program's transfers of 128 KiB and more come to 789 extra pieces per
// size set (pipelined.c kSizes), made 24 times (3 offsets, blocking or
// not, read and write, two queues): 18936 calls, more with the waits.
constexpr uint64_t kExtraCalls = 15000;

std::vector<std::string> env_with_chunk(const char *chunk) {
  std::vector<std::string> env = ocl::child_env();
  env.push_back(std::string("AVA_PIPELINE_CHUNK=") + chunk);
  return env;
}

} // namespace

Test(e2e_opencl_pipelined, pieces_at_every_boundary_match_native, .timeout = 900) {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
  remoted::Comparison cmp = ocl::comparison(env_with_chunk("65536"));
  const ProcResult native = run_proc({kProgram}, cmp.native_env, cmp.timeout_ms);
  cr_assert_eq(native.exit_code, 0, "native: %s", native.err.c_str());
  uint64_t piece_calls = 0;
  for (const std::string &ch : cmp.channels) {
    const remoted::RemotedRun r = remoted::run_remoted(AVA_BIN, ch, {kProgram}, cmp);
    for (const std::string &d : remoted::differences(native, r, cmp))
      cr_expect_fail("[%s] %s", ch.c_str(), d.c_str());
    if (ch == "shm")
      piece_calls = r.report.of("opencl").calls;
  }
  cmp.remoted_env = env_with_chunk("0");
  const remoted::RemotedRun whole = remoted::run_remoted(AVA_BIN, "shm", {kProgram}, cmp);
  for (const std::string &d : remoted::differences(native, whole, cmp))
    cr_expect_fail("[shm, whole transfers] %s", d.c_str());
  const uint64_t whole_calls = whole.report.of("opencl").calls;
  cr_expect_geq(piece_calls, whole_calls + kExtraCalls,
                "with 64 KiB pieces the worker ran %lu calls, whole %lu: the transfers did not "
                "go in pieces",
                (unsigned long)piece_calls, (unsigned long)whole_calls);
}
