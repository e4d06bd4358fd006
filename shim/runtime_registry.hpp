// SPDX-License-Identifier: MIT
// The one registry the C API inherently needs: spec pointer -> Runtime.
// Runtimes live as long as the guest library (they are never freed, so a
// late call from another library's destructor still finds a valid object).
#pragma once

#include "shim/ava_shim.h"
#include "shim/runtime.hpp"

namespace ava::guest {

// Finds the runtime of spec; with create, makes it on first use (throws
// std::bad_alloc). Lookups of existing runtimes take no lock.
Runtime *find_runtime(const ava_guest_spec *spec, bool create);

// Called in a fork child by the registry's atfork handler (see call.cpp).
void reset_async_errors_after_fork();

} // namespace ava::guest
