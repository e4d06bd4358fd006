// SPDX-License-Identifier: MIT
// Opening a guest library's channel to its worker: address, connection and
// the HELLO / HELLO_ACK handshake that checks both sides share one spec.
#pragma once

#include <memory>
#include <string>

#include "shim/ava_shim.h"
#include "shim/config.hpp"
#include "transport/channel.hpp"

namespace ava::guest {

// On success *out is a channel past the handshake. *address_text is set in
// every case (the parsed address, or the configured text) for messages.
Status connect_worker(const ava_guest_spec *spec, const GuestConfig &config,
                      std::unique_ptr<Channel> *out, std::string *address_text);

} // namespace ava::guest
