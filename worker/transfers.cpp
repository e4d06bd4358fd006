// SPDX-License-Identifier: MIT
#include "worker/transfers.hpp"

#include <sys/uio.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "ava/wire.h"
#include "shim/ava_shim.h" /* AVA_NO_HEAP */
#include "transport/big_block.hpp"
#include "worker/connection.hpp"
#include "worker/msg_scratch.hpp"
#include "worker/wcall.hpp"

namespace ava {

StagingPool::~StagingPool() {
  for (const Block &b : cached_)
    big_block_free(b.ptr, b.capacity);
}

bool StagingPool::reuse_locked(uint64_t bytes, Block *out) {
  size_t best = cached_.size();
  for (size_t i = 0; i < cached_.size(); ++i) {
    const uint64_t cap = cached_[i].capacity;
    if (cap >= bytes && cap / 2 <= bytes &&
        (best == cached_.size() || cap < cached_[best].capacity))
      best = i;
  }
  if (best == cached_.size())
    return false;
  *out = cached_[best];
  cached_.erase(cached_.begin() + static_cast<ptrdiff_t>(best));
  kept_bytes_ -= charge_of(out->capacity);
  used_ += charge_of(out->capacity);
  return true;
}

StagingPool::Dropped::~Dropped() {
  for (const Block &b : blocks)
    big_block_free(b.ptr, b.capacity);
}

bool StagingPool::room_locked(std::unique_lock<std::mutex> &lock, uint64_t charge,
                              Dropped *dropped) {
  while (!cached_.empty() && used_ + kept_bytes_ > limit_ - charge) {
    dropped->blocks.push_back(cached_.front());
    kept_bytes_ -= charge_of(cached_.front().capacity);
    cached_.erase(cached_.begin());
  }
  return freed_.wait_for(lock, patience_, [&] { return used_ <= limit_ - charge; });
}

void *StagingPool::take(uint64_t bytes, uint64_t *capacity) {
  const uint64_t charge = charge_of(bytes);
  if (charge > limit_)
    return nullptr;
  Dropped dropped; // declared before the lock: freed after it
  Block got{nullptr, 0};
  {
    std::unique_lock lock(mu_);
    if (!reuse_locked(bytes, &got)) {
      if (!room_locked(lock, charge, &dropped))
        return nullptr;
      if (!reuse_locked(bytes, &got))
        used_ += charge; // allocated below, off the lock
    }
  }
  if (got.ptr == nullptr) {
    got.capacity = bytes != 0 ? bytes : 1;
    got.ptr = big_block_alloc(got.capacity, false);
    if (got.ptr == nullptr) {
      {
        std::lock_guard lock(mu_);
        used_ -= charge;
      }
      freed_.notify_all();
      return nullptr;
    }
  }
  *capacity = got.capacity;
  return got.ptr;
}

void StagingPool::give(void *block, uint64_t capacity) {
  bool keep = false;
  {
    std::lock_guard lock(mu_);
    const uint64_t charge = charge_of(capacity);
    used_ -= charge;
    if (capacity >= kCacheMin && cached_.size() < kCachedBlocks &&
        used_ + kept_bytes_ <= limit_ - charge) {
      try {
        cached_.push_back({block, capacity});
        kept_bytes_ += charge;
        keep = true;
      } catch (const std::bad_alloc &) {
        // Not kept: freed below.
      }
    }
  }
  if (!keep)
    big_block_free(block, capacity);
  freed_.notify_all();
}

bool StagingPool::reserve(uint64_t bytes) {
  const uint64_t charge = charge_of(bytes);
  if (charge > limit_)
    return false;
  Dropped dropped; // declared before the lock: freed after it
  std::unique_lock lock(mu_);
  if (!room_locked(lock, charge, &dropped))
    return false;
  used_ += charge;
  return true;
}

void StagingPool::unreserve(uint64_t bytes) {
  {
    std::lock_guard lock(mu_);
    used_ -= charge_of(bytes);
  }
  freed_.notify_all();
}

uint64_t StagingPool::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

Transfer::Transfer(uint64_t token_, uint64_t bytes_, void *staging_, uint64_t capacity_,
                   std::shared_ptr<StagingPool> pool_, std::weak_ptr<GuestConnection> conn)
    : token(token_), bytes(bytes_), staging(staging_), capacity(capacity_),
      source(static_cast<uint8_t *>(staging_)), source_bytes(bytes_), pool(std::move(pool_)),
      connection(std::move(conn)) {}

Transfer::~Transfer() {
  if (release != nullptr)
    release(ctx);
  drop_staging();
}

void Transfer::drop_staging() {
  if (staging_dropped.exchange(true, std::memory_order_acq_rel))
    return;
  if (kept_message != nullptr) {
    kept_message.reset();
    pool->unreserve(capacity);
  } else if (pool != nullptr) {
    pool->give(staging, capacity);
  }
  lent_channel.reset();
}

bool TransferBook::open(const std::shared_ptr<Transfer> &t) {
  std::lock_guard lock(mu_);
  return open_.emplace(t->token, t).second;
}

void TransferBook::start(Transfer &t) {
  std::lock_guard lock(mu_);
  auto it = open_.find(t.token);
  if (it != open_.end() && it->second.get() == &t && !t.started) {
    t.started = true;
    started_.fetch_add(1, std::memory_order_release);
  }
}

void Transfer::advance_ring(uint32_t upto) {
  if (ring == nullptr || ring->advance == nullptr)
    return;
  upto = std::min(upto, ring->segments);
  uint32_t k = ring->advanced.load(std::memory_order_relaxed);
  while (k < upto) {
    // Each segment's slot is given back once, whoever gets here first.
    if (ring->advanced.compare_exchange_weak(k, k + 1, std::memory_order_acq_rel))
      ring->advance(ctx, k++);
  }
}

void TransferBook::abort(uint64_t token) {
  std::shared_ptr<Transfer> gone; // released after the lock
  {
    std::lock_guard lock(mu_);
    auto it = open_.find(token);
    if (it == open_.end())
      return;
    gone = std::move(it->second);
    if (gone->started)
      started_.fetch_sub(1, std::memory_order_relaxed);
    open_.erase(it);
  }
  gone->advance_ring(UINT32_MAX);
}

void TransferBook::drop_all() {
  std::unordered_map<uint64_t, std::shared_ptr<Transfer>> gone;
  {
    std::lock_guard lock(mu_);
    gone.swap(open_);
    started_.store(0, std::memory_order_relaxed);
  }
  // Nothing goes to the guest any more: no command may wait for a slot.
  // A command that failed (the guest's departure fails its user events)
  // never writes its staging again: it goes now, for no completion
  // callback will come for it.
  for (auto &[token, t] : gone) {
    t->advance_ring(UINT32_MAX);
    if (t->ring == nullptr && t->poll != nullptr &&
        t->device.load(std::memory_order_acquire) != Transfer::kDone && t->poll(t->ctx) < 0)
      t->drop_staging();
  }
}

void TransferBook::poll_ring(Transfer &t) {
  Transfer::Ring &r = *t.ring;
  for (uint32_t k = r.sent.load(std::memory_order_acquire); k < r.segments; ++k) {
    int state = r.state[k].load(std::memory_order_acquire);
    if (state == Transfer::kRunning && r.poll != nullptr) {
      const int p = r.poll(t.ctx, k);
      state = p > 0 ? Transfer::kDone : p < 0 ? Transfer::kFailed : Transfer::kRunning;
      if (state != Transfer::kRunning) {
        int running = Transfer::kRunning;
        r.state[k].compare_exchange_strong(running, state, std::memory_order_acq_rel);
      }
    }
    if (state != Transfer::kDone)
      return;
  }
}

uint32_t TransferBook::pump_locked(GuestConnection &conn, const std::shared_ptr<Transfer> &t) {
  Transfer::Ring &r = *t->ring;
  auto it = open_.find(t->token);
  if (it == open_.end() || it->second != t || !t->started)
    return r.sent.load(std::memory_order_relaxed); // ended (and advanced) by someone else
  for (uint32_t k = r.sent.load(std::memory_order_relaxed); k < r.segments; ++k) {
    const int state = r.state[k].load(std::memory_order_acquire);
    if (state == Transfer::kRunning)
      return k;
    const bool ok = state == Transfer::kDone;
    const bool last = k + 1 == r.segments || !ok;
    const Transfer::Piece piece{uint64_t{k} * r.segment_bytes,
                                uint64_t{k % r.slots} * r.segment_bytes, r.length_of(k)};
    // Sent under mu_, as whole transfers are: no later message overtakes it.
    send_pieces_locked(conn, *t, &piece, ok ? 1 : 0, last, ok);
    r.sent.store(k + 1, std::memory_order_release);
    if (last) {
      delivered_.fetch_add(1, std::memory_order_relaxed);
      started_.fetch_sub(1, std::memory_order_relaxed);
      // On an in-order queue the segments after a failed one fail too:
      // none runs again.
      if (!ok)
        t->drop_staging();
      open_.erase(it); // the staging goes once the API lets go of it too
      return r.segments;
    }
  }
  return r.segments;
}

void TransferBook::deliver_segments(GuestConnection &conn, uint64_t token) {
  std::shared_ptr<Transfer> t;
  uint32_t upto = 0;
  {
    std::lock_guard lock(mu_);
    auto it = open_.find(token);
    if (it == open_.end() || it->second->ring == nullptr)
      return;
    t = it->second;
    upto = pump_locked(conn, t);
  }
  t->advance_ring(upto);
}

void TransferBook::flush(GuestConnection &conn) {
  // acquire pairs with start()'s release: a transfer started before this
  // thread's reply was due is seen here.
  if (started_.load(std::memory_order_acquire) == 0)
    return;
  std::vector<std::shared_ptr<Transfer>> started;
  try {
    std::lock_guard lock(mu_);
    started.reserve(open_.size());
    for (const auto &[token, t] : open_)
      if (t->started)
        started.push_back(t);
  } catch (const std::bad_alloc &) {
    // Without the list nothing can be polled; deliveries from the completion
    // callbacks still come, only later than this message.
    conn.log_error("out of memory while looking for finished transfers");
    return;
  }
  for (const std::shared_ptr<Transfer> &t : started) {
    if (t->ring != nullptr) {
      poll_ring(*t);
      uint32_t upto = 0;
      {
        std::lock_guard lock(mu_);
        upto = pump_locked(conn, t);
      }
      t->advance_ring(upto);
      continue;
    }
    int state = t->device.load(std::memory_order_acquire);
    if (state == Transfer::kRunning && t->poll != nullptr) {
      // The API's own status, asked off every lock of ours: its completion
      // callback may be running right now and need them.
      const int p = t->poll(t->ctx);
      state = p > 0 ? Transfer::kDone : p < 0 ? Transfer::kFailed : Transfer::kRunning;
    }
    if (state == Transfer::kRunning)
      continue;
    {
      std::lock_guard lock(mu_);
      finish_locked(conn, t->token, t.get(), state == Transfer::kDone);
    }
    if (state == Transfer::kFailed)
      t->drop_staging();
  }
}

void TransferBook::deliver(GuestConnection &conn, uint64_t token) {
  std::shared_ptr<Transfer> keep;
  std::lock_guard lock(mu_);
  auto it = open_.find(token);
  if (it == open_.end())
    return;
  keep = it->second;
  finish_locked(conn, token, keep.get(),
                keep->device.load(std::memory_order_acquire) == Transfer::kDone);
}

void TransferBook::finish_locked(GuestConnection &conn, uint64_t token, const Transfer *expected,
                                 bool ok) {
  auto it = open_.find(token);
  if (it == open_.end() || it->second.get() != expected || !it->second->started)
    return; // delivered by someone else meanwhile
  // Sent under mu_: another thread's flush waits here until these bytes are
  // on the channel, so its own message cannot overtake them.
  send_locked(conn, *it->second, ok);
  delivered_.fetch_add(1, std::memory_order_relaxed);
  started_.fetch_sub(1, std::memory_order_relaxed);
  open_.erase(it); // the staging goes once the API lets go of it too
}

void TransferBook::send_locked(GuestConnection &conn, const Transfer &t, bool ok) {
  send_pieces_locked(conn, t, t.pieces.data(), t.pieces.size(), true, ok);
}

void TransferBook::send_pieces_locked(GuestConnection &conn, const Transfer &t,
                                      const Transfer::Piece *all, size_t count, bool end, bool ok) {
  // Fixed arrays (8 KiB of stack): this runs on driver threads too, where
  // nothing may throw, and a message must not be lost to an allocation.
  std::array<ava_data_piece, kMaxPieces> pieces;
  std::array<struct iovec, 3 + kMaxPieces> iov;
  const uint64_t chunk = std::min<uint64_t>(kChunkBytes, conn.max_message() / 2);
  // Bytes in the lent heap block do not travel: only the pieces do.
  const uint64_t room = t.lent() ? UINT64_MAX : chunk;
  size_t next = 0;     // piece of t
  uint64_t inside = 0; // bytes of that piece already sent
  for (;;) {
    ava_msg_hdr hdr{};
    ava_data d{};
    size_t npieces = 0, niov = 3; // header, ava_data, pieces; then the bytes
    uint64_t bytes = 0;
    while (ok && next < count && npieces < kMaxPieces && bytes < room) {
      const Transfer::Piece &p = all[next];
      const uint64_t len = std::min(p.len - inside, room - bytes);
      if (len > 0) {
        pieces[npieces++] = {p.dst + inside, len};
        if (!t.lent())
          iov[niov++] = {t.source + p.src + inside, len};
      }
      bytes += len;
      inside += len;
      if (inside == p.len) {
        ++next;
        inside = 0;
      }
    }
    const bool last = !ok || next == count;
    d.npieces = static_cast<uint32_t>(npieces);
    d.flags = (last && end ? AVA_DATA_END : 0u) | (ok ? 0u : AVA_DATA_FAILED) |
              (ok && t.lent() ? AVA_DATA_HEAP : 0u);
    iov[0] = {&hdr, sizeof hdr};
    iov[1] = {&d, sizeof d};
    iov[2] = {pieces.data(), npieces * sizeof(ava_data_piece)};
    hdr.magic = AVA_MSG_MAGIC;
    hdr.abi_version = AVA_ABI_VERSION;
    hdr.kind = AVA_MSG_DATA;
    hdr.spec_id = conn.spec() != nullptr ? conn.spec()->id : 0;
    hdr.args_len = static_cast<uint32_t>(sizeof d + iov[2].iov_len);
    hdr.total_len = sizeof hdr + hdr.args_len + (t.lent() ? 0 : bytes);
    hdr.call_id = t.token;
    if (!conn.send_data(iov.data(), static_cast<int>(niov)).is_ok() || last)
      return;
  }
}

} // namespace ava

namespace {

struct Handle {
  std::shared_ptr<ava::Transfer> t; // the API's reference
  // The API's completions still to come: one, or a ring's segments.
  std::atomic<uint32_t> pending{1};
};

Handle *handle_of(ava_w_transfer *t) {
  return reinterpret_cast<Handle *>(t);
}

} // namespace

AVA_W_EXPORT ava_w_transfer *ava_w_transfer_begin(uint64_t token, uint64_t staging_bytes,
                                                  uint64_t heap_offset) {
  ava_wcall *w = ava::current_call();
  if (w == nullptr)
    return nullptr;
  ava::GuestConnection &conn = *w->connection;
  ava::TransferBook &book = conn.transfers();
  const bool lent = heap_offset != AVA_NO_HEAP;
  if (lent && (token == 0 || w->heap == nullptr || heap_offset > w->heap_size ||
               staging_bytes > w->heap_size - heap_offset)) {
    conn.log_error("a staged transfer lent a range outside the shared heap");
    return nullptr;
  }
  uint64_t capacity = 0;
  void *staging = lent ? w->heap + heap_offset : book.pool()->take(staging_bytes, &capacity);
  if (staging == nullptr)
    return nullptr;
  auto *raw = new (std::nothrow) ava::Transfer(token, staging_bytes, staging, capacity,
                                               lent ? nullptr : book.pool(), w->connection);
  if (raw == nullptr) {
    if (!lent)
      book.pool()->give(staging, capacity);
    return nullptr;
  }
  try {
    if (lent)
      raw->lent_channel = w->connection;
    auto *h = new Handle{std::shared_ptr<ava::Transfer>(raw)}; // deletes raw if it throws
    if (token != 0 && !book.open(h->t)) {
      conn.log_error("a staged transfer named token " + std::to_string(token) +
                     ", which is in use");
      delete h;
      return nullptr;
    }
    return reinterpret_cast<ava_w_transfer *>(h);
  } catch (const std::bad_alloc &) {
    return nullptr;
  }
}

namespace {

// Whether large IN bytes may stay in their message buffer as a transfer's
// staging (AVA_STAGE_IN_PLACE=0 copies them, as before; read once).
bool stage_in_place() {
  static const bool on = [] {
    const char *v = std::getenv("AVA_STAGE_IN_PLACE");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

} // namespace

AVA_W_EXPORT ava_w_transfer *ava_w_transfer_begin_in(const void *ptr, uint64_t bytes) {
  ava_wcall *w = ava::current_call();
  if (w == nullptr)
    return nullptr;
  const auto *p = static_cast<const uint8_t *>(ptr);
  // Kept already by an earlier transfer of this call, or still the call's.
  ava::MsgBuf *message = w->kept_message != nullptr ? &w->kept_message->buf : w->message_buf;
  // The call's own message buffer (sockets; on shm large bytes come in the
  // heap), not one the guest could write to after the call: what it holds
  // was received, and nothing reads into it while the call or a transfer
  // keeps it.
  const bool in_message = p != nullptr && message != nullptr && w->scratch != nullptr &&
                          bytes >= ava::MsgScratch::kMin && message->data() != nullptr &&
                          p >= message->data() && bytes <= message->size() &&
                          static_cast<uint64_t>(p - message->data()) <= message->size() - bytes;
  if (!in_message || !stage_in_place()) {
    ava_w_transfer *t = ava_w_transfer_begin(0, bytes, AVA_NO_HEAP);
    if (t != nullptr && p != nullptr)
      std::memcpy(ava_w_transfer_staging(t), p, bytes);
    return t;
  }
  ava::TransferBook &book = w->connection->transfers();
  try {
    if (w->kept_message == nullptr)
      w->kept_message = std::make_shared<ava::KeptMessage>(std::move(*w->message_buf), *w->scratch);
    if (!book.pool()->reserve(bytes))
      return nullptr;
    auto *raw = new (std::nothrow)
        ava::Transfer(0, bytes, const_cast<uint8_t *>(p), bytes, book.pool(), w->connection);
    if (raw == nullptr) {
      book.pool()->unreserve(bytes);
      return nullptr;
    }
    raw->kept_message = w->kept_message;
    book.note_in_place();
    return reinterpret_cast<ava_w_transfer *>(new Handle{std::shared_ptr<ava::Transfer>(raw)});
  } catch (const std::bad_alloc &) {
    return nullptr;
  }
}

AVA_W_EXPORT int ava_w_heap_holds(const void *p, uint64_t bytes) {
  const ava_wcall *w = ava::current_call();
  if (w == nullptr || w->heap == nullptr || p == nullptr)
    return 0;
  const auto at = reinterpret_cast<uintptr_t>(p);
  const auto base = reinterpret_cast<uintptr_t>(w->heap);
  return at >= base && at - base <= w->heap_size && bytes <= w->heap_size - (at - base) ? 1 : 0;
}

AVA_W_EXPORT void *ava_w_transfer_staging(ava_w_transfer *t) {
  return t != nullptr ? handle_of(t)->t->staging : nullptr;
}

AVA_W_EXPORT void ava_w_transfer_source(ava_w_transfer *t, void *src, uint64_t bytes) {
  if (t == nullptr)
    return;
  ava::Transfer &x = *handle_of(t)->t;
  x.source = static_cast<uint8_t *>(src);
  x.source_bytes = src != nullptr ? bytes : 0;
  x.pieces.clear();
}

AVA_W_EXPORT int ava_w_transfer_piece(ava_w_transfer *t, uint64_t dst_offset,
                                      uint64_t staging_offset, uint64_t length) {
  if (t == nullptr)
    return AVA_E_PROTO;
  ava::Transfer &x = *handle_of(t)->t;
  if (staging_offset > x.source_bytes || length > x.source_bytes - staging_offset ||
      dst_offset > UINT64_MAX - length)
    return AVA_E_LENGTH;
  if (x.lent() && dst_offset != staging_offset)
    return AVA_E_PROTO; // the guest finds the bytes at the destination's offsets
  try {
    x.pieces.push_back({dst_offset, staging_offset, length});
  } catch (const std::bad_alloc &) {
    return AVA_E_NOMEM;
  }
  return AVA_OK;
}

AVA_W_EXPORT void ava_w_transfer_start(ava_w_transfer *t, int (*poll)(void *ctx),
                                       void (*release)(void *ctx), void *ctx) {
  if (t == nullptr)
    return;
  ava::Transfer &x = *handle_of(t)->t;
  if (x.ring == nullptr) { // a ring keeps what ava_w_transfer_ring said
    x.poll = poll;
    x.release = release;
    x.ctx = ctx;
  }
  if (x.token == 0)
    return;
  if (auto conn = x.connection.lock())
    conn->transfers().start(x);
}

AVA_W_EXPORT void ava_w_transfer_finished(ava_w_transfer *t, int ok) {
  if (t == nullptr)
    return;
  Handle *h = handle_of(t);
  // release pairs with flush()'s acquire: the staging's bytes are the API's
  // finished ones for whoever sees kDone.
  h->t->device.store(ok ? ava::Transfer::kDone : ava::Transfer::kFailed, std::memory_order_release);
  if (h->t->token != 0) {
    if (auto conn = h->t->connection.lock())
      conn->transfers().deliver(*conn, h->t->token);
  }
  delete h;
}

AVA_W_EXPORT void ava_w_transfer_abort(ava_w_transfer *t) {
  if (t == nullptr)
    return;
  Handle *h = handle_of(t);
  if (h->t->token != 0) {
    if (auto conn = h->t->connection.lock())
      conn->transfers().abort(h->t->token);
  }
  delete h;
}

AVA_W_EXPORT int ava_w_transfer_ring(ava_w_transfer *t, uint64_t bytes, uint64_t segment_bytes,
                                     uint32_t slots, int (*poll)(void *ctx, uint32_t k),
                                     void (*advance)(void *ctx, uint32_t k),
                                     void (*release)(void *ctx), void *ctx) {
  if (t == nullptr)
    return AVA_E_PROTO;
  Handle *h = handle_of(t);
  ava::Transfer &x = *h->t;
  if (x.lent() || x.token == 0 || x.ring != nullptr || bytes == 0 || segment_bytes == 0 ||
      slots == 0 || segment_bytes > x.capacity / slots || (bytes - 1) / segment_bytes >= UINT32_MAX)
    return AVA_E_PROTO;
  try {
    auto ring = std::make_unique<ava::Transfer::Ring>();
    ring->segment_bytes = segment_bytes;
    ring->slots = slots;
    ring->segments = static_cast<uint32_t>((bytes - 1) / segment_bytes + 1);
    ring->bytes = bytes;
    ring->state = std::make_unique<std::atomic<int>[]>(ring->segments);
    for (uint32_t k = 0; k < ring->segments; ++k)
      ring->state[k].store(ava::Transfer::kRunning, std::memory_order_relaxed);
    ring->poll = poll;
    ring->advance = advance;
    h->pending.store(ring->segments, std::memory_order_relaxed);
    x.ring = std::move(ring);
  } catch (const std::bad_alloc &) {
    return AVA_E_NOMEM;
  }
  x.release = release;
  x.ctx = ctx;
  return AVA_OK;
}

AVA_W_EXPORT void *ava_w_transfer_slot(ava_w_transfer *t, uint32_t k) {
  if (t == nullptr)
    return nullptr;
  const ava::Transfer &x = *handle_of(t)->t;
  if (x.ring == nullptr || k >= x.ring->segments)
    return nullptr;
  return static_cast<uint8_t *>(x.staging) + uint64_t{k % x.ring->slots} * x.ring->segment_bytes;
}

AVA_W_EXPORT void ava_w_transfer_segment_done(ava_w_transfer *t, uint32_t k, int ok) {
  if (t == nullptr)
    return;
  Handle *h = handle_of(t);
  ava::Transfer &x = *h->t;
  if (x.ring != nullptr && k < x.ring->segments) {
    int running = ava::Transfer::kRunning;
    // release pairs with the pump's acquire: the slot's bytes are the API's
    // finished ones for whoever sees kDone.
    x.ring->state[k].compare_exchange_strong(
        running, ok ? ava::Transfer::kDone : ava::Transfer::kFailed, std::memory_order_acq_rel);
    if (auto conn = x.connection.lock())
      conn->transfers().deliver_segments(*conn, x.token);
    else
      x.advance_ring(UINT32_MAX); // the guest is gone: nothing waits for its bytes
  }
  if (h->pending.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete h;
}
