// SPDX-License-Identifier: MIT
// What every conformance test shares: the devices of the backend under
// test (PARLA_TEST_DEVICES), their architecture, and small helpers.
#pragma once

#include <criterion/criterion.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "parla/opencl.hpp"
#include "parla/parla.hpp"

// Criterion's Test() bodies are extern "C" functions, and GCC 12 emits a
// coroutine lambda defined in one twice ("symbol already defined"): tests
// with coroutine bodies use PARLA_TEST, whose body is a C++ function.
#define PARLA_TEST(Suite, Name)                                                                    \
  static void Suite##_##Name##_body();                                                             \
  Test(Suite, Name) {                                                                              \
    Suite##_##Name##_body();                                                                       \
  }                                                                                                \
  static void Suite##_##Name##_body()

namespace parla_test {

inline std::string backend() {
  const char *b = std::getenv("PARLA_TEST_DEVICES");
  return b != nullptr ? b : "host2";
}

// Each backend has two devices of one architecture:
//   host2     two host CPU devices of one thread each
//   opencl    PoCL's two pthread devices (POCL_DEVICES="pthread pthread")
//   ava_shm, ava_tcp   the same through ava (tests/parla/remoted.sh)
//   ava_quota one PoCL device through a worker that grants 256 MiB
//             (test_parla_quota only)
inline bool opencl_backend() {
  return backend() != "host2";
}

inline std::vector<std::unique_ptr<parla::Device>> devices(uint64_t host_memory_each = 1ull << 30) {
  const std::string b = backend();
  if (b == "host2")
    return parla::host_devices(2, 1, host_memory_each);
  if (b == "ava_quota") {
    auto d = parla::opencl_devices();
    cr_assert_eq(d.size(), 1u, "ava_quota: one OpenCL device (POCL_DEVICES=pthread), not %zu",
                 d.size());
    return d;
  }
  if (b == "opencl" || b == "ava_shm" || b == "ava_tcp") {
    auto d = parla::opencl_devices();
    cr_assert_eq(d.size(), 2u, "%s: two OpenCL devices (POCL_DEVICES=\"pthread pthread\"), not %zu",
                 b.c_str(), d.size());
    return d;
  }
  cr_assert_fail("unknown PARLA_TEST_DEVICES=%s", b.c_str());
  return {};
}

inline parla::Arch arch() {
  return opencl_backend() ? parla::Arch::cl_cpu : parla::Arch::cpu;
}

inline parla::Options options(bool sequential = false) {
  parla::Options o;
  o.devices = devices();
  // PARLA_TEST_THREADS: fewer workers, as the PARLA_HELP=1 runs have.
  const char *threads = std::getenv("PARLA_TEST_THREADS");
  o.threads = threads != nullptr ? static_cast<unsigned>(std::atoi(threads)) : 2;
  o.sequential = sequential;
  return o;
}

// The message of the exception f throws, or "" if it throws none.
template <class E = std::exception, class F> std::string thrown(F &&f) {
  try {
    f();
  } catch (const E &e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string &s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// Tasks that must be running at the same time meet here; a task that
// waits longer than the (generous) limit reports that it met nobody.
class Rendezvous {
public:
  explicit Rendezvous(int parties) : parties_(parties) {}
  bool arrive_and_wait(std::chrono::seconds limit = std::chrono::seconds(20)) {
    std::unique_lock lock(mu_);
    if (++arrived_ >= parties_)
      cv_.notify_all();
    return cv_.wait_for(lock, limit, [&] { return arrived_ >= parties_; });
  }

private:
  std::mutex mu_;
  std::condition_variable cv_;
  int parties_;
  int arrived_ = 0;
};

// Counts how many tasks run at once.
class Concurrency {
public:
  void enter() {
    std::lock_guard lock(mu_);
    max_ = std::max(max_, ++now_);
  }
  void leave() {
    std::lock_guard lock(mu_);
    --now_;
  }
  int max() {
    std::lock_guard lock(mu_);
    return max_;
  }

private:
  std::mutex mu_;
  int now_ = 0;
  int max_ = 0;
};

} // namespace parla_test
