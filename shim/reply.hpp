// SPDX-License-Identifier: MIT
// Validation of what the worker sends back. The guest does not trust the
// worker: every length, offset, id and flag is checked before use.
#pragma once

#include <cstdint>

#include "ava/wire.h"
#include "transport/channel.hpp"

namespace ava::guest {

struct ReplyExpect {
  uint32_t spec_id = 0;
  uint32_t func_id = 0;
  uint64_t call_id = 0;
  uint32_t reply_len = 0; // bytes of the function's reply struct
};

struct ReplyView {
  bool has_common = false;
  ava_reply_common common{};
  const uint8_t *reply = nullptr; // the function's reply struct
  const uint8_t *payload = nullptr;
  uint64_t payload_len = 0;
};

// Checks a REPLY against the call it answers. A worker-reported failure comes
// back as that status (code in AVA_E_*); view->common is filled whenever the
// reply carries it, also for failures, so deferred async errors survive.
Status check_reply(const MsgBuf &msg, const ReplyExpect &expect, ReplyView *view);

// Checks a returned buffer descriptor against the payload and the guest's
// capacity; on success *copy_len is the number of bytes to copy from
// payload + desc.offset (0 for an absent buffer).
Status check_out_buffer(const ava_buf_desc &desc, uint64_t payload_len, uint64_t capacity,
                        bool have_destination, uint64_t *copy_len);

// Checks an IN buffer of a CALLBACK message: known flags, inside the
// payload, followed by its zero guard byte. *ptr is NULL for an absent one.
Status check_callback_buffer(const ava_buf_desc &desc, const uint8_t *payload, uint64_t payload_len,
                             const void **ptr);

} // namespace ava::guest
