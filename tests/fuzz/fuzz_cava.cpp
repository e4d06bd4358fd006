// SPDX-License-Identifier: MIT
// cava on mutated specs: the input is written to a spec file, parsed with
// libclang by the frontend, validated and, if valid, handed to every backend.
// Diagnostics (and libclang's errors) are the expected answer to a broken
// spec; a crash, a sanitizer report or a leak is a bug. The include path is
// cava's own plus that of every spec in the tree, so that mutations of the
// real specs (the seeds) still find their headers and spec parts.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cava/backends/backends.hpp"
#include "cava/diag.hpp"
#include "cava/frontend/parser.hpp"
#include "cava/ir/validate.hpp"

namespace {

std::string g_spec_path;

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  char dir[] = "/tmp/ava-fuzz-cava-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    std::perror("fuzz_cava: mkdtemp");
    std::exit(1);
  }
  g_spec_path = std::string(dir) + "/fuzz.spec.c";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::FILE *f = std::fopen(g_spec_path.c_str(), "wb");
  if (f == nullptr)
    return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);

  cava::ParseOptions options;
  options.spec_path = g_spec_path;
  options.shown_name = "fuzz.spec.c";
  options.clang_args = {"-I" AVA_SOURCE_DIR "/include",
                        "-I" AVA_SOURCE_DIR "/specs/demo",
                        "-I" AVA_SOURCE_DIR "/specs/demo/lib",
                        "-I" AVA_SOURCE_DIR "/specs/opencl",
                        "-I" AVA_SOURCE_DIR "/specs/cudart",
                        "-I" AVA_SOURCE_DIR "/specs/cudart/fatbin",
                        "-I" AVA_SOURCE_DIR "/specs/cuda",
                        "-I" AVA_SOURCE_DIR "/tests/wtest",
                        "-I/usr/local/cuda/include"};
  cava::Diagnostics diag;
  cava::Spec spec;
  if (!cava::parse_spec(options, diag, &spec) || !cava::validate_spec(spec, diag))
    return 0;
  uint64_t hash = 0;
  cava::generate_wire_header(spec, &hash);
  cava::generate_guestlib(spec, "fuzz_guest.c");
  cava::generate_version_script(spec);
  cava::generate_worker(spec, "fuzz_worker.c");
  cava::generate_kernel_header(spec);
  cava::generate_kernel_source(spec, "fuzz_kern.c");
  cava::generate_kbuild(spec, {}, {});
  cava::generate_command_table(spec);
  return 0;
}
