// SPDX-License-Identifier: MIT
// The device-memory quota for CUDA (issue 13, finding 7): under the host's
// [guest] device_memory, a cudaMalloc that would pass the quota is refused
// by the worker before the runtime sees it (the reply's status is
// AVA_E_POLICY, which the guest library answers as
// cudaErrorMemoryAllocation), while one within it reaches the runtime. Where
// the runtime has a device (a GPU machine), the allocation is charged and
// cudaMemGetInfo shows the quota as the device's memory; without one (here)
// the runtime answers every call with its own error and there is nothing to
// clamp. Raw messages to a real `ava worker --spec cudart`.
#include <criterion/criterion.h>

#include <fstream>
#include <string>

#include "cudart_raw.hpp"
#include "e2e_env.hpp"

using namespace e2e;

namespace {

constexpr uint64_t kQuota = 1u << 20;

// cudaMalloc(size): the reply's status and, when AVA_OK, the runtime's answer.
int malloc_status(RawGuest &g, uint64_t size, uint64_t *ret) {
  ava_cudart_cudaMalloc_call a{};
  a.devPtr = {0, 8, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
  a.size = size;
  Bytes r;
  cr_assert(g.call(AVA_CUDART_FN_CUDAMALLOC, &a, sizeof a, {}, &r), "no answer to cudaMalloc");
  *ret = ret_of(r);
  return RawGuest::header(r).status;
}

} // namespace

Test(e2e_cudart_quota, allocations_past_the_quota_never_reach_the_runtime, .timeout = 120) {
  const std::string dir = make_temp_dir();
  const std::string config = dir + "/host.toml";
  std::ofstream(config) << "[guest]\ndevice_memory = " << kQuota << "\n";
  CudartWorker w({"--host-config", config});
  std::string seen;
  cr_assert(w.started(&seen), "the worker did not start:\n%s", seen.c_str());
  RawGuest g = cudart_guest(w);
  cr_assert(g.connect_and_hello());

  uint64_t ret = 0;
  cr_expect_eq(malloc_status(g, kQuota + 1, &ret), AVA_E_POLICY, "one byte past the quota");
  cr_expect(w.proc.wait_for_line("over the device_memory quota of 1048576", 10000, &seen),
            "the worker did not say why:\n%s", seen.c_str());
  cr_expect_eq(malloc_status(g, 4096, &ret), AVA_OK, "within the quota: the runtime answers");
  if (ret == kCudaSuccess) {
    // A device: the 4096 bytes are charged, and the device is the quota.
    cr_expect_eq(malloc_status(g, kQuota - 4095, &ret), AVA_E_POLICY, "with 4096 in use");
    ava_cudart_cudaMemGetInfo_call a{};
    a.free = {0, 8, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
    a.total = {0, 8, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
    Bytes r;
    cr_assert_eq(call_ret(g, AVA_CUDART_FN_CUDAMEMGETINFO, a, {}, &r), kCudaSuccess);
    ava_cudart_cudaMemGetInfo_reply v{};
    cr_assert(RawGuest::reply_struct(r, &v));
    const Bytes free_bytes = out_buffer(r, v.free), total_bytes = out_buffer(r, v.total);
    uint64_t free = 0, total = 0;
    cr_assert(free_bytes.size() == 8 && total_bytes.size() == 8);
    std::memcpy(&free, free_bytes.data(), 8);
    std::memcpy(&total, total_bytes.data(), 8);
    cr_expect(total <= kQuota && free <= kQuota - 4096, "cudaMemGetInfo: free %llu, total %llu",
              (unsigned long long)free, (unsigned long long)total);
  } else {
    cr_log_info("no CUDA device: cudaMalloc within the quota got the runtime's error %llu",
                (unsigned long long)ret);
  }
  cr_expect(still_serves(g), "the worker stopped serving");
  cr_expect(w.alive(), "the worker died");
  const std::string rm = "rm -rf " + dir;
  [[maybe_unused]] int rc = system(rm.c_str());
}
