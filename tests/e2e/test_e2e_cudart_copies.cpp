// SPDX-License-Identifier: MIT
// Issue 13: a hostile guest of the CUDA worker must not read or write memory
// that is not its own. Raw messages (no guest library sends them) to a real
// `ava worker --spec cudart`: copies with a kind that is not their wire
// function's (HostToHost with worker addresses), device pointers the guest
// was never given, ranges past the end of an allocation, another guest's
// allocation. The worker answers each with the CUDA error ava chose
// (cudaErrorInvalidMemcpyDirection for a kind, cudaErrorInvalidValue for
// memory that is not the guest's, cudaErrorInvalidPitchValue for a pitch
// narrower than its row) before the runtime is reached, and keeps serving.
//
// e2e_cudart_copies/* runs anywhere: without a GPU the runtime answers
// every call that reaches it with its "no device" error (35), which tells
// ava's refusals apart. e2e_cudart_copies_gpu/* needs allocations, so a GPU
// (scripts/gpu-check.sh runs it there); without one it is skipped.
#include <criterion/criterion.h>

#include <cstring>
#include <string>
#include <vector>

#include "cudart_raw.hpp"
#include "e2e_env.hpp"

using namespace e2e;

namespace {

// cudaMemcpyKind values (driver_types.h).
constexpr uint64_t kHostToHost = 0, kHostToDevice = 1, kDeviceToHost = 2, kDeviceToDevice = 3,
                   kDefault = 4;
// Addresses that look like the worker's own: its heap and libraries, its
// executable, a low page. A guest that could copy there would own the worker.
constexpr uint64_t kWorkerAddrs[] = {0x7f0000001000ull, 0x555555554000ull, 0x1000ull};

struct Session {
  CudartWorker worker;
  RawGuest guest = cudart_guest(worker);
  explicit Session(const std::vector<std::string> &worker_options = {}) : worker(worker_options) {
    std::string seen;
    cr_assert(worker.started(&seen), "the worker did not start:\n%s", seen.c_str());
    cr_assert(guest.connect_and_hello());
  }
};

Bytes payload_of(uint64_t n, uint8_t fill) {
  Bytes p(AVA_PAYLOAD_SPAN(n), 0);
  std::memset(p.data(), fill, n);
  return p;
}

uint64_t to_device(RawGuest &g, uint64_t dst, uint64_t n, uint64_t kind, uint8_t fill = 0x5a) {
  ava_cudart_ava_cudart_memcpy_to_device_call a{};
  a.dst = dst;
  a.src = {0, n, AVA_BUF_PRESENT | AVA_BUF_IN, 0};
  a.count = n;
  a.kind = kind;
  return call_ret(g, AVA_CUDART_FN_AVA_CUDART_MEMCPY_TO_DEVICE, a, payload_of(n, fill));
}

uint64_t to_host(RawGuest &g, uint64_t src, uint64_t n, uint64_t kind, Bytes *got = nullptr) {
  ava_cudart_ava_cudart_memcpy_to_host_call a{};
  a.dst = {0, n, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
  a.src = src;
  a.count = n;
  a.kind = kind;
  Bytes r;
  const uint64_t ret = call_ret(g, AVA_CUDART_FN_AVA_CUDART_MEMCPY_TO_HOST, a, {}, &r);
  ava_cudart_ava_cudart_memcpy_to_host_reply v{};
  if (got != nullptr && ret == kCudaSuccess && RawGuest::reply_struct(r, &v))
    *got = out_buffer(r, v.dst);
  return ret;
}

uint64_t on_device(RawGuest &g, uint64_t dst, uint64_t src, uint64_t n, uint64_t kind) {
  ava_cudart_ava_cudart_memcpy_on_device_call a{};
  a.dst = dst;
  a.src = src;
  a.count = n;
  a.kind = kind;
  return call_ret(g, AVA_CUDART_FN_AVA_CUDART_MEMCPY_ON_DEVICE, a);
}

// A 2D copy of width x height; the host side (if any) travels with the call.
uint64_t copy2d(RawGuest &g, uint64_t dst, uint64_t dpitch, uint64_t src, uint64_t spitch,
                uint64_t width, uint64_t height, uint64_t kind, int dst_host, int src_host,
                uint64_t host_span) {
  ava_cudart_ava_cudart_memcpy2d_call a{};
  a.dst = dst;
  a.dpitch = dpitch;
  a.src = src;
  a.spitch = spitch;
  a.width = width;
  a.height = height;
  a.kind = kind;
  a.dst_host = dst_host;
  a.src_host = src_host;
  a.host_span = host_span;
  Bytes payload;
  if (host_span != 0) {
    a.host = {0, host_span, AVA_BUF_PRESENT | AVA_BUF_IN | (dst_host ? AVA_BUF_OUT : 0u), 0};
    payload = payload_of(host_span, 0x33);
  }
  return call_ret(g, AVA_CUDART_FN_AVA_CUDART_MEMCPY2D, a, payload);
}

uint64_t memset_dev(RawGuest &g, uint64_t p, uint64_t n) {
  ava_cudart_cudaMemset_call a{};
  a.devPtr = p;
  a.value = 0x41;
  a.count = n;
  return call_ret(g, AVA_CUDART_FN_CUDAMEMSET, a);
}

uint64_t memset2d(RawGuest &g, uint64_t p, uint64_t pitch, uint64_t width, uint64_t height) {
  ava_cudart_cudaMemset2D_call a{};
  a.devPtr = p;
  a.pitch = pitch;
  a.width = width;
  a.height = height;
  return call_ret(g, AVA_CUDART_FN_CUDAMEMSET2D, a);
}

uint64_t free_dev(RawGuest &g, uint64_t p) {
  ava_cudart_cudaFree_call a{};
  a.devPtr = p;
  return call_ret(g, AVA_CUDART_FN_CUDAFREE, a);
}

uint64_t attributes(RawGuest &g, uint64_t p, int *type = nullptr) {
  ava_cudart_cudaPointerGetAttributes_call a{};
  // struct cudaPointerAttributes: type, device, two pointers, 8 reserved longs.
  a.attributes = {0, 88, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
  a.ptr = p;
  Bytes r;
  const uint64_t ret = call_ret(g, AVA_CUDART_FN_CUDAPOINTERGETATTRIBUTES, a, {}, &r);
  ava_cudart_cudaPointerGetAttributes_reply v{};
  if (type != nullptr && ret == kCudaSuccess && RawGuest::reply_struct(r, &v)) {
    const Bytes attr = out_buffer(r, v.attributes);
    if (attr.size() >= sizeof *type)
      std::memcpy(type, attr.data(), sizeof *type);
  }
  return ret;
}

uint64_t peer(RawGuest &g, uint64_t dst, uint64_t src, uint64_t n) {
  ava_cudart_cudaMemcpyPeer_call a{};
  a.dst = dst;
  a.src = src;
  a.count = n;
  return call_ret(g, AVA_CUDART_FN_CUDAMEMCPYPEER, a);
}

// Sends an async CALL (no reply); its error comes with the next sync reply.
template <class A>
void send_async(RawGuest &g, uint32_t func, const A &args, const Bytes &payload = {}) {
  const Bytes m = g.message(AVA_MSG_CALL, func, AVA_F_ASYNC, &args, sizeof args, payload);
  cr_assert(g.send_all(m), "cannot send async call %u", func);
}

// The async error a sync call's reply carries: its value, and the function.
uint64_t next_async_error(RawGuest &g, uint32_t *func) {
  ava_cudart_cudaRuntimeGetVersion_call a{};
  a.runtimeVersion = {0, sizeof(int), AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
  Bytes r;
  cr_assert(g.call(AVA_CUDART_FN_CUDARUNTIMEGETVERSION, &a, sizeof a, {}, &r));
  ava_reply_common c{};
  cr_assert_geq(r.size(), sizeof(ava_msg_hdr) + sizeof c);
  std::memcpy(&c, r.data() + sizeof(ava_msg_hdr), sizeof c);
  *func = c.async_error_func;
  return c.async_error_class != 0 ? static_cast<uint64_t>(c.async_error_value) : kCudaSuccess;
}

uint64_t malloc_dev(RawGuest &g, uint64_t size, uint64_t *p) {
  ava_cudart_cudaMalloc_call a{};
  a.devPtr = {0, 8, AVA_BUF_PRESENT | AVA_BUF_OUT, 0};
  a.size = size;
  Bytes r;
  const uint64_t ret = call_ret(g, AVA_CUDART_FN_CUDAMALLOC, a, {}, &r);
  ava_cudart_cudaMalloc_reply v{};
  *p = 0;
  if (ret == kCudaSuccess && RawGuest::reply_struct(r, &v)) {
    const Bytes out = out_buffer(r, v.devPtr);
    if (out.size() == 8)
      std::memcpy(p, out.data(), 8);
  }
  return ret;
}

// What the runtime itself answers here for a call that touches no memory
// (cudaFree(NULL): 35 without a device, 0 with one).
uint64_t runtime_answer(RawGuest &g) {
  return free_dev(g, 0);
}

bool is_ava_refusal(uint64_t ret) {
  return ret == kCudaErrorInvalidValue || ret == kCudaErrorInvalidMemcpyDirection ||
         ret == kCudaErrorInvalidPitchValue;
}

} // namespace

// Every copy with a kind that is not its wire function's direction.
Test(e2e_cudart_copies, refused_kinds, .timeout = 120) {
  Session s;
  RawGuest &g = s.guest;
  const uint64_t runtime = runtime_answer(g);
  cr_assert(!is_ava_refusal(runtime) && runtime != kNoAnswer, "the runtime answers %llu",
            (unsigned long long)runtime);
  for (uint64_t addr : kWorkerAddrs) {
    for (uint64_t kind : {kHostToHost, kDeviceToHost, kDeviceToDevice, uint64_t{7}})
      cr_expect_eq(to_device(g, addr, 64, kind), kCudaErrorInvalidMemcpyDirection,
                   "to_device kind %llu at %llx", (unsigned long long)kind,
                   (unsigned long long)addr);
    for (uint64_t kind : {kHostToHost, kHostToDevice, kDeviceToDevice})
      cr_expect_eq(to_host(g, addr, 64, kind), kCudaErrorInvalidMemcpyDirection,
                   "to_host kind %llu from %llx", (unsigned long long)kind,
                   (unsigned long long)addr);
    for (uint64_t kind : {kHostToHost, kHostToDevice, kDeviceToHost})
      cr_expect_eq(on_device(g, addr, addr + 4096, 64, kind), kCudaErrorInvalidMemcpyDirection,
                   "on_device kind %llu at %llx", (unsigned long long)kind,
                   (unsigned long long)addr);
    // 2D: from the device into the call's buffer, into the device from it, on the device.
    cr_expect_eq(copy2d(g, 0, 16, addr, 16, 16, 4, kHostToHost, 1, 0, 64),
                 kCudaErrorInvalidMemcpyDirection, "2D to host, HostToHost");
    cr_expect_eq(copy2d(g, addr, 16, 0, 16, 16, 4, kDeviceToHost, 0, 1, 64),
                 kCudaErrorInvalidMemcpyDirection, "2D to device, DeviceToHost");
    cr_expect_eq(copy2d(g, addr, 16, addr + 4096, 16, 16, 4, kHostToHost, 0, 0, 0),
                 kCudaErrorInvalidMemcpyDirection, "2D on the device, HostToHost");
  }
  cr_expect(still_serves(g), "the worker stopped serving");
  cr_expect(s.worker.alive(), "the worker died");
}

// The right kinds, but device memory the guest was never given.
Test(e2e_cudart_copies, refused_memory_not_the_guests, .timeout = 120) {
  Session s;
  RawGuest &g = s.guest;
  const uint64_t runtime = runtime_answer(g);
  cr_assert(!is_ava_refusal(runtime) && runtime != kNoAnswer, "the runtime answers %llu",
            (unsigned long long)runtime);
  const std::string fatbin_path = test_fatbin_path();
  const Bytes fatbin = read_bytes(fatbin_path.c_str());
  cr_assert_gt(fatbin.size(), 64u, "cannot read %s", fatbin_path.c_str());
  uint64_t fn = 0, module = 0;
  cr_assert_eq(register_module(g, fatbin, fatbin.size(), "k_extern_c", &fn, &module, "d_var", 16),
               kCudaSuccess);
  for (uint64_t addr : kWorkerAddrs) {
    for (uint64_t kind : {kHostToDevice, kDefault}) {
      cr_expect_eq(to_device(g, addr, 64, kind), kCudaErrorInvalidValue, "to_device at %llx",
                   (unsigned long long)addr);
      cr_expect_eq(to_host(g, addr, 64, kind == kDefault ? kDefault : kDeviceToHost),
                   kCudaErrorInvalidValue, "to_host from %llx", (unsigned long long)addr);
      cr_expect_eq(
          on_device(g, addr, addr + 4096, 64, kind == kDefault ? kDefault : kDeviceToDevice),
          kCudaErrorInvalidValue, "on_device at %llx", (unsigned long long)addr);
    }
    cr_expect_eq(copy2d(g, 0, 16, addr, 16, 16, 4, kDeviceToHost, 1, 0, 64), kCudaErrorInvalidValue,
                 "2D to host from %llx", (unsigned long long)addr);
    cr_expect_eq(copy2d(g, addr, 16, 0, 16, 16, 4, kHostToDevice, 0, 1, 64), kCudaErrorInvalidValue,
                 "2D to device at %llx", (unsigned long long)addr);
    cr_expect_eq(copy2d(g, addr, 16, addr + 4096, 16, 16, 4, kDeviceToDevice, 0, 0, 0),
                 kCudaErrorInvalidValue, "2D on the device at %llx", (unsigned long long)addr);
    cr_expect_eq(memset_dev(g, addr, 64), kCudaErrorInvalidValue, "memset at %llx",
                 (unsigned long long)addr);
    cr_expect_eq(memset2d(g, addr, 16, 16, 4), kCudaErrorInvalidValue, "memset2D at %llx",
                 (unsigned long long)addr);
    cr_expect_eq(free_dev(g, addr), kCudaErrorInvalidValue, "free of %llx",
                 (unsigned long long)addr);
    const uint64_t attr_ret = attributes(g, addr);
    cr_expect_eq(attr_ret, kCudaErrorInvalidValue, "attributes of %llx gave %llu",
                 (unsigned long long)addr, (unsigned long long)attr_ret);
    cr_expect_eq(peer(g, addr, addr + 4096, 64), kCudaErrorInvalidValue, "peer copy at %llx",
                 (unsigned long long)addr);
    // A module variable to and from device memory that is not the guest's.
    for (int to_symbol : {1, 0}) {
      ava_cudart_ava_cudart_symbol_copy_call a{};
      a.module = module;
      a.count = 8;
      a.to_symbol = to_symbol;
      a.device = addr;
      cr_expect_eq(call_ret(g, AVA_CUDART_FN_AVA_CUDART_SYMBOL_COPY, a), kCudaErrorInvalidValue,
                   "symbol copy (to_symbol %d) with %llx", to_symbol, (unsigned long long)addr);
    }
  }
  // Rectangles whose rows are wider than their pitch are no rectangles.
  cr_expect_eq(copy2d(g, 0, 8, kWorkerAddrs[0], 16, 16, 4, kDeviceToHost, 1, 0, 0),
               kCudaErrorInvalidPitchValue, "2D with dpitch < width");
  cr_expect_eq(memset2d(g, kWorkerAddrs[0], 8, 16, 4), kCudaErrorInvalidPitchValue,
               "memset2D with pitch < width");
  // The host side is the call's own buffer: of the rectangle's size, and there.
  cr_expect_eq(copy2d(g, 0, 16, kWorkerAddrs[0], 16, 16, 4, kDeviceToHost, 1, 0, 32),
               kCudaErrorInvalidValue, "2D host buffer shorter than the rectangle");
  {
    ava_cudart_ava_cudart_memcpy2d_call a{};
    a.src = kWorkerAddrs[0];
    a.dpitch = a.spitch = a.width = 16;
    a.height = 4;
    a.kind = kDeviceToHost;
    a.dst_host = 1;
    a.host_span = 64; // and no buffer: the worker has nothing of the call's to write to
    cr_expect_eq(call_ret(g, AVA_CUDART_FN_AVA_CUDART_MEMCPY2D, a), kCudaErrorInvalidValue,
                 "2D to host without a buffer");
  }
  {
    ava_cudart_ava_cudart_memcpy_to_host_call a{};
    a.src = kWorkerAddrs[0];
    a.count = 64;
    a.kind = kDeviceToHost; // and no OUT buffer
    cr_expect_eq(call_ret(g, AVA_CUDART_FN_AVA_CUDART_MEMCPY_TO_HOST, a), kCudaErrorInvalidValue,
                 "to_host without a buffer");
  }

  // Async calls: refused alike, reported with the next sync reply.
  uint32_t func = 0;
  {
    ava_cudart_cudaMemsetAsync_call a{};
    a.devPtr = kWorkerAddrs[0];
    a.count = 64;
    send_async(g, AVA_CUDART_FN_CUDAMEMSETASYNC, a);
    cr_expect_eq(next_async_error(g, &func), kCudaErrorInvalidValue, "cudaMemsetAsync");
    cr_expect_eq(func, AVA_CUDART_FN_CUDAMEMSETASYNC);
  }
  {
    ava_cudart_ava_cudart_memcpy_to_device_async_call a{};
    a.dst = kWorkerAddrs[1];
    a.src = {0, 64, AVA_BUF_PRESENT | AVA_BUF_IN, 0};
    a.count = 64;
    send_async(g, AVA_CUDART_FN_AVA_CUDART_MEMCPY_TO_DEVICE_ASYNC, a, payload_of(64, 1));
    cr_expect_eq(next_async_error(g, &func), kCudaErrorInvalidValue, "to_device_async");
    cr_expect_eq(func, AVA_CUDART_FN_AVA_CUDART_MEMCPY_TO_DEVICE_ASYNC);
  }
  {
    ava_cudart_ava_cudart_memcpy_on_device_call a{};
    a.dst = kWorkerAddrs[0];
    a.src = kWorkerAddrs[1];
    a.count = 64;
    a.kind = kDeviceToDevice;
    a.async = 1;
    send_async(g, AVA_CUDART_FN_AVA_CUDART_MEMCPY_ON_DEVICE, a);
    cr_expect_eq(next_async_error(g, &func), kCudaErrorInvalidValue, "on_device async");
  }

  // Calls that touch no memory go to the runtime, which answers as natively
  // (without a device: with its own error, so ava did not refuse them).
  const uint64_t zero_ret = memset_dev(g, kWorkerAddrs[0], 0);
  if (runtime != kCudaSuccess)
    cr_expect_eq(zero_ret, runtime, "a 0-byte memset at an unknown address");
  cr_expect(still_serves(g), "the worker stopped serving");
  cr_expect(s.worker.alive(), "the worker died");
}

// With a device: allocations bound what each guest may name. Both guests
// are served by one process (--shared), where only the guest's own range
// table keeps one from naming the other's memory.
Test(e2e_cudart_copies_gpu, allocations_bound_the_guests_memory, .timeout = 180) {
  Session s({"--shared"});
  RawGuest &g = s.guest;
  uint64_t a = 0, b = 0;
  const uint64_t got = malloc_dev(g, 256, &a);
  if (got != kCudaSuccess)
    cr_skip_test("no CUDA device here (cudaMalloc gave %llu): scripts/gpu-check.sh runs this",
                 (unsigned long long)got);
  cr_assert_neq(a, 0u);
  cr_assert_eq(malloc_dev(g, 256, &b), kCudaSuccess);

  // Inside one allocation, from its middle to its end: the guest's.
  cr_expect_eq(to_device(g, a + 64, 64, kHostToDevice, 0x21), kCudaSuccess);
  cr_expect_eq(to_device(g, a + 128, 128, kDefault, 0x22), kCudaSuccess, "up to the last byte");
  Bytes back;
  cr_expect_eq(to_host(g, a + 64, 192, kDeviceToHost, &back), kCudaSuccess);
  cr_expect(back.size() == 192 && back[0] == 0x21 && back[63] == 0x21 && back[64] == 0x22 &&
                back[191] == 0x22,
            "the bytes written came back");
  cr_expect_eq(on_device(g, b, a, 256, kDeviceToDevice), kCudaSuccess);
  cr_expect_eq(memset_dev(g, a + 128, 128), kCudaSuccess);
  int type = 0;
  cr_expect_eq(attributes(g, a + 8, &type), kCudaSuccess);
  cr_expect_eq(type, 2, "cudaMemoryTypeDevice");
  // Past its end, even into a neighbouring allocation of the same guest.
  cr_expect_eq(to_device(g, a + 200, 64, kHostToDevice), kCudaErrorInvalidValue);
  cr_expect_eq(to_host(g, a + 255, 2, kDeviceToHost), kCudaErrorInvalidValue);
  cr_expect_eq(on_device(g, b, a + 1, 256, kDeviceToDevice), kCudaErrorInvalidValue);
  cr_expect_eq(memset_dev(g, a + 128, 129), kCudaErrorInvalidValue);
  cr_expect_eq(memset2d(g, a, 64, 64, 5), kCudaErrorInvalidValue, "5 rows of 64 in 256 bytes");
  cr_expect_eq(memset2d(g, a, 64, 64, 4), kCudaSuccess, "4 rows of 64 in 256 bytes");
  cr_expect_eq(copy2d(g, a, 64, 0, 64, 64, 5, kHostToDevice, 0, 1, 4 * 64 + 64),
               kCudaErrorInvalidValue, "2D rectangle past the end");
  cr_expect_eq(to_device(g, a, 64, kHostToHost), kCudaErrorInvalidMemcpyDirection);

  // Another guest's allocation is not this guest's.
  RawGuest other = cudart_guest(s.worker);
  cr_assert(other.connect_and_hello());
  uint64_t c = 0;
  cr_assert_eq(malloc_dev(other, 256, &c), kCudaSuccess);
  cr_expect_eq(to_device(g, c, 64, kHostToDevice), kCudaErrorInvalidValue, "other's memory");
  cr_expect_eq(to_host(g, c, 64, kDeviceToHost), kCudaErrorInvalidValue, "other's memory");
  cr_expect_eq(on_device(g, a, c, 64, kDeviceToDevice), kCudaErrorInvalidValue);
  cr_expect_eq(memset_dev(g, c, 64), kCudaErrorInvalidValue, "other's memory");
  cr_expect_eq(free_dev(g, c), kCudaErrorInvalidValue, "other's allocation");
  cr_expect_eq(to_device(other, c, 64, kHostToDevice), kCudaSuccess, "its owner still may");
  cr_expect_eq(free_dev(other, c), kCudaSuccess);

  // Frees: only the start of an allocation, once; after it, nothing.
  cr_expect_eq(free_dev(g, a + 8), kCudaErrorInvalidValue, "a pointer into the middle");
  cr_expect_eq(free_dev(g, a), kCudaSuccess);
  cr_expect_eq(free_dev(g, a), kCudaErrorInvalidValue, "a second free");
  cr_expect_eq(to_device(g, a, 64, kHostToDevice), kCudaErrorInvalidValue, "after the free");
  // A reset takes the device's memory with it.
  ava_cudart_cudaDeviceReset_call reset{};
  cr_expect_eq(call_ret(g, AVA_CUDART_FN_CUDADEVICERESET, reset), kCudaSuccess);
  cr_expect_eq(to_device(g, b, 64, kHostToDevice), kCudaErrorInvalidValue, "after the reset");
  cr_expect(still_serves(g), "the worker stopped serving");
  cr_expect(s.worker.alive(), "the worker died");
}
