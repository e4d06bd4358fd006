// SPDX-License-Identifier: MIT
// Per-guest table of the device memory the API handed to that guest: ranges
// [start, start + size) added by spec code when an allocation (or a module
// global) is given out, removed when it is taken back. Every device pointer
// or range a guest sends is checked against it before the API sees it, so a
// guest can name only its own memory: never an address it made up, a range
// running past the end of its allocation, or another guest's memory.
// Ranges never overlap. Shared by a guest's shadow threads, hence locked.
// The C view for spec code is ava_w_ranges_* (worker/ava_worker_rt.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "worker/resource_ledger.hpp"

namespace ava {

class RangeTable {
public:
  struct Range {
    uint64_t start = 0;
    uint64_t size = 0;
    uint32_t kind = 0;     // the spec's classification (an allocation, a module global, ...)
    uint64_t owner = 0;    // the spec's: what takes the range with it (a device, a context, ...)
    ResourceCharge charge; // of the guest's quota, held while the range lives
  };

  enum class Added {
    kOk,
    kEmpty,   // size 0: it would name no byte
    kWraps,   // start + size passes the end of the address space
    kOverlap, // shares a byte with a range already there
    kFull,    // the table holds its maximum already
  };

  // Far above what programs hold at once; bounds worker memory if a guest
  // makes tiny allocations without end.
  static constexpr size_t kMaxRanges = size_t{1} << 22;

  explicit RangeTable(size_t max_ranges = kMaxRanges) : max_ranges_(max_ranges) {}

  // Throws std::bad_alloc.
  Added insert(const Range &range);
  // Drops every range sharing a byte with [start, start + size), then
  // inserts: for memory the API has just handed out, which no live range can
  // hold, so whatever overlaps it is stale (appended to *dropped if given).
  // Throws std::bad_alloc.
  Added replace(const Range &range, std::vector<Range> *dropped = nullptr);
  // Whether [start, start + size) lies inside one range; size 0 asks whether
  // the byte at start does.
  bool contains(uint64_t start, uint64_t size) const;
  // Removes the range that begins exactly at start if it has the given kind
  // (a pointer into the middle of an allocation frees nothing).
  bool remove(uint64_t start, uint32_t kind, Range *removed);
  // Removes every range of owner (appended to *removed if given); returns how many.
  size_t remove_owner(uint64_t owner, std::vector<Range> *removed = nullptr);
  size_t size() const;

private:
  // The range holding the byte at address, or end().
  std::map<uint64_t, Range>::const_iterator holding(uint64_t address) const;
  Added insert_locked(const Range &range, bool drop_overlapping, std::vector<Range> *dropped);
  void drop_overlapping_locked(uint64_t start, uint64_t end, std::vector<Range> *dropped);

  const size_t max_ranges_;
  mutable std::mutex mutex_;
  std::map<uint64_t, Range> by_start_;
};

} // namespace ava
