// SPDX-License-Identifier: MIT
// libFuzzer harness: the handshake's two decoders of the other side's bytes.
// The input's first byte picks the side and the setting; the rest is one
// whole message.
//   bit 0 clear: a HELLO to the worker's check_hello (worker/handshake.cpp),
//                bit 1: with a credential table (alice's token);
//   bit 0 set:   a HELLO_ACK to the guest library's check_hello_ack
//                (shim/connect.cpp), bit 1: with a credential file configured.
// Neither may crash, leak or throw; a worker refusal is a status of wire.h
// with a reason, an acceptance has a version both sides speak, and a guest
// that accepts has a session. Seeds: tests/fuzz/corpus/hello/ (make_seeds.py).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "shim/connect.hpp"
#include "worker/credentials.hpp"
#include "worker/handshake.hpp"

extern "C" const struct ava_guest_spec *wtest_guest_spec(void);

namespace {

const ava::CredentialTable &table() {
  static const ava::CredentialTable t = [] {
    ava::CredentialTable parsed;
    if (!ava::CredentialTable::parse("alice alice-0123456789abcdef\n", "fuzz", &parsed).is_ok())
      std::abort();
    return parsed;
  }();
  return t;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const uint8_t mode = data[0];
  const std::span<const uint8_t> message(data + 1, size - 1);
  if ((mode & 1) == 0) {
    const ava::HelloOffer offer = ava::check_hello(message, (mode & 2) ? &table() : nullptr);
    if (offer.status > AVA_OK || offer.status < AVA_E_MIN)
      std::abort();
    if (offer.status != AVA_OK && offer.why.empty())
      std::abort();
    if (offer.status == AVA_OK && (offer.proto < AVA_PROTO_MIN || offer.proto > AVA_PROTO_MAX ||
                                   ((mode & 2) != 0 && offer.peer != "alice")))
      std::abort();
    const ava_hello_ack ack = ava::make_hello_ack(offer, ava::SessionKeys{});
    if (offer.status != AVA_OK && (ack.proto != 0 || ack.session_id != 0))
      std::abort();
    return 0;
  }
  ava::GuestConfig config;
  if (mode & 2)
    config.credential_file = "/fuzz/token";
  ava::guest::HelloAnswer answer;
  const ava::Status st = ava::guest::check_hello_ack(message, wtest_guest_spec(), config, &answer);
  if (st.is_ok()
          ? (answer.session_id == 0 || answer.proto < AVA_PROTO_MIN || answer.proto > AVA_PROTO_MAX)
          : st.message.empty())
    std::abort();
  return 0;
}
