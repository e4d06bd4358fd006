// SPDX-License-Identifier: MIT
#include "worker/shadow_thread.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

#include "worker/connection.hpp"
#include "worker/session.hpp"

namespace ava {
namespace {

thread_local const GuestConnection *tls_connection = nullptr;
thread_local uint64_t tls_guest_thread = 0;
// What a shadow thread's receive buffer keeps after a larger call.
constexpr uint64_t kKeptReadBytes = 1ull << 20;
constexpr int kTrimAfterMs = 1000;

std::string func_name(const ava_worker_spec *spec, uint32_t func_id) {
  if (spec->func_names != nullptr && spec->func_names[func_id] != nullptr)
    return std::string(spec->name) + "." + spec->func_names[func_id];
  return std::string(spec->name) + ".#" + std::to_string(func_id);
}

} // namespace

ShadowThread::ShadowThread(std::shared_ptr<GuestConnection> connection, GuestSession *session,
                           uint64_t guest_thread_id)
    : connection_(std::move(connection)), session_(session), guest_thread_id_(guest_thread_id) {}

ShadowThread::~ShadowThread() {
  stop();
  join();
}

Status ShadowThread::start() {
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error &e) {
    return Status::error(AVA_E_NOMEM, std::string("cannot start a shadow thread: ") + e.what());
  }
  return Status::ok();
}

void ShadowThread::enqueue(MsgBuf message) {
  std::lock_guard lock(mutex_);
  queue_.push_back(std::move(message));
  attention_.store(true, std::memory_order_release); // pairs with run()'s acquire load
  cv_.notify_one();
}

void ShadowThread::stop() {
  std::deque<MsgBuf> dropped;
  std::lock_guard lock(mutex_);
  stopping_ = true;
  attention_.store(true, std::memory_order_release); // pairs with run()'s acquire load
  dropped.swap(queue_);
  cv_.notify_one();
}

void ShadowThread::join() {
  if (thread_.joinable())
    thread_.join();
}

uint64_t ShadowThread::current_guest_thread(const GuestConnection *connection) {
  return tls_connection == connection ? tls_guest_thread : 0;
}

void ShadowThread::run() {
  tls_connection = connection_.get();
  tls_guest_thread = guest_thread_id_;
  ReadBaton::Member member(mutex_, cv_);
  MsgBuf read_buf; // reused for calls this thread reads itself
  for (;;) {
    MsgBuf message;
    bool queued = false;
    bool holds = false;
    // While this thread holds the baton nobody else reads, so nobody queues
    // for it: with nothing queued and no stop asked for, it reads at once
    // (not enlisted here, so holds() is ours to read without the lock).
    if (member.holds() && !attention_.load(std::memory_order_acquire)) {
      holds = true;
    } else {
      std::unique_lock lock(mutex_);
      if (stopping_)
        break;
      if (!queue_.empty()) {
        message = std::move(queue_.front());
        queue_.pop_front();
        queued = true;
      }
      if (queue_.empty())
        attention_.store(false, std::memory_order_relaxed);
      holds = member.holds();
    }
    if (queued) {
      // Never serve while holding the baton: calls of other guest threads and
      // CALLBACK_DONEs must still be read while this call runs.
      if (holds)
        session_->baton().pass(member);
      const uint64_t bytes = message.size(); // serve may keep the buffer for a transfer
      serve(message);
      connection_->dequeued(bytes);
      if (session_ != nullptr)
        session_->give_scratch(message);
      continue;
    }
    if (session_ == nullptr) {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      continue;
    }
    ReadBaton &baton = session_->baton();
    if (!holds && baton.enlist(member)) {
      // Taken at once. The last holder may have queued calls for us after we
      // looked: they come first (they are older than anything we would read),
      // so look again now that nobody else can queue.
      continue;
    }
    if (!holds) {
      // Someone else reads: it queues our calls and wakes us, or hands us the
      // baton when it lets go. No timeout: an idle thread costs nothing, and
      // holds no more than a small buffer; only kept buffers (its OUT block,
      // its large read buffer, now the session's scratch) wait a second for
      // a next call before they go (one wake-up).
      if (read_buf.capacity() > kKeptReadBytes)
        session_->give_scratch(read_buf);
      read_buf.trim(kKeptReadBytes); // what the scratch did not take
      std::unique_lock lock(mutex_);
      auto ready = [&] { return stopping_ || !queue_.empty() || member.holds(); };
      if ((out_spare_.kept_bytes() > 0 || session_->has_scratch()) &&
          !cv_.wait_for(lock, std::chrono::milliseconds(kTrimAfterMs), ready)) {
        lock.unlock();
        out_spare_.release();
        session_->release_scratch();
        lock.lock();
      }
      cv_.wait(lock, ready);
      const bool handed = member.holds();
      lock.unlock();
      if (!handed)
        baton.withdraw(member); // true only if handed meanwhile: the loop sees holds()
      continue;
    }
    // We hold the baton and have nothing queued: read.
    if (session_->queue_full()) {
      baton.pass_to_fallback(member); // it waits for room before reading
      continue;
    }
    // After a large call the buffers (its message, its OUT block) are kept
    // for the next one, but not for good: if nothing comes within a second
    // they go (one wake-up).
    using Result = GuestSession::ReadResult;
    if (read_buf.capacity() <= kKeptReadBytes && session_->has_scratch())
      read_buf = session_->take_scratch();
    const bool large = read_buf.capacity() > kKeptReadBytes || out_spare_.kept_bytes() > 0 ||
                       session_->has_scratch();
    Result r = session_->read_as_holder(guest_thread_id_, &read_buf, large ? kTrimAfterMs : -1);
    if (large && r == Result::Nothing) {
      read_buf.trim(kKeptReadBytes);
      out_spare_.release();
      session_->release_scratch();
    }
    if (r == Result::Mine) {
      baton.pass(member);
      serve(read_buf);
      // Usually nobody took the baton meanwhile: take it back now, which
      // saves the loop's look at the queue before enlisting (it looks once
      // more anyway, holding the baton, before it reads).
      baton.try_take(member);
      continue;
    }
    if (r == Result::Nothing || r == Result::Queued)
      continue; // routed to another thread; we read on
    // Closed: wait to be stopped.
    baton.pass(member);
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return stopping_; });
    break;
  }
  if (session_ != nullptr) {
    // The baton must not keep a pointer to a member that is gone.
    if (session_->baton().withdraw(member))
      session_->baton().pass(member);
  }
  tls_connection = nullptr;
  tls_guest_thread = 0;
}

namespace {

// Reserves what the call allocates under the spec's command table
// (ava_allocates_resource) against the guest's quota; false and *why when
// the quota does not allow it. One resource per call is accounted.
bool reserve_resources(ava_wcall &w, ResourceLedger &ledger, std::string *why) {
  const ava_cmd_table *t = w.spec->cmds;
  if (t == nullptr || !ledger.enabled())
    return true;
  const ava_cmd_desc *d = ava_cmd_lookup(t, w.hdr.func_id);
  if (d == nullptr || uint64_t{d->res_first} + d->res_count > t->nres)
    return true;
  for (uint32_t i = 0; i < d->res_count; ++i) {
    const ava_cmd_res &r = t->res[d->res_first + i];
    if (r.kind != AVA_CMD_RES_ALLOCATES || r.resource >= t->nresource_names)
      continue;
    uint64_t amount = r.amount;
    if ((r.flags & AVA_CMD_RES_ARG) != 0) {
      // The police checked args_len against the table before queueing.
      if (uint64_t{r.arg_offset} + sizeof(uint64_t) > w.hdr.args_len)
        continue;
      uint64_t v = 0;
      std::memcpy(&v, w.args + r.arg_offset, sizeof v);
      amount = v * r.amount;
    } else if ((r.flags & AVA_CMD_RES_CONST) == 0) {
      continue; // only the spec's own code could say how much
    }
    return ledger.reserve(r.resource, t->resource_names[r.resource], amount, &w.charge, why);
  }
  return true;
}

} // namespace

void ShadowThread::serve(MsgBuf &message) {
  ava_wcall w(connection_, &async_error_, message.data());
  w.out_spare = &out_spare_;
  w.message_buf = &message;
  if (session_ != nullptr)
    w.scratch = &session_->scratch(); // a pointer: no reference count touched per call
  const ava_worker_spec *spec = w.spec;
  // hdr.seq is the reader's stamp: the async calls that must run first.
  connection_->wait_async_turn(w.hdr.seq);
  std::string why;
  if (!reserve_resources(w, connection_->resources(), &why)) {
    connection_->log_error(func_name(spec, w.hdr.func_id) + ": refused: " + why);
    connection_->note_refused(AVA_E_POLICY);
    if (!w.sync)
      connection_->async_finished();
    else
      ava_w_fail(&w, AVA_E_POLICY, 0, 0);
    return;
  }
  int rc;
  try {
    CurrentCall current(&w);
    connection_->note_served(w.sync);
    rc = spec->dispatch(&w, w.hdr.func_id);
  } catch (...) {
    // A C++ plugin let an exception escape; the guest must still get an answer.
    connection_->log_error(func_name(spec, w.hdr.func_id) + ": handler threw an exception");
    rc = AVA_E_PROTO;
  }
  connection_->resources().settle(&w.charge);
  if (!w.sync)
    connection_->async_finished();
  if (w.finished)
    return;
  if (w.sync) {
    if (rc == AVA_OK) {
      connection_->log_error(func_name(spec, w.hdr.func_id) + ": handler did not reply");
      rc = AVA_E_PROTO;
    }
    ava_w_fail(&w, rc, 0, 0);
  } else if (rc != AVA_OK) {
    connection_->log_error(func_name(spec, w.hdr.func_id) +
                           ": async call failed: " + status_name(rc));
  }
}

} // namespace ava
