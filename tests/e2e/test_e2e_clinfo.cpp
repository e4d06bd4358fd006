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

// clinfo's "ICD loader properties" section (and the blank line before it),
// the loader lines of --raw, and clinfo's notes about the library's version.
bool is_loader_line(const std::vector<std::string> &lines, size_t i) {
  static const char *const kPrefixes[] = {
      "ICD loader properties", // section title
      "  ICD loader ",         // Name, Vendor, Version, Profile
      "[OCLICD/",              // --raw: CL_ICDL_NAME, _VENDOR, _VERSION, _OCL_VERSION
      "NOTE: your OpenCL library",
  };
  const std::string &line = lines[i];
  for (const char *p : kPrefixes)
    if (line.starts_with(p))
      return true;
  return line.empty() && i + 1 < lines.size() && lines[i + 1] == "ICD loader properties";
}

std::string without_loader_lines(const std::string &text, std::string *removed) {
  const std::vector<std::string> lines = ocl::split_lines(text);
  std::string kept;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (is_loader_line(lines, i))
      *removed += lines[i] + "\n";
    else
      kept += lines[i] + "\n";
  }
  return kept;
}

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
  const std::string label = args.empty() ? std::string("clinfo") : "clinfo " + args[0];
  const ProcResult n = ocl::native(argv);
  cr_assert_eq(n.exit_code, 0, "native %s failed (%d):\n%s", label.c_str(), n.exit_code,
               n.err.c_str());
  std::string native_loader;
  const std::string native_out = without_loader_lines(n.out, &native_loader);
  for (const char *ch : ocl::kChannels) {
    const ProcResult r = ocl::remoted(ch, argv, remoted_env());
    cr_expect_eq(r.exit_code, n.exit_code, "[%s %s] exit %d, stderr:\n%s", ch, label.c_str(),
                 r.exit_code, r.err.c_str());
    std::string remoted_loader;
    const std::string remoted_out = without_loader_lines(r.out, &remoted_loader);
    cr_expect(remoted_out == native_out,
              "[%s %s] differs from native beyond the ICD loader lines:\n%s\nstderr:\n%s", ch,
              label.c_str(), ocl::line_diff(native_out, remoted_out, "native", "remoted").c_str(),
              r.err.c_str());
    cr_expect(r.err.find("ava:") == std::string::npos, "[%s %s] unexpected ava message:\n%s", ch,
              label.c_str(), r.err.c_str());
    if (native_loader != remoted_loader)
      cr_log_info("[%s %s] ICD loader lines (allowed to differ):\n--- native\n%s--- remoted\n%s",
                  ch, label.c_str(), native_loader.c_str(), remoted_loader.c_str());
  }
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
