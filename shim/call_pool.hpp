// SPDX-License-Identifier: MIT
// Calls kept per thread between API calls, so the fast path of a call
// allocates nothing and takes no runtime lock: each thread keeps one Call per
// runtime, bound to the connection it last used, and takes the runtime's
// connection again (Runtime::acquire, under its mutex) only when the
// runtime's generation says the connection changed.
#pragma once

#include <cstdint>

#include "shim/call.hpp"
#include "shim/runtime.hpp"

namespace ava::guest {

// A Call for func_id on runtime's connection, or nullptr after reporting why
// not (the connection failed; throws std::bad_alloc). Give it back with
// end_call.
Call *begin_call(Runtime *runtime, uint32_t func_id, uint32_t flags);
// Ends a call from begin_call; what it lent or registered is settled now.
void end_call(Call *call);

} // namespace ava::guest
