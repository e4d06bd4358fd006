// SPDX-License-Identifier: MIT
#include "shim/transfers.hpp"

#include <algorithm>
#include <cstring>
#include <new>

#include "shim/connection.hpp"

namespace ava::guest {

uint64_t TransferTable::add(Destination d) {
  std::lock_guard lock(mu_);
  const uint64_t token = next_token_++;
  try {
    open_.emplace(token, std::move(d));
  } catch (const std::bad_alloc &) {
    return 0;
  }
  return token;
}

uint64_t TransferTable::expect(void *dst, uint64_t capacity, bool keep_failure) {
  Destination d{static_cast<uint8_t *>(dst), capacity, nullptr};
  d.keep_failure = keep_failure;
  return add(std::move(d));
}

bool TransferTable::take_failed(uint64_t token) {
  std::lock_guard lock(mu_);
  auto it = std::find(failed_.begin(), failed_.end(), token);
  if (it == failed_.end())
    return false;
  failed_.erase(it);
  return true;
}

namespace {

// A block of conn's heap, released (if conn still lives) with the last copy.
// Out of memory, it goes back at once when nobody can be using it yet
// (in_use false), else it leaks: better than a block reused under the worker.
std::shared_ptr<uint8_t> heap_owned(const std::shared_ptr<Connection> &conn, void *block,
                                    bool in_use) {
  // The connection holds the heap: a block outliving it has nothing to go back to.
  std::weak_ptr<Connection> owner = conn;
  try {
    return std::shared_ptr<uint8_t>(static_cast<uint8_t *>(block), [owner](uint8_t *p) {
      if (auto c = owner.lock())
        c->heap()->release(p);
    });
  } catch (const std::bad_alloc &) {
    if (!in_use)
      conn->heap()->release(block);
    return nullptr;
  }
}

// How long a transfer waits for lent blocks to come back when the heap is
// full (a run of non-blocking transfers larger than the heap) before it
// takes the slower path that needs none: blocks come back as the worker's
// commands finish, every few milliseconds while the device is busy.
constexpr std::chrono::milliseconds kHeapPatience{100};

// A new block of conn's heap, owned as above.
std::shared_ptr<uint8_t> lend_block(const std::shared_ptr<Connection> &conn, uint64_t bytes) {
  void *block = conn->heap_block_patiently(bytes, kHeapPatience);
  return block != nullptr ? heap_owned(conn, block, false) : nullptr;
}

} // namespace

uint64_t TransferTable::lend(const void *src, uint64_t bytes,
                             const std::shared_ptr<Connection> &conn, uint64_t *heap_offset) {
  *heap_offset = AVA_NO_HEAP;
  HeapAllocator *heap = conn != nullptr ? conn->heap() : nullptr;
  if (heap == nullptr || bytes == 0 || bytes < conn->zerocopy_min())
    return 0;
  uint64_t offset = 0;
  std::shared_ptr<uint8_t> lent;
  if (heap->contains(src, bytes, &offset)) {
    // Already in the heap (ava_zerocopy_alloc): the program's bytes are the
    // source, as natively, and stay the program's.
    lent =
        std::shared_ptr<uint8_t>(static_cast<uint8_t *>(const_cast<void *>(src)), [](uint8_t *) {});
  } else {
    lent = lend_block(conn, bytes);
    if (lent == nullptr)
      return 0;
    std::memcpy(lent.get(), src, bytes);
    heap->contains(lent.get(), bytes, &offset);
  }
  // No destination: the worker's END only says the API is done with the block.
  const uint64_t token = add({nullptr, bytes, std::move(lent)});
  if (token != 0)
    *heap_offset = offset;
  return token;
}

uint64_t TransferTable::lend_storage(uint64_t bytes, const std::shared_ptr<Connection> &conn,
                                     uint64_t *heap_offset, void **storage) {
  *heap_offset = AVA_NO_HEAP;
  *storage = nullptr;
  // The heap's blocks are 64-byte aligned; OpenCL's widest types want 128.
  constexpr uint64_t kAlign = 128;
  if (conn == nullptr || bytes == 0 || bytes > UINT64_MAX - kAlign)
    return 0;
  void *block = conn->buffer_block(bytes + kAlign - 64);
  if (block == nullptr)
    return 0;
  std::shared_ptr<uint8_t> lent = heap_owned(conn, block, false);
  if (lent == nullptr)
    return 0;
  auto *at = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(block) + kAlign - 1) &
                                         ~static_cast<uintptr_t>(kAlign - 1));
  uint64_t offset = 0;
  if (!conn->heap()->contains(at, bytes, &offset))
    return 0;
  // No destination: the END says the API's object (and its memory) is gone.
  const uint64_t token = add({nullptr, bytes, std::move(lent)});
  if (token != 0) {
    *heap_offset = offset;
    *storage = at;
  }
  return token;
}

uint64_t TransferTable::expect_lent(void *dst, uint64_t capacity,
                                    const std::shared_ptr<Connection> &conn, uint64_t *heap_offset,
                                    bool keep_failure) {
  *heap_offset = AVA_NO_HEAP;
  HeapAllocator *heap = conn != nullptr ? conn->heap() : nullptr;
  if (heap == nullptr || capacity < conn->zerocopy_min())
    return expect(dst, capacity, keep_failure);
  uint64_t offset = 0;
  std::shared_ptr<uint8_t> lent;
  if (heap->contains(dst, capacity, &offset)) {
    lent = std::shared_ptr<uint8_t>(static_cast<uint8_t *>(dst), [](uint8_t *) {});
  } else if ((lent = lend_block(conn, capacity)) != nullptr) {
    heap->contains(lent.get(), capacity, &offset);
  } else {
    return expect(dst, capacity, keep_failure); // heap full: the bytes travel in DATA messages
  }
  Destination d{static_cast<uint8_t *>(dst), capacity, std::move(lent)};
  d.keep_failure = keep_failure;
  const uint64_t token = add(std::move(d));
  if (token != 0)
    *heap_offset = offset;
  return token;
}

void TransferTable::adopt(uint64_t token, void *block, const std::shared_ptr<Connection> &conn) {
  if (block == nullptr || conn == nullptr || conn->heap() == nullptr)
    return;
  std::shared_ptr<uint8_t> owned = heap_owned(conn, block, true);
  if (owned == nullptr)
    return;
  std::lock_guard lock(mu_);
  auto it = open_.find(token);
  if (it != open_.end() && it->second.lent != nullptr && it->second.lent.get() == owned.get())
    it->second.lent = std::move(owned); // goes with the END
  // else: the END came (or the token is unknown), so the worker is done with
  // the block, and it goes back now, with owned.
}

void TransferTable::cancel(uint64_t token, uint64_t abandoned_call) {
  std::unique_lock lock(mu_);
  wait_unplaced(lock, token);
  auto it = open_.find(token);
  if (it == open_.end())
    return;
  if (abandoned_call == 0) {
    open_.erase(it);
    ended_.notify_all();
    return;
  }
  // A lent heap block stays lent too: the worker may still write into it.
  it->second.ptr = nullptr;
  it->second.abandoned_call = abandoned_call;
}

void TransferTable::forget(uint64_t token) {
  std::unique_lock lock(mu_);
  wait_unplaced(lock, token);
  auto it = open_.find(token);
  if (it != open_.end())
    it->second.ptr = nullptr; // a tombstone until the END (abandoned_call 0: no reply ends it)
}

void TransferTable::reply_arrived(uint64_t call_id) {
  std::lock_guard lock(mu_);
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.ptr == nullptr && it->second.abandoned_call == call_id)
      it = open_.erase(it);
    else
      ++it;
  }
}

bool TransferTable::is_open(uint64_t token) const {
  std::lock_guard lock(mu_);
  return open_.find(token) != open_.end();
}

bool TransferTable::wait_ended(uint64_t token, std::chrono::milliseconds patience) {
  std::unique_lock lock(mu_);
  return ended_.wait_for(lock, patience, [&] { return open_.find(token) == open_.end(); });
}

size_t TransferTable::open() const {
  std::lock_guard lock(mu_);
  return open_.size();
}

bool TransferTable::parse_head(const uint8_t *head, uint64_t head_len, DataHead *out,
                               std::string *reason) {
  constexpr uint64_t kHeader = sizeof(ava_msg_hdr);
  DataHead &h = *out;
  if (head_len < kHeader) {
    *reason = "a DATA message with a malformed header";
    return false;
  }
  std::memcpy(&h.hdr, head, sizeof h.hdr);
  if (h.hdr.kind != AVA_MSG_DATA || h.hdr.total_len < head_len ||
      h.hdr.args_len != head_len - kHeader || h.hdr.args_len < sizeof(ava_data) ||
      h.hdr.reserved != 0 || h.hdr.func_id != 0) {
    *reason = "a DATA message with a malformed header";
    return false;
  }
  std::memcpy(&h.d, head + kHeader, sizeof h.d);
  const uint64_t pieces_bytes = h.hdr.args_len - sizeof h.d;
  const bool failed = (h.d.flags & AVA_DATA_FAILED) != 0;
  if ((h.d.flags & ~AVA_DATA_ALL) != 0 || h.d.npieces > AVA_DATA_MAX_PIECES ||
      pieces_bytes != static_cast<uint64_t>(h.d.npieces) * sizeof(ava_data_piece) ||
      (failed && ((h.d.flags & AVA_DATA_END) == 0 || h.d.npieces != 0))) {
    *reason = "a DATA message with malformed pieces";
    return false;
  }
  h.pieces = head + kHeader + sizeof h.d;
  h.payload = h.hdr.total_len - head_len;
  return true;
}

bool TransferTable::pieces_fit(const Destination &dst, const DataHead &h, std::string *reason) {
  const bool in_heap = (h.d.flags & AVA_DATA_HEAP) != 0;
  if (in_heap && (dst.lent == nullptr || h.payload != 0)) {
    *reason = "DATA in the heap for a transfer that lent none";
    return false;
  }
  uint64_t sum = 0;
  for (uint32_t i = 0; i < h.d.npieces; ++i) {
    ava_data_piece p;
    std::memcpy(&p, h.pieces + i * sizeof p, sizeof p);
    if (p.offset > dst.capacity || p.length > dst.capacity - p.offset ||
        (!in_heap && p.length > h.payload - sum)) {
      *reason = "a DATA piece outside its destination or its message";
      return false;
    }
    sum += in_heap ? 0 : p.length;
  }
  if (sum != h.payload) {
    *reason = "a DATA message whose bytes are not its pieces'";
    return false;
  }
  return true;
}

bool TransferTable::place(const uint8_t *head, uint64_t head_len, struct iovec *iov, int *iovcnt) {
  DataHead h;
  std::string ignored; // deliver says it, for the message received whole
  if (!parse_head(head, head_len, &h, &ignored) || (h.d.flags & AVA_DATA_HEAP) != 0 ||
      h.d.npieces > static_cast<uint32_t>(kMaxPlaces))
    return false;
  std::lock_guard lock(mu_);
  auto it = open_.find(h.hdr.call_id);
  // A tombstone's bytes go nowhere: received whole, then dropped.
  if (it == open_.end() || it->second.ptr == nullptr || placing_ != 0 ||
      !pieces_fit(it->second, h, &ignored))
    return false;
  int n = 0;
  for (uint32_t i = 0; i < h.d.npieces; ++i) {
    ava_data_piece p;
    std::memcpy(&p, h.pieces + i * sizeof p, sizeof p);
    if (p.length > 0)
      iov[n++] = {it->second.ptr + p.offset, p.length};
  }
  *iovcnt = n;
  placing_ = h.hdr.call_id;
  return true;
}

void TransferTable::landed(bool ok) {
  (void)ok; // a broken channel breaks the connection; what landed is the program's
  {
    std::lock_guard lock(mu_);
    placing_ = 0;
  }
  landed_.notify_all();
}

void TransferTable::wait_unplaced(std::unique_lock<std::mutex> &lock, uint64_t token) {
  // The placing reader ends within the channel's stall timeout, or breaks it.
  landed_.wait(lock, [&] { return placing_ != token; });
}

bool TransferTable::deliver(const MsgBuf &msg, bool placed, std::string *reason) {
  constexpr uint64_t kHeader = sizeof(ava_msg_hdr);
  if (msg.size() < kHeader + sizeof(ava_data)) {
    *reason = "a DATA message with a malformed header";
    return false;
  }
  ava_msg_hdr hdr;
  std::memcpy(&hdr, msg.data(), sizeof hdr);
  // A message received whole holds its payload; a placed one only its head.
  const uint64_t head_len =
      placed ? msg.size() : (hdr.args_len <= msg.size() - kHeader ? kHeader + hdr.args_len : 0);
  DataHead h;
  if (head_len == 0 || !parse_head(msg.data(), head_len, &h, reason))
    return false;
  if (!placed && h.hdr.total_len != msg.size()) {
    *reason = "a DATA message with a malformed header";
    return false;
  }
  const bool in_heap = (h.d.flags & AVA_DATA_HEAP) != 0;
  const uint8_t *bytes = msg.data() + head_len;

  std::lock_guard lock(mu_);
  auto it = open_.find(h.hdr.call_id);
  if (it == open_.end()) {
    *reason = "DATA for transfer " + std::to_string(h.hdr.call_id) + ", which nobody expects";
    return false;
  }
  const Destination &dst = it->second;
  // Every piece is checked before any byte is copied: a lying message
  // leaves the destination as it was.
  if (!pieces_fit(dst, h, reason))
    return false;
  uint64_t at = 0;
  for (uint32_t i = 0; !placed && i < h.d.npieces; ++i) {
    ava_data_piece p;
    std::memcpy(&p, h.pieces + i * sizeof p, sizeof p);
    // A tombstone's bytes go nowhere.
    if (dst.ptr != nullptr && p.length > 0) {
      if (!in_heap)
        std::memcpy(dst.ptr + p.offset, bytes + at, p.length);
      else if (dst.lent.get() != dst.ptr)
        std::memcpy(dst.ptr + p.offset, dst.lent.get() + p.offset, p.length);
    }
    at += in_heap ? 0 : p.length;
  }
  if ((h.d.flags & AVA_DATA_END) != 0) {
    if (dst.keep_failure && dst.ptr != nullptr && (h.d.flags & AVA_DATA_FAILED) != 0) {
      try {
        failed_.push_back(h.hdr.call_id);
      } catch (const std::bad_alloc &) {
        *reason = "out of memory in the guest runtime";
        return false;
      }
    }
    open_.erase(it);
    // Pairs with wait_ended's wait (under mu_, so none is missed).
    ended_.notify_all();
  }
  return true;
}

} // namespace ava::guest
