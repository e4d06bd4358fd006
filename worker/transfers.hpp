// SPDX-License-Identifier: MIT
// Staged transfers on the worker (ava_w_transfer_*, worker/ava_worker_rt.h;
// the wire side is AVA_MSG_DATA in include/ava/wire.h). A non-blocking
// command runs on staging memory the worker owns, after its call returned;
// a read's bytes go to the guest once the command is done, and always before
// any other message that could show the guest it is done.
#pragma once

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

// What one guest may hold in staging at once, so that commands queued
// behind events that never complete cannot make the worker hold unbounded
// memory. Each transfer counts at least kMinCharge.
class StagingBudget {
public:
  static constexpr uint64_t kMinCharge = 4096;
  StagingBudget(uint64_t limit, std::chrono::milliseconds patience)
      : limit_(limit), patience_(patience) {}
  static uint64_t charge_of(uint64_t bytes) { return bytes < kMinCharge ? kMinCharge : bytes; }
  // Beyond the limit, waits (up to the patience) for staging to come free,
  // as commands finish: a run of large non-blocking writes then goes at the
  // device's pace instead of failing.
  bool take(uint64_t bytes);
  void give(uint64_t bytes);
  uint64_t used() const;

private:
  const uint64_t limit_;
  const std::chrono::milliseconds patience_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  uint64_t used_ = 0;
};

struct Transfer {
  enum : int { kRunning = 0, kDone = 1, kFailed = 2 };
  struct Piece {
    uint64_t dst, src, len;
  };
  // Takes staging (malloc'ed) and the budget's charge for it.
  Transfer(uint64_t token, uint64_t bytes, void *staging, std::shared_ptr<StagingBudget> budget,
           std::weak_ptr<GuestConnection> connection);
  ~Transfer();
  Transfer(const Transfer &) = delete;
  Transfer &operator=(const Transfer &) = delete;

  const uint64_t token; // 0: staging only, nothing goes to the guest
  const uint64_t bytes;
  void *const staging;
  uint8_t *source; // where pieces are read: the staging, or API memory
  uint64_t source_bytes;
  const std::shared_ptr<StagingBudget> budget;
  const std::weak_ptr<GuestConnection> connection;
  std::vector<Piece> pieces;
  int (*poll)(void *ctx) = nullptr;
  void (*release)(void *ctx) = nullptr;
  void *ctx = nullptr;
  std::atomic<int> device{kRunning}; // set once by ava_w_transfer_finished
  bool started = false;              // TransferBook::mu_
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

  TransferBook() : budget_(std::make_shared<StagingBudget>(kStagingLimit, kStagingPatience)) {}

  const std::shared_ptr<StagingBudget> &budget() const { return budget_; }
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
  // Teardown: nothing more is sent; the API may still hold its staging.
  void drop_all();

  uint64_t delivered() const { return delivered_.load(std::memory_order_relaxed); }

private:
  void send_locked(GuestConnection &conn, const Transfer &t, bool ok);
  // Removes and sends token's transfer if it is still here and started.
  void finish_locked(GuestConnection &conn, uint64_t token, const Transfer *expected, bool ok);

  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Transfer>> open_;
  std::atomic<uint64_t> started_{0}; // started transfers in open_
  std::atomic<uint64_t> delivered_{0};
  const std::shared_ptr<StagingBudget> budget_;
};

} // namespace ava
