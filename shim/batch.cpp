// SPDX-License-Identifier: MIT
#include "shim/batch.hpp"
#include "shim/env.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace ava::guest {

Batch::Limits Batch::Limits::from_env(bool cheap_sends) {
  Limits l;
  l.enabled = env_u64("AVA_BATCH", cheap_sends ? 0 : 1, 0, 1) == 1;
  l.max_bytes = env_u64("AVA_BATCH_BYTES", l.max_bytes, 4096, 64ull << 20);
  l.max_calls = static_cast<uint32_t>(env_u64("AVA_BATCH_CALLS", l.max_calls, 1, 1u << 20));
  l.max_delay = std::chrono::microseconds(env_u64("AVA_BATCH_US", 1000, 1, 10'000'000));
  return l;
}

bool Batch::append(const struct iovec *iov, int iovcnt, uint64_t total) {
  const size_t at = bytes_.size();
  try {
    bytes_.resize(at + total);
  } catch (const std::bad_alloc &) {
    return false;
  }
  size_t off = at;
  for (int i = 0; i < iovcnt; ++i) {
    if (iov[i].iov_len > 0) {
      std::memcpy(bytes_.data() + off, iov[i].iov_base, iov[i].iov_len);
      off += iov[i].iov_len;
    }
  }
  if (calls_++ == 0) {
    oldest_ = std::chrono::steady_clock::now();
  }
  return true;
}

void Batch::clear() {
  // Keep the capacity: the next burst of async calls reuses it.
  bytes_.clear();
  calls_ = 0;
}

} // namespace ava::guest
