// SPDX-License-Identifier: MIT
// Wait lists shaped by where their events come from (issue 14): the program
// tests/opencl/programs/wait_lists.c chains commands across two queues, each
// wait list naming an event just made, then makes the errors a wait list can
// cause. Remoted over unix, tcp and shm its output must be the native one,
// errors at the calls that cause them included, and the calls it waits for
// must not grow with the chain: none of a round's 7 calls waits (its two
// clReleaseEvent and its clRetainMemObject/clReleaseMemObject name objects
// the program holds, which cannot fail). Before, a list naming a new event
// was a shape never seen, so each round's kernel and barrier waited, and
// so did every retain and release (6 per round).
#include <criterion/criterion.h>

#include <string>

#include "ocl_run.hpp"

namespace {

const std::string kProgram = std::string(OCL_DIR) + "/ocl_wait_lists";
constexpr uint64_t kFewRounds = 20, kManyRounds = 220;
constexpr uint64_t kCallsPerRound = 7, kWaitedPerRound = 0;
// Calls whose shape a longer run meets for the first time by chance (a
// shape table slot lost to another shape): a few, never one per round.
constexpr uint64_t kSlack = 16;

} // namespace

Test(e2e_opencl_wait_lists, new_events_of_known_origins_go_without_waiting, .timeout = 900) {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
  const remoted::Comparison cmp = ocl::comparison();
  const std::vector<std::string> few = {kProgram, std::to_string(kFewRounds)};
  const std::vector<std::string> many = {kProgram, std::to_string(kManyRounds)};
  const ProcResult native_few = run_proc(few, cmp.native_env, cmp.timeout_ms);
  const ProcResult native_many = run_proc(many, cmp.native_env, cmp.timeout_ms);
  cr_assert_eq(native_few.exit_code, 0, "native: %s", native_few.err.c_str());
  cr_assert_eq(native_many.exit_code, 0, "native: %s", native_many.err.c_str());
  const uint64_t more_rounds = kManyRounds - kFewRounds;
  for (const std::string &ch : cmp.channels) {
    const remoted::RemotedRun r_few = remoted::run_remoted(AVA_BIN, ch, few, cmp);
    const remoted::RemotedRun r_many = remoted::run_remoted(AVA_BIN, ch, many, cmp);
    for (const std::string &d : remoted::differences(native_few, r_few, cmp))
      cr_expect_fail("[%s, %lu rounds] %s", ch.c_str(), (unsigned long)kFewRounds, d.c_str());
    for (const std::string &d : remoted::differences(native_many, r_many, cmp))
      cr_expect_fail("[%s, %lu rounds] %s", ch.c_str(), (unsigned long)kManyRounds, d.c_str());
    const auto f = r_few.report.of("opencl"), m = r_many.report.of("opencl");
    // Proves the rounds were served, so that the waits below count them.
    cr_expect_geq(m.calls, f.calls + kCallsPerRound * more_rounds,
                  "[%s] %lu more rounds ran only %lu more calls", ch.c_str(),
                  (unsigned long)more_rounds, (unsigned long)(m.calls - f.calls));
    cr_expect_leq(m.sync, f.sync + kWaitedPerRound * more_rounds + kSlack,
                  "[%s] %lu more rounds waited for %lu more calls (at most %lu): lists naming "
                  "new events of the same queues, or references to held objects, went sync\n%s\n%s",
                  ch.c_str(), (unsigned long)more_rounds, (unsigned long)(m.sync - f.sync),
                  (unsigned long)(kWaitedPerRound * more_rounds + kSlack),
                  r_few.report.text.c_str(), r_many.report.text.c_str());
  }
}
