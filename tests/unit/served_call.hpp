// SPDX-License-Identifier: MIT
// For worker runtime tests: a guest connection over an in-memory channel
// and a call of it being served, as a shadow thread has one, so that the
// ava_w_* functions spec code calls (made current with ava::CurrentCall)
// reach that guest's state. peer is the guest's end of the channel.
#pragma once

#include <criterion/criterion.h>

#include <memory>

#include "ava/wire.h"
#include "transport/channel.hpp"
#include "worker/connection.hpp"
#include "worker/server.hpp"
#include "worker/wcall.hpp"

namespace ava::testing {

struct ServedCall {
  std::unique_ptr<ava::Channel> peer;
  std::shared_ptr<ava::GuestConnection> connection;
  ava::AsyncErrorSlot slot;
  ava_msg_hdr hdr{};
  std::unique_ptr<ava_wcall> call;

  ServedCall() {
    std::unique_ptr<ava::Channel> ours;
    cr_assert(ava::channel_pair(&ours, &peer).is_ok());
    connection = std::make_shared<ava::GuestConnection>(std::move(ours), ava::WorkerOptions{});
    hdr.magic = AVA_MSG_MAGIC;
    hdr.kind = AVA_MSG_CALL;
    hdr.flags = AVA_F_SYNC;
    hdr.total_len = sizeof hdr;
    call = std::make_unique<ava_wcall>(connection, &slot, reinterpret_cast<uint8_t *>(&hdr));
  }
};

} // namespace ava::testing
