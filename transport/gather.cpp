// SPDX-License-Identifier: MIT
#include "transport/gather.hpp"

#include <algorithm>
#include <cstring>

namespace ava {

Status check_gather_messages(const struct iovec *iov, int iovcnt, uint64_t max_message,
                             const std::string &who, uint64_t *total_out) {
  *total_out = 0;
  if (iovcnt < 0 || (iovcnt > 0 && iov == nullptr))
    return Status::error(AVA_E_PROTO, who + ": send: invalid gather list");
  uint64_t total = 0;
  for (int i = 0; i < iovcnt; ++i) {
    if (iov[i].iov_len > 0 && iov[i].iov_base == nullptr)
      return Status::error(AVA_E_PROTO, who + ": send: gather list entry " + std::to_string(i) +
                                            " has no buffer");
    if (total + iov[i].iov_len < total)
      return Status::error(AVA_E_TOO_BIG, who + ": send: gather list length overflows");
    total += iov[i].iov_len;
  }
  // Walk the messages: next_msg is where the next header starts.
  uint64_t next_msg = 0;
  uint64_t pos = 0; // bytes before iov[i]
  ava_msg_hdr hdr;
  size_t hdr_have = 0;
  int count = 0;
  for (int i = 0; i < iovcnt; ++i) {
    const uint64_t len = iov[i].iov_len;
    const auto *base = static_cast<const uint8_t *>(iov[i].iov_base);
    uint64_t at = 0;
    while (at < len) {
      const uint64_t abs = pos + at;
      if (hdr_have == 0 && abs < next_msg) {
        at = std::min(len, next_msg - pos);
        continue;
      }
      const size_t take = static_cast<size_t>(std::min<uint64_t>(len - at, sizeof hdr - hdr_have));
      std::memcpy(reinterpret_cast<uint8_t *>(&hdr) + hdr_have, base + at, take);
      hdr_have += take;
      at += take;
      if (hdr_have < sizeof hdr)
        continue;
      if (hdr.magic != AVA_MSG_MAGIC || hdr.abi_version != AVA_ABI_VERSION)
        return Status::error(AVA_E_PROTO,
                             who + ": send: message header has a bad magic or ABI version");
      if (hdr.total_len < sizeof hdr)
        return Status::error(AVA_E_PROTO, who + ": send: message shorter than its 64-byte header");
      if (hdr.total_len > max_message)
        return Status::error(AVA_E_TOO_BIG, who + ": send: message of " +
                                                std::to_string(hdr.total_len) +
                                                " bytes exceeds the limit of " +
                                                std::to_string(max_message) + " bytes");
      next_msg += hdr.total_len;
      hdr_have = 0;
      ++count;
    }
    pos += len;
  }
  if (count == 0 || hdr_have != 0 || next_msg != total)
    return Status::error(AVA_E_PROTO, who + ": send: the gather list (" + std::to_string(total) +
                                          " bytes) does not hold whole messages (headers say " +
                                          std::to_string(next_msg) + ")");
  *total_out = total;
  return Status::ok();
}

} // namespace ava
