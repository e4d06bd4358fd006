// SPDX-License-Identifier: MIT
// The guest library is loaded into arbitrary programs: it must export the
// API's functions and nothing else, and must not drag in libstdc++. Where
// programs link against a real library with versioned symbols (OpenCL's ICD
// loader), it must export the same symbols with the same versions.
#include <criterion/criterion.h>

#include <unistd.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "proc.hpp"

namespace {

std::set<std::string> api_functions() {
  std::ifstream in(DEMO_HEADER);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::set<std::string> names;
  const std::regex decl(R"(\b(demo_\w+)\s*\()");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), decl); it != std::sregex_iterator();
       ++it) {
    const std::string name = (*it)[1];
    if (name != "demo_event_fn")
      names.insert(name);
  }
  return names;
}

} // namespace

Test(e2e_symbols, guest_library_exports_only_the_api) {
  const ProcResult r = run_proc({"nm", "-D", "--defined-only", GUEST_LIB}, {}, 30000);
  cr_assert_eq(r.exit_code, 0, "%s", r.err.c_str());
  std::set<std::string> exported;
  std::istringstream lines(r.out);
  std::string addr, kind, name;
  while (lines >> addr >> kind >> name)
    exported.insert(name);
  const std::set<std::string> api = api_functions();
  cr_assert_gt(api.size(), 20u);
  // ava's own API for programs that want zero-copy buffers is the one addition.
  const std::set<std::string> ava_api = {"ava_zerocopy_alloc", "ava_zerocopy_free"};
  for (const std::string &s : exported)
    cr_expect(api.count(s) || ava_api.count(s),
              "the guest library exports %s, which is not part of demo.h", s.c_str());
  for (const std::string &s : api)
    cr_expect(exported.count(s), "the guest library does not export %s", s.c_str());
}

Test(e2e_symbols, guest_library_needs_only_libc) {
  const ProcResult r = run_proc({"readelf", "-d", GUEST_LIB}, {}, 30000);
  cr_assert_eq(r.exit_code, 0);
  const std::regex needed(R"(\(NEEDED\)\s+Shared library: \[([^\]]+)\])");
  std::string out = r.out;
  int count = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), needed); it != std::sregex_iterator();
       ++it) {
    const std::string lib = (*it)[1];
    ++count;
    cr_expect(lib.rfind("libc.so", 0) == 0 || lib.rfind("libm.so", 0) == 0 ||
                  lib.rfind("ld-linux", 0) == 0 || lib.rfind("libasan", 0) == 0 ||
                  lib.rfind("libubsan", 0) == 0,
              "the guest library needs %s", lib.c_str());
  }
  cr_expect_gt(count, 0);
  cr_expect(r.out.find("SONAME") != std::string::npos &&
                r.out.find("[libdemo.so.1]") != std::string::npos,
            "soname is not libdemo.so.1:\n%s", r.out.c_str());
}

namespace {

// "name@version" of every function a shared library defines.
std::set<std::string> versioned_exports(const std::string &lib) {
  const ProcResult r = run_proc({"objdump", "-T", lib}, {}, 30000);
  cr_assert_eq(r.exit_code, 0, "objdump -T %s: %s", lib.c_str(), r.err.c_str());
  std::set<std::string> out;
  std::istringstream lines(r.out);
  std::string line;
  // "... DF .text  0000000000000042  OPENCL_1.0  clFinish"
  // Unversioned symbols have no version column (or "Base").
  const std::regex defined(R"(\sDF \.text\s+[0-9a-f]+\s+(?:(\S+)\s+)?(\S+)$)");
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_search(line, m, defined)) {
      const std::string version = m[1].matched && m[1] != "Base" ? std::string(m[1]) : "";
      out.insert(std::string(m[2]) + (version.empty() ? "" : "@" + version));
    }
  }
  return out;
}

} // namespace

Test(e2e_symbols, opencl_guest_library_matches_the_icd_loaders_exports) {
  std::set<std::string> real = versioned_exports(OPENCL_REAL_LIB);
  std::set<std::string> guest = versioned_exports(OPENCL_GUEST_LIB);
  cr_assert_gt(real.size(), 100u, "%s exports too little to compare", OPENCL_REAL_LIB);
  for (const std::string &s : real)
    cr_expect(guest.count(s), "the guest libOpenCL.so.1 lacks %s", s.c_str());
  for (const std::string &s : guest)
    cr_expect(real.count(s) || s.rfind("ava_zerocopy_", 0) == 0,
              "the guest libOpenCL.so.1 exports %s, which the ICD loader does not", s.c_str());
}

// CUDA runtime: exactly the toolkit's libcudart.so.13 exports, same version node.
Test(e2e_symbols, cudart_guest_library_matches_the_toolkits_exports) {
  if (access(CUDART_REAL_LIB, R_OK) != 0)
    cr_skip_test("no CUDA toolkit here (%s)", CUDART_REAL_LIB);
  // With the toolkit the build makes the guest library: its absence is a build failure.
  cr_assert(access(CUDART_GUEST_LIB, R_OK) == 0, "%s is missing (target ava_guest_cudart)",
            CUDART_GUEST_LIB);
  std::set<std::string> real = versioned_exports(CUDART_REAL_LIB);
  std::set<std::string> guest = versioned_exports(CUDART_GUEST_LIB);
  cr_assert_gt(real.size(), 300u);
  for (const std::string &s : real)
    cr_expect(guest.count(s), "the guest libcudart.so.13 lacks %s", s.c_str());
  for (const std::string &s : guest)
    cr_expect(real.count(s) || s.rfind("ava_zerocopy_", 0) == 0,
              "the guest libcudart.so.13 exports %s, which the toolkit's does not", s.c_str());
}

// CUDA driver: the stub libcuda.so's exports, but for the old ABI names
// cuda.h maps to newer ones (cuMemAlloc -> cuMemAlloc_v2), which cannot be
// defined next to cuda.h (specs/cuda/cuda_exports.h).
Test(e2e_symbols, cuda_guest_library_matches_the_driver_exports) {
  if (access(CUDA_STUB_LIB, R_OK) != 0)
    cr_skip_test("no CUDA toolkit here (%s)", CUDA_STUB_LIB);
  cr_assert(access(CUDA_GUEST_LIB, R_OK) == 0, "%s is missing (target ava_guest_cuda)",
            CUDA_GUEST_LIB);
  std::set<std::string> stub = versioned_exports(CUDA_STUB_LIB);
  std::set<std::string> guest = versioned_exports(CUDA_GUEST_LIB);
  cr_assert_gt(stub.size(), 400u);
  size_t missing = 0;
  for (const std::string &s : stub)
    missing += guest.count(s) == 0;
  for (const std::string &s : guest)
    cr_expect(stub.count(s) || s.rfind("ava_zerocopy_", 0) == 0,
              "the guest libcuda.so.1 exports %s, which the driver does not", s.c_str());
  cr_expect(guest.count("cuLaunchKernel") && guest.count("cuMemAlloc_v2") &&
                guest.count("cuGetProcAddress_v2"),
            "core driver entry points missing");
  cr_expect_leq(missing, 100u, "%zu driver exports missing from the guest library", missing);
}
