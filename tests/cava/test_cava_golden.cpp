// SPDX-License-Identifier: MIT
// cava's output for specs/demo is compared with tests/golden/demo: any
// change of the generated code must be deliberate (make goldens).
#include <criterion/criterion.h>

#include <cstdlib>
#include <string>

#include "cava_run.hpp"

namespace {

std::string make_tmp() {
  char tmpl[] = "/tmp/ava-golden-XXXXXX";
  const char *d = mkdtemp(tmpl);
  return d ? d : "";
}

} // namespace

Test(cava_golden, demo_spec_matches_goldens) {
  const std::string src = AVA_SOURCE_DIR;
  const std::string out = make_tmp();
  cr_assert(!out.empty());
  const CavaResult r =
      run_cava("-I" + src + "/specs/demo/lib --name-as specs/demo/demo.spec.c -o " + out + " " +
               src + "/specs/demo/demo.spec.c");
  cr_assert_eq(r.status, 0, "cava failed:\n%s", r.output.c_str());
  for (const char *f : {"demo_wire.h", "demo_guest.c", "demo_guest.map", "demo_worker.c"}) {
    const std::string got = read_file(out + "/" + f);
    const std::string want = read_file(src + "/tests/golden/demo/" + f);
    cr_assert(!want.empty(), "missing golden file tests/golden/demo/%s", f);
    if (got != want) {
      const std::string diff =
          "diff -u " + src + "/tests/golden/demo/" + f + " " + out + "/" + f + " | head -n 60";
      [[maybe_unused]] int rc = std::system(diff.c_str());
      cr_assert_fail("%s differs from tests/golden/demo/%s (run `make goldens` if intended)", f, f);
    }
  }
  const std::string rm = "rm -rf " + out;
  [[maybe_unused]] int rc = std::system(rm.c_str());
}

Test(cava_golden, output_is_deterministic) {
  const std::string src = AVA_SOURCE_DIR;
  const std::string a = make_tmp();
  const std::string b = make_tmp();
  const std::string args = "-I" + src + "/specs/demo/lib --name-as specs/demo/demo.spec.c ";
  cr_assert_eq(run_cava(args + "-o " + a + " " + src + "/specs/demo/demo.spec.c").status, 0);
  cr_assert_eq(run_cava(args + "-o " + b + " " + src + "/specs/demo/demo.spec.c").status, 0);
  for (const char *f : {"demo_wire.h", "demo_guest.c", "demo_guest.map", "demo_worker.c"})
    cr_assert(read_file(a + "/" + f) == read_file(b + "/" + f), "%s differs between runs", f);
  const std::string rm = "rm -rf " + a + " " + b;
  [[maybe_unused]] int rc = std::system(rm.c_str());
}
