// SPDX-License-Identifier: MIT
#include "worker/cmd_policy.hpp"

#include <cstring>

namespace ava {
namespace {

std::string n(uint64_t v) {
  return std::to_string(v);
}

} // namespace

int police_call(const ava_cmd_table &table, const ava_msg_hdr &hdr, const uint8_t *message,
                uint64_t size, std::string *why) {
  const ava_cmd_desc *d = ava_cmd_lookup(&table, hdr.func_id);
  if (d == nullptr || (d->flags & AVA_CMD_SUPPORTED) == 0) {
    *why = "function " + n(hdr.func_id) + " is not a supported call of spec '" +
           std::string(table.spec_name) + "'";
    return AVA_E_FUNC;
  }
  const std::string name = d->name != nullptr ? d->name : "?";
  if (hdr.args_len != d->args_len) {
    *why = name + ": argument block of " + n(hdr.args_len) + " bytes, the spec's has " +
           n(d->args_len);
    return AVA_E_LENGTH;
  }
  const bool sync = (hdr.flags & AVA_F_SYNC) != 0;
  const uint32_t allowed =
      sync ? AVA_CMD_SYNC | AVA_CMD_COND_ASYNC : AVA_CMD_ASYNC | AVA_CMD_COND_ASYNC;
  if ((d->flags & allowed) == 0) {
    *why = name + ": sent " + (sync ? "sync" : "async") + ", which the spec does not allow";
    return AVA_E_PROTO;
  }
  if (sizeof(ava_msg_hdr) + uint64_t{hdr.args_len} > size ||
      uint64_t{d->buf_first} + d->buf_count > table.nbufs) {
    *why = name + ": the message is shorter than its argument block";
    return AVA_E_LENGTH;
  }
  const uint8_t *args = message + sizeof(ava_msg_hdr);
  for (uint32_t i = 0; i < d->buf_count; ++i) {
    const ava_cmd_buf &b = table.bufs[d->buf_first + i];
    if (uint64_t{b.args_offset} + sizeof(ava_buf_desc) > hdr.args_len)
      continue; // the generated table and the wire struct disagree: the plugin decides
    ava_buf_desc desc;
    std::memcpy(&desc, args + b.args_offset, sizeof desc);
    if ((desc.flags & AVA_BUF_PRESENT) == 0)
      continue;
    const bool either = (b.flags & AVA_CMD_BUF_DIR_COND) != 0;
    // An async call that creates objects carries their guest-chosen ids in
    // its output handle buffer (wire.h, AVA_GUEST_ID_BIT).
    const bool guest_ids = (b.flags & (AVA_CMD_BUF_HANDLES | AVA_CMD_BUF_OUT)) ==
                               (AVA_CMD_BUF_HANDLES | AVA_CMD_BUF_OUT) &&
                           !sync;
    if ((desc.flags & AVA_BUF_IN) != 0 && !either && !guest_ids &&
        (b.flags & AVA_CMD_BUF_IN) == 0) {
      *why = name + ": buffer " + n(i) + " sent as input, which the spec does not allow";
      return AVA_E_PROTO;
    }
    if ((desc.flags & AVA_BUF_OUT) != 0 && !either && (b.flags & AVA_CMD_BUF_OUT) == 0) {
      *why = name + ": buffer " + n(i) + " asked as output, which the spec does not allow";
      return AVA_E_PROTO;
    }
    if ((b.flags & AVA_CMD_BUF_BOUNDED) != 0 && desc.length > b.max_len) {
      *why = name + ": buffer " + n(i) + " of " + n(desc.length) + " bytes, the spec allows " +
             n(b.max_len);
      return AVA_E_LENGTH;
    }
  }
  return AVA_OK;
}

} // namespace ava
