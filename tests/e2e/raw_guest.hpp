// SPDX-License-Identifier: MIT
// A guest that speaks the wire protocol by hand, for tests that send a real
// `ava worker` messages no guest library would: raw bytes over a unix socket.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ava/wire.h"
#include "tests/common/wire_message.hpp"

namespace e2e {

using Bytes = std::vector<uint8_t>;

class RawGuest {
public:
  RawGuest(const std::string &path, uint32_t spec_id, uint64_t spec_hash, const char *spec_name)
      : path_(path), spec_id_(spec_id), spec_hash_(spec_hash), spec_name_(spec_name) {}
  ~RawGuest() { close_fd(); }
  RawGuest(const RawGuest &) = delete;
  RawGuest &operator=(const RawGuest &) = delete;

  bool connect_and_hello() {
    close_fd();
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, path_.c_str(), sizeof(sa.sun_path) - 1);
    if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0)
      return false;
    ava_hello h{};
    ava_hello_fill(&h, spec_id_, spec_hash_, spec_name_.c_str(), static_cast<uint64_t>(getpid()),
                   "test");
    Bytes msg = message(AVA_MSG_HELLO, 0, 0, &h, sizeof h, {});
    if (!send_all(msg))
      return false;
    Bytes reply;
    return recv_msg(&reply, 5000) && header(reply).kind == AVA_MSG_HELLO_ACK &&
           header(reply).status == AVA_OK;
  }

  Bytes message(uint16_t kind, uint32_t func, uint32_t flags, const void *args, uint32_t args_len,
                const Bytes &payload) const {
    wire_test::MsgHeader h;
    h.kind = kind;
    h.spec_id = spec_id_;
    h.func_id = func;
    h.flags = flags;
    h.call_id = ++next_call_id_;
    return wire_test::build_message(h, args, args_len, payload.data(), payload.size());
  }

  static const ava_msg_hdr &header(const Bytes &m) {
    return *reinterpret_cast<const ava_msg_hdr *>(m.data());
  }

  bool send_all(const Bytes &m) {
    size_t off = 0;
    while (off < m.size()) {
      const ssize_t n = send(fd_, m.data() + off, m.size() - off, MSG_NOSIGNAL);
      if (n <= 0)
        return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  bool recv_exact(uint8_t *p, size_t n, int timeout_ms) {
    while (n > 0) {
      pollfd pfd{fd_, POLLIN, 0};
      if (poll(&pfd, 1, timeout_ms) <= 0)
        return false;
      const ssize_t r = recv(fd_, p, n, 0);
      if (r <= 0)
        return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }

  bool recv_msg(Bytes *out, int timeout_ms) {
    out->assign(sizeof(ava_msg_hdr), 0);
    if (!recv_exact(out->data(), sizeof(ava_msg_hdr), timeout_ms))
      return false;
    const uint64_t total = header(*out).total_len;
    if (total < sizeof(ava_msg_hdr) || total > (64u << 20))
      return false;
    out->resize(total);
    return recv_exact(out->data() + sizeof(ava_msg_hdr), total - sizeof(ava_msg_hdr), timeout_ms);
  }

  // Sends a sync CALL and waits for its REPLY (skipping others); false if
  // the connection is gone.
  bool call(uint32_t func, const void *args, uint32_t args_len, const Bytes &payload,
            Bytes *reply) {
    Bytes m = message(AVA_MSG_CALL, func, AVA_F_SYNC, args, args_len, payload);
    const uint64_t id = header(m).call_id;
    if (!send_all(m))
      return false;
    for (int i = 0; i < 64; ++i) {
      if (!recv_msg(reply, 10000))
        return false;
      if (header(*reply).kind == AVA_MSG_REPLY && header(*reply).call_id == id)
        return true;
    }
    return false;
  }

  // The function's reply struct of a REPLY (after ava_reply_common).
  template <class T> static bool reply_struct(const Bytes &r, T *out) {
    const size_t at = sizeof(ava_msg_hdr) + sizeof(ava_reply_common);
    if (r.size() < at + sizeof *out)
      return false;
    std::memcpy(out, r.data() + at, sizeof *out);
    return true;
  }

private:
  void close_fd() {
    if (fd_ >= 0)
      close(fd_);
    fd_ = -1;
  }
  std::string path_;
  uint32_t spec_id_;
  uint64_t spec_hash_;
  std::string spec_name_;
  int fd_ = -1;
  static inline uint64_t next_call_id_ = 0;
};

} // namespace e2e
