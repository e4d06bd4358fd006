// SPDX-License-Identifier: MIT
// What the stream-channel tests share (test_transport_framing.cpp for plain
// sockets, test_transport_uring.cpp for io_uring channels): messages with a
// checkable byte pattern, a channel whose peer is a raw socket, the table of
// malformed frames and the round trip of every size. Each file supplies how
// its channel is made from a socket.
#pragma once

#include <criterion/criterion.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "transport/channel.hpp"

namespace framing {

using ava::Channel;
using ava::MsgBuf;
using ava::Status;

constexpr uint64_t kHdr = sizeof(ava_msg_hdr);

// Makes the channel under test on one end of a connected stream socket; on
// failure the fd is closed.
using MakeChannel = std::function<Status(int fd, const char *name, std::unique_ptr<Channel> *)>;

inline ava_msg_hdr make_hdr(uint64_t total_len, uint64_t seq = 0) {
  ava_msg_hdr hdr{};
  hdr.magic = AVA_MSG_MAGIC;
  hdr.abi_version = AVA_ABI_VERSION;
  hdr.kind = AVA_MSG_CALL;
  hdr.total_len = total_len;
  hdr.seq = seq;
  return hdr;
}

inline uint8_t pattern(uint64_t seq, uint64_t i) {
  return static_cast<uint8_t>(i * 131 + seq * 7 + 1);
}

inline void write_raw(int fd, const void *data, size_t len) {
  const auto *p = static_cast<const uint8_t *>(data);
  while (len > 0) {
    const ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL);
    cr_assert(n > 0, "raw write failed");
    p += n;
    len -= static_cast<size_t>(n);
  }
}

// The channel under test on one end of a socketpair, a raw socket the test
// reads and writes on the other.
struct RawPeer {
  int raw = -1;
  std::unique_ptr<Channel> channel;
  ~RawPeer() {
    channel.reset();
    if (raw >= 0)
      ::close(raw);
  }
};

inline void make_raw_peer(const MakeChannel &make, RawPeer *peer) {
  int sv[2];
  cr_assert_eq(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  peer->raw = sv[1];
  Status st = make(sv[0], "raw-test", &peer->channel);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
}

// Sends one message of total bytes with the pattern of seq, as a gather list of a few pieces.
inline Status send_pattern(Channel &ch, uint64_t total, uint64_t seq,
                           std::vector<uint8_t> &scratch) {
  ava_msg_hdr hdr = make_hdr(total, seq);
  scratch.resize(total - kHdr);
  for (uint64_t i = 0; i < scratch.size(); ++i)
    scratch[i] = pattern(seq, i);
  const uint64_t body = scratch.size();
  const uint64_t cut1 = body / 3;
  const uint64_t cut2 = body - body / 5;
  struct iovec iov[4] = {
      {&hdr, kHdr},
      {scratch.data(), cut1},
      {scratch.data() + cut1, cut2 - cut1},
      {scratch.data() + cut2, body - cut2},
  };
  return ch.send(iov, 4);
}

inline void expect_pattern(const MsgBuf &buf, uint64_t total, uint64_t seq) {
  cr_assert_eq(buf.size(), total, "message %lu: size %lu, expected %lu", (unsigned long)seq,
               (unsigned long)buf.size(), (unsigned long)total);
  cr_assert_eq(buf.header()->total_len, total);
  cr_assert_eq(buf.header()->seq, seq);
  const uint8_t *body = buf.data() + kHdr;
  for (uint64_t i = 0; i < total - kHdr; ++i)
    if (body[i] != pattern(seq, i))
      cr_assert_fail("message %lu: byte %lu differs", (unsigned long)seq, (unsigned long)i);
}

struct ConnectedPair {
  std::unique_ptr<ava::Listener> listener;
  std::unique_ptr<Channel> client;
  std::unique_ptr<Channel> server;
  std::string dir;
  ~ConnectedPair() {
    client.reset();
    server.reset();
    listener.reset();
    if (!dir.empty())
      ::rmdir(dir.c_str());
  }
};

// ---------------------------------------------------------------- bad frames

constexpr uint64_t kMax = 1 << 20;

struct BadFrame {
  const char *name;
  uint32_t magic;
  uint16_t abi;
  uint64_t total_len;
  size_t bytes_written; // of the frame: header first, then body bytes
  bool close_after;     // otherwise the peer stays connected and silent
  int expected;
};

// Every stream channel must refuse these; a carrier with more receive paths
// adds its own rows (test_transport_uring.cpp).
inline const BadFrame kBadFrames[] = {
    {"bad magic", 0xdeadbeefu, AVA_ABI_VERSION, 128, 128, false, AVA_E_PROTO},
    {"bad abi", AVA_MSG_MAGIC, AVA_ABI_VERSION + 1, 128, 128, false, AVA_E_PROTO},
    {"total_len 0", AVA_MSG_MAGIC, AVA_ABI_VERSION, 0, 64, false, AVA_E_PROTO},
    {"total_len 63", AVA_MSG_MAGIC, AVA_ABI_VERSION, 63, 64, false, AVA_E_PROTO},
    {"total_len max+1", AVA_MSG_MAGIC, AVA_ABI_VERSION, kMax + 1, 64, false, AVA_E_TOO_BIG},
    {"total_len 2^64-1", AVA_MSG_MAGIC, AVA_ABI_VERSION, UINT64_MAX, 64, false, AVA_E_TOO_BIG},
    {"close at boundary", AVA_MSG_MAGIC, AVA_ABI_VERSION, 128, 0, true, AVA_E_CLOSED},
    {"truncated header", AVA_MSG_MAGIC, AVA_ABI_VERSION, 128, 30, true, AVA_E_CLOSED},
    {"truncated body", AVA_MSG_MAGIC, AVA_ABI_VERSION, 4096, 1000, true, AVA_E_CLOSED},
    {"close after header", AVA_MSG_MAGIC, AVA_ABI_VERSION, 200000, 64, true, AVA_E_CLOSED},
    {"stall in header", AVA_MSG_MAGIC, AVA_ABI_VERSION, 128, 30, false, AVA_E_TIMEOUT},
    {"stall in body", AVA_MSG_MAGIC, AVA_ABI_VERSION, 200000, 70000, false, AVA_E_TIMEOUT},
};

// A good message, then the bad frame c: the good one arrives intact, the bad
// one fails with c.expected and a message naming the channel, allocates
// nothing when its header is refused, and leaves the channel broken for good.
inline void run_bad_frame(const MakeChannel &make, const BadFrame &c) {
  RawPeer peer;
  make_raw_peer(make, &peer);
  peer.channel->set_max_message(kMax);
  peer.channel->set_stall_timeout_ms(200);

  ava_msg_hdr good = make_hdr(kHdr + 16, 1);
  uint8_t good_body[16] = {1, 2, 3};
  write_raw(peer.raw, &good, sizeof good);
  write_raw(peer.raw, good_body, sizeof good_body);

  ava_msg_hdr bad = make_hdr(c.total_len, 2);
  bad.magic = c.magic;
  bad.abi_version = c.abi;
  std::vector<uint8_t> frame(std::max<size_t>(c.bytes_written, kHdr), 0x5a);
  std::memcpy(frame.data(), &bad, sizeof bad);
  // The writer runs apart because the frame may exceed the socket buffer.
  std::thread writer([&] {
    if (c.bytes_written > 0)
      write_raw(peer.raw, frame.data(), c.bytes_written);
    if (c.close_after)
      ::shutdown(peer.raw, SHUT_WR);
  });

  MsgBuf buf;
  Status st = peer.channel->recv(buf, 5000);
  cr_assert_eq(st.code, AVA_OK, "%s: good message: %s", c.name, st.message.c_str());
  cr_assert_eq(buf.size(), kHdr + 16, "%s", c.name);
  const uint64_t capacity_before = buf.capacity();

  st = peer.channel->recv(buf, 5000);
  writer.join();
  cr_expect_eq(st.code, c.expected, "%s: code %d (%s), expected %d", c.name, st.code,
               st.message.c_str(), c.expected);
  cr_log_info("%s -> %s", c.name, st.message.c_str());
  cr_expect(!st.message.empty(), "%s: an error needs a message", c.name);
  cr_expect(st.message.find("raw-test") != std::string::npos, "%s: message names the channel: %s",
            c.name, st.message.c_str());
  if (c.expected == AVA_E_TOO_BIG || c.expected == AVA_E_PROTO)
    cr_expect_eq(buf.capacity(), capacity_before, "%s: a rejected header must not allocate",
                 c.name);
  if (c.close_after && c.bytes_written > 0)
    cr_expect(st.message.find("truncated") != std::string::npos, "%s: %s", c.name,
              st.message.c_str());

  st = peer.channel->recv(buf, 0);
  cr_expect_eq(st.code, AVA_E_CLOSED, "%s: recv after the error: %d", c.name, st.code);
  if (c.expected != AVA_E_CLOSED) {
    std::vector<uint8_t> scratch;
    st = send_pattern(*peer.channel, kHdr + 8, 3, scratch);
    cr_expect_eq(st.code, AVA_E_CLOSED, "%s: send after the error: %d", c.name, st.code);
  }
}

// ---------------------------------------------------------------- round trips

// Messages of each size from `from` to `to`, sent by another thread, each
// arriving whole and in order.
inline void one_way(Channel &from, Channel &to, std::span<const uint64_t> sizes) {
  Status send_status;
  std::thread sender([&] {
    std::vector<uint8_t> scratch;
    uint64_t seq = 0;
    for (uint64_t size : sizes) {
      send_status = send_pattern(from, size, seq++, scratch);
      if (!send_status.is_ok())
        return;
    }
  });
  MsgBuf buf;
  uint64_t seq = 0;
  for (uint64_t size : sizes) {
    Status st = to.recv(buf, 30000);
    if (!st.is_ok()) {
      from.shutdown();
      sender.join();
      cr_assert_fail("recv of %lu bytes: %s", (unsigned long)size, st.message.c_str());
    }
    expect_pattern(buf, size, seq++);
  }
  sender.join();
  cr_assert_eq(send_status.code, AVA_OK, "%s", send_status.message.c_str());
}

} // namespace framing
