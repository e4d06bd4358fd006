// SPDX-License-Identifier: MIT
// The worker supervisor: it listens, and hands every accepted connection,
// before reading a byte of it, to a new worker process of its own (`ava
// worker --serve-fd 3`, fork + exec), which reads the guest's HELLO, loads
// the spec's plugin and serves that guest alone. The supervisor never loads
// a plugin or a driver, so one guest's driver state, device memory and
// crashes stay in its own process. Each worker is confined as the host
// configuration says (GuestSandbox: no_new_privs always, optionally its own
// uid/gid and a memory cgroup) and ends with the supervisor.
//
// `ava worker` uses it by default (without --shared); the same serve-one mode
// takes connections from systemd socket activation (Accept=yes) directly.
#pragma once

#include <string>
#include <vector>

#include "tools/ava/host_config.hpp"
#include "transport/channel.hpp"

namespace ava::tool {

// The fd number at which a per-guest worker finds its connection.
inline constexpr int kServeFd = 3;

struct SupervisorOptions {
  Address listen;
  int ready_fd = -1;           // receives "ADDRESS\n" once listening, then is closed
  bool exit_when_idle = false; // exit once the last guest's worker is done
  // argv of each per-guest worker (argv[0] the executable); it finds the
  // connection at kServeFd, and gets "--listen BOUND-ADDRESS" appended.
  std::vector<std::string> worker_argv;
  GuestSandbox sandbox;
  // Connections served at once, in all and per peer (a uid over unix and shm,
  // an address over tcp); one more is closed unread, and logged. 0: no limit.
  uint32_t max_connections = 0;
  uint32_t max_connections_per_peer = 0;
  int stop_grace_ms = 5000; // at shutdown: SIGTERM, then SIGKILL after this long
};

// Serves until SIGINT/SIGTERM/SIGHUP (or idle, with exit_when_idle); returns
// the exit code. Call from the main thread before other threads exist.
int run_supervisor(const SupervisorOptions &options);

} // namespace ava::tool
