// SPDX-License-Identifier: MIT
// Running unmodified OpenCL programs natively and under `ava run`, and
// showing where two outputs part ways. Shared by tests/e2e/test_e2e_opencl.cpp
// and test_e2e_clinfo.cpp (which put tests/e2e on the include path).
#pragma once

#include <sys/stat.h>

#include <iterator>
#include <string>
#include <vector>

#include "e2e_env.hpp"
#include "proc.hpp"
#include "remoted.hpp"

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

// PoCL sizes its device's global memory from the memory free when it
// starts, so two runs a moment apart report different sizes while a build
// runs beside them; a fixed limit (in GiB) makes native and remoted runs
// comparable.
inline const char *kPoclMemoryLimit = "POCL_MEMORY_LIMIT=4";

inline std::vector<std::string> child_env() {
  std::vector<std::string> env = clean_env();
  env.push_back(kAsanOptions);
  env.push_back(kPoclMemoryLimit);
  return env;
}

inline ProcResult native(const std::vector<std::string> &argv,
                         const std::vector<std::string> &env = child_env()) {
  return run_proc(argv, env, kTimeoutMs);
}

// `ava run --channel <channel> -- argv...`
inline ProcResult run_remoted(const char *channel, const std::vector<std::string> &argv,
                              const std::vector<std::string> &env = child_env()) {
  std::vector<std::string> full = {AVA_BIN, "run", "--channel", channel, "--"};
  full.insert(full.end(), argv.begin(), argv.end());
  return run_proc(full, env, kTimeoutMs);
}

using remoted::line_diff;
using remoted::split_lines;

// clinfo's lines about the ICD loader: under ava the guest library stands in
// for the loader and implements no loader queries, so these are the only
// lines of clinfo allowed to differ: the "ICD loader properties" section (and
// the blank line before it), the loader lines of --raw, and clinfo's notes
// about the library's version.
inline bool is_loader_line(const std::vector<std::string> &lines, size_t i) {
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

// text without its ICD loader lines; those go to *removed if given.
inline std::string without_loader_lines(const std::string &text, std::string *removed = nullptr) {
  const std::vector<std::string> lines = split_lines(text);
  std::string kept;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!is_loader_line(lines, i))
      kept += lines[i] + "\n";
    else if (removed != nullptr)
      *removed += lines[i] + "\n";
  }
  return kept;
}

// An OpenCL program natively and under `ava run` on every channel, served
// by the opencl spec's worker.
inline remoted::Comparison comparison(const std::vector<std::string> &remoted_env = child_env()) {
  remoted::Comparison cmp;
  cmp.spec = "opencl";
  cmp.channels.assign(std::begin(kChannels), std::end(kChannels));
  cmp.native_env = child_env();
  cmp.remoted_env = remoted_env;
  cmp.timeout_ms = kTimeoutMs;
  return cmp;
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
