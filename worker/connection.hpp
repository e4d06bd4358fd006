// SPDX-License-Identifier: MIT
// State of one guest connection shared by its reader, its shadow threads and
// callback trampolines (which may outlive it: they hold a weak_ptr and find
// it dead). Owns the channel, the handle table, the table of the guest's
// device memory, what the guest asked the worker to keep (buffers, callback
// contexts) and the callback waits.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "transport/channel.hpp"
#include "worker/ava_worker_rt.h"
#include "worker/handle_table.hpp"
#include "worker/range_table.hpp"
#include "worker/resource_ledger.hpp"
#include "worker/transfers.hpp"

namespace ava {

struct WorkerOptions;

class GuestConnection {
public:
  GuestConnection(std::unique_ptr<Channel> channel, const WorkerOptions &options);
  ~GuestConnection();
  GuestConnection(const GuestConnection &) = delete;
  GuestConnection &operator=(const GuestConnection &) = delete;

  // Only the reader receives, so it may use the channel directly.
  Channel &channel() { return *channel_; }
  // Set once the HELLO was accepted, before any shadow thread exists.
  void set_guest(const ava_worker_spec *spec, uint64_t pid);
  const ava_worker_spec *spec() const { return spec_; }
  uint64_t pid() const { return pid_; }
  int callback_timeout_ms() const { return callback_timeout_ms_; }
  uint64_t max_message() const { return channel_->max_message(); }

  // Sends one message; serialised with every other sender of this guest.
  // The DATA of every staged transfer that is done goes first (see
  // TransferBook::flush): no message shows the guest a command complete
  // before its bytes arrived.
  Status send(const struct iovec *iov, int iovcnt);
  // Sends one DATA message (TransferBook only).
  Status send_data(const struct iovec *iov, int iovcnt);
  // Sends a message that carries only a status (HELLO_ACK, GOODBYE, or a
  // REPLY with a zeroed ava_reply_common), echoing the ids of request.
  // block: an argument block to send with it (HELLO_ACK's).
  Status send_status(const ava_msg_hdr &request, uint16_t kind, int status,
                     std::span<const uint8_t> block = {});

  // Marks the guest gone: sends fail, blocked receives and callback waits wake.
  void shutdown();
  bool alive() const { return alive_.load(std::memory_order_acquire); }

  HandleTable &handles() { return handles_; }
  ResourceLedger &resources() { return resources_; }
  // The device memory the API handed to this guest (ava_w_ranges_*).
  RangeTable &ranges() { return ranges_; }
  // Staged transfers whose bytes still have to go to the guest.
  TransferBook &transfers() { return transfers_; }
  // A host setting for the plugin (WorkerOptions::plugin_settings), or nullptr.
  const char *setting(std::string_view name) const {
    auto it = settings_.find(name);
    return it != settings_.end() ? it->second.c_str() : nullptr;
  }
  // Counts a call refused before it ran and tells WorkerOptions::on_refused.
  void note_refused(int status) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    if (on_refused_)
      on_refused_(status);
  }
  // Counts a call handed to the spec's dispatch (the session report), and
  // whether the guest waited for it.
  void note_served(bool sync) {
    served_.fetch_add(1, std::memory_order_relaxed);
    if (sync)
      served_sync_.fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t calls_served() const { return served_.load(std::memory_order_relaxed); }
  uint64_t sync_calls_served() const { return served_sync_.load(std::memory_order_relaxed); }
  uint64_t calls_refused() const { return refused_.load(std::memory_order_relaxed); }

  // Worker-owned copies and callback contexts that outlive their call.
  // Throw std::bad_alloc; on failure the caller still owns what it passed.
  // keep_buffer is false, keeping nothing, when bytes more would pass the
  // guest's budget of kept bytes (WorkerOptions::max_guest_kept_bytes).
  bool keep_buffer(void *buffer, uint64_t bytes, uint32_t lifetime, uint64_t coupled_handle);
  // False, keeping nothing, when the guest holds its budget of callback
  // registrations (WorkerOptions::max_guest_callbacks).
  bool keep_callback_ctx(uint64_t key, uint32_t lifetime, uint64_t coupled_handle);
  // Undoes keep_callback_ctx (the registering call failed) and removes the
  // context from the registry.
  void drop_callback_ctx(uint64_t key, uint32_t lifetime, uint64_t coupled_handle);
  // A once context ran (CallbackRegistry::claim retired it): nothing to free at teardown.
  void forget_once_ctx(uint64_t key);
  // The coupled handle was released: free what was kept for it.
  void release_coupled(uint64_t handle);
  // Teardown: free everything kept.
  void release_all_kept();
  // Departure hooks (ava_w_at_departure), run once by run_departures() at
  // teardown, after the shadow threads stopped and before the guest's
  // objects are destroyed. at_departure throws std::bad_alloc.
  void at_departure(void (*fn)(void *), void *arg);
  bool cancel_departure(void (*fn)(void *), void *arg);
  void run_departures();

  // Callback waits, matched by the CALLBACK's seq.
  uint64_t next_callback_seq() { return callback_seq_.fetch_add(1, std::memory_order_relaxed); }
  void begin_callback_wait(uint64_t seq); // throws std::bad_alloc
  // Blocks until the CALLBACK_DONE, the callback timeout or the guest's death.
  int wait_callback(uint64_t seq);
  void cancel_callback_wait(uint64_t seq);
  // Returns false if nobody waits for seq (late or bogus CALLBACK_DONE).
  bool complete_callback(uint64_t seq, int status);
  // Whether wait_for_queue_space() would block now.
  bool queue_full();

  // Program order across guest threads. The guest sends under one lock, so
  // the order of CALLs on the channel is an order its program allowed; the
  // reader stamps each CALL with the number of async CALLs before it, and a
  // call runs only once all of those have run. Async calls thus run one after
  // another in channel order (a launch on thread A before an event wait on
  // thread B), sync calls after every async call sent before them, and sync
  // calls of different threads still run in parallel.
  uint64_t stamp_call(bool async) {
    return async ? async_received_++ : async_received_;
  } // reader only
  // Blocks until `before` async calls have finished, or the guest is gone.
  void wait_async_turn(uint64_t before);
  // One async call finished (or was dropped without running).
  void async_finished();

  // Flow control: bytes of CALLs queued for shadow threads but not yet done.
  void queued(uint64_t bytes);
  void dequeued(uint64_t bytes);
  // Blocks the reader while too much is queued. While a callback waits for its
  // CALLBACK_DONE the reader may go on up to twice the limit, so that the
  // answer can arrive behind calls that cannot run before it; past that it
  // waits too (and the callback, at worst, for its timeout): a guest cannot
  // make the worker hold unbounded memory by never answering a callback.
  void wait_for_queue_space();

  // Logs "guest PID: what"; rate-limited because a hostile guest controls it.
  void log_error(std::string_view what);
  void log_debug(std::string_view what);

private:
  struct Waiter {
    bool done = false;
    int status = AVA_OK;
  };
  struct Kept {
    void *buffer;     // malloc'ed, or nullptr
    uint64_t bytes;   // of buffer, counted against kept_limit_
    uint64_t ctx_key; // callback context, or 0
  };

  static void release(const Kept &kept);
  bool queue_full_locked() const; // state_mutex_

  std::unique_ptr<Channel> channel_;
  const ava_worker_spec *spec_ = nullptr;
  uint64_t pid_ = 0;
  int callback_timeout_ms_;
  std::atomic<bool> alive_{true};
  std::atomic<uint64_t> callback_seq_{1};
  std::atomic<uint32_t> errors_logged_{0};
  std::atomic<uint64_t> served_{0};
  std::atomic<uint64_t> served_sync_{0};
  std::atomic<uint64_t> refused_{0};

  std::mutex send_mutex_;
  HandleTable handles_;
  ResourceLedger resources_;
  RangeTable ranges_;
  TransferBook transfers_;
  std::function<void(int)> on_refused_;
  const std::map<std::string, std::string, std::less<>> settings_;

  std::mutex kept_mutex_;
  std::unordered_multimap<uint64_t, Kept> kept_; // by coupled handle; 0 = until teardown
  std::unordered_multimap<void *, void (*)(void *)> departures_; // kept_mutex_; by arg
  std::unordered_set<uint64_t> once_ctx_; // kept_mutex_; once contexts not yet run
  uint32_t callback_ctxs_ = 0;            // kept_mutex_; in kept_ and once_ctx_
  const uint32_t callback_limit_;         // 0: none
  uint64_t kept_bytes_ = 0;               // kept_mutex_; buffers in kept_
  const uint64_t kept_limit_;             // 0: none

  uint64_t async_received_ = 0; // the reader's, under the session's rx lock
  std::atomic<uint64_t> async_done_{0};
  std::atomic<uint32_t> turn_waiters_{0};
  std::mutex turn_mutex_;
  std::condition_variable turn_cv_;

  std::mutex state_mutex_; // waiters_, queued_bytes_
  std::condition_variable state_cv_;
  std::unordered_map<uint64_t, Waiter> waiters_;
  uint64_t queued_bytes_ = 0;
  // queued_bytes_ as last written, for queue_full()'s answer without the
  // lock while the queues hold less than the lowest limit (nearly always).
  std::atomic<uint64_t> queued_bytes_seen_{0};
};

} // namespace ava
