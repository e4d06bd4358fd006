// SPDX-License-Identifier: MIT
#include "transport/shm_region.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace ava::detail {
namespace {

constexpr uint32_t kKnownFeatures = AVA_REGION_F_FUTEX | AVA_REGION_F_DOORBELL;

std::string n(uint64_t v) {
  return std::to_string(v);
}

Status refuse(std::string why) {
  return Status::error(AVA_E_PROTO, std::move(why));
}

struct Area {
  const char *name;
  uint64_t off;
  uint64_t size;
};

bool overlaps(const Area &a, const Area &b) {
  if (a.size == 0 || b.size == 0)
    return false;
  return a.off < b.off + b.size && b.off < a.off + a.size;
}

bool indices_zero(const ava_ring_ctl &ctl) {
  return ctl.head == 0 && ctl.tail == 0;
}

bool ctl_is_zero(const ava_ring_ctl &ctl) {
  return ctl.head == 0 && ctl.tail == 0 && ctl.sleeping == 0 && ctl.c_sleeping == 0;
}

// The region is followed by one page of private, read-only zeros: the heap is
// last, and a buffer there that the peer leaves unterminated (or changes
// after it was checked) then ends a string scan in that page instead of
// running off the mapping.
Status map_fd(int fd, uint64_t size, ShmMapping *map, uint64_t offset = 0) {
  const long page = ::sysconf(_SC_PAGESIZE);
  const uint64_t guard = page > 0 ? static_cast<uint64_t>(page) : 4096;
  void *area = ::mmap(nullptr, size + guard, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED)
    return Status::error(AVA_E_NOMEM, "mmap of " + n(size) + " bytes: " + errno_text(errno));
  void *p = ::mmap(area, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                   static_cast<off_t>(offset));
  if (p == MAP_FAILED) {
    const int err = errno;
    ::munmap(area, size + guard);
    return Status::error(AVA_E_NOMEM, "mmap of " + n(size) + " bytes: " + errno_text(err));
  }
  *map = ShmMapping(static_cast<uint8_t *>(p), size, guard);
  return Status::ok();
}

} // namespace

void populate_rings(const ShmMapping &map, const RegionLayout &layout) {
#ifdef MADV_POPULATE_WRITE
  // Without this the first lap around each ring takes a page fault per page
  // on both sides (the first one to touch a page also zeroes it): measured at
  // ~15 % of async call time with 64 MiB rings. An optimisation only: a
  // kernel without MADV_POPULATE_WRITE (before 5.14) faults as before.
  if (layout.heap_off > layout.cmd_off && layout.heap_off <= map.size())
    (void)::madvise(map.base() + layout.cmd_off, layout.heap_off - layout.cmd_off,
                    MADV_POPULATE_WRITE);
#else
  (void)map;
  (void)layout;
#endif
}

Status map_region_fd(int fd, uint64_t offset, uint64_t size, ShmMapping *map) {
  return map_fd(fd, size, map, offset);
}

Status map_region_fd_except(int fd, uint64_t size, uint64_t hole_off, uint64_t hole_size,
                            ShmMapping *map) {
  if (hole_off == 0 || hole_off % AVA_REGION_ALIGN != 0 || hole_size % AVA_REGION_ALIGN != 0 ||
      hole_size == 0 || hole_off > size || hole_size > size - hole_off)
    return refuse("a hole of " + n(hole_size) + " bytes at " + n(hole_off) +
                  " does not fit a region of " + n(size) + " bytes");
  const long page = ::sysconf(_SC_PAGESIZE);
  const uint64_t guard = page > 0 ? static_cast<uint64_t>(page) : 4096;
  void *area = ::mmap(nullptr, size + guard, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED)
    return Status::error(AVA_E_NOMEM, "mmap of " + n(size) + " bytes: " + errno_text(errno));
  auto *base = static_cast<uint8_t *>(area);
  ShmMapping out(base, size, guard); // unmaps everything on the error paths below
  const uint64_t end = hole_off + hole_size;
  // The guard page of map_fd: readable zeros after the heap.
  if (::mprotect(base + size, guard, PROT_READ) != 0)
    return Status::error(AVA_E_NOMEM, "mprotect: " + errno_text(errno));
  if (::mmap(base, hole_off, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
    return Status::error(AVA_E_NOMEM, "mmap of " + n(hole_off) + " bytes: " + errno_text(errno));
  if (end < size && ::mmap(base + end, size - end, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                           fd, static_cast<off_t>(end)) == MAP_FAILED)
    return Status::error(AVA_E_NOMEM, "mmap of " + n(size - end) + " bytes at " + n(end) + ": " +
                                          errno_text(errno));
  *map = std::move(out);
  return Status::ok();
}

bool shm_ring_size_ok(uint64_t v) {
  const bool power_of_two = v != 0 && (v & (v - 1)) == 0;
  return power_of_two && v >= AVA_RING_MIN_SIZE && v <= AVA_RING_MAX_SIZE;
}

ShmMapping::ShmMapping(ShmMapping &&other) noexcept
    : base_(std::exchange(other.base_, nullptr)), size_(std::exchange(other.size_, 0)),
      guard_(std::exchange(other.guard_, 0)) {}

ShmMapping &ShmMapping::operator=(ShmMapping &&other) noexcept {
  if (this != &other) {
    reset();
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
    guard_ = std::exchange(other.guard_, 0);
  }
  return *this;
}

void ShmMapping::reset() {
  if (base_ != nullptr)
    ::munmap(base_, size_ + guard_);
  base_ = nullptr;
  size_ = 0;
  guard_ = 0;
}

Status create_region(const ShmOptions &options, UniqueFd *fd, ShmMapping *map,
                     RegionLayout *layout) {
  Status st = check_shm_options(options);
  if (!st.is_ok())
    return st;
  RegionLayout l;
  l.cmd_off = AVA_REGION_HDR_SIZE;
  l.cmd_size = options.ring_bytes;
  l.reply_off = l.cmd_off + l.cmd_size;
  l.reply_size = options.ring_bytes;
  l.heap_off = l.reply_off + l.reply_size;
  l.heap_size = options.heap_bytes;
  l.total_size = l.heap_off + l.heap_size;

  UniqueFd memfd(::memfd_create("ava-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!memfd.valid())
    return Status::error(AVA_E_NOMEM, "memfd_create: " + errno_text(errno));
  if (::ftruncate(memfd.get(), static_cast<off_t>(l.total_size)) != 0)
    return Status::error(AVA_E_NOMEM, "sizing the shared region to " + n(l.total_size) +
                                          " bytes: " + errno_text(errno));
  // The worker refuses a region it could be made to fault on by a later ftruncate.
  if (::fcntl(memfd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    return Status::error(AVA_E_NOMEM, "sealing the shared region: " + errno_text(errno));
  ShmMapping mapping;
  st = map_fd(memfd.get(), l.total_size, &mapping);
  if (!st.is_ok())
    return st;

  ava_region_hdr *hdr = mapping.header();
  hdr->magic = AVA_REGION_MAGIC;
  hdr->version = AVA_REGION_VERSION;
  hdr->features = AVA_REGION_F_FUTEX;
  hdr->total_size = l.total_size;
  hdr->cmd_off = l.cmd_off;
  hdr->cmd_size = l.cmd_size;
  hdr->reply_off = l.reply_off;
  hdr->reply_size = l.reply_size;
  hdr->heap_off = l.heap_off;
  hdr->heap_size = l.heap_size;
  hdr->guest_pid = static_cast<uint64_t>(::getpid());
  // Pairs with the acquire loads of state on the worker side (its header
  // copy is read after the fd arrives): a side that sees READY sees the
  // fields above.
  __atomic_store_n(&hdr->state, AVA_REGION_READY, __ATOMIC_RELEASE);
  populate_rings(mapping, l);

  *fd = std::move(memfd);
  *map = std::move(mapping);
  *layout = l;
  return Status::ok();
}

Status check_region_header(const ava_region_hdr &hdr, uint64_t file_size, RegionLayout *layout,
                           const RegionExpect &expect) {
  if (hdr.magic != AVA_REGION_MAGIC)
    return refuse("bad region magic " + n(hdr.magic));
  if (hdr.version != AVA_REGION_VERSION)
    return refuse("region version " + n(hdr.version) + ", this side speaks " +
                  n(AVA_REGION_VERSION));
  if ((hdr.features & ~kKnownFeatures) != 0 || hdr.features != expect.feature)
    return refuse("region features " + n(hdr.features) + " are not " +
                  (expect.feature == AVA_REGION_F_FUTEX ? "futex" : "doorbell") + " waiting (" +
                  n(expect.feature) + ")");
  const bool state_ok =
      hdr.state == AVA_REGION_READY ||
      (expect.attached_ok && hdr.state == (AVA_REGION_READY | AVA_REGION_ATTACHED));
  if (!state_ok)
    return refuse("region state " + n(hdr.state) +
                  (expect.attached_ok ? " is not READY (broken or closed)"
                                      : " is not just READY (already attached, "
                                        "broken or closed)"));
  if (hdr.total_size != file_size)
    return refuse("region total_size " + n(hdr.total_size) + " differs from its file size " +
                  n(file_size));
  if (!shm_ring_size_ok(hdr.cmd_size) || !shm_ring_size_ok(hdr.reply_size))
    return refuse("ring sizes " + n(hdr.cmd_size) + " and " + n(hdr.reply_size) +
                  " must be powers of two between " + n(AVA_RING_MIN_SIZE) + " and " +
                  n(AVA_RING_MAX_SIZE));
  if (hdr.heap_size % AVA_REGION_ALIGN != 0 || hdr.heap_size > kShmMaxHeapBytes)
    return refuse("heap size " + n(hdr.heap_size) + " is not a multiple of " + n(AVA_REGION_ALIGN) +
                  " up to " + n(kShmMaxHeapBytes));
  const Area areas[] = {{"command ring", hdr.cmd_off, hdr.cmd_size},
                        {"reply ring", hdr.reply_off, hdr.reply_size},
                        {"heap", hdr.heap_off, hdr.heap_size}};
  for (const Area &a : areas) {
    if (a.off % AVA_REGION_ALIGN != 0 || a.off < AVA_REGION_HDR_SIZE)
      return refuse(std::string(a.name) + " offset " + n(a.off) + " is not a multiple of " +
                    n(AVA_REGION_ALIGN) + " after the header");
    if (a.off > file_size || a.size > file_size - a.off)
      return refuse(std::string(a.name) + " [" + n(a.off) + ", +" + n(a.size) +
                    ") lies outside the " + n(file_size) + "-byte region");
  }
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = i + 1; j < 3; ++j)
      if (overlaps(areas[i], areas[j]))
        return refuse(std::string(areas[i].name) + " and " + areas[j].name + " overlap");
  for (uint8_t b : hdr.reserved)
    if (b != 0)
      return refuse("reserved header bytes are not zero");
  const bool fresh = expect.attached_ok ? indices_zero(hdr.cmd) && indices_zero(hdr.reply)
                                        : ctl_is_zero(hdr.cmd) && ctl_is_zero(hdr.reply);
  if (!fresh && !expect.in_use_ok)
    return refuse("ring indices are not zero at hand-over");
  layout->total_size = hdr.total_size;
  layout->cmd_off = hdr.cmd_off;
  layout->cmd_size = hdr.cmd_size;
  layout->reply_off = hdr.reply_off;
  layout->reply_size = hdr.reply_size;
  layout->heap_off = hdr.heap_off;
  layout->heap_size = hdr.heap_size;
  return Status::ok();
}

Status check_mapped_region(const ShmMapping &map, const RegionExpect &expect,
                           RegionLayout *layout) {
  ava_region_hdr copy;
  std::memcpy(&copy, map.base(), sizeof copy);
  return check_region_header(copy, map.size(), layout, expect);
}

Status attach_region(int fd, ShmMapping *map, RegionLayout *layout) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return refuse("fstat of the region: " + errno_text(errno));
  if (!S_ISREG(st.st_mode))
    return refuse("the region is not a regular file (memfd)");
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0)
    return refuse("the region is not sealed against shrinking (F_SEAL_SHRINK)");
  if (st.st_size < static_cast<off_t>(sizeof(ava_region_hdr)))
    return refuse("the region file has only " + n(static_cast<uint64_t>(st.st_size)) + " bytes");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  // Read the header with pread, not through a mapping, so that nothing of a
  // bogus size gets mapped before the checks.
  ava_region_hdr copy;
  const ssize_t got = ::pread(fd, &copy, sizeof copy, 0);
  if (got != static_cast<ssize_t>(sizeof copy))
    return refuse("cannot read the region header: " +
                  (got < 0 ? errno_text(errno) : std::string("short read")));
  RegionLayout l;
  Status s = check_region_header(copy, file_size, &l);
  if (!s.is_ok())
    return s;
  ShmMapping mapping;
  s = map_fd(fd, file_size, &mapping);
  if (!s.is_ok())
    return s;
  ava_region_hdr *hdr = mapping.header();
  __atomic_store_n(&hdr->worker_pid, static_cast<uint64_t>(::getpid()), __ATOMIC_RELAXED);
  // Pairs with the acquire loads of state on the guest side: whoever sees
  // ATTACHED sees worker_pid.
  __atomic_fetch_or(&hdr->state, AVA_REGION_ATTACHED, __ATOMIC_RELEASE);
  populate_rings(mapping, l);
  *map = std::move(mapping);
  *layout = l;
  return Status::ok();
}

} // namespace ava::detail
