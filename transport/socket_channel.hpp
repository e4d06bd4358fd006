// SPDX-License-Identifier: MIT
// The stream-socket channel and listener that unix and tcp share: framing,
// partial I/O, timeouts and shutdown live here; the carriers only make the
// sockets and say how to describe them. The same channel also runs over a
// stream character device (a virtio-serial port in a guest).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "transport/channel.hpp"
#include "transport/fd_util.hpp"

namespace ava::detail {

class SocketChannel final : public Channel {
public:
  // fd: a connected stream socket; blocking or not, every call on it is made
  // non-blocking per operation. With device, fd is a stream character device
  // instead (read/writev, O_NONBLOCK, and an eventfd to wake waits on shutdown).
  SocketChannel(UniqueFd fd, std::string description, bool device = false);
  ~SocketChannel() override = default;
  SocketChannel(const SocketChannel &) = delete;
  SocketChannel &operator=(const SocketChannel &) = delete;

  Status send(const struct iovec *iov, int iovcnt) override;
  Status recv(MsgBuf &buf, int timeout_ms) override {
    return receive(buf, timeout_ms, true, nullptr, nullptr);
  }
  Status recv_without_spin(MsgBuf &buf, int timeout_ms) override {
    return receive(buf, timeout_ms, false, nullptr, nullptr);
  }
  Status recv_placed(MsgBuf &buf, int timeout_ms, bool spin, PayloadSink &sink,
                     bool *placed) override {
    *placed = false;
    return receive(buf, timeout_ms, spin, &sink, placed);
  }
  void shutdown() override;
  std::string describe() const override { return description_; }
  // Hands the socket to another channel implementation (io_uring). Refused
  // once bytes were read ahead, since they would be lost with this object.
  bool release_socket(UniqueFd *out) {
    if (stage_begin_ != stage_end_)
      return false;
    *out = std::move(fd_);
    return true;
  }

private:
  // Read-ahead so that a small message (and the header of a large one) costs
  // one read syscall; bytes of the next message stay here for the next recv.
  static constexpr size_t kStageBytes = 64 * 1024;

  Status check_header(const ava_msg_hdr &hdr);
  // Payloads smaller than this are not offered to a sink: the read-ahead
  // holds most of them already, and a copy of a few KiB costs less.
  static constexpr uint64_t kPlaceMin = 64 * 1024;

  Status receive(MsgBuf &buf, int timeout_ms, bool spin, PayloadSink *sink, bool *placed);
  // Reads the len bytes that follow the first at bytes of a message of
  // total bytes into dst: the read-ahead's first, then the socket's.
  Status read_span(uint8_t *dst, uint64_t len, uint64_t at, uint64_t total);
  // spin: poll briefly (AVA_SOCKET_SPIN_NS) before sleeping in poll().
  Status fill_stage(size_t want, int timeout_ms, bool spin);
  Status read_body(uint8_t *dst, uint64_t len, uint64_t at, uint64_t total);
  Status write_all(const struct iovec *iov, int iovcnt, uint64_t total);
  // Records why the stream can no longer be read and returns that status.
  Status break_recv(int code, std::string message);
  Status closed_status(const char *op) const;
  ssize_t read_some(void *dst, size_t len);
  ssize_t write_some(const struct iovec *iov, int iovcnt);
  // poll() for events on the stream (and, on a device, the wake eventfd):
  // > 0 ready, 0 deadline passed, -errno.
  int wait_io(short events, const Deadline &deadline);

  UniqueFd fd_;
  bool device_ = false;
  UniqueFd wake_; // device only
  std::string description_;
  std::atomic<bool> shut_{false};
  std::atomic<bool> recv_broken_{false};
  std::atomic<bool> send_broken_{false};
  std::string recv_broken_reason_; // touched only by the receiving thread
  std::unique_ptr<uint8_t[]> stage_;
  size_t stage_begin_ = 0;
  size_t stage_end_ = 0;
};

// A virtio-serial port (or any stream character device) in a guest.
Status connect_serial(const Address &address, std::unique_ptr<Channel> *out);

// Common part of unix and tcp listeners: a non-blocking listening socket plus
// an eventfd that shutdown() signals to wake accept().
class SocketListener : public Listener {
public:
  SocketListener(UniqueFd fd, UniqueFd wake, Address address);
  Status accept(std::unique_ptr<Channel> *out, int timeout_ms) override;
  Status accept_connection(int *fd, int timeout_ms) override;
  void shutdown() override;
  Address address() const override { return address_; }

protected:
  // Wraps an accepted socket into a channel (carrier-specific options and description).
  virtual Status adopt(UniqueFd fd, std::unique_ptr<Channel> *out) = 0;

private:
  UniqueFd fd_;
  UniqueFd wake_;
  Address address_;
  std::atomic<bool> shut_{false};
};

// Makes the eventfd used by SocketListener.
Status make_wake_fd(UniqueFd *out);

// One accept4(flags) on the non-blocking listening socket listen_fd, waiting
// up to timeout_ms; shut (set before wake_fd is signalled) or a signalled
// wake_fd makes it return AVA_E_CLOSED. Transient errors of a new
// connection are retried. where prefixes the messages.
Status accept_socket(int listen_fd, int wake_fd, const std::atomic<bool> &shut, int flags,
                     const std::string &where, int timeout_ms, UniqueFd *out);

// What each carrier's listener makes of an accepted socket (also used by
// adopt_connection in a worker process serving one connection).
Status adopt_unix(const Address &listen_address, UniqueFd fd, std::unique_ptr<Channel> *out);
Status adopt_tcp(const Address &listen_address, UniqueFd fd, std::unique_ptr<Channel> *out);
Status adopt_vsock(const Address &listen_address, UniqueFd fd, std::unique_ptr<Channel> *out);
Status adopt_shm(const Address &listen_address, UniqueFd fd, std::unique_ptr<Channel> *out);

// Carriers.
Status connect_unix(const Address &address, int connect_timeout_ms, std::unique_ptr<Channel> *out);
Status listen_unix(const Address &address, std::unique_ptr<Listener> *out);
Status connect_tcp(const Address &address, int connect_timeout_ms, std::unique_ptr<Channel> *out);
Status listen_tcp(const Address &address, std::unique_ptr<Listener> *out);

} // namespace ava::detail
