// SPDX-License-Identifier: MIT
// The host's view of a VM's ava device memory (include/ava/ivshmem.h), from
// the file `ava vmhost --shm-path` creates: slot states for the checks, and
// a way to corrupt a slot's rings on purpose.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ava/ivshmem.h"

class VmShm {
public:
  explicit VmShm(const std::string &path);
  ~VmShm();
  VmShm(const VmShm &) = delete;
  VmShm &operator=(const VmShm &) = delete;

  bool ok() const { return base_ != nullptr; }
  const std::string &error() const { return error_; }
  unsigned nslots() const;
  ava_slot_entry slot(unsigned i) const; // a snapshot
  // Slots a guest process holds and a worker serves right now.
  std::vector<unsigned> serving_slots() const;
  // Fills the slot's reply ring with garbage and publishes it: the guest
  // library must find the ring corrupt and fail its call.
  void scribble_reply_ring(unsigned i);
  // Fills slot i past its region header page with byte: what a host that
  // did not scrub a released slot (or a previous VM) would leave there.
  void fill_slot(unsigned i, unsigned char byte);

private:
  unsigned char *at(size_t offset) const { return base_ + offset; }
  unsigned char *base_ = nullptr;
  size_t size_ = 0;
  std::string error_;
};
