// SPDX-License-Identifier: MIT
// One live connection of a guest library to its worker: the channel, the
// reader thread that routes replies to waiting calls, and the callback thread
// that runs guest callbacks the worker asks for.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "shim/ava_shim.h"
#include "shim/batch.hpp"
#include "shim/callback_registry.hpp"
#include "shim/config.hpp"
#include "shim/heap.hpp"
#include "shim/transfers.hpp"
#include "transport/channel.hpp"
#include "transport/read_baton.hpp"
#include "transport/spin_governor.hpp"

namespace ava::guest {

// Where one sync call waits for its reply. The reader moves the received
// message in, so a reply is never copied.
class ReplyWaiter {
public:
  ReplyWaiter() = default;
  ReplyWaiter(const ReplyWaiter &) = delete;
  ReplyWaiter &operator=(const ReplyWaiter &) = delete;

  // Ready for the next call of a pooled Call. Only once no reader can reach
  // it: its call got its reply, failed to send or gave up waiting, and each
  // of those took it out of Connection::pending_ under pending_mu_.
  void reset() {
    state_.store(kWaiting, std::memory_order_relaxed);
    error_ = AVA_OK;
    msg_ = MsgBuf();
    by_self_ = false;
  }

private:
  friend class Connection;
  enum : int { kWaiting = 0, kDone = 1, kFailed = 2 };

  // Called with Connection::pending_mu_ held.
  void finish(MsgBuf *msg, int error);
  // The reply, routed by the waiting thread itself while it reads: nobody
  // waits on the condition variable, so neither its mutex nor a notify.
  void finish_by_self(MsgBuf *msg);

  std::mutex mu_;
  std::condition_variable cv_;
  ReadBaton::Member member_{mu_, cv_};
  std::atomic<int> state_{kWaiting};
  MsgBuf msg_;
  int error_ = AVA_OK;
  bool by_self_ = false; // finish_by_self: no other thread touched the waiter
};

class Connection : public std::enable_shared_from_this<Connection> {
public:
  // Takes max_message, call_timeout_ms and callback_timeout_ms from config.
  // callbacks and transfers are the runtime's and outlive the connection.
  Connection(const ava_guest_spec *spec, CallbackRegistry *callbacks, TransferTable *transfers,
             std::unique_ptr<Channel> channel, std::string address, const GuestConfig &config);
  ~Connection();
  Connection(const Connection &) = delete;
  Connection &operator=(const Connection &) = delete;

  // Starts the reader thread.
  Status start();

  // Sends one CALL. With a waiter, the reply is routed to it; the caller must
  // then call wait_reply (or nothing, if this fails). A batchable call (async,
  // no flush) may wait in the batch; everything else goes out at once, after
  // any batched calls. total is the message's size.
  // *order: for an async call its index among the async calls of this
  // connection; for a sync call how many async calls were sent before it.
  Status send_call(const struct iovec *iov, int iovcnt, uint64_t total, uint64_t call_id,
                   ReplyWaiter *waiter, bool batchable, uint64_t *order);
  // Heap space an async call lent the worker: freed once a sync call sent
  // after it has its reply (the worker runs a sync call only after every
  // async call sent before it, see GuestConnection::stamp_call). Takes p.
  void defer_heap_release(uint64_t async_index, void *p);
  // A sync call stamped `before` got its reply: async calls below it are done.
  void retire_async(uint64_t before);

  // Waits for the reply of call_id; timeout_ms < 0 waits until the reply or
  // the end of the connection. AVA_E_CLOSED comes without a message: the
  // connection has reported it once already. !spin: the reply waits on
  // device work (AVA_CALL_DEVICE_WAIT), so the wait sleeps without spinning.
  Status wait_reply(ReplyWaiter *waiter, uint64_t call_id, int timeout_ms, bool spin, MsgBuf *out);

  // The call this thread waited for last, when it gave up waiting for its
  // reply (call_timeout_ms); 0 when that call got its reply.
  static uint64_t abandoned_by_this_thread();

  // Orderly close: GOODBYE, shut the channel, join the threads. Idempotent.
  void close();

  bool broken() const;
  // For a connection inherited over fork() when nothing else can hold it:
  // its threads do not exist, so it must never be destroyed.
  void keep_forever(const std::shared_ptr<Connection> &self) { keep_alive_ = self; }
  const std::string &address() const { return address_; }
  // The allocator of the channel's shared heap, or nullptr without one.
  HeapAllocator *heap() const { return heap_.get(); }
  // Buffers of at least this many bytes go through the heap (AVA_ZEROCOPY_MIN).
  uint64_t zerocopy_min() const { return zerocopy_min_; }
  // The piece size of a transfer of bytes at ptr that goes in pieces, each
  // through a block of the heap, so that the guest's copy of one piece runs
  // while the worker hands the one before to the API; 0 when it goes whole
  // (no heap, ptr already in it, small, AVA_PIPELINE_CHUNK=0).
  uint64_t pipeline_chunk(const void *ptr, uint64_t bytes) const;
  // A block of the heap for a mapping of bytes, which the worker fills and
  // reads the program's writes from (no copy on the guest's side); nullptr
  // without a heap, for small mappings, with AVA_MAP_IN_HEAP=0, or when it
  // would leave less than a quarter of the heap to transfers (pieces, lent
  // blocks), which fall back to slower paths but never fail for want of it.
  void *map_block(uint64_t bytes) const;
  // A block of the heap for an API buffer that lives there
  // (ava_guest_heap_buffer); nullptr without a heap, below AVA_ZEROCOPY_MIN,
  // with AVA_BUFFERS_IN_HEAP=0, or when it would leave less than a quarter
  // of the heap to transfers.
  void *buffer_block(uint64_t bytes) const;
  // A block of bytes of the heap for a transfer, waiting up to patience
  // for one to come back when the heap is full. Lent blocks come back with
  // the worker's ENDs, which only a reader of the channel sees: when nobody
  // reads (the thread's pieces went without waiting, so no call of its
  // reads), this thread reads until one does.
  void *heap_block_patiently(uint64_t bytes, std::chrono::milliseconds patience);
  // Waits up to patience for the END of transfer token, reading the channel
  // itself when nobody else does; true once it came.
  bool wait_transfer(uint64_t token, std::chrono::milliseconds patience);
  // Whether a blocking read of bytes should go staged (AVA_STAGE_BLOCKING):
  // on channels without a heap, for large reads, so that its DATA lands
  // straight in the program's memory instead of a reply's buffer.
  bool stage_blocking(uint64_t bytes) const {
    return heap_ == nullptr && stage_blocking_ && bytes >= kStageBlockingMin;
  }
  static constexpr uint64_t kStageBlockingMin = 1ull << 20;
  // Waits up to patience for token's END (a blocking call's transfer): 1
  // the command completed, 0 it failed, 2 not yet, -1 the connection broke
  // (the token is then forgotten).
  int finish_transfer(uint64_t token, std::chrono::milliseconds patience);
  // Pieces of a blocking transfer in flight at once (AVA_PIPELINE_WINDOW).
  uint32_t pipeline_window() const { return pipeline_window_; }
  static constexpr uint32_t kMaxPipelineWindow = 64;
  uint64_t max_message() const { return max_message_; }
  int call_timeout_ms() const { return call_timeout_ms_; }
  // A receive buffer done with (a call's reply): kept for the next message
  // when it is the largest seen, else freed.
  void recycle(MsgBuf &&buf);

private:
  // A caller done reading lets go of the baton (to the background reader
  // at once while a callback is to come).
  void let_go(ReadBaton::Member &member);
  // Reads the channel on this thread until done() or patience runs out:
  // 1 done, 0 not (out of patience, or broken), -1 when another thread
  // reads (the caller waits for what that one routes instead).
  int read_until(const std::function<bool()> &done, std::chrono::milliseconds patience);
  MsgBuf take_spare();
  void reader_main();
  // Receives and routes one message (rx_mu_ held); false once the connection broke.
  bool read_one(int timeout_ms, uint16_t *kind = nullptr, bool spin = true);
  // Returns false when msg breaks the protocol; *reason then says why. A
  // reply or callback takes msg's buffer with it; other messages leave it.
  // placed: msg is the head of a DATA message whose bytes are in place.
  bool route(MsgBuf &msg, bool placed, std::string *reason);
  bool deliver_reply(MsgBuf &msg, std::string *reason);
  // Removes call_id's entry from pending_ (pending_mu_ held); its waiter or nullptr.
  ReplyWaiter *take_pending_locked(uint64_t call_id);
  bool queue_callback(MsgBuf &msg, std::string *reason);
  void callback_main();
  void run_callback(const MsgBuf &msg);
  // CALLBACK_DONE with status: AVA_E_PROTO tells the worker its message was refused.
  void answer_callback(const ava_msg_hdr &request, int32_t status);
  Status send_locked_out(const struct iovec *iov, int iovcnt, bool async, uint64_t *order);
  // Sends the batch (if any) followed by iov; send_mu_ must be held.
  Status send_with_batch_locked(const struct iovec *iov, int iovcnt);
  Status send_batched(const struct iovec *iov, int iovcnt, uint64_t total, uint64_t *order);
  void flusher_main();
  void stop_flusher();
  void mark_broken(const std::string &reason);
  void stop_callback_thread();
  void remember_abandoned_locked(uint64_t call_id);

  const ava_guest_spec *spec_;
  CallbackRegistry *callbacks_;
  TransferTable *transfers_;
  std::unique_ptr<Channel> channel_;
  std::unique_ptr<HeapAllocator> heap_;
  uint64_t zerocopy_min_ = 64 * 1024;
  uint64_t pipeline_chunk_ = 8ull << 20;
  uint32_t pipeline_window_ = 2;
  bool map_in_heap_ = true;
  bool buffers_in_heap_ = true;
  bool stage_blocking_ = true;
  std::string address_;
  uint64_t max_message_;
  int call_timeout_ms_;
  // How long shutdown waits for a guest callback that does not return.
  int callback_timeout_ms_;

  // Guards the channel's send side, the batch and async_sent_.
  std::mutex send_mu_;
  uint64_t async_sent_ = 0; // async CALLs sent (or batched) so far, in channel order
  std::mutex deferred_mu_;
  std::deque<std::pair<uint64_t, void *>> deferred_heap_; // (async index, heap block)
  // deferred_heap_ is not empty (written under deferred_mu_): a sync call
  // without async heap loans before it takes no lock to retire them.
  std::atomic<bool> have_deferred_{false};
  Batch batch_{Batch::Limits::from_env(false)};
  std::condition_variable flush_cv_;
  std::thread flusher_;
  bool flusher_stop_ = false;

  mutable std::mutex pending_mu_;
  // (call id, waiter) of the sync calls in flight: one per thread in a sync
  // call, so a short vector (no allocation per call) beats a hash map.
  std::vector<std::pair<uint64_t, ReplyWaiter *>> pending_;
  // Calls that timed out: their late replies are dropped, not a protocol error.
  std::unordered_set<uint64_t> abandoned_;
  std::deque<uint64_t> abandoned_order_;
  // Written under pending_mu_; read without it on the call path, where a
  // connection breaking a moment later is the same race as before the read.
  std::atomic<bool> broken_{false};
  bool closing_ = false;

  std::thread reader_;
  // Who reads: a caller waiting for its reply, or the background reader
  // when no caller is around; the holder also takes rx_mu_ around recv.
  ReadBaton baton_;
  // How long a caller spins for a reply another thread reads (AVA_SPIN_US,
  // shorter while spinning does not pay: the reader may share its CPU).
  SpinGovernor reply_spin_;
  std::mutex rx_mu_;
  // One large receive buffer kept between messages. Fresh memory costs a
  // page fault per page (in a TCG guest each is a slow exit), and glibc maps
  // every allocation over 32 MiB anew and unmaps it at free: a 64 MiB reply
  // over kmod ran at 40 % of a 16 MiB one's rate. While it waits its pages
  // are lent to the system (MsgBuf::lend_pages).
  std::mutex spare_mu_;
  MsgBuf spare_;                        // spare_mu_
  std::atomic<bool> have_spare_{false}; // spare_ holds a buffer: the lock is taken only then

  std::mutex cb_mu_;
  std::condition_variable cb_cv_;
  std::deque<MsgBuf> cb_queue_;
  uint64_t cb_queued_bytes_ = 0;
  bool cb_started_ = false;
  bool cb_stop_ = false;
  bool cb_exited_ = false;
  std::thread cb_thread_;
  std::atomic<uint32_t> unknown_callbacks_logged_{0};
  std::shared_ptr<Connection> keep_alive_;
};

} // namespace ava::guest
