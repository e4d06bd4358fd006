// SPDX-License-Identifier: MIT
// cava's output for each spec is compared with tests/golden/<spec>: any
// change of the generated code must be deliberate (make goldens).
#include <criterion/criterion.h>

#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "cava_run.hpp"

namespace {

std::string make_tmp() {
  char tmpl[] = "/tmp/ava-golden-XXXXXX";
  const char *d = mkdtemp(tmpl);
  return d ? d : "";
}

struct GoldenSpec {
  const char *name;    // spec id: tests/golden/<name>/<name>_*.{h,c,map} and Kbuild
  const char *spec;    // relative to the source tree
  const char *include; // -I options (relative to the source tree unless absolute)
};

const GoldenSpec kGoldenSpecs[] = {
    {"demo", "specs/demo/demo.spec.c", "specs/demo/lib"},
    {"opencl", "specs/opencl/opencl.spec.c", "specs/opencl"},
    {"cudart", "specs/cudart/cudart.spec.c",
     "specs/cudart specs/cudart/fatbin /usr/local/cuda/include"},
    {"cuda", "specs/cuda/cuda.spec.c", "specs/cuda specs/cudart/fatbin /usr/local/cuda/include"},
};

std::string include_flags(const std::string &src, const char *dirs) {
  std::string out;
  std::istringstream in(dirs);
  std::string dir;
  while (in >> dir)
    out += " -I" + (dir[0] == '/' ? dir : src + "/" + dir);
  return out;
}

void check_goldens(const GoldenSpec &g) {
  const std::string src = AVA_SOURCE_DIR;
  const std::string out = make_tmp();
  cr_assert(!out.empty());
  const CavaResult r = run_cava(include_flags(src, g.include) + " --name-as " + g.spec + " -o " +
                                out + " " + src + "/" + g.spec);
  cr_assert_eq(r.status, 0, "cava failed on %s:\n%s", g.spec, r.output.c_str());
  const std::string name = g.name;
  for (const std::string &f :
       {name + "_wire.h", name + "_guest.c", name + "_guest.map", name + "_worker.c",
        name + "_kern.h", name + "_kern.c", name + "_cmds.h", std::string("Kbuild")}) {
    const std::string golden = src + "/tests/golden/" + name + "/" + f;
    const std::string got = read_file(out + "/" + f);
    const std::string want = read_file(golden);
    cr_assert(!want.empty(), "missing golden file %s", golden.c_str());
    if (got != want) {
      const std::string diff = "diff -u " + golden + " " + out + "/" + f + " | head -n 60";
      [[maybe_unused]] int rc = std::system(diff.c_str());
      cr_assert_fail("%s differs from %s (run `make goldens` if intended)", f.c_str(),
                     golden.c_str());
    }
  }
  const std::string rm = "rm -rf " + out;
  [[maybe_unused]] int rc = std::system(rm.c_str());
}

} // namespace

Test(cava_golden, demo_spec_matches_goldens) {
  check_goldens(kGoldenSpecs[0]);
}

Test(cava_golden, opencl_spec_matches_goldens) {
  check_goldens(kGoldenSpecs[1]);
}

Test(cava_golden, cudart_spec_matches_goldens) {
  if (access("/usr/local/cuda/include/cuda_runtime_api.h", R_OK) != 0)
    cr_skip_test("no CUDA toolkit at /usr/local/cuda");
  check_goldens(kGoldenSpecs[2]);
}

Test(cava_golden, cuda_spec_matches_goldens) {
  if (access("/usr/local/cuda/include/cuda.h", R_OK) != 0)
    cr_skip_test("no CUDA toolkit at /usr/local/cuda");
  check_goldens(kGoldenSpecs[3]);
}

Test(cava_golden, output_is_deterministic) {
  const std::string src = AVA_SOURCE_DIR;
  const std::string a = make_tmp();
  const std::string b = make_tmp();
  const std::string args = "-I" + src + "/specs/demo/lib --name-as specs/demo/demo.spec.c ";
  cr_assert_eq(run_cava(args + "-o " + a + " " + src + "/specs/demo/demo.spec.c").status, 0);
  cr_assert_eq(run_cava(args + "-o " + b + " " + src + "/specs/demo/demo.spec.c").status, 0);
  for (const char *f : {"demo_wire.h", "demo_guest.c", "demo_guest.map", "demo_worker.c",
                        "demo_kern.h", "demo_kern.c", "demo_cmds.h", "Kbuild"})
    cr_assert(read_file(a + "/" + f) == read_file(b + "/" + f), "%s differs between runs", f);
  const std::string rm = "rm -rf " + a + " " + b;
  [[maybe_unused]] int rc = std::system(rm.c_str());
}
