// SPDX-License-Identifier: MIT
// The guest side of a /dev/ava slot: the ring logic of ShmChannel, with
// ava.ko's ioctls for sleeping and ringing the host.
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "ava/ivshmem.h"
#include "transport/kmod.hpp"
#include "transport/shm.hpp"
#include "transport/shm_channel.hpp"
#include "transport/shm_region.hpp"

namespace ava {
namespace {

using detail::RegionSignals;
using detail::UniqueFd;

// A slot larger than this is refused before anything is mapped.
constexpr uint64_t kMaxSlotBytes = uint64_t{1} << 40;
// While every slot is taken, open() is retried this often until the
// connect timeout: a slot the host is still tearing down frees up soon.
constexpr auto kBusyRetry = std::chrono::milliseconds(20);

class KmodSignals final : public RegionSignals {
public:
  KmodSignals(UniqueFd fd, const uint8_t *region) : fd_(std::move(fd)), region_(region) {}

  bool sleep(uint32_t *word, int ms) override {
    ava_wait w{};
    w.offset = static_cast<uint32_t>(reinterpret_cast<const uint8_t *>(word) - region_);
    w.expected = 1;
    w.timeout_ms = static_cast<uint32_t>(ms < 0 ? 0 : ms);
    if (::ioctl(fd_.get(), AVA_IOC_WAIT, &w) == 0)
      return true;
    // EPIPE: ava.ko saw the region broken or closed, or the host down;
    // ENODEV: the device went away. Anything else (ETIMEDOUT, EINTR) only
    // ends this sleep.
    if (errno == EPIPE || errno == ENODEV || errno == EINVAL || errno == ENOTTY) {
      gone_.store(true, std::memory_order_relaxed);
      return false;
    }
    return errno != ETIMEDOUT;
  }
  void wake_peer(uint32_t *) override {
    if (::ioctl(fd_.get(), AVA_IOC_KICK) != 0 && (errno == ENODEV || errno == EPIPE))
      gone_.store(true, std::memory_order_relaxed);
  }
  // Our own sleepers wait in ava.ko, which only the host's interrupt wakes;
  // they notice a shutdown when their bounded sleep ends.
  void wake_self(uint32_t *) override {}
  bool peer_gone() override { return gone_.load(std::memory_order_relaxed); }

private:
  UniqueFd fd_;
  const uint8_t *region_;
  std::atomic<bool> gone_{false};
};

Status open_device(const Address &address, int connect_timeout_ms, UniqueFd *out) {
  const std::string name = address.to_string();
  detail::Deadline deadline(connect_timeout_ms);
  for (;;) {
    const int fd = ::open(address.path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      *out = UniqueFd(fd);
      return Status::ok();
    }
    const int err = errno;
    if (err == EBUSY && !deadline.expired()) {
      std::this_thread::sleep_for(kBusyRetry);
      continue;
    }
    std::string why;
    switch (err) {
    case ENOENT:
    case ENXIO:
    case ENODEV:
      why = "no such device: is ava.ko loaded and an ivshmem device present?";
      break;
    case EBUSY:
      why = "every slot of the device is taken";
      break;
    case EHOSTDOWN:
      why = "the host serves no ava device (is `ava vmhost` running?)";
      break;
    default:
      why = std::strerror(err);
      break;
    }
    return Status::error(AVA_E_CLOSED, "connect " + name + ": " + why);
  }
}

} // namespace

Status connect_kmod(const Address &address, int connect_timeout_ms, std::unique_ptr<Channel> *out) {
  if (out == nullptr)
    return Status::error(AVA_E_PROTO, "connect_kmod: no output channel");
  const std::string name = address.to_string();
  ShmOptions options;
  Status st = shm_options_from_env(&options);
  if (!st.is_ok())
    return Status::error(st.code, "connect " + name + ": " + st.message);
  UniqueFd fd;
  st = open_device(address, connect_timeout_ms, &fd);
  if (!st.is_ok())
    return st;
  ava_slot_info info{};
  if (::ioctl(fd.get(), AVA_IOC_SLOT_INFO, &info) != 0)
    return Status::error(AVA_E_CLOSED,
                         "connect " + name + ": slot info: " + std::string(std::strerror(errno)));
  if (info.slot_size < AVA_REGION_HDR_SIZE || info.slot_size % AVA_REGION_ALIGN != 0 ||
      info.slot_size > kMaxSlotBytes)
    return Status::error(AVA_E_PROTO, "connect " + name + ": the device reports a slot of " +
                                          std::to_string(info.slot_size) + " bytes");
  detail::ShmMapping map;
  st = detail::map_region_fd(fd.get(), 0, info.slot_size, &map);
  if (!st.is_ok())
    return Status::error(st.code, "connect " + name + ": " + st.message);
  detail::RegionLayout layout;
  detail::RegionExpect expect;
  expect.feature = AVA_REGION_F_DOORBELL;
  expect.attached_ok = true;
  st = detail::check_mapped_region(map, expect, &layout);
  if (!st.is_ok())
    return Status::error(st.code, "connect " + name + " (slot " + std::to_string(info.index) +
                                      "): " + st.message);
  const uint8_t *base = map.base();
  auto signals = std::make_unique<KmodSignals>(std::move(fd), base);
  *out = std::make_unique<detail::ShmChannel>(
      std::move(map), layout, detail::ShmSide::Guest, std::move(signals),
      name + " slot " + std::to_string(info.index), options.spin_ns);
  return Status::ok();
}

} // namespace ava
