// SPDX-License-Identifier: MIT
// Message framing over stream channels: malformed frames written raw by a
// peer, round trips of all sizes over every carrier, long gather lists,
// shutdown from another thread and timeouts.
#include <criterion/criterion.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "framing_support.hpp"
#include "transport/channel.hpp"

namespace {

using namespace framing;

Status plain_channel(int fd, const char *name, std::unique_ptr<Channel> *out) {
  return ava::adopt_stream_socket(fd, name, out);
}

enum class Carrier { Pair, UnixPath, UnixAbstract, Tcp };

const char *carrier_name(Carrier c) {
  switch (c) {
  case Carrier::Pair:
    return "socketpair";
  case Carrier::UnixPath:
    return "unix path";
  case Carrier::UnixAbstract:
    return "unix abstract";
  case Carrier::Tcp:
    return "tcp";
  }
  return "?";
}

void connect_pair(Carrier carrier, ConnectedPair *p) {
  if (carrier == Carrier::Pair) {
    Status st = ava::channel_pair(&p->client, &p->server);
    cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
    return;
  }
  ava::Address addr;
  if (carrier == Carrier::Tcp) {
    addr.kind = ava::ChannelKind::Tcp;
    addr.host = "127.0.0.1";
  } else if (carrier == Carrier::UnixAbstract) {
    addr.path = "@ava-test-framing-" + std::to_string(::getpid());
  } else {
    char tmpl[] = "/tmp/ava-framing-XXXXXX";
    cr_assert_not_null(::mkdtemp(tmpl));
    p->dir = tmpl;
    addr.path = p->dir + "/w.sock";
  }
  Status st = ava::listen_channel(addr, &p->listener);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  st = ava::connect_channel(p->listener->address(), 5000, &p->client);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  st = p->listener->accept(&p->server, 5000);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
}

} // namespace

// ---------------------------------------------------------------- bad frames

Test(framing, bad_frames) {
  for (const BadFrame &c : kBadFrames)
    run_bad_frame(plain_channel, c);
}

Test(framing, truncation_message_says_so) {
  RawPeer peer;
  make_raw_peer(plain_channel, &peer);
  ava_msg_hdr hdr = make_hdr(kHdr + 100);
  write_raw(peer.raw, &hdr, sizeof hdr);
  write_raw(peer.raw, "abc", 3);
  ::close(peer.raw);
  peer.raw = -1;
  MsgBuf buf;
  Status st = peer.channel->recv(buf, 5000);
  cr_assert_eq(st.code, AVA_E_CLOSED);
  cr_expect(st.message.find("truncated") != std::string::npos, "%s", st.message.c_str());
}

// ---------------------------------------------------------------- round trips

namespace {

const uint64_t kSizes[] = {kHdr,          kHdr + 1,         kHdr + 8, 4096,
                           64 * 1024 + 7, 64 * 1024 + kHdr, 1 << 20,  64ull << 20};

} // namespace

Test(framing, round_trip_all_sizes_all_carriers, .timeout = 300) {
  for (Carrier carrier : {Carrier::Pair, Carrier::UnixPath, Carrier::UnixAbstract, Carrier::Tcp}) {
    ConnectedPair p;
    connect_pair(carrier, &p);
    cr_log_info("carrier %s: %s <-> %s", carrier_name(carrier), p.client->describe().c_str(),
                p.server->describe().c_str());
    one_way(*p.client, *p.server, kSizes);
    one_way(*p.server, *p.client, kSizes);
  }
}

Test(framing, tcp_describe_names_peer) {
  ConnectedPair p;
  connect_pair(Carrier::Tcp, &p);
  const std::string server = p.server->describe();
  cr_expect(server.starts_with("tcp:127.0.0.1:"), "%s", server.c_str());
  cr_expect(server.find("(peer 127.0.0.1:") != std::string::npos, "%s", server.c_str());
  const std::string client = p.client->describe();
  cr_expect(client.starts_with("tcp:127.0.0.1:"), "%s", client.c_str());
}

Test(framing, many_iovecs_beyond_iov_max) {
  std::unique_ptr<Channel> a;
  std::unique_ptr<Channel> b;
  cr_assert_eq(ava::channel_pair(&a, &b).code, AVA_OK);
  constexpr int kPieces = 5000;
  std::vector<uint8_t> backing(kPieces * 7);
  for (size_t i = 0; i < backing.size(); ++i)
    backing[i] = static_cast<uint8_t>(i * 13 + 5);
  std::vector<struct iovec> iov;
  std::vector<uint8_t> expected;
  ava_msg_hdr hdr{};
  // The header itself is split across two entries, and some entries are empty.
  iov.push_back({&hdr, 10});
  iov.push_back({reinterpret_cast<uint8_t *>(&hdr) + 10, kHdr - 10});
  size_t offset = 0;
  for (int i = 0; i < kPieces; ++i) {
    const size_t len = static_cast<size_t>(i % 7);
    iov.push_back({backing.data() + offset, len});
    expected.insert(expected.end(), backing.begin() + static_cast<long>(offset),
                    backing.begin() + static_cast<long>(offset + len));
    offset += len;
  }
  hdr = make_hdr(kHdr + expected.size(), 9);
  Status send_status;
  std::thread sender([&] { send_status = a->send(iov.data(), static_cast<int>(iov.size())); });
  MsgBuf buf;
  Status st = b->recv(buf, 30000);
  sender.join();
  cr_assert_eq(send_status.code, AVA_OK, "%s", send_status.message.c_str());
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_assert_eq(buf.size(), kHdr + expected.size());
  cr_assert_eq(std::memcmp(buf.data() + kHdr, expected.data(), expected.size()), 0);
}

Test(framing, back_to_back_small_messages) {
  std::unique_ptr<Channel> a;
  std::unique_ptr<Channel> b;
  cr_assert_eq(ava::channel_pair(&a, &b).code, AVA_OK);
  std::vector<uint8_t> scratch;
  // Written before any read, so that one read brings several messages at once.
  for (uint64_t seq = 0; seq < 200; ++seq)
    cr_assert_eq(send_pattern(*a, kHdr + seq % 50, seq, scratch).code, AVA_OK);
  MsgBuf buf;
  for (uint64_t seq = 0; seq < 200; ++seq) {
    Status st = b->recv(buf, 5000);
    cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
    expect_pattern(buf, kHdr + seq % 50, seq);
  }
}

// ---------------------------------------------------------------- send checks

Test(framing, send_rejects_inconsistent_messages) {
  std::unique_ptr<Channel> a;
  std::unique_ptr<Channel> b;
  cr_assert_eq(ava::channel_pair(&a, &b).code, AVA_OK);
  a->set_max_message(4096);
  struct SendCase {
    const char *name;
    uint64_t total_len;
    uint64_t actual;
    uint32_t magic;
    int expected;
  };
  const SendCase cases[] = {
      {"total_len too small", kHdr + 8, kHdr + 16, AVA_MSG_MAGIC, AVA_E_PROTO},
      {"total_len too large", kHdr + 32, kHdr + 16, AVA_MSG_MAGIC, AVA_E_PROTO},
      {"shorter than header", 32, 32, AVA_MSG_MAGIC, AVA_E_PROTO},
      {"bad magic", kHdr, kHdr, 0x12345678u, AVA_E_PROTO},
      {"above max_message", 8192, 8192, AVA_MSG_MAGIC, AVA_E_TOO_BIG},
  };
  std::vector<uint8_t> bytes(8192, 0);
  for (const SendCase &c : cases) {
    ava_msg_hdr hdr = make_hdr(c.total_len);
    hdr.magic = c.magic;
    std::memcpy(bytes.data(), &hdr, std::min<uint64_t>(c.actual, kHdr));
    struct iovec iov = {bytes.data(), c.actual};
    Status st = a->send(&iov, 1);
    cr_expect_eq(st.code, c.expected, "%s: %d (%s)", c.name, st.code, st.message.c_str());
  }
  // Refused sends write nothing, so the channel still works.
  std::vector<uint8_t> scratch;
  cr_assert_eq(send_pattern(*a, kHdr + 24, 4, scratch).code, AVA_OK);
  MsgBuf buf;
  cr_assert_eq(b->recv(buf, 5000).code, AVA_OK);
  expect_pattern(buf, kHdr + 24, 4);
}

Test(framing, send_to_closed_peer_fails_without_sigpipe) {
  std::unique_ptr<Channel> a;
  std::unique_ptr<Channel> b;
  cr_assert_eq(ava::channel_pair(&a, &b).code, AVA_OK);
  b.reset();
  std::vector<uint8_t> scratch;
  Status st = send_pattern(*a, kHdr + 100, 0, scratch);
  cr_expect_eq(st.code, AVA_E_CLOSED, "%d %s", st.code, st.message.c_str());
  st = send_pattern(*a, kHdr + 100, 1, scratch);
  cr_expect_eq(st.code, AVA_E_CLOSED);
  MsgBuf buf;
  cr_expect_eq(a->recv(buf, 1000).code, AVA_E_CLOSED);
}

// ---------------------------------------------------------------- shutdown, timeouts

Test(framing, shutdown_wakes_blocked_recv) {
  for (Carrier carrier : {Carrier::Pair, Carrier::Tcp}) {
    ConnectedPair p;
    connect_pair(carrier, &p);
    Status recv_status;
    std::thread reader([&] {
      MsgBuf buf;
      recv_status = p.server->recv(buf, -1);
    });
    // Most likely the reader is blocked by now; if not, it must fail just the same.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    p.server->shutdown();
    reader.join();
    cr_expect_eq(recv_status.code, AVA_E_CLOSED, "%s: %s", carrier_name(carrier),
                 recv_status.message.c_str());
    MsgBuf buf;
    cr_expect_eq(p.server->recv(buf, -1).code, AVA_E_CLOSED);
    std::vector<uint8_t> scratch;
    cr_expect_eq(send_pattern(*p.server, kHdr, 0, scratch).code, AVA_E_CLOSED);
    // The other side learns that this one is gone.
    cr_expect_eq(p.client->recv(buf, 5000).code, AVA_E_CLOSED, "%s", carrier_name(carrier));
  }
}

Test(framing, shutdown_wakes_blocked_send) {
  for (Carrier carrier : {Carrier::Pair, Carrier::Tcp}) {
    ConnectedPair p;
    connect_pair(carrier, &p);
    Status send_status;
    std::thread writer([&] {
      std::vector<uint8_t> scratch;
      // Far more than any socket buffer, and nobody reads.
      send_status = send_pattern(*p.client, 64ull << 20, 0, scratch);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    p.client->shutdown();
    writer.join();
    cr_expect_eq(send_status.code, AVA_E_CLOSED, "%s: %s", carrier_name(carrier),
                 send_status.message.c_str());
  }
}

Test(framing, recv_timeout_consumes_nothing) {
  std::unique_ptr<Channel> a;
  std::unique_ptr<Channel> b;
  cr_assert_eq(ava::channel_pair(&a, &b).code, AVA_OK);
  MsgBuf buf;
  Status st = b->recv(buf, 0);
  cr_expect_eq(st.code, AVA_E_TIMEOUT, "%s", st.message.c_str());
  st = b->recv(buf, 30);
  cr_expect_eq(st.code, AVA_E_TIMEOUT, "%s", st.message.c_str());
  std::vector<uint8_t> scratch;
  cr_assert_eq(send_pattern(*a, kHdr + 5, 7, scratch).code, AVA_OK);
  st = b->recv(buf, 5000);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  expect_pattern(buf, kHdr + 5, 7);
}

Test(framing, msgbuf_reserve_and_trim) {
  MsgBuf buf;
  cr_expect_eq(buf.capacity(), 0u);
  cr_assert(buf.reserve(100));
  cr_expect_geq(buf.capacity(), 100u);
  cr_expect_eq(reinterpret_cast<uintptr_t>(buf.data()) % 8, 0u);
  std::memset(buf.data(), 0x11, 100);
  buf.set_size(100);
  cr_assert(buf.reserve(1 << 20));
  cr_expect_geq(buf.capacity(), uint64_t{1} << 20);
  const uint64_t big = buf.capacity();
  cr_assert(buf.reserve(10));
  cr_expect_eq(buf.capacity(), big, "reserve never shrinks");
  std::memset(buf.data(), 0x22, 64);
  buf.set_size(64);
  buf.trim(4096);
  cr_expect_leq(buf.capacity(), 4096u + 7);
  cr_expect_eq(buf.size(), 64u);
  cr_expect_eq(buf.data()[63], 0x22, "trim keeps the bytes in use");
  cr_expect(!buf.reserve(UINT64_MAX), "an impossible size fails instead of crashing");
  buf.trim(0);
  cr_expect_eq(buf.capacity(), 0u);
}

// ------------------------------------------------------------ socket buffers

namespace {

int socket_option(int fd, int name) {
  int value = 0;
  socklen_t len = sizeof value;
  cr_assert_eq(::getsockopt(fd, SOL_SOCKET, name, &value, &len), 0);
  return value;
}

int sysctl_int(const char *path) {
  FILE *f = std::fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  int value = 0;
  cr_assert_eq(std::fscanf(f, "%d", &value), 1, "%s", path);
  std::fclose(f);
  return value;
}

} // namespace

// A unix stream moves at most the sender's SO_SNDBUF per round (a sleep and
// a wake-up on both sides), so channels widen it to 4 MiB where the system's
// cap allows (the kernel reports twice what was set). TCP sockets are left
// to the kernel's autotuning, which setting SO_SNDBUF would turn off.
Test(framing, unix_channels_widen_their_socket_buffers) {
  const int cap_snd = sysctl_int("/proc/sys/net/core/wmem_max");
  const int cap_rcv = sysctl_int("/proc/sys/net/core/rmem_max");
  int sv[2];
  cr_assert_eq(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const int default_snd = socket_option(sv[1], SO_SNDBUF);
  std::unique_ptr<Channel> ch;
  Status st = ava::adopt_stream_socket(sv[0], "pair", &ch);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  const int want = 4 << 20;
  cr_expect_eq(socket_option(sv[0], SO_SNDBUF), 2 * std::min(want, cap_snd));
  cr_expect_eq(socket_option(sv[0], SO_RCVBUF), 2 * std::min(want, cap_rcv));
  cr_expect_eq(socket_option(sv[1], SO_SNDBUF), default_snd, "the peer's end is its own");
  ::close(sv[1]);
}
