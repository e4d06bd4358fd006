// SPDX-License-Identifier: MIT
#include "worker/handle_table.hpp"

#include "ava/wire.h"

#include <iterator>
#include <random>

namespace ava {

namespace {

std::atomic<uint64_t> g_next_instance{1};

// A few recent lookups per thread: a call names the same kernel, queue and
// buffers as the calls before it. Zero-initialised (instance 0 matches no
// table).
struct CachedLookup {
  uint64_t instance;
  uint64_t epoch;
  uint64_t id;
  void *object;
  uint32_t type;
};
constexpr size_t kCachedLookups = 8;
thread_local CachedLookup t_lookups[kCachedLookups];

CachedLookup &cached_lookup(uint64_t id) {
  return t_lookups[(id ^ (id >> 3)) % kCachedLookups];
}

} // namespace

HandleTable::HandleTable() : instance_(g_next_instance.fetch_add(1, std::memory_order_relaxed)) {
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  // Recorded sessions (tests/fuzz/corpus) name the handles they got back;
  // they replay only if every session hands out the same ids.
  const uint64_t tag = 0x800000u;
#else
  std::random_device rd;
  const uint64_t tag = (static_cast<uint64_t>(rd()) & 0xffffffu) | 0x800000u;
#endif
  next_id_ = (tag << 32) | 1u;
}

uint64_t HandleTable::insert(void *object, uint32_t type, bool owned) {
  std::lock_guard lock(mutex_);
  auto it = by_object_.find(Key{object, type});
  if (it != by_object_.end()) {
    Value &value = by_id_.at(it->second);
    if (owned && value.refs < UINT32_MAX)
      ++value.refs;
    value.created = value.created || owned;
    return it->second;
  }
  if (limit_ != 0 && by_id_.size() >= limit_)
    return 0;
  uint64_t id = next_id_;
  by_id_.emplace(id, Value{object, type, owned ? 1u : 0u, owned});
  try {
    by_object_.emplace(Key{object, type}, id);
  } catch (...) {
    by_id_.erase(id);
    throw;
  }
  ++next_id_;
  return id;
}

bool HandleTable::insert_as(void *object, uint32_t type, uint64_t id) {
  if ((id & AVA_GUEST_ID_MASK) != AVA_GUEST_ID_BIT)
    return false;
  std::lock_guard lock(mutex_);
  if (by_id_.count(id) != 0 || (limit_ != 0 && by_id_.size() >= limit_))
    return false;
  by_id_.emplace(id, Value{object, type, 1u, true});
  try {
    // The newest id answers for the object; an older one stays valid.
    by_object_.insert_or_assign(Key{object, type}, id);
  } catch (...) {
    by_id_.erase(id);
    throw;
  }
  return true;
}

void *HandleTable::lookup(uint64_t id, uint32_t type) const {
  CachedLookup &c = cached_lookup(id);
  // Pairs with the release increment in erase_locked: an epoch that still
  // matches means no id was erased since the entry was cached. An erase
  // racing with this lookup is the same race as one just after a locked
  // lookup returned.
  if (c.instance == instance_ && c.id == id && c.type == type &&
      c.epoch == epoch_.load(std::memory_order_acquire))
    return c.object;
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second.type != type)
    return nullptr;
  c = CachedLookup{instance_, epoch_.load(std::memory_order_relaxed), id, it->second.object, type};
  return it->second.object;
}

void HandleTable::erase_locked(std::map<uint64_t, Value>::iterator it) {
  forget_object_locked(it->first, it->second);
  by_id_.erase(it);
  epoch_.fetch_add(1, std::memory_order_release); // pairs with lookup()'s acquire load
}

uint32_t HandleTable::held(void *object, uint32_t type) const {
  std::lock_guard lock(mutex_);
  auto named = by_object_.find(Key{object, type});
  if (named == by_object_.end())
    return 0;
  auto it = by_id_.find(named->second);
  return it == by_id_.end() ? 0 : it->second.refs;
}

bool HandleTable::retain(uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(id);
  if (it == by_id_.end())
    return false;
  if (it->second.refs < UINT32_MAX)
    ++it->second.refs;
  return true;
}

void *HandleTable::take(uint64_t id, uint32_t type, bool *taken) {
  *taken = false;
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second.type != type)
    return nullptr;
  if (it->second.refs > 0) {
    --it->second.refs;
    *taken = true;
  } else if (it->second.created) {
    return nullptr;
  }
  return it->second.object;
}

void HandleTable::untake(uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(id);
  if (it != by_id_.end() && it->second.refs < UINT32_MAX)
    ++it->second.refs;
}

bool HandleTable::release(uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second.refs > 0 || !it->second.created)
    return false;
  erase_locked(it);
  return true;
}

bool HandleTable::pop_newest(Entry *out) {
  std::lock_guard lock(mutex_);
  if (by_id_.empty())
    return false;
  auto it = std::prev(by_id_.end());
  *out = Entry{it->first, it->second.object, it->second.type, it->second.refs};
  erase_locked(it);
  return true;
}

void HandleTable::forget_object_locked(uint64_t id, const Value &value) {
  auto it = by_object_.find(Key{value.object, value.type});
  if (it != by_object_.end() && it->second == id)
    by_object_.erase(it);
}

size_t HandleTable::size() const {
  std::lock_guard lock(mutex_);
  return by_id_.size();
}

void HandleTable::set_limit(size_t entries) {
  std::lock_guard lock(mutex_);
  limit_ = entries;
}

} // namespace ava
