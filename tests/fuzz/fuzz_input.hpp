// SPDX-License-Identifier: MIT
// The input format shared by the message fuzzers: records of a little-endian
// u32 length followed by that many bytes, one wire message each (what the
// worker's AVA_FUZZ_RECORD writes). A record that claims more than is left
// takes the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ava/wire.h"

namespace ava::fuzz {

// One message in 8-byte aligned storage, as a channel would deliver it.
struct Message {
  std::vector<uint64_t> words;
  uint64_t size = 0;
  uint8_t *data() { return reinterpret_cast<uint8_t *>(words.data()); }
  const uint8_t *data() const { return reinterpret_cast<const uint8_t *>(words.data()); }
  ava_msg_hdr &hdr() { return *reinterpret_cast<ava_msg_hdr *>(words.data()); }
};

// Splits data into at most max_records messages; each is at least a header
// long (zero-padded) and its framing is made right (magic, ABI version,
// total_len), because framing is the channels' business and is fuzzed there.
inline std::vector<Message> split_records(const uint8_t *data, size_t size, size_t max_records) {
  std::vector<Message> out;
  size_t pos = 0;
  while (pos + 4 <= size && out.size() < max_records) {
    uint32_t len;
    std::memcpy(&len, data + pos, sizeof len);
    pos += 4;
    const size_t take = len < size - pos ? len : size - pos;
    Message m;
    m.size = take < sizeof(ava_msg_hdr) ? sizeof(ava_msg_hdr) : take;
    m.words.assign((m.size + 7) / 8, 0);
    std::memcpy(m.data(), data + pos, take);
    pos += take;
    ava_msg_hdr &h = m.hdr();
    h.magic = AVA_MSG_MAGIC;
    h.abi_version = AVA_ABI_VERSION;
    h.total_len = m.size;
    if (h.args_len > m.size - sizeof(ava_msg_hdr))
      h.args_len = static_cast<uint32_t>(m.size - sizeof(ava_msg_hdr));
    out.push_back(std::move(m));
  }
  return out;
}

} // namespace ava::fuzz
