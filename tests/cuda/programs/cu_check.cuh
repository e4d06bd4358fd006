// Shared by the CUDA test programs (tests/cuda/programs). Every API result is
// checked; a failure prints the call and the error *name*, never a pointer or
// a timing, so a native run and a run under `ava run` print the same bytes.
//
// Exit codes: 0 = every check held, 1 = a check failed, 2 = no usable CUDA
// device (the driver is missing or there is no GPU), reported by whichever
// call found out first.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace cu {

constexpr int kExitOk = 0;
constexpr int kExitCheckFailed = 1;
constexpr int kExitNoDevice = 2;

inline bool is_no_device(cudaError_t e) {
  return e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || e == cudaErrorStubLibrary;
}

inline void print_error(const char *what, cudaError_t e) {
  std::printf("%s: %s (%d)\n", what, cudaGetErrorName(e), static_cast<int>(e));
}

// Only called from the main thread: exit() runs the guest library's teardown.
[[noreturn]] inline void fail(const char *what, cudaError_t e) {
  print_error(what, e);
  std::printf("result: %s\n", is_no_device(e) ? "no CUDA device" : "FAILED");
  std::fflush(stdout);
  std::exit(is_no_device(e) ? kExitNoDevice : kExitCheckFailed);
}

[[noreturn]] inline void fail_check(const char *what) {
  std::printf("check failed: %s\nresult: FAILED\n", what);
  std::fflush(stdout);
  std::exit(kExitCheckFailed);
}

inline int finish_ok() {
  std::printf("result: ok\n");
  return kExitOk;
}

// The first error a worker thread saw, reported by the main thread.
struct FirstError {
  cudaError_t error = cudaSuccess;
  const char *what = nullptr;
  void set(const char *w, cudaError_t e) {
    if (error == cudaSuccess && e != cudaSuccess) {
      error = e;
      what = w;
    }
  }
};

} // namespace cu

#define CU_CHECK(call)                                                                             \
  do {                                                                                             \
    const cudaError_t cu_check_error_ = (call);                                                    \
    if (cu_check_error_ != cudaSuccess)                                                            \
      cu::fail(#call, cu_check_error_);                                                            \
  } while (0)

// A launch reports configuration errors at once (execution errors come at
// the next synchronization, which CU_CHECK covers).
#define CU_CHECK_LAUNCH(name)                                                                      \
  do {                                                                                             \
    const cudaError_t cu_check_error_ = cudaGetLastError();                                        \
    if (cu_check_error_ != cudaSuccess)                                                            \
      cu::fail("launch " name, cu_check_error_);                                                   \
  } while (0)

#define CU_EXPECT(cond)                                                                            \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      cu::fail_check(#cond);                                                                       \
  } while (0)
