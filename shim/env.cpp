// SPDX-License-Identifier: MIT
#include "shim/env.hpp"

#include <cstdlib>

namespace ava::guest {

uint64_t env_u64(const char *name, uint64_t fallback, uint64_t min, uint64_t max) {
  const char *v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    return fallback;
  }
  char *end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  if (end == nullptr || *end != '\0' || n < min || n > max) {
    return fallback;
  }
  return n;
}

} // namespace ava::guest
