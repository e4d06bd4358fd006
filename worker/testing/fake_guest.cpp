// SPDX-License-Identifier: MIT
#include "worker/testing/fake_guest.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>

#include <atomic>

#include "tests/wtest/wtest.h"

namespace ava::testing {

ava_buf_desc Payload::add(const void *data, uint64_t len, uint32_t dir) {
  uint64_t offset = bytes_.size();
  bytes_.resize(offset + AVA_PAYLOAD_SPAN(len), 0);
  if (len > 0)
    std::memcpy(bytes_.data() + offset, data, len);
  return ava_buf_desc{offset, len, AVA_BUF_PRESENT | dir, 0};
}

RawMessage::RawMessage(uint16_t kind, uint32_t func_id, const void *args, uint32_t args_len,
                       const std::vector<uint8_t> &payload)
    : size_(sizeof(ava_msg_hdr) + args_len + payload.size()) {
  storage_.assign((size_ + 7) / 8, 0);
  ava_msg_hdr &h = hdr();
  h.magic = AVA_MSG_MAGIC;
  h.abi_version = AVA_ABI_VERSION;
  h.kind = kind;
  h.spec_id = AVA_WTEST_SPEC_ID;
  h.func_id = func_id;
  h.total_len = size_;
  h.args_len = args_len;
  if (args_len > 0)
    std::memcpy(this->args(), args, args_len);
  if (!payload.empty())
    std::memcpy(this->args() + args_len, payload.data(), payload.size());
}

ava_reply_common Received::common() const {
  ava_reply_common c{};
  if (args.size() >= sizeof c)
    std::memcpy(&c, args.data(), sizeof c);
  return c;
}

std::vector<uint8_t> Received::bytes(const ava_buf_desc &d) const {
  if (d.offset > payload.size() || d.length > payload.size() - d.offset)
    return {};
  return std::vector<uint8_t>(payload.begin() + static_cast<ptrdiff_t>(d.offset),
                              payload.begin() + static_cast<ptrdiff_t>(d.offset + d.length));
}

int FakeGuest::hello(const char *name, uint32_t spec_id, uint64_t hash) {
  ava_hello h{};
  ava_hello_fill(
      &h, spec_id != 0 ? spec_id : AVA_WTEST_SPEC_ID, hash != 0 ? hash : AVA_WTEST_SPEC_HASH,
      name != nullptr ? name : AVA_WTEST_SPEC_NAME, static_cast<uint64_t>(::getpid()), "test");
  RawMessage message(AVA_MSG_HELLO, 0, &h, sizeof h);
  message.hdr().spec_id = h.spec_id;
  Status s = send(message);
  if (!s.is_ok())
    return s.code;
  Received ack;
  s = recv(&ack);
  if (!s.is_ok())
    return s.code;
  if (ack.hdr.kind != AVA_MSG_HELLO_ACK)
    return AVA_E_PROTO;
  return ack.hdr.status;
}

Status FakeGuest::send(RawMessage &message) {
  if (!channel_)
    return Status::error(AVA_E_CLOSED, "closed");
  struct iovec iov = {message.data(), static_cast<size_t>(message.size())};
  return channel_->send(&iov, 1);
}

Status FakeGuest::recv(Received *out, int timeout_ms) {
  if (!channel_)
    return Status::error(AVA_E_CLOSED, "closed");
  MsgBuf buf;
  Status s = channel_->recv(buf, timeout_ms);
  if (!s.is_ok())
    return s;
  std::memcpy(&out->hdr, buf.data(), sizeof out->hdr);
  uint64_t rest = buf.size() - sizeof out->hdr;
  uint64_t args_len = out->hdr.args_len <= rest ? out->hdr.args_len : rest;
  const uint8_t *args = buf.data() + sizeof out->hdr;
  const uint8_t *end = buf.data() + buf.size();
  out->args.assign(args, args + args_len);
  out->payload.assign(args + args_len, end);
  return Status::ok();
}

RawMessage FakeGuest::make_call(uint32_t func_id, const void *args, uint32_t args_len,
                                const Payload &payload, uint32_t flags, uint64_t thread_id) {
  RawMessage message(AVA_MSG_CALL, func_id, args, args_len, payload.bytes());
  message.hdr().flags = flags;
  message.hdr().thread_id = thread_id;
  message.hdr().call_id = next_call_id_;
  message.hdr().seq = next_call_id_;
  ++next_call_id_;
  return message;
}

int FakeGuest::call(RawMessage &message, Received *reply) {
  Status s = send(message);
  if (!s.is_ok())
    return s.code;
  s = recv(reply);
  if (!s.is_ok())
    return s.code;
  if (reply->hdr.kind != AVA_MSG_REPLY || reply->hdr.call_id != message.hdr().call_id)
    return AVA_E_PROTO;
  return reply->hdr.status;
}

uint64_t FakeGuest::create_obj(uint64_t size, uint64_t thread_id) {
  ava_wtest_wt_obj_create_call args{.size = size, .out = Payload::out(sizeof(uint64_t))};
  Received reply;
  if (call(AVA_WTEST_FN_WT_OBJ_CREATE, args, &reply, {}, thread_id) != AVA_OK)
    return 0;
  auto r = reply.reply<ava_wtest_wt_obj_create_reply>();
  return r.ret == WT_OK ? reply.out<uint64_t>(r.out) : 0;
}

uint64_t FakeGuest::create_other(uint64_t thread_id) {
  ava_wtest_wt_other_create_call args{.out = Payload::out(sizeof(uint64_t))};
  Received reply;
  if (call(AVA_WTEST_FN_WT_OTHER_CREATE, args, &reply, {}, thread_id) != AVA_OK)
    return 0;
  auto r = reply.reply<ava_wtest_wt_other_create_reply>();
  return r.ret == WT_OK ? reply.out<uint64_t>(r.out) : 0;
}

int32_t FakeGuest::add(int32_t a, int32_t b, uint64_t thread_id) {
  ava_wtest_wt_add_call args{.a = a, .b = b};
  Received reply;
  int status = call(AVA_WTEST_FN_WT_ADD, args, &reply, {}, thread_id);
  return status == AVA_OK ? static_cast<int32_t>(reply.reply<ava_wtest_wt_add_reply>().ret)
                          : INT32_MIN;
}

void FakeGuest::goodbye() {
  RawMessage message(AVA_MSG_GOODBYE, 0, nullptr, 0);
  send(message);
  close();
}

WorkerHarness::WorkerHarness(WorkerOptions options)
    : options_(std::move(options)), plugins_(options_.plugin_dir, options_.specs) {
  static std::atomic<int> counter{0};
  Address address;
  address.kind = ChannelKind::Unix;
  address.path = "@ava-wtest-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  listen_channel(address, &listener_);
}

WorkerHarness::~WorkerHarness() {
  for (auto &served : served_)
    if (served->thread.joinable())
      served->thread.join();
}

std::unique_ptr<FakeGuest> WorkerHarness::connect() {
  if (!listener_)
    return nullptr;
  std::unique_ptr<Channel> guest_side;
  if (!connect_channel(listener_->address(), kWaitMs, &guest_side).is_ok() || !serve_next())
    return nullptr;
  return std::make_unique<FakeGuest>(std::move(guest_side));
}

int WorkerHarness::connect_raw() {
  if (!listener_)
    return -1;
  const std::string &path = listener_->address().path;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.empty() || path[0] != '@' || path.size() > sizeof sa.sun_path)
    return -1;
  std::memcpy(sa.sun_path + 1, path.data() + 1, path.size() - 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
  if (::connect(fd, reinterpret_cast<sockaddr *>(&sa), len) != 0 || !serve_next()) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool WorkerHarness::serve_next() {
  std::unique_ptr<Channel> worker_side;
  if (!listener_->accept(&worker_side, kWaitMs).is_ok())
    return false;
  auto served = std::make_unique<Served>();
  Served *slot = served.get();
  slot->thread = std::thread([this, slot, channel = std::move(worker_side)]() mutable {
    slot->result = serve_guest(std::move(channel), plugins_, options_);
  });
  served_.push_back(std::move(served));
  return true;
}

Status WorkerHarness::finish(size_t index) {
  if (index >= served_.size())
    return Status::error(AVA_E_STATE, "no such guest");
  if (served_[index]->thread.joinable())
    served_[index]->thread.join();
  return served_[index]->result;
}

} // namespace ava::testing
