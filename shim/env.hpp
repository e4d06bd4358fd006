// SPDX-License-Identifier: MIT
// Tuning knobs of the guest library read from the environment.
#pragma once

#include <cstdint>

namespace ava::guest {

// The decimal value of environment variable name, or fallback when it is
// unset, empty, not a number or outside [min, max].
uint64_t env_u64(const char *name, uint64_t fallback, uint64_t min, uint64_t max);

} // namespace ava::guest
