// SPDX-License-Identifier: MIT
#include "transport/unix_socket.hpp"

#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "transport/socket_channel.hpp"

namespace ava::detail {
namespace {

// A socket file left behind by a dead listener refuses connections; a live
// one (of any socket type) accepts them or names the wrong type. Only the
// former may be replaced.
Status remove_stale_socket(const std::string &path, const std::string &where, int type,
                           const sockaddr_un &sa, socklen_t len) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    return Status::ok();
  if (!S_ISSOCK(st.st_mode))
    return Status::error(AVA_E_STATE, where + "the path exists and is not a socket");
  UniqueFd probe(::socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!probe.valid())
    return Status::error(AVA_E_NOMEM, where + "socket: " + errno_text(errno));
  if (::connect(probe.get(), reinterpret_cast<const sockaddr *>(&sa), len) == 0 ||
      errno == EAGAIN || errno == EPROTOTYPE)
    return Status::error(AVA_E_STATE, where + "another process is already listening there");
  if (errno == ECONNREFUSED && ::unlink(path.c_str()) != 0 && errno != ENOENT)
    return Status::error(AVA_E_STATE,
                         where + "cannot remove the stale socket file: " + errno_text(errno));
  return Status::ok();
}

} // namespace

Status make_unix_sockaddr(const std::string &path, const char *scheme, sockaddr_un *sa,
                          socklen_t *len) {
  std::memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  const bool abstract = !path.empty() && path[0] == '@';
  const size_t limit = abstract ? sizeof sa->sun_path : sizeof sa->sun_path - 1;
  if (path.empty() || path.size() > limit || (abstract && path.size() == 1) ||
      path.find('\0') != std::string::npos)
    return Status::error(AVA_E_PROTO, std::string(scheme) + ":" + path + ": invalid socket path");
  std::memcpy(sa->sun_path, path.data(), path.size());
  if (abstract)
    sa->sun_path[0] = '\0';
  // An abstract name is exactly its bytes; a path carries its NUL terminator.
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + (abstract ? 0 : 1));
  return Status::ok();
}

Status listen_unix_socket(const Address &address, const char *scheme, int type,
                          UnixListenSocket *out) {
  sockaddr_un sa;
  socklen_t len = 0;
  Status st = make_unix_sockaddr(address.path, scheme, &sa, &len);
  if (!st.is_ok())
    return st;
  const std::string where = "listen " + address.to_string() + ": ";
  const bool abstract = address.path[0] == '@';
  if (!abstract) {
    st = remove_stale_socket(address.path, where, type, sa, len);
    if (!st.is_ok())
      return st;
  }
  st = make_wake_fd(&out->wake);
  if (!st.is_ok())
    return st;
  out->fd = UniqueFd(::socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!out->fd.valid())
    return Status::error(AVA_E_NOMEM, where + "socket: " + errno_text(errno));
  if (::bind(out->fd.get(), reinterpret_cast<const sockaddr *>(&sa), len) != 0)
    return Status::error(AVA_E_STATE, where + "bind: " + errno_text(errno));
  if (!abstract) {
    struct stat sst {};
    if (::lstat(address.path.c_str(), &sst) == 0) {
      out->dev = sst.st_dev;
      out->ino = sst.st_ino;
    }
  }
  if (::listen(out->fd.get(), SOMAXCONN) != 0) {
    const int err = errno;
    if (!abstract)
      ::unlink(address.path.c_str());
    return Status::error(AVA_E_STATE, where + "listen: " + errno_text(err));
  }
  out->owns_file = !abstract;
  return Status::ok();
}

void remove_own_socket_file(const std::string &path, dev_t dev, ino_t ino) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == dev &&
      st.st_ino == ino)
    ::unlink(path.c_str());
}

} // namespace ava::detail
