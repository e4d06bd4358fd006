// SPDX-License-Identifier: MIT
#include "worker/cmd_policy.hpp"

#include <cstring>

namespace ava {
namespace {

std::string n(uint64_t v) {
  return std::to_string(v);
}

std::string describe(const ava_cmd_table &table, const ava_msg_hdr &hdr, const ava_cmd_verdict &v) {
  const ava_cmd_desc *d = ava_cmd_lookup(&table, hdr.func_id);
  const std::string name = d != nullptr && d->name != nullptr ? d->name : "?";
  const std::string buf = name + ": buffer " + n(v.buf);
  const bool sync = (hdr.flags & AVA_F_SYNC) != 0;
  switch (v.why) {
  case AVA_CMD_WHY_FUNC:
    return "function " + n(hdr.func_id) + " is not a supported call of spec '" +
           std::string(table.spec_name) + "'";
  case AVA_CMD_WHY_ARGS_LEN:
    return name + ": argument block of " + n(v.got) + " bytes, the spec's has " + n(v.limit);
  case AVA_CMD_WHY_CLASS:
    return name + ": sent " + (sync ? "sync" : "async") + ", which the spec does not allow";
  case AVA_CMD_WHY_BUF_IN:
    return buf + " sent as input, which the spec does not allow";
  case AVA_CMD_WHY_BUF_OUT:
    return buf + " asked as output, which the spec does not allow";
  case AVA_CMD_WHY_BUF_BOUND:
    return buf + " of " + n(v.got) + " bytes, the spec allows " + n(v.limit);
  case AVA_CMD_WHY_BUF_FLAGS:
    return buf + " has unknown flags";
  case AVA_CMD_WHY_BUF_RANGE:
    return buf + " ends at byte " + n(v.got) + " of " + n(v.limit);
  default:
    return name + ": the spec's command table contradicts itself";
  }
}

} // namespace

int police_call(const ava_cmd_table &table, const ava_msg_hdr &hdr, const uint8_t *message,
                uint64_t size, std::string *why) {
  if (sizeof(ava_msg_hdr) + uint64_t{hdr.args_len} > size) {
    *why = "the message is shorter than its argument block";
    return AVA_E_LENGTH;
  }
  ava_cmd_verdict v;
  const int status = ava_cmd_police(&table, hdr.func_id, hdr.flags, message + sizeof(ava_msg_hdr),
                                    hdr.args_len, nullptr, &v);
  if (status != AVA_OK)
    *why = describe(table, hdr, v);
  return status;
}

} // namespace ava
