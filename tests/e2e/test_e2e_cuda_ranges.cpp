// SPDX-License-Identifier: MIT
// Issue 13, finding 1, the driver API: a hostile guest of the `cuda` worker
// must not read or write memory that is not its own. Raw messages (no guest
// library sends them) to a real `ava worker --spec cuda` running against the
// toolkit's stub libcuda, which answers every call that reaches it with
// CUDA_ERROR_STUB_LIBRARY (34): copies, memsets and frees naming device
// addresses the guest was never given (the worker's own heap, executable,
// a low page) get CUDA_ERROR_INVALID_VALUE from ava before the driver is
// called, sent sync or async, and the worker keeps serving. A copy of no
// bytes and cuMemFree(0) name no memory and reach the driver, which tells
// the two answers apart. With a GPU, scripts/gpu-check.sh runs the good
// path (tests/cuda/programs/driver_api.cu).
#include <criterion/criterion.h>

#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "cuda_wire.h"
#include "cudart_raw.hpp"
#include "e2e_env.hpp"

using namespace e2e;

namespace {

constexpr uint64_t kInvalidValue = 1; // CUDA_ERROR_INVALID_VALUE
constexpr uint64_t kStubLibrary = 34; // CUDA_ERROR_STUB_LIBRARY: the driver was reached
constexpr uint64_t kBytes = 256;
// Addresses that look like the worker's own: its heap and libraries, its
// executable, a low page. A guest that could copy there would own the worker.
constexpr uint64_t kWorkerAddrs[] = {0x7f0000001000ull, 0x555555554000ull, 0x1000ull};

// The worker, with the stub found as libcuda.so.1 first in its library path.
struct StubSession {
  std::string lib_dir = make_temp_dir();
  CudartWorker worker;
  RawGuest guest;
  StubSession()
      : worker({}, "cuda", {"LD_LIBRARY_PATH=" + stub_dir(lib_dir)}),
        guest(worker.path, AVA_CUDA_SPEC_ID, AVA_CUDA_SPEC_HASH, AVA_CUDA_SPEC_NAME) {
    std::string seen;
    cr_assert(worker.started(&seen), "the worker did not start:\n%s", seen.c_str());
    cr_assert(guest.connect_and_hello());
  }
  ~StubSession() {
    const std::string rm = "rm -rf " + lib_dir;
    [[maybe_unused]] int rc = system(rm.c_str());
  }
  static std::string stub_dir(const std::string &dir) {
    const std::string link = dir + "/libcuda.so.1";
    cr_assert_eq(symlink(CUDA_STUB_LIB, link.c_str()), 0, "cannot link %s", CUDA_STUB_LIB);
    return dir;
  }
};

// n bytes of data, then zeros to the item's span (the guard byte included).
Bytes payload_of(uint64_t n) {
  Bytes p(AVA_PAYLOAD_SPAN(n), 0);
  std::memset(p.data(), 0x5a, n);
  return p;
}

// One call of the driver API: its function, argument block and payload.
struct Call {
  const char *what;
  uint32_t func;
  Bytes args;
  Bytes payload;
};

template <class A> Call make(const char *what, uint32_t func, const A &a, Bytes payload = {}) {
  Bytes args(sizeof a);
  std::memcpy(args.data(), &a, sizeof a);
  return {what, func, std::move(args), std::move(payload)};
}

// Every call that names device memory, aimed at dst (and src where it takes two).
std::vector<Call> calls_on(uint64_t dst, uint64_t src, uint64_t n) {
  const ava_buf_desc in = {0, n, AVA_BUF_PRESENT | AVA_BUF_IN, 0};
  const ava_buf_desc out = {0, n, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
  std::vector<Call> c;
  c.push_back(make("cuMemcpyHtoD", AVA_CUDA_FN_CUMEMCPYHTOD_V2,
                   ava_cuda_cuMemcpyHtoD_v2_call{dst, in, n}, payload_of(n)));
  c.push_back(make("cuMemcpyDtoH", AVA_CUDA_FN_CUMEMCPYDTOH_V2,
                   ava_cuda_cuMemcpyDtoH_v2_call{out, src, n}));
  c.push_back(make("cuMemcpyDtoD", AVA_CUDA_FN_CUMEMCPYDTOD_V2,
                   ava_cuda_cuMemcpyDtoD_v2_call{dst, src, n}));
  c.push_back(make("cuMemcpyHtoDAsync", AVA_CUDA_FN_CUMEMCPYHTODASYNC_V2,
                   ava_cuda_cuMemcpyHtoDAsync_v2_call{dst, in, n, 0}, payload_of(n)));
  c.push_back(make("cuMemcpyDtoHAsync", AVA_CUDA_FN_CUMEMCPYDTOHASYNC_V2,
                   ava_cuda_cuMemcpyDtoHAsync_v2_call{out, src, n, 0}));
  c.push_back(make("cuMemcpyDtoDAsync", AVA_CUDA_FN_CUMEMCPYDTODASYNC_V2,
                   ava_cuda_cuMemcpyDtoDAsync_v2_call{dst, src, n, 0}));
  c.push_back(
      make("cuMemsetD8", AVA_CUDA_FN_CUMEMSETD8_V2, ava_cuda_cuMemsetD8_v2_call{dst, 0x41, n}));
  c.push_back(make("cuMemsetD32", AVA_CUDA_FN_CUMEMSETD32_V2,
                   ava_cuda_cuMemsetD32_v2_call{dst, 0x41414141, n / 4}));
  c.push_back(make("cuMemsetD8Async", AVA_CUDA_FN_CUMEMSETD8ASYNC,
                   ava_cuda_cuMemsetD8Async_call{dst, 0x41, n, 0}));
  c.push_back(make("cuMemsetD32Async", AVA_CUDA_FN_CUMEMSETD32ASYNC,
                   ava_cuda_cuMemsetD32Async_call{dst, 0x41414141, n / 4, 0}));
  return c;
}

uint64_t call_sync(RawGuest &g, const Call &c) {
  Bytes r;
  if (!g.call(c.func, c.args.data(), static_cast<uint32_t>(c.args.size()), c.payload, &r))
    return kNoAnswer;
  return ret_of(r);
}

uint64_t free_dev(RawGuest &g, uint64_t p) {
  return call_sync(g, make("cuMemFree", AVA_CUDA_FN_CUMEMFREE_V2, ava_cuda_cuMemFree_v2_call{p}));
}

// The error an async call reported, carried by the next sync reply (a
// cuMemFree(0), which reaches the stub): its value and function.
uint64_t next_async_error(RawGuest &g, uint32_t *func) {
  const Call probe = make("cuMemFree", AVA_CUDA_FN_CUMEMFREE_V2, ava_cuda_cuMemFree_v2_call{0});
  Bytes r;
  cr_assert(
      g.call(probe.func, probe.args.data(), static_cast<uint32_t>(probe.args.size()), {}, &r));
  ava_reply_common c{};
  cr_assert_geq(r.size(), sizeof(ava_msg_hdr) + sizeof c);
  std::memcpy(&c, r.data() + sizeof(ava_msg_hdr), sizeof c);
  *func = c.async_error_func;
  return c.async_error_class != 0 ? static_cast<uint64_t>(c.async_error_value) : 0;
}

} // namespace

Test(e2e_cuda_ranges, memory_not_the_guests_is_refused_before_the_driver, .timeout = 120) {
  StubSession s;
  // Control: what touches no memory reaches the driver (the stub's answer).
  cr_expect_eq(free_dev(s.guest, 0), kStubLibrary, "cuMemFree(0) did not reach the driver");
  for (const Call &c : calls_on(0, 0, 0)) {
    const uint64_t got = call_sync(s.guest, c);
    cr_expect_eq(got, kStubLibrary, "%s of 0 bytes did not reach the driver (%llu)", c.what,
                 static_cast<unsigned long long>(got));
  }
  for (uint64_t addr : kWorkerAddrs) {
    for (const Call &c : calls_on(addr, addr + 4096, kBytes)) {
      const uint64_t got = call_sync(s.guest, c);
      cr_expect_eq(got, kInvalidValue, "%s at 0x%llx: not refused (%llu)", c.what,
                   static_cast<unsigned long long>(addr), static_cast<unsigned long long>(got));
    }
    cr_expect_eq(free_dev(s.guest, addr), kInvalidValue, "cuMemFree(0x%llx): not refused",
                 static_cast<unsigned long long>(addr));
  }
  // A device-to-device copy needs both sides: one of them not the guest's is enough.
  cr_expect_eq(call_sync(s.guest, calls_on(0, kWorkerAddrs[0], kBytes)[2]), kInvalidValue);
  cr_expect_eq(free_dev(s.guest, 0), kStubLibrary, "the worker stopped serving");
  cr_expect(s.worker.alive());
}

// A raw guest may send the async ones async at once (the guest library would
// wait for a call of the same shape to succeed): the worker checks them all
// the same and reports the refusal with the next sync reply.
Test(e2e_cuda_ranges, async_calls_are_refused_too, .timeout = 120) {
  StubSession s;
  const uint32_t async_funcs[] = {AVA_CUDA_FN_CUMEMCPYHTODASYNC_V2,
                                  AVA_CUDA_FN_CUMEMCPYDTODASYNC_V2, AVA_CUDA_FN_CUMEMSETD8ASYNC,
                                  AVA_CUDA_FN_CUMEMSETD32ASYNC};
  for (uint32_t func : async_funcs) {
    for (const Call &c : calls_on(kWorkerAddrs[0], kWorkerAddrs[1], kBytes)) {
      if (c.func != func)
        continue;
      const Bytes m = s.guest.message(AVA_MSG_CALL, c.func, AVA_F_ASYNC, c.args.data(),
                                      static_cast<uint32_t>(c.args.size()), c.payload);
      cr_assert(s.guest.send_all(m), "cannot send %s", c.what);
      uint32_t failed = 0;
      cr_expect_eq(next_async_error(s.guest, &failed), kInvalidValue, "async %s: not refused",
                   c.what);
      cr_expect_eq(failed, c.func, "async %s: the error names function %u", c.what, failed);
    }
  }
  cr_expect_eq(free_dev(s.guest, 0), kStubLibrary, "the worker stopped serving");
  cr_expect(s.worker.alive());
}
