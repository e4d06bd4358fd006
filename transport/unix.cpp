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

#include "transport/socket_channel.hpp"

namespace ava::detail {
namespace {

constexpr int kConnectRetryMs = 20;

Status make_sockaddr(const std::string &path, sockaddr_un *sa, socklen_t *len) {
  std::memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  const bool abstract = !path.empty() && path[0] == '@';
  const size_t limit = abstract ? sizeof sa->sun_path : sizeof sa->sun_path - 1;
  if (path.empty() || path.size() > limit || (abstract && path.size() == 1) ||
      path.find('\0') != std::string::npos)
    return Status::error(AVA_E_PROTO, "unix:" + path + ": invalid socket path");
  std::memcpy(sa->sun_path, path.data(), path.size());
  if (abstract)
    sa->sun_path[0] = '\0';
  // An abstract name is exactly its bytes; a path carries its NUL terminator.
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + (abstract ? 0 : 1));
  return Status::ok();
}

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
    if (!owns_file_)
      return;
    // Remove the socket file only while it is still ours: a newer listener may
    // have replaced it in the meantime.
    const std::string path = address().path;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == dev_ &&
        st.st_ino == ino_)
      ::unlink(path.c_str());
  }

protected:
  Status adopt(UniqueFd fd, std::unique_ptr<Channel> *out) override {
    std::string description = address().to_string() + peer_suffix(fd.get());
    *out = std::make_unique<SocketChannel>(std::move(fd), std::move(description));
    return Status::ok();
  }

private:
  bool owns_file_;
  dev_t dev_;
  ino_t ino_;
};

// A socket file left behind by a dead listener refuses connections; a live
// one accepts them. Only the former may be replaced.
Status remove_stale_socket(const std::string &path, const sockaddr_un &sa, socklen_t len) {
  const std::string where = "listen unix:" + path + ": ";
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    return Status::ok();
  if (!S_ISSOCK(st.st_mode))
    return Status::error(AVA_E_STATE, where + "the path exists and is not a socket");
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!probe.valid())
    return Status::error(AVA_E_NOMEM, where + "socket: " + errno_text(errno));
  if (::connect(probe.get(), reinterpret_cast<const sockaddr *>(&sa), len) == 0 || errno == EAGAIN)
    return Status::error(AVA_E_STATE, where + "another process is already listening there");
  if (errno == ECONNREFUSED && ::unlink(path.c_str()) != 0 && errno != ENOENT)
    return Status::error(AVA_E_STATE,
                         where + "cannot remove the stale socket file: " + errno_text(errno));
  return Status::ok();
}

} // namespace

Status connect_unix(const Address &address, int connect_timeout_ms, std::unique_ptr<Channel> *out) {
  sockaddr_un sa;
  socklen_t len = 0;
  Status st = make_sockaddr(address.path, &sa, &len);
  if (!st.is_ok())
    return st;
  const std::string name = address.to_string();
  Deadline deadline(connect_timeout_ms);
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
    const int nap = left < 0 ? kConnectRetryMs : std::min(left, kConnectRetryMs);
    std::this_thread::sleep_for(std::chrono::milliseconds(nap));
  }
}

Status listen_unix(const Address &address, std::unique_ptr<Listener> *out) {
  sockaddr_un sa;
  socklen_t len = 0;
  Status st = make_sockaddr(address.path, &sa, &len);
  if (!st.is_ok())
    return st;
  const std::string where = "listen " + address.to_string() + ": ";
  const bool abstract = address.path[0] == '@';
  if (!abstract) {
    st = remove_stale_socket(address.path, sa, len);
    if (!st.is_ok())
      return st;
  }
  UniqueFd wake;
  st = make_wake_fd(&wake);
  if (!st.is_ok())
    return st;
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid())
    return Status::error(AVA_E_NOMEM, where + "socket: " + errno_text(errno));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr *>(&sa), len) != 0)
    return Status::error(AVA_E_STATE, where + "bind: " + errno_text(errno));
  dev_t dev = 0;
  ino_t ino = 0;
  if (!abstract) {
    struct stat sst {};
    if (::lstat(address.path.c_str(), &sst) == 0) {
      dev = sst.st_dev;
      ino = sst.st_ino;
    }
  }
  if (::listen(fd.get(), SOMAXCONN) != 0) {
    const int err = errno;
    if (!abstract)
      ::unlink(address.path.c_str());
    return Status::error(AVA_E_STATE, where + "listen: " + errno_text(err));
  }
  *out =
      std::make_unique<UnixListener>(std::move(fd), std::move(wake), address, !abstract, dev, ino);
  return Status::ok();
}

} // namespace ava::detail
