// SPDX-License-Identifier: MIT
// Staged transfers on the worker (ava_w_transfer_*, worker/ava_worker_rt.h;
// the wire side is AVA_MSG_DATA in include/ava/wire.h). A non-blocking
// command runs on staging memory the worker owns, after its call returned;
// a read's bytes go to the guest once the command is done, and always before
// any other message that could show the guest it is done.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace ava {

class GuestConnection;
struct KeptMessage;

// The staging memory of one guest. Bounded, so that commands queued behind
// events that never complete cannot make the worker hold unbounded memory
// (each block counts at least kMinCharge); and reused, because a program
// moves the same sizes again and again, and fresh memory costs a page fault
// per page on first touch, which halves a copy's speed.
class StagingPool {
public:
  static constexpr uint64_t kMinCharge = 4096;
  // Blocks kept for reuse, and the smallest worth keeping (below it malloc's
  // own bins are as good).
  static constexpr size_t kCachedBlocks = 4;
  static constexpr uint64_t kCacheMin = 64 * 1024;

  StagingPool(uint64_t limit, std::chrono::milliseconds patience)
      : limit_(limit), patience_(patience) {}
  ~StagingPool();
  StagingPool(const StagingPool &) = delete;
  StagingPool &operator=(const StagingPool &) = delete;

  static uint64_t charge_of(uint64_t bytes) { return bytes < kMinCharge ? kMinCharge : bytes; }
  // A block of at least bytes (*capacity: its size), or nullptr. Beyond the
  // limit, waits (up to the patience) for staging to come free as commands
  // finish: a run of large non-blocking writes then goes at the device's
  // pace instead of failing.
  void *take(uint64_t bytes, uint64_t *capacity);
  void give(void *block, uint64_t capacity);
  // Charges bytes of staging that is not the pool's (a call's message kept
  // as a transfer's staging) as take does, waiting as take does; false when
  // the limit does not make room. unreserve gives the charge back.
  bool reserve(uint64_t bytes);
  void unreserve(uint64_t bytes);
  // Bytes held by transfers (not counting the blocks kept for reuse).
  uint64_t used() const;

private:
  struct Block {
    void *ptr;
    uint64_t capacity;
  };
  // A kept block that fits bytes without wasting more than its size; mu_.
  bool reuse_locked(uint64_t bytes, Block *out);
  // Blocks taken out of the cache, freed (off the lock) when it goes.
  struct Dropped {
    std::vector<Block> blocks;
    ~Dropped();
  };
  // Room for charge more: kept blocks that do not fit give way (into
  // dropped), then waits up to the patience for used_ to leave room; false
  // when it does not. mu_ held by lock.
  bool room_locked(std::unique_lock<std::mutex> &lock, uint64_t charge, Dropped *dropped);

  const uint64_t limit_;
  const std::chrono::milliseconds patience_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  uint64_t used_ = 0;       // charges of blocks out with transfers
  uint64_t kept_bytes_ = 0; // charges of cached_
  std::vector<Block> cached_;
};

struct Transfer {
  enum : int { kRunning = 0, kDone = 1, kFailed = 2 };
  struct Piece {
    uint64_t dst, src, len;
  };
  // Takes staging, a block of pool of capacity bytes; without a pool,
  // staging is a block of the shared heap the guest lent.
  Transfer(uint64_t token, uint64_t bytes, void *staging, uint64_t capacity,
           std::shared_ptr<StagingPool> pool, std::weak_ptr<GuestConnection> connection);
  bool lent() const { return pool == nullptr; }
  ~Transfer();
  Transfer(const Transfer &) = delete;
  Transfer &operator=(const Transfer &) = delete;

  const uint64_t token; // 0: staging only, nothing goes to the guest
  const uint64_t bytes;
  void *const staging;
  const uint64_t capacity;
  uint8_t *source; // where pieces are read: the staging, or API memory
  uint64_t source_bytes;
  const std::shared_ptr<StagingPool> pool;
  const std::weak_ptr<GuestConnection> connection;
  std::vector<Piece> pieces;
  int (*poll)(void *ctx) = nullptr;
  void (*release)(void *ctx) = nullptr;
  void *ctx = nullptr;
  std::atomic<int> device{kRunning}; // set once by ava_w_transfer_finished
  bool started = false;              // TransferBook::mu_

  // A read in segments through a ring of staging slots (ava_w_transfer_ring).
  struct Ring {
    uint64_t segment_bytes = 0;
    uint32_t slots = 0;
    uint32_t segments = 0;
    std::unique_ptr<std::atomic<int>[]> state; // per segment: kRunning, kDone, kFailed
    uint64_t bytes = 0;                        // of the destination
    std::atomic<uint32_t> sent{0};             // segments sent (written under TransferBook::mu_)
    std::atomic<uint32_t> advanced{0};         // segments whose slot was given back
    int (*poll)(void *ctx, uint32_t k) = nullptr;
    void (*advance)(void *ctx, uint32_t k) = nullptr;
    uint64_t length_of(uint32_t k) const {
      return std::min(segment_bytes, bytes - uint64_t{k} * segment_bytes);
    }
  };
  std::unique_ptr<Ring> ring;
  // The API reported the command failed, so it never touches the staging
  // again: the staging goes back to the pool now (a lent block: the
  // channel that maps it is let go). PoCL calls no completion callback for
  // a failed command, so the API's reference (and with it the staging, or
  // the guest's channel and its heap) would otherwise stay until the worker
  // exits.
  void drop_staging();
  // A lent block is the channel's memory: the channel stays mapped until the
  // API is done writing there, even if the guest left (drop_staging, or the
  // last reference, lets it go).
  std::shared_ptr<GuestConnection> lent_channel;
  // Staging that is the call's own message (ava_w_transfer_begin_in): held
  // until the API is done with it, charged to the pool (capacity bytes).
  std::shared_ptr<KeptMessage> kept_message;
  std::atomic<bool> staging_dropped{false};
  // Gives back the slots of segments [advanced, upto) (upto past the last:
  // every one left), each once, off every lock of the book.
  void advance_ring(uint32_t upto);
};

// The transfers of one guest whose bytes still have to go to it.
class TransferBook {
public:
  // A guest's staging limit: enough for several large transfers in flight.
  static constexpr uint64_t kStagingLimit = 4ull << 30;
  // DATA messages carry at most this many bytes, so the guest's reader
  // needs no buffer of a transfer's size.
  static constexpr uint64_t kChunkBytes = 4ull << 20;
  // Pieces per DATA message: each is one gather item on the channel.
  static constexpr uint32_t kMaxPieces = 256;

  static constexpr std::chrono::milliseconds kStagingPatience{10000};

  TransferBook() : pool_(std::make_shared<StagingPool>(kStagingLimit, kStagingPatience)) {}

  const std::shared_ptr<StagingPool> &pool() const { return pool_; }
  // Registers t under its token; false if the token is taken. Throws bad_alloc.
  bool open(const std::shared_ptr<Transfer> &t);
  // t's command was enqueued: it may be delivered from now on.
  void start(Transfer &t);
  void abort(uint64_t token);
  // Sends the DATA of every started transfer whose command is done (polled
  // now, off any lock). Called before every other message to the guest.
  void flush(GuestConnection &conn);
  // The command of token is done (from any thread): its DATA goes now.
  void deliver(GuestConnection &conn, uint64_t token);
  // A segment of token's ring is done (from any thread): what is ready goes now.
  void deliver_segments(GuestConnection &conn, uint64_t token);
  // Teardown: nothing more is sent; the API may still hold its staging.
  void drop_all();

  uint64_t delivered() const { return delivered_.load(std::memory_order_relaxed); }
  // Transfers whose staging was their call's own message (the session report).
  void note_in_place() { in_place_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t in_place() const { return in_place_.load(std::memory_order_relaxed); }

private:
  void send_locked(GuestConnection &conn, const Transfer &t, bool ok);
  // Sends pieces [0, n) of t's bytes in DATA messages, the last flagged END
  // when end (FAILED, with no pieces, unless ok).
  void send_pieces_locked(GuestConnection &conn, const Transfer &t, const Transfer::Piece *pieces,
                          size_t n, bool end, bool ok);
  // Sends the segments of a started ring that are ready, in order; ends the
  // transfer after its last one or a failed one. Returns the segment count
  // now sent (all of them once it ended), for Transfer::advance_ring.
  uint32_t pump_locked(GuestConnection &conn, const std::shared_ptr<Transfer> &t);
  // Polls the ring's segments from the first unsent on (off every lock).
  static void poll_ring(Transfer &t);
  // Removes and sends token's transfer if it is still here and started.
  void finish_locked(GuestConnection &conn, uint64_t token, const Transfer *expected, bool ok);

  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Transfer>> open_;
  std::atomic<uint64_t> started_{0}; // started transfers in open_
  std::atomic<uint64_t> delivered_{0};
  std::atomic<uint64_t> in_place_{0};
  const std::shared_ptr<StagingPool> pool_;
};

} // namespace ava
