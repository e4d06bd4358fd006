// SPDX-License-Identifier: MIT
// The guest's side of staged transfers (AVA_MSG_DATA, include/ava/wire.h):
// destinations of non-blocking reads and maps that the worker fills after
// the call has returned. A destination is registered before its call goes
// out, under a token the call carries; the reader copies each DATA message
// into it before it routes any later message, so by the time a reply or a
// callback tells the program its command completed, the bytes are there.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ava/wire.h"
#include "transport/channel.hpp"

namespace ava::guest {

class Connection;

// Also the channel's PayloadSink: on socket channels a DATA message's bytes
// go straight into the destination, never through a message buffer.
class TransferTable final : public PayloadSink {
public:
  // A destination of capacity bytes at dst; its token (never 0), or 0 when
  // out of memory. keep_failure: a blocking caller will ask take_failed.
  uint64_t expect(void *dst, uint64_t capacity, bool keep_failure = false);
  // Whether token's transfer ended with AVA_DATA_FAILED (registered with
  // keep_failure; asked once, after its END).
  bool take_failed(uint64_t token);
  // The same, with a block of conn's shared heap lent for the worker to read
  // into (*heap_offset; AVA_NO_HEAP where there is no heap, it is full or the
  // transfer is small). The block goes back when the transfer ends.
  uint64_t expect_lent(void *dst, uint64_t capacity, const std::shared_ptr<Connection> &conn,
                       uint64_t *heap_offset, bool keep_failure = false);
  // A write's bytes at src copied into a block of conn's shared heap lent to
  // the worker (*heap_offset), held until the worker's END for the token;
  // 0 (and AVA_NO_HEAP) without a heap, for small writes or a full heap.
  uint64_t lend(const void *src, uint64_t bytes, const std::shared_ptr<Connection> &conn,
                uint64_t *heap_offset);
  // A block of conn's heap for an API object that lives there (an OpenCL
  // buffer): *storage, 128-byte aligned, at *heap_offset, held until the
  // worker's END for the token says the API let go of it. 0 (and
  // AVA_NO_HEAP) when Connection::buffer_block has none.
  uint64_t lend_storage(uint64_t bytes, const std::shared_ptr<Connection> &conn,
                        uint64_t *heap_offset, void **storage);
  // block (a block of conn's heap that a lend of its own bytes named, for
  // token) now belongs to the transfer: it goes back to the heap with the
  // worker's END, or at once when that came already. Called once the call
  // that carries token was accepted, so that a refused call leaves the
  // block to its owner.
  void adopt(uint64_t token, void *block, const std::shared_ptr<Connection> &conn);
  // The call carrying token failed. abandoned_call 0: its reply said so, and
  // any DATA for token came before it, so the token is forgotten. Otherwise
  // the call was abandoned (no reply in call_timeout_ms) and the worker may
  // still send DATA for it: the token stays as a tombstone whose DATA is
  // checked and dropped (the program's destination is no longer the
  // transfer's), until its END or the abandoned call's late reply.
  void cancel(uint64_t token, uint64_t abandoned_call);
  // The destination of a transfer whose call succeeded is gone before the
  // transfer ended (a mapping unmapped before its non-blocking map was
  // done): the token stays as a tombstone whose DATA is checked and
  // dropped, until its END.
  void forget(uint64_t token);
  // The late reply of abandoned call_id came: its tokens' DATA came before.
  void reply_arrived(uint64_t call_id);
  // Copies one DATA message into its destination. False, with *reason, when
  // the message breaks the protocol (a token nobody expects, a piece outside
  // the destination, lengths that do not add up). placed: msg is the head
  // of a message whose bytes place() put in place already.
  bool deliver(const MsgBuf &msg, bool placed, std::string *reason);
  // PayloadSink: the pieces of a DATA message for an open destination,
  // checked as deliver checks them; anything else is received whole, for
  // deliver to judge. While the bytes arrive, cancel and forget of that
  // token wait, so the destination stays the transfer's until they are in.
  bool place(const uint8_t *head, uint64_t head_len, struct iovec *iov, int *iovcnt) override;
  void landed(bool ok) override;
  // Destinations still waiting for their end.
  size_t open() const;
  // Whether token's transfer has not ended yet.
  bool is_open(uint64_t token) const;
  // Waits up to patience for token's END, which another thread reads: true
  // once it came (or the token is unknown).
  bool wait_ended(uint64_t token, std::chrono::milliseconds patience);

private:
  struct Destination {
    uint8_t *ptr; // nullptr: a tombstone, whose bytes go nowhere
    uint64_t capacity;
    std::shared_ptr<uint8_t> lent; // a heap block, released with the last copy
    uint64_t abandoned_call = 0;   // a tombstone's call
    bool keep_failure = false;
  };
  uint64_t add(Destination d);
  // A DATA message's head as sent: header, struct ava_data, its pieces.
  struct DataHead {
    ava_msg_hdr hdr;
    ava_data d;
    const uint8_t *pieces; // npieces x ava_data_piece, unaligned
    uint64_t payload;      // bytes after the head, per the header
  };
  static bool parse_head(const uint8_t *head, uint64_t head_len, DataHead *out,
                         std::string *reason);
  // Whether every piece of h lies in dst (and, for bytes in the message,
  // within its payload, adding up to it exactly).
  static bool pieces_fit(const Destination &dst, const DataHead &h, std::string *reason);
  // Waits (mu_ held through lock) while token's bytes are being placed.
  void wait_unplaced(std::unique_lock<std::mutex> &lock, uint64_t token);
  mutable std::mutex mu_;
  std::condition_variable ended_;  // a transfer ended (deliver, cancel)
  std::condition_variable landed_; // placing_ went back to 0
  uint64_t placing_ = 0;           // the token whose bytes a channel is placing
  // Tokens registered with keep_failure whose END said FAILED, until taken.
  std::vector<uint64_t> failed_;
  std::unordered_map<uint64_t, Destination> open_;
  uint64_t next_token_ = 1;
};

} // namespace ava::guest
