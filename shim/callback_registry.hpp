// SPDX-License-Identifier: MIT
// Guest callbacks registered by calls, looked up by the id the worker echoes
// in CALLBACK messages. Ids are never reused, so a stale id from the worker
// can only miss, never reach a different callback.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace ava::guest {

struct CallbackEntry {
  void (*fn)(void) = nullptr;
  void *userdata = nullptr;
  uint32_t lifetime = 0;
  uint64_t coupled_handle = 0;
  // The callback declaration fn is of; CALLBACKs must name the same one.
  uint32_t decl_id = 0;
};

class CallbackRegistry {
public:
  // Returns the new id (never 0). Throws std::bad_alloc.
  uint64_t add(const CallbackEntry &entry);
  bool find(uint64_t id, CallbackEntry *out) const;
  void remove(uint64_t id);
  // Drops the COUPLED registrations tied to handle.
  void release_handle(uint64_t handle);
  void clear();
  size_t size() const;
  // Registrations of AVA_LIFETIME_ONCE not yet run: callbacks the worker
  // will send, which the guest should read as soon as they come.
  size_t once_pending() const { return once_.load(std::memory_order_relaxed); }

  // fork(): the child must not inherit a mutex held by a thread it lacks.
  void lock_for_fork() { mu_.lock(); }
  void unlock_after_fork() { mu_.unlock(); }

private:
  // Drops an entry's indexes (the coupled handle, the once count).
  void unindex_locked(uint64_t id, const CallbackEntry &entry);

  mutable std::mutex mu_;
  uint64_t next_id_ = 1;
  std::atomic<size_t> once_{0}; // written under mu_
  std::unordered_map<uint64_t, CallbackEntry> entries_;
  std::unordered_multimap<uint64_t, uint64_t> coupled_; // handle -> id
};

} // namespace ava::guest
