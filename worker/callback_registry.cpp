// SPDX-License-Identifier: MIT
#include "worker/callback_registry.hpp"

namespace ava {

static_assert(sizeof(void *) == sizeof(uint64_t), "callback keys travel as user-data pointers");

CallbackRegistry &CallbackRegistry::instance() {
  // Deliberately leaked: see the header.
  static CallbackRegistry *registry = new CallbackRegistry();
  return *registry;
}

uint64_t CallbackRegistry::add(std::weak_ptr<GuestConnection> connection, uint64_t callback_id,
                               bool once) {
  auto ctx =
      std::make_shared<const CallbackCtx>(CallbackCtx{std::move(connection), callback_id, once});
  std::lock_guard lock(mutex_);
  uint64_t key = next_key_;
  contexts_.emplace(key, std::move(ctx));
  ++next_key_;
  return key;
}

std::shared_ptr<const CallbackCtx> CallbackRegistry::find(uint64_t key) const {
  std::lock_guard lock(mutex_);
  auto it = contexts_.find(key);
  return it == contexts_.end() ? nullptr : it->second;
}

std::shared_ptr<const CallbackCtx> CallbackRegistry::claim(uint64_t key) {
  std::lock_guard lock(mutex_);
  auto it = contexts_.find(key);
  if (it == contexts_.end())
    return nullptr;
  std::shared_ptr<const CallbackCtx> ctx = it->second;
  if (ctx->once)
    contexts_.erase(it);
  return ctx;
}

void CallbackRegistry::remove(uint64_t key) {
  std::shared_ptr<const CallbackCtx> retired;
  std::lock_guard lock(mutex_);
  auto it = contexts_.find(key);
  if (it == contexts_.end())
    return;
  retired = std::move(it->second);
  contexts_.erase(it);
}

} // namespace ava
