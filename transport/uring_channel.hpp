// SPDX-License-Identifier: MIT
// The stream-socket channel on io_uring. Same framing, Status codes and
// failure rules as SocketChannel, but:
//  - receive: one large recv into a 256 KiB buffer, so that many small
//    messages that arrive together are parsed from one completion; large
//    bodies are received straight into the caller's MsgBuf;
//  - send: a gather list leaves as one IORING_OP_SENDMSG, and it may hold
//    several complete messages back to back (batched async calls).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "transport/channel.hpp"
#include "transport/fd_util.hpp"
#include "transport/uring_ring.hpp"

namespace ava::detail {

class UringChannel final : public Channel {
public:
  // Sets up the rings and buffers, before any socket is involved, so that a
  // caller can give up on io_uring without having touched its socket.
  static Status create(std::string description, std::unique_ptr<UringChannel> *out);
  // Takes fd (a connected stream socket) only on success.
  Status attach(UniqueFd *fd);
  ~UringChannel() override;
  UringChannel(const UringChannel &) = delete;
  UringChannel &operator=(const UringChannel &) = delete;

  Status send(const struct iovec *iov, int iovcnt) override;
  Status recv(MsgBuf &buf, int timeout_ms) override;
  void shutdown() override;
  // Says io_uring, so that a log (and a test) can tell which path served a guest.
  std::string describe() const override { return description_ + " (io_uring)"; }

private:
  static constexpr size_t kStageBytes = 256 * 1024;
  // Messages up to this size are gathered in the stage (and bring whatever
  // follows them along); larger bodies go straight into the caller's buffer.
  static constexpr uint64_t kStagedMessageMax = kStageBytes / 2;

  explicit UringChannel(std::string description);

  Status check_header(const ava_msg_hdr &hdr);
  Status fill_stage(size_t want, int timeout_ms);
  Status read_body(uint8_t *dst, uint64_t len, uint64_t total);
  Status write_all(const struct iovec *iov, int iovcnt, uint64_t total);
  // Waits for the completion of tag on ring, dropping completions of
  // cancellations: 0 with *res set, or what UringRing::wait returned.
  static int wait_for(UringRing &ring, uint64_t tag, const Deadline &deadline, int *res);
  // Cancels the in-flight request tag on ring and waits until it is over, so
  // that its buffer may be reused or freed. Returns the request's result
  // (bytes that raced in count), or -ECANCELED.
  int cancel(UringRing &ring, uint64_t tag, bool *done);
  Status break_recv(int code, std::string message);
  Status closed_status(const char *op) const;

  UniqueFd fd_;
  std::string description_;
  std::atomic<bool> shut_{false};
  std::atomic<bool> recv_broken_{false};
  std::atomic<bool> send_broken_{false};
  std::string recv_broken_reason_; // touched only by the receiving thread
  std::unique_ptr<uint8_t[]> stage_;
  size_t stage_begin_ = 0;
  size_t stage_end_ = 0;
  // A recv into stage_[stage_end_..] is in flight (it survives a recv()
  // that timed out before any byte came, so nothing is lost or read twice).
  bool stage_pending_ = false;
  UringRing recv_ring_;
  UringRing send_ring_;
};

} // namespace ava::detail
