// SPDX-License-Identifier: MIT
#include "worker/resource_ledger.hpp"

#include <algorithm>

namespace ava {

bool ResourceLedger::reserve(uint32_t resource, std::string_view name, uint64_t amount,
                             ResourceCharge *charge, std::string *why) {
  const uint64_t quota = quota_ ? quota_(name) : 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (used_.size() <= resource)
    used_.resize(resource + 1, 0);
  uint64_t &used = used_[resource];
  if (quota != 0 && (amount > quota || used > quota - amount)) {
    *why = "over the " + std::string(name) + " quota of " + std::to_string(quota) + " (" +
           std::to_string(used) + " in use, " + std::to_string(amount) + " asked)";
    return false;
  }
  // Saturating: without a quota a guest may ask for absurd amounts, which
  // must not wrap the count of what is in use.
  used = amount > UINT64_MAX - used ? UINT64_MAX : used + amount;
  *charge = ResourceCharge{resource, amount, false};
  return true;
}

bool ResourceLedger::resize(ResourceCharge *charge, std::string_view name, uint64_t amount,
                            std::string *why) {
  if (charge->bound || charge->amount == 0)
    return true; // nothing reserved for this call: nothing to resize
  const uint64_t quota = quota_ ? quota_(name) : 0;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t &used = used_[charge->resource];
  if (amount > charge->amount) {
    const uint64_t more = amount - charge->amount;
    if (quota != 0 && (more > quota || used > quota - more)) {
      *why = "over the " + std::string(name) + " quota of " + std::to_string(quota) + " (" +
             std::to_string(used) + " in use, " + std::to_string(more) + " more asked)";
      return false;
    }
    used = more > UINT64_MAX - used ? UINT64_MAX : used + more;
  } else {
    used -= std::min(used, charge->amount - amount);
  }
  charge->amount = amount;
  return true;
}

void ResourceLedger::give_back(const ResourceCharge &charge) {
  if (charge.amount == 0)
    return;
  std::lock_guard<std::mutex> lock(mu_);
  if (charge.resource < used_.size())
    used_[charge.resource] -= std::min(used_[charge.resource], charge.amount);
}

uint64_t ResourceLedger::used(uint32_t resource) {
  std::lock_guard<std::mutex> lock(mu_);
  return resource < used_.size() ? used_[resource] : 0;
}

void ResourceLedger::bind(uint64_t id, ResourceCharge *charge) {
  if (charge->amount == 0 || charge->bound || id == 0)
    return;
  std::lock_guard<std::mutex> lock(mu_);
  try {
    by_handle_[id] = *charge;
    charge->bound = true;
  } catch (const std::bad_alloc &) {
    // Without a record the charge is given back at settle(): the quota is
    // then briefly lenient, never wrongly strict.
  }
}

void ResourceLedger::settle(ResourceCharge *charge) {
  if (charge->amount == 0 || charge->bound)
    return;
  std::lock_guard<std::mutex> lock(mu_);
  used_[charge->resource] -= std::min(used_[charge->resource], charge->amount);
  charge->amount = 0;
}

void ResourceLedger::refund(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_handle_.find(id);
  if (it == by_handle_.end())
    return;
  uint64_t &used = used_[it->second.resource];
  used -= std::min(used, it->second.amount);
  by_handle_.erase(it);
}

} // namespace ava
