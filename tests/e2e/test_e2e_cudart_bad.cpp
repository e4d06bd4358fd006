// SPDX-License-Identifier: MIT
// A hostile guest of the CUDA worker: fat binaries with truncated or lying
// headers, launches with the wrong parameter size, unknown function
// handles. Each gets a CUDA error; the worker neither crashes nor stops
// serving. Sent as raw messages (a guest library never sends them), to a
// real `ava worker --spec cudart` running the toolkit's libcudart.so.13.
#include <criterion/criterion.h>

#include <cstring>
#include <string>

#include "cudart_raw.hpp"
#include "e2e_env.hpp"

using namespace e2e;

namespace {

// A sync launch (async = 0) of function with params_len bytes of arguments.
uint64_t launch(RawGuest &g, uint64_t function, uint64_t params_len) {
  ava_cudart_ava_cudart_launch_call a{};
  Bytes payload(AVA_PAYLOAD_SPAN(params_len), 0);
  a.function = function;
  a.grid_x = a.grid_y = a.grid_z = 1;
  a.block_x = a.block_y = a.block_z = 1;
  a.params = {0, params_len, AVA_BUF_PRESENT | AVA_BUF_IN, 0};
  a.params_len = params_len;
  a.async = 0;
  Bytes r;
  cr_assert(g.call(AVA_CUDART_FN_AVA_CUDART_LAUNCH, &a, sizeof a, payload, &r),
            "no answer to launch");
  ava_cudart_ava_cudart_launch_reply v{};
  cr_assert(RawGuest::reply_struct(r, &v));
  return RawGuest::header(r).status == AVA_OK ? v.ret : UINT64_MAX;
}

} // namespace

Test(e2e_cudart_bad, hostile_guest_gets_cuda_errors, .timeout = 120) {
  const std::string fatbin_path = test_fatbin_path();
  const Bytes fatbin = read_bytes(fatbin_path.c_str());
  cr_assert_gt(fatbin.size(), 64u, "cannot read %s", fatbin_path.c_str());
  CudartWorker w;
  std::string seen;
  cr_assert(w.started(&seen), "the worker did not start:\n%s", seen.c_str());
  RawGuest g = cudart_guest(w);
  cr_assert(g.connect_and_hello());

  // A real fat binary (nvcc output) registers; its kernel gets a handle.
  uint64_t fn = 0;
  cr_expect_eq(register_module(g, fatbin, fatbin.size(), "k_extern_c", &fn), kCudaSuccess);
  cr_expect_neq(fn, 0u, "no function handle for k_extern_c");

  // Truncated at header boundaries, and a length that lies about the bytes sent.
  for (size_t cut : {size_t{8}, size_t{16}, size_t{40}, size_t{80}, fatbin.size() / 2}) {
    Bytes part(fatbin.begin(), fatbin.begin() + static_cast<long>(cut));
    uint64_t f = 0;
    cr_expect_eq(register_module(g, part, part.size(), "k_extern_c", &f),
                 kCudaErrorInvalidKernelImage, "fat binary cut at %zu bytes", cut);
  }
  Bytes lying = fatbin;
  const uint64_t huge = 1ull << 62;
  std::memcpy(lying.data() + 8, &huge, sizeof huge); // the container's size field
  uint64_t f = 0;
  cr_expect_eq(register_module(g, lying, lying.size(), "k_extern_c", &f),
               kCudaErrorInvalidKernelImage, "container size 2^62");
  Bytes bad_magic = fatbin;
  bad_magic[0] ^= 0xff;
  cr_expect_eq(register_module(g, bad_magic, bad_magic.size(), "k_extern_c", &f),
               kCudaErrorInvalidKernelImage, "bad magic");
  // The length field disagrees with the buffer: refused before anything is read.
  const uint64_t r = register_module(g, fatbin, fatbin.size() + 64, "k_extern_c", &f);
  cr_expect_neq(r, kCudaSuccess, "a length beyond the bytes sent");

  // Launches: the wrong parameter size, and handles that name nothing.
  if (fn != 0) {
    cr_expect_eq(launch(g, fn, 3), kCudaErrorInvalidValue, "3 bytes of parameters");
    cr_expect_eq(launch(g, fn, 4096), kCudaErrorInvalidValue, "4096 bytes of parameters");
  }
  for (uint64_t bogus : {uint64_t{0x1234}, uint64_t{1} << 62, fn + 1, ~uint64_t{0}}) {
    const uint64_t ret = launch(g, bogus, 0);
    cr_expect(ret != kCudaSuccess && ret != UINT64_MAX, "launch of unknown function %llx gave %llu",
              (unsigned long long)bogus, (unsigned long long)ret);
  }
  cr_expect(still_serves(g), "the worker stopped serving");
  cr_expect(w.alive(), "the worker died");
}
