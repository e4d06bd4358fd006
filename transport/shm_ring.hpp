// SPDX-License-Identifier: MIT
// One SPSC byte ring of include/ava/ring.h seen from one side: the index
// arithmetic and every check of what the peer wrote. No waiting and no
// syscalls here; the channel decides when to retry and whom to wake.
//
// Each side keeps its own index (the producer its head, the consumer its
// tail) and never reloads it from shared memory, where the peer could change
// it. The peer's index is read once per check into a local and checked
// before use.
#pragma once

#include <cstdint>
#include <string>

#include "ava/ring.h"

namespace ava::detail {

// Shared words are only ever touched through these.
inline uint64_t shared_load_acquire(const ava_u64 *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
inline void shared_store_release(ava_u64 *p, uint64_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

struct RingView {
  ava_ring_ctl *ctl = nullptr;
  uint8_t *data = nullptr;
  uint64_t size = 0; // a power of two within ring.h's bounds, checked by the caller
  // Where the indices live when not in ctl: a policed /dev/ava slot keeps
  // them in the slot table (ivshmem.h), out of the guest process's reach.
  ava_u64 *head_word = nullptr;
  ava_u64 *tail_word = nullptr;

  ava_u64 *head() const { return head_word != nullptr ? head_word : &ctl->head; }
  ava_u64 *tail() const { return tail_word != nullptr ? tail_word : &ctl->tail; }
};

// A record found by RingConsumer::next; bytes point into shared memory and
// may change under the reader, so copy them before checking their contents.
struct RingRecord {
  uint32_t kind = 0;
  uint32_t length = 0;
  const uint8_t *bytes = nullptr;
};

enum class RingProbe { Ready, Empty, Corrupt };

class RingConsumer {
public:
  RingConsumer() = default;
  explicit RingConsumer(RingView view) : view_(view) {}

  // Finds the next MSG, MSG_PART or MSG_END record, consuming PAD records on
  // the way. Corrupt sets *why and leaves nothing consumed.
  RingProbe next(RingRecord *rec, std::string *why);
  // Consumes the record next() returned; returns the bytes it freed. The
  // producer may reuse them once publish_tail() has run.
  uint64_t consume(const RingRecord &rec);
  // Release store of tail: the space of every record consumed so far goes
  // back to the producer. Not per record: tail shares its line with the
  // consumer's futex word, which the producer reads after every message, so
  // each store there costs the producer a cache miss.
  void publish_tail();
  // Records published and not yet consumed, as of the last look at head:
  // next() will find one without reading the producer's line again.
  bool has_backlog() const { return tail_ < seen_head_; }
  uint32_t *wait_word() const { return &view_.ctl->c_sleeping; }
  // The producer's word: set while it waits for space.
  uint32_t *peer_wait_word() const { return &view_.ctl->sleeping; }
  uint64_t size() const { return view_.size; }

private:
  RingView view_{};
  uint64_t tail_ = 0;
  uint64_t seen_head_ = 0; // head may only grow
};

class RingProducer {
public:
  RingProducer() = default;
  explicit RingProducer(RingView view) : view_(view) {}

  // Bytes in a record's payload at most (record header + padding within size / 2).
  uint64_t max_payload() const { return AVA_RING_MAX_RECORD(view_.size) - sizeof(ava_ring_rec); }
  // Rereads the consumer's tail; Corrupt sets *why.
  RingProbe refresh(std::string *why);
  // Whether a record of length payload bytes fits now (with the PAD it may
  // need first), as of the last refresh().
  bool fits(uint64_t length) const;
  // Writes the record header (after a PAD when the record would not fit
  // before the end) and returns where its length bytes go; fits(length) must
  // hold. The record is published by the next publish().
  uint8_t *append(uint32_t kind, uint32_t length);
  // Release store of head: everything appended becomes visible to the consumer.
  void publish();
  bool has_unpublished() const { return head_ != published_head_; }
  uint32_t *wait_word() const { return &view_.ctl->sleeping; }
  // The consumer's word: set while it waits for data.
  uint32_t *peer_wait_word() const { return &view_.ctl->c_sleeping; }

private:
  uint64_t cost(uint64_t length) const;

  RingView view_{};
  uint64_t head_ = 0;
  uint64_t published_head_ = 0;
  uint64_t seen_tail_ = 0; // tail may only grow
};

} // namespace ava::detail
