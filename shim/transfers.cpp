// SPDX-License-Identifier: MIT
#include "shim/transfers.hpp"

#include <cstring>
#include <new>

namespace ava::guest {

uint64_t TransferTable::expect(void *dst, uint64_t capacity) {
  std::lock_guard lock(mu_);
  const uint64_t token = next_token_++;
  try {
    open_.emplace(token, Destination{static_cast<uint8_t *>(dst), capacity});
  } catch (const std::bad_alloc &) {
    return 0;
  }
  return token;
}

void TransferTable::cancel(uint64_t token) {
  std::lock_guard lock(mu_);
  open_.erase(token);
}

size_t TransferTable::open() const {
  std::lock_guard lock(mu_);
  return open_.size();
}

bool TransferTable::deliver(const MsgBuf &msg, std::string *reason) {
  ava_msg_hdr hdr;
  std::memcpy(&hdr, msg.data(), sizeof hdr);
  constexpr uint64_t kHeader = sizeof(ava_msg_hdr);
  if (hdr.total_len != msg.size() || hdr.args_len > hdr.total_len - kHeader ||
      hdr.args_len < sizeof(ava_data) || hdr.reserved != 0 || hdr.func_id != 0) {
    *reason = "a DATA message with a malformed header";
    return false;
  }
  ava_data d;
  std::memcpy(&d, msg.data() + kHeader, sizeof d);
  const uint64_t pieces_bytes = hdr.args_len - sizeof d;
  const bool failed = (d.flags & AVA_DATA_FAILED) != 0;
  if ((d.flags & ~AVA_DATA_ALL) != 0 || d.npieces > AVA_DATA_MAX_PIECES ||
      pieces_bytes != static_cast<uint64_t>(d.npieces) * sizeof(ava_data_piece) ||
      (failed && ((d.flags & AVA_DATA_END) == 0 || d.npieces != 0))) {
    *reason = "a DATA message with malformed pieces";
    return false;
  }
  const uint8_t *pieces = msg.data() + kHeader + sizeof d;
  const uint8_t *bytes = msg.data() + kHeader + hdr.args_len;
  const uint64_t payload = hdr.total_len - kHeader - hdr.args_len;

  std::lock_guard lock(mu_);
  auto it = open_.find(hdr.call_id);
  if (it == open_.end()) {
    *reason = "DATA for transfer " + std::to_string(hdr.call_id) + ", which nobody expects";
    return false;
  }
  const Destination dst = it->second;
  // Every piece is checked before any byte is copied: a lying message
  // leaves the destination as it was.
  uint64_t sum = 0;
  for (uint32_t i = 0; i < d.npieces; ++i) {
    ava_data_piece p;
    std::memcpy(&p, pieces + i * sizeof p, sizeof p);
    if (p.offset > dst.capacity || p.length > dst.capacity - p.offset || p.length > payload - sum) {
      *reason = "a DATA piece outside its destination or its message";
      return false;
    }
    sum += p.length;
  }
  if (sum != payload) {
    *reason = "a DATA message whose bytes are not its pieces'";
    return false;
  }
  uint64_t at = 0;
  for (uint32_t i = 0; i < d.npieces; ++i) {
    ava_data_piece p;
    std::memcpy(&p, pieces + i * sizeof p, sizeof p);
    if (p.length > 0)
      std::memcpy(dst.ptr + p.offset, bytes + at, p.length);
    at += p.length;
  }
  if ((d.flags & AVA_DATA_END) != 0)
    open_.erase(it);
  return true;
}

} // namespace ava::guest
