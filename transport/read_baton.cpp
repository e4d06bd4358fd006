// SPDX-License-Identifier: MIT
#include "transport/read_baton.hpp"

#include <algorithm>

namespace ava {

// Every write of a member's holds_ happens with the baton's mutex held, and
// with the member's too (in that order) unless the member's own thread writes
// it: a member reads holds_ only on its own thread, under its mutex while it
// waits (so a hand-over from another thread takes that mutex to wake it), or
// without it while not enlisted. A worker shadow thread or guest caller takes
// and lets go of the baton around every call, so the two locks saved here are
// on the per-call path.
void ReadBaton::set_holder_locked(Member *m, const Member *self) {
  if (holder_ == Holder::Member && member_ != nullptr && member_ != m) {
    if (member_ == self) {
      member_->holds_ = false;
    } else {
      std::lock_guard lock(member_->mu_);
      member_->holds_ = false;
    }
  }
  member_ = m;
  if (m != nullptr) {
    holder_ = Holder::Member;
    if (m == self) {
      m->holds_ = true;
    } else {
      std::lock_guard lock(m->mu_);
      m->holds_ = true;
      m->cv_.notify_all();
    }
  }
}

void ReadBaton::free_locked(const Member *self) {
  set_holder_locked(nullptr, self);
  holder_ = Holder::Free;
  ++freed_;
  // Only a fallback in its untimed wait needs telling; one in its grace wait
  // looks again when the grace ends. So a member that frees and retakes the
  // baton call after call makes no system call here, except about once per
  // grace period.
  if (fallback_asleep_)
    fallback_cv_.notify_one();
}

bool ReadBaton::hand_on_locked(const Member *self) {
  if (waiting_.empty())
    return false;
  Member *next = waiting_.front();
  waiting_.pop_front();
  set_holder_locked(next, self);
  return true;
}

bool ReadBaton::try_take(Member &m) {
  std::lock_guard lock(mu_);
  if (holder_ != Holder::Free || closed_)
    return false;
  set_holder_locked(&m, &m);
  return true;
}

bool ReadBaton::enlist(Member &m) {
  std::lock_guard lock(mu_);
  if (holder_ == Holder::Free && !closed_) {
    // Freed since the caller last looked: nobody would hand it over now.
    set_holder_locked(&m, &m);
    return true;
  }
  if (std::find(waiting_.begin(), waiting_.end(), &m) == waiting_.end())
    waiting_.push_back(&m);
  return false;
}

bool ReadBaton::withdraw(Member &m) {
  std::lock_guard lock(mu_);
  auto it = std::find(waiting_.begin(), waiting_.end(), &m);
  if (it != waiting_.end())
    waiting_.erase(it);
  return holder_ == Holder::Member && member_ == &m;
}

void ReadBaton::pass(Member &m) {
  std::lock_guard lock(mu_);
  if (holder_ != Holder::Member || member_ != &m)
    return; // not ours: nothing to hand on
  if (!hand_on_locked(&m))
    free_locked(&m);
}

void ReadBaton::pass_to_fallback(Member &m) {
  std::lock_guard lock(mu_);
  if (holder_ != Holder::Member || member_ != &m)
    return;
  set_holder_locked(nullptr, &m);
  holder_ = Holder::Fallback;
  fallback_cv_.notify_one();
}

void ReadBaton::pass_to_reader(Member &m) {
  std::lock_guard lock(mu_);
  if (holder_ != Holder::Member || member_ != &m)
    return;
  if (hand_on_locked(&m))
    return;
  set_holder_locked(nullptr, &m);
  holder_ = Holder::Fallback;
  // In its grace wait or its untimed one: either predicate now holds.
  fallback_cv_.notify_one();
}

bool ReadBaton::fallback_take() {
  std::unique_lock lock(mu_);
  // Whether the baton was let go of since the fallback last looked: a member
  // busy with calls, which frees and retakes it around each one.
  bool busy = false;
  for (;;) {
    if (closed_)
      return false;
    if (holder_ == Holder::Fallback)
      return true;
    if (holder_ == Holder::Free || busy) {
      // Free now, or lately: take it only if it stays free for a whole grace.
      // The wait is not woken by a free or a retake (that would cost the
      // member a system call per call, and this thread a wake-up on a CPU
      // the busy threads need): the counter tells afterwards whether the
      // baton moved meanwhile. So a busy member costs one wake-up here per
      // grace, and the fallback takes a baton left free within two graces.
      const uint64_t period = freed_;
      fallback_cv_.wait_for(lock, grace_, [&] { return closed_ || holder_ == Holder::Fallback; });
      ++fallback_wakeups_;
      if (!closed_ &&
          (holder_ == Holder::Fallback || (holder_ == Holder::Free && freed_ == period))) {
        holder_ = Holder::Fallback;
        return true;
      }
      busy = freed_ != period;
      continue;
    }
    // A member has held it for a whole grace (it is reading, or the channel
    // is idle): nothing to do until it lets go, which tells this thread.
    fallback_asleep_ = true;
    fallback_cv_.wait(lock, [&] { return closed_ || holder_ != Holder::Member; });
    fallback_asleep_ = false;
    ++fallback_wakeups_;
    busy = true;
  }
}

uint64_t ReadBaton::fallback_wakeups() {
  std::lock_guard lock(mu_);
  return fallback_wakeups_;
}

bool ReadBaton::fallback_offer() {
  std::lock_guard lock(mu_);
  if (holder_ != Holder::Fallback)
    return true; // not the fallback's to offer
  return hand_on_locked(nullptr);
}

void ReadBaton::fallback_leave() {
  std::lock_guard lock(mu_);
  if (holder_ != Holder::Fallback)
    return;
  if (!hand_on_locked(nullptr))
    free_locked(nullptr);
}

void ReadBaton::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  fallback_cv_.notify_all();
}

} // namespace ava
