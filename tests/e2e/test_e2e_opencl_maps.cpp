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
  const char *env[4]; // extra variables for the remoted run; nullptr ends
};

const MapCase kCases[] = {
    {"in the heap", "shm", {"MAP_EXPECT_SHARED_HEAP=yes", nullptr}},
    {"blocks come back", "shm", {"MAP_EXPECT_SHARED_HEAP=yes", "AVA_SHM_HEAP_MB=16", nullptr}},
    {"heap maps off",
     "shm",
     {"MAP_EXPECT_SHARED_HEAP=no", "AVA_MAP_IN_HEAP=0", "AVA_BUFFERS_IN_HEAP=0"}},
    {"no heap", "unix", {"MAP_EXPECT_SHARED_HEAP=no", nullptr}},
    {"a small heap", "shm", {"AVA_SHM_HEAP_MB=4", nullptr}},
};

// Runs program natively, then remoted in each case: the same output.
template <size_t N>
void compare_with_native(const std::string &program, const MapCase (&cases)[N]) {
  remoted::Comparison cmp = ocl::comparison();
  const ProcResult native = run_proc({program}, cmp.native_env, cmp.timeout_ms);
  cr_assert_eq(native.exit_code, 0, "native: %s", native.err.c_str());
  for (const MapCase &c : cases) {
    cmp.remoted_env = ocl::child_env();
    for (const char *const *e = c.env; *e != nullptr; ++e)
      cmp.remoted_env.push_back(*e);
    const remoted::RemotedRun r = remoted::run_remoted(AVA_BIN, c.channel, {program}, cmp);
    for (const std::string &d : remoted::differences(native, r, cmp))
      cr_expect_fail("[%s, %s] %s", c.name, c.channel, d.c_str());
  }
}

} // namespace

Test(e2e_opencl_maps, large_maps_match_native_in_and_out_of_the_heap, .timeout = 900) {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
  compare_with_native(kProgram, kCases);
}

// Buffers in the heap (specs/opencl/opencl_heap.spec.inc): on shm the large
// buffers of tests/opencl/programs/heap_buffers.c are created over blocks of
// the heap, so that their maps are the API's own, in the heap; with a 16 MiB
// heap (buffers may take three quarters) only two of its 6 MiB buffers fit at
// once, so the twelve made one after another fit only if each released
// buffer's block came back. With AVA_BUFFERS_IN_HEAP=0 and on unix they are
// ordinary buffers. The output must be the native one in each case (test_e2e_opencl
// compares it over unix, tcp and shm as well).
Test(e2e_opencl_maps, heap_buffers_match_native_and_live_in_the_heap, .timeout = 900) {
  const std::string missing = ocl::missing_opencl_spec();
  cr_assert(missing.empty(), "%s", missing.c_str());
  const std::string program = std::string(OCL_DIR) + "/ocl_heap_buffers";
  const MapCase cases[] = {
      {"in the heap", "shm", {"HEAP_BUFFERS_EXPECT=yes", nullptr}},
      {"blocks come back", "shm", {"HEAP_BUFFERS_EXPECT=yes", "AVA_SHM_HEAP_MB=16", nullptr}},
      {"heap buffers off",
       "shm",
       {"HEAP_BUFFERS_EXPECT=no", "AVA_BUFFERS_IN_HEAP=0", "AVA_MAP_IN_HEAP=0"}},
      {"no heap", "unix", {"HEAP_BUFFERS_EXPECT=no", nullptr}},
  };
  compare_with_native(program, cases);
}
