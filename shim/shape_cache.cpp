// SPDX-License-Identifier: MIT
#include "shim/shape_cache.hpp"

namespace ava::guest {

ShapeCache::ShapeCache() : slots_(new std::atomic<uint64_t>[kSlots]) {
  for (size_t i = 0; i < kSlots; ++i)
    slots_[i].store(0, std::memory_order_relaxed);
}

uint64_t ShapeCache::hash(uint32_t func_id, const uint64_t *values, uint32_t count) {
  // splitmix64's finaliser over each value in turn: every bit of every value
  // reaches every bit of the hash, so equal shapes are the only likely equal hashes.
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  uint64_t h = mix(0x9e3779b97f4a7c15ull + func_id);
  for (uint32_t i = 0; i < count; ++i)
    h = mix(h ^ (values[i] + 0x9e3779b97f4a7c15ull * (i + 1)));
  return h != 0 ? h : 1; // 0 marks an empty slot
}

bool ShapeCache::known(uint32_t func_id, const uint64_t *values, uint32_t count) const {
  const uint64_t h = hash(func_id, values, count);
  for (size_t i = 0; i < kProbe; ++i) {
    // Relaxed: a shape seen late only makes one more call sync.
    const uint64_t v = slots_[(h + i) & (kSlots - 1)].load(std::memory_order_relaxed);
    if (v == h)
      return true;
    if (v == 0)
      return false;
  }
  return false;
}

void ShapeCache::learn(uint32_t func_id, const uint64_t *values, uint32_t count) {
  const uint64_t h = hash(func_id, values, count);
  for (size_t i = 0; i < kProbe; ++i) {
    std::atomic<uint64_t> &slot = slots_[(h + i) & (kSlots - 1)];
    uint64_t v = slot.load(std::memory_order_relaxed);
    if (v == h)
      return;
    if (v == 0 && slot.compare_exchange_strong(v, h, std::memory_order_relaxed))
      return;
    if (v == h) // another thread learned it meanwhile
      return;
  }
  // The window is full: one of its shapes goes. Racing learners may each
  // overwrite a slot; every outcome is a set of valid hashes.
  slots_[(h + (h >> 40) % kProbe) & (kSlots - 1)].store(h, std::memory_order_relaxed);
}

void ShapeCache::forget_all() {
  for (size_t i = 0; i < kSlots; ++i)
    slots_[i].store(0, std::memory_order_relaxed);
}

} // namespace ava::guest
