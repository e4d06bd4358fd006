// SPDX-License-Identifier: MIT
// The device-memory quota beyond handles (worker/resource_ledger.hpp,
// worker/range_table.cpp): memory that is no handle (a CUDA device pointer)
// is charged to its range in the guest's range table, of the size really
// handed out, and given back whichever way the range goes; what spec code
// may ask of the host (its quota and use, a reservation only it can size,
// the host's settings for the plugin: worker/wcall_grants.cpp).
#include <criterion/criterion.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "ava/cmdtab.h"
#include "ava/wire.h"
#include "transport/channel.hpp"
#include "worker/ava_worker_rt.h"
#include "worker/connection.hpp"
#include "worker/server.hpp"
#include "worker/wcall.hpp"

namespace {

constexpr uint32_t kAlloc = 1;
constexpr uint64_t kQuota = 1000;

const char *const kResourceNames[] = {"device_memory"};
const ava_cmd_table kTable = {"quota",        0, 99, 0, nullptr, nullptr, nullptr,
                              kResourceNames, 0, 0,  1, 0};
const char *const kFuncNames[] = {nullptr, "alloc"};
const ava_worker_spec kSpec = {"quota", 99,      0,       2,       kFuncNames, nullptr,
                               0,       nullptr, nullptr, nullptr, nullptr,    &kTable};

ava::WorkerOptions options() {
  ava::WorkerOptions o;
  o.resource_quota = [](std::string_view r) { return r == "device_memory" ? kQuota : 0; };
  o.plugin_settings["opencl.kernels_without_arg_info"] = "allow";
  return o;
}

// A guest connection under the quota and calls of it, as a shadow thread serves them.
struct Guest {
  std::unique_ptr<ava::Channel> peer;
  std::shared_ptr<ava::GuestConnection> connection;
  ava::AsyncErrorSlot slot;
  ava_msg_hdr hdr{};

  Guest() {
    std::unique_ptr<ava::Channel> ours;
    cr_assert(ava::channel_pair(&ours, &peer).is_ok());
    connection = std::make_shared<ava::GuestConnection>(std::move(ours), options());
    connection->set_guest(&kSpec, 1);
    hdr.magic = AVA_MSG_MAGIC;
    hdr.kind = AVA_MSG_CALL;
    hdr.flags = AVA_F_SYNC;
    hdr.func_id = 1;
    hdr.total_len = sizeof hdr;
  }
  std::unique_ptr<ava_wcall> call() {
    return std::make_unique<ava_wcall>(connection, &slot, reinterpret_cast<uint8_t *>(&hdr));
  }
  // What the shadow thread does for a call whose command table reserves amount.
  bool reserve(ava_wcall *w, uint64_t amount) {
    std::string why;
    return connection->resources().reserve(0, "device_memory", amount, &w->charge, &why);
  }
  void settle(ava_wcall *w) { connection->resources().settle(&w->charge); }
  uint64_t used() { return connection->resources().used(0); }
};

} // namespace

Test(worker_quota, a_range_holds_its_allocations_charge_until_it_is_freed) {
  Guest g;
  {
    auto w = g.call();
    ava::CurrentCall in(w.get());
    cr_assert(g.reserve(w.get(), 100));
    cr_expect_eq(ava_w_ranges_add(0x1000, 100, kAlloc, 1), AVA_OK);
    g.settle(w.get());
  }
  cr_expect_eq(g.used(), 100u, "the allocation is charged after its call");
  {
    // A free the API refused: the range comes back and keeps its charge.
    auto w = g.call();
    ava::CurrentCall in(w.get());
    uint64_t size = 0, owner = 0;
    cr_assert_eq(ava_w_ranges_remove(0x1000, kAlloc, &size, &owner), 1);
    cr_expect_eq(ava_w_ranges_add(0x1000, size, kAlloc, owner), AVA_OK);
    g.settle(w.get());
  }
  cr_expect_eq(g.used(), 100u, "a refused free keeps the charge");
  {
    auto w = g.call();
    ava::CurrentCall in(w.get());
    cr_assert_eq(ava_w_ranges_remove(0x1000, kAlloc, nullptr, nullptr), 1);
    g.settle(w.get());
  }
  cr_expect_eq(g.used(), 0u, "a free gives the charge back");
}

Test(worker_quota, the_size_handed_out_is_charged_within_the_quota) {
  Guest g;
  {
    // Reserved width * height; the pitched allocation is larger.
    auto w = g.call();
    ava::CurrentCall in(w.get());
    cr_assert(g.reserve(w.get(), 100));
    cr_expect_eq(ava_w_ranges_replace(0x1000, 640, kAlloc, 1), AVA_OK);
    g.settle(w.get());
  }
  cr_expect_eq(g.used(), 640u);
  {
    // 100 fit the quota, the 500 really handed out do not: refused, nothing kept.
    auto w = g.call();
    ava::CurrentCall in(w.get());
    cr_assert(g.reserve(w.get(), 100));
    cr_expect_eq(ava_w_ranges_replace(0x4000, 500, kAlloc, 1), AVA_E_POLICY);
    cr_expect_eq(ava_w_ranges_check(0x4000, 1), 0);
    g.settle(w.get());
  }
  cr_expect_eq(g.used(), 640u, "the refused allocation left no charge behind");
  {
    auto w = g.call();
    ava::CurrentCall in(w.get());
    cr_expect_not(g.reserve(w.get(), 361), "past the quota of 1000 with 640 in use");
    cr_expect(g.reserve(w.get(), 360), "exactly up to the quota");
    cr_expect_eq(ava_w_ranges_add(0x8000, 360, kAlloc, 2), AVA_OK);
    g.settle(w.get());
  }
  cr_expect_eq(g.used(), kQuota);
  {
    // A reset drops every range of its owner, and their charges with them;
    // memory handed out again where a stale range was gives that one's back.
    auto w = g.call();
    ava::CurrentCall in(w.get());
    cr_expect_eq(ava_w_ranges_drop_owner(2), 1u);
    cr_expect_eq(g.used(), 640u);
    cr_expect_eq(ava_w_ranges_replace(0x1000, 16, kAlloc, 3), AVA_OK, "no reservation: free");
    cr_expect_eq(g.used(), 0u, "the stale range's charge went with it");
    g.settle(w.get());
  }
}

Test(worker_quota, spec_code_sees_the_quota_and_what_is_held) {
  Guest g;
  cr_expect_eq(ava_w_resource_quota("device_memory"), 0u, "outside a call");
  cr_expect_eq(ava_w_setting("opencl.kernels_without_arg_info"), nullptr, "outside a call");
  auto w = g.call();
  ava::CurrentCall in(w.get());
  cr_expect_eq(ava_w_resource_quota("device_memory"), kQuota);
  cr_expect_eq(ava_w_resource_quota("rays"), 0u, "a resource without a quota");
  cr_expect_eq(ava_w_resource_used("device_memory"), 0u);
  // An amount only the handler can compute (an image's bytes).
  cr_expect_eq(ava_w_reserve(w.get(), 0, kQuota + 1), AVA_E_POLICY);
  cr_expect_eq(g.connection->calls_refused(), 1u, "a refusal is counted");
  cr_expect_eq(ava_w_reserve(w.get(), 0, 300), AVA_OK);
  cr_expect_eq(ava_w_resource_used("device_memory"), 300u);
  // The device as this guest may use it: total the quota, free what it leaves.
  uint64_t free = 1u << 30, total = 2u << 30;
  ava_w_resource_view("device_memory", &free, &total);
  cr_expect(free == kQuota - 300 && total == kQuota, "free %llu, total %llu",
            (unsigned long long)free, (unsigned long long)total);
  free = 10, total = 500;
  ava_w_resource_view("device_memory", &free, &total);
  cr_expect(free == 10 && total == 500, "a device smaller than the quota is as it is");
  ava_w_resource_view("device_memory", nullptr, &total);
  free = total = 1u << 30;
  ava_w_resource_view("rays", &free, &total);
  cr_expect(free == 1u << 30 && total == 1u << 30, "no quota, no clamp");
  cr_expect_eq(ava_w_reserve(w.get(), 0, 1), AVA_E_STATE, "one reservation per call");
  g.settle(w.get());
  cr_expect_eq(ava_w_resource_used("device_memory"), 0u, "a call that made nothing");
  const char *allow = ava_w_setting("opencl.kernels_without_arg_info");
  cr_expect(allow != nullptr && std::strcmp(allow, "allow") == 0);
  cr_expect_eq(ava_w_setting("opencl.other"), nullptr);
}
