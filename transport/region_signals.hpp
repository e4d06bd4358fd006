// SPDX-License-Identifier: MIT
// How the two sides of a ring.h region sleep and wake each other, and how a
// side learns that its peer is gone. The ring logic (ShmChannel) is the same
// for every carrier; only this differs:
//   local memfd (shm)   futexes on the sleeping words; the bootstrap socket
//                       at EOF means the peer is gone
//   /dev/ava (kmod)     ava.ko's AVA_IOC_WAIT / AVA_IOC_KICK (guest side)
//   ivshmem host        eventfds of the ivshmem server protocol; the slot
//                       table says whether the guest still holds the slot
#pragma once

#include <cstdint>
#include <memory>

#include <sys/uio.h>

#include "transport/channel.hpp"
#include "transport/fd_util.hpp"

struct ava_slot_entry;

namespace ava::detail {

class RegionSignals {
public:
  virtual ~RegionSignals() = default;
  // Sleeps at most ms (< 0: until woken) while *word is 1 (the caller stored 1
  // and re-checked after a full fence). May return early on any wake-up; callers re-check.
  // Returns false when the time ran out: only then is peer_gone() asked, so
  // that a wake-up costs no extra system call.
  virtual bool sleep(uint32_t *word, int ms) = 0;
  // Wakes the peer sleeping on word; the caller already stored 0 there.
  virtual void wake_peer(uint32_t *word) = 0;
  // Wakes threads of this side sleeping on word (shutdown, break).
  virtual void wake_self(uint32_t *word) = 0;
  // Whether the peer is known to be gone; called after sleeps that found
  // nothing, so a cheap check (a poll, a load) is fine.
  virtual bool peer_gone() = 0;
  // True when the peer's death wakes every sleeper by itself: sleep(word, -1)
  // then sleeps until a wake-up, with no timeout to look at peer_gone().
  virtual bool wakes_on_peer_death() const { return false; }
  // Called once when this side shuts the channel down.
  virtual void shutdown() {}
  // Traffic of this side, for carriers that report statistics.
  virtual void note_received(uint64_t /*bytes*/) {}
  virtual void note_sent(uint64_t /*bytes*/) {}
  virtual void note_error() {}
};

// A carrier that writes the command ring itself (a policed /dev/ava slot:
// ava.ko checks every message against the spec's table and copies it in).
class CommandSubmitter {
public:
  virtual ~CommandSubmitter() = default;
  // Hands over the whole messages of a gather list of total bytes, in order,
  // until one is refused or all are taken. *taken: bytes taken, the refused
  // message included; *refused: its AVA_E_* status, or 0.
  virtual Status submit(const struct iovec *iov, int iovcnt, uint64_t total, uint64_t *taken,
                        int *refused) = 0;
};

// The local shm channel's signals: shared futexes, and the bootstrap unix
// socket kept open as the liveness signal.
std::unique_ptr<RegionSignals> make_futex_signals(UniqueFd bootstrap_socket);

// The worker's signals on ivshmem slot entry (guest claim gen): sleeps on
// wait_efd (kicked by the guest's doorbell, one for every sleeper of the
// slot) and interrupts the guest through irq_efd.
std::unique_ptr<RegionSignals> make_ivshmem_host_signals(UniqueFd wait_efd, UniqueFd irq_efd,
                                                         ava_slot_entry *entry, uint32_t gen);

} // namespace ava::detail
