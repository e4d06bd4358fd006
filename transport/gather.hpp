// SPDX-License-Identifier: MIT
// Checks a gather list handed to Channel::send: one or more complete messages
// back to back (callers batch async calls), each with a valid header whose
// total_len is at most max_message, adding up to exactly the list's length.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <string>

#include "transport/channel.hpp"

namespace ava {

Status check_gather_messages(const struct iovec *iov, int iovcnt, uint64_t max_message,
                             const std::string &who, uint64_t *total_out);

} // namespace ava
