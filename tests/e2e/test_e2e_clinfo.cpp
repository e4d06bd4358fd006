// SPDX-License-Identifier: MIT
// `ava run -- clinfo` prints what plain clinfo prints. The only lines allowed
// to differ are those about the ICD loader itself: under ava the guest
// library stands in for the loader and implements no loader queries.
#include <criterion/criterion.h>

#include <string>
#include <vector>

#include "e2e_env.hpp"
#include "ocl_run.hpp"
#include "proc.hpp"

namespace {

std::vector<std::string> remoted_env() {
  std::vector<std::string> env = ocl::child_env();
#ifdef ASAN_RUNTIME
  // clinfo is not instrumented but the guest library it loads is: the
  // sanitizer runtimes must come first in the process.
  env.push_back(std::string("LD_PRELOAD=") + ASAN_RUNTIME + ":" + UBSAN_RUNTIME);
  env.push_back(std::string(ocl::kAsanOptions) +
                ":verify_asan_link_order=0:suppressions=" + CLINFO_ASAN_SUPPRESSIONS);
#endif
  return env;
}

void expect_clinfo_matches(const std::vector<std::string> &args) {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
  std::vector<std::string> argv = {CLINFO};
  argv.insert(argv.end(), args.begin(), args.end());
  remoted::Comparison cmp = ocl::comparison(remoted_env());
  cmp.normalize = [](const std::string &out) { return ocl::without_loader_lines(out); };
  remoted::expect_same_as_native(AVA_BIN, argv, cmp);
}

} // namespace

Test(e2e_clinfo, full_output_matches_native, .timeout = 300) {
  expect_clinfo_matches({});
}

Test(e2e_clinfo, list_matches_native, .timeout = 300) {
  expect_clinfo_matches({"-l"});
}

Test(e2e_clinfo, raw_output_matches_native, .timeout = 300) {
  expect_clinfo_matches({"--raw"});
}
