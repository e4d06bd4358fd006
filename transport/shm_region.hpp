// SPDX-License-Identifier: MIT
// The shared-memory region of include/ava/ring.h as a local memfd: creating
// and initialising it (guest), checking and mapping one received from a peer
// (worker), and the mapping's lifetime.
#pragma once

#include <cstdint>

#include "ava/ring.h"
#include "transport/channel.hpp"
#include "transport/fd_util.hpp"
#include "transport/shm.hpp"

namespace ava::detail {

// Upper bound of a heap either side accepts (address space, not memory).
constexpr uint64_t kShmMaxHeapBytes = uint64_t{1} << 40;

// A power of two within ring.h's bounds.
bool shm_ring_size_ok(uint64_t bytes);

// A MAP_SHARED mapping of a whole region; unmapped on destruction.
class ShmMapping {
public:
  ShmMapping() = default;
  // guard: bytes mapped after the region (read-only zeros) that reset() also unmaps.
  ShmMapping(uint8_t *base, uint64_t size, uint64_t guard = 0)
      : base_(base), size_(size), guard_(guard) {}
  ShmMapping(ShmMapping &&other) noexcept;
  ShmMapping &operator=(ShmMapping &&other) noexcept;
  ShmMapping(const ShmMapping &) = delete;
  ShmMapping &operator=(const ShmMapping &) = delete;
  ~ShmMapping() { reset(); }

  uint8_t *base() const { return base_; }
  uint64_t size() const { return size_; }
  ava_region_hdr *header() const { return reinterpret_cast<ava_region_hdr *>(base_); }
  void reset();

private:
  uint8_t *base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t guard_ = 0;
};

// The geometry both sides use: a private copy made once from a checked
// header, so that later writes to the shared header change nothing.
struct RegionLayout {
  uint64_t total_size = 0;
  uint64_t cmd_off = 0;
  uint64_t cmd_size = 0;
  uint64_t reply_off = 0;
  uint64_t reply_size = 0;
  uint64_t heap_off = 0;
  uint64_t heap_size = 0;
};

// Maps size bytes of fd from offset (page aligned) shared, followed by one
// private read-only page of zeros (see shm_region.cpp).
Status map_region_fd(int fd, uint64_t offset, uint64_t size, ShmMapping *map);
// The same from offset 0, except that [hole_off, hole_off + hole_size) (page
// aligned) stays inaccessible: a policed /dev/ava slot's command ring, which
// only ava.ko may map.
Status map_region_fd_except(int fd, uint64_t size, uint64_t hole_off, uint64_t hole_size,
                            ShmMapping *map);

// Maps in both rings of a mapped region at once (the guest's call allocates
// their pages), so that no side faults on its first lap.
void populate_rings(const ShmMapping &map, const RegionLayout &layout);

// Guest side: a memfd of the options' sizes (sealed against shrinking and
// growing), mapped, with its header filled in and marked READY.
Status create_region(const ShmOptions &options, UniqueFd *fd, ShmMapping *map,
                     RegionLayout *layout);

// What a side expects of a header it did not write itself.
struct RegionExpect {
  uint32_t feature = AVA_REGION_F_FUTEX; // how the sides wait: exactly this feature bit
  // A guest mapping its /dev/ava slot may find the worker attached already
  // (ATTACHED, sleeping words set); indices must still be zero.
  bool attached_ok = false;
  // A worker attaching to a /dev/ava slot may find commands already queued:
  // the guest starts sending as soon as ava.ko gave it the slot. The indices
  // are then checked as the rings are used, like any later value.
  bool in_use_ok = false;
};

// Checks a private copy of a peer's header against the size of its file;
// the message says which rule failed.
Status check_region_header(const ava_region_hdr &hdr, uint64_t file_size, RegionLayout *layout,
                           const RegionExpect &expect = {});

// Checks the header of a region mapped shared with a peer that may rewrite
// it at any time (a /dev/ava slot, seen from either side): on a private copy,
// against the mapping's size.
Status check_mapped_region(const ShmMapping &map, const RegionExpect &expect, RegionLayout *layout);

// Worker side: checks the file behind fd (a sealed regular file), maps it,
// checks a copy of its header, then records worker_pid and sets ATTACHED.
Status attach_region(int fd, ShmMapping *map, RegionLayout *layout);

} // namespace ava::detail
