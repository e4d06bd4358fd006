// SPDX-License-Identifier: MIT
#include "transport/socket_channel.hpp"

#include "transport/gather.hpp"

#include <sched.h>

#include <chrono>
#include <cstdlib>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <new>

namespace ava::detail {
namespace {

constexpr size_t kHdrBytes = sizeof(ava_msg_hdr);

// sendmsg() refuses more than IOV_MAX entries, so long gather lists go out in windows.
#ifdef IOV_MAX
constexpr int kMaxIov = std::min(IOV_MAX, 1024);
#else
constexpr int kMaxIov = 1024;
#endif

// One recv() call never asks for more than this, keeping the result within ssize_t.
constexpr uint64_t kMaxReadChunk = uint64_t{1} << 30;

bool is_retry_errno(int err) {
  return err == EAGAIN || err == EWOULDBLOCK;
}

bool is_peer_gone_errno(int err) {
  return err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ESHUTDOWN;
}

std::string fmt_u64(uint64_t v) {
  return std::to_string(v);
}

std::string fmt_hex32(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08" PRIx32, v);
  return text;
}

std::string fmt_ms(int ms) {
  return ms < 0 ? std::string("ever") : std::to_string(ms) + " ms";
}

} // namespace

std::string errno_text(int err) {
  char buf[128];
  // GNU strerror_r: the text may or may not be placed in buf.
  const char *text = strerror_r(err, buf, sizeof buf);
  return text ? text : "unknown error";
}

// AVA_SOCKET_SPIN_NS, default 20 us with at least 2 CPUs (the waiting thread
// is the one that acts on the message, as on the shm channel), else 0.
uint64_t socket_spin_ns() {
  static const uint64_t spin = [] {
    if (const char *v = std::getenv("AVA_SOCKET_SPIN_NS"); v != nullptr && *v != '\0') {
      char *end = nullptr;
      const unsigned long long n = std::strtoull(v, &end, 10);
      if (end != nullptr && *end == '\0' && n <= 1000000000ull)
        return static_cast<uint64_t>(n);
    }
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    if (::sched_getaffinity(0, sizeof cpus, &cpus) != 0)
      return uint64_t{20000};
    return CPU_COUNT(&cpus) >= 2 ? uint64_t{20000} : uint64_t{0};
  }();
  return spin;
}

int poll_fd(int fd, short events, const Deadline &deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, deadline.remaining_ms());
    if (rc > 0)
      return p.revents != 0 ? p.revents : events;
    if (rc == 0) {
      if (deadline.expired())
        return 0;
      continue;
    }
    if (errno != EINTR)
      return -errno;
  }
}

namespace {
// A unix stream socket queues at most the sender's SO_SNDBUF (~208 KiB by
// default), so a large message moves in rounds of that much, each a
// sleep and a wake-up on both sides. TCP sizes its own buffers (autotuning,
// which setting SO_SNDBUF would turn off), so only unix sockets are widened.
// The kernel caps the request at net.core.wmem_max / rmem_max.
constexpr int kUnixBufferBytes = 4 << 20;

void widen_unix_buffers(int fd) {
  struct sockaddr_storage addr;
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<struct sockaddr *>(&addr), &len) != 0 ||
      addr.ss_family != AF_UNIX)
    return;
  // Only a hint: a smaller buffer still works.
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kUnixBufferBytes, sizeof kUnixBufferBytes);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &kUnixBufferBytes, sizeof kUnixBufferBytes);
}
} // namespace

SocketChannel::SocketChannel(UniqueFd fd, std::string description, bool device)
    : fd_(std::move(fd)), device_(device), description_(std::move(description)) {
  if (device_) {
    // A device has no per-call MSG_DONTWAIT, and no shutdown() that wakes a
    // poll on it; a failure here surfaces as a wait that ends only by timeout.
    const int flags = ::fcntl(fd_.get(), F_GETFL);
    if (flags >= 0)
      ::fcntl(fd_.get(), F_SETFL, flags | O_NONBLOCK);
    wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    return;
  }
  widen_unix_buffers(fd_.get());
}

void SocketChannel::shutdown() {
  shut_.store(true, std::memory_order_release);
  // The fd itself stays open until destruction so a concurrent send/recv can
  // never touch an fd number that was closed and reused meanwhile.
  if (!device_) {
    ::shutdown(fd_.get(), SHUT_RDWR);
    return;
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t rc = ::write(wake_.get(), &one, sizeof one);
}

ssize_t SocketChannel::read_some(void *dst, size_t len) {
  return device_ ? ::read(fd_.get(), dst, len) : ::recv(fd_.get(), dst, len, MSG_DONTWAIT);
}

ssize_t SocketChannel::write_some(const struct iovec *iov, int iovcnt) {
  if (device_)
    return ::writev(fd_.get(), iov, iovcnt);
  msghdr msg{};
  msg.msg_iov = const_cast<struct iovec *>(iov);
  msg.msg_iovlen = static_cast<size_t>(iovcnt);
  return ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

int SocketChannel::wait_io(short events, const Deadline &deadline) {
  if (!device_ || !wake_.valid())
    return poll_fd(fd_.get(), events, deadline);
  for (;;) {
    pollfd p[2] = {{fd_.get(), events, 0}, {wake_.get(), POLLIN, 0}};
    const int rc = ::poll(p, 2, deadline.remaining_ms());
    if (rc > 0)
      return 1;
    if (rc == 0) {
      if (deadline.expired())
        return 0;
      continue;
    }
    if (errno != EINTR)
      return -errno;
  }
}

Status SocketChannel::closed_status(const char *op) const {
  return Status::error(AVA_E_CLOSED, description_ + ": " + op + ": channel shut down");
}

Status SocketChannel::break_recv(int code, std::string message) {
  if (shut_.load(std::memory_order_acquire))
    return closed_status("recv");
  recv_broken_reason_ = message;
  recv_broken_.store(true, std::memory_order_release);
  return Status::error(code, description_ + ": " + message);
}

Status SocketChannel::check_header(const ava_msg_hdr &hdr) {
  if (hdr.magic != AVA_MSG_MAGIC)
    return break_recv(AVA_E_PROTO, "bad message magic " + fmt_hex32(hdr.magic) + " (expected " +
                                       fmt_hex32(AVA_MSG_MAGIC) + ")");
  if (hdr.abi_version != AVA_ABI_VERSION)
    return break_recv(AVA_E_PROTO, "peer speaks ABI version " + std::to_string(hdr.abi_version) +
                                       ", this side " + std::to_string(AVA_ABI_VERSION));
  if (hdr.total_len < kHdrBytes)
    return break_recv(AVA_E_PROTO, "message total_len " + fmt_u64(hdr.total_len) +
                                       " is shorter than its 64-byte header");
  if (hdr.total_len > max_message_)
    return break_recv(AVA_E_TOO_BIG, "message of " + fmt_u64(hdr.total_len) +
                                         " bytes exceeds the limit of " + fmt_u64(max_message_) +
                                         " bytes");
  return Status::ok();
}

Status SocketChannel::fill_stage(size_t want, int timeout_ms, bool spin) {
  Deadline idle(timeout_ms);
  Deadline stall(stall_timeout_ms_);
  uint8_t *stage = stage_.get();
  bool spinning = false;
  std::chrono::steady_clock::time_point spin_until;
  while (stage_end_ - stage_begin_ < want) {
    if (stage_begin_ == stage_end_) {
      stage_begin_ = stage_end_ = 0;
    } else if (kStageBytes - stage_begin_ < want) {
      std::memmove(stage, stage + stage_begin_, stage_end_ - stage_begin_);
      stage_end_ -= stage_begin_;
      stage_begin_ = 0;
    }
    ssize_t n = read_some(stage + stage_end_, kStageBytes - stage_end_);
    if (n > 0) {
      stage_end_ += static_cast<size_t>(n);
      stall.restart(stall_timeout_ms_);
      continue;
    }
    const size_t have = stage_end_ - stage_begin_;
    if (n == 0) {
      if (have == 0)
        return break_recv(AVA_E_CLOSED, "peer closed the channel");
      return break_recv(AVA_E_CLOSED, "peer closed the channel mid-message (truncated header: " +
                                          std::to_string(have) + " of 64 bytes)");
    }
    const int err = errno;
    if (err == EINTR)
      continue;
    if (!is_retry_errno(err)) {
      if (is_peer_gone_errno(err))
        return break_recv(AVA_E_CLOSED, "peer closed the channel (" + errno_text(err) + ")");
      return break_recv(AVA_E_CLOSED, "recv: " + errno_text(err));
    }
    if (shut_.load(std::memory_order_acquire))
      return closed_status("recv");
    if (spin && have == 0 && timeout_ms != 0 && socket_spin_ns() > 0) {
      // The answer to what we just sent usually comes within microseconds;
      // polling for it briefly saves a sleep and a wake-up.
      const auto now = std::chrono::steady_clock::now();
      if (!spinning) {
        spinning = true;
        spin_until = now + std::chrono::nanoseconds(socket_spin_ns());
      }
      if (now < spin_until) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        continue;
      }
    }
    const int rc = wait_io(POLLIN, have == 0 ? idle : stall);
    if (rc < 0)
      return break_recv(AVA_E_CLOSED, "poll: " + errno_text(-rc));
    if (rc == 0) {
      if (have == 0)
        return Status::error(AVA_E_TIMEOUT,
                             description_ + ": no message within " + fmt_ms(timeout_ms));
      return break_recv(AVA_E_TIMEOUT, "peer stalled mid-message (header: " + std::to_string(have) +
                                           " of 64 bytes, nothing more for " +
                                           fmt_ms(stall_timeout_ms_) + ")");
    }
  }
  return Status::ok();
}

Status SocketChannel::read_body(uint8_t *dst, uint64_t len, uint64_t at, uint64_t total) {
  Deadline stall(stall_timeout_ms_);
  uint64_t done = 0;
  while (done < len) {
    const size_t chunk = static_cast<size_t>(std::min(len - done, kMaxReadChunk));
    ssize_t n = read_some(dst + done, chunk);
    if (n > 0) {
      done += static_cast<uint64_t>(n);
      stall.restart(stall_timeout_ms_);
      continue;
    }
    const uint64_t got = at + done;
    if (n == 0)
      return break_recv(AVA_E_CLOSED, "peer closed the channel mid-message (truncated: " +
                                          fmt_u64(got) + " of " + fmt_u64(total) + " bytes)");
    const int err = errno;
    if (err == EINTR)
      continue;
    if (!is_retry_errno(err)) {
      if (is_peer_gone_errno(err))
        return break_recv(AVA_E_CLOSED,
                          "peer closed the channel mid-message (" + errno_text(err) + ")");
      return break_recv(AVA_E_CLOSED, "recv: " + errno_text(err));
    }
    if (shut_.load(std::memory_order_acquire))
      return closed_status("recv");
    const int rc = wait_io(POLLIN, stall);
    if (rc < 0)
      return break_recv(AVA_E_CLOSED, "poll: " + errno_text(-rc));
    if (rc == 0)
      return break_recv(AVA_E_TIMEOUT, "peer stalled mid-message (" + fmt_u64(got) + " of " +
                                           fmt_u64(total) + " bytes, nothing more for " +
                                           fmt_ms(stall_timeout_ms_) + ")");
  }
  return Status::ok();
}

Status SocketChannel::read_span(uint8_t *dst, uint64_t len, uint64_t at, uint64_t total) {
  const uint64_t from_stage = std::min<uint64_t>(stage_end_ - stage_begin_, len);
  std::memcpy(dst, stage_.get() + stage_begin_, from_stage);
  stage_begin_ += from_stage;
  if (stage_begin_ == stage_end_)
    stage_begin_ = stage_end_ = 0;
  if (from_stage == len)
    return Status::ok();
  return read_body(dst + from_stage, len - from_stage, at + from_stage, total);
}

Status SocketChannel::receive(MsgBuf &buf, int timeout_ms, bool spin, PayloadSink *sink,
                              bool *placed) {
  buf.set_size(0);
  if (shut_.load(std::memory_order_acquire))
    return closed_status("recv");
  if (recv_broken_.load(std::memory_order_acquire))
    return Status::error(AVA_E_CLOSED,
                         description_ + ": channel broken earlier: " + recv_broken_reason_);
  if (!stage_) {
    stage_.reset(new (std::nothrow) uint8_t[kStageBytes]);
    if (!stage_)
      return Status::error(AVA_E_NOMEM, description_ + ": cannot allocate the receive buffer");
  }
  Status st = fill_stage(kHdrBytes, timeout_ms, spin);
  if (!st.is_ok())
    return st;
  ava_msg_hdr hdr;
  std::memcpy(&hdr, stage_.get() + stage_begin_, kHdrBytes);
  st = check_header(hdr);
  if (!st.is_ok())
    return st;
  // Only now, with total_len vetted against max_message, may the peer make us allocate.
  if (!buf.reserve(hdr.total_len))
    return break_recv(AVA_E_NOMEM,
                      "cannot allocate " + fmt_u64(hdr.total_len) + " bytes for a message");
  uint64_t have = 0;
  if (sink != nullptr && hdr.args_len <= hdr.total_len - kHdrBytes &&
      hdr.total_len - kHdrBytes - hdr.args_len >= kPlaceMin) {
    // The head first, so that the sink can say where the rest goes.
    have = kHdrBytes + hdr.args_len;
    st = read_span(buf.data(), have, 0, hdr.total_len);
    if (!st.is_ok())
      return st;
    struct iovec places[PayloadSink::kMaxPlaces];
    int nplaces = 0;
    if (sink->place(buf.data(), have, places, &nplaces)) {
      uint64_t got = have;
      for (int i = 0; i < nplaces && st.is_ok(); ++i) {
        st = read_span(static_cast<uint8_t *>(places[i].iov_base), places[i].iov_len, got,
                       hdr.total_len);
        got += places[i].iov_len;
      }
      if (st.is_ok() && got != hdr.total_len)
        st = break_recv(AVA_E_PROTO, "a receiver placed " + fmt_u64(got - have) + " of a " +
                                         fmt_u64(hdr.total_len - have) + "-byte payload");
      sink->landed(st.is_ok());
      if (!st.is_ok())
        return st;
      buf.set_size(have);
      *placed = true;
      return Status::ok();
    }
  }
  st = read_span(buf.data() + have, hdr.total_len - have, have, hdr.total_len);
  if (!st.is_ok())
    return st;
  buf.set_size(hdr.total_len);
  return Status::ok();
}

Status SocketChannel::send(const struct iovec *iov, int iovcnt) {
  if (shut_.load(std::memory_order_acquire))
    return closed_status("send");
  if (send_broken_.load(std::memory_order_acquire) || recv_broken_.load(std::memory_order_acquire))
    return Status::error(AVA_E_CLOSED, description_ + ": send: channel broken by an earlier error");
  uint64_t total = 0;
  Status st = check_gather_messages(iov, iovcnt, max_message_, description_, &total);
  if (!st.is_ok())
    return st;
  return write_all(iov, iovcnt, total);
}

Status SocketChannel::write_all(const struct iovec *iov, int iovcnt, uint64_t total) {
  struct iovec window[kMaxIov];
  int index = 0;
  size_t offset = 0; // bytes of iov[index] already sent
  uint64_t sent = 0;
  while (sent < total) {
    int n = 0;
    for (int i = index; i < iovcnt && n < kMaxIov; ++i) {
      const size_t skip = i == index ? offset : 0;
      if (iov[i].iov_len == skip)
        continue;
      window[n].iov_base = static_cast<uint8_t *>(iov[i].iov_base) + skip;
      window[n].iov_len = iov[i].iov_len - skip;
      ++n;
    }
    const ssize_t w = write_some(window, n);
    if (w > 0) {
      sent += static_cast<uint64_t>(w);
      size_t left = static_cast<size_t>(w);
      while (left > 0) {
        const size_t avail = iov[index].iov_len - offset;
        if (left < avail) {
          offset += left;
          left = 0;
        } else {
          left -= avail;
          ++index;
          offset = 0;
        }
      }
      continue;
    }
    const int err = w < 0 ? errno : EPIPE;
    if (err == EINTR)
      continue;
    if (shut_.load(std::memory_order_acquire))
      return closed_status("send");
    if (is_retry_errno(err)) {
      // A peer slow to drain is still a live peer (shutdown() or its death
      // wakes this wait), up to the send timeout, if this side has one.
      const int rc = wait_io(POLLOUT, Deadline(send_timeout_ms()));
      if (rc > 0)
        continue;
      if (rc == 0) {
        send_broken_.store(true, std::memory_order_release);
        return Status::error(AVA_E_TIMEOUT, description_ + ": send: the peer read nothing for " +
                                                fmt_ms(send_timeout_ms()) +
                                                (sent > 0 ? " (mid-message)" : ""));
      }
      send_broken_.store(true, std::memory_order_release);
      return Status::error(AVA_E_CLOSED, description_ + ": send: poll: " + errno_text(-rc));
    }
    send_broken_.store(true, std::memory_order_release);
    const std::string where = sent > 0 ? " mid-message" : "";
    if (is_peer_gone_errno(err))
      return Status::error(AVA_E_CLOSED, description_ + ": send: peer closed the channel" + where +
                                             " (" + errno_text(err) + ")");
    return Status::error(AVA_E_CLOSED, description_ + ": send" + where + ": " + errno_text(err));
  }
  return Status::ok();
}

SocketListener::SocketListener(UniqueFd fd, UniqueFd wake, Address address)
    : fd_(std::move(fd)), wake_(std::move(wake)), address_(std::move(address)) {}

void SocketListener::shutdown() {
  shut_.store(true, std::memory_order_release);
  const uint64_t one = 1;
  // The eventfd stays readable from now on, so every later accept() wakes at once too.
  [[maybe_unused]] ssize_t rc = ::write(wake_.get(), &one, sizeof one);
}

Status accept_socket(int listen_fd, int wake_fd, const std::atomic<bool> &shut, int flags,
                     const std::string &where, int timeout_ms, UniqueFd *out) {
  Deadline deadline(timeout_ms);
  for (;;) {
    if (shut.load(std::memory_order_acquire))
      return Status::error(AVA_E_CLOSED, where + "listener shut down");
    UniqueFd conn(::accept4(listen_fd, nullptr, nullptr, flags));
    if (conn.valid()) {
      *out = std::move(conn);
      return Status::ok();
    }
    const int err = errno;
    switch (err) {
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    // accept(2): pending network errors of the new connection surface here; retry.
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EPERM:
      continue;
    case EMFILE:
    case ENFILE:
    case ENOBUFS:
    case ENOMEM:
      return Status::error(AVA_E_NOMEM, where + errno_text(err));
    default:
      break;
    }
    if (!is_retry_errno(err))
      return Status::error(AVA_E_CLOSED, where + errno_text(err));
    pollfd fds[2] = {{listen_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    const int rc = ::poll(fds, 2, deadline.remaining_ms());
    if (rc < 0 && errno != EINTR)
      return Status::error(AVA_E_CLOSED, where + "poll: " + errno_text(errno));
    if (rc == 0 && deadline.expired())
      return Status::error(AVA_E_TIMEOUT, where + "no connection within " + fmt_ms(timeout_ms));
  }
}

Status SocketListener::accept(std::unique_ptr<Channel> *out, int timeout_ms) {
  const std::string where = address_.to_string() + ": accept: ";
  if (out == nullptr)
    return Status::error(AVA_E_PROTO, where + "no output channel");
  UniqueFd conn;
  Status st = accept_socket(fd_.get(), wake_.get(), shut_, SOCK_CLOEXEC, where, timeout_ms, &conn);
  if (!st.is_ok())
    return st;
  try {
    return adopt(std::move(conn), out);
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, where + "out of memory");
  }
}

Status SocketListener::accept_connection(int *fd, int timeout_ms) {
  const std::string where = address_.to_string() + ": accept: ";
  UniqueFd conn;
  Status st = accept_socket(fd_.get(), wake_.get(), shut_, SOCK_CLOEXEC, where, timeout_ms, &conn);
  if (st.is_ok())
    *fd = conn.release();
  return st;
}

Status make_wake_fd(UniqueFd *out) {
  out->reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!out->valid())
    return Status::error(AVA_E_NOMEM, "eventfd: " + errno_text(errno));
  return Status::ok();
}

} // namespace ava::detail
