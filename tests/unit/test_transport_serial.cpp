// SPDX-License-Identifier: MIT
// The serial channel (a stream character device, in a guest a virtio-serial
// port) over a real pseudo-terminal pair in raw mode: both ends are
// character devices, so read/writev, O_NONBLOCK waits, EOF when the other end
// goes, and a shutdown that wakes a blocked receive are all exercised.
#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "transport/channel.hpp"

using ava::Address;
using ava::Channel;
using ava::ChannelKind;
using ava::MsgBuf;
using ava::Status;

namespace {

struct PtyPair {
  int master = -1;
  std::string slave_path;
};

PtyPair open_raw_pty() {
  int master = -1;
  int slave = -1;
  char name[128] = "";
  cr_assert(openpty(&master, &slave, name, nullptr, nullptr) == 0, "openpty: %s",
            std::strerror(errno));
  termios t{};
  cr_assert(tcgetattr(slave, &t) == 0);
  cfmakeraw(&t);
  cr_assert(tcsetattr(slave, TCSANOW, &t) == 0);
  // The slave stays open until the channel opened it by name, so the pair
  // never hangs up in between.
  PtyPair p{master, name};
  static thread_local std::vector<int> keep;
  keep.push_back(slave);
  return p;
}

std::unique_ptr<Channel> connect(const std::string &path) {
  Address addr;
  Status st = ava::parse_address("serial:" + path, ChannelKind::Unix, &addr);
  cr_assert(st.is_ok(), "%s", st.message.c_str());
  std::unique_ptr<Channel> ch;
  st = ava::connect_channel(addr, 1000, &ch);
  cr_assert(st.is_ok(), "%s", st.message.c_str());
  return ch;
}

std::vector<uint8_t> message(uint64_t total, uint8_t seed) {
  std::vector<uint8_t> m(total);
  ava_msg_hdr h{};
  h.magic = AVA_MSG_MAGIC;
  h.abi_version = AVA_ABI_VERSION;
  h.kind = AVA_MSG_CALL;
  h.total_len = total;
  std::memcpy(m.data(), &h, sizeof h);
  for (uint64_t i = sizeof h; i < total; ++i)
    m[i] = static_cast<uint8_t>(i * 31 + seed);
  return m;
}

} // namespace

// The far end echoes every byte back, as a peer that answers would.
Test(serial, messages_of_every_size_cross_a_character_device) {
  PtyPair pty = open_raw_pty();
  auto a = connect(pty.slave_path);
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    std::vector<uint8_t> buf(1 << 16);
    while (!stop.load()) {
      pollfd p{pty.master, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0)
        continue;
      const ssize_t n = read(pty.master, buf.data(), buf.size());
      for (ssize_t off = 0; n > 0 && off < n;) {
        const ssize_t w = write(pty.master, buf.data() + off, static_cast<size_t>(n - off));
        if (w > 0)
          off += w;
      }
    }
  });
  const uint64_t sizes[] = {64, 65, 4096, 65536 + 7, 1u << 20};
  for (uint64_t size : sizes) {
    const std::vector<uint8_t> m = message(size, static_cast<uint8_t>(size));
    Status sent;
    std::thread sender([&] {
      iovec iov{const_cast<uint8_t *>(m.data()), m.size()};
      sent = a->send(&iov, 1);
    });
    MsgBuf got;
    Status st = a->recv(got, 10000);
    sender.join();
    cr_expect(sent.is_ok(), "send %lu: %s", static_cast<unsigned long>(size), sent.message.c_str());
    cr_expect(st.is_ok(), "recv %lu: %s", static_cast<unsigned long>(size), st.message.c_str());
    cr_expect(got.size() == size && std::memcmp(got.data(), m.data(), size) == 0,
              "%lu-byte message changed on the way", static_cast<unsigned long>(size));
    if (!st.is_ok())
      break;
  }
  stop.store(true);
  echo.join();
  close(pty.master);
}

Test(serial, shutdown_wakes_a_blocked_receive) {
  PtyPair pty = open_raw_pty();
  auto a = connect(pty.slave_path);
  Status st;
  std::thread receiver([&] {
    MsgBuf got;
    st = a->recv(got, -1);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  a->shutdown();
  receiver.join();
  cr_expect(st.code == AVA_E_CLOSED, "recv after shutdown: %d %s", st.code, st.message.c_str());
  close(pty.master);
}

Test(serial, a_missing_device_is_a_clear_error) {
  Address addr;
  cr_assert(ava::parse_address("serial:/dev/ava-no-such-port", ChannelKind::Unix, &addr).is_ok());
  std::unique_ptr<Channel> ch;
  Status st = ava::connect_channel(addr, 100, &ch);
  cr_expect(st.code == AVA_E_CLOSED && st.message.find("No such file") != std::string::npos,
            "%d %s", st.code, st.message.c_str());
}
