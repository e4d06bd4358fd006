// SPDX-License-Identifier: MIT
// ShmOptions: checks and environment overrides.
#include <sched.h>

#include <charconv>
#include <cstdlib>
#include <new>
#include <string_view>

#include "transport/shm.hpp"
#include "transport/shm_region.hpp"

namespace ava {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kMaxSpinNs = 1000000000u;

std::string n(uint64_t v) {
  return std::to_string(v);
}

// Reads a decimal variable into *value when it is set and not empty.
Status env_number(const char *name, uint64_t limit, uint64_t *value) {
  const char *text = std::getenv(name);
  if (text == nullptr || *text == '\0')
    return Status::ok();
  const std::string_view view(text);
  uint64_t parsed = 0;
  auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), parsed);
  if (error != std::errc() || end != view.data() + view.size() || parsed > limit)
    return Status::error(AVA_E_PROTO, std::string(name) + "='" + std::string(view) +
                                          "' is not a whole number up to " + n(limit));
  *value = parsed;
  return Status::ok();
}

} // namespace

uint64_t default_shm_spin_ns() {
  constexpr uint64_t kSpinNs = 20000;
  // Each side has one thread waiting on a ring (the caller for its reply, an
  // idle shadow thread for its next call), so two CPUs are enough to spin.
  constexpr int kMinCpus = 2;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (::sched_getaffinity(0, sizeof cpus, &cpus) != 0)
    return kSpinNs;
  return CPU_COUNT(&cpus) >= kMinCpus ? kSpinNs : 0;
}

Status check_shm_options(const ShmOptions &options) {
  try {
    if (!detail::shm_ring_size_ok(options.ring_bytes))
      return Status::error(AVA_E_PROTO, "shm ring size " + n(options.ring_bytes) +
                                            " is not a power of two between " +
                                            n(AVA_RING_MIN_SIZE) + " and " + n(AVA_RING_MAX_SIZE) +
                                            " bytes");
    if (options.heap_bytes % AVA_REGION_ALIGN != 0 || options.heap_bytes > detail::kShmMaxHeapBytes)
      return Status::error(AVA_E_PROTO, "shm heap size " + n(options.heap_bytes) +
                                            " is not a multiple of " + n(AVA_REGION_ALIGN) +
                                            " up to " + n(detail::kShmMaxHeapBytes) + " bytes");
    if (options.spin_ns > kMaxSpinNs)
      return Status::error(AVA_E_PROTO,
                           "shm spin budget " + n(options.spin_ns) + " ns is above one second");
    return Status::ok();
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "check_shm_options: out of memory");
  }
}

Status shm_options_from_env(ShmOptions *out) {
  if (out == nullptr)
    return Status::error(AVA_E_PROTO, "shm_options_from_env: no output");
  try {
    ShmOptions options;
    uint64_t ring_mb = options.ring_bytes / kMiB;
    uint64_t heap_mb = options.heap_bytes / kMiB;
    Status st = env_number("AVA_SHM_RING_MB", AVA_RING_MAX_SIZE / kMiB, &ring_mb);
    if (st.is_ok())
      st = env_number("AVA_SHM_HEAP_MB", detail::kShmMaxHeapBytes / kMiB, &heap_mb);
    if (st.is_ok())
      st = env_number("AVA_SHM_SPIN_NS", kMaxSpinNs, &options.spin_ns);
    if (!st.is_ok())
      return st;
    options.ring_bytes = ring_mb * kMiB;
    options.heap_bytes = heap_mb * kMiB;
    if (!detail::shm_ring_size_ok(options.ring_bytes))
      return Status::error(AVA_E_PROTO, "AVA_SHM_RING_MB=" + n(ring_mb) +
                                            " is not a power of two between 1 and " +
                                            n(AVA_RING_MAX_SIZE / kMiB));
    st = check_shm_options(options);
    if (!st.is_ok())
      return st;
    *out = options;
    return Status::ok();
  } catch (const std::bad_alloc &) {
    return Status::error(AVA_E_NOMEM, "shm_options_from_env: out of memory");
  }
}

} // namespace ava
