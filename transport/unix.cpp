// SPDX-License-Identifier: MIT
// AF_UNIX stream carrier: filesystem sockets (stale files replaced, removed
// again by the listener) and abstract '@name' sockets.
#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "transport/connect_backoff.hpp"
#include "transport/socket_channel.hpp"
#include "transport/unix_socket.hpp"

namespace ava::detail {
namespace {

std::string peer_suffix(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 0)
    return " (peer pid " + std::to_string(cred.pid) + ")";
  return "";
}

class UnixListener final : public SocketListener {
public:
  UnixListener(UniqueFd fd, UniqueFd wake, Address address, bool owns_file, dev_t dev, ino_t ino)
      : SocketListener(std::move(fd), std::move(wake), std::move(address)), owns_file_(owns_file),
        dev_(dev), ino_(ino) {}

  ~UnixListener() override {
    if (owns_file_)
      remove_own_socket_file(address().path, dev_, ino_);
  }

protected:
  Status adopt(UniqueFd fd, std::unique_ptr<Channel> *out) override {
    return adopt_unix(address(), std::move(fd), out);
  }

private:
  bool owns_file_;
  dev_t dev_;
  ino_t ino_;
};

} // namespace

Status adopt_unix(const Address &listen_address, UniqueFd fd, std::unique_ptr<Channel> *out) {
  std::string description = listen_address.to_string() + peer_suffix(fd.get());
  *out = std::make_unique<SocketChannel>(std::move(fd), std::move(description));
  return Status::ok();
}

Status connect_unix(const Address &address, int connect_timeout_ms, std::unique_ptr<Channel> *out) {
  sockaddr_un sa;
  socklen_t len = 0;
  Status st = make_unix_sockaddr(address.path, "unix", &sa, &len);
  if (!st.is_ok())
    return st;
  const std::string name = address.to_string();
  Deadline deadline(connect_timeout_ms);
  ConnectBackoff backoff(address.path);
  for (;;) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid())
      return Status::error(AVA_E_NOMEM, "connect " + name + ": socket: " + errno_text(errno));
    if (::connect(fd.get(), reinterpret_cast<const sockaddr *>(&sa), len) == 0) {
      *out = std::make_unique<SocketChannel>(std::move(fd), name);
      return Status::ok();
    }
    const int err = errno;
    // The worker may still be starting: no file yet, or not listening yet, or a full backlog.
    if (err != ENOENT && err != ECONNREFUSED && err != EAGAIN && err != EINTR)
      return Status::error(AVA_E_CLOSED, "connect " + name + ": " + errno_text(err));
    const int left = deadline.remaining_ms();
    if (left == 0)
      return Status::error(AVA_E_TIMEOUT, "connect " + name + ": " + errno_text(err) +
                                              " (gave up after " +
                                              std::to_string(connect_timeout_ms) + " ms)");
    backoff.wait(deadline);
  }
}

Status listen_unix(const Address &address, std::unique_ptr<Listener> *out) {
  UnixListenSocket sock;
  Status st = listen_unix_socket(address, "unix", SOCK_STREAM, &sock);
  if (!st.is_ok())
    return st;
  *out = std::make_unique<UnixListener>(std::move(sock.fd), std::move(sock.wake), address,
                                        sock.owns_file, sock.dev, sock.ino);
  return Status::ok();
}

} // namespace ava::detail
