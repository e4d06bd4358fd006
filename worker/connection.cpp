// SPDX-License-Identifier: MIT
#include "worker/connection.hpp"

#include <chrono>
#include <cstdlib>
#include <string>

#include "shim/ava_shim.h"
#include "worker/callback_registry.hpp"
#include "worker/log.hpp"
#include "worker/server.hpp"

namespace ava {
namespace {

// Queued CALL bytes above which the reader stops reading (the guest then
// blocks in send): bounds worker memory against a guest that floods async calls.
constexpr uint64_t kQueueLimitBytes = 256ull << 20;
// Protocol errors logged per guest before the log goes quiet.
constexpr uint32_t kMaxLoggedErrors = 64;

} // namespace

GuestConnection::GuestConnection(std::unique_ptr<Channel> channel, const WorkerOptions &options)
    : channel_(std::move(channel)), callback_timeout_ms_(options.callback_timeout_ms),
      resources_(options.resource_quota), on_refused_(options.on_refused),
      settings_(options.plugin_settings), callback_limit_(options.max_guest_callbacks),
      kept_limit_(options.max_guest_kept_bytes) {
  channel_->set_max_message(options.max_message);
  channel_->set_send_timeout_ms(options.send_timeout_ms);
  handles_.set_limit(options.max_guest_objects);
}

GuestConnection::~GuestConnection() {
  release_all_kept();
}

void GuestConnection::set_guest(const ava_worker_spec *spec, uint64_t pid) {
  spec_ = spec;
  pid_ = pid;
}

Status GuestConnection::send(const struct iovec *iov, int iovcnt) {
  transfers_.flush(*this);
  return send_data(iov, iovcnt);
}

Status GuestConnection::send_data(const struct iovec *iov, int iovcnt) {
  if (!alive())
    return Status::error(AVA_E_CLOSED, "guest is gone");
  Status st;
  {
    std::lock_guard lock(send_mutex_);
    st = channel_->send(iov, iovcnt);
  }
  if (st.code == AVA_E_TIMEOUT) {
    // The guest stopped reading: it is dropped rather than left to hold
    // whoever sends to it (a shadow thread, a driver's callback thread).
    log_error("dropping the guest: " + st.message);
    shutdown();
  }
  return st;
}

Status GuestConnection::send_status(const ava_msg_hdr &request, uint16_t kind, int status,
                                    std::span<const uint8_t> block) {
  struct {
    ava_msg_hdr hdr;
    ava_reply_common common;
  } msg{};
  uint32_t args_len = kind == AVA_MSG_REPLY ? sizeof(ava_reply_common) : 0;
  msg.hdr.magic = AVA_MSG_MAGIC;
  msg.hdr.abi_version = AVA_ABI_VERSION;
  msg.hdr.kind = kind;
  msg.hdr.spec_id = spec_ != nullptr ? spec_->id : request.spec_id;
  msg.hdr.func_id = request.func_id;
  msg.hdr.thread_id = request.thread_id;
  msg.hdr.seq = request.seq;
  msg.hdr.call_id = request.call_id;
  msg.hdr.flags = kind == AVA_MSG_REPLY ? AVA_F_SYNC : 0;
  msg.hdr.status = status;
  struct iovec iov[2] = {{&msg, sizeof(ava_msg_hdr) + args_len}, {}};
  int iovcnt = 1;
  if (kind != AVA_MSG_REPLY && !block.empty()) {
    args_len = static_cast<uint32_t>(block.size());
    iov[1] = {const_cast<uint8_t *>(block.data()), block.size()};
    iovcnt = 2;
  }
  msg.hdr.args_len = args_len;
  msg.hdr.total_len = sizeof(ava_msg_hdr) + args_len;
  return send(iov, iovcnt);
}

void GuestConnection::shutdown() {
  alive_.store(false, std::memory_order_release);
  channel_->shutdown();
  {
    std::lock_guard lock(turn_mutex_);
    turn_cv_.notify_all();
  }
  std::lock_guard lock(state_mutex_);
  state_cv_.notify_all();
}

void GuestConnection::wait_async_turn(uint64_t before) {
  // Pairs with the release increment in async_finished: what those calls did
  // (objects registered, API state) is visible to the call about to run.
  if (async_done_.load(std::memory_order_acquire) >= before)
    return;
  // The call we wait for is usually running on another core right now.
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
  while (std::chrono::steady_clock::now() < spin_until) {
    if (async_done_.load(std::memory_order_acquire) >= before)
      return;
  }
  turn_waiters_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::unique_lock lock(turn_mutex_);
    turn_cv_.wait(
        lock, [&] { return async_done_.load(std::memory_order_acquire) >= before || !alive(); });
  }
  turn_waiters_.fetch_sub(1, std::memory_order_relaxed);
}

void GuestConnection::async_finished() {
  async_done_.fetch_add(1, std::memory_order_release);
  // seq_cst pairs with the waiter's seq_cst increment of turn_waiters_: either
  // it sees our count in its predicate, or we see it waiting and notify.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (turn_waiters_.load(std::memory_order_relaxed) > 0) {
    std::lock_guard lock(turn_mutex_);
    turn_cv_.notify_all();
  }
}

bool GuestConnection::keep_buffer(void *buffer, uint64_t bytes, uint32_t lifetime,
                                  uint64_t coupled_handle) {
  uint64_t key = lifetime == AVA_LIFETIME_COUPLED ? coupled_handle : 0;
  std::lock_guard lock(kept_mutex_);
  if (kept_limit_ != 0 && bytes > kept_limit_ - kept_bytes_)
    return false;
  kept_.emplace(key, Kept{buffer, bytes, 0});
  kept_bytes_ += bytes;
  return true;
}

bool GuestConnection::keep_callback_ctx(uint64_t ctx_key, uint32_t lifetime,
                                        uint64_t coupled_handle) {
  std::lock_guard lock(kept_mutex_);
  if (callback_limit_ != 0 && callback_ctxs_ >= callback_limit_)
    return false;
  if (lifetime == AVA_LIFETIME_ONCE) {
    once_ctx_.insert(ctx_key);
  } else {
    uint64_t key = lifetime == AVA_LIFETIME_COUPLED ? coupled_handle : 0;
    kept_.emplace(key, Kept{nullptr, 0, ctx_key});
  }
  ++callback_ctxs_;
  return true;
}

void GuestConnection::drop_callback_ctx(uint64_t ctx_key, uint32_t lifetime,
                                        uint64_t coupled_handle) {
  {
    std::lock_guard lock(kept_mutex_);
    if (lifetime == AVA_LIFETIME_ONCE) {
      callback_ctxs_ -= static_cast<uint32_t>(once_ctx_.erase(ctx_key));
    } else {
      auto range = kept_.equal_range(lifetime == AVA_LIFETIME_COUPLED ? coupled_handle : 0);
      for (auto it = range.first; it != range.second; ++it) {
        if (it->second.ctx_key == ctx_key) {
          kept_.erase(it);
          --callback_ctxs_;
          break;
        }
      }
    }
  }
  CallbackRegistry::instance().remove(ctx_key);
}

void GuestConnection::forget_once_ctx(uint64_t ctx_key) {
  std::lock_guard lock(kept_mutex_);
  callback_ctxs_ -= static_cast<uint32_t>(once_ctx_.erase(ctx_key));
}

void GuestConnection::release_coupled(uint64_t handle) {
  if (handle == 0)
    return;
  std::lock_guard lock(kept_mutex_);
  auto range = kept_.equal_range(handle);
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second.ctx_key != 0)
      --callback_ctxs_;
    kept_bytes_ -= it->second.bytes;
    release(it->second);
  }
  kept_.erase(range.first, range.second);
}

void GuestConnection::release_all_kept() {
  std::unordered_multimap<uint64_t, Kept> released;
  std::unordered_set<uint64_t> once;
  {
    std::lock_guard lock(kept_mutex_);
    released.swap(kept_);
    once.swap(once_ctx_);
    kept_bytes_ = 0;
    callback_ctxs_ = 0;
  }
  for (auto &entry : released)
    release(entry.second);
  for (uint64_t key : once)
    CallbackRegistry::instance().remove(key);
}

void GuestConnection::at_departure(void (*fn)(void *), void *arg) {
  std::lock_guard lock(kept_mutex_);
  departures_.emplace(arg, fn);
}

bool GuestConnection::cancel_departure(void (*fn)(void *), void *arg) {
  std::lock_guard lock(kept_mutex_);
  auto range = departures_.equal_range(arg);
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second == fn) {
      departures_.erase(it);
      return true;
    }
  }
  return false;
}

void GuestConnection::run_departures() {
  std::unordered_multimap<void *, void (*)(void *)> due;
  {
    std::lock_guard lock(kept_mutex_);
    due.swap(departures_);
  }
  // A hook may end commands whose completion callbacks take this lock.
  for (auto &[arg, fn] : due)
    fn(arg);
}

void GuestConnection::release(const Kept &kept) {
  if (kept.ctx_key != 0)
    CallbackRegistry::instance().remove(kept.ctx_key);
  std::free(kept.buffer);
}

void GuestConnection::begin_callback_wait(uint64_t seq) {
  std::lock_guard lock(state_mutex_);
  waiters_.emplace(seq, Waiter{});
  // The reader may be parked in wait_for_queue_space; it must keep reading
  // so that this CALLBACK_DONE can arrive.
  state_cv_.notify_all();
}

int GuestConnection::wait_callback(uint64_t seq) {
  std::unique_lock lock(state_mutex_);
  auto done = [&] {
    auto it = waiters_.find(seq);
    return it == waiters_.end() || it->second.done || !alive();
  };
  if (callback_timeout_ms_ < 0) {
    state_cv_.wait(lock, done);
  } else if (!state_cv_.wait_for(lock, std::chrono::milliseconds(callback_timeout_ms_), done)) {
    waiters_.erase(seq);
    return AVA_E_TIMEOUT;
  }
  auto it = waiters_.find(seq);
  int status = AVA_E_CLOSED;
  if (it != waiters_.end()) {
    if (it->second.done)
      status = it->second.status;
    waiters_.erase(it);
  }
  return status;
}

void GuestConnection::cancel_callback_wait(uint64_t seq) {
  std::lock_guard lock(state_mutex_);
  waiters_.erase(seq);
}

bool GuestConnection::complete_callback(uint64_t seq, int status) {
  std::lock_guard lock(state_mutex_);
  auto it = waiters_.find(seq);
  if (it == waiters_.end() || it->second.done)
    return false;
  it->second.done = true;
  it->second.status = status;
  state_cv_.notify_all();
  return true;
}

void GuestConnection::queued(uint64_t bytes) {
  std::lock_guard lock(state_mutex_);
  queued_bytes_ += bytes;
  queued_bytes_seen_.store(queued_bytes_, std::memory_order_relaxed);
}

void GuestConnection::dequeued(uint64_t bytes) {
  std::lock_guard lock(state_mutex_);
  queued_bytes_ -= bytes < queued_bytes_ ? bytes : queued_bytes_;
  queued_bytes_seen_.store(queued_bytes_, std::memory_order_relaxed);
  if (queued_bytes_ <= 2 * kQueueLimitBytes)
    state_cv_.notify_all();
}

bool GuestConnection::queue_full_locked() const {
  const uint64_t limit = waiters_.empty() ? kQueueLimitBytes : 2 * kQueueLimitBytes;
  return queued_bytes_ > limit;
}

bool GuestConnection::queue_full() {
  // Under either limit: not full, as the locked answer could also have
  // changed by the time the caller acts on it. Only the reader queues.
  if (queued_bytes_seen_.load(std::memory_order_relaxed) <= kQueueLimitBytes)
    return false;
  std::lock_guard lock(state_mutex_);
  return queue_full_locked();
}

void GuestConnection::wait_for_queue_space() {
  std::unique_lock lock(state_mutex_);
  state_cv_.wait(lock, [&] { return !queue_full_locked() || !alive(); });
}

void GuestConnection::log_error(std::string_view what) {
  uint32_t n = errors_logged_.fetch_add(1, std::memory_order_relaxed);
  if (n > kMaxLoggedErrors)
    return;
  try {
    std::string line = "guest " + std::to_string(pid_) + ": ";
    if (n == kMaxLoggedErrors)
      line += "too many errors, no longer logging them";
    else
      line.append(what);
    worker_log(line);
  } catch (const std::bad_alloc &) {
    // Logging must never fail the call that is being refused.
  }
}

void GuestConnection::log_debug(std::string_view what) {
  if (!worker_debug_enabled())
    return;
  try {
    worker_log("guest " + std::to_string(pid_) + ": " + std::string(what));
  } catch (const std::bad_alloc &) {
    // As above.
  }
}

} // namespace ava
