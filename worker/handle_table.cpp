// SPDX-License-Identifier: MIT
#include "worker/handle_table.hpp"

#include <iterator>

namespace ava {

uint64_t HandleTable::insert(void *object, uint32_t type, bool owned) {
  std::lock_guard lock(mutex_);
  auto it = by_object_.find(Key{object, type});
  if (it != by_object_.end()) {
    Value &value = by_id_.at(it->second);
    value.owned = value.owned || owned;
    return it->second;
  }
  uint64_t id = next_id_;
  by_id_.emplace(id, Value{object, type, owned});
  try {
    by_object_.emplace(Key{object, type}, id);
  } catch (...) {
    by_id_.erase(id);
    throw;
  }
  ++next_id_;
  return id;
}

void *HandleTable::lookup(uint64_t id, uint32_t type) const {
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second.type != type)
    return nullptr;
  return it->second.object;
}

bool HandleTable::release(uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(id);
  if (it == by_id_.end())
    return false;
  by_object_.erase(Key{it->second.object, it->second.type});
  by_id_.erase(it);
  return true;
}

bool HandleTable::pop_newest(Entry *out) {
  std::lock_guard lock(mutex_);
  if (by_id_.empty())
    return false;
  auto it = std::prev(by_id_.end());
  *out = Entry{it->first, it->second.object, it->second.type, it->second.owned};
  by_object_.erase(Key{it->second.object, it->second.type});
  by_id_.erase(it);
  return true;
}

size_t HandleTable::size() const {
  std::lock_guard lock(mutex_);
  return by_id_.size();
}

} // namespace ava
