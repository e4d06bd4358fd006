// SPDX-License-Identifier: MIT
// The guest's allocator for a channel's shared heap (zero-copy buffers).
// Only the guest allocates there; the worker reads and writes inside what a
// call's descriptors name. Metadata stays in guest-private memory, so a
// worker scribbling on the heap cannot corrupt the allocator.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>

namespace ava::guest {

class HeapAllocator {
public:
  HeapAllocator(uint8_t *base, uint64_t size);
  HeapAllocator(const HeapAllocator &) = delete;
  HeapAllocator &operator=(const HeapAllocator &) = delete;

  // 64-byte aligned; nullptr when nothing large enough is free, or when
  // fewer than keep_free bytes would stay free after it (a share kept for
  // other users of the heap).
  void *allocate(uint64_t bytes, uint64_t keep_free = 0);
  // As allocate, but a full heap is waited on (up to patience) for blocks
  // to come back. After a wait that ran out, none waits again until a block
  // comes back: blocks lent to commands behind a user event the program has
  // yet to set may not come back on their own, and a caller that gets no
  // block has a slower path.
  void *allocate_patiently(uint64_t bytes, std::chrono::milliseconds patience);
  // Whether a patient wait ran out since the last block came back.
  bool stalled();
  // Frees what allocate returned; false for a pointer it did not return.
  bool release(void *ptr);
  // Whether [ptr, ptr + bytes) lies inside the heap; *offset gets its offset.
  bool contains(const void *ptr, uint64_t bytes, uint64_t *offset) const;
  uint8_t *base() const { return base_; }
  uint64_t size() const { return size_; }

private:
  void *allocate_locked(uint64_t bytes, uint64_t keep_free);

  uint8_t *base_;
  uint64_t size_;
  std::mutex mu_;
  std::map<uint64_t, uint64_t> free_; // offset -> length, coalesced
  std::map<uint64_t, uint64_t> used_; // offset -> length
  uint64_t used_bytes_ = 0;
  std::condition_variable released_;
  uint64_t releases_ = 0; // blocks released so far
  bool stalled_ = false;  // a patient wait ran out since the last release
};

} // namespace ava::guest
