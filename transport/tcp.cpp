// SPDX-License-Identifier: MIT
// TCP carrier: getaddrinfo, TCP_NODELAY (one small message = one segment),
// keep-alive so that a peer host that vanished is noticed.
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <thread>

#include "transport/connect_backoff.hpp"
#include "transport/socket_channel.hpp"

namespace ava::detail {
namespace {

constexpr int kKeepIdleS = 30;
constexpr int kKeepIntervalS = 10;
constexpr int kKeepCount = 3;

struct AddrInfoFree {
  void operator()(addrinfo *ai) const { ::freeaddrinfo(ai); }
};
using AddrInfoPtr = std::unique_ptr<addrinfo, AddrInfoFree>;

Status resolve(const std::string &where, const Address &address, bool passive, AddrInfoPtr *out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo *list = nullptr;
  const std::string port = std::to_string(address.port);
  const int rc = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &list);
  if (rc != 0) {
    const std::string why = rc == EAI_SYSTEM ? errno_text(errno) : ::gai_strerror(rc);
    return Status::error(AVA_E_CLOSED, where + "cannot resolve '" + address.host + "': " + why);
  }
  out->reset(list);
  return Status::ok();
}

std::string sockaddr_text(const sockaddr *sa, socklen_t len) {
  char host[NI_MAXHOST];
  char serv[NI_MAXSERV];
  if (::getnameinfo(sa, len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "?";
  if (sa->sa_family == AF_INET6)
    return std::string("[") + host + "]:" + serv;
  return std::string(host) + ":" + serv;
}

std::string peer_text(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0)
    return "?";
  return sockaddr_text(reinterpret_cast<const sockaddr *>(&ss), len);
}

// Best effort: a socket without these options still works, only less well.
void tune_stream(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &kKeepIdleS, sizeof kKeepIdleS);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &kKeepIntervalS, sizeof kKeepIntervalS);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &kKeepCount, sizeof kKeepCount);
}

class TcpListener final : public SocketListener {
public:
  using SocketListener::SocketListener;

protected:
  Status adopt(UniqueFd fd, std::unique_ptr<Channel> *out) override {
    return adopt_tcp(address(), std::move(fd), out);
  }
};

// One non-blocking connect attempt. Returns 0 with *out set, or an errno
// (ETIMEDOUT when the deadline passed).
int try_connect(const addrinfo *ai, const Deadline &deadline, UniqueFd *out) {
  UniqueFd fd(
      ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
  if (!fd.valid())
    return errno;
  if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS && errno != EINTR)
      return errno;
    const int rc = poll_fd(fd.get(), POLLOUT, deadline);
    if (rc < 0)
      return -rc;
    if (rc == 0)
      return ETIMEDOUT;
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0)
      return errno;
    if (err != 0)
      return err;
  }
  *out = std::move(fd);
  return 0;
}

} // namespace

Status adopt_tcp(const Address &listen_address, UniqueFd fd, std::unique_ptr<Channel> *out) {
  tune_stream(fd.get());
  std::string description = listen_address.to_string() + " (peer " + peer_text(fd.get()) + ")";
  *out = std::make_unique<SocketChannel>(std::move(fd), std::move(description));
  return Status::ok();
}

Status connect_tcp(const Address &address, int connect_timeout_ms, std::unique_ptr<Channel> *out) {
  const std::string name = address.to_string();
  if (address.port == 0)
    return Status::error(AVA_E_PROTO, "connect " + name + ": port 0 cannot be connected to");
  AddrInfoPtr list;
  Status st = resolve("connect " + name + ": ", address, false, &list);
  if (!st.is_ok())
    return st;
  Deadline deadline(connect_timeout_ms);
  ConnectBackoff backoff;
  for (;;) {
    int err = EADDRNOTAVAIL;
    bool refused = false;
    for (const addrinfo *ai = list.get(); ai != nullptr; ai = ai->ai_next) {
      UniqueFd fd;
      err = try_connect(ai, deadline, &fd);
      if (err == 0) {
        tune_stream(fd.get());
        // Name the resolved peer only when it says more than the address itself.
        const std::string peer = sockaddr_text(ai->ai_addr, ai->ai_addrlen);
        std::string description = name;
        if ("tcp:" + peer != name)
          description += " (peer " + peer + ")";
        *out = std::make_unique<SocketChannel>(std::move(fd), std::move(description));
        return Status::ok();
      }
      refused = refused || err == ECONNREFUSED;
      if (err == ETIMEDOUT && deadline.expired())
        break;
    }
    // A refusal usually means the worker is still starting; anything else will not heal.
    const int left = deadline.remaining_ms();
    if (!refused || left == 0) {
      const std::string why = errno_text(refused ? ECONNREFUSED : err);
      if (left == 0)
        return Status::error(AVA_E_TIMEOUT, "connect " + name + ": " + why + " (gave up after " +
                                                std::to_string(connect_timeout_ms) + " ms)");
      return Status::error(AVA_E_CLOSED, "connect " + name + ": " + why);
    }
    backoff.wait(deadline);
  }
}

Status listen_tcp(const Address &address, std::unique_ptr<Listener> *out) {
  const std::string where = "listen " + address.to_string() + ": ";
  AddrInfoPtr list;
  Status st = resolve(where, address, true, &list);
  if (!st.is_ok())
    return st;
  UniqueFd wake;
  st = make_wake_fd(&wake);
  if (!st.is_ok())
    return st;
  int err = EADDRNOTAVAIL;
  for (const addrinfo *ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!fd.valid()) {
      err = errno;
      continue;
    }
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
      err = errno;
      continue;
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr *>(&ss), &len) != 0) {
      err = errno;
      continue;
    }
    Address bound = address;
    if (ss.ss_family == AF_INET)
      bound.port = ntohs(reinterpret_cast<const sockaddr_in *>(&ss)->sin_port);
    else if (ss.ss_family == AF_INET6)
      bound.port = ntohs(reinterpret_cast<const sockaddr_in6 *>(&ss)->sin6_port);
    *out = std::make_unique<TcpListener>(std::move(fd), std::move(wake), std::move(bound));
    return Status::ok();
  }
  return Status::error(AVA_E_STATE, where + errno_text(err));
}

} // namespace ava::detail
