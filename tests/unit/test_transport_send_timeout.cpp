// SPDX-License-Identifier: MIT
// Bounded sends (Channel::set_send_timeout_ms): a sender whose peer stops
// reading gets AVA_E_TIMEOUT once the channel has had no room for the
// timeout, the channel is broken from then on, and a sender without a
// timeout is unaffected by the option of another channel. The worker sets
// this on every guest connection, so a guest that stops reading cannot hold a
// worker thread (or a driver's callback thread) for good.
#include <criterion/criterion.h>

#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "framing_support.hpp"
#include "test_transport_shm_support.hpp"
#include "transport/channel.hpp"

using ava::Address;
using ava::Channel;
using ava::ChannelKind;
using ava::Listener;
using ava::Status;
using namespace framing;
using namespace shm_test;

namespace {

constexpr int kSendTimeoutMs = 200;
constexpr uint64_t kMessageBytes = 256 << 10;

struct Connected {
  TempDir dir;
  std::unique_ptr<Listener> listener;
  std::unique_ptr<Channel> reader; // never reads
  std::unique_ptr<Channel> sender;
  ~Connected() {
    sender.reset();
    reader.reset();
    listener.reset();
    for (const char *name : {"/s.sock", "/w.sock"})
      ::unlink((dir.path + name).c_str());
  }
};

void connect_pair(const char *kind, Connected *c) {
  Address addr;
  if (std::string(kind) == "tcp") {
    addr.kind = ChannelKind::Tcp;
    addr.host = "127.0.0.1";
  } else if (std::string(kind) == "unix") {
    addr.kind = ChannelKind::Unix;
    addr.path = c->dir.path + "/s.sock";
  }
  Status st = std::string(kind) == "shm"
                  ? ava::listen_shm(shm_address(c->dir.path + "/w.sock"),
                                    small_options(64 << 10, 4096), &c->listener)
                  : ava::listen_channel(addr, &c->listener);
  cr_assert_eq(st.code, AVA_OK, "[%s] listen: %s", kind, st.message.c_str());
  Status accepted;
  std::thread acceptor([&] { accepted = c->listener->accept(&c->sender, 5000); });
  st = ava::connect_channel(c->listener->address(), 5000, &c->reader);
  acceptor.join();
  cr_assert_eq(st.code, AVA_OK, "[%s] connect: %s", kind, st.message.c_str());
  cr_assert_eq(accepted.code, AVA_OK, "[%s] accept: %s", kind, accepted.message.c_str());
}

} // namespace

Test(send_timeout, a_peer_that_stops_reading_fails_the_send, .timeout = 60) {
  for (const char *kind : {"unix", "tcp", "shm"}) {
    Connected c;
    connect_pair(kind, &c);
    c.sender->set_send_timeout_ms(kSendTimeoutMs);
    std::vector<uint8_t> scratch;
    Status st;
    int sent = 0;
    // Socket buffers take a few MiB at most; the shm ring 64 KiB.
    for (; sent < 512; ++sent) {
      st = send_pattern(*c.sender, kMessageBytes, static_cast<uint64_t>(sent), scratch);
      if (!st.is_ok())
        break;
    }
    cr_expect_lt(sent, 512, "[%s] every send went through", kind);
    cr_expect_eq(st.code, AVA_E_TIMEOUT, "[%s] %s", kind, st.message.c_str());
    cr_expect(st.message.find("read nothing") != std::string::npos, "[%s] %s", kind,
              st.message.c_str());
    st = send_pattern(*c.sender, kMessageBytes, 0, scratch);
    cr_expect_neq(st.code, AVA_OK, "[%s] the channel goes on after a timed-out send", kind);
  }
}

Test(send_timeout, a_reader_that_drains_in_time_is_not_dropped, .timeout = 60) {
  for (const char *kind : {"unix", "tcp", "shm"}) {
    Connected c;
    connect_pair(kind, &c);
    c.sender->set_send_timeout_ms(5000);
    constexpr int kMessages = 64;
    std::thread drain([&] {
      ava::MsgBuf buf;
      for (int i = 0; i < kMessages; ++i) {
        Status r = c.reader->recv(buf, 10000);
        cr_assert_eq(r.code, AVA_OK, "[%s] recv: %s", kind, r.message.c_str());
        expect_pattern(buf, kMessageBytes, static_cast<uint64_t>(i));
      }
    });
    std::vector<uint8_t> scratch;
    for (int i = 0; i < kMessages; ++i) {
      Status st = send_pattern(*c.sender, kMessageBytes, static_cast<uint64_t>(i), scratch);
      cr_expect_eq(st.code, AVA_OK, "[%s] send %d: %s", kind, i, st.message.c_str());
    }
    drain.join();
  }
}
