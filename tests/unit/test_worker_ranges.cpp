// SPDX-License-Identifier: MIT
// The per-guest table of device memory (worker/range_table.hpp) on its own,
// and its C view for spec code (ava_w_ranges_*), which acts on the table of
// the guest whose call is being served.
#include <criterion/criterion.h>

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "ava/wire.h"
#include "transport/channel.hpp"
#include "worker/ava_worker_rt.h"
#include "worker/connection.hpp"
#include "worker/server.hpp"
#include "worker/wcall.hpp"

#include "served_call.hpp"

using ava::RangeTable;
using Added = RangeTable::Added;

namespace {

constexpr uint32_t kAlloc = 1;
constexpr uint32_t kGlobal = 2;

RangeTable::Range range(uint64_t start, uint64_t size, uint32_t kind = kAlloc, uint64_t owner = 0) {
  return RangeTable::Range{start, size, kind, owner, {}};
}

} // namespace

Test(worker_ranges, lookups_inside_one_range) {
  RangeTable t;
  cr_assert_eq(t.insert(range(0x1000, 0x100)), Added::kOk);
  cr_expect(t.contains(0x1000, 0x100), "the whole allocation");
  cr_expect(t.contains(0x1000, 1), "its first byte");
  cr_expect(t.contains(0x1080, 0x80), "from the middle to the end");
  cr_expect(t.contains(0x10ff, 1), "its last byte");
  cr_expect(t.contains(0x1040, 0), "size 0 asks for the byte at start");
  cr_expect_not(t.contains(0x1080, 0x81), "one byte past the end");
  cr_expect_not(t.contains(0x1000, 0x101), "from the start, one byte too many");
  cr_expect_not(t.contains(0x0fff, 2), "starting one byte before it");
  cr_expect_not(t.contains(0x1100, 1), "the byte after it");
  cr_expect_not(t.contains(0x1100, 0), "size 0 at its end");
  cr_expect_not(t.contains(0x0800, 0x1000), "covering it and more");
  cr_expect_not(t.contains(0x1080, UINT64_MAX), "a length that wraps the address space");
  cr_expect_not(t.contains(0, 0x10), "an address nobody was given");
  cr_expect_not(t.contains(UINT64_MAX, 1), "the last byte of the address space");
}

Test(worker_ranges, remove_needs_the_start_and_the_kind) {
  RangeTable t;
  cr_assert_eq(t.insert(range(0x1000, 0x100, kAlloc, 7)), Added::kOk);
  RangeTable::Range got;
  cr_expect_not(t.remove(0x1080, kAlloc, &got), "a pointer into the middle frees nothing");
  cr_expect_not(t.remove(0x1000, kGlobal, &got), "another kind frees nothing");
  cr_expect_not(t.remove(0x2000, kAlloc, &got), "an unknown pointer frees nothing");
  cr_expect(t.contains(0x1000, 0x100), "still there after the refused removals");
  cr_assert(t.remove(0x1000, kAlloc, &got));
  cr_expect_eq(got.start, 0x1000u);
  cr_expect_eq(got.size, 0x100u);
  cr_expect_eq(got.owner, 7u);
  cr_expect_not(t.contains(0x1000, 1), "gone after the removal");
  cr_expect_not(t.remove(0x1000, kAlloc, &got), "a second removal finds nothing");
  cr_expect_eq(t.size(), 0u);
}

Test(worker_ranges, overlaps_are_refused_at_insert) {
  RangeTable t;
  cr_assert_eq(t.insert(range(0x1000, 0x100)), Added::kOk);
  cr_expect_eq(t.insert(range(0x1000, 0x100)), Added::kOverlap, "the same range again");
  cr_expect_eq(t.insert(range(0x1000, 1)), Added::kOverlap, "its first byte");
  cr_expect_eq(t.insert(range(0x10ff, 0x10)), Added::kOverlap, "from its last byte on");
  cr_expect_eq(t.insert(range(0x0f00, 0x101)), Added::kOverlap, "ending on its first byte");
  cr_expect_eq(t.insert(range(0x0f00, 0x300)), Added::kOverlap, "covering it");
  cr_expect_eq(t.insert(range(0x1040, 0x10)), Added::kOverlap, "inside it");
  cr_expect_eq(t.size(), 1u);
  cr_expect_eq(t.insert(range(0x0f00, 0x100)), Added::kOk, "ending right before it");
  cr_expect_eq(t.insert(range(0x1100, 0x100)), Added::kOk, "starting right after it");
  cr_expect_eq(t.size(), 3u);
  // Neighbours are separate allocations: a range across two is no one's.
  cr_expect_not(t.contains(0x10f0, 0x20), "across two neighbouring ranges");
  cr_expect(t.contains(0x1100, 0x100));
}

Test(worker_ranges, empty_and_wrapping_ranges_are_refused) {
  RangeTable t;
  cr_expect_eq(t.insert(range(0x1000, 0)), Added::kEmpty);
  cr_expect_eq(t.insert(range(UINT64_MAX - 0xf, 0x10)), Added::kWraps, "ends at 2^64");
  cr_expect_eq(t.insert(range(UINT64_MAX, UINT64_MAX)), Added::kWraps);
  cr_expect_eq(t.replace(range(0x1000, 0)), Added::kEmpty);
  cr_expect_eq(t.replace(range(UINT64_MAX, 2)), Added::kWraps);
  cr_expect_eq(t.size(), 0u);
  cr_assert_eq(t.insert(range(UINT64_MAX - 0x1f, 0x10)), Added::kOk, "near the top");
  cr_expect(t.contains(UINT64_MAX - 0x1f, 0x10));
  cr_expect_not(t.contains(UINT64_MAX - 0x1f, 0x20));
}

Test(worker_ranges, many_ranges) {
  RangeTable t;
  constexpr uint64_t kN = 20000, kStride = 0x1000, kSize = 0x800, kBase = 0x7f0000000000;
  // Inserted out of order, as allocators hand memory out.
  for (uint64_t i = 0; i < kN; ++i) {
    const uint64_t j = (i * 7919) % kN;
    cr_assert_eq(t.insert(range(kBase + j * kStride, kSize, kAlloc, j % 3)), Added::kOk,
                 "range %llu", (unsigned long long)j);
  }
  cr_expect_eq(t.size(), kN);
  for (uint64_t j = 0; j < kN; ++j) {
    const uint64_t at = kBase + j * kStride;
    cr_assert(t.contains(at + 0x100, kSize - 0x100), "middle of range %llu", (unsigned long long)j);
    cr_assert_not(t.contains(at + kSize, 1), "gap after range %llu", (unsigned long long)j);
    cr_assert_not(t.contains(at + 0x100, kSize), "past the end of range %llu",
                  (unsigned long long)j);
  }
  for (uint64_t j = 1; j < kN; j += 2)
    cr_assert(t.remove(kBase + j * kStride, kAlloc, nullptr));
  cr_expect_eq(t.size(), kN / 2);
  for (uint64_t j = 0; j < kN; ++j)
    cr_assert_eq(t.contains(kBase + j * kStride, kSize), j % 2 == 0, "range %llu",
                 (unsigned long long)j);
}

Test(worker_ranges, a_full_table_refuses_more) {
  RangeTable t(3);
  for (uint64_t i = 0; i < 3; ++i)
    cr_assert_eq(t.insert(range(0x1000 * (i + 1), 0x10)), Added::kOk);
  cr_expect_eq(t.insert(range(0x9000, 0x10)), Added::kFull);
  cr_expect(t.remove(0x1000, kAlloc, nullptr));
  cr_expect_eq(t.insert(range(0x9000, 0x10)), Added::kOk, "room again after a removal");
}

// Memory the API just handed out cannot be live in the table: what overlaps
// it was freed behind the table's back and goes.
Test(worker_ranges, replace_drops_what_overlaps) {
  RangeTable t;
  cr_assert_eq(t.insert(range(0x1000, 0x100)), Added::kOk);
  cr_assert_eq(t.insert(range(0x1100, 0x100)), Added::kOk);
  cr_assert_eq(t.insert(range(0x3000, 0x100)), Added::kOk);
  cr_expect_eq(t.replace(range(0x1080, 0x100, kGlobal, 5)), Added::kOk);
  cr_expect_eq(t.size(), 2u, "the two it touched are gone, the other stays");
  cr_expect_not(t.contains(0x1000, 1));
  cr_expect_not(t.contains(0x1180, 1));
  cr_expect(t.contains(0x1080, 0x100));
  cr_expect(t.contains(0x3000, 0x100));
  RangeTable::Range got;
  cr_expect(t.remove(0x1080, kGlobal, &got));
  cr_expect_eq(got.owner, 5u);
}

Test(worker_ranges, remove_owner_takes_only_its_ranges) {
  RangeTable t;
  for (uint64_t i = 0; i < 10; ++i)
    cr_assert_eq(t.insert(range(0x1000 * (i + 1), 0x100, kAlloc, i % 2)), Added::kOk);
  cr_expect_eq(t.remove_owner(1), 5u);
  cr_expect_eq(t.remove_owner(1), 0u);
  cr_expect_eq(t.remove_owner(42), 0u);
  for (uint64_t i = 0; i < 10; ++i)
    cr_expect_eq(t.contains(0x1000 * (i + 1), 0x100), i % 2 == 0, "range %llu",
                 (unsigned long long)i);
}

// A guest's shadow threads share its table.
Test(worker_ranges, threads_share_one_table) {
  RangeTable t;
  constexpr int kThreads = 4, kPerThread = 2000;
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&t, th] {
      for (int i = 0; i < kPerThread; ++i) {
        const uint64_t at = 0x100000ull * (th + 1) + 0x40ull * i;
        if (t.insert(range(at, 0x20)) != Added::kOk || !t.contains(at + 0x10, 0x10))
          return;
        if (i % 2 == 1 && !t.remove(at, kAlloc, nullptr))
          return;
      }
    });
  }
  for (auto &th : threads)
    th.join();
  cr_expect_eq(t.size(), size_t{kThreads} * kPerThread / 2);
}

namespace {
using Guest = ava::testing::ServedCall;
} // namespace

Test(worker_ranges, spec_code_reaches_the_calling_guests_table) {
  Guest a, b;
  {
    ava::CurrentCall in_a(a.call.get());
    cr_expect_eq(ava_w_ranges_add(0x1000, 0x100, kAlloc, 3), AVA_OK);
    cr_expect_eq(ava_w_ranges_add(0x1080, 0x10, kAlloc, 3), AVA_E_STATE, "an overlap");
    cr_expect_eq(ava_w_ranges_add(0x2000, 0, kAlloc, 3), AVA_E_LENGTH, "an empty range");
    cr_expect_eq(ava_w_ranges_replace(0x1080, 0x100, kGlobal, 4), AVA_OK);
    cr_expect_eq(ava_w_ranges_check(0x1080, 0x100), 1);
    cr_expect_eq(ava_w_ranges_check(0x1000, 1), 0, "replaced");
    cr_expect_eq(ava_w_ranges_add(0x4000, 0x100, kAlloc, 3), AVA_OK);
  }
  {
    ava::CurrentCall in_b(b.call.get());
    cr_expect_eq(ava_w_ranges_check(0x1080, 0x100), 0, "another guest's memory");
    cr_expect_eq(ava_w_ranges_remove(0x4000, kAlloc, nullptr, nullptr), 0,
                 "another guest's allocation frees nothing");
    cr_expect_eq(ava_w_ranges_drop_owner(3), 0u);
  }
  cr_expect_eq(ava_w_ranges_check(0x1080, 0x100), 0, "outside a call");
  cr_expect_eq(ava_w_ranges_add(0x8000, 0x10, kAlloc, 3), AVA_E_STATE, "outside a call");
  cr_expect_eq(ava_w_ranges_remove(0x4000, kAlloc, nullptr, nullptr), 0, "outside a call");
  cr_expect_eq(a.connection->ranges().size(), 2u);
  cr_expect_eq(b.connection->ranges().size(), 0u);
  {
    ava::CurrentCall in_a(a.call.get());
    uint64_t size = 0, owner = 0;
    cr_expect_eq(ava_w_ranges_remove(0x4000, kAlloc, &size, &owner), 1);
    cr_expect_eq(size, 0x100u);
    cr_expect_eq(owner, 3u);
    cr_expect_eq(ava_w_ranges_drop_owner(4), 1u);
    cr_expect_eq(ava_w_ranges_check(0x1080, 1), 0);
  }
}
