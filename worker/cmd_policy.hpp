// SPDX-License-Identifier: MIT
// Table-driven policing of CALLs (include/ava/cmdtab.h): before a call is
// queued for dispatch, its header and argument block are checked against
// what the spec says of the function — known and supported, the exact
// argument block size, the sync/async class, and each buffer's direction
// and static bound (ava_cmd_police, the checker ava.ko uses too).
#pragma once

#include <cstdint>
#include <string>

#include "ava/cmdtab.h"

namespace ava {

// AVA_OK, or the status to refuse the call with and *why. message holds the
// whole CALL (header included), size bytes; the header was framed already.
int police_call(const ava_cmd_table &table, const ava_msg_hdr &hdr, const uint8_t *message,
                uint64_t size, std::string *why);

} // namespace ava
