// SPDX-License-Identifier: MIT
#include "shim/connect.hpp"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "shim/log.hpp"
#include "shim/thread_util.hpp"

namespace ava::guest {

namespace {

std::string spec_identity(const ava_guest_spec *spec) {
  char text[96];
  std::snprintf(text, sizeof text, "id %" PRIu32 ", hash 0x%016" PRIx64, spec->id, spec->hash);
  return text;
}

Status send_hello(Channel &channel, const ava_guest_spec *spec) {
  size_t name_len = std::strlen(spec->name);
  if (name_len >= AVA_SPEC_NAME_MAX) {
    return Status::error(AVA_E_SPEC, "the spec name is longer than " +
                                         std::to_string(AVA_SPEC_NAME_MAX - 1) + " bytes");
  }
  ava_hello hello;
  std::memset(&hello, 0, sizeof hello);
  hello.spec_hash = spec->hash;
  hello.pid = static_cast<uint64_t>(::getpid());
  hello.spec_id = spec->id;
  std::memcpy(hello.spec_name, spec->name, name_len);

  ava_msg_hdr hdr;
  std::memset(&hdr, 0, sizeof hdr);
  hdr.magic = AVA_MSG_MAGIC;
  hdr.abi_version = AVA_ABI_VERSION;
  hdr.kind = AVA_MSG_HELLO;
  hdr.spec_id = spec->id;
  hdr.total_len = sizeof hdr + sizeof hello;
  hdr.thread_id = current_tid();
  hdr.args_len = sizeof hello;
  struct iovec iov[2] = {{&hdr, sizeof hdr}, {&hello, sizeof hello}};
  return channel.send(iov, 2);
}

Status await_hello_ack(Channel &channel, const ava_guest_spec *spec, int timeout_ms) {
  MsgBuf ack;
  Status st = channel.recv(ack, timeout_ms);
  if (st.code == AVA_E_TIMEOUT) {
    return Status::error(AVA_E_TIMEOUT, "the worker did not answer HELLO within " +
                                            std::to_string(timeout_ms) + " ms");
  }
  if (st.code == AVA_E_CLOSED) {
    return Status::error(AVA_E_CLOSED, "the worker closed the connection during the handshake");
  }
  if (!st.is_ok()) {
    return st;
  }
  const ava_msg_hdr *hdr = ack.header();
  if (ack.size() < sizeof *hdr || hdr->kind != AVA_MSG_HELLO_ACK) {
    return Status::error(AVA_E_PROTO, "the worker answered HELLO with a message of kind " +
                                          std::to_string(ack.size() < sizeof *hdr ? 0 : hdr->kind));
  }
  if (hdr->status == AVA_E_SPEC) {
    return Status::error(AVA_E_SPEC, "the worker refused the guest library: worker and guest "
                                     "library were generated from different specs (guest spec '" +
                                         std::string(spec->name) + "', " + spec_identity(spec) +
                                         ")");
  }
  if (hdr->status == AVA_E_UNSUPPORTED) {
    return Status::error(AVA_E_UNSUPPORTED, "the worker cannot serve spec '" +
                                                std::string(spec->name) +
                                                "': it has no usable plugin for it (its log says "
                                                "why, e.g. a library the plugin needs is missing)");
  }
  if (hdr->status != AVA_OK) {
    return Status::error(hdr->status < 0 ? hdr->status : AVA_E_PROTO,
                         std::string("the worker refused the guest library: ") +
                             status_text(hdr->status) + " (" + status_name(hdr->status) + ")");
  }
  return Status::ok();
}

} // namespace

Status connect_worker(const ava_guest_spec *spec, const GuestConfig &config,
                      std::unique_ptr<Channel> *out, std::string *address_text) {
  *address_text = config.worker;
  Address address;
  Status st = parse_address(config.worker, config.channel, &address);
  if (!st.is_ok()) {
    return st;
  }
  *address_text = address.to_string();
  std::unique_ptr<Channel> channel;
  st = connect_channel(address, config.connect_timeout_ms, &channel);
  if (!st.is_ok()) {
    return st;
  }
  channel->set_max_message(config.max_message);
  st = send_hello(*channel, spec);
  if (!st.is_ok()) {
    return st;
  }
  st = await_hello_ack(*channel, spec, config.connect_timeout_ms);
  if (!st.is_ok()) {
    return st;
  }
  *out = std::move(channel);
  return Status::ok();
}

} // namespace ava::guest
