// SPDX-License-Identifier: MIT
// Entry points: pick the carrier for an address.
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <cstring>

#include <new>

#include "transport/kmod.hpp"
#include "transport/shm.hpp"
#include "transport/socket_channel.hpp"
#include "transport/vsock.hpp"

namespace ava {

Status connect_channel(const Address &address, int connect_timeout_ms,
                       std::unique_ptr<Channel> *out) {
  if (out == nullptr)
    return Status::error(AVA_E_PROTO, "connect_channel: no output channel");
  try {
    switch (address.kind) {
    case ChannelKind::Unix:
      return detail::connect_unix(address, connect_timeout_ms, out);
    case ChannelKind::Tcp:
      return detail::connect_tcp(address, connect_timeout_ms, out);
    case ChannelKind::Shm: {
      ShmOptions options;
      Status st = shm_options_from_env(&options);
      if (!st.is_ok())
        return Status::error(st.code, "connect " + address.to_string() + ": " + st.message);
      return connect_shm(address, connect_timeout_ms, options, out);
    }
    case ChannelKind::Vsock:
      return detail::connect_vsock(address, connect_timeout_ms, out);
    case ChannelKind::Kmod:
      return connect_kmod(address, connect_timeout_ms, out);
    case ChannelKind::Serial:
      return detail::connect_serial(address, out);
    }
    return Status::error(AVA_E_UNSUPPORTED, "connect_channel: unknown channel kind");
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "connect " + address.to_string() + ": out of memory");
  }
}

Status Listener::accept_connection(int *fd, int timeout_ms) {
  (void)fd;
  (void)timeout_ms;
  return Status::error(AVA_E_UNSUPPORTED,
                       address().to_string() + ": this listener cannot hand connections over");
}

Status adopt_connection(const Address &listen_address, int fd, std::unique_ptr<Channel> *out) {
  detail::UniqueFd owned(fd);
  if (out == nullptr || !owned.valid())
    return Status::error(AVA_E_PROTO, "adopt_connection: no connection or no output channel");
  try {
    switch (listen_address.kind) {
    case ChannelKind::Unix:
      return detail::adopt_unix(listen_address, std::move(owned), out);
    case ChannelKind::Tcp:
      return detail::adopt_tcp(listen_address, std::move(owned), out);
    case ChannelKind::Vsock:
      return detail::adopt_vsock(listen_address, std::move(owned), out);
    case ChannelKind::Shm:
      return detail::adopt_shm(listen_address, std::move(owned), out);
    default:
      break;
    }
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, listen_address.to_string() + ": out of memory");
  }
  return Status::error(AVA_E_UNSUPPORTED, listen_address.to_string() +
                                              ": connections of this kind are not handed over");
}

Status listen_channel(const Address &address, std::unique_ptr<Listener> *out) {
  if (out == nullptr)
    return Status::error(AVA_E_PROTO, "listen_channel: no output listener");
  try {
    switch (address.kind) {
    case ChannelKind::Unix:
      return detail::listen_unix(address, out);
    case ChannelKind::Tcp:
      return detail::listen_tcp(address, out);
    case ChannelKind::Shm: {
      ShmOptions options;
      Status st = shm_options_from_env(&options);
      if (!st.is_ok())
        return Status::error(st.code, "listen " + address.to_string() + ": " + st.message);
      return listen_shm(address, options, out);
    }
    case ChannelKind::Vsock:
      return detail::listen_vsock(address, out);
    case ChannelKind::Kmod:
      return Status::error(AVA_E_UNSUPPORTED,
                           "listen " + address.to_string() +
                               ": a kmod slot is served by `ava vmhost` on the VM's host, "
                               "not by listening in the guest");
    case ChannelKind::Serial:
      return Status::error(AVA_E_UNSUPPORTED,
                           "listen " + address.to_string() +
                               ": the host end of a virtio-serial port is a unix socket that "
                               "QEMU connects to: run `ava worker --listen unix:PATH` and give "
                               "QEMU -chardev socket,path=PATH,reconnect=1");
    }
    return Status::error(AVA_E_UNSUPPORTED, "listen_channel: unknown channel kind");
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "listen " + address.to_string() + ": out of memory");
  }
}

namespace detail {

Status connect_serial(const Address &address, std::unique_ptr<Channel> *out) {
  const int fd = ::open(address.path.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return Status::error(AVA_E_CLOSED, "connect " + address.to_string() + ": " +
                                           std::string(std::strerror(errno)));
  *out = std::make_unique<SocketChannel>(UniqueFd(fd), address.to_string(), true);
  return Status::ok();
}

} // namespace detail

Status adopt_stream_socket(int fd, std::string description, std::unique_ptr<Channel> *out) {
  detail::UniqueFd owned(fd);
  if (fd < 0 || out == nullptr)
    return Status::error(AVA_E_PROTO, "adopt_stream_socket: invalid arguments");
  try {
    *out = std::make_unique<detail::SocketChannel>(std::move(owned), std::move(description));
    return Status::ok();
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "adopt_stream_socket: out of memory");
  }
}

Status channel_pair(std::unique_ptr<Channel> *a, std::unique_ptr<Channel> *b) {
  if (a == nullptr || b == nullptr)
    return Status::error(AVA_E_PROTO, "channel_pair: no output channels");
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return Status::error(AVA_E_NOMEM, "socketpair: " + detail::errno_text(errno));
  detail::UniqueFd fd_a(sv[0]);
  detail::UniqueFd fd_b(sv[1]);
  try {
    auto first = std::make_unique<detail::SocketChannel>(std::move(fd_a), "socketpair:0");
    auto second = std::make_unique<detail::SocketChannel>(std::move(fd_b), "socketpair:1");
    *a = std::move(first);
    *b = std::move(second);
    return Status::ok();
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "channel_pair: out of memory");
  }
}

} // namespace ava
