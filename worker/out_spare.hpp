// SPDX-License-Identifier: MIT
// A large, zeroed block a shadow thread keeps for the OUT buffer of its next
// call. A call's OUT-only buffer starts zeroed (bytes the API leaves alone
// must not carry stale worker memory to the guest), and a fresh block of
// memory costs a page fault and the kernel's zeroing per page: perf of a
// 512 MiB clEnqueueReadBuffer over unix had the worker spend three times as
// long faulting and zeroing as PoCL copying, and a fresh huge-page mapping
// can stall on compaction. A kept block is zeroed again only over the bytes
// its call used, after the reply is sent (while the guest copies the bytes
// out), and is taken without a fault.
//
// Thread-confined (one per shadow thread, so one guest thread), and never
// held through an idle second: ShadowThread releases it where it trims its
// receive buffer.
#pragma once

#include <cstdint>

#include "transport/big_block.hpp"

namespace ava {

class OutSpare {
public:
  // Blocks below this are malloc's (big_block_alloc); above the cap one
  // call's buffer is not worth keeping.
  static constexpr uint64_t kMin = kBigBlockMin;
  static constexpr uint64_t kMax = uint64_t{1} << 30;

  OutSpare() = default;
  ~OutSpare() { release(); }
  OutSpare(const OutSpare &) = delete;
  OutSpare &operator=(const OutSpare &) = delete;

  // The kept block when it holds bytes: all zero, *size the size it was
  // allocated with (for big_block_free). nullptr otherwise.
  void *take(uint64_t bytes, uint64_t *size);
  // A block of size bytes (from big_block_alloc, size >= kMin), zero but for
  // its first used bytes, that its call is done with: kept if it is larger
  // than the one kept now (the smaller is freed), zeroed over used first.
  void give(void *block, uint64_t size, uint64_t used);
  void release();
  uint64_t kept_bytes() const { return size_; }

private:
  void *block_ = nullptr;
  uint64_t size_ = 0;
};

} // namespace ava
