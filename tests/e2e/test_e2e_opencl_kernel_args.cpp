// SPDX-License-Identifier: MIT
// Forged device pointers in kernel arguments (issue 13, finding 4): a guest
// writes 8 bytes of its choosing for a __global pointer argument of kernels
// from source, binaries and linked objects (tests/opencl/kernel_arg_kinds.c).
// The worker knows every kernel's argument kinds, whatever the program asked
// for, so each forged pointer gets CL_INVALID_MEM_OBJECT, every kernel still
// works with real buffers, and the program sees the argument information it
// would natively. Under the default ([opencl] kernels_without_arg_info =
// "refuse") and with "allow", which changes nothing where PoCL tells every
// kernel's kinds (PoCL 3.1 does for each program kind it builds).
#include <criterion/criterion.h>

#include <string>

#include "opencl_worker.hpp"

namespace {

const std::string kProgram = std::string(OCL_DIR) + "/ocl_kernel_arg_kinds";

void expect_forged_pointers_refused(const std::string &host_toml) {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
  OpenclWorker w(host_toml);
  cr_assert(w.ready, "the worker did not start:\n%s", w.output.c_str());
  const ProcResult r = w.run({kProgram});
  cr_expect_eq(r.exit_code, 0, "exit %d:\n%s%s", r.exit_code, r.out.c_str(), r.err.c_str());
  // Seven kinds of program, each attacked once.
  size_t refused = 0;
  for (size_t at = 0;
       (at = r.out.find("forged pointer: CL_INVALID_MEM_OBJECT", at)) != std::string::npos; ++at)
    ++refused;
  cr_expect_eq(refused, 7u, "forged pointers refused:\n%s", r.out.c_str());
  cr_expect(r.out.find("linked without options: real buffer: 41") != std::string::npos, "%s",
            r.out.c_str());
  // The worker served the program, and lived through it.
  const ProcResult after = w.run({kProgram});
  cr_expect_eq(after.exit_code, 0, "a second guest: exit %d:\n%s", after.exit_code,
               after.err.c_str());
  const std::string why = remoted::not_remoted_reason(w.stop(), "opencl", 2);
  cr_expect(why.empty(), "%s", why.c_str());
}

} // namespace

Test(e2e_opencl_kernel_args, forged_pointers_are_refused_by_default, .timeout = 600) {
  expect_forged_pointers_refused("");
}

Test(e2e_opencl_kernel_args, forged_pointers_are_refused_when_the_host_allows_unknown_kinds,
     .timeout = 600) {
  expect_forged_pointers_refused("[opencl]\nkernels_without_arg_info = \"allow\"\n");
}
