// SPDX-License-Identifier: MIT
// Per-guest accounting of the resources a spec's calls allocate
// (ava_allocates_resource, e.g. device memory), against quotas set by the
// host (a VM slot's `avactl policy ... mem-quota N`). A call's amount is
// reserved before it runs, bound to the handle the call creates, and
// returned when the guest releases that handle; a call that creates nothing
// gives its reservation back. Memory that is no handle (a CUDA device
// pointer) is charged to its range in the guest's range table instead
// (worker/range_table.cpp). Shared by a guest's shadow threads.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ava {

// A reservation made for one call.
struct ResourceCharge {
  uint32_t resource = 0;
  uint64_t amount = 0; // 0: nothing reserved
  bool bound = false;  // now belongs to a handle
};

class ResourceLedger {
public:
  // quota(name) gives the current limit of a resource, 0 = unlimited; it is
  // asked on every reservation, so a changed policy applies at once.
  using QuotaFn = std::function<uint64_t(std::string_view resource)>;
  explicit ResourceLedger(QuotaFn quota) : quota_(std::move(quota)) {}

  bool enabled() const { return static_cast<bool>(quota_); }
  // Reserves amount of resource (index, name) if the quota allows; false
  // (and *why) when it would exceed it.
  bool reserve(uint32_t resource, std::string_view name, uint64_t amount, ResourceCharge *charge,
               std::string *why);
  // The call created handle id: the charge stays until id is released.
  void bind(uint64_t id, ResourceCharge *charge);
  // The call is over: an unbound charge is given back.
  void settle(ResourceCharge *charge);
  // The guest released id: its charge, if any, is given back.
  void refund(uint64_t id);
  // Makes an unbound charge exactly amount (the size the API really handed
  // out, e.g. a pitched allocation): false (and *why) if growing it would
  // exceed the quota, the charge then unchanged.
  bool resize(ResourceCharge *charge, std::string_view name, uint64_t amount, std::string *why);
  // Gives back a charge that something other than a handle held (a range).
  void give_back(const ResourceCharge &charge);
  // The quota of resource, 0 = none; and how much of it is in use.
  uint64_t quota(std::string_view name) const { return quota_ ? quota_(name) : 0; }
  uint64_t used(uint32_t resource);

private:
  QuotaFn quota_;
  std::mutex mu_;
  std::vector<uint64_t> used_; // by resource index
  std::unordered_map<uint64_t, ResourceCharge> by_handle_;
};

} // namespace ava
