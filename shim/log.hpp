// SPDX-License-Identifier: MIT
// Diagnostics of the guest runtime. A guest library lives inside arbitrary
// programs, so it writes nothing but whole "ava: ..." lines to stderr.
#pragma once

#include <cstdint>
#include <string>

namespace ava::guest {

// Writes "ava: <formatted>\n" to stderr with one write(2), so that lines of
// several threads do not interleave.
void log_line(const char *format, ...) __attribute__((format(printf, 1, 2)));

// "AVA_E_HANDLE" for AVA_E_HANDLE; "status N" for codes outside wire.h.
std::string status_name(int status);

// What a status means to a user, e.g. "unknown or wrongly typed handle".
const char *status_text(int status);

// Channel errors start with the channel's address; messages that name the
// address already drop that prefix so it is said once.
std::string without_address(const std::string &reason, const std::string &address);

} // namespace ava::guest
