// SPDX-License-Identifier: MIT
// A guest's kept message buffers: buffers of large calls, kept once served
// so that the next such call lands on pages already touched (fresh memory
// costs a page fault and a zeroing per page, which halved the rate of large
// non-blocking writes). Shared (std::shared_ptr) so that a buffer a transfer
// keeps as its staging (ava_w_transfer_begin_in) comes back here from any
// thread, or is freed if the guest is gone.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/channel.hpp"

namespace ava {

class MsgScratch {
public:
  // At most kKept buffers of at least kMin bytes, each within the channel's
  // message limit (they were received through it); they go after an idle
  // second (release, from the shadow threads' idle waits).
  static constexpr size_t kKept = 2;
  static constexpr uint64_t kMin = 1ull << 20;

  // Takes buf's memory (leaving buf empty) when it is worth keeping.
  void give(MsgBuf &buf);
  // The largest kept buffer, or an empty one.
  MsgBuf take();
  bool has() const { return kept_.load(std::memory_order_relaxed) != 0; }
  void release();

private:
  std::mutex mu_;
  std::vector<MsgBuf> bufs_; // mu_
  std::atomic<size_t> kept_{0};
};

// A call's message buffer kept beyond the call for a transfer whose staging
// lies in it: the call and each such transfer hold it; the last to let go
// gives it back to its guest's scratch (or frees it, the guest gone).
struct KeptMessage {
  KeptMessage(MsgBuf b, std::weak_ptr<MsgScratch> h) : buf(std::move(b)), home(std::move(h)) {}
  ~KeptMessage();
  KeptMessage(const KeptMessage &) = delete;
  KeptMessage &operator=(const KeptMessage &) = delete;
  MsgBuf buf;
  const std::weak_ptr<MsgScratch> home;
};

} // namespace ava
