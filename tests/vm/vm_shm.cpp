// SPDX-License-Identifier: MIT
#include "vm_shm.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

VmShm::VmShm(const std::string &path) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < 8192) {
    error_ = path + ": " + (fd < 0 ? std::strerror(errno) : "too small or unreadable");
    if (fd >= 0)
      close(fd);
    return;
  }
  void *p =
      mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    error_ = path + ": mmap: " + std::strerror(errno);
    return;
  }
  base_ = static_cast<unsigned char *>(p);
  size_ = static_cast<size_t>(st.st_size);
  const auto *hdr = reinterpret_cast<const ava_dev_hdr *>(base_);
  if (hdr->magic != AVA_DEV_MAGIC || hdr->nslots == 0 || hdr->nslots > AVA_DEV_MAX_SLOTS ||
      hdr->slots_off + hdr->nslots * hdr->slot_size > size_) {
    error_ = path + ": not an ava device header";
    munmap(base_, size_);
    base_ = nullptr;
  }
}

VmShm::~VmShm() {
  if (base_ != nullptr)
    munmap(base_, size_);
}

unsigned VmShm::nslots() const {
  return reinterpret_cast<const ava_dev_hdr *>(base_)->nslots;
}

ava_slot_entry VmShm::slot(unsigned i) const {
  ava_slot_entry e;
  std::memcpy(&e, at(AVA_DEV_ENTRY_OFF(i)), sizeof e);
  return e;
}

std::vector<unsigned> VmShm::serving_slots() const {
  std::vector<unsigned> found;
  for (unsigned i = 0; i < nslots(); ++i) {
    const ava_slot_entry e = slot(i);
    if (e.guest_state == AVA_SLOT_CLAIMED && e.host_state == AVA_SLOT_SERVING)
      found.push_back(i);
  }
  return found;
}

void VmShm::scribble_reply_ring(unsigned i) {
  const auto *hdr = reinterpret_cast<const ava_dev_hdr *>(base_);
  unsigned char *region = at(hdr->slots_off + i * hdr->slot_size);
  auto *rh = reinterpret_cast<ava_region_hdr *>(region);
  const ava_u64 reply_off = hdr->cmd_size + AVA_REGION_HDR_SIZE;
  // A record claiming more bytes than the ring holds, then more garbage.
  std::memset(region + reply_off, 0xa5, hdr->reply_size);
  __atomic_store_n(&rh->reply.head, rh->reply.tail + hdr->reply_size / 2, __ATOMIC_RELEASE);
}

void VmShm::fill_slot(unsigned i, unsigned char byte) {
  const auto *hdr = reinterpret_cast<const ava_dev_hdr *>(base_);
  unsigned char *region = at(hdr->slots_off + i * hdr->slot_size);
  std::memset(region + AVA_REGION_HDR_SIZE, byte, hdr->slot_size - AVA_REGION_HDR_SIZE);
}
