// SPDX-License-Identifier: MIT
// A hostile guest of the OpenCL worker (PoCL behind it) over shm hands a
// string argument, clCreateProgramWithBuiltInKernels' kernel_names, in the
// shared heap without its NUL. Read to its NUL where it lies, the string
// would run on past the bytes sent, into whatever else the heap holds or
// past the heap's end, first in the worker's own annotation (strlen) and
// then in the API (issue 13: heap strings sized by strlen). The worker reads
// a string only from its own copy, which ends right after the bytes sent:
//  - "pocl.add.i8" (a built-in kernel of PoCL's CPU device) sent without its
//    NUL, the heap going on with "XYZ", and the same name in the heap's last
//    bytes: both refused (the string is longer than the guest said);
//  - the name sent with its NUL: the program is made.
// The worker serves on, and another guest after it. (The deterministic form,
// a string ending right before a page the worker cannot read, is
// tests/unit/test_worker_heap.cpp.)
#include <criterion/criterion.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "opencl_shm_guest.hpp"

using namespace opencl_shm;

namespace {

const char kName[] = "pocl.add.i8";
constexpr uint64_t kNameLen = sizeof kName - 1; // sent without its NUL

// clCreateProgramWithBuiltInKernels with kernel_names at heap offset at,
// len bytes: the worker's status, and the API's error code (when served).
struct Made {
  int status;
  int32_t err;
};

Made builtin_program(ShmGuest &g, const OpenclContext &o, uint64_t at, uint64_t len) {
  Payload p;
  ava_opencl_clCreateProgramWithBuiltInKernels_call a{
      .context = o.context,
      .num_devices = 1,
      .device_list = p.in(&o.device, sizeof o.device),
      .kernel_names = {at, len, AVA_BUF_PRESENT | AVA_BUF_IN | AVA_BUF_HEAP, 0},
      .errcode_ret = out(4)};
  ava::MsgBuf r;
  const int st = g.call(AVA_OPENCL_FN_CLCREATEPROGRAMWITHBUILTINKERNELS, a, &r, p);
  if (st != AVA_OK)
    return {st, 0};
  const auto v = ShmGuest::reply_struct<ava_opencl_clCreateProgramWithBuiltInKernels_reply>(r);
  return {st, g.out_value<int32_t>(r, v.errcode_ret)};
}

} // namespace

Test(e2e_opencl_heap_strings, a_string_ends_where_the_guest_said, .timeout = 300) {
  Worker w;
  {
    ShmGuest g(w.address);
    const OpenclContext o = open_context(g);

    // The name, then more letters and only then a NUL.
    const uint64_t at = 64 * 1024;
    std::memcpy(g.heap(at), kName, kNameLen);
    std::memcpy(g.heap(at + kNameLen), "XYZ", 4);
    Made m = builtin_program(g, o, at, kNameLen);
    cr_expect_eq(m.status, AVA_E_LENGTH, "a name without its NUL: status %d", m.status);

    // The name in the heap's last bytes: nothing after it to stop a read.
    const uint64_t last = g.heap_size() - kNameLen;
    std::memcpy(g.heap(last), kName, kNameLen);
    m = builtin_program(g, o, last, kNameLen);
    cr_expect_eq(m.status, AVA_E_LENGTH, "a name in the heap's last bytes: status %d", m.status);

    // Sent with its NUL, the same bytes make the program.
    g.heap(at)[kNameLen] = 0;
    m = builtin_program(g, o, at, kNameLen + 1);
    cr_expect_eq(m.status, AVA_OK);
    cr_expect_eq(m.err, CL_SUCCESS, "\"%s\" with its NUL: error %d", kName, m.err);
  }
  w.expect_serves_another();
}
