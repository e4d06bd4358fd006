// SPDX-License-Identifier: MIT
#include "worker/msg_scratch.hpp"

#include <algorithm>
#include <new>

namespace ava {

MsgBuf MsgScratch::take() {
  if (!has())
    return {};
  std::lock_guard lock(mu_);
  if (bufs_.empty())
    return {};
  auto largest = std::max_element(bufs_.begin(), bufs_.end(), [](const MsgBuf &a, const MsgBuf &b) {
    return a.capacity() < b.capacity();
  });
  MsgBuf buf = std::move(*largest);
  bufs_.erase(largest);
  kept_.store(bufs_.size(), std::memory_order_relaxed);
  return buf;
}

void MsgScratch::give(MsgBuf &buf) {
  if (buf.capacity() < kMin)
    return;
  MsgBuf dropped; // freed outside the lock
  std::lock_guard lock(mu_);
  try {
    if (bufs_.size() < kKept) {
      bufs_.push_back(std::move(buf));
    } else {
      auto smallest =
          std::min_element(bufs_.begin(), bufs_.end(), [](const MsgBuf &a, const MsgBuf &b) {
            return a.capacity() < b.capacity();
          });
      if (smallest->capacity() < buf.capacity()) {
        dropped = std::move(*smallest);
        *smallest = std::move(buf);
      }
    }
  } catch (const std::bad_alloc &) {
    // Not kept: it stays buf's.
  }
  kept_.store(bufs_.size(), std::memory_order_relaxed);
}

void MsgScratch::release() {
  std::vector<MsgBuf> gone; // freed after the lock
  std::lock_guard lock(mu_);
  gone.swap(bufs_);
  kept_.store(0, std::memory_order_relaxed);
}

KeptMessage::~KeptMessage() {
  if (std::shared_ptr<MsgScratch> scratch = home.lock())
    scratch->give(buf);
}

} // namespace ava
