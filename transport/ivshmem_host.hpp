// SPDX-License-Identifier: MIT
// The host side of ava over ivshmem (include/ava/ivshmem.h): the VM's shared
// memory with its device header and slot table, the messages of QEMU's
// ivshmem server protocol (docs/specs/ivshmem-spec.txt: Debian ships no
// server, so `ava vmhost` is one), and the worker's channel on one slot.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ava/ivshmem.h"
#include "transport/channel.hpp"
#include "transport/fd_util.hpp"
#include "transport/shm_region.hpp"

namespace ava {

struct IvshmemGeometry {
  uint32_t nslots = 4;
  uint64_t cmd_size = uint64_t{1} << 20; // per slot; powers of two
  uint64_t reply_size = uint64_t{1} << 20;
  uint64_t heap_size = uint64_t{24} << 20; // per slot; multiple of 4096
};

// Checks counts and sizes; the message names the bad one.
Status check_ivshmem_geometry(const IvshmemGeometry &g);

// The VM's shared memory, owned by the host: a memfd (or, with path, a file
// created there, e.g. under /dev/shm, so that tests can look at it) whose
// size is a power of two (QEMU maps it as a PCI BAR), with the device header
// written (host_state UP, host_peer) and the slot table zeroed.
class IvshmemMemory {
public:
  static Status create(const IvshmemGeometry &g, uint32_t host_peer, const std::string &path,
                       std::unique_ptr<IvshmemMemory> *out);
  ~IvshmemMemory();
  IvshmemMemory(const IvshmemMemory &) = delete;
  IvshmemMemory &operator=(const IvshmemMemory &) = delete;

  int fd() const { return fd_.get(); }
  const ava_dev_hdr &header() const { return hdr_; } // the host's own copy
  ava_slot_entry *slot_entry(uint32_t i) const;
  uint8_t *slot_base(uint32_t i) const;
  uint64_t slot_offset(uint32_t i) const { return hdr_.slots_off + i * hdr_.slot_size; }
  void set_host_state(uint32_t state);
  // Zeroes the slot table (a new VM connected).
  void reset_table();
  // In a forked worker, after the original descriptor was closed: fd is a
  // duplicate of it.
  void adopt_fd_after_fork(int fd) {
    (void)fd_.release();
    fd_ = detail::UniqueFd(fd);
  }
  // In a forked worker of slot i: the whole VM's memory goes, only slot i's
  // table entry page stays mapped (slot_entry works for i only; slot_base and
  // the header's host_state not at all). The fd stays until drop_fd(), for
  // ivshmem_slot_channel to map the slot itself.
  Status keep_only_slot(uint32_t i);
  // Closes the memory's fd: nothing more of it can be mapped.
  void drop_fd() { fd_.reset(); }
  // Zeroes bytes [offset, offset + length) of the memory, which must be page
  // aligned (the pages go back to the system; every mapping reads zeros).
  Status scrub(uint64_t offset, uint64_t length);

private:
  IvshmemMemory() = default;
  detail::UniqueFd fd_;
  uint8_t *base_ = nullptr;
  uint64_t size_ = 0;
  uint8_t *table_ = nullptr; // only_slot_'s table entry page, after keep_only_slot
  uint32_t only_slot_ = 0;
  ava_dev_hdr hdr_{};
  std::string path_; // unlinked on destruction
};

// One server-protocol message: a little-endian int64, with fd (>= 0) as
// SCM_RIGHTS. MSG_NOSIGNAL; a peer that is gone is AVA_E_CLOSED.
Status ivshmem_send(int sock, int64_t value, int fd);

// The worker side of slot `index` (guest claim `gen`): maps the slot from the
// memory's fd, checks the region ava.ko wrote, marks it ATTACHED, and waits
// on wait_efd (the host's eventfd for the slot's vector) and interrupts the
// guest through irq_efd (the guest's eventfd for the same vector). The slot
// entry's host line gets the traffic counters. Takes ownership of both fds.
Status ivshmem_slot_channel(const IvshmemMemory &mem, uint32_t index, uint32_t gen,
                            detail::UniqueFd wait_efd, detail::UniqueFd irq_efd,
                            std::unique_ptr<Channel> *out);

} // namespace ava
