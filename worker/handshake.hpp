// SPDX-License-Identifier: MIT
// The worker's side of HELLO (include/ava/wire.h): the checks of what a guest
// offers (block, items, versions, credential) before any plugin is chosen,
// and the HELLO_ACK that answers it. The spec lookup stays with the session,
// which owns the plugins.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "ava/wire.h"
#include "worker/credentials.hpp"

namespace ava {

struct HelloOffer {
  int status = AVA_OK;    // AVA_OK, or why the guest is refused
  std::string why;        // for the log, naming both sides where versions differ
  bool protocol1 = false; // answer with a bare status: such a guest reads no more
  ava_hello hello{};      // the block (once its size was right)
  uint16_t proto = 0;     // the version chosen
  std::string guest_build;
  std::string peer;   // the credential's name, "" without a credential table
  std::string config; // the guest's configuration text, as sent
};

// Checks a whole HELLO message (header included, its framing already
// checked by the channel). credentials may be null: none required.
HelloOffer check_hello(std::span<const uint8_t> message, const CredentialTable *credentials);

// A new session's id and resume token, from the kernel's random source (fixed
// in fuzzing builds, so that recorded sessions replay).
struct SessionKeys {
  uint64_t id = 0;
  uint8_t token[16] = {};
};
SessionKeys new_session_keys();

// The ACK's block: proto 0 and no keys when status refuses the guest.
ava_hello_ack make_hello_ack(const HelloOffer &offer, const SessionKeys &keys);

} // namespace ava
