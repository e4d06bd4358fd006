// SPDX-License-Identifier: MIT
// Callback contexts handed to the real API as user data. The API may call a
// trampoline at any time, even after the context's lifetime ended (a buggy
// spec, a library that fires late), so the user data is not a pointer but an
// opaque key into this process-wide table: a retired key simply is not found
// and the trampoline becomes a safe no-op. The table is process-wide because
// the library's user-data pointers are.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace ava {

class GuestConnection;

struct CallbackCtx {
  std::weak_ptr<GuestConnection> connection;
  uint64_t callback_id; // the guest's registration id
  bool once;            // AVA_LIFETIME_ONCE: retired by the call that claims it
};

class CallbackRegistry {
public:
  // The one table; never destroyed, so late trampolines during exit stay safe.
  static CallbackRegistry &instance();

  // Returns a non-zero key. Throws std::bad_alloc.
  uint64_t add(std::weak_ptr<GuestConnection> connection, uint64_t callback_id, bool once = false);
  // The context behind key, or nullptr if it was retired.
  std::shared_ptr<const CallbackCtx> find(uint64_t key) const;
  // The same for a trampoline about to run the callback: a once context is
  // retired here, so that a second call of the API's finds nothing.
  std::shared_ptr<const CallbackCtx> claim(uint64_t key);
  void remove(uint64_t key);

  static void *to_user_data(uint64_t key) { return reinterpret_cast<void *>(key); }
  static uint64_t from_user_data(void *ctx) { return reinterpret_cast<uint64_t>(ctx); }

private:
  CallbackRegistry() = default;
  mutable std::mutex mutex_;
  uint64_t next_key_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<const CallbackCtx>> contexts_;
};

} // namespace ava
