// SPDX-License-Identifier: MIT
// One wire message (include/ava/wire.h) built by hand, for tests that play a
// guest sending what no guest library would: header, argument block and
// payload in one buffer.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "ava/wire.h"

namespace wire_test {

struct MsgHeader {
  uint16_t kind = AVA_MSG_CALL;
  uint32_t spec_id = 0;
  uint32_t func_id = 0;
  uint32_t flags = AVA_F_SYNC;
  uint64_t thread_id = 1;
  uint64_t call_id = 0;
};

inline std::vector<uint8_t> build_message(const MsgHeader &m, const void *args, uint32_t args_len,
                                          const void *payload = nullptr, uint64_t payload_len = 0) {
  std::vector<uint8_t> out(sizeof(ava_msg_hdr) + args_len + payload_len);
  ava_msg_hdr h{};
  h.magic = AVA_MSG_MAGIC;
  h.abi_version = AVA_ABI_VERSION;
  h.kind = m.kind;
  h.spec_id = m.spec_id;
  h.func_id = m.func_id;
  h.total_len = out.size();
  h.thread_id = m.thread_id;
  h.call_id = m.call_id;
  h.args_len = args_len;
  h.flags = m.flags;
  std::memcpy(out.data(), &h, sizeof h);
  if (args_len > 0)
    std::memcpy(out.data() + sizeof h, args, args_len);
  if (payload_len > 0)
    std::memcpy(out.data() + sizeof h + args_len, payload, payload_len);
  return out;
}

} // namespace wire_test
