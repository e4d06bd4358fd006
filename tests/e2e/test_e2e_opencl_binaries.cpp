// SPDX-License-Identifier: MIT
// Crafted PoCL program binaries from a guest (issue 13; specs/opencl/poclbin.h):
// a file name that climbs out of PoCL's cache, a length past the end, half a
// header, trailing bytes (tests/opencl/hostile_binaries.c). Natively PoCL
// unpacks them as they say; under ava the worker refuses each with
// CL_INVALID_BINARY and logs why, PoCL's own binary still builds and runs,
// and the worker serves the next guest.
#include <criterion/criterion.h>

#include <string>

#include "opencl_worker.hpp"

Test(e2e_opencl_binaries, crafted_binaries_are_refused_before_pocl, .timeout = 600) {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
  OpenclWorker w("");
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  const std::string program = std::string(OCL_DIR) + "/ocl_hostile_binaries";
  const ProcResult r = w.run({program});
  cr_expect_eq(r.exit_code, 0, "exit %d:\n%s%s", r.exit_code, r.out.c_str(), r.err.c_str());
  size_t refused = 0;
  for (size_t at = 0; (at = r.out.find(": CL_INVALID_BINARY, binary status CL_INVALID_BINARY",
                                       at)) != std::string::npos;
       ++at)
    ++refused;
  cr_expect_eq(refused, 4u, "binaries refused:\n%s", r.out.c_str());
  cr_expect(r.out.find("ran: 41 41 41 41") != std::string::npos, "%s", r.out.c_str());
  const ProcResult after = w.run({program});
  cr_expect_eq(after.exit_code, 0, "a second guest: exit %d:\n%s", after.exit_code,
               after.err.c_str());
  // The worker says what it refused and why.
  std::string log;
  cr_expect(w.proc.wait_for_line("refused PoCL binary 0: ", 10000, &log), "worker log:\n%s",
            log.c_str());
  const std::string why = remoted::not_remoted_reason(w.stop(), "opencl", 2);
  cr_expect(why.empty(), "%s", why.c_str());
}
