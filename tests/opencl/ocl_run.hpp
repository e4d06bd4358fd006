// SPDX-License-Identifier: MIT
// Running unmodified OpenCL programs natively and under `ava run`, and
// showing where two outputs part ways. Shared by tests/e2e/test_e2e_opencl.cpp
// and test_e2e_clinfo.cpp (which put tests/e2e on the include path).
#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_env.hpp"
#include "proc.hpp"

namespace ocl {

const char *const kChannels[] = {"unix", "tcp", "shm"};
constexpr int kTimeoutMs = 120000;

// Sanitizer settings for every child (they matter in the sanitizer build only):
// - LeakSanitizer reports what PoCL/LLVM keep allocated until exit, in native
//   runs of sanitized programs as well as in the sanitized worker and guest
//   library; none of it is ours to fix, so leak checks are off.
// - PoCL replaces the signal stack of the thread that first initializes it,
//   and ASan's own one then fails to unmap when that thread exits ("unable
//   to unmap", exit 1). In the worker that thread is a shadow thread, so ASan
//   keeps off the signal stack.
inline const char *kAsanOptions = "ASAN_OPTIONS=detect_leaks=0:use_sigaltstack=0";

inline std::vector<std::string> child_env() {
  std::vector<std::string> env = clean_env();
  env.push_back(kAsanOptions);
  return env;
}

inline ProcResult native(const std::vector<std::string> &argv,
                         const std::vector<std::string> &env = child_env()) {
  return run_proc(argv, env, kTimeoutMs);
}

// `ava run --channel <channel> -- argv...`
inline ProcResult remoted(const char *channel, const std::vector<std::string> &argv,
                          const std::vector<std::string> &env = child_env()) {
  std::vector<std::string> full = {AVA_BIN, "run", "--channel", channel, "--"};
  full.insert(full.end(), argv.begin(), argv.end());
  return run_proc(full, env, kTimeoutMs);
}

inline std::vector<std::string> split_lines(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    lines.push_back(line);
  return lines;
}

// The first differing lines of two outputs, numbered, diff style.
inline std::string line_diff(const std::string &expected, const std::string &got,
                             const char *expected_name, const char *got_name) {
  constexpr size_t kMaxShown = 12;
  const std::vector<std::string> a = split_lines(expected), b = split_lines(got);
  std::ostringstream out;
  out << "--- " << expected_name << " (" << a.size() << " lines)\n+++ " << got_name << " ("
      << b.size() << " lines)\n";
  size_t shown = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()) && shown < kMaxShown; ++i) {
    const bool has_a = i < a.size(), has_b = i < b.size();
    if (has_a && has_b && a[i] == b[i])
      continue;
    out << "@@ line " << i + 1 << "\n";
    if (has_a)
      out << "-" << a[i] << "\n";
    if (has_b)
      out << "+" << b[i] << "\n";
    ++shown;
  }
  if (shown == kMaxShown)
    out << "... (more differences)\n";
  return out.str();
}

// The OpenCL spec's pieces must exist: without them every remoted run fails,
// and that must read as a failure with a reason, not as a skipped test.
inline std::string missing_opencl_spec() {
  const std::string files[] = {std::string(AVA_GUEST_LIB_DIR) + "/libOpenCL.so.1",
                               std::string(AVA_PLUGIN_DIR) + "/libava_worker_opencl.so"};
  for (const std::string &f : files) {
    struct stat st {};
    if (stat(f.c_str(), &st) != 0)
      return f + " is missing (is the OpenCL spec built? target ava_guest_opencl)";
  }
  return {};
}

} // namespace ocl
