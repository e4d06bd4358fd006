// SPDX-License-Identifier: MIT
// Guest-side configuration: which channel and worker a guest library uses,
// from /etc/ava/guest.toml (or $AVA_CONFIG) and the environment.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "ava/wire.h"
#include "transport/channel.hpp"

namespace ava {

struct GuestConfig {
  ChannelKind channel = ChannelKind::Unix;
  bool channel_set = false;
  std::string worker; // address text; empty = not configured
  int connect_timeout_ms = 10000;
  int call_timeout_ms = -1; // <0: no limit (calls may legitimately sleep)
  int callback_timeout_ms = 30000;
  uint64_t max_message = AVA_MSG_MAX_DEFAULT;
  std::string source; // e.g. "/etc/ava/guest.toml + AVA_WORKER", for messages
};

// Reads $AVA_CONFIG if set (missing file = error), else /etc/ava/guest.toml if it exists.
// Keys at top level: channel ("unix"|"tcp"), worker, connect_timeout_ms, call_timeout_ms,
// callback_timeout_ms, max_message. A table [spec.NAME] overrides them for spec NAME.
// Then env overrides: AVA_CHANNEL, AVA_WORKER, AVA_WORKER_<NAME upper-case> (most specific wins).
// Unknown keys are an error (typos must not be silently ignored); wrong value types too.
//
// A worker address is checked here, so a bad one is reported with where it
// came from. Unless a channel was set explicitly, channel follows the
// worker's address ("tcp:...", or a bare "host:port" reads as tcp); an
// explicit channel that contradicts an explicit "unix:"/"tcp:" prefix is an
// error. Timeouts < 0 mean no limit. Errors are AVA_E_PROTO (AVA_E_NOMEM when
// out of memory) with a message naming the file and line or the variable.
Status load_guest_config(std::string_view spec_name, GuestConfig *out);
// Same but with explicit inputs, for tests: file text (may be empty), source name, and an env
// lookup.
Status parse_guest_config(std::string_view text, std::string_view source,
                          std::string_view spec_name,
                          const std::function<const char *(const char *)> &getenv_fn,
                          GuestConfig *out);

// "AVA_WORKER_" + spec_name upper-cased, other characters than letters and digits as '_'.
std::string worker_env_name(std::string_view spec_name);

} // namespace ava
