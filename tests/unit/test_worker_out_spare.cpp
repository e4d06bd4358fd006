// SPDX-License-Identifier: MIT
// The zeroed block a shadow thread keeps for large OUT-only buffers
// (worker/out_spare.hpp): what it keeps and hands out, that what it hands
// out is zero again over the bytes the last call used, and, through a
// worker serving a raw guest, that bytes the API left alone in an OUT buffer
// reach the guest as zeros when the block held a previous call's bytes.
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <cstring>
#include <vector>

#include "tests/wtest/wtest.h"
#include "tests/wtest/wtest_hooks.h"
#include "transport/big_block.hpp"
#include "worker/out_spare.hpp"
#include "worker/testing/fake_guest.hpp"

using namespace ava;
using namespace ava::testing;

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// A big block with its first dirty bytes set to 0x5a, the rest zero.
void *dirty_block(uint64_t size, uint64_t dirty) {
  auto *block = static_cast<uint8_t *>(big_block_alloc(size, true));
  cr_assert_not_null(block);
  std::memset(block, 0x5a, dirty);
  return block;
}

bool all_zero(const void *block, uint64_t size) {
  const auto *p = static_cast<const uint8_t *>(block);
  for (uint64_t i = 0; i < size; ++i)
    if (p[i] != 0)
      return false;
  return true;
}

// Blocks given in turn (MiB), then one take: which block (its index in
// gives, -1 none) it must return.
struct Case {
  char name[48];
  uint64_t gives[3];
  uint64_t take;
  int expect;
};

} // namespace

ParameterizedTestParameters(out_spare, keeps_the_largest_block) {
  static Case cases[] = {
      {"nothing kept", {0, 0, 0}, 4, -1},
      {"one block, smaller request", {8, 0, 0}, 4, 0},
      {"one block, same size", {8, 0, 0}, 8, 0},
      {"one block, larger request", {8, 0, 0}, 9, -1},
      {"a larger block replaces", {4, 8, 0}, 4, 1},
      {"a smaller block does not", {8, 4, 0}, 4, 0},
      {"below the minimum is not kept", {1, 0, 0}, 1, -1},
  };
  return cr_make_param_array(Case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(Case *c, out_spare, keeps_the_largest_block) {
  OutSpare spare;
  std::vector<void *> given;
  for (uint64_t mib : c->gives) {
    if (mib == 0)
      break;
    void *block = dirty_block(mib * kMiB, mib * kMiB / 2);
    given.push_back(block);
    spare.give(block, mib * kMiB, mib * kMiB / 2);
  }
  uint64_t size = 0;
  void *got = spare.take(c->take * kMiB, &size);
  if (c->expect < 0) {
    cr_expect_null(got, "%s", c->name);
    return;
  }
  cr_assert_eq(got, given[static_cast<size_t>(c->expect)], "%s", c->name);
  cr_expect_eq(size, c->gives[c->expect] * kMiB, "%s", c->name);
  cr_expect(all_zero(got, size), "%s: the kept block is not zero", c->name);
  cr_expect_eq(spare.kept_bytes(), 0u, "%s: taken, yet still kept", c->name);
  big_block_free(got, size);
}

Test(out_spare, release_frees_and_forgets) {
  OutSpare spare;
  spare.give(dirty_block(4 * kMiB, kMiB), 4 * kMiB, kMiB);
  cr_expect_eq(spare.kept_bytes(), 4 * kMiB);
  spare.release();
  cr_expect_eq(spare.kept_bytes(), 0u);
  uint64_t size = 0;
  cr_expect_null(spare.take(kMiB, &size));
}

// wt_echo writes min(in_size, out_size) bytes of out. A 4 MiB echo fills
// the block; the next call's 4 MiB OUT buffer gets that block back, and
// the API writes one byte of it: the other bytes must reach the guest as
// zeros, as they would from a fresh block.
Test(out_spare, bytes_the_api_leaves_alone_are_zero, .timeout = 60) {
  WorkerHarness harness;
  harness.plugins().add(ava_worker_spec_export());
  std::unique_ptr<FakeGuest> guest = harness.connect();
  cr_assert(guest != nullptr);
  cr_assert_eq(guest->hello(), AVA_OK);
  const uint64_t obj = guest->create_obj(8);
  cr_assert_neq(obj, 0u);
  const uint64_t size = 4 * kMiB;
  const std::vector<uint8_t> full(size, 0xa7);
  for (uint64_t in_size : {size, uint64_t{1}, size, uint64_t{0}}) {
    Payload p;
    ava_wtest_wt_echo_call e{.obj = obj,
                             .in = p.add(full.data(), in_size),
                             .in_size = in_size,
                             .out = Payload::out(size),
                             .out_size = size};
    Received reply;
    cr_assert_eq(guest->call(AVA_WTEST_FN_WT_ECHO, e, &reply, p), AVA_OK);
    auto er = reply.reply<ava_wtest_wt_echo_reply>();
    cr_assert_eq(er.ret, WT_OK);
    const std::vector<uint8_t> got = reply.bytes(er.out);
    cr_assert_eq(got.size(), size);
    std::vector<uint8_t> want(size, 0);
    std::memset(want.data(), 0xa7, in_size);
    cr_expect(got == want, "echo of %lu bytes into %lu: the rest is not zero",
              (unsigned long)in_size, (unsigned long)size);
  }
}
