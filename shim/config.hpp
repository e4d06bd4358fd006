// SPDX-License-Identifier: MIT
// Guest-side configuration: which channel and worker a guest library uses,
// from /etc/ava/guest.toml (or $AVA_CONFIG) and the environment.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
  // A file holding the token this guest shows its worker (HELLO's credential);
  // empty: none. Others may not read it.
  std::string credential_file;
  // Tuning variables that are set (name, value), for the HELLO's configuration.
  std::vector<std::pair<std::string, std::string>> tuning;
  std::string source; // e.g. "/etc/ava/guest.toml + AVA_WORKER", for messages
};

// Reads $AVA_CONFIG if set (missing file = error), else /etc/ava/guest.toml if it exists.
// Keys at top level: channel ("unix"|"tcp"), worker, connect_timeout_ms, call_timeout_ms,
// callback_timeout_ms, max_message, credential_file. A table [spec.NAME] overrides them for spec
// NAME. Then env overrides: AVA_CHANNEL, AVA_CREDENTIAL_FILE, AVA_WORKER, AVA_WORKER_<NAME
// upper-case> (most specific wins). Unknown keys are an error (typos must not be silently ignored);
// wrong value types too.
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

// The configuration as "key = value" lines (what a HELLO carries): every
// setting, where it came from, and the tuning variables that are set; never
// the credential itself.
std::string describe_guest_config(const GuestConfig &config);
// The token in config.credential_file (trailing newlines dropped), or "" when
// none is configured; an error when the file cannot be read, others may read
// it, or it is empty or longer than AVA_CREDENTIAL_MAX.
Status read_credential(const GuestConfig &config, std::string *token);

// "AVA_WORKER_" + spec_name upper-cased, other characters than letters and digits as '_'.
std::string worker_env_name(std::string_view spec_name);

} // namespace ava
