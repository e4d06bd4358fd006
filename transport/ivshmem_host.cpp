// SPDX-License-Identifier: MIT
#include "transport/ivshmem_host.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "transport/shm.hpp"
#include "transport/shm_channel.hpp"

namespace ava {
namespace {

using detail::RegionSignals;
using detail::UniqueFd;

std::string n(uint64_t v) {
  return std::to_string(v);
}

std::string errno_text(int err) {
  return std::strerror(err);
}

uint64_t round_up_pow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v)
    p <<= 1;
  return p;
}

// The worker's waits and wake-ups on one slot. Several threads may sleep at
// once (the reader waiting for commands, a sender waiting for room in the
// reply ring), but the guest has one doorbell for all of them, and reading
// the eventfd consumes a kick: a reader that drained it used to leave the
// sender asleep until its slice ended, 50 ms per ring's worth of a large
// reply (kmod reads of 16 MiB ran at 1/25 of 1 MiB's rate). So one sleeper
// at a time polls the eventfd for all (the leader); the others wait on a
// condition variable for its news, and one of them takes over the polling
// when the leader's own sleep ends first. A guest that wakes a sleeper clears
// its word before it kicks, so a sleeper whose word is 0 was woken even when
// another thread read the kick before this one slept.
class IvshmemHostSignals final : public RegionSignals {
public:
  IvshmemHostSignals(UniqueFd wait_efd, UniqueFd irq_efd, ava_slot_entry *entry, uint32_t gen)
      : wait_efd_(std::move(wait_efd)), irq_efd_(std::move(irq_efd)), entry_(entry), gen_(gen) {}

  bool sleep(uint32_t *word, int ms) override {
    using Clock = std::chrono::steady_clock;
    const bool forever = ms < 0;
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(forever ? 0 : ms);
    std::unique_lock lock(mu_);
    const uint64_t seen = kicks_;
    for (;;) {
      if (kicks_ != seen || (word != nullptr && __atomic_load_n(word, __ATOMIC_RELAXED) == 0))
        return true;
      if (!polling_) {
        polling_ = true;
        int left = -1;
        if (!forever) {
          const auto rest = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
          left = static_cast<int>(std::max<int64_t>(rest.count(), 0));
        }
        lock.unlock();
        const bool kicked = poll_kick(left);
        lock.lock();
        polling_ = false;
        if (kicked)
          ++kicks_;
        // The news, or the polling left to whoever still sleeps.
        followers_.notify_all();
        return kicks_ != seen;
      }
      if (forever) {
        followers_.wait(lock);
      } else if (followers_.wait_until(lock, deadline) == std::cv_status::timeout) {
        return kicks_ != seen;
      }
    }
  }
  void wake_peer(uint32_t *) override { signal(irq_efd_.get()); }
  void wake_self(uint32_t *) override { signal(wait_efd_.get()); }
  bool peer_gone() override {
    // Pairs with ava.ko's release stores of guest_gen and guest_state.
    const uint32_t state = __atomic_load_n(&entry_->guest_state, __ATOMIC_ACQUIRE);
    const uint32_t gen = __atomic_load_n(&entry_->guest_gen, __ATOMIC_ACQUIRE);
    return state != AVA_SLOT_CLAIMED || gen != gen_;
  }
  void note_received(uint64_t bytes) override {
    __atomic_fetch_add(&entry_->commands, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&entry_->bytes_in, bytes, __ATOMIC_RELAXED);
  }
  void note_sent(uint64_t bytes) override {
    __atomic_fetch_add(&entry_->bytes_out, bytes, __ATOMIC_RELAXED);
  }
  void note_error() override { __atomic_fetch_add(&entry_->errors, 1, __ATOMIC_RELAXED); }

private:
  // One poll of the eventfd; true when it was kicked (the count is consumed).
  bool poll_kick(int ms) {
    pollfd p{wait_efd_.get(), POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0)
      return false;
    uint64_t count = 0;
    [[maybe_unused]] ssize_t rc = ::read(wait_efd_.get(), &count, sizeof count);
    return true;
  }
  static void signal(int fd) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t rc = ::write(fd, &one, sizeof one);
  }

  UniqueFd wait_efd_;
  UniqueFd irq_efd_;
  ava_slot_entry *entry_;
  uint32_t gen_;
  std::mutex mu_;
  std::condition_variable followers_; // mu_; kicks_ moved or polling_ freed
  uint64_t kicks_ = 0;                // mu_; kicks the leaders have seen
  bool polling_ = false;              // mu_; a leader polls the eventfd
};

} // namespace

namespace detail {

std::unique_ptr<RegionSignals> make_ivshmem_host_signals(UniqueFd wait_efd, UniqueFd irq_efd,
                                                         ava_slot_entry *entry, uint32_t gen) {
  return std::make_unique<IvshmemHostSignals>(std::move(wait_efd), std::move(irq_efd), entry, gen);
}

} // namespace detail

Status check_ivshmem_geometry(const IvshmemGeometry &g) {
  if (g.nslots < 1 || g.nslots > AVA_DEV_MAX_SLOTS)
    return Status::error(AVA_E_PROTO, "slots must be between 1 and " + n(AVA_DEV_MAX_SLOTS));
  if (!detail::shm_ring_size_ok(g.cmd_size) || !detail::shm_ring_size_ok(g.reply_size))
    return Status::error(AVA_E_PROTO, "ring sizes must be powers of two between " +
                                          n(AVA_RING_MIN_SIZE) + " and " + n(AVA_RING_MAX_SIZE));
  if (g.heap_size % AVA_REGION_ALIGN != 0 || g.heap_size > (uint64_t{1} << 34))
    return Status::error(AVA_E_PROTO, "heap size must be a multiple of 4096 up to 16 GiB");
  return Status::ok();
}

Status IvshmemMemory::create(const IvshmemGeometry &g, uint32_t host_peer, const std::string &path,
                             std::unique_ptr<IvshmemMemory> *out) {
  Status st = check_ivshmem_geometry(g);
  if (!st.is_ok())
    return st;
  const uint64_t table_end = AVA_DEV_TABLE_END(g.nslots);
  const uint64_t wanted = AVA_REGION_HDR_SIZE + g.cmd_size + g.reply_size + g.heap_size;
  const uint64_t total = round_up_pow2(table_end + g.nslots * wanted);
  // What rounding up to a power of two adds goes to the heaps, not to waste.
  uint64_t slot_size = (total - table_end) / g.nslots / AVA_REGION_ALIGN * AVA_REGION_ALIGN;
  const uint64_t heap = slot_size - AVA_REGION_HDR_SIZE - g.cmd_size - g.reply_size;

  std::unique_ptr<IvshmemMemory> mem(new IvshmemMemory());
  int fd = -1;
  if (path.empty()) {
    fd = ::memfd_create("ava-vm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  } else {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0)
      mem->path_ = path;
  }
  if (fd < 0)
    return Status::error(AVA_E_NOMEM, "create the VM's shared memory" +
                                          (path.empty() ? std::string() : " " + path) + ": " +
                                          errno_text(errno));
  mem->fd_ = UniqueFd(fd);
  if (::ftruncate(fd, static_cast<off_t>(total)) != 0)
    return Status::error(AVA_E_NOMEM, "size the VM's shared memory to " + n(total) +
                                          " bytes: " + errno_text(errno));
  if (path.empty())
    ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  void *p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return Status::error(AVA_E_NOMEM, "map the VM's shared memory: " + errno_text(errno));
  mem->base_ = static_cast<uint8_t *>(p);
  mem->size_ = total;

  ava_dev_hdr &h = mem->hdr_;
  h.magic = AVA_DEV_MAGIC;
  h.version = AVA_DEV_VERSION;
  h.host_state = AVA_HOST_UP;
  h.total_size = total;
  h.nslots = g.nslots;
  h.vectors = 1 + g.nslots;
  h.slots_off = table_end;
  h.slot_size = slot_size;
  h.cmd_size = g.cmd_size;
  h.reply_size = g.reply_size;
  h.heap_size = heap;
  h.host_peer = host_peer;
  std::memcpy(mem->base_, &h, sizeof h);
  *out = std::move(mem);
  return Status::ok();
}

IvshmemMemory::~IvshmemMemory() {
  if (base_ != nullptr) {
    set_host_state(AVA_HOST_DOWN);
    ::munmap(base_, size_);
  }
  if (table_ != nullptr)
    ::munmap(table_, AVA_DEV_ENTRY_STRIDE);
  if (!path_.empty())
    ::unlink(path_.c_str());
}

ava_slot_entry *IvshmemMemory::slot_entry(uint32_t i) const {
  if (table_ != nullptr)
    return i == only_slot_ ? reinterpret_cast<ava_slot_entry *>(table_) : nullptr;
  return reinterpret_cast<ava_slot_entry *>(base_ + AVA_DEV_ENTRY_OFF(i));
}

Status IvshmemMemory::keep_only_slot(uint32_t i) {
  if (i >= hdr_.nslots || base_ == nullptr)
    return Status::error(AVA_E_PROTO, "keep_only_slot: no slot " + n(i));
  // The entry's page alone: other slots' entries stay out of reach.
  static_assert(AVA_DEV_ENTRY_STRIDE == AVA_REGION_ALIGN, "one host page per entry");
  void *p = ::mmap(nullptr, AVA_DEV_ENTRY_STRIDE, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(),
                   static_cast<off_t>(AVA_DEV_ENTRY_OFF(i)));
  if (p == MAP_FAILED)
    return Status::error(AVA_E_NOMEM, "map slot " + n(i) + "'s table entry: " + errno_text(errno));
  ::munmap(base_, size_);
  base_ = nullptr;
  table_ = static_cast<uint8_t *>(p);
  only_slot_ = i;
  return Status::ok();
}

Status IvshmemMemory::scrub(uint64_t offset, uint64_t length) {
  if (offset % AVA_REGION_ALIGN != 0 || length % AVA_REGION_ALIGN != 0 || offset > size_ ||
      length > size_ - offset)
    return Status::error(AVA_E_PROTO, "scrub: bad range");
  if (::fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                  static_cast<off_t>(length)) == 0)
    return Status::ok();
  // A file system without holes: zero it by hand.
  if (base_ == nullptr)
    return Status::error(AVA_E_STATE, "scrub: " + errno_text(errno));
  std::memset(base_ + offset, 0, length);
  return Status::ok();
}

uint8_t *IvshmemMemory::slot_base(uint32_t i) const {
  return base_ + slot_offset(i);
}

void IvshmemMemory::set_host_state(uint32_t state) {
  hdr_.host_state = state;
  // Pairs with ava.ko's READ_ONCE of host_state before it claims a slot or
  // keeps waiting.
  __atomic_store_n(&reinterpret_cast<ava_dev_hdr *>(base_)->host_state, state, __ATOMIC_RELEASE);
}

void IvshmemMemory::reset_table() {
  std::memset(base_ + AVA_DEV_TABLE_OFF, 0, AVA_DEV_TABLE_END(hdr_.nslots) - AVA_DEV_TABLE_OFF);
}

Status ivshmem_send(int sock, int64_t value, int fd) {
  // The protocol's numbers are little-endian; so is every host ava runs on.
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "ivshmem messages are little-endian");
  iovec iov{&value, sizeof value};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  for (;;) {
    const ssize_t rc = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (rc == static_cast<ssize_t>(sizeof value))
      return Status::ok();
    if (rc < 0 && errno == EINTR)
      continue;
    return Status::error(AVA_E_CLOSED,
                         "ivshmem server: send to the VM: " +
                             (rc < 0 ? errno_text(errno) : std::string("short write")));
  }
}

Status ivshmem_slot_channel(const IvshmemMemory &mem, uint32_t index, uint32_t gen,
                            UniqueFd wait_efd, UniqueFd irq_efd, std::unique_ptr<Channel> *out) {
  const ava_dev_hdr &h = mem.header();
  if (index >= h.nslots)
    return Status::error(AVA_E_PROTO, "slot " + n(index) + " does not exist");
  ShmOptions options;
  Status st = shm_options_from_env(&options);
  if (!st.is_ok())
    return st;
  detail::ShmMapping map;
  st = detail::map_region_fd(mem.fd(), mem.slot_offset(index), h.slot_size, &map);
  if (!st.is_ok())
    return st;
  // The guest's kernel wrote the header.
  detail::RegionLayout layout;
  detail::RegionExpect expect;
  expect.feature = AVA_REGION_F_DOORBELL;
  expect.in_use_ok = true;
  st = detail::check_mapped_region(map, expect, &layout);
  if (!st.is_ok())
    return st;
  ava_region_hdr *shared = map.header();
  __atomic_store_n(&shared->worker_pid, static_cast<uint64_t>(::getpid()), __ATOMIC_RELAXED);
  // Pairs with the guest's acquire loads of state: ATTACHED implies worker_pid.
  __atomic_fetch_or(&shared->state, AVA_REGION_ATTACHED, __ATOMIC_RELEASE);
  ava_slot_entry *entry = mem.slot_entry(index);
  // Pairs with ava.ko's release store of guest_state after claim_flags
  // (the host saw CLAIMED for this gen with an acquire load already).
  const uint32_t claim = __atomic_load_n(&entry->claim_flags, __ATOMIC_ACQUIRE);
  detail::PolicedRing ring;
  if ((claim & AVA_CLAIM_POLICED) != 0) {
    // ava.ko checked and wrote the commands below checked_head; the guest
    // process cannot write the slot table.
    ring.cmd_head = &entry->checked_head;
    ring.cmd_tail = &entry->cmd_tail;
  }
  auto signals =
      detail::make_ivshmem_host_signals(std::move(wait_efd), std::move(irq_efd), entry, gen);
  *out = std::make_unique<detail::ShmChannel>(
      std::move(map), layout, detail::ShmSide::Worker, std::move(signals),
      "ivshmem slot " + n(index) + " (claim " + n(gen) + (ring.cmd_head ? ", policed" : "") + ")",
      options.spin_ns, ring);
  return Status::ok();
}

} // namespace ava
