// SPDX-License-Identifier: MIT
// Opening a guest library's channel to its worker: address, connection and
// the HELLO / HELLO_ACK handshake that checks both sides share one spec.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "shim/ava_shim.h"
#include "shim/config.hpp"
#include "transport/channel.hpp"

namespace ava::guest {

// What the worker's HELLO_ACK told (include/ava/wire.h).
struct HelloAnswer {
  uint16_t proto = 0;
  uint64_t session_id = 0;
  uint8_t resume_token[16] = {};
  bool resumable = false;
  std::string worker_build;
  std::string peer; // the name the worker knows our credential by, or ""
};

// On success *out is a channel past the handshake and *answer what the
// worker told. *address_text is set in every case (the parsed address, or
// the configured text) for messages. A worker of another protocol version,
// one that refuses the credential, or one without the spec gets an error
// that says which and names both sides' versions where they differ.
// Reads a HELLO_ACK (the whole message, from an untrusted worker) into
// *answer, or says why the handshake failed; connect_worker's check, apart
// for tests and the fuzzer.
Status check_hello_ack(std::span<const uint8_t> message, const ava_guest_spec *spec,
                       const GuestConfig &config, HelloAnswer *answer);

Status connect_worker(const ava_guest_spec *spec, const GuestConfig &config,
                      std::unique_ptr<Channel> *out, std::string *address_text,
                      HelloAnswer *answer);

} // namespace ava::guest
