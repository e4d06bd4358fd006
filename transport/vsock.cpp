// SPDX-License-Identifier: MIT
// AF_VSOCK stream sockets (SOCK_STREAM), framed by the shared socket channel
// and listener. Nothing here runs unless a vsock address is asked for.
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
// After sys/socket.h, which vm_sockets.h needs for sa_family_t.
#include <linux/vm_sockets.h>

#include <algorithm>
#include <thread>

#include "transport/connect_backoff.hpp"
#include "transport/socket_channel.hpp"
#include "transport/vsock.hpp"

namespace ava::detail {
namespace {

static_assert(kVsockAny == VMADDR_CID_ANY && kVsockAny == VMADDR_PORT_ANY);
static_assert(kVsockCidHost == VMADDR_CID_HOST && kVsockCidLocal == VMADDR_CID_LOCAL);

sockaddr_vm make_sockaddr(uint32_t cid, uint32_t port) {
  sockaddr_vm sa{};
  sa.svm_family = AF_VSOCK;
  sa.svm_cid = cid;
  sa.svm_port = port;
  return sa;
}

std::string peer_text(int fd) {
  sockaddr_vm sa{};
  socklen_t len = sizeof sa;
  if (::getpeername(fd, reinterpret_cast<sockaddr *>(&sa), &len) != 0)
    return "?";
  return "cid " + std::to_string(sa.svm_cid) + " port " + std::to_string(sa.svm_port);
}

// The error of a socket() call for AF_VSOCK, in words a user can act on.
Status socket_error(const std::string &where, int err) {
  if (err == EAFNOSUPPORT)
    return Status::error(AVA_E_UNSUPPORTED,
                         where + "AF_VSOCK is not available here (no vsock transport loaded)");
  return Status::error(AVA_E_NOMEM, where + "socket: " + errno_text(err));
}

class VsockListener final : public SocketListener {
public:
  using SocketListener::SocketListener;

protected:
  Status adopt(UniqueFd fd, std::unique_ptr<Channel> *out) override {
    return adopt_vsock(address(), std::move(fd), out);
  }
};

// One non-blocking connect attempt: 0 with *out set, or an errno (ETIMEDOUT
// when the deadline passed). *socket_errno is set when socket() itself failed.
int try_connect(const sockaddr_vm &sa, const Deadline &deadline, UniqueFd *out, int *socket_errno) {
  UniqueFd fd(::socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) {
    *socket_errno = errno;
    return errno;
  }
  if (::connect(fd.get(), reinterpret_cast<const sockaddr *>(&sa), sizeof sa) != 0) {
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

Status adopt_vsock(const Address &listen_address, UniqueFd fd, std::unique_ptr<Channel> *out) {
  std::string description = listen_address.to_string() + " (peer " + peer_text(fd.get()) + ")";
  *out = std::make_unique<SocketChannel>(std::move(fd), std::move(description));
  return Status::ok();
}

Status connect_vsock(const Address &address, int connect_timeout_ms,
                     std::unique_ptr<Channel> *out) {
  const std::string name = address.to_string();
  const std::string where = "connect " + name + ": ";
  if (address.vsock_cid == kVsockAny)
    return Status::error(AVA_E_PROTO, where + "CID 'any' can only be listened on");
  if (address.vsock_port == kVsockAny)
    return Status::error(AVA_E_PROTO, where + "port 'any' can only be listened on");
  const sockaddr_vm sa = make_sockaddr(address.vsock_cid, address.vsock_port);
  Deadline deadline(connect_timeout_ms);
  ConnectBackoff backoff;
  for (;;) {
    UniqueFd fd;
    int socket_errno = 0;
    const int err = try_connect(sa, deadline, &fd, &socket_errno);
    if (err == 0) {
      *out = std::make_unique<SocketChannel>(std::move(fd), name);
      return Status::ok();
    }
    if (socket_errno != 0)
      return socket_error(where, socket_errno);
    // Nobody listening yet reads as a refusal, or as a reset on the
    // virtio transport; the worker may still be starting.
    const bool retry = err == ECONNREFUSED || err == ECONNRESET || err == EINTR;
    const int left = deadline.remaining_ms();
    if (left == 0 && (retry || err == ETIMEDOUT))
      return Status::error(AVA_E_TIMEOUT, where + errno_text(err) + " (gave up after " +
                                              std::to_string(connect_timeout_ms) + " ms)");
    if (!retry)
      return Status::error(AVA_E_CLOSED, where + errno_text(err));
    backoff.wait(deadline);
  }
}

Status listen_vsock(const Address &address, std::unique_ptr<Listener> *out) {
  const std::string where = "listen " + address.to_string() + ": ";
  UniqueFd wake;
  Status st = make_wake_fd(&wake);
  if (!st.is_ok())
    return st;
  UniqueFd fd(::socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid())
    return socket_error(where, errno);
  const sockaddr_vm sa = make_sockaddr(address.vsock_cid, address.vsock_port);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr *>(&sa), sizeof sa) != 0)
    return Status::error(AVA_E_STATE, where + "bind: " + errno_text(errno));
  if (::listen(fd.get(), SOMAXCONN) != 0)
    return Status::error(AVA_E_STATE, where + "listen: " + errno_text(errno));
  sockaddr_vm bound_sa{};
  socklen_t len = sizeof bound_sa;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr *>(&bound_sa), &len) != 0)
    return Status::error(AVA_E_STATE, where + "getsockname: " + errno_text(errno));
  Address bound = address;
  bound.vsock_port = bound_sa.svm_port;
  *out = std::make_unique<VsockListener>(std::move(fd), std::move(wake), std::move(bound));
  return Status::ok();
}

} // namespace ava::detail
