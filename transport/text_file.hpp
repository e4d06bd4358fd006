// SPDX-License-Identifier: MIT
// Small text files ava reads (configuration, credentials): whole, checked,
// with errors in the form "PATH: error: why".
#pragma once

#include <string>

#include "transport/channel.hpp"

namespace ava {

// Files this large are a mistake, not a configuration.
inline constexpr long kMaxTextFileBytes = 1 << 20;

// Reads path into *text. With missing, a file that does not exist sets
// *missing and is no error. A file that is not a regular file, is larger
// than kMaxTextFileBytes, or (with secret) may be read or written by others
// is an error (AVA_E_PROTO), as is any failure to read it.
Status read_text_file(const char *path, std::string *text, bool *missing, bool secret = false);

} // namespace ava
