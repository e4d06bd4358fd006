// SPDX-License-Identifier: MIT
#include "shim/callback_registry.hpp"

#include "shim/ava_shim.h"

namespace ava::guest {

uint64_t CallbackRegistry::add(const CallbackEntry &entry) {
  std::lock_guard lock(mu_);
  uint64_t id = next_id_;
  entries_.emplace(id, entry);
  if (entry.lifetime == AVA_LIFETIME_COUPLED && entry.coupled_handle != 0) {
    try {
      coupled_.emplace(entry.coupled_handle, id);
    } catch (...) {
      entries_.erase(id);
      throw;
    }
  }
  if (entry.lifetime == AVA_LIFETIME_ONCE)
    once_.fetch_add(1, std::memory_order_relaxed);
  ++next_id_;
  return id;
}

bool CallbackRegistry::find(uint64_t id, CallbackEntry *out) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    return false;
  }
  *out = it->second;
  return true;
}

void CallbackRegistry::unindex_locked(uint64_t id, const CallbackEntry &entry) {
  if (entry.lifetime == AVA_LIFETIME_ONCE) {
    once_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (entry.lifetime != AVA_LIFETIME_COUPLED || entry.coupled_handle == 0) {
    return;
  }
  auto [begin, end] = coupled_.equal_range(entry.coupled_handle);
  for (auto it = begin; it != end; ++it) {
    if (it->second == id) {
      coupled_.erase(it);
      return;
    }
  }
}

void CallbackRegistry::remove(uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    return;
  }
  unindex_locked(id, it->second);
  entries_.erase(it);
}

void CallbackRegistry::release_handle(uint64_t handle) {
  if (handle == 0) {
    return;
  }
  std::lock_guard lock(mu_);
  auto [begin, end] = coupled_.equal_range(handle);
  for (auto it = begin; it != end; ++it) {
    entries_.erase(it->second); // coupled, so never a once registration
  }
  coupled_.erase(begin, end);
}

void CallbackRegistry::clear() {
  std::lock_guard lock(mu_);
  entries_.clear();
  coupled_.clear();
  once_.store(0, std::memory_order_relaxed);
}

size_t CallbackRegistry::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

} // namespace ava::guest
