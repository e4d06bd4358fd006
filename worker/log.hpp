// SPDX-License-Identifier: MIT
// Worker log lines: everything goes to stderr prefixed "ava worker: ", so a
// worker sharing a terminal with its guest program stays recognisable.
#pragma once

#include <string_view>

namespace ava {

// True when AVA_LOG=debug (read once).
bool worker_debug_enabled();
// Writes "ava worker: <message>\n" with one write(2), so lines of concurrent
// threads do not interleave.
void worker_log(std::string_view message);

} // namespace ava
