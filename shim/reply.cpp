// SPDX-License-Identifier: MIT
#include "shim/reply.hpp"

#include <cstring>
#include <string>

#include "shim/log.hpp"

namespace ava::guest {

namespace {

constexpr uint64_t kHeader = sizeof(ava_msg_hdr);

bool is_wire_status(int32_t status) {
  return status <= AVA_E_PROTO && status >= AVA_E_MIN;
}

Status invalid(int code, const std::string &what) {
  return Status::error(code, "invalid reply from the worker: " + what);
}

} // namespace

Status check_reply(const MsgBuf &msg, const ReplyExpect &expect, ReplyView *view) {
  *view = ReplyView{};
  if (msg.size() < kHeader) {
    return invalid(AVA_E_PROTO, "reply shorter than a message header");
  }
  ava_msg_hdr hdr;
  std::memcpy(&hdr, msg.data(), sizeof hdr);
  if (hdr.total_len != msg.size()) {
    return invalid(AVA_E_PROTO, "reply length " + std::to_string(hdr.total_len) +
                                    " differs from the " + std::to_string(msg.size()) +
                                    " bytes received");
  }
  if (hdr.kind != AVA_MSG_REPLY) {
    return invalid(AVA_E_PROTO, "the worker answered with message kind " +
                                    std::to_string(hdr.kind) + " instead of a reply");
  }
  if (hdr.call_id != expect.call_id) {
    return invalid(AVA_E_PROTO, "reply to call " + std::to_string(hdr.call_id) +
                                    " instead of call " + std::to_string(expect.call_id));
  }
  if (hdr.spec_id != expect.spec_id || hdr.func_id != expect.func_id) {
    return invalid(AVA_E_PROTO, "reply for spec " + std::to_string(hdr.spec_id) + " function " +
                                    std::to_string(hdr.func_id) + " instead of spec " +
                                    std::to_string(expect.spec_id) + " function " +
                                    std::to_string(expect.func_id));
  }
  if (hdr.reserved != 0) {
    return invalid(AVA_E_PROTO, "reply header has non-zero reserved bits");
  }
  if (hdr.args_len > hdr.total_len - kHeader) {
    return invalid(AVA_E_LENGTH, "reply argument block of " + std::to_string(hdr.args_len) +
                                     " bytes exceeds the " +
                                     std::to_string(hdr.total_len - kHeader) +
                                     " bytes after the header");
  }
  if (hdr.args_len >= sizeof(ava_reply_common)) {
    std::memcpy(&view->common, msg.data() + kHeader, sizeof view->common);
    view->has_common = true;
  }
  if (hdr.status != AVA_OK) {
    if (!is_wire_status(hdr.status)) {
      return invalid(AVA_E_PROTO,
                     "the worker reported an invalid status " + std::to_string(hdr.status));
    }
    return Status::error(hdr.status, std::string("the worker reported: ") +
                                         status_text(hdr.status) + " (" + status_name(hdr.status) +
                                         ")");
  }
  uint64_t need = sizeof(ava_reply_common) + uint64_t{expect.reply_len};
  if (hdr.args_len < need) {
    return invalid(AVA_E_LENGTH, "reply argument block of " + std::to_string(hdr.args_len) +
                                     " bytes is shorter than the " + std::to_string(need) +
                                     " bytes expected");
  }
  view->reply = msg.data() + kHeader + sizeof(ava_reply_common);
  view->payload = msg.data() + kHeader + hdr.args_len;
  view->payload_len = hdr.total_len - kHeader - hdr.args_len;
  return Status::ok();
}

Status check_out_buffer(const ava_buf_desc &desc, uint64_t payload_len, uint64_t capacity,
                        bool have_destination, uint64_t *copy_len) {
  *copy_len = 0;
  if ((desc.flags & ~AVA_BUF_ALL) != 0 || desc.reserved != 0) {
    return invalid(AVA_E_PROTO, "returned buffer has unknown flags " + std::to_string(desc.flags));
  }
  if ((desc.flags & AVA_BUF_PRESENT) == 0) {
    if (desc.length != 0 || desc.flags != 0) {
      return invalid(AVA_E_PROTO, "absent returned buffer has a length or flags");
    }
    return Status::ok();
  }
  if (desc.offset > payload_len || desc.length > payload_len - desc.offset) {
    return invalid(AVA_E_LENGTH, "returned buffer [" + std::to_string(desc.offset) + ", +" +
                                     std::to_string(desc.length) +
                                     ") lies outside the reply payload of " +
                                     std::to_string(payload_len) + " bytes");
  }
  if (desc.length > capacity) {
    return invalid(AVA_E_LENGTH, "returned buffer of " + std::to_string(desc.length) +
                                     " bytes exceeds the " + std::to_string(capacity) +
                                     " bytes the guest provided");
  }
  if (desc.length > 0 && !have_destination) {
    return invalid(AVA_E_PROTO, "the worker returned " + std::to_string(desc.length) +
                                    " bytes for a NULL buffer");
  }
  *copy_len = desc.length;
  return Status::ok();
}

Status check_callback_buffer(const ava_buf_desc &desc, const uint8_t *payload, uint64_t payload_len,
                             const void **ptr) {
  *ptr = nullptr;
  if ((desc.flags & ~AVA_BUF_ALL) != 0 || desc.reserved != 0) {
    return Status::error(AVA_E_PROTO, "callback buffer has unknown flags");
  }
  if ((desc.flags & AVA_BUF_PRESENT) == 0) {
    if (desc.length != 0 || desc.flags != 0) {
      return Status::error(AVA_E_PROTO, "absent callback buffer has a length or flags");
    }
    return Status::ok();
  }
  if ((desc.flags & AVA_BUF_IN) == 0) {
    return Status::error(AVA_E_PROTO, "callback buffer is not an IN buffer");
  }
  // The guard byte at offset + length must lie inside the payload too.
  if (payload == nullptr || desc.offset >= payload_len ||
      desc.length >= payload_len - desc.offset) {
    return Status::error(AVA_E_LENGTH, "callback buffer lies outside the payload");
  }
  if (payload[desc.offset + desc.length] != 0) {
    return Status::error(AVA_E_PROTO, "callback buffer lacks its zero guard byte");
  }
  *ptr = payload + desc.offset;
  return Status::ok();
}

} // namespace ava::guest
