// SPDX-License-Identifier: MIT
// The device-memory quota of the host configuration ([guest] device_memory;
// issue 13, finding 7) for OpenCL (tests/opencl/device_quota.c): a guest
// under it sees the quota as its device's memory (CL_DEVICE_GLOBAL_MEM_SIZE
// and CL_DEVICE_MAX_MEM_ALLOC_SIZE at most the quota) and every allocation,
// buffers, images and SVM alike, counts against it while it lives. Without a
// quota the device reports what it reports natively.
#include <criterion/criterion.h>

#include <cstdint>
#include <string>

#include "opencl_worker.hpp"

namespace {

const std::string kProgram = std::string(OCL_DIR) + "/ocl_device_quota";
constexpr uint64_t kQuota = 8u << 20;

void require_spec() {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
}

// The number after "NAME: " in out, or 0.
uint64_t reported(const std::string &out, const std::string &name) {
  const size_t at = out.find(name + ": ");
  return at == std::string::npos ? 0 : std::stoull(out.substr(at + name.size() + 2));
}

} // namespace

Test(e2e_opencl_quota, the_guest_sees_the_quota_and_every_allocation_counts, .timeout = 600) {
  require_spec();
  const ProcResult native = ocl::native({kProgram, "info"});
  cr_assert_eq(native.exit_code, 0, "native info:\n%s", native.err.c_str());
  OpenclWorker w("[guest]\ndevice_memory = " + std::to_string(kQuota) + "\n");
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  const ProcResult r = w.run({kProgram, std::to_string(kQuota)});
  cr_expect_eq(r.exit_code, 0, "under the quota: exit %d:\n%s%s", r.exit_code, r.out.c_str(),
               r.err.c_str());
  for (const char *name : {"CL_DEVICE_GLOBAL_MEM_SIZE", "CL_DEVICE_MAX_MEM_ALLOC_SIZE"}) {
    const uint64_t real = reported(native.out, name);
    cr_expect(real != 0, "natively %s:\n%s", name, native.out.c_str());
    cr_expect_eq(reported(r.out, name), real < kQuota ? real : kQuota, "%s:\n%s", name,
                 r.out.c_str());
  }
  // Each refusal of the program's was the worker's (before PoCL saw it).
  const remoted::WorkerReport report = w.stop();
  const std::string why = remoted::not_remoted_reason(report, "opencl");
  cr_expect(why.empty(), "%s", why.c_str());
  cr_expect_eq(report.of("opencl").refused, 5u, "refused calls:\n%s", report.text.c_str());
}

Test(e2e_opencl_quota, without_a_quota_the_device_is_as_native, .timeout = 600) {
  require_spec();
  const ProcResult native = ocl::native({kProgram, "info"});
  cr_assert_eq(native.exit_code, 0, "native info:\n%s", native.err.c_str());
  OpenclWorker w("");
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  const ProcResult r = w.run({kProgram, "info"});
  cr_expect_eq(r.exit_code, 0, "exit %d:\n%s", r.exit_code, r.err.c_str());
  cr_expect(r.out == native.out, "%s", ocl::line_diff(native.out, r.out, "native", "ava").c_str());
  const std::string why = remoted::not_remoted_reason(w.stop(), "opencl");
  cr_expect(why.empty(), "%s", why.c_str());
}

// Count budgets ([guest] objects, callbacks; finding 6): a guest that makes
// objects, or sets event callbacks, without end gets CL_OUT_OF_RESOURCES at
// its budget and room again once it released them (once they ran); the
// worker goes on serving the next guest.
struct BudgetCase {
  const char *config;  // the host configuration
  const char *program; // performs the attack; checks itself
  const char *limit;
};

static void expect_budget_holds(const BudgetCase &c) {
  require_spec();
  OpenclWorker w(c.config);
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  const ProcResult r = w.run({std::string(OCL_DIR) + "/" + c.program, c.limit});
  cr_expect_eq(r.exit_code, 0, "%s: exit %d:\n%s%s", c.program, r.exit_code, r.out.c_str(),
               r.err.c_str());
  cr_expect(r.out.find("refused: CL_OUT_OF_RESOURCES") != std::string::npos, "%s", r.out.c_str());
  const ProcResult again = w.run({kProgram, "info"});
  cr_expect_eq(again.exit_code, 0, "exit %d:\n%s", again.exit_code, again.err.c_str());
  const remoted::WorkerReport report = w.stop();
  const std::string why = remoted::not_remoted_reason(report, "opencl", 2);
  cr_expect(why.empty(), "%s", why.c_str());
}

Test(e2e_opencl_quota, a_guest_holds_at_most_its_budget_of_objects, .timeout = 600) {
  expect_budget_holds({"[guest]\nobjects = 64\n", "ocl_object_budget", "64"});
}

Test(e2e_opencl_quota, a_guest_holds_at_most_its_budget_of_callbacks, .timeout = 600) {
  expect_budget_holds({"[guest]\ncallbacks = 32\n", "ocl_callback_budget", "32"});
}
