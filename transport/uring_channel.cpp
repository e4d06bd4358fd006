// SPDX-License-Identifier: MIT
#include "transport/uring_channel.hpp"

#include "transport/gather.hpp"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <new>

namespace ava::detail {
namespace {

constexpr size_t kHdrBytes = sizeof(ava_msg_hdr);
// At most a recv or sendmsg plus a cancellation are ever queued on one ring.
constexpr unsigned kRingEntries = 4;

// sendmsg refuses more than IOV_MAX entries, so long gather lists go out in windows.
#ifdef IOV_MAX
constexpr int kMaxIov = std::min(IOV_MAX, 1024);
#else
constexpr int kMaxIov = 1024;
#endif

// The length of an io_uring recv is 32 bits wide.
constexpr uint64_t kMaxRecvChunk = uint64_t{1} << 30;
// Below this much free space at the end of the stage, the unread bytes move
// to its front first so that the next recv can still take a large bite.
constexpr size_t kMinRecvSpace = 16 * 1024;
// How long a cancelled request may take to report back before the socket is
// shut down under it.
constexpr int kCancelWaitMs = 1000;

// user_data of the requests; LIBURING_UDATA_TIMEOUT (all ones) stays free.
constexpr uint64_t kTagStage = 1;
constexpr uint64_t kTagBody = 2;
constexpr uint64_t kTagSend = 3;
constexpr uint64_t kTagCancel = 4;

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

// "header: 30 of 64 bytes" while the header is incomplete, else "300 of 4096 bytes".
std::string progress_text(uint64_t have, uint64_t want) {
  if (have < kHdrBytes && want == kHdrBytes)
    return "header: " + fmt_u64(have) + " of 64 bytes";
  return fmt_u64(have) + " of " + fmt_u64(want) + " bytes";
}

} // namespace

UringChannel::UringChannel(std::string description) : description_(std::move(description)) {}

Status UringChannel::create(std::string description, std::unique_ptr<UringChannel> *out) {
  const std::string where = description + ": io_uring: ";
  std::unique_ptr<UringChannel> ch(new (std::nothrow) UringChannel(std::move(description)));
  if (!ch)
    return Status::error(AVA_E_NOMEM, where + "out of memory");
  ch->stage_.reset(new (std::nothrow) uint8_t[kStageBytes]);
  if (!ch->stage_)
    return Status::error(AVA_E_NOMEM, where + "cannot allocate the receive buffer");
  for (UringRing *ring : {&ch->recv_ring_, &ch->send_ring_}) {
    const int rc = ring->init(kRingEntries);
    if (rc < 0)
      return Status::error(AVA_E_UNSUPPORTED,
                           where + "unavailable (io_uring_queue_init: " + errno_text(-rc) + ")");
  }
  *out = std::move(ch);
  return Status::ok();
}

Status UringChannel::attach(UniqueFd *fd) {
  // io_uring fails a request on an O_NONBLOCK socket with EAGAIN instead of
  // waiting for it, so the socket must block; io_uring itself never does.
  const int flags = ::fcntl(fd->get(), F_GETFL);
  if (flags < 0 ||
      ((flags & O_NONBLOCK) != 0 && ::fcntl(fd->get(), F_SETFL, flags & ~O_NONBLOCK) != 0))
    return Status::error(AVA_E_CLOSED, description_ + ": io_uring: fcntl: " + errno_text(errno));
  fd_ = std::move(*fd);
  return Status::ok();
}

UringChannel::~UringChannel() {
  if (!stage_pending_)
    return;
  bool over = false;
  cancel(recv_ring_, kTagStage, &over);
  // Never seen: a recv the kernel neither finished nor cancelled. Its buffer
  // must then outlive this object.
  if (!over)
    static_cast<void>(stage_.release());
}

void UringChannel::shutdown() {
  shut_.store(true, std::memory_order_release);
  // Wakes requests waiting on the socket; the fd itself stays open until
  // destruction so that no request can reach a reused fd number.
  ::shutdown(fd_.get(), SHUT_RDWR);
}

Status UringChannel::closed_status(const char *op) const {
  return Status::error(AVA_E_CLOSED, description_ + ": " + op + ": channel shut down");
}

Status UringChannel::break_recv(int code, std::string message) {
  if (shut_.load(std::memory_order_acquire))
    return closed_status("recv");
  recv_broken_reason_ = message;
  recv_broken_.store(true, std::memory_order_release);
  return Status::error(code, description_ + ": " + message);
}

int UringChannel::wait_for(UringRing &ring, uint64_t tag, const Deadline &deadline, int *res) {
  for (;;) {
    UringCompletion c;
    const int rc = ring.wait(deadline, &c);
    if (rc < 0)
      return rc;
    // Anything else is the report of a cancellation, which says nothing new.
    if (c.tag == tag) {
      *res = c.res;
      return 0;
    }
  }
}

int UringChannel::cancel(UringRing &ring, uint64_t tag, bool *done) {
  *done = false;
  io_uring_sqe *sqe = ring.prepare();
  if (sqe != nullptr) {
    io_uring_prep_cancel64(sqe, tag, 0);
    io_uring_sqe_set_data64(sqe, kTagCancel);
  }
  int res = 0;
  int rc = wait_for(ring, tag, Deadline(kCancelWaitMs), &res);
  if (rc == -ETIME) {
    // A request past the point of cancelling still ends once its socket is
    // shut down; the channel is being abandoned anyway.
    ::shutdown(fd_.get(), SHUT_RDWR);
    rc = wait_for(ring, tag, Deadline(-1), &res);
  }
  if (rc < 0)
    return -ECANCELED;
  *done = true;
  return res;
}

Status UringChannel::check_header(const ava_msg_hdr &hdr) {
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

Status UringChannel::fill_stage(size_t want, int timeout_ms) {
  // The common case of a batch: the next message is already here, and not
  // even the clock needs reading.
  if (stage_end_ - stage_begin_ >= want)
    return Status::ok();
  Deadline idle(timeout_ms);
  Deadline stall(stall_timeout_ms_);
  uint8_t *stage = stage_.get();
  while (stage_end_ - stage_begin_ < want) {
    const size_t have = stage_end_ - stage_begin_;
    if (!stage_pending_) {
      if (have == 0) {
        stage_begin_ = stage_end_ = 0;
      } else if (kStageBytes - stage_begin_ < want || kStageBytes - stage_end_ < kMinRecvSpace) {
        std::memmove(stage, stage + stage_begin_, have);
        stage_end_ = have;
        stage_begin_ = 0;
      }
      io_uring_sqe *sqe = recv_ring_.prepare();
      if (sqe == nullptr)
        return break_recv(AVA_E_CLOSED, "io_uring submission queue full");
      io_uring_prep_recv(sqe, fd_.get(), stage + stage_end_, kStageBytes - stage_end_, 0);
      io_uring_sqe_set_data64(sqe, kTagStage);
      stage_pending_ = true;
    }
    int res = 0;
    const int rc = wait_for(recv_ring_, kTagStage, have == 0 ? idle : stall, &res);
    if (rc == -ETIME) {
      // The recv stays in flight: whatever it brings later lands in the stage.
      if (shut_.load(std::memory_order_acquire))
        return closed_status("recv");
      if (have == 0)
        return Status::error(AVA_E_TIMEOUT,
                             description_ + ": no message within " + fmt_ms(timeout_ms));
      return break_recv(AVA_E_TIMEOUT, "peer stalled mid-message (" + progress_text(have, want) +
                                           ", nothing more for " + fmt_ms(stall_timeout_ms_) + ")");
    }
    if (rc < 0)
      return break_recv(AVA_E_CLOSED, "io_uring wait: " + errno_text(-rc));
    stage_pending_ = false;
    if (res > 0) {
      stage_end_ += static_cast<size_t>(res);
      stall.restart(stall_timeout_ms_);
      continue;
    }
    if (res == 0) {
      if (have == 0)
        return break_recv(AVA_E_CLOSED, "peer closed the channel");
      return break_recv(AVA_E_CLOSED, "peer closed the channel mid-message (truncated" +
                                          std::string(have < kHdrBytes ? " " : ": ") +
                                          progress_text(have, want) + ")");
    }
    const int err = -res;
    if (shut_.load(std::memory_order_acquire))
      return closed_status("recv");
    if (err == EINTR)
      continue;
    if (is_retry_errno(err)) {
      // Only if someone made the socket non-blocking behind our back.
      const int prc = poll_fd(fd_.get(), POLLIN, have == 0 ? idle : stall);
      if (prc < 0)
        return break_recv(AVA_E_CLOSED, "poll: " + errno_text(-prc));
      continue;
    }
    if (is_peer_gone_errno(err))
      return break_recv(AVA_E_CLOSED, "peer closed the channel (" + errno_text(err) + ")");
    return break_recv(AVA_E_CLOSED, "recv: " + errno_text(err));
  }
  return Status::ok();
}

Status UringChannel::read_body(uint8_t *dst, uint64_t len, uint64_t total) {
  Deadline stall(stall_timeout_ms_);
  uint64_t done = 0;
  while (done < len) {
    const uint64_t got = total - len + done;
    io_uring_sqe *sqe = recv_ring_.prepare();
    if (sqe == nullptr)
      return break_recv(AVA_E_CLOSED, "io_uring submission queue full");
    const size_t chunk = static_cast<size_t>(std::min(len - done, kMaxRecvChunk));
    io_uring_prep_recv(sqe, fd_.get(), dst + done, chunk, 0);
    io_uring_sqe_set_data64(sqe, kTagBody);
    int res = 0;
    const int rc = wait_for(recv_ring_, kTagBody, stall, &res);
    if (rc < 0) {
      // The caller's buffer must not be written once recv() returns.
      bool over = false;
      res = cancel(recv_ring_, kTagBody, &over);
      if (!over || res == -ECANCELED) {
        if (shut_.load(std::memory_order_acquire))
          return closed_status("recv");
        if (rc == -ETIME)
          return break_recv(AVA_E_TIMEOUT, "peer stalled mid-message (" +
                                               progress_text(got, total) + ", nothing more for " +
                                               fmt_ms(stall_timeout_ms_) + ")");
        return break_recv(AVA_E_CLOSED, "io_uring wait: " + errno_text(-rc));
      }
      // Otherwise the recv finished on its own meanwhile: use what it did.
    }
    if (res > 0) {
      done += static_cast<uint64_t>(res);
      stall.restart(stall_timeout_ms_);
      continue;
    }
    if (res == 0)
      return break_recv(AVA_E_CLOSED, "peer closed the channel mid-message (truncated: " +
                                          fmt_u64(got) + " of " + fmt_u64(total) + " bytes)");
    const int err = -res;
    if (shut_.load(std::memory_order_acquire))
      return closed_status("recv");
    if (err == EINTR)
      continue;
    if (is_retry_errno(err)) {
      const int prc = poll_fd(fd_.get(), POLLIN, stall);
      if (prc < 0)
        return break_recv(AVA_E_CLOSED, "poll: " + errno_text(-prc));
      continue;
    }
    if (is_peer_gone_errno(err))
      return break_recv(AVA_E_CLOSED,
                        "peer closed the channel mid-message (" + errno_text(err) + ")");
    return break_recv(AVA_E_CLOSED, "recv: " + errno_text(err));
  }
  return Status::ok();
}

Status UringChannel::recv(MsgBuf &buf, int timeout_ms) {
  buf.set_size(0);
  if (shut_.load(std::memory_order_acquire))
    return closed_status("recv");
  if (recv_broken_.load(std::memory_order_acquire))
    return Status::error(AVA_E_CLOSED,
                         description_ + ": channel broken earlier: " + recv_broken_reason_);
  Status st = fill_stage(kHdrBytes, timeout_ms);
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
  if (hdr.total_len <= kStagedMessageMax) {
    st = fill_stage(static_cast<size_t>(hdr.total_len), timeout_ms);
    if (!st.is_ok())
      return st;
  }
  const uint64_t from_stage = std::min<uint64_t>(stage_end_ - stage_begin_, hdr.total_len);
  std::memcpy(buf.data(), stage_.get() + stage_begin_, from_stage);
  stage_begin_ += from_stage;
  if (from_stage < hdr.total_len) {
    st = read_body(buf.data() + from_stage, hdr.total_len - from_stage, hdr.total_len);
    if (!st.is_ok())
      return st;
  }
  buf.set_size(hdr.total_len);
  return Status::ok();
}

Status UringChannel::send(const struct iovec *iov, int iovcnt) {
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

Status UringChannel::write_all(const struct iovec *iov, int iovcnt, uint64_t total) {
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
    msghdr msg{};
    msg.msg_iov = window;
    msg.msg_iovlen = static_cast<size_t>(n);
    io_uring_sqe *sqe = send_ring_.prepare();
    if (sqe == nullptr) {
      send_broken_.store(true, std::memory_order_release);
      return Status::error(AVA_E_CLOSED, description_ + ": send: io_uring submission queue full");
    }
    // MSG_WAITALL lets newer kernels finish a short send themselves instead
    // of a round trip through this loop; older ones ignore it.
    io_uring_prep_sendmsg(sqe, fd_.get(), &msg, MSG_NOSIGNAL | MSG_WAITALL);
    io_uring_sqe_set_data64(sqe, kTagSend);
    int res = 0;
    const int rc = wait_for(send_ring_, kTagSend, Deadline(-1), &res);
    if (rc < 0) {
      // window and msg live on this stack: the request must be over first.
      bool over = false;
      res = cancel(send_ring_, kTagSend, &over);
      if (!over || res == -ECANCELED) {
        send_broken_.store(true, std::memory_order_release);
        if (shut_.load(std::memory_order_acquire))
          return closed_status("send");
        return Status::error(AVA_E_CLOSED,
                             description_ + ": send: io_uring wait: " + errno_text(-rc));
      }
    }
    if (res > 0) {
      sent += static_cast<uint64_t>(res);
      size_t left = static_cast<size_t>(res);
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
    const int err = res < 0 ? -res : EPIPE;
    if (err == EINTR)
      continue;
    if (shut_.load(std::memory_order_acquire))
      return closed_status("send");
    if (is_retry_errno(err)) {
      // No stall limit here: a peer that is slow to drain is still a live peer, and
      // shutdown() or its death wakes this wait.
      const int prc = poll_fd(fd_.get(), POLLOUT, Deadline(-1));
      if (prc >= 0)
        continue;
      send_broken_.store(true, std::memory_order_release);
      return Status::error(AVA_E_CLOSED, description_ + ": send: poll: " + errno_text(-prc));
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

} // namespace ava::detail
