// SPDX-License-Identifier: MIT
// Who reads a channel, when several threads may and none may poll.
//
// A channel has one reader at a time: the thread holding the baton, which
// blocks in recv() without a timeout and routes what arrives. Two kinds of
// thread want it:
//   - members: threads that would rather read for themselves (a guest thread
//     waiting for its reply, an idle worker shadow thread waiting for its next
//     call), because reading your own message saves a hand-over, i.e. a
//     wake-up each way;
//   - one fallback (the guest's background reader, the worker's session
//     thread), which reads whenever no member does, so that callbacks, calls
//     of other threads and the peer's death are seen while every member is
//     busy.
//
// A member that cannot take the baton enlists and sleeps on its own condition
// variable; whoever lets go of the baton hands it to the oldest enlisted
// member directly. With nobody enlisted it is left free: a member usually
// takes it back a moment later (between two calls), so the fallback takes it
// only once it has stayed free for a grace period. The fallback sleeps
// without a timeout while a member has held the baton for a whole grace and
// is told when it becomes free, so an idle channel (a holder blocked in recv)
// costs no wake-ups; while members free and retake it (busy with calls) the
// fallback looks once per grace instead of being told of every free, so a
// busy channel costs one fallback wake-up per grace period.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>

namespace ava {

class ReadBaton {
public:
  // A thread that may hold the baton, waiting on its own mutex and condition
  // variable (which the member's other wake-ups share: a reply routed to it, a
  // call queued to it).
  class Member {
  public:
    Member(std::mutex &mu, std::condition_variable &cv) : mu_(mu), cv_(cv) {}
    Member(const Member &) = delete;
    Member &operator=(const Member &) = delete;
    // Whether the baton is this member's. Read it under the member's mutex
    // (in its wait predicate), or from the member's own thread when it is not
    // enlisted.
    bool holds() const { return holds_; }

  private:
    friend class ReadBaton;
    std::mutex &mu_;
    std::condition_variable &cv_;
    bool holds_ = false; // written under the baton's mutex and mu_
  };

  // The baton starts with the fallback.
  explicit ReadBaton(std::chrono::microseconds grace) : grace_(grace) {}
  ReadBaton(const ReadBaton &) = delete;
  ReadBaton &operator=(const ReadBaton &) = delete;

  // Members. None of these may be called with the member's own mutex held
  // (the baton's mutex comes first).
  // Takes the baton if it is free.
  bool try_take(Member &m);
  // Asks for the baton: the next holder to let go hands it over (m.holds()
  // becomes true and m's condition variable is notified). True if it was
  // free, and m took it at once.
  bool enlist(Member &m);
  // Stops asking. True if the baton was handed over meanwhile: m holds it.
  bool withdraw(Member &m);
  // The holder m lets go: to the oldest enlisted member, or left free.
  void pass(Member &m);
  // The holder m gives it to the fallback directly (it must not read now).
  void pass_to_fallback(Member &m);
  // As pass, but with nobody enlisted the fallback reads at once instead of
  // after the grace: for when a message nobody waits for is expected (a
  // callback), which nobody would read meanwhile.
  void pass_to_reader(Member &m);

  // The fallback. Blocks until the baton is the fallback's: handed to it, or
  // free for the grace period. False once closed.
  bool fallback_take();
  // The fallback holds the baton: hands it to an enlisted member if there is
  // one (true), else keeps it.
  bool fallback_offer();
  // As fallback_offer, but with nobody enlisted the baton is left free rather
  // than kept: for when a member is about to want it (the fallback has just
  // routed a message a member waits for), so that it reads for itself again.
  void fallback_leave();

  // Wakes the fallback for good (the channel is closing).
  void close();

  // How often the fallback woke in fallback_take (for tests and counters).
  uint64_t fallback_wakeups();

private:
  // Baton mutex held: makes m (or nobody) the member holding the baton.
  // self is the member whose own thread calls (or nullptr): its holds_ is
  // written without its mutex, which only guards against a lost wake-up of
  // a member waiting on its condition variable, and self is not waiting.
  void set_holder_locked(Member *m, const Member *self);
  // Baton mutex held: hands the baton to the oldest enlisted member, if any.
  bool hand_on_locked(const Member *self);
  void free_locked(const Member *self);

  enum class Holder { Free, Fallback, Member };

  const std::chrono::microseconds grace_;
  std::mutex mu_;
  std::condition_variable fallback_cv_;
  Holder holder_ = Holder::Fallback;
  Member *member_ = nullptr;     // the holder when holder_ == Member
  std::deque<Member *> waiting_; // enlisted, oldest first
  uint64_t freed_ = 0;           // times the baton was left free
  bool fallback_asleep_ = false; // in its untimed wait: tell it when the baton is freed
  uint64_t fallback_wakeups_ = 0;
  bool closed_ = false;
};

} // namespace ava
