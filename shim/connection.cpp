// SPDX-License-Identifier: MIT
#include "shim/connection.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "shim/env.hpp"
#include "shim/log.hpp"
#include "shim/thread_util.hpp"

namespace ava::guest {

namespace {

constexpr uint64_t kHeader = sizeof(ava_msg_hdr);
// A reply usually arrives within a few microseconds on a local channel, and a
// blocking wake-up costs ~70 us here, so a short spin pays; longer would burn
// a core that the reader may need.
// AVA_SPIN_US overrides it (0: no spinning, e.g. on a machine with one core).
std::chrono::microseconds spin_budget() {
  static const std::chrono::microseconds budget(env_u64("AVA_SPIN_US", 20, 0, 100000));
  return budget;
}
// The background reader leaves the channel to callers until it has lain free
// this long (transport/read_baton.hpp).
constexpr auto kCallerIdle = std::chrono::milliseconds(2);
// Bounds on what a misbehaving worker can make the guest hold.
constexpr size_t kMaxAbandoned = 4096;
constexpr size_t kMaxQueuedCallbacks = 4096;
constexpr uint64_t kMaxQueuedCallbackBytes = 256ull << 20;
constexpr uint32_t kMaxUnknownCallbackLogs = 8;

// The waiter of the thread reading right now for its own reply (wait_reply).
thread_local ReplyWaiter *t_reading_for = nullptr;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#else
  std::this_thread::yield();
#endif
}

ava_msg_hdr make_header(uint16_t kind, uint32_t spec_id) {
  ava_msg_hdr hdr;
  std::memset(&hdr, 0, sizeof hdr);
  hdr.magic = AVA_MSG_MAGIC;
  hdr.abi_version = AVA_ABI_VERSION;
  hdr.kind = kind;
  hdr.spec_id = spec_id;
  hdr.total_len = kHeader;
  hdr.thread_id = current_tid();
  return hdr;
}

std::string reason_of(const Status &st) {
  if (!st.message.empty()) {
    return st.message;
  }
  return status_text(st.code);
}

} // namespace

void ReplyWaiter::finish_by_self(MsgBuf *msg) {
  msg_ = std::exchange(*msg, MsgBuf());
  error_ = AVA_OK;
  by_self_ = true;
  state_.store(kDone, std::memory_order_release);
}

void ReplyWaiter::finish(MsgBuf *msg, int error) {
  std::lock_guard lock(mu_);
  if (msg != nullptr) {
    msg_ = std::exchange(*msg, MsgBuf());
  }
  error_ = error;
  state_.store(msg != nullptr ? kDone : kFailed, std::memory_order_release);
  cv_.notify_one();
}

Connection::Connection(const ava_guest_spec *spec, CallbackRegistry *callbacks,
                       TransferTable *transfers, std::unique_ptr<Channel> channel,
                       std::string address, const GuestConfig &config)
    : spec_(spec), callbacks_(callbacks), transfers_(transfers), channel_(std::move(channel)),
      address_(std::move(address)), max_message_(config.max_message),
      call_timeout_ms_(config.call_timeout_ms), callback_timeout_ms_(config.callback_timeout_ms),
      baton_(kCallerIdle), reply_spin_(spin_budget()) {}

Connection::~Connection() {
  try {
    stop_flusher();
    if (reader_.joinable()) {
      channel_->shutdown();
      reader_.join();
    }
    stop_callback_thread();
  } catch (...) {
    // Joining failed: nothing sensible is left to do in a destructor.
  }
}

Status Connection::start() {
  const Channel::Heap h = channel_->heap();
  batch_ = Batch(Batch::Limits::from_env(h.base != nullptr));
  if (h.base != nullptr && h.size > 0) {
    try {
      heap_ = std::make_unique<HeapAllocator>(h.base, h.size);
    } catch (const std::bad_alloc &) {
      heap_.reset(); // zero copy is an optimisation; calls still work without it
    }
  }
  zerocopy_min_ = env_u64("AVA_ZEROCOPY_MIN", zerocopy_min_, 0, UINT64_MAX);
  pipeline_chunk_ = env_u64("AVA_PIPELINE_CHUNK", pipeline_chunk_, 0, 1ull << 30);
  pipeline_window_ = static_cast<uint32_t>(
      env_u64("AVA_PIPELINE_WINDOW", pipeline_window_, 1, kMaxPipelineWindow));
  map_in_heap_ = env_u64("AVA_MAP_IN_HEAP", 1, 0, 1) != 0;
  buffers_in_heap_ = env_u64("AVA_BUFFERS_IN_HEAP", 1, 0, 1) != 0;
  stage_blocking_ = env_u64("AVA_STAGE_BLOCKING", 1, 0, 1) != 0;
  try {
    reader_ = start_quiet_thread([this] { reader_main(); });
  } catch (const std::exception &e) {
    return Status::error(AVA_E_NOMEM, std::string("cannot start the reader thread: ") + e.what());
  }
  return Status::ok();
}

bool Connection::broken() const {
  return broken_.load(std::memory_order_acquire);
}

Status Connection::send_with_batch_locked(const struct iovec *iov, int iovcnt) {
  if (batch_.empty()) {
    return channel_->send(iov, iovcnt);
  }
  // Batched async calls were made first: they go first, in the same write.
  std::vector<struct iovec> all;
  try {
    all.reserve(static_cast<size_t>(iovcnt) + 1);
    all.push_back(batch_.as_iovec());
    all.insert(all.end(), iov, iov + iovcnt);
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "out of memory while sending batched calls");
  }
  Status st = channel_->send(all.data(), static_cast<int>(all.size()));
  batch_.clear();
  return st;
}

Status Connection::send_locked_out(const struct iovec *iov, int iovcnt, bool async,
                                   uint64_t *order) {
  Status st;
  {
    std::lock_guard lock(send_mu_);
    *order = async ? async_sent_++ : async_sent_;
    st = send_with_batch_locked(iov, iovcnt);
  }
  if (!st.is_ok()) {
    mark_broken(reason_of(st));
    return Status::error(AVA_E_CLOSED, "");
  }
  return st;
}

Status Connection::send_batched(const struct iovec *iov, int iovcnt, uint64_t total,
                                uint64_t *order) {
  Status st;
  {
    std::unique_lock lock(send_mu_);
    *order = async_sent_++;
    const bool was_empty = batch_.empty();
    if (!batch_.append(iov, iovcnt, total)) {
      st = send_with_batch_locked(iov, iovcnt);
    } else if (batch_.full()) {
      st = send_with_batch_locked(nullptr, 0);
    } else {
      if (!flusher_.joinable() && !flusher_stop_) {
        try {
          flusher_ = start_quiet_thread([this] { flusher_main(); });
        } catch (const std::exception &) {
          // No timer: send now rather than let calls wait for the next sync call.
          st = send_with_batch_locked(nullptr, 0);
        }
      }
      // The flusher sleeps without a deadline only while the batch is
      // empty; later calls leave the batch's deadline (its oldest call's)
      // as it was, so waking it again would be a system call for nothing.
      if (was_empty)
        flush_cv_.notify_one();
    }
  }
  if (!st.is_ok()) {
    mark_broken(reason_of(st));
    return Status::error(AVA_E_CLOSED, "");
  }
  return st;
}

void Connection::flusher_main() {
  std::unique_lock lock(send_mu_);
  while (!flusher_stop_) {
    if (batch_.empty()) {
      flush_cv_.wait(lock);
      continue;
    }
    const auto deadline = batch_.deadline();
    if (std::chrono::steady_clock::now() < deadline) {
      flush_cv_.wait_until(lock, deadline);
      continue;
    }
    Status st = send_with_batch_locked(nullptr, 0);
    if (!st.is_ok()) {
      lock.unlock();
      mark_broken(reason_of(st));
      lock.lock();
    }
  }
}

void Connection::stop_flusher() {
  {
    std::lock_guard lock(send_mu_);
    flusher_stop_ = true;
  }
  flush_cv_.notify_all();
  if (flusher_.joinable()) {
    flusher_.join();
  }
}

Status Connection::send_call(const struct iovec *iov, int iovcnt, uint64_t total, uint64_t call_id,
                             ReplyWaiter *waiter, bool batchable, uint64_t *order) {
  if (waiter == nullptr) {
    // An async call registers nothing the reader could fail.
    if (broken_.load(std::memory_order_acquire))
      return Status::error(AVA_E_CLOSED, "");
  } else {
    // Checked under the lock that mark_broken fails the waiters under, so a
    // waiter is either failed by it or never registered.
    std::lock_guard lock(pending_mu_);
    if (broken_.load(std::memory_order_relaxed)) {
      return Status::error(AVA_E_CLOSED, "");
    }
    pending_.emplace_back(call_id, waiter);
  }
  Status st = batchable && waiter == nullptr && batch_.accepts(total)
                  ? send_batched(iov, iovcnt, total, order)
                  : send_locked_out(iov, iovcnt, waiter == nullptr, order);
  if (!st.is_ok() && waiter != nullptr) {
    // The reader may be failing the waiter right now; taking pending_mu_
    // waits for it to let go before the caller frees the waiter.
    std::lock_guard lock(pending_mu_);
    take_pending_locked(call_id);
  }
  return st;
}

void Connection::defer_heap_release(uint64_t async_index, void *p) {
  std::lock_guard lock(deferred_mu_);
  try {
    deferred_heap_.emplace_back(async_index, p);
    have_deferred_.store(true, std::memory_order_release);
  } catch (const std::bad_alloc &) {
    // Leaking heap space is better than freeing it under the worker's feet.
  }
}

void Connection::retire_async(uint64_t before) {
  HeapAllocator *h = heap();
  // This thread's own loans are seen (program order); another thread's made
  // just now go with a later sync call.
  if (h == nullptr || !have_deferred_.load(std::memory_order_acquire))
    return;
  std::lock_guard lock(deferred_mu_);
  // Threads defer in about index order, not exactly: look at every entry.
  std::erase_if(deferred_heap_, [&](const std::pair<uint64_t, void *> &e) {
    if (e.first >= before)
      return false;
    h->release(e.second);
    return true;
  });
  have_deferred_.store(!deferred_heap_.empty(), std::memory_order_relaxed);
}

void Connection::remember_abandoned_locked(uint64_t call_id) {
  if (abandoned_order_.size() >= kMaxAbandoned) {
    abandoned_.erase(abandoned_order_.front());
    abandoned_order_.pop_front();
  }
  abandoned_.insert(call_id);
  abandoned_order_.push_back(call_id);
}

namespace {
thread_local uint64_t t_abandoned_call = 0;
} // namespace

uint64_t Connection::abandoned_by_this_thread() {
  return t_abandoned_call;
}

void Connection::let_go(ReadBaton::Member &member) {
  // A callback the worker will send (an event's completion) would otherwise
  // wait for the next call or the grace (2 ms): nobody reads meanwhile.
  if (callbacks_->once_pending() > 0)
    baton_.pass_to_reader(member);
  else
    baton_.pass(member);
}

Status Connection::wait_reply(ReplyWaiter *w, uint64_t call_id, int timeout_ms, bool spin,
                              MsgBuf *out) {
  t_abandoned_call = 0;
  auto done = [w] { return w->state_.load(std::memory_order_acquire) != ReplyWaiter::kWaiting; };
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
  auto left_ms = [&]() -> int {
    if (timeout_ms < 0)
      return -1;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT32_MAX));
  };
  ReadBaton::Member &member = w->member_;
  bool timed_out = false;
  while (!done()) {
    if (member.holds() || baton_.try_take(member)) {
      // Nobody else is reading: read our own reply, which saves handing it over
      // from another thread (a wake-up each way on a busy machine).
      t_reading_for = w;
      while (!done()) {
        const int slice = left_ms();
        if (slice == 0) {
          timed_out = true;
          break;
        }
        std::unique_lock rx(rx_mu_);
        if (!read_one(slice, nullptr, spin))
          break; // broken: mark_broken has failed the waiter
      }
      t_reading_for = nullptr;
      let_go(member);
      break;
    }
    // Another thread reads; it routes our reply to us, or hands us the baton
    // when it lets go. Spin first: the reply is often a moment away (not for
    // a call that waits on the device, whose spin would hold its driver back).
    if (spin) {
      bool full = false;
      const auto spin_until = std::chrono::steady_clock::now() + reply_spin_.next(&full);
      while (!done() && std::chrono::steady_clock::now() < spin_until)
        cpu_relax();
      reply_spin_.ended(full, !done());
      if (done())
        break;
    }
    if (baton_.enlist(member))
      continue; // it was free after all
    {
      std::unique_lock lock(w->mu_);
      auto ready = [&] { return done() || member.holds(); };
      if (timeout_ms < 0)
        w->cv_.wait(lock, ready);
      else
        w->cv_.wait_until(lock, deadline, ready);
    }
    if (baton_.withdraw(member) && done()) {
      let_go(member); // handed to us with our reply already routed
      break;
    }
    if (!member.holds() && !done() && timeout_ms >= 0 &&
        std::chrono::steady_clock::now() >= deadline) {
      timed_out = true;
      break;
    }
  }
  // The loop can end holding the baton: taken (enlist found it free) just
  // after the last holder had routed our reply. Kept, nobody would read again.
  // We are not enlisted here, so holds() is ours to read.
  if (member.holds())
    let_go(member);
  if (!w->by_self_) {
    // Taking the waiter's mutex also waits for the reader to let go of it.
    std::lock_guard lock(w->mu_);
  }
  if (timed_out && !done()) {
    std::lock_guard lock(pending_mu_);
    auto it = std::find_if(pending_.begin(), pending_.end(),
                           [&](const auto &p) { return p.first == call_id; });
    if (it != pending_.end() && it->second == w) {
      take_pending_locked(call_id);
      try {
        remember_abandoned_locked(call_id);
      } catch (...) {
        // Without the record a late reply breaks the connection: still safe.
      }
      t_abandoned_call = call_id;
      return Status::error(AVA_E_TIMEOUT, "no reply within " + std::to_string(timeout_ms) + " ms");
    }
    // The reader finished the waiter under pending_mu_ meanwhile.
  }
  if (w->state_.load(std::memory_order_acquire) == ReplyWaiter::kDone) {
    *out = std::move(w->msg_);
    return Status::ok();
  }
  return Status::error(w->error_, "");
}

namespace {
// Buffers below this are malloc's business; above the cap the memory is
// not kept (a spare that large would outweigh its faults).
constexpr uint64_t kSpareMin = uint64_t{1} << 20;
constexpr uint64_t kSpareMax = uint64_t{1} << 30;
// Smaller spares stay as they are (glibc keeps freed blocks below 32 MiB
// too): lending and taking back the pages after every message of a stream
// of DATA messages would cost more than it saves.
constexpr uint64_t kLendMin = uint64_t{32} << 20;
} // namespace

namespace {
// A small receive buffer kept per thread: a caller reads its reply into it,
// the reply goes with the call, and the call's end gives it back (recycle),
// so a sync call allocates nothing for its reply.
constexpr uint64_t kThreadSpareMax = 64 * 1024;
struct ThreadSpare {
  MsgBuf buf;
  ~ThreadSpare();
};
// Calls still come after the thread's C++ thread_locals are gone (a
// library's atexit handler calling the API in the main thread): then the
// spare is never touched again, and each message gets its own buffer.
// Trivially destructible, so it is valid for the thread's whole life.
thread_local bool t_thread_spare_gone = false;
thread_local ThreadSpare t_thread_spare;
ThreadSpare::~ThreadSpare() {
  t_thread_spare_gone = true;
}

MsgBuf take_thread_spare() {
  return t_thread_spare_gone ? MsgBuf() : std::move(t_thread_spare.buf);
}

// Keeps buf (small) as the thread's spare if it has none; false otherwise.
bool keep_thread_spare(MsgBuf &buf) {
  if (t_thread_spare_gone || buf.capacity() == 0 || buf.capacity() > kThreadSpareMax)
    return false;
  if (t_thread_spare.buf.capacity() == 0)
    t_thread_spare.buf = std::move(buf);
  return true;
}
} // namespace

MsgBuf Connection::take_spare() {
  // Every message asks: without a spare, no lock on the call path.
  if (!have_spare_.load(std::memory_order_relaxed))
    return take_thread_spare();
  std::lock_guard lock(spare_mu_);
  have_spare_.store(false, std::memory_order_relaxed);
  return std::move(spare_);
}

uint64_t Connection::pipeline_chunk(const void *ptr, uint64_t bytes) const {
  uint64_t chunk = pipeline_chunk_;
  uint64_t offset = 0;
  if (heap_ == nullptr || chunk == 0 || ptr == nullptr || heap_->contains(ptr, bytes, &offset))
    return 0;
  // The window's blocks plus one fit the heap several times over, so maps
  // and other transfers keep room: on a small heap (a VM's slot, `ava
  // vmhost --heap-mib`) the pieces shrink to fit, in whole 64 KiB, rather
  // than the transfer going whole through the rings.
  constexpr uint64_t kGrain = 64 * 1024;
  const uint64_t fit = heap_->size() / (4 * (pipeline_window_ + 1)) / kGrain * kGrain;
  chunk = std::min(chunk, fit);
  // Two pieces at least, each lent (zerocopy_min).
  if (chunk == 0 || chunk < zerocopy_min_ || bytes / 2 < chunk)
    return 0;
  return chunk;
}

void *Connection::map_block(uint64_t bytes) const {
  if (heap_ == nullptr || !map_in_heap_ || bytes < zerocopy_min_)
    return nullptr;
  return heap_->allocate(bytes, heap_->size() / 4);
}

void *Connection::buffer_block(uint64_t bytes) const {
  if (heap_ == nullptr || !buffers_in_heap_ || bytes < zerocopy_min_)
    return nullptr;
  return heap_->allocate(bytes, heap_->size() / 4);
}

int Connection::read_until(const std::function<bool()> &done, std::chrono::milliseconds patience) {
  ReplyWaiter w; // only its baton membership
  if (!baton_.try_take(w.member_))
    return -1;
  bool ok = false;
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (!(ok = done()) && !broken()) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      break;
    std::unique_lock rx(rx_mu_);
    if (!read_one(static_cast<int>(std::min<int64_t>(left.count(), INT32_MAX))))
      break; // broken
  }
  let_go(w.member_);
  return ok ? 1 : 0;
}

void *Connection::heap_block_patiently(uint64_t bytes, std::chrono::milliseconds patience) {
  void *p = heap_->allocate(bytes);
  if (p != nullptr || heap_->stalled())
    return p != nullptr ? p : heap_->allocate_patiently(bytes, patience);
  const int read = read_until([&] { return (p = heap_->allocate(bytes)) != nullptr; }, patience);
  if (read < 0)
    return heap_->allocate_patiently(bytes, patience); // whoever reads brings the blocks back
  // Out of patience, it waits no more (and marks the heap stalled, as a patient wait does).
  return p != nullptr ? p : heap_->allocate_patiently(bytes, std::chrono::milliseconds(0));
}

bool Connection::wait_transfer(uint64_t token, std::chrono::milliseconds patience) {
  const int read = read_until([&] { return !transfers_->is_open(token); }, patience);
  return read < 0 ? transfers_->wait_ended(token, patience) : read == 1;
}

int Connection::finish_transfer(uint64_t token, std::chrono::milliseconds patience) {
  if (!wait_transfer(token, patience)) {
    if (!broken())
      return 2;
    // A broken connection ends the wait: its END never comes.
    transfers_->forget(token);
    return -1;
  }
  return transfers_->take_failed(token) ? 0 : 1;
}

void Connection::recycle(MsgBuf &&buf) {
  if (keep_thread_spare(buf))
    return;
  if (buf.capacity() < kSpareMin || buf.capacity() > kSpareMax)
    return;
  MsgBuf old;
  {
    std::lock_guard lock(spare_mu_);
    if (spare_.capacity() >= buf.capacity())
      return;
    // Only a large message dirtied enough of it to be worth lending (the
    // advice walks every page, and each later write takes one back).
    if (buf.size() >= kLendMin)
      buf.lend_pages();
    old = std::move(spare_);
    spare_ = std::move(buf);
    have_spare_.store(true, std::memory_order_relaxed);
  }
  // old is freed here, outside the lock.
}

bool Connection::read_one(int timeout_ms, uint16_t *kind, bool spin) {
  std::string reason;
  try {
    MsgBuf msg = take_spare();
    bool placed = false;
    Status st = transfers_ != nullptr
                    ? channel_->recv_placed(msg, timeout_ms, spin, *transfers_, &placed)
                : spin ? channel_->recv(msg, timeout_ms)
                       : channel_->recv_without_spin(msg, timeout_ms);
    if (st.code == AVA_E_TIMEOUT) {
      recycle(std::move(msg));
      return true; // nothing arrived; a stalled message breaks the channel for the next recv
    }
    if (st.is_ok() && kind != nullptr && msg.size() >= kHeader)
      *kind = msg.header()->kind;
    if (!st.is_ok()) {
      reason = st.code == AVA_E_CLOSED && st.message.empty() ? "the worker closed the connection"
                                                             : reason_of(st);
    } else if (route(msg, placed, &reason)) {
      // A reply or callback took the buffer with it; DATA left it here.
      recycle(std::move(msg));
      return true;
    }
  } catch (...) {
    reason = "out of memory in the guest runtime";
  }
  mark_broken(reason);
  return false;
}

void Connection::mark_broken(const std::string &reason) {
  bool quiet;
  {
    std::lock_guard lock(pending_mu_);
    if (broken_.load(std::memory_order_relaxed)) {
      return;
    }
    // Pairs with the acquire loads in broken() and send_call.
    broken_.store(true, std::memory_order_release);
    quiet = closing_;
    for (auto &[id, waiter] : pending_) {
      waiter->finish(nullptr, AVA_E_CLOSED);
    }
    pending_.clear();
  }
  channel_->shutdown();
  baton_.close();
  if (!quiet) {
    try {
      std::string why = without_address(reason, address_);
      log_line("lost connection to the %s worker (%s): %s", spec_->name, address_.c_str(),
               why.c_str());
    } catch (...) {
      log_line("lost connection to the %s worker", spec_->name);
    }
  }
  {
    std::lock_guard lock(cb_mu_);
    cb_stop_ = true;
    cb_queue_.clear();
    cb_queued_bytes_ = 0;
  }
  cb_cv_.notify_all();
}

// The background reader takes messages nobody waits for (callbacks, replies
// while no caller reads). While calls are in flight it stays away, so that
// callers read their own replies; it comes back once they have been idle.
void Connection::reader_main() {
  while (baton_.fallback_take()) {
    for (;;) {
      if (broken())
        return;
      uint16_t kind = 0;
      {
        std::unique_lock rx(rx_mu_);
        if (!read_one(-1, &kind))
          return;
      }
      if (kind == AVA_MSG_REPLY && callbacks_->once_pending() == 0) {
        // A caller is active: it reads its own replies from its next call on
        // (or the baton comes back here after the grace). With a callback
        // to come, this thread keeps reading instead (let_go).
        baton_.fallback_leave();
        break;
      }
      if (baton_.fallback_offer())
        break; // a caller waits: it reads its own reply from now on
    }
  }
}

bool Connection::route(MsgBuf &msg, bool placed, std::string *reason) {
  if (msg.size() < kHeader) {
    *reason = "message shorter than its header";
    return false;
  }
  if (placed && msg.header()->kind != AVA_MSG_DATA) {
    *reason = "a message whose payload was placed is not DATA";
    return false;
  }
  switch (msg.header()->kind) {
  case AVA_MSG_REPLY:
    return deliver_reply(msg, reason);
  case AVA_MSG_CALLBACK:
    return queue_callback(msg, reason);
  case AVA_MSG_DATA:
    // Copied here, before any later message is routed: a reply or callback
    // that shows the command complete must find its data in place.
    return transfers_->deliver(msg, placed, reason);
  case AVA_MSG_GOODBYE:
    *reason = "the worker said goodbye";
    return false;
  default:
    *reason = "unexpected message of kind " + std::to_string(msg.header()->kind);
    return false;
  }
}

ReplyWaiter *Connection::take_pending_locked(uint64_t call_id) {
  for (auto &entry : pending_) {
    if (entry.first == call_id) {
      ReplyWaiter *waiter = entry.second;
      entry = pending_.back();
      pending_.pop_back();
      return waiter;
    }
  }
  return nullptr;
}

bool Connection::deliver_reply(MsgBuf &msg, std::string *reason) {
  uint64_t call_id = msg.header()->call_id;
  std::lock_guard lock(pending_mu_);
  if (ReplyWaiter *waiter = take_pending_locked(call_id)) {
    if (waiter == t_reading_for)
      waiter->finish_by_self(&msg);
    else
      waiter->finish(&msg, AVA_OK);
    return true;
  }
  if (abandoned_.erase(call_id) != 0) {
    if (transfers_ != nullptr)
      transfers_->reply_arrived(call_id);
    return true;
  }
  *reason = "reply to call " + std::to_string(call_id) + ", which is not waiting for one";
  return false;
}

bool Connection::queue_callback(MsgBuf &msg, std::string *reason) {
  std::unique_lock lock(cb_mu_);
  if (cb_stop_) {
    return true;
  }
  if (cb_queue_.size() >= kMaxQueuedCallbacks ||
      msg.size() > kMaxQueuedCallbackBytes - cb_queued_bytes_) {
    *reason = "too many callbacks queued";
    return false;
  }
  if (!cb_started_) {
    try {
      cb_thread_ = start_quiet_thread([self = shared_from_this()] { self->callback_main(); });
      cb_started_ = true;
    } catch (const std::exception &e) {
      lock.unlock();
      log_line("cannot start the %s callback thread (%s): callback not run", spec_->name, e.what());
      answer_callback(*msg.header(), AVA_OK);
      return true;
    }
  }
  cb_queued_bytes_ += msg.size();
  cb_queue_.push_back(std::exchange(msg, MsgBuf()));
  lock.unlock();
  cb_cv_.notify_all(); // shutdown may wait on the same condition
  return true;
}

void Connection::callback_main() {
  for (;;) {
    MsgBuf msg;
    {
      std::unique_lock lock(cb_mu_);
      cb_cv_.wait(lock, [this] { return cb_stop_ || !cb_queue_.empty(); });
      if (cb_stop_) {
        break;
      }
      msg = std::move(cb_queue_.front());
      cb_queue_.pop_front();
      cb_queued_bytes_ -= msg.size();
    }
    try {
      run_callback(msg);
    } catch (...) {
      log_line("a %s callback raised an exception; it was ignored", spec_->name);
    }
  }
  {
    std::lock_guard lock(cb_mu_);
    cb_exited_ = true;
  }
  cb_cv_.notify_all();
}

void Connection::run_callback(const MsgBuf &msg) {
  ava_msg_hdr hdr;
  std::memcpy(&hdr, msg.data(), sizeof hdr);
  const char *problem = nullptr;
  CallbackEntry entry;
  if (hdr.total_len != msg.size() || hdr.args_len > hdr.total_len - kHeader) {
    problem = "its argument block exceeds the message";
  } else if (hdr.spec_id != spec_->id) {
    problem = "it names another spec";
  } else if (hdr.reserved != 0) {
    problem = "its header has non-zero reserved bits";
  } else if (spec_->callback_dispatch == nullptr) {
    problem = "this spec declares no callbacks";
  } else if (!callbacks_->find(hdr.call_id, &entry)) {
    if (unknown_callbacks_logged_.fetch_add(1) < kMaxUnknownCallbackLogs) {
      log_line("the %s worker asked for callback registration %llu, which is unknown; ignored",
               spec_->name, static_cast<unsigned long long>(hdr.call_id));
    }
  } else if (hdr.func_id != entry.decl_id) {
    // fn would be called through another declaration's type.
    problem = "it names another callback declaration than the one registered";
  } else {
    const uint8_t *args = msg.data() + kHeader;
    const uint8_t *payload = args + hdr.args_len;
    uint64_t payload_len = hdr.total_len - kHeader - hdr.args_len;
    // A once registration ends here: the worker asks for it once at most.
    if (entry.lifetime == AVA_LIFETIME_ONCE)
      callbacks_->remove(hdr.call_id);
    const int rc = spec_->callback_dispatch(hdr.func_id, entry.fn, entry.userdata, args,
                                            hdr.args_len, payload, payload_len);
    if (rc == AVA_E_LENGTH) {
      problem = "a buffer does not hold the bytes its size argument says";
    } else if (rc != 0) {
      problem = "it is malformed";
    }
  }
  // A late callback of an ended registration is no fault; the rest are lies.
  int32_t status = AVA_OK;
  if (problem != nullptr) {
    log_line("ignored a callback message (declaration %u) from the %s worker: %s", hdr.func_id,
             spec_->name, problem);
    status = AVA_E_PROTO;
  }
  answer_callback(hdr, status);
}

void Connection::answer_callback(const ava_msg_hdr &request, int32_t status) {
  ava_msg_hdr done = make_header(AVA_MSG_CALLBACK_DONE, spec_->id);
  done.status = status;
  done.func_id = request.func_id;
  done.call_id = request.call_id;
  done.seq = request.seq;
  struct iovec iov = {&done, sizeof done};
  uint64_t unused_order = 0; // not a CALL: the worker's ordering does not count it
  static_cast<void>(send_locked_out(&iov, 1, false, &unused_order));
}

void Connection::stop_callback_thread() {
  std::unique_lock lock(cb_mu_);
  cb_stop_ = true;
  cb_cv_.notify_all();
  if (!cb_thread_.joinable()) {
    return;
  }
  if (cb_thread_.get_id() == std::this_thread::get_id()) {
    // Shutdown from inside a guest callback: the thread ends when it returns.
    cb_thread_.detach();
    return;
  }
  auto exited = [this] { return cb_exited_; };
  if (callback_timeout_ms_ < 0) {
    cb_cv_.wait(lock, exited);
  } else if (!cb_cv_.wait_for(lock, std::chrono::milliseconds(callback_timeout_ms_), exited)) {
    log_line("a %s callback is still running at shutdown; not waiting for it", spec_->name);
    cb_thread_.detach();
    return;
  }
  lock.unlock();
  cb_thread_.join();
}

void Connection::close() {
  bool was_broken;
  {
    std::lock_guard lock(pending_mu_);
    if (closing_) {
      return;
    }
    closing_ = true;
    was_broken = broken_.load(std::memory_order_relaxed);
  }
  // A callback in progress finishes first (it may still call the API) and
  // answers CALLBACK_DONE before the worker sees GOODBYE.
  stop_callback_thread();
  stop_flusher();
  if (!was_broken) {
    // Batched async calls still go out, before GOODBYE.
    ava_msg_hdr bye = make_header(AVA_MSG_GOODBYE, spec_->id);
    struct iovec iov = {&bye, sizeof bye};
    std::lock_guard lock(send_mu_);
    static_cast<void>(send_with_batch_locked(&iov, 1));
  }
  mark_broken("closed by the guest");
  if (reader_.joinable()) {
    reader_.join();
  }
}

} // namespace ava::guest
