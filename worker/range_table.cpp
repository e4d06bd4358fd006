// SPDX-License-Identifier: MIT
#include "worker/range_table.hpp"

#include <iterator>
#include <new>
#include <string>
#include <vector>

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
  return insert_locked(range, false, nullptr);
}

RangeTable::Added RangeTable::replace(const Range &range, std::vector<Range> *dropped) {
  std::lock_guard lock(mutex_);
  return insert_locked(range, true, dropped);
}

RangeTable::Added RangeTable::insert_locked(const Range &range, bool drop_overlapping,
                                            std::vector<Range> *dropped) {
  uint64_t end = 0;
  if (range.size == 0)
    return Added::kEmpty;
  if (!end_of(range.start, range.size, &end))
    return Added::kWraps;
  if (drop_overlapping)
    drop_overlapping_locked(range.start, end, dropped);
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

void RangeTable::drop_overlapping_locked(uint64_t start, uint64_t end,
                                         std::vector<Range> *dropped) {
  auto it = by_start_.lower_bound(start);
  if (it != by_start_.begin()) {
    auto before = std::prev(it);
    if (start - before->second.start < before->second.size) {
      if (dropped != nullptr)
        dropped->push_back(before->second);
      by_start_.erase(before);
    }
  }
  while (it != by_start_.end() && it->first < end) {
    if (dropped != nullptr)
      dropped->push_back(it->second);
    it = by_start_.erase(it);
  }
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

size_t RangeTable::remove_owner(uint64_t owner, std::vector<Range> *removed) {
  std::lock_guard lock(mutex_);
  return std::erase_if(by_start_, [owner, removed](const auto &entry) {
    if (entry.second.owner != owner)
      return false;
    if (removed != nullptr)
      removed->push_back(entry.second);
    return true;
  });
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

// Gives back what ranges that went away held of the guest's quota.
void give_back(ava_wcall *w, const std::vector<ava::RangeTable::Range> &gone) {
  for (const ava::RangeTable::Range &r : gone)
    w->connection->resources().give_back(r.charge);
}

int add(uint64_t start, uint64_t size, uint32_t kind, uint64_t owner, bool replace) {
  ava_wcall *w = ava::current_call();
  if (w == nullptr)
    return AVA_E_STATE;
  ava::RangeTable &table = w->connection->ranges();
  ava::RangeTable::Range range{start, size, kind, owner, {}};
  // The call's reservation becomes the range's, of the size really handed out.
  if (w->charge.amount != 0 && !w->charge.bound) {
    std::string why;
    const ava_cmd_table *t = w->spec != nullptr ? w->spec->cmds : nullptr;
    const char *name = t != nullptr && w->charge.resource < t->nresource_names
                           ? t->resource_names[w->charge.resource]
                           : "?";
    if (!w->connection->resources().resize(&w->charge, name, size, &why)) {
      w->connection->log_error(std::string("device memory refused: ") + why);
      w->connection->note_refused(AVA_E_POLICY);
      return AVA_E_POLICY;
    }
    range.charge = w->charge;
    range.charge.bound = true;
  }
  try {
    std::vector<ava::RangeTable::Range> dropped;
    const int rc = added_status(replace ? table.replace(range, &dropped) : table.insert(range));
    give_back(w, dropped);
    if (rc == AVA_OK && range.charge.amount != 0)
      w->charge.bound = true; // the range holds it now
    return rc;
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
  ava_wcall *w = ava::current_call();
  ava::RangeTable::Range removed;
  if (w == nullptr || !w->connection->ranges().remove(start, kind, &removed))
    return 0;
  // The call holds the range's charge now: given back when it ends, unless
  // the call adds the range again (the API refused to free it).
  if (removed.charge.amount != 0) {
    if (w->charge.amount == 0) {
      w->charge = removed.charge;
      w->charge.bound = false;
    } else {
      w->connection->resources().give_back(removed.charge);
    }
  }
  if (size != nullptr)
    *size = removed.size;
  if (owner != nullptr)
    *owner = removed.owner;
  return 1;
}

AVA_W_EXPORT uint64_t ava_w_ranges_drop_owner(uint64_t owner) {
  ava_wcall *w = ava::current_call();
  if (w == nullptr)
    return 0;
  std::vector<ava::RangeTable::Range> removed;
  try {
    const size_t n = w->connection->ranges().remove_owner(owner, &removed);
    give_back(w, removed);
    return n;
  } catch (const std::bad_alloc &) {
    // The ranges must go all the same; the charges of those the list could
    // not take stay (too strict for this guest, never lenient).
    give_back(w, removed);
    return removed.size() + w->connection->ranges().remove_owner(owner, nullptr);
  }
}
