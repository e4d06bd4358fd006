// SPDX-License-Identifier: MIT
// The guest side of a /dev/ava slot: the ring logic of ShmChannel, with
// ava.ko's ioctls for sleeping and ringing the host, and on a policed slot
// for sending (ava.ko checks each message and writes the command ring).
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

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

class KmodSignals final : public RegionSignals, public detail::CommandSubmitter {
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
  // Our own sleepers wait in ava.ko; AVA_IOC_WAKE ends their waits. An old
  // ava.ko without it leaves them to notice when their bounded sleep ends.
  void wake_self(uint32_t *) override { static_cast<void>(::ioctl(fd_.get(), AVA_IOC_WAKE)); }
  bool peer_gone() override { return gone_.load(std::memory_order_relaxed); }

  Status submit(const struct iovec *iov, int iovcnt, uint64_t total, uint64_t *taken,
                int *refused) override {
    // More pieces than ava.ko takes at once: one contiguous copy instead.
    std::vector<uint8_t> flat;
    struct iovec one;
    if (iovcnt > static_cast<int>(AVA_SUBMIT_MAX_IOV)) {
      try {
        flat.resize(total);
      } catch (const std::bad_alloc &) {
        return Status::error(AVA_E_NOMEM,
                             "no memory to flatten " + std::to_string(iovcnt) + " pieces");
      }
      uint64_t at = 0;
      for (int i = 0; i < iovcnt && at < total; ++i) {
        const uint64_t take = std::min<uint64_t>(iov[i].iov_len, total - at);
        std::memcpy(flat.data() + at, iov[i].iov_base, take);
        at += take;
      }
      one = {flat.data(), flat.size()};
      iov = &one;
      iovcnt = 1;
    }
    ava_submit sub{};
    sub.iov = reinterpret_cast<uintptr_t>(iov);
    sub.iovcnt = static_cast<uint32_t>(iovcnt);
    sub.total = total;
    if (::ioctl(fd_.get(), AVA_IOC_SUBMIT, &sub) == 0) {
      *taken = sub.done;
      *refused = sub.status;
      return Status::ok();
    }
    const int err = errno;
    switch (err) {
    case EPIPE:
    case ENODEV:
      gone_.store(true, std::memory_order_relaxed);
      return Status::error(AVA_E_CLOSED, "ava.ko: the slot was closed or the host is gone");
    case ETIMEDOUT:
      return Status::error(AVA_E_TIMEOUT, "ava.ko: the host took no command for too long");
    case EINVAL:
      return Status::error(AVA_E_PROTO, "ava.ko refused the messages' framing");
    default:
      return Status::error(AVA_E_CLOSED, std::string("ava.ko: submit: ") + std::strerror(err));
    }
  }

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
  // A policed claim's command ring is ava.ko's to write (ivshmem.h): it
  // stays unmapped here.
  const bool policed = (info.flags & AVA_CLAIM_POLICED) != 0;
  detail::ShmMapping map;
  st = policed ? detail::map_region_fd_except(fd.get(), info.slot_size, AVA_REGION_HDR_SIZE,
                                              info.cmd_size, &map)
               : detail::map_region_fd(fd.get(), 0, info.slot_size, &map);
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
  if (policed && (layout.cmd_off != AVA_REGION_HDR_SIZE || layout.cmd_size != info.cmd_size))
    return Status::error(AVA_E_PROTO, "connect " + name + " (slot " + std::to_string(info.index) +
                                          "): the command ring is not where ava.ko said");
  const uint8_t *base = map.base();
  auto signals = std::make_unique<KmodSignals>(std::move(fd), base);
  detail::PolicedRing ring;
  if (policed)
    ring.submitter = signals.get();
  *out = std::make_unique<detail::ShmChannel>(
      std::move(map), layout, detail::ShmSide::Guest, std::move(signals),
      name + " slot " + std::to_string(info.index) + (policed ? " (policed)" : ""), options.spin_ns,
      ring);
  return Status::ok();
}

} // namespace ava
