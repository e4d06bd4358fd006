// SPDX-License-Identifier: MIT
// connect_shm / listen_shm: the bootstrap socket and the region hand-over.
#include "transport/shm_bootstrap.hpp"

#include "transport/unix_socket.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "transport/connect_backoff.hpp"
#include "transport/shm_channel.hpp"
#include "transport/socket_channel.hpp"

namespace ava::detail {
namespace {

// A connected guest gets this long to send its hello; until then it waits
// beside others instead of blocking them.
constexpr int kHelloTimeoutMs = 5000;
constexpr size_t kMaxPending = 64;
// More descriptors than the one expected are received only to be closed.
constexpr size_t kMaxFds = 8;

std::string peer_suffix(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 0)
    return " (peer pid " + std::to_string(cred.pid) + ")";
  return "";
}

// ---- guest side ----------------------------------------------------------

Status connect_socket(const Address &address, const Deadline &deadline, int timeout_ms,
                      UniqueFd *out) {
  sockaddr_un sa;
  socklen_t len = 0;
  Status st = make_unix_sockaddr(address.path, "shm", &sa, &len);
  if (!st.is_ok())
    return st;
  const std::string name = address.to_string();
  ConnectBackoff backoff(address.path);
  for (;;) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid())
      return Status::error(AVA_E_NOMEM, "connect " + name + ": socket: " + errno_text(errno));
    if (::connect(fd.get(), reinterpret_cast<const sockaddr *>(&sa), len) == 0) {
      *out = std::move(fd);
      return Status::ok();
    }
    const int err = errno;
    if (err == EPROTOTYPE)
      return Status::error(AVA_E_PROTO, "connect " + name +
                                            ": the socket there is not a shm worker's (a unix "
                                            "channel worker listens there?)");
    // The worker may still be starting: no file yet, or not listening yet, or a full backlog.
    if (err != ENOENT && err != ECONNREFUSED && err != EAGAIN && err != EINTR)
      return Status::error(AVA_E_CLOSED, "connect " + name + ": " + errno_text(err));
    const int left = deadline.remaining_ms();
    if (left == 0)
      return Status::error(AVA_E_TIMEOUT, "connect " + name + ": " + errno_text(err) +
                                              " (gave up after " + std::to_string(timeout_ms) +
                                              " ms)");
    backoff.wait(deadline);
  }
}

Status send_hello(int sock, int memfd, uint64_t region_size, const Deadline &deadline,
                  const std::string &name) {
  ShmHello hello{kShmHelloMagic, kShmHelloVersion, region_size, static_cast<uint64_t>(::getpid()),
                 0};
  iovec iov{&hello, sizeof hello};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), &memfd, sizeof memfd);
  for (;;) {
    if (::sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(sizeof hello))
      return Status::ok();
    const int err = errno;
    if (err == EINTR)
      continue;
    if (err != EAGAIN && err != EWOULDBLOCK)
      return Status::error(AVA_E_CLOSED,
                           "connect " + name + ": sending the shared region: " + errno_text(err));
    const int rc = poll_fd(sock, POLLOUT, deadline);
    if (rc == 0)
      return Status::error(AVA_E_TIMEOUT,
                           "connect " + name + ": the worker does not take the shared region");
    if (rc < 0)
      return Status::error(AVA_E_CLOSED, "connect " + name + ": poll: " + errno_text(-rc));
  }
}

Status receive_ack(int sock, const Deadline &deadline, const std::string &name) {
  for (;;) {
    ShmHelloAck ack{};
    const ssize_t got = ::recv(sock, &ack, sizeof ack, MSG_DONTWAIT | MSG_TRUNC);
    if (got == 0)
      return Status::error(AVA_E_CLOSED, "connect " + name +
                                             ": the worker closed the connection during the shm "
                                             "hand-over (see its log)");
    if (got < 0) {
      const int err = errno;
      if (err == EINTR)
        continue;
      if (err != EAGAIN && err != EWOULDBLOCK)
        return Status::error(AVA_E_CLOSED, "connect " + name + ": " + errno_text(err));
      const int rc = poll_fd(sock, POLLIN, deadline);
      if (rc == 0)
        return Status::error(AVA_E_TIMEOUT, "connect " + name +
                                                ": no answer from the worker to the shm hand-over");
      if (rc < 0)
        return Status::error(AVA_E_CLOSED, "connect " + name + ": poll: " + errno_text(-rc));
      continue;
    }
    if (got != static_cast<ssize_t>(sizeof ack) || ack.magic != kShmHelloMagic ||
        ack.version != kShmHelloVersion)
      return Status::error(AVA_E_PROTO,
                           "connect " + name + ": malformed answer to the shm hand-over");
    if (ack.status == AVA_OK)
      return Status::ok();
    ack.reason[sizeof ack.reason - 1] = '\0';
    const int code = ack.status < 0 && ack.status >= AVA_E_MIN ? ack.status : AVA_E_PROTO;
    return Status::error(code, "connect " + name + ": the worker refused the shared region: " +
                                   std::string(ack.reason));
  }
}

Status connect_impl(const Address &address, int connect_timeout_ms, const ShmOptions &options,
                    const ShmGuestTamper &tamper, std::unique_ptr<Channel> *out) {
  if (out == nullptr)
    return Status::error(AVA_E_PROTO, "connect_shm: no output channel");
  const std::string name = address.to_string();
  Status st = check_shm_options(options);
  if (!st.is_ok())
    return Status::error(st.code, "connect " + name + ": " + st.message);
  Deadline deadline(connect_timeout_ms);
  UniqueFd sock;
  st = connect_socket(address, deadline, connect_timeout_ms, &sock);
  if (!st.is_ok())
    return st;
  UniqueFd memfd;
  ShmMapping map;
  RegionLayout layout;
  st = create_region(options, &memfd, &map, &layout);
  if (!st.is_ok())
    return Status::error(st.code, "connect " + name + ": " + st.message);
  if (tamper.edit_header)
    tamper.edit_header(map.header());
  const int send_fd = tamper.send_fd >= 0 ? tamper.send_fd : memfd.get();
  st = send_hello(sock.get(), send_fd, layout.total_size, deadline, name);
  if (!st.is_ok())
    return st;
  // The mapping and the worker's copy keep the memory alive.
  memfd.reset();
  st = receive_ack(sock.get(), deadline, name);
  if (!st.is_ok())
    return st;
  std::string description = name + peer_suffix(sock.get());
  *out = std::make_unique<ShmChannel>(std::move(map), layout, ShmSide::Guest,
                                      make_futex_signals(std::move(sock)), std::move(description),
                                      options.spin_ns);
  return Status::ok();
}

// ---- worker side ---------------------------------------------------------

void send_ack(int sock, int status, const std::string &reason) {
  ShmHelloAck ack{};
  ack.magic = kShmHelloMagic;
  ack.version = kShmHelloVersion;
  ack.status = status;
  std::strncpy(ack.reason, reason.c_str(), sizeof ack.reason - 1);
  // Best effort: a guest that is gone learns nothing either way.
  [[maybe_unused]] ssize_t rc = ::send(sock, &ack, sizeof ack, MSG_NOSIGNAL | MSG_DONTWAIT);
}

bool ack_ok(int sock) {
  ShmHelloAck ack{};
  ack.magic = kShmHelloMagic;
  ack.version = kShmHelloVersion;
  return ::send(sock, &ack, sizeof ack, MSG_NOSIGNAL | MSG_DONTWAIT) ==
         static_cast<ssize_t>(sizeof ack);
}

enum class Hello { NotYet, Gone, Done };

Status refuse(int sock, const Address &address, const std::string &peer, const std::string &why) {
  send_ack(sock, AVA_E_PROTO, why);
  return Status::error(AVA_E_PROTO,
                       address.to_string() + ": refused a shm guest" + peer + ": " + why);
}

// One non-blocking attempt to receive the guest's hand-over on sock. Done:
// *result says whether *out was made (sock then lives in it) or the guest
// was refused (and told why).
Hello try_hello(UniqueFd &sock_fd, const Address &address, uint64_t spin_ns,
                std::unique_ptr<Channel> *out, Status *result) {
  const int sock = sock_fd.get();
  ShmHello hello{};
  iovec iov{&hello, sizeof hello};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t got;
  do {
    got = ::recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  if (got < 0)
    return errno == EAGAIN || errno == EWOULDBLOCK ? Hello::NotYet : Hello::Gone;
  // Every descriptor that arrived is owned (and closed) from here on.
  std::vector<UniqueFd> fds;
  for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
      continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.emplace_back(fd);
    }
  }
  if (got == 0)
    return Hello::Gone;
  const std::string peer = peer_suffix(sock);
  if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || got != static_cast<ssize_t>(sizeof hello))
    *result =
        refuse(sock, address, peer, "malformed shm hello (" + std::to_string(got) + " bytes)");
  else if (hello.magic != kShmHelloMagic || hello.version != kShmHelloVersion ||
           hello.reserved != 0)
    *result = refuse(sock, address, peer, "shm hello of an unknown kind or version");
  else if (fds.size() != 1)
    *result = refuse(sock, address, peer,
                     "the shm hello carries " + std::to_string(fds.size()) +
                         " descriptors instead of one");
  if (!result->is_ok())
    return Hello::Done;
  ShmMapping map;
  RegionLayout layout;
  Status st = attach_region(fds[0].get(), &map, &layout);
  if (st.is_ok() && layout.total_size != hello.region_size)
    st = Status::error(AVA_E_PROTO, "the hello announces " + std::to_string(hello.region_size) +
                                        " bytes but the region has " +
                                        std::to_string(layout.total_size));
  if (!st.is_ok()) {
    *result = refuse(sock, address, peer, st.message);
    return Hello::Done;
  }
  if (!ack_ok(sock))
    return Hello::Gone;
  *out = std::make_unique<ShmChannel>(std::move(map), layout, ShmSide::Worker,
                                      make_futex_signals(std::move(sock_fd)),
                                      address.to_string() + peer, spin_ns);
  *result = Status::ok();
  return Hello::Done;
}

class ShmListener final : public Listener {
public:
  ShmListener(UniqueFd fd, UniqueFd wake, Address address, uint64_t spin_ns, bool owns_file,
              dev_t dev, ino_t ino)
      : fd_(std::move(fd)), wake_(std::move(wake)), address_(std::move(address)), spin_ns_(spin_ns),
        owns_file_(owns_file), dev_(dev), ino_(ino) {}

  ~ShmListener() override {
    if (owns_file_)
      remove_own_socket_file(address_.path, dev_, ino_);
  }

  Status accept(std::unique_ptr<Channel> *out, int timeout_ms) override;

  // The hand-over is left to the process that adopts the connection.
  Status accept_connection(int *fd, int timeout_ms) override {
    UniqueFd conn;
    Status st = accept_socket(fd_.get(), wake_.get(), shut_, SOCK_CLOEXEC | SOCK_NONBLOCK,
                              address_.to_string() + ": accept: ", timeout_ms, &conn);
    if (st.is_ok())
      *fd = conn.release();
    return st;
  }

  void shutdown() override {
    shut_.store(true, std::memory_order_release);
    const uint64_t one = 1;
    // The eventfd stays readable from now on, so every later accept() wakes at once too.
    [[maybe_unused]] ssize_t rc = ::write(wake_.get(), &one, sizeof one);
  }

  Address address() const override { return address_; }

private:
  struct Pending {
    UniqueFd fd;
    Deadline deadline;
  };
  Status take_connections(const std::string &where);

  UniqueFd fd_;
  UniqueFd wake_;
  Address address_;
  uint64_t spin_ns_;
  bool owns_file_;
  dev_t dev_;
  ino_t ino_;
  std::atomic<bool> shut_{false};
  std::vector<Pending> pending_; // touched only by the accepting thread
};

Status ShmListener::take_connections(const std::string &where) {
  for (;;) {
    UniqueFd conn(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (conn.valid()) {
      // The oldest silent guest makes room: a flood of connections cannot grow this.
      if (pending_.size() >= kMaxPending)
        pending_.erase(pending_.begin());
      pending_.push_back(Pending{std::move(conn), Deadline(kHelloTimeoutMs)});
      continue;
    }
    const int err = errno;
    switch (err) {
    case EAGAIN:
#if EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
#endif
      return Status::ok();
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case EPERM:
      continue;
    case EMFILE:
    case ENFILE:
    case ENOBUFS:
    case ENOMEM:
      return Status::error(AVA_E_NOMEM, where + errno_text(err));
    default:
      return Status::error(AVA_E_CLOSED, where + errno_text(err));
    }
  }
}

Status ShmListener::accept(std::unique_ptr<Channel> *out, int timeout_ms) {
  const std::string where = address_.to_string() + ": accept: ";
  if (out == nullptr)
    return Status::error(AVA_E_PROTO, where + "no output channel");
  try {
    Deadline deadline(timeout_ms);
    std::vector<pollfd> fds;
    for (;;) {
      if (shut_.load(std::memory_order_acquire))
        return Status::error(AVA_E_CLOSED, where + "listener shut down");
      Status st = take_connections(where);
      if (!st.is_ok())
        return st;
      int next_ms = deadline.remaining_ms();
      for (size_t i = 0; i < pending_.size();) {
        Status result;
        const Hello h = try_hello(pending_[i].fd, address_, spin_ns_, out, &result);
        if (h == Hello::Done) {
          pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
          return result;
        }
        if (h == Hello::Gone || pending_[i].deadline.expired()) {
          pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
          continue;
        }
        const int left = pending_[i].deadline.remaining_ms();
        next_ms = next_ms < 0 ? left : std::min(next_ms, left);
        ++i;
      }
      fds.assign({{fd_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}});
      for (const Pending &p : pending_)
        fds.push_back({p.fd.get(), POLLIN, 0});
      const int rc = ::poll(fds.data(), fds.size(), next_ms);
      if (rc < 0 && errno != EINTR)
        return Status::error(AVA_E_CLOSED, where + "poll: " + errno_text(errno));
      if (rc == 0 && deadline.expired())
        return Status::error(AVA_E_TIMEOUT,
                             where + "no connection within " + std::to_string(timeout_ms) + " ms");
    }
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, where + "out of memory");
  }
}

} // namespace

Status adopt_shm(const Address &listen_address, UniqueFd fd, std::unique_ptr<Channel> *out) {
  const std::string where = listen_address.to_string() + ": ";
  ShmOptions options;
  Status st = shm_options_from_env(&options);
  if (!st.is_ok())
    return Status::error(st.code, where + st.message);
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0)
    return Status::error(AVA_E_CLOSED, where + "fcntl: " + errno_text(errno));
  try {
    Deadline deadline(kHelloTimeoutMs);
    for (;;) {
      Status result;
      const int sock = fd.get();
      switch (try_hello(fd, listen_address, options.spin_ns, out, &result)) {
      case Hello::Done:
        return result;
      case Hello::Gone:
        return Status::error(AVA_E_CLOSED, where + "the guest left before its shm hand-over");
      case Hello::NotYet:
        break;
      }
      pollfd p{sock, POLLIN, 0};
      const int rc = ::poll(&p, 1, deadline.remaining_ms());
      if (rc < 0 && errno != EINTR)
        return Status::error(AVA_E_CLOSED, where + "poll: " + errno_text(errno));
      if (rc == 0 && deadline.expired())
        return Status::error(AVA_E_TIMEOUT, where + "no shm hand-over within " +
                                                std::to_string(kHelloTimeoutMs) + " ms");
    }
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, where + "out of memory");
  }
}

Status connect_shm_tampered(const Address &address, int connect_timeout_ms,
                            const ShmOptions &options, const ShmGuestTamper &tamper,
                            std::unique_ptr<Channel> *out) {
  try {
    return connect_impl(address, connect_timeout_ms, options, tamper, out);
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "connect " + address.to_string() + ": out of memory");
  }
}

} // namespace ava::detail

namespace ava {

Status connect_shm(const Address &address, int connect_timeout_ms, const ShmOptions &options,
                   std::unique_ptr<Channel> *out) {
  return detail::connect_shm_tampered(address, connect_timeout_ms, options, {}, out);
}

Status listen_shm(const Address &address, const ShmOptions &options,
                  std::unique_ptr<Listener> *out) {
  using namespace detail;
  if (out == nullptr)
    return Status::error(AVA_E_PROTO, "listen_shm: no output listener");
  try {
    const std::string where = "listen " + address.to_string() + ": ";
    Status st = check_shm_options(options);
    if (!st.is_ok())
      return Status::error(st.code, where + st.message);
    // SEQPACKET: the hand-over is a few whole records, with the memfd attached.
    UnixListenSocket sock;
    st = listen_unix_socket(address, "shm", SOCK_SEQPACKET, &sock);
    if (!st.is_ok())
      return st;
    Address bound = address;
    bound.kind = ChannelKind::Shm;
    *out = std::make_unique<ShmListener>(std::move(sock.fd), std::move(sock.wake), std::move(bound),
                                         options.spin_ns, sock.owns_file, sock.dev, sock.ino);
    return Status::ok();
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "listen " + address.to_string() + ": out of memory");
  }
}

} // namespace ava
