// SPDX-License-Identifier: MIT
// A hostile guest of the OpenCL worker (PoCL behind it) over shm: it lends
// info queries that return objects (clGetContextInfo CL_CONTEXT_DEVICES,
// clGetDeviceInfo CL_DEVICE_PLATFORM, clGetCommandQueueInfo CL_QUEUE_CONTEXT)
// an out buffer in the shared heap, larger than the answer and filled with
// addresses it chose. The worker must answer with the one real id and
// zeroes: never an id for a planted address (the ICD dispatch would jump
// through it), never a raw driver pointer. The planted values name no object
// later, and the worker keeps serving another guest.
#include <criterion/criterion.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "opencl_shm_guest.hpp"

using namespace opencl_shm;

namespace {

constexpr uint64_t kSlots = 64; // the buffer lent; each answer fills one slot
// What the guest plants: pointer-looking values, one per slot.
constexpr uint64_t kPlanted = 0x00007f4141410000ull;

// The answer of an info query lent kSlots heap slots that hold kPlanted + i:
// slot 0 must be expected, every other slot zero; the size the driver
// reported, when asked for, one slot.
template <class Call, class Reply>
void expect_no_forged_ids(ShmGuest &g, uint32_t func, Call a, uint64_t heap_at, bool ask_size,
                          uint64_t expected, const char *what) {
  for (uint64_t i = 0; i < kSlots; ++i) {
    const uint64_t v = kPlanted + i * 0x1000;
    std::memcpy(g.heap(heap_at + i * 8), &v, sizeof v);
  }
  a.param_value_size = kSlots * 8;
  a.param_value = {heap_at, kSlots * 8, AVA_BUF_PRESENT | AVA_BUF_OUT | AVA_BUF_HEAP, 0};
  a.param_value_size_ret = ask_size ? out(8) : ava_buf_desc{};
  ava::MsgBuf r;
  cr_assert_eq(g.call(func, a, &r), AVA_OK, "[%s] status", what);
  const auto v = ShmGuest::reply_struct<Reply>(r);
  cr_assert_eq(v.ret, CL_SUCCESS, "[%s] ret %ld", what, static_cast<long>(v.ret));
  if (ask_size)
    cr_expect_eq(g.out_value<uint64_t>(r, v.param_value_size_ret), 8u, "[%s] size", what);
  const std::vector<uint8_t> bytes = g.out_bytes(r, v.param_value);
  cr_assert_eq(bytes.size(), kSlots * 8, "[%s] %zu bytes back", what, bytes.size());
  std::vector<uint64_t> slots(kSlots);
  std::memcpy(slots.data(), bytes.data(), bytes.size());
  cr_expect_eq(slots[0], expected, "[%s] slot 0: 0x%lx, not the id 0x%lx", what,
               static_cast<unsigned long>(slots[0]), static_cast<unsigned long>(expected));
  for (uint64_t i = 1; i < kSlots; ++i)
    cr_expect_eq(slots[i], 0u, "[%s] slot %lu came back as 0x%lx", what,
                 static_cast<unsigned long>(i), static_cast<unsigned long>(slots[i]));

  // Whatever came back besides the answer, and the planted values
  // themselves, name no device: the API's invalid-object error.
  std::vector<uint64_t> probes = {kPlanted, kPlanted + 0x1000};
  for (uint64_t i = 1; i < kSlots; ++i)
    if (slots[i] != 0)
      probes.push_back(slots[i]);
  for (uint64_t id : probes) {
    ava_opencl_clGetDeviceInfo_call q{.device = id,
                                      .param_name = CL_DEVICE_NAME,
                                      .param_value_size = 64,
                                      .param_value = out(64),
                                      .param_value_size_ret = {}};
    cr_assert_eq(g.call(AVA_OPENCL_FN_CLGETDEVICEINFO, q, &r), AVA_OK,
                 "[%s] using 0x%lx as a device", what, static_cast<unsigned long>(id));
    cr_expect_eq(ShmGuest::reply_struct<ava_opencl_clGetDeviceInfo_reply>(r).ret, CL_INVALID_DEVICE,
                 "[%s] 0x%lx is a device", what, static_cast<unsigned long>(id));
  }
}

} // namespace

Test(e2e_opencl_forged_handles, planted_heap_values_never_become_handles, .timeout = 300) {
  Worker w;
  {
    ShmGuest g(w.address);
    const OpenclContext o = open_context(g);
    const uint64_t platform = o.platform, device = o.device, context = o.context;
    ava::MsgBuf r;
    ava_opencl_clCreateCommandQueue_call q{
        .context = context, .device = device, .properties = 0, .errcode_ret = out(4)};
    cr_assert_eq(g.call(AVA_OPENCL_FN_CLCREATECOMMANDQUEUE, q, &r), AVA_OK);
    const uint64_t queue = ShmGuest::reply_struct<ava_opencl_clCreateCommandQueue_reply>(r).ret;
    cr_assert_neq(queue, 0u, "clCreateCommandQueue failed");

    ava_opencl_clGetContextInfo_call ci{};
    ci.context = context;
    ci.param_name = CL_CONTEXT_DEVICES;
    expect_no_forged_ids<ava_opencl_clGetContextInfo_call, ava_opencl_clGetContextInfo_reply>(
        g, AVA_OPENCL_FN_CLGETCONTEXTINFO, ci, 64 * 1024, true, device, "CL_CONTEXT_DEVICES");
    // No param_value_size_ret: the worker still translates only what was written.
    ava_opencl_clGetDeviceInfo_call di{};
    di.device = device;
    di.param_name = CL_DEVICE_PLATFORM;
    expect_no_forged_ids<ava_opencl_clGetDeviceInfo_call, ava_opencl_clGetDeviceInfo_reply>(
        g, AVA_OPENCL_FN_CLGETDEVICEINFO, di, 128 * 1024, false, platform, "CL_DEVICE_PLATFORM");
    ava_opencl_clGetCommandQueueInfo_call qi{};
    qi.command_queue = queue;
    qi.param_name = CL_QUEUE_CONTEXT;
    expect_no_forged_ids<ava_opencl_clGetCommandQueueInfo_call,
                         ava_opencl_clGetCommandQueueInfo_reply>(
        g, AVA_OPENCL_FN_CLGETCOMMANDQUEUEINFO, qi, 192 * 1024, true, context, "CL_QUEUE_CONTEXT");
  }
  // Another guest is served as ever.
  w.expect_serves_another();
}
