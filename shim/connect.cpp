// SPDX-License-Identifier: MIT
#include "shim/connect.hpp"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

#include "shim/log.hpp"
#include "shim/thread_util.hpp"
#include "transport/hello.hpp"

namespace ava::guest {

namespace {

std::string spec_identity(const ava_guest_spec *spec) {
  char text[96];
  std::snprintf(text, sizeof text, "id %" PRIu32 ", hash 0x%016" PRIx64, spec->id, spec->hash);
  return text;
}

Status send_hello(Channel &channel, const ava_guest_spec *spec, const GuestConfig &config,
                  const std::string &credential) {
  size_t name_len = std::strlen(spec->name);
  if (name_len >= AVA_SPEC_NAME_MAX) {
    return Status::error(AVA_E_SPEC, "the spec name is longer than " +
                                         std::to_string(AVA_SPEC_NAME_MAX - 1) + " bytes");
  }
  const std::string described = describe_guest_config(config);
  std::vector<HelloItem> items;
  if (!credential.empty()) {
    items.push_back(HelloItem{AVA_HELLO_ITEM_CREDENTIAL, credential});
  }
  items.push_back(HelloItem{
      AVA_HELLO_ITEM_CONFIG,
      std::string_view(described).substr(0, AVA_HELLO_ITEMS_MAX - AVA_CREDENTIAL_MAX - 32)});
  const std::vector<uint8_t> encoded = encode_hello_items(items);

  ava_hello hello;
  std::memset(&hello, 0, sizeof hello);
  ava_hello_fill(&hello, spec->id, spec->hash, spec->name, static_cast<uint64_t>(::getpid()),
                 std::string(ava_build_text()).c_str());

  ava_msg_hdr hdr;
  std::memset(&hdr, 0, sizeof hdr);
  hdr.magic = AVA_MSG_MAGIC;
  hdr.abi_version = AVA_ABI_VERSION;
  hdr.kind = AVA_MSG_HELLO;
  hdr.spec_id = spec->id;
  hdr.total_len = sizeof hdr + sizeof hello + encoded.size();
  hdr.thread_id = current_tid();
  hdr.args_len = sizeof hello;
  struct iovec iov[3] = {{&hdr, sizeof hdr},
                         {&hello, sizeof hello},
                         {const_cast<uint8_t *>(encoded.data()), encoded.size()}};
  return channel.send(iov, 3);
}

std::string guest_side() {
  return "this guest library (" + std::string(ava_build_text()) + ") speaks protocol " +
         protocol_range_text(AVA_PROTO_MIN, AVA_PROTO_MAX);
}

Status await_hello_ack(Channel &channel, const ava_guest_spec *spec, const GuestConfig &config,
                       HelloAnswer *answer) {
  const int timeout_ms = config.connect_timeout_ms;
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
  return check_hello_ack(std::span<const uint8_t>(ack.data(), ack.size()), spec, config, answer);
}

} // namespace

Status check_hello_ack(std::span<const uint8_t> message, const ava_guest_spec *spec,
                       const GuestConfig &config, HelloAnswer *answer) {
  ava_msg_hdr header;
  if (message.size() < sizeof header) {
    return Status::error(AVA_E_PROTO, "the worker answered HELLO with a short message");
  }
  std::memcpy(&header, message.data(), sizeof header);
  const ava_msg_hdr *hdr = &header;
  if (hdr->kind != AVA_MSG_HELLO_ACK) {
    return Status::error(AVA_E_PROTO, "the worker answered HELLO with a message of kind " +
                                          std::to_string(hdr->kind));
  }
  // A worker of protocol 1 answers with a bare status, whatever it thinks of
  // our HELLO; one of ours always sends its block.
  ava_hello_ack block{};
  const bool has_block =
      hdr->args_len >= sizeof block && hdr->args_len <= message.size() - sizeof *hdr;
  if (!has_block) {
    return Status::error(
        AVA_E_VERSION, "the worker speaks protocol 1 (ava 0.1, no version negotiation; its "
                       "answer was " +
                           status_name(hdr->status) + "), " + guest_side() + ": update the worker");
  }
  std::memcpy(&block, message.data() + sizeof *hdr, sizeof block);
  const std::string worker_build = wire_text(block.build, sizeof block.build);
  const std::string worker_side = "the worker (" + (worker_build.empty() ? "?" : worker_build) +
                                  ") speaks protocol " +
                                  protocol_range_text(block.proto_min, block.proto_max);
  if (hdr->status == AVA_E_VERSION) {
    return Status::error(AVA_E_VERSION,
                         "no protocol version in common: " + guest_side() + ", " + worker_side);
  }
  if (hdr->status == AVA_E_ACCESS) {
    return Status::error(AVA_E_ACCESS,
                         config.credential_file.empty()
                             ? "the worker requires a credential: set credential_file in the "
                               "guest configuration or AVA_CREDENTIAL_FILE"
                             : "the worker did not accept the credential in " +
                                   config.credential_file);
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
  // A worker that accepts must have chosen a version we offered.
  if (block.proto < AVA_PROTO_MIN || block.proto > AVA_PROTO_MAX || block.session_id == 0) {
    return Status::error(AVA_E_PROTO, "the worker accepted with protocol " +
                                          std::to_string(block.proto) + " and session " +
                                          std::to_string(block.session_id) + ", " + guest_side());
  }
  answer->proto = block.proto;
  answer->session_id = block.session_id;
  std::memcpy(answer->resume_token, block.resume_token, sizeof answer->resume_token);
  answer->resumable = (block.flags & AVA_ACK_RESUMABLE) != 0;
  answer->worker_build = worker_build;
  answer->peer = wire_text(block.peer, sizeof block.peer);
  return Status::ok();
}

Status connect_worker(const ava_guest_spec *spec, const GuestConfig &config,
                      std::unique_ptr<Channel> *out, std::string *address_text,
                      HelloAnswer *answer) {
  *address_text = config.worker;
  Address address;
  Status st = parse_address(config.worker, config.channel, &address);
  if (!st.is_ok()) {
    return st;
  }
  *address_text = address.to_string();
  // Before connecting: a credential the worker cannot get is our error, not its.
  std::string credential;
  st = read_credential(config, &credential);
  if (!st.is_ok()) {
    return Status::error(st.code, "cannot read the credential: " + st.message);
  }
  std::unique_ptr<Channel> channel;
  st = connect_channel(address, config.connect_timeout_ms, &channel);
  if (!st.is_ok()) {
    return st;
  }
  channel->set_max_message(config.max_message);
  st = send_hello(*channel, spec, config, credential);
  if (!st.is_ok()) {
    return st;
  }
  st = await_hello_ack(*channel, spec, config, answer);
  if (!st.is_ok()) {
    return st;
  }
  *out = std::move(channel);
  return Status::ok();
}

} // namespace ava::guest
