// SPDX-License-Identifier: MIT
#include "worker/handshake.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <random>

#include "transport/hello.hpp"

namespace ava {
namespace {

std::string worker_side() {
  return "this worker (" + std::string(ava_build_text()) + ") speaks protocol " +
         protocol_range_text(AVA_PROTO_MIN, AVA_PROTO_MAX);
}

HelloOffer refused(HelloOffer offer, int status, std::string why) {
  offer.status = status;
  offer.why = std::move(why);
  return offer;
}

} // namespace

HelloOffer check_hello(std::span<const uint8_t> message, const CredentialTable *credentials) {
  HelloOffer offer;
  ava_msg_hdr hdr;
  if (message.size() < sizeof hdr)
    return refused(offer, AVA_E_PROTO, "a HELLO shorter than its header");
  std::memcpy(&hdr, message.data(), sizeof hdr);
  if (hdr.args_len > message.size() - sizeof hdr)
    return refused(offer, AVA_E_PROTO, "a HELLO whose argument block overruns it");
  if (hdr.args_len == AVA_HELLO_V1_SIZE) {
    offer.protocol1 = true;
    return refused(offer, AVA_E_VERSION,
                   "the guest library speaks protocol 1 (ava 0.1, no version negotiation); " +
                       worker_side() + ": update the guest library");
  }
  if (hdr.args_len != sizeof(ava_hello))
    return refused(offer, AVA_E_PROTO,
                   "a HELLO block of " + std::to_string(hdr.args_len) + " bytes (protocol " +
                       protocol_range_text(AVA_PROTO_MIN, AVA_PROTO_MAX) + " sends " +
                       std::to_string(sizeof(ava_hello)) + ")");
  std::memcpy(&offer.hello, message.data() + sizeof hdr, sizeof offer.hello);
  const ava_hello &h = offer.hello;
  offer.guest_build = wire_text(h.build, sizeof h.build);
  const std::string guest_side =
      "the guest library (" + (offer.guest_build.empty() ? "?" : offer.guest_build) +
      ") speaks protocol " + protocol_range_text(h.proto_min, h.proto_max);
  offer.proto = choose_protocol(h.proto_min, h.proto_max, AVA_PROTO_MIN, AVA_PROTO_MAX);
  if (offer.proto == 0)
    return refused(offer, AVA_E_VERSION,
                   "no protocol version in common: " + guest_side + ", " + worker_side());
  if ((h.flags & ~AVA_HELLO_FLAGS_ALL) != 0 || h.reserved != 0)
    return refused(offer, AVA_E_PROTO, "a HELLO with unknown flags or reserved bits set");
  if ((h.flags & AVA_HELLO_RESUME) == 0 &&
      (h.session_id != 0 || std::any_of(std::begin(h.resume_token), std::end(h.resume_token),
                                        [](uint8_t b) { return b != 0; })))
    return refused(offer, AVA_E_PROTO, "a new session's HELLO names a session to resume");

  bool has_credential = false;
  std::string credential;
  const size_t items_at = sizeof hdr + hdr.args_len;
  Status s = decode_hello_items(message.subspan(items_at), [&](const HelloItem &item) {
    if (item.kind == AVA_HELLO_ITEM_CREDENTIAL) {
      if (item.bytes.size() > AVA_CREDENTIAL_MAX)
        return Status::error(AVA_E_PROTO, "a credential longer than " +
                                              std::to_string(AVA_CREDENTIAL_MAX) + " bytes");
      has_credential = true;
      credential = item.bytes;
    } else if (item.kind == AVA_HELLO_ITEM_CONFIG) {
      offer.config = item.bytes;
    }
    return Status::ok();
  });
  if (!s.is_ok())
    return refused(offer, AVA_E_PROTO, s.message);
  if (credentials != nullptr) {
    if (!has_credential)
      return refused(offer, AVA_E_ACCESS,
                     "this worker requires a credential and the guest sent none");
    const std::string *name = credentials->match(credential);
    if (name == nullptr)
      return refused(offer, AVA_E_ACCESS, "the guest's credential is not among the accepted ones");
    offer.peer = *name;
  }
  // Checked last, so that a guest that may not connect at all hears that first.
  if ((h.flags & AVA_HELLO_RESUME) != 0)
    return refused(offer, AVA_E_UNSUPPORTED,
                   "the guest asks to resume session " + std::to_string(h.session_id) +
                       "; this worker cannot resume sessions (its ACK says so)");
  return offer;
}

SessionKeys new_session_keys() {
  SessionKeys keys;
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  keys.id = 0x5e55'1000'0000'0001ull;
  std::memset(keys.token, 0x5e, sizeof keys.token);
#else
  uint8_t bytes[sizeof keys.id + sizeof keys.token] = {};
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break; // a kernel without getrandom(2)
    got += static_cast<size_t>(n);
  }
  if (got < sizeof bytes) {
    std::random_device rd;
    for (size_t i = got; i < sizeof bytes; i++)
      bytes[i] = static_cast<uint8_t>(rd());
  }
  std::memcpy(&keys.id, bytes, sizeof keys.id);
  std::memcpy(keys.token, bytes + sizeof keys.id, sizeof keys.token);
  if (keys.id == 0)
    keys.id = 1; // 0 means "no session" on the wire
#endif
  return keys;
}

ava_hello_ack make_hello_ack(const HelloOffer &offer, const SessionKeys &keys) {
  ava_hello_ack ack{};
  ack.proto_min = AVA_PROTO_MIN;
  ack.proto_max = AVA_PROTO_MAX;
  const std::string_view build = ava_build_text();
  std::memcpy(ack.build, build.data(), std::min(build.size(), sizeof ack.build - 1));
  if (offer.status != AVA_OK)
    return ack;
  ack.proto = offer.proto;
  ack.session_id = keys.id;
  std::memcpy(ack.resume_token, keys.token, sizeof ack.resume_token);
  std::memcpy(ack.peer, offer.peer.data(), std::min(offer.peer.size(), sizeof ack.peer - 1));
  return ack;
}

} // namespace ava
