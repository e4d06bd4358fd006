// SPDX-License-Identifier: MIT
#include "worker/range_table.hpp"

#include <iterator>
#include <new>

#include "ava/wire.h"
#include "worker/connection.hpp"
#include "worker/wcall.hpp"

namespace ava {
namespace {

// The exclusive end of [start, start + size); false if it passes 2^64.
bool end_of(uint64_t start, uint64_t size, uint64_t *end) {
  return !__builtin_add_overflow(start, size, end);
}

} // namespace

std::map<uint64_t, RangeTable::Range>::const_iterator RangeTable::holding(uint64_t address) const {
  auto it = by_start_.upper_bound(address);
  if (it == by_start_.begin())
    return by_start_.end();
  --it;
  return address - it->second.start < it->second.size ? it : by_start_.end();
}

RangeTable::Added RangeTable::insert(const Range &range) {
  std::lock_guard lock(mutex_);
  return insert_locked(range, false);
}

RangeTable::Added RangeTable::replace(const Range &range) {
  std::lock_guard lock(mutex_);
  return insert_locked(range, true);
}

RangeTable::Added RangeTable::insert_locked(const Range &range, bool drop_overlapping) {
  uint64_t end = 0;
  if (range.size == 0)
    return Added::kEmpty;
  if (!end_of(range.start, range.size, &end))
    return Added::kWraps;
  if (drop_overlapping)
    drop_overlapping_locked(range.start, end);
  auto next = by_start_.lower_bound(range.start);
  if (next != by_start_.end() && next->first < end)
    return Added::kOverlap;
  if (next != by_start_.begin()) {
    const Range &before = std::prev(next)->second;
    if (range.start - before.start < before.size)
      return Added::kOverlap;
  }
  if (by_start_.size() >= max_ranges_)
    return Added::kFull;
  by_start_.emplace_hint(next, range.start, range);
  return Added::kOk;
}

void RangeTable::drop_overlapping_locked(uint64_t start, uint64_t end) {
  auto it = by_start_.lower_bound(start);
  if (it != by_start_.begin()) {
    auto before = std::prev(it);
    if (start - before->second.start < before->second.size)
      by_start_.erase(before);
  }
  while (it != by_start_.end() && it->first < end)
    it = by_start_.erase(it);
}

bool RangeTable::contains(uint64_t start, uint64_t size) const {
  uint64_t end = 0;
  if (!end_of(start, size, &end))
    return false;
  std::lock_guard lock(mutex_);
  auto it = holding(start);
  if (it == by_start_.end())
    return false;
  return end - it->second.start <= it->second.size;
}

bool RangeTable::remove(uint64_t start, uint32_t kind, Range *removed) {
  std::lock_guard lock(mutex_);
  auto it = by_start_.find(start);
  if (it == by_start_.end() || it->second.kind != kind)
    return false;
  if (removed != nullptr)
    *removed = it->second;
  by_start_.erase(it);
  return true;
}

size_t RangeTable::remove_owner(uint64_t owner) {
  std::lock_guard lock(mutex_);
  return std::erase_if(by_start_,
                       [owner](const auto &entry) { return entry.second.owner == owner; });
}

size_t RangeTable::size() const {
  std::lock_guard lock(mutex_);
  return by_start_.size();
}

} // namespace ava

namespace {

// The calling guest's table, or nullptr outside a call.
ava::RangeTable *current_ranges() {
  ava_wcall *w = ava::current_call();
  return w != nullptr ? &w->connection->ranges() : nullptr;
}

int added_status(ava::RangeTable::Added added) {
  switch (added) {
  case ava::RangeTable::Added::kOk:
    return AVA_OK;
  case ava::RangeTable::Added::kEmpty:
  case ava::RangeTable::Added::kWraps:
    return AVA_E_LENGTH;
  case ava::RangeTable::Added::kOverlap:
    return AVA_E_STATE;
  case ava::RangeTable::Added::kFull:
    return AVA_E_NOMEM;
  }
  return AVA_E_STATE;
}

int add(uint64_t start, uint64_t size, uint32_t kind, uint64_t owner, bool replace) {
  ava::RangeTable *table = current_ranges();
  if (table == nullptr)
    return AVA_E_STATE;
  const ava::RangeTable::Range range{start, size, kind, owner};
  try {
    return added_status(replace ? table->replace(range) : table->insert(range));
  } catch (const std::bad_alloc &) {
    return AVA_E_NOMEM;
  }
}

} // namespace

AVA_W_EXPORT int ava_w_ranges_add(uint64_t start, uint64_t size, uint32_t kind, uint64_t owner) {
  return add(start, size, kind, owner, false);
}

AVA_W_EXPORT int ava_w_ranges_replace(uint64_t start, uint64_t size, uint32_t kind,
                                      uint64_t owner) {
  return add(start, size, kind, owner, true);
}

AVA_W_EXPORT int ava_w_ranges_check(uint64_t start, uint64_t size) {
  ava::RangeTable *table = current_ranges();
  return table != nullptr && table->contains(start, size) ? 1 : 0;
}

AVA_W_EXPORT int ava_w_ranges_remove(uint64_t start, uint32_t kind, uint64_t *size,
                                     uint64_t *owner) {
  ava::RangeTable *table = current_ranges();
  ava::RangeTable::Range removed;
  if (table == nullptr || !table->remove(start, kind, &removed))
    return 0;
  if (size != nullptr)
    *size = removed.size;
  if (owner != nullptr)
    *owner = removed.owner;
  return 1;
}

AVA_W_EXPORT uint64_t ava_w_ranges_drop_owner(uint64_t owner) {
  ava::RangeTable *table = current_ranges();
  return table != nullptr ? table->remove_owner(owner) : 0;
}
