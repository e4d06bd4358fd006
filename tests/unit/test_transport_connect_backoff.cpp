// SPDX-License-Identifier: MIT
// Connecting to a worker that is not listening yet (transport/connect_backoff):
// the waits between attempts grow from 5 ms to 250 ms; for a unix socket a
// file appearing beside the path ends the wait at once; a client that waits
// for a listener appearing later connects to it; and a tcp client refused
// for two seconds wakes up a few times a second, not fifty (it counts its
// thread's voluntary context switches, as the issue asks).
#include <criterion/criterion.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "tests/common/temp_dir.hpp"
#include "transport/channel.hpp"
#include "transport/connect_backoff.hpp"

using ava::Address;
using ava::ChannelKind;
using ava::detail::ConnectBackoff;
using ava::detail::Deadline;
using ava::testing::TempDir;

namespace {

uint64_t voluntary_switches() {
  std::ifstream in("/proc/thread-self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
      return std::stoull(line.substr(line.find(':') + 1));
  return 0;
}

// A loopback port nobody listens on: bound, never listening, so refused.
int refused_port(int *holder) {
  *holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  cr_assert_eq(::bind(*holder, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
  cr_assert_eq(::getsockname(*holder, reinterpret_cast<sockaddr *>(&sa), &len), 0);
  return ntohs(sa.sin_port);
}

} // namespace

Test(connect_backoff, the_steps_double_up_to_the_cap) {
  const int steps[] = {5, 10, 20, 40, 80, 160, 250, 250, 250};
  ConnectBackoff backoff;
  const Deadline expired(0);
  for (int step : steps) {
    cr_expect_eq(backoff.next_ms(), step);
    backoff.wait(expired); // an expired deadline waits not at all, but steps on
  }
}

// With a cap of a minute, only the file's appearance can end the wait
// before the test's own timeout.
Test(connect_backoff, a_file_beside_the_unix_path_ends_the_wait, .timeout = 30) {
  TempDir dir("backoff");
  ConnectBackoff backoff(dir.path + "/sock", 60000);
  const Deadline expired(0);
  while (backoff.next_ms() < 60000)
    backoff.wait(expired);
  std::thread maker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int fd = ::open((dir.path + "/other").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0)
      ::close(fd);
  });
  backoff.wait(Deadline(-1));
  maker.join();
}

Test(connect_backoff, a_unix_client_finds_a_listener_that_comes_later, .timeout = 30) {
  TempDir dir("backoff");
  Address address;
  address.kind = ChannelKind::Unix;
  address.path = dir.path + "/sock";
  std::unique_ptr<ava::Listener> listener;
  std::thread starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cr_expect(ava::listen_channel(address, &listener).is_ok());
  });
  std::unique_ptr<ava::Channel> channel;
  const ava::Status st = ava::connect_channel(address, 20000, &channel);
  starter.join();
  cr_expect(st.is_ok(), "%s", st.message.c_str());
}

Test(connect_backoff, a_refused_tcp_client_wakes_a_few_times_a_second, .timeout = 30) {
  int holder = -1;
  const int port = refused_port(&holder);
  Address address;
  cr_assert(ava::parse_address("tcp:127.0.0.1:" + std::to_string(port), ChannelKind::Tcp, &address)
                .is_ok());
  std::unique_ptr<ava::Channel> channel;
  const uint64_t before = voluntary_switches();
  const ava::Status st = ava::connect_channel(address, 2000, &channel);
  const uint64_t woke = voluntary_switches() - before;
  ::close(holder);
  cr_expect_eq(st.code, AVA_E_TIMEOUT, "%s", st.message.c_str());
  // 5+10+...+160 ms, then 250 ms steps: 13 waits in two seconds (20 ms naps were 100).
  cr_expect_lt(woke, 30u, "the client woke %lu times in 2 s", static_cast<unsigned long>(woke));
}
