// SPDX-License-Identifier: MIT
#include "shim/log.hpp"

#include <errno.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>

#include "ava/wire.h"

namespace ava::guest {

namespace {

struct StatusInfo {
  int code;
  const char *name;
  const char *text;
};

constexpr StatusInfo kStatuses[] = {
    {AVA_OK, "AVA_OK", "success"},
    {AVA_E_PROTO, "AVA_E_PROTO", "malformed message"},
    {AVA_E_LENGTH, "AVA_E_LENGTH", "a length or offset is out of bounds"},
    {AVA_E_FUNC, "AVA_E_FUNC", "unknown function"},
    {AVA_E_HANDLE, "AVA_E_HANDLE", "unknown or wrongly typed handle"},
    {AVA_E_NOMEM, "AVA_E_NOMEM", "out of memory"},
    {AVA_E_UNSUPPORTED, "AVA_E_UNSUPPORTED", "not supported by the spec"},
    {AVA_E_CLOSED, "AVA_E_CLOSED", "the connection is closed"},
    {AVA_E_SPEC, "AVA_E_SPEC", "worker and guest library were generated from different specs"},
    {AVA_E_TOO_BIG, "AVA_E_TOO_BIG", "message above the configured limit"},
    {AVA_E_TIMEOUT, "AVA_E_TIMEOUT", "no answer within the configured time"},
    {AVA_E_STATE, "AVA_E_STATE", "call out of order"},
    {AVA_E_POLICY, "AVA_E_POLICY",
     "refused by this guest's sharing policy (a rate, quota or budget)"},
    {AVA_E_VERSION, "AVA_E_VERSION", "no protocol version in common with the other side"},
    {AVA_E_ACCESS, "AVA_E_ACCESS", "the credential is missing or not accepted"},
};

const StatusInfo *find_status(int status) {
  for (const StatusInfo &info : kStatuses) {
    if (info.code == status) {
      return &info;
    }
  }
  return nullptr;
}

} // namespace

void log_line(const char *format, ...) {
  // Fixed-size so that logging works when memory is short; long lines are cut.
  char line[1024];
  constexpr size_t kPrefix = 5;
  line[0] = 'a';
  line[1] = 'v';
  line[2] = 'a';
  line[3] = ':';
  line[4] = ' ';
  va_list args;
  va_start(args, format);
  int n = vsnprintf(line + kPrefix, sizeof line - kPrefix - 1, format, args);
  va_end(args);
  size_t len = kPrefix;
  if (n > 0) {
    len += static_cast<size_t>(n) < sizeof line - kPrefix - 1 ? static_cast<size_t>(n)
                                                              : sizeof line - kPrefix - 2;
  }
  line[len++] = '\n';
  const char *p = line;
  while (len > 0) {
    ssize_t w = ::write(STDERR_FILENO, p, len);
    if (w < 0 && errno == EINTR) {
      continue;
    }
    if (w <= 0) {
      return;
    }
    p += w;
    len -= static_cast<size_t>(w);
  }
}

std::string status_name(int status) {
  const StatusInfo *info = find_status(status);
  if (info != nullptr) {
    return info->name;
  }
  return "status " + std::to_string(status);
}

const char *status_text(int status) {
  const StatusInfo *info = find_status(status);
  return info != nullptr ? info->text : "unknown status";
}

std::string without_address(const std::string &reason, const std::string &address) {
  if (!address.empty() && reason.size() > address.size() + 2 &&
      reason.compare(0, address.size(), address) == 0 &&
      reason.compare(address.size(), 2, ": ") == 0) {
    return reason.substr(address.size() + 2);
  }
  return reason;
}

} // namespace ava::guest
