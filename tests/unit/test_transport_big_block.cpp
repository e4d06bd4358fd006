// SPDX-License-Identifier: MIT
// Large message and staging memory (transport/big_block.hpp): every size
// gives usable memory of at least that size, zeroed when asked, with large
// blocks on huge-page boundaries; MsgBuf keeps working across the threshold.
#include <criterion/criterion.h>

#include <cstdint>
#include <cstring>

#include "transport/big_block.hpp"
#include "transport/channel.hpp"

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

struct Case {
  uint64_t bytes;
  bool zeroed;
  uint64_t align; // 0: malloc's
};

constexpr Case kCases[] = {
    {0, false, 0},
    {1, true, 0},
    {4096, false, 0},
    {ava::kBigBlockMin - 1, true, 0},
    {ava::kBigBlockMin, true, 0},
    {ava::kBigBlockMin, false, 0},
    {ava::kBigBlockMin + 1, true, 0},
    {3 * kMiB + 5, false, 0},
    {64 * kMiB + 3, true, 0},
    // ava_guest_host_alloc's: 128-byte aligned, any size.
    {0, false, 128},
    {1, true, 128},
    {4097, true, 128},
    {ava::kBigBlockMin - 1, false, 4096},
    {ava::kBigBlockMin + 7, true, 128},
};

} // namespace

Test(big_block, sizes_around_the_threshold) {
  for (const Case &c : kCases) {
    auto *p = static_cast<uint8_t *>(ava::big_block_alloc(c.bytes, c.zeroed, c.align));
    cr_assert_not_null(p, "%llu bytes", static_cast<unsigned long long>(c.bytes));
    const auto addr = reinterpret_cast<uintptr_t>(p);
    cr_expect_eq(addr % (c.align > 8 ? c.align : 8), 0u, "%llu bytes aligned to %llu",
                 static_cast<unsigned long long>(c.bytes),
                 static_cast<unsigned long long>(c.align));
    if (c.bytes >= ava::kBigBlockMin)
      cr_expect_eq(addr % (2 * kMiB), 0u, "a large block starts on a 2 MiB boundary");
    if (c.zeroed) {
      bool all_zero = true;
      for (uint64_t i = 0; i < c.bytes; i += 4093)
        all_zero = all_zero && p[i] == 0;
      if (c.bytes > 0)
        all_zero = all_zero && p[c.bytes - 1] == 0;
      cr_expect(all_zero, "%llu zeroed bytes", static_cast<unsigned long long>(c.bytes));
    }
    // The whole size is writable (ASan and the MMU would object otherwise).
    if (c.bytes > 0)
      std::memset(p, 0xa5, c.bytes);
    ava::big_block_free(p, c.bytes);
  }
  ava::big_block_free(nullptr, 64 * kMiB);
}

Test(big_block, impossible_sizes_fail_cleanly) {
  cr_expect_null(ava::big_block_alloc(UINT64_MAX, false));
  cr_expect_null(ava::big_block_alloc(UINT64_MAX - kMiB, true));
  cr_expect_null(ava::big_block_alloc(64, false, 96), "an alignment that is no power of two");
  ava::MsgBuf buf;
  cr_expect_not(buf.reserve(UINT64_MAX));
  cr_expect_eq(buf.capacity(), 0u);
}

// A buffer that grows past the threshold and is trimmed back keeps its
// contents where they fit, and survives moves.
Test(big_block, msgbuf_grows_and_trims) {
  ava::MsgBuf buf;
  cr_assert(buf.reserve(4096));
  std::memset(buf.data(), 1, 4096);
  cr_assert(buf.reserve(16 * kMiB + 8));
  cr_expect_geq(buf.capacity(), 16 * kMiB + 8);
  std::memset(buf.data(), 2, 16 * kMiB + 8);
  buf.set_size(16 * kMiB + 8);
  ava::MsgBuf moved(std::move(buf));
  cr_expect_eq(buf.capacity(), 0u);
  cr_expect_eq(moved.size(), 16 * kMiB + 8);
  moved.trim(kMiB);
  cr_expect_eq(moved.capacity(), kMiB);
  cr_expect_eq(moved.size(), kMiB);
  cr_expect_eq(moved.data()[kMiB - 1], 2);
  moved.lend_pages();
  cr_expect_eq(moved.size(), 0u);
  cr_assert(moved.reserve(64 * kMiB));
  std::memset(moved.data(), 3, 64 * kMiB);
  moved.trim(0);
  cr_expect_eq(moved.capacity(), 0u);
}
