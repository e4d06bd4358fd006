// SPDX-License-Identifier: MIT
// Listeners and connecting: socket files (stale, live, foreign, cleanup),
// abstract names, connect retries while a worker starts, tcp port 0,
// accept timeouts and shutdown.
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "tests/common/temp_dir.hpp"
#include "transport/channel.hpp"

using ava::Address;
using ava::Channel;
using ava::ChannelKind;
using ava::Listener;
using ava::Status;
using ava::testing::TempDir;

namespace {

Address unix_address(const std::string &path) {
  Address addr;
  addr.kind = ChannelKind::Unix;
  addr.path = path;
  return addr;
}

bool exists(const std::string &path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// Leaves a socket file that nobody listens on, as a crashed worker would.
void make_stale_socket(const std::string &path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  cr_assert(fd >= 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strcpy(sa.sun_path, path.c_str());
  cr_assert_eq(::bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
  ::close(fd);
}

void exchange_one(Channel &from, Channel &to) {
  ava_msg_hdr hdr{};
  hdr.magic = AVA_MSG_MAGIC;
  hdr.abi_version = AVA_ABI_VERSION;
  hdr.total_len = sizeof hdr;
  hdr.call_id = 42;
  struct iovec iov = {&hdr, sizeof hdr};
  Status st = from.send(&iov, 1);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  ava::MsgBuf buf;
  st = to.recv(buf, 5000);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_assert_eq(buf.header()->call_id, 42u);
}

} // namespace

Test(listen, unix_path_lifecycle) {
  TempDir dir;
  const std::string path = dir.path + "/w.sock";
  {
    std::unique_ptr<Listener> listener;
    Status st = ava::listen_channel(unix_address(path), &listener);
    cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
    cr_expect(exists(path));
    cr_expect_eq(listener->address().to_string(), "unix:" + path);
    std::unique_ptr<Channel> client;
    std::unique_ptr<Channel> server;
    cr_assert_eq(ava::connect_channel(unix_address(path), 1000, &client).code, AVA_OK);
    cr_assert_eq(listener->accept(&server, 5000).code, AVA_OK);
    exchange_one(*client, *server);
    exchange_one(*server, *client);
    cr_expect(server->describe().find("peer pid") != std::string::npos, "%s",
              server->describe().c_str());
  }
  cr_expect(!exists(path), "the listener removes its socket file");
}

Test(listen, stale_socket_file_is_replaced) {
  TempDir dir;
  const std::string path = dir.path + "/w.sock";
  make_stale_socket(path);
  cr_assert(exists(path));
  std::unique_ptr<Listener> listener;
  Status st = ava::listen_channel(unix_address(path), &listener);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  std::unique_ptr<Channel> client;
  cr_assert_eq(ava::connect_channel(unix_address(path), 1000, &client).code, AVA_OK);
  listener.reset();
  cr_expect(!exists(path));
}

Test(listen, live_socket_is_not_stolen) {
  TempDir dir;
  const std::string path = dir.path + "/w.sock";
  std::unique_ptr<Listener> first;
  cr_assert_eq(ava::listen_channel(unix_address(path), &first).code, AVA_OK);
  std::unique_ptr<Listener> second;
  Status st = ava::listen_channel(unix_address(path), &second);
  cr_expect_neq(st.code, AVA_OK);
  cr_expect(st.message.find("already listening") != std::string::npos, "%s", st.message.c_str());
  std::unique_ptr<Channel> client;
  cr_expect_eq(ava::connect_channel(unix_address(path), 1000, &client).code, AVA_OK,
               "the first listener still owns the path");
  first.reset();
  cr_expect(!exists(path));
}

Test(listen, regular_file_is_left_alone) {
  TempDir dir;
  const std::string path = dir.path + "/precious";
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  cr_assert(fd >= 0);
  ::close(fd);
  std::unique_ptr<Listener> listener;
  Status st = ava::listen_channel(unix_address(path), &listener);
  cr_expect_neq(st.code, AVA_OK);
  cr_expect(st.message.find("not a socket") != std::string::npos, "%s", st.message.c_str());
  cr_expect(exists(path));
  ::unlink(path.c_str());
}

Test(listen, replaced_socket_file_is_not_removed) {
  TempDir dir;
  const std::string path = dir.path + "/w.sock";
  std::unique_ptr<Listener> old_listener;
  cr_assert_eq(ava::listen_channel(unix_address(path), &old_listener).code, AVA_OK);
  // Someone removes the file and a new listener takes the path.
  ::unlink(path.c_str());
  std::unique_ptr<Listener> new_listener;
  cr_assert_eq(ava::listen_channel(unix_address(path), &new_listener).code, AVA_OK);
  old_listener.reset();
  cr_expect(exists(path), "the old listener must not remove the new one's socket");
  std::unique_ptr<Channel> client;
  cr_expect_eq(ava::connect_channel(unix_address(path), 1000, &client).code, AVA_OK);
  new_listener.reset();
  cr_expect(!exists(path));
}

Test(listen, abstract_socket) {
  const std::string name = "@ava-test-listen-" + std::to_string(::getpid());
  std::unique_ptr<Listener> listener;
  Status st = ava::listen_channel(unix_address(name), &listener);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  std::unique_ptr<Channel> client;
  std::unique_ptr<Channel> server;
  cr_assert_eq(ava::connect_channel(unix_address(name), 1000, &client).code, AVA_OK);
  cr_assert_eq(listener->accept(&server, 5000).code, AVA_OK);
  exchange_one(*client, *server);
  cr_expect_eq(client->describe(), "unix:" + name);
  // Abstract names have no file; a second listener on the same name fails.
  std::unique_ptr<Listener> second;
  cr_expect_neq(ava::listen_channel(unix_address(name), &second).code, AVA_OK);
}

Test(listen, connect_waits_for_a_starting_worker) {
  TempDir dir;
  const std::string path = dir.path + "/late.sock";
  std::unique_ptr<Listener> listener;
  std::unique_ptr<Channel> server;
  Status listen_status;
  Status accept_status;
  std::thread worker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    listen_status = ava::listen_channel(unix_address(path), &listener);
    if (listen_status.is_ok())
      accept_status = listener->accept(&server, 10000);
  });
  std::unique_ptr<Channel> client;
  Status st = ava::connect_channel(unix_address(path), 10000, &client);
  worker.join();
  cr_assert_eq(listen_status.code, AVA_OK, "%s", listen_status.message.c_str());
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_assert_eq(accept_status.code, AVA_OK, "%s", accept_status.message.c_str());
  exchange_one(*client, *server);
}

Test(listen, connect_gives_up) {
  TempDir dir;
  struct GiveUpCase {
    const char *name;
    Address address;
    int timeout_ms;
    int expected;
  };
  Address refused_tcp;
  refused_tcp.kind = ChannelKind::Tcp;
  refused_tcp.host = "127.0.0.1";
  {
    // A port that was just free: nothing listens there now.
    std::unique_ptr<Listener> probe;
    cr_assert_eq(ava::listen_channel(refused_tcp, &probe).code, AVA_OK);
    refused_tcp.port = probe->address().port;
  }
  const std::string stale = dir.path + "/stale.sock";
  make_stale_socket(stale);
  const GiveUpCase cases[] = {
      {"missing file", unix_address(dir.path + "/missing.sock"), 60, AVA_E_TIMEOUT},
      {"missing file, no wait", unix_address(dir.path + "/missing.sock"), 0, AVA_E_TIMEOUT},
      {"stale socket", unix_address(stale), 60, AVA_E_TIMEOUT},
      {"not a directory", unix_address("/dev/null/x.sock"), 1000, AVA_E_CLOSED},
      {"refused tcp", refused_tcp, 60, AVA_E_TIMEOUT},
  };
  for (const GiveUpCase &c : cases) {
    std::unique_ptr<Channel> client;
    Status st = ava::connect_channel(c.address, c.timeout_ms, &client);
    cr_log_info("%s -> %s", c.name, st.message.c_str());
    cr_expect_eq(st.code, c.expected, "%s: %d (%s)", c.name, st.code, st.message.c_str());
    cr_expect(client == nullptr, "%s", c.name);
    cr_expect(st.message.find(c.address.to_string()) != std::string::npos,
              "%s: the message names the address: %s", c.name, st.message.c_str());
  }
  ::unlink(stale.c_str());
}

Test(listen, tcp_port_zero_reports_real_port) {
  Address addr;
  addr.kind = ChannelKind::Tcp;
  addr.host = "127.0.0.1";
  std::unique_ptr<Listener> listener;
  Status st = ava::listen_channel(addr, &listener);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  const Address bound = listener->address();
  cr_expect_neq(bound.port, 0);
  cr_expect_eq(bound.host, "127.0.0.1");
  std::unique_ptr<Channel> client;
  std::unique_ptr<Channel> server;
  cr_assert_eq(ava::connect_channel(bound, 1000, &client).code, AVA_OK);
  cr_assert_eq(listener->accept(&server, 5000).code, AVA_OK);
  exchange_one(*client, *server);
  exchange_one(*server, *client);
  // The same port can be listened on again right after (SO_REUSEADDR).
  server.reset();
  client.reset();
  listener.reset();
  st = ava::listen_channel(bound, &listener);
  cr_expect_eq(st.code, AVA_OK, "%s", st.message.c_str());
}

Test(listen, tcp_localhost_by_name) {
  Address addr;
  addr.kind = ChannelKind::Tcp;
  addr.host = "localhost";
  std::unique_ptr<Listener> listener;
  Status st = ava::listen_channel(addr, &listener);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  std::unique_ptr<Channel> client;
  std::unique_ptr<Channel> server;
  st = ava::connect_channel(listener->address(), 1000, &client);
  cr_assert_eq(st.code, AVA_OK, "%s", st.message.c_str());
  cr_assert_eq(listener->accept(&server, 5000).code, AVA_OK);
  exchange_one(*client, *server);
}

Test(listen, accept_timeout_and_shutdown) {
  for (ChannelKind kind : {ChannelKind::Unix, ChannelKind::Tcp}) {
    Address addr;
    addr.kind = kind;
    addr.host = "127.0.0.1";
    addr.path = "@ava-test-accept-" + std::to_string(::getpid());
    std::unique_ptr<Listener> listener;
    cr_assert_eq(ava::listen_channel(addr, &listener).code, AVA_OK);
    std::unique_ptr<Channel> server;
    cr_expect_eq(listener->accept(&server, 0).code, AVA_E_TIMEOUT);
    cr_expect_eq(listener->accept(&server, 30).code, AVA_E_TIMEOUT);
    Status accept_status;
    std::thread acceptor([&] { accept_status = listener->accept(&server, -1); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    listener->shutdown();
    acceptor.join();
    cr_expect_eq(accept_status.code, AVA_E_CLOSED, "%s", accept_status.message.c_str());
    cr_expect(server == nullptr);
    cr_expect_eq(listener->accept(&server, -1).code, AVA_E_CLOSED, "stays shut");
  }
}

Test(listen, many_clients) {
  TempDir dir;
  const std::string path = dir.path + "/many.sock";
  std::unique_ptr<Listener> listener;
  cr_assert_eq(ava::listen_channel(unix_address(path), &listener).code, AVA_OK);
  constexpr int kClients = 20;
  std::unique_ptr<Channel> clients[kClients];
  std::unique_ptr<Channel> servers[kClients];
  for (int i = 0; i < kClients; ++i)
    cr_assert_eq(ava::connect_channel(unix_address(path), 1000, &clients[i]).code, AVA_OK);
  for (int i = 0; i < kClients; ++i)
    cr_assert_eq(listener->accept(&servers[i], 5000).code, AVA_OK);
  for (int i = 0; i < kClients; ++i)
    exchange_one(*clients[i], *servers[i]);
}
