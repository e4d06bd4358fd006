// SPDX-License-Identifier: MIT
#include "transport/shm_ring.hpp"

#include <cstring>

namespace ava::detail {
namespace {

constexpr uint64_t kRecHdr = sizeof(ava_ring_rec);

// The record header is read with one 8-byte load so that a peer rewriting it
// meanwhile cannot make us check one value and use another. The ring data is
// 8-byte aligned (offsets are page multiples, records padded to 8).
ava_ring_rec read_rec_header(const uint8_t *at) {
  const uint64_t word = __atomic_load_n(reinterpret_cast<const uint64_t *>(at), __ATOMIC_RELAXED);
  ava_ring_rec rec;
  std::memcpy(&rec, &word, sizeof rec);
  return rec;
}

void write_rec_header(uint8_t *at, uint32_t kind, uint32_t length) {
  ava_ring_rec rec{length, kind};
  uint64_t word;
  std::memcpy(&word, &rec, sizeof word);
  __atomic_store_n(reinterpret_cast<uint64_t *>(at), word, __ATOMIC_RELAXED);
}

const char *kind_name(uint32_t kind) {
  switch (kind) {
  case AVA_REC_PAD:
    return "PAD";
  case AVA_REC_MSG:
    return "MSG";
  case AVA_REC_MSG_PART:
    return "MSG_PART";
  case AVA_REC_MSG_END:
    return "MSG_END";
  default:
    return "unknown";
  }
}

std::string n(uint64_t v) {
  return std::to_string(v);
}

} // namespace

RingProbe RingConsumer::next(RingRecord *rec, std::string *why) {
  uint64_t tail = tail_;
  // At most one PAD can precede a record: after it the record starts at
  // offset 0, where a PAD would have to fill the whole ring (> size / 2).
  for (int pads = 0; pads < 2; ++pads) {
    // Records below a head seen before are published already: head is read
    // again only once they are used up. The producer rewrites head's line
    // with every message, so each read of it is a cache miss.
    if (tail == seen_head_) {
      // Pairs with the producer's release store of head in publish(): the
      // record bytes below head are visible once head is.
      const uint64_t head = shared_load_acquire(view_.head());
      if (head < seen_head_) {
        *why = "head went backwards from " + n(seen_head_) + " to " + n(head);
        return RingProbe::Corrupt;
      }
      if (head % 8 != 0) {
        *why = "head " + n(head) + " is not a multiple of 8";
        return RingProbe::Corrupt;
      }
      if (head - tail > view_.size) {
        *why = "head " + n(head) + " is more than the ring size (" + n(view_.size) +
               ") ahead of tail " + n(tail);
        return RingProbe::Corrupt;
      }
      seen_head_ = head;
    }
    const uint64_t avail = seen_head_ - tail;
    if (avail == 0) {
      if (tail != tail_) {
        tail_ = tail;
        // Pairs with the producer's acquire load of tail in refresh(): it may
        // reuse the PAD's bytes only after this.
        shared_store_release(view_.tail(), tail_);
      }
      return RingProbe::Empty;
    }
    const uint64_t pos = tail & (view_.size - 1);
    const uint64_t to_end = view_.size - pos;
    const ava_ring_rec hdr = read_rec_header(view_.data + pos);
    const uint64_t span = kRecHdr + AVA_REC_ALIGN(hdr.length);
    auto where = [pos] { return " at ring offset " + n(pos); };
    if (hdr.kind == AVA_REC_PAD) {
      if (span != to_end || span > avail) {
        *why = "PAD record of " + n(hdr.length) + " bytes" + where() + " does not fill the " +
               n(to_end) + " bytes before the end (" + n(avail) + " published)";
        return RingProbe::Corrupt;
      }
      tail += span;
      continue;
    }
    if (hdr.kind != AVA_REC_MSG && hdr.kind != AVA_REC_MSG_PART && hdr.kind != AVA_REC_MSG_END) {
      *why = "record of unknown kind " + n(hdr.kind) + where();
      return RingProbe::Corrupt;
    }
    if (hdr.length == 0 || span > avail || span > to_end ||
        span > AVA_RING_MAX_RECORD(view_.size)) {
      *why = std::string(kind_name(hdr.kind)) + " record of " + n(hdr.length) + " bytes" + where() +
             " does not fit (" + n(avail) + " bytes published, " + n(to_end) +
             " before the end, at most " + n(AVA_RING_MAX_RECORD(view_.size)) + " per record)";
      return RingProbe::Corrupt;
    }
    if (tail != tail_) {
      tail_ = tail;
      // Pairs with the producer's acquire load of tail in refresh().
      shared_store_release(view_.tail(), tail_);
    }
    rec->kind = hdr.kind;
    rec->length = hdr.length;
    rec->bytes = view_.data + pos + kRecHdr;
    return RingProbe::Ready;
  }
  *why = "two PAD records in a row";
  return RingProbe::Corrupt;
}

uint64_t RingConsumer::consume(const RingRecord &rec) {
  const uint64_t span = kRecHdr + AVA_REC_ALIGN(rec.length);
  tail_ += span;
  return span;
}

void RingConsumer::publish_tail() {
  // Pairs with the producer's acquire load of tail in refresh(): our copies
  // of the records are complete before the producer may overwrite them.
  shared_store_release(view_.tail(), tail_);
}

RingProbe RingProducer::refresh(std::string *why) {
  // Pairs with the consumer's release store of tail in consume()/next().
  const uint64_t tail = shared_load_acquire(view_.tail());
  if (tail < seen_tail_) {
    *why = "tail went backwards from " + n(seen_tail_) + " to " + n(tail);
    return RingProbe::Corrupt;
  }
  if (tail % 8 != 0 || tail > published_head_) {
    *why = "tail " + n(tail) + " is impossible with head " + n(published_head_);
    return RingProbe::Corrupt;
  }
  seen_tail_ = tail;
  return RingProbe::Ready;
}

uint64_t RingProducer::cost(uint64_t length) const {
  const uint64_t span = kRecHdr + AVA_REC_ALIGN(length);
  const uint64_t to_end = view_.size - (head_ & (view_.size - 1));
  return span <= to_end ? span : to_end + span;
}

bool RingProducer::fits(uint64_t length) const {
  const uint64_t used = head_ - seen_tail_;
  return cost(length) <= view_.size - used;
}

uint8_t *RingProducer::append(uint32_t kind, uint32_t length) {
  const uint64_t span = kRecHdr + AVA_REC_ALIGN(length);
  uint64_t pos = head_ & (view_.size - 1);
  const uint64_t to_end = view_.size - pos;
  if (span > to_end) {
    write_rec_header(view_.data + pos, AVA_REC_PAD, static_cast<uint32_t>(to_end - kRecHdr));
    head_ += to_end;
    pos = 0;
  }
  write_rec_header(view_.data + pos, kind, length);
  head_ += span;
  return view_.data + pos + kRecHdr;
}

void RingProducer::publish() {
  if (head_ == published_head_)
    return;
  published_head_ = head_;
  // Pairs with the consumer's acquire load of head in next(): the records
  // written before this store are complete when the consumer sees head.
  shared_store_release(view_.head(), head_);
}

} // namespace ava::detail
