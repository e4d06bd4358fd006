// SPDX-License-Identifier: MIT
// The host's own configuration of how guests are served (`ava worker`, `ava
// vmhost`): read from the host's file (--host-config FILE, else
// /etc/ava/host.toml when it exists), never from anything a guest sends.
//
//   [guest]
//   isolation = "process"              # or "shared": one process for every guest
//   user = "ava-guest"                 # per-guest workers run as this user (name or uid)
//   group = "ava-guest"                # and group (default: the user's primary group)
//   cgroup = "/sys/fs/cgroup/ava"      # a cgroup (v2, or v1 memory) directory ava may write
//   memory_max = 8589934592            # bytes per guest worker (needs cgroup)
//   cmds_per_sec = 100000              # limits per guest (0 or absent: none); a VM's
//   bytes_per_sec = 1073741824         #   own `avactl policy` may only make them tighter
//   device_memory = 4294967296         # bytes of device memory per guest
//   threads = 1024                     # guest threads (worker shadow threads) per guest
//   send_timeout_ms = 30000            # a guest that reads nothing this long is dropped
//   connections = 1024                 # guest connections one `ava worker` serves at once
//   connections_per_peer = 64          #   and per peer (unix: uid; tcp: address)
//   objects = 262144                   # handles one guest may hold
//   callbacks = 65536                  # callback registrations one guest may hold
//   kept_bytes = 268435456             # bytes of its buffers the worker keeps past a call
//   credentials = "/etc/ava/credentials" # guests must show a token listed there
//                                      #   (worker/credentials.hpp; not readable by others)
//
//   [opencl]                           # settings of a spec's worker plugin
//   kernels_without_arg_info = "refuse" # or "allow": kernels whose argument kinds the
//                                      #   driver does not tell (their 8-byte arguments
//                                      #   reach the device as the guest wrote them)
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "transport/channel.hpp"
#include "worker/credentials.hpp"

namespace ava::tool {

// How each per-guest worker process is confined.
struct GuestSandbox {
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  std::string cgroup;      // empty: no cgroup of its own
  uint64_t memory_max = 0; // 0: no limit
};

// What each guest may use, whatever it (or its VM's kernel) asks for; 0 = no limit.
struct GuestLimits {
  uint64_t cmds_per_sec = 0;
  uint64_t bytes_per_sec = 0;
  uint64_t device_memory = 0; // the spec's "device_memory" resource (ava_allocates_resource)
  // Budgets with defaults (never "none": a guest must not exhaust a worker).
  uint32_t threads = 1024;
  int send_timeout_ms = 30000;
  uint32_t connections = 1024;
  uint32_t connections_per_peer = 64;
  // Handles one guest may hold (objects it made or was told of): a call that
  // would make one more fails as out of resources.
  uint32_t objects = 262144;
  // Callback registrations one guest may hold (event callbacks not yet
  // run, notifications of objects it holds): one more fails likewise.
  uint32_t callbacks = 65536;
  // Bytes of the guest's buffers the worker keeps beyond their call (an
  // API that holds on to a pointer, ava_lifetime_coupled/static): one more
  // keep fails as out of resources.
  uint64_t kept_bytes = uint64_t{256} << 20;
};

// The tighter of a host limit and a guest's own (0 = none on either side).
inline uint64_t tighter_limit(uint64_t host, uint64_t guest) {
  if (host == 0)
    return guest;
  return guest == 0 || guest > host ? host : guest;
}

struct HostConfig {
  bool shared = false; // isolation = "shared"
  GuestSandbox sandbox;
  GuestLimits limits;
  // Settings for worker plugins by "<spec>.<key>", as the plugin's spec code
  // reads them (ava_w_setting); only known keys and values get here.
  std::map<std::string, std::string, std::less<>> plugin_settings;
  std::shared_ptr<const CredentialTable> credentials; // null: no credential required
  std::string source;                                 // the file read, or empty
};

inline constexpr const char *kDefaultHostConfig = "/etc/ava/host.toml";

// Parses text (from source, for messages); errors are "SOURCE:LINE: error: ...".
Status parse_host_config(std::string_view text, std::string_view source, HostConfig *out);
// path: --host-config, or empty for the default file (which may be absent).
Status load_host_config(const std::string &path, HostConfig *out);

} // namespace ava::tool
