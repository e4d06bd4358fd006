// SPDX-License-Identifier: MIT
// The guest's side of staged transfers (AVA_MSG_DATA, include/ava/wire.h):
// destinations of non-blocking reads and maps that the worker fills after
// the call has returned. A destination is registered before its call goes
// out, under a token the call carries; the reader copies each DATA message
// into it before it routes any later message, so by the time a reply or a
// callback tells the program its command completed, the bytes are there.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "transport/channel.hpp"

namespace ava::guest {

class Connection;

class TransferTable {
public:
  // A destination of capacity bytes at dst; its token (never 0), or 0 when
  // out of memory.
  uint64_t expect(void *dst, uint64_t capacity);
  // The same, with a block of conn's shared heap lent for the worker to read
  // into (*heap_offset; AVA_NO_HEAP where there is no heap, it is full or the
  // transfer is small). The block goes back when the transfer ends.
  uint64_t expect_lent(void *dst, uint64_t capacity, const std::shared_ptr<Connection> &conn,
                       uint64_t *heap_offset);
  // The call failed: no DATA will come for token.
  void cancel(uint64_t token);
  // Copies one DATA message into its destination. False, with *reason, when
  // the message breaks the protocol (a token nobody expects, a piece outside
  // the destination, lengths that do not add up).
  bool deliver(const MsgBuf &msg, std::string *reason);
  // Destinations still waiting for their end.
  size_t open() const;

private:
  struct Destination {
    uint8_t *ptr;
    uint64_t capacity;
    std::shared_ptr<uint8_t> lent; // a heap block, released with the last copy
  };
  uint64_t add(Destination d);
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Destination> open_;
  uint64_t next_token_ = 1;
};

} // namespace ava::guest
