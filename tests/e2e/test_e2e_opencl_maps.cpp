// SPDX-License-Identifier: MIT
// Maps without copies on the guest's side (issue 15): on a channel with a
// shared heap a large blocking map's memory is a block of the heap, which
// the worker fills in place and, at the unmap, reads the program's writes
// from (the block is lent until the worker is done with it, then goes back).
// tests/opencl/programs/map.c maps 4 MiB and 2 MiB at odd offsets, with
// overlapping READ and WRITE maps, WRITE_INVALIDATE_REGION, eight maps at
// once for 24 rounds (so blocks must come back and be reused), and a buffer
// released while mapped; its output must be the native one in each case:
// - shm: the large mappings must lie in the heap (the program checks
//   /proc/self/maps for the ava-shm memfd, MAP_EXPECT_SHARED_HEAP=yes),
//   with the default heap and with a 16 MiB one, where three rounds of maps
//   fit in the three quarters that mappings may take but four do not: had the
//   worker's END not given each unmapped block back, later rounds would
//   fall out of the heap;
// - shm with AVA_MAP_IN_HEAP=0, and unix (no heap): they must not;
// - shm with a 4 MiB heap: some mappings fit in the three quarters a
//   mapping may take and some do not, so both kinds are live at once.
#include <criterion/criterion.h>

#include <string>

#include "ocl_run.hpp"

namespace {

const std::string kProgram = std::string(OCL_DIR) + "/ocl_map";

struct MapCase {
  const char *name;
  const char *channel;
  const char *env[3]; // extra variables for the remoted run; nullptr ends
};

const MapCase kCases[] = {
    {"in the heap", "shm", {"MAP_EXPECT_SHARED_HEAP=yes", nullptr}},
    {"blocks come back", "shm", {"MAP_EXPECT_SHARED_HEAP=yes", "AVA_SHM_HEAP_MB=16", nullptr}},
    {"heap maps off", "shm", {"MAP_EXPECT_SHARED_HEAP=no", "AVA_MAP_IN_HEAP=0", nullptr}},
    {"no heap", "unix", {"MAP_EXPECT_SHARED_HEAP=no", nullptr}},
    {"a small heap", "shm", {"AVA_SHM_HEAP_MB=4", nullptr}},
};

} // namespace

Test(e2e_opencl_maps, large_maps_match_native_in_and_out_of_the_heap, .timeout = 900) {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
  remoted::Comparison cmp = ocl::comparison();
  const ProcResult native = run_proc({kProgram}, cmp.native_env, cmp.timeout_ms);
  cr_assert_eq(native.exit_code, 0, "native: %s", native.err.c_str());
  for (const MapCase &c : kCases) {
    cmp.remoted_env = ocl::child_env();
    for (const char *const *e = c.env; *e != nullptr; ++e)
      cmp.remoted_env.push_back(*e);
    const remoted::RemotedRun r = remoted::run_remoted(AVA_BIN, c.channel, {kProgram}, cmp);
    for (const std::string &d : remoted::differences(native, r, cmp))
      cr_expect_fail("[%s, %s] %s", c.name, c.channel, d.c_str());
  }
}
