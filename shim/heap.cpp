// SPDX-License-Identifier: MIT
#include "shim/heap.hpp"

#include <new>

namespace ava::guest {

namespace {
constexpr uint64_t kAlign = 64;
} // namespace

HeapAllocator::HeapAllocator(uint8_t *base, uint64_t size) : base_(base), size_(size) {
  if (base_ != nullptr && size_ >= kAlign)
    free_.emplace(0, size_ & ~(kAlign - 1));
}

void *HeapAllocator::allocate(uint64_t bytes, uint64_t keep_free) {
  std::lock_guard lock(mu_);
  return allocate_locked(bytes, keep_free);
}

void *HeapAllocator::allocate_patiently(uint64_t bytes, std::chrono::milliseconds patience) {
  std::unique_lock lock(mu_);
  void *p = allocate_locked(bytes, 0);
  if (p != nullptr || stalled_ || bytes > size_ || used_bytes_ == 0)
    return p;
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (p == nullptr) {
    const uint64_t seen = releases_;
    if (!released_.wait_until(lock, deadline, [&] { return releases_ != seen; })) {
      stalled_ = true;
      return nullptr;
    }
    p = allocate_locked(bytes, 0);
  }
  return p;
}

bool HeapAllocator::stalled() {
  std::lock_guard lock(mu_);
  return stalled_;
}

void *HeapAllocator::allocate_locked(uint64_t bytes, uint64_t keep_free) {
  if (bytes == 0 || bytes > size_)
    return nullptr;
  const uint64_t need = (bytes + kAlign - 1) & ~(kAlign - 1);
  if (keep_free > size_ - used_bytes_ || need > size_ - used_bytes_ - keep_free)
    return nullptr;
  try {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < need)
        continue;
      const uint64_t off = it->first;
      const uint64_t left = it->second - need;
      free_.erase(it);
      if (left > 0)
        free_.emplace(off + need, left);
      used_.emplace(off, need);
      used_bytes_ += need;
      return base_ + off;
    }
  } catch (const std::bad_alloc &) {
    return nullptr;
  }
  return nullptr;
}

bool HeapAllocator::release(void *ptr) {
  uint64_t off;
  if (!contains(ptr, 1, &off))
    return false;
  std::lock_guard lock(mu_);
  auto it = used_.find(off);
  if (it == used_.end())
    return false;
  uint64_t start = off;
  uint64_t len = it->second;
  used_.erase(it);
  used_bytes_ -= len;
  ++releases_;
  stalled_ = false;
  // Pairs with the wait in allocate_patiently (under mu_, so none is missed).
  released_.notify_all();
  try {
    // Merge with the free neighbours so large buffers keep fitting.
    auto next = free_.lower_bound(start);
    if (next != free_.end() && start + len == next->first) {
      len += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == start) {
        start = prev->first;
        len += prev->second;
        free_.erase(prev);
      }
    }
    free_.emplace(start, len);
  } catch (const std::bad_alloc &) {
    return true; // the block is lost to the heap, but nothing is corrupted
  }
  return true;
}

bool HeapAllocator::contains(const void *ptr, uint64_t bytes, uint64_t *offset) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  const auto b = reinterpret_cast<uintptr_t>(base_);
  if (base_ == nullptr || p < b || p - b >= size_ || bytes > size_ - (p - b))
    return false;
  *offset = p - b;
  return true;
}

} // namespace ava::guest
