// SPDX-License-Identifier: MIT
// A shadow thread runs, in FIFO order, the CALLs of one guest thread, so that
// per-thread ordering holds (async then sync calls of one guest thread stay
// ordered) and thread-local API state (current device/context) behaves as it
// would natively.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "transport/channel.hpp"
#include "worker/out_spare.hpp"
#include "worker/wcall.hpp"

namespace ava {

class GuestConnection;
class GuestSession;

class ShadowThread {
public:
  ShadowThread(std::shared_ptr<GuestConnection> connection, GuestSession *session,
               uint64_t guest_thread_id);
  ~ShadowThread();
  ShadowThread(const ShadowThread &) = delete;
  ShadowThread &operator=(const ShadowThread &) = delete;

  // AVA_E_NOMEM if no thread could be created.
  Status start();
  // Queues a validated CALL. Throws std::bad_alloc.
  void enqueue(MsgBuf message);
  // Drops queued calls; the call in progress finishes. Then join().
  void stop();
  void join();

  // The guest thread whose call runs on the calling thread for connection,
  // or 0 when the caller is not one of its shadow threads.
  static uint64_t current_guest_thread(const GuestConnection *connection);

private:
  void run();
  void serve(MsgBuf &message);

  std::shared_ptr<GuestConnection> connection_;
  GuestSession *session_; // outlives the thread: teardown joins it
  uint64_t guest_thread_id_;
  AsyncErrorSlot async_error_; // touched only by the shadow thread itself
  OutSpare out_spare_;         // likewise
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<MsgBuf> queue_;
  bool stopping_ = false;
  // queue_ holds a message or stopping_ is set (written under mutex_): the
  // loop looks under the lock only then, or when it does not hold the baton.
  std::atomic<bool> attention_{false};
  std::thread thread_;
};

} // namespace ava
