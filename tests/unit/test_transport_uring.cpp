// SPDX-License-Identifier: MIT
// The io_uring stream channel: the framing table and round trips of
// test_transport_framing.cpp over uring channels, batched receive (a burst of
// small messages) and batched send (several messages in one send()),
// shutdown from another thread, a peer closing mid-message, and the listener
// wrapper. Every test skips when this machine cannot set up io_uring.
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "framing_support.hpp"
#include "transport/channel.hpp"
#include "transport/uring.hpp"

namespace {

using namespace framing;

void require_uring() {
  Status st = ava::uring_available();
  if (!st.is_ok())
    cr_skip_test("%s", st.message.c_str());
}

// Appends one whole message with the pattern of seq to bytes.
void append_message(std::vector<uint8_t> &bytes, uint64_t total, uint64_t seq) {
  const ava_msg_hdr hdr = make_hdr(total, seq);
  const auto *h = reinterpret_cast<const uint8_t *>(&hdr);
  bytes.insert(bytes.end(), h, h + kHdr);
  for (uint64_t i = 0; i < total - kHdr; ++i)
    bytes.push_back(pattern(seq, i));
}

Status uring_channel(int fd, const char *name, std::unique_ptr<Channel> *out) {
  Status st = ava::make_uring_channel(fd, name, out);
  if (!st.is_ok())
    ::close(fd);
  return st;
}

void uring_pair(std::unique_ptr<Channel> *a, std::unique_ptr<Channel> *b) {
  int sv[2];
  cr_assert_eq(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  Status st = ava::make_uring_channel(sv[0], "uring:0", a);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  st = ava::make_uring_channel(sv[1], "uring:1", b);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
}

enum class Carrier { Pair, UnixPath, Tcp, MixedPlainClient };

const char *carrier_name(Carrier c) {
  switch (c) {
  case Carrier::Pair:
    return "socketpair";
  case Carrier::UnixPath:
    return "unix path";
  case Carrier::Tcp:
    return "tcp";
  case Carrier::MixedPlainClient:
    return "plain client, uring server";
  }
  return "?";
}

// The server side always comes from wrap_listener_uring; the client is
// upgraded unless the carrier says plain.
void connect_pair(Carrier carrier, ConnectedPair *p) {
  if (carrier == Carrier::Pair) {
    uring_pair(&p->client, &p->server);
    return;
  }
  ava::Address addr;
  if (carrier == Carrier::Tcp) {
    addr.kind = ava::ChannelKind::Tcp;
    addr.host = "127.0.0.1";
  } else {
    char tmpl[] = "/tmp/ava-uring-XXXXXX";
    cr_assert_not_null(::mkdtemp(tmpl));
    p->dir = tmpl;
    addr.path = p->dir + "/w.sock";
  }
  std::unique_ptr<ava::Listener> plain;
  Status st = ava::listen_channel(addr, &plain);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  st = ava::wrap_listener_uring(std::move(plain), &p->listener);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  st = ava::connect_channel(p->listener->address(), 5000, &p->client);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  if (carrier != Carrier::MixedPlainClient) {
    st = ava::upgrade_channel_uring(&p->client);
    cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  }
  st = p->listener->accept(&p->server, 5000);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
}

} // namespace

// ---------------------------------------------------------------- bad frames

namespace {

// The uring channel's two receive paths beyond the shared table: bodies
// gathered in its buffer and bodies read in place.
const BadFrame kUringBadFrames[] = {
    {"truncated large body", AVA_MSG_MAGIC, AVA_ABI_VERSION, 900000, 300000, true, AVA_E_CLOSED},
    {"stall in small body", AVA_MSG_MAGIC, AVA_ABI_VERSION, 4096, 1000, false, AVA_E_TIMEOUT},
};

} // namespace

Test(uring, bad_frames) {
  require_uring();
  for (const BadFrame &c : kBadFrames)
    run_bad_frame(uring_channel, c);
  for (const BadFrame &c : kUringBadFrames)
    run_bad_frame(uring_channel, c);
}

// ---------------------------------------------------------------- round trips

namespace {

const uint64_t kSizes[] = {kHdr,       kHdr + 1,       kHdr + 8,          4096,
                           128 * 1024, 128 * 1024 + 1, 256 * 1024 + kHdr, 64 * 1024 + 7,
                           1 << 20,    64ull << 20,    kHdr + 3};

} // namespace

Test(uring, round_trip_all_sizes_all_carriers, .timeout = 300) {
  require_uring();
  for (Carrier carrier :
       {Carrier::Pair, Carrier::UnixPath, Carrier::Tcp, Carrier::MixedPlainClient}) {
    ConnectedPair p;
    connect_pair(carrier, &p);
    cr_log_info("carrier %s: %s <-> %s", carrier_name(carrier), p.client->describe().c_str(),
                p.server->describe().c_str());
    one_way(*p.client, *p.server, kSizes);
    one_way(*p.server, *p.client, kSizes);
  }
}

Test(uring, many_iovecs_beyond_iov_max) {
  require_uring();
  std::unique_ptr<Channel> a;
  std::unique_ptr<Channel> b;
  uring_pair(&a, &b);
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

// ---------------------------------------------------------------- batching

Test(uring, burst_of_small_messages_in_order) {
  require_uring();
  RawPeer peer;
  make_raw_peer(uring_channel, &peer);
  // Written in one piece before any recv, so that the channel's large recvs
  // bring many messages at once, some of them cut at the buffer's end.
  constexpr uint64_t kCount = 20000;
  std::vector<uint8_t> burst;
  for (uint64_t seq = 0; seq < kCount; ++seq)
    append_message(burst, kHdr + seq % 61, seq);
  std::thread writer([&] { write_raw(peer.raw, burst.data(), burst.size()); });
  MsgBuf buf;
  for (uint64_t seq = 0; seq < kCount; ++seq) {
    Status st = peer.channel->recv(buf, 10000);
    if (!st.is_ok()) {
      ::shutdown(peer.raw, SHUT_RDWR);
      writer.join();
      cr_assert_fail("message %lu: %s", (unsigned long)seq, st.message.c_str());
    }
    expect_pattern(buf, kHdr + seq % 61, seq);
  }
  writer.join();
  cr_expect_eq(peer.channel->recv(buf, 0).code, AVA_E_TIMEOUT, "nothing beyond the burst");
}

Test(uring, several_messages_in_one_send) {
  require_uring();
  RawPeer peer;
  make_raw_peer(uring_channel, &peer);
  // Three messages, with headers and bodies cut across gather entries.
  std::vector<uint8_t> bytes;
  append_message(bytes, kHdr + 10, 0);
  append_message(bytes, kHdr, 1);
  append_message(bytes, kHdr + 300, 2);
  struct iovec iov[4] = {
      {bytes.data(), 30},
      {bytes.data() + 30, 100},
      {bytes.data() + 130, 0},
      {bytes.data() + 130, bytes.size() - 130},
  };
  Status st = peer.channel->send(iov, 4);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  std::vector<uint8_t> got(bytes.size());
  size_t have = 0;
  for (int round = 0; round < 100 && have < got.size(); ++round) {
    const ssize_t n = ::recv(peer.raw, got.data() + have, got.size() - have, 0);
    cr_assert(n > 0);
    have += static_cast<size_t>(n);
  }
  cr_assert_eq(have, bytes.size());
  cr_expect_eq(std::memcmp(got.data(), bytes.data(), bytes.size()), 0);

  // The receiving side of a uring pair gets them as three messages.
  std::unique_ptr<Channel> a;
  std::unique_ptr<Channel> b;
  uring_pair(&a, &b);
  struct iovec whole = {bytes.data(), bytes.size()};
  cr_assert_eq(a->send(&whole, 1).code, AVA_OK);
  MsgBuf buf;
  const uint64_t sizes[] = {kHdr + 10, kHdr, kHdr + 300};
  for (uint64_t seq = 0; seq < 3; ++seq) {
    st = b->recv(buf, 5000);
    cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
    expect_pattern(buf, sizes[seq], seq);
  }
}

Test(uring, send_rejects_inconsistent_messages) {
  require_uring();
  std::unique_ptr<Channel> a;
  std::unique_ptr<Channel> b;
  uring_pair(&a, &b);
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
  // A batch whose second message is bad is refused as a whole.
  std::vector<uint8_t> batch;
  append_message(batch, kHdr + 5, 0);
  append_message(batch, kHdr + 5, 1);
  const uint32_t no_magic = 0;
  std::memcpy(batch.data() + kHdr + 5 + offsetof(ava_msg_hdr, magic), &no_magic, sizeof no_magic);
  struct iovec iov = {batch.data(), batch.size()};
  cr_expect_eq(a->send(&iov, 1).code, AVA_E_PROTO);
  cr_expect_eq(a->send(nullptr, 1).code, AVA_E_PROTO);
  cr_expect_eq(a->send(&iov, -1).code, AVA_E_PROTO);
  // Refused sends write nothing, so the channel still works.
  std::vector<uint8_t> scratch;
  cr_assert_eq(send_pattern(*a, kHdr + 24, 4, scratch).code, AVA_OK);
  MsgBuf buf;
  cr_assert_eq(b->recv(buf, 5000).code, AVA_OK);
  expect_pattern(buf, kHdr + 24, 4);
  cr_expect_eq(b->recv(buf, 0).code, AVA_E_TIMEOUT);
}

// ---------------------------------------------------------------- peers going away

Test(uring, peer_closing_mid_message) {
  require_uring();
  // Small bodies wait in the channel's buffer, large ones in the caller's.
  for (uint64_t total : {kHdr + 100, uint64_t{1} << 20}) {
    RawPeer peer;
    make_raw_peer(uring_channel, &peer);
    ava_msg_hdr hdr = make_hdr(total);
    std::vector<uint8_t> part(kHdr + 37, 0x33);
    std::memcpy(part.data(), &hdr, kHdr);
    write_raw(peer.raw, part.data(), part.size());
    Status recv_status;
    std::thread reader([&] {
      MsgBuf buf;
      recv_status = peer.channel->recv(buf, 5000);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ::close(peer.raw);
    peer.raw = -1;
    reader.join();
    cr_expect_eq(recv_status.code, AVA_E_CLOSED, "%lu: %s", (unsigned long)total,
                 recv_status.message.c_str());
    cr_expect(recv_status.message.find("truncated") != std::string::npos, "%s",
              recv_status.message.c_str());
    std::vector<uint8_t> scratch;
    cr_expect_eq(send_pattern(*peer.channel, kHdr, 0, scratch).code, AVA_E_CLOSED);
  }
}

Test(uring, send_to_closed_peer_fails_without_sigpipe) {
  require_uring();
  std::unique_ptr<Channel> a;
  std::unique_ptr<Channel> b;
  uring_pair(&a, &b);
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

Test(uring, shutdown_wakes_blocked_recv) {
  require_uring();
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

Test(uring, shutdown_wakes_recv_blocked_mid_body) {
  require_uring();
  RawPeer peer;
  make_raw_peer(uring_channel, &peer);
  ava_msg_hdr hdr = make_hdr(4ull << 20);
  write_raw(peer.raw, &hdr, sizeof hdr);
  Status recv_status;
  std::thread reader([&] {
    MsgBuf buf;
    recv_status = peer.channel->recv(buf, -1);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  peer.channel->shutdown();
  reader.join();
  cr_expect_eq(recv_status.code, AVA_E_CLOSED, "%s", recv_status.message.c_str());
}

Test(uring, shutdown_wakes_blocked_send) {
  require_uring();
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

Test(uring, recv_timeout_consumes_nothing) {
  require_uring();
  std::unique_ptr<Channel> a;
  std::unique_ptr<Channel> b;
  uring_pair(&a, &b);
  MsgBuf buf;
  Status st = b->recv(buf, 0);
  cr_expect_eq(st.code, AVA_E_TIMEOUT, "%s", st.message.c_str());
  st = b->recv(buf, 30);
  cr_expect_eq(st.code, AVA_E_TIMEOUT, "%s", st.message.c_str());
  std::vector<uint8_t> scratch;
  for (uint64_t seq = 7; seq < 10; ++seq)
    cr_assert_eq(send_pattern(*a, kHdr + seq, seq, scratch).code, AVA_OK);
  for (uint64_t seq = 7; seq < 10; ++seq) {
    st = b->recv(buf, 5000);
    cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
    expect_pattern(buf, kHdr + seq, seq);
  }
  // Destroyed with a receive still waiting in the kernel: must be clean.
  cr_expect_eq(b->recv(buf, 0).code, AVA_E_TIMEOUT);
  b.reset();
}

Test(uring, send_and_recv_from_two_threads) {
  require_uring();
  std::unique_ptr<Channel> a;
  std::unique_ptr<Channel> b;
  uring_pair(&a, &b);
  constexpr uint64_t kCount = 2000;
  // b echoes everything; a sends from one thread and receives on another.
  std::thread echo([&] {
    MsgBuf buf;
    for (uint64_t i = 0; i < kCount; ++i) {
      if (!b->recv(buf, 10000).is_ok())
        return;
      struct iovec iov = {buf.data(), buf.size()};
      if (!b->send(&iov, 1).is_ok())
        return;
    }
  });
  Status send_status;
  std::thread sender([&] {
    std::vector<uint8_t> scratch;
    for (uint64_t seq = 0; seq < kCount && send_status.is_ok(); ++seq)
      send_status = send_pattern(*a, kHdr + seq % 3000, seq, scratch);
  });
  MsgBuf buf;
  for (uint64_t seq = 0; seq < kCount; ++seq) {
    Status st = a->recv(buf, 10000);
    if (!st.is_ok()) {
      a->shutdown();
      b->shutdown();
      sender.join();
      echo.join();
      cr_assert_fail("echo %lu: %s", (unsigned long)seq, st.message.c_str());
    }
    expect_pattern(buf, kHdr + seq % 3000, seq);
  }
  sender.join();
  echo.join();
  cr_expect_eq(send_status.code, AVA_OK, "%s", send_status.message.c_str());
}

// ---------------------------------------------------------------- construction

Test(uring, construction_arguments) {
  require_uring();
  std::unique_ptr<Channel> out;
  cr_expect_eq(ava::make_uring_channel(-1, "x", &out).code, AVA_E_PROTO);
  int sv[2];
  cr_assert_eq(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  cr_expect_eq(ava::make_uring_channel(sv[0], "x", nullptr).code, AVA_E_PROTO);
  // A refused fd stays the caller's: still open.
  cr_expect_eq(::fcntl(sv[0], F_GETFD) >= 0, true);
  ::close(sv[0]);
  ::close(sv[1]);
  cr_expect_eq(ava::upgrade_channel_uring(nullptr).code, AVA_E_PROTO);
  cr_expect_eq(ava::wrap_listener_uring(nullptr, nullptr).code, AVA_E_PROTO);
  std::unique_ptr<Channel> a;
  std::unique_ptr<Channel> b;
  uring_pair(&a, &b);
  // Already io_uring: stays as it is, and still works.
  Channel *before = a.get();
  cr_expect_eq(ava::upgrade_channel_uring(&a).code, AVA_E_UNSUPPORTED);
  cr_expect_eq(a.get(), before);
  std::vector<uint8_t> scratch;
  cr_assert_eq(send_pattern(*a, kHdr + 1, 1, scratch).code, AVA_OK);
  MsgBuf buf;
  cr_assert_eq(b->recv(buf, 5000).code, AVA_OK);
  expect_pattern(buf, kHdr + 1, 1);
}

Test(uring, upgrade_keeps_limits_and_refuses_after_read_ahead) {
  require_uring();
  std::unique_ptr<Channel> a;
  std::unique_ptr<Channel> b;
  cr_assert_eq(ava::channel_pair(&a, &b).code, AVA_OK);
  b->set_max_message(1000);
  b->set_stall_timeout_ms(1234);
  std::vector<uint8_t> scratch;
  // Two messages: the plain channel reads both ahead when taking the first.
  cr_assert_eq(send_pattern(*a, kHdr + 4, 0, scratch).code, AVA_OK);
  cr_assert_eq(send_pattern(*a, kHdr + 4, 1, scratch).code, AVA_OK);
  MsgBuf buf;
  cr_assert_eq(b->recv(buf, 5000).code, AVA_OK);
  cr_expect_eq(ava::upgrade_channel_uring(&b).code, AVA_E_UNSUPPORTED);
  cr_assert_eq(b->recv(buf, 5000).code, AVA_OK);
  expect_pattern(buf, kHdr + 4, 1);
  // Nothing read ahead now: the upgrade goes through and keeps the settings.
  Status st = ava::upgrade_channel_uring(&b);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_expect_eq(b->max_message(), 1000u);
  cr_expect_eq(b->stall_timeout_ms(), 1234);
  cr_assert_eq(send_pattern(*a, 2000, 2, scratch).code, AVA_OK);
  cr_expect_eq(b->recv(buf, 5000).code, AVA_E_TOO_BIG);
}

Test(uring, listener_wrapper) {
  require_uring();
  ava::Address addr;
  addr.path = "@ava-test-uring-" + std::to_string(::getpid());
  std::unique_ptr<ava::Listener> listener;
  cr_assert_eq(ava::listen_channel(addr, &listener).code, AVA_OK);
  Status st = ava::wrap_listener_uring(std::move(listener), &listener);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_expect_eq(listener->address().to_string(), addr.to_string());
  std::unique_ptr<Channel> server;
  cr_expect_eq(listener->accept(&server, 0).code, AVA_E_TIMEOUT);
  cr_expect_eq(listener->accept(nullptr, 0).code, AVA_E_PROTO);
  std::unique_ptr<Channel> client;
  cr_assert_eq(ava::connect_channel(listener->address(), 5000, &client).code, AVA_OK);
  cr_assert_eq(listener->accept(&server, 5000).code, AVA_OK);
  cr_expect(server->describe().starts_with("unix:@ava-test-uring-"), "%s",
            server->describe().c_str());
  // Already upgraded by accept().
  cr_expect_eq(ava::upgrade_channel_uring(&server).code, AVA_E_UNSUPPORTED);
  std::vector<uint8_t> scratch;
  cr_assert_eq(send_pattern(*client, kHdr + 77, 5, scratch).code, AVA_OK);
  MsgBuf buf;
  cr_assert_eq(server->recv(buf, 5000).code, AVA_OK);
  expect_pattern(buf, kHdr + 77, 5);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    listener->shutdown();
  });
  st = listener->accept(&server, -1);
  stopper.join();
  cr_expect_eq(st.code, AVA_E_CLOSED, "%s", st.message.c_str());
}
