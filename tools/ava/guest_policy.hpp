// SPDX-License-Identifier: MIT
// A guest's sharing policy, enforced on each call it makes (WorkerOptions::
// admit_call, resource_quota): token buckets of one second's worth of
// commands and bytes, and the device-memory quota. The host's limits (its
// configuration, GuestLimits) hold whatever a guest or its VM writes; for a
// VM's slot, the guest admin's own (ava_slot_entry's guest line, set with
// `avactl policy` through ava.ko) can only make them tighter, and is re-read
// on every call so that a change applies at once. A call over a rate is
// refused with AVA_E_POLICY, which the guest library reports and turns into
// the API's error value.
#pragma once

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "ava/ivshmem.h"
#include "ava/wire.h"
#include "tools/ava/host_config.hpp"

namespace ava::tool {

class GuestPolicy {
public:
  // guest_line: the VM slot's entry, or nullptr for a guest without one.
  explicit GuestPolicy(const GuestLimits &host, const ava_slot_entry *guest_line = nullptr)
      : host_(host), entry_(guest_line) {}

  int admit(uint64_t bytes, std::string *why) {
    uint64_t guest_cmds = 0, guest_bytes = 0;
    if (entry_ != nullptr) {
      // Pairs with ava.ko's release store of policy_flags after the limits.
      __atomic_load_n(&entry_->policy_flags, __ATOMIC_ACQUIRE);
      guest_cmds = __atomic_load_n(&entry_->cmds_per_sec, __ATOMIC_RELAXED);
      guest_bytes = __atomic_load_n(&entry_->bytes_per_sec, __ATOMIC_RELAXED);
    }
    const uint64_t cmds = tighter_limit(host_.cmds_per_sec, guest_cmds);
    const uint64_t rate = tighter_limit(host_.bytes_per_sec, guest_bytes);
    if (cmds == 0 && rate == 0) {
      // No limit (the usual case): what the buckets do for a rate of 0,
      // without reading the clock on every call.
      commands_.tokens = -1;
      bytes_.tokens = -1;
      return AVA_OK;
    }
    const double now = now_s();
    const bool cmd_ok = commands_.take(cmds, 1, now);
    const bool bytes_ok = cmd_ok && bytes_.take(rate, bytes, now);
    if (cmd_ok && bytes_ok)
      return AVA_OK;
    *why = !cmd_ok ? "over the guest's policy of " + std::to_string(cmds) + " commands/s"
                   : "over the guest's policy of " + std::to_string(rate) + " bytes/s";
    return AVA_E_POLICY;
  }

  // The quota of a resource the spec's calls allocate; 0 = none.
  uint64_t quota(std::string_view resource) const {
    if (resource != "device_memory")
      return 0;
    const uint64_t guest =
        entry_ != nullptr ? __atomic_load_n(&entry_->mem_quota, __ATOMIC_RELAXED) : 0;
    return tighter_limit(host_.device_memory, guest);
  }

private:
  struct Bucket {
    double tokens = -1; // < 0: not started
    double last = 0;
    // A bucket holds one second of its rate; a message larger than that
    // passes when the bucket is full and leaves it in debt.
    bool take(uint64_t rate, uint64_t amount, double now) {
      if (rate == 0) {
        tokens = -1;
        return true;
      }
      const double cap = static_cast<double>(rate);
      tokens = tokens < 0 ? cap : std::min(cap, tokens + (now - last) * cap);
      last = now;
      const double want = static_cast<double>(amount);
      if (tokens >= want || tokens >= cap) {
        tokens -= want;
        return true;
      }
      return false;
    }
  };

  static double now_s() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }

  GuestLimits host_;
  const ava_slot_entry *entry_;
  Bucket commands_;
  Bucket bytes_;
};

} // namespace ava::tool
