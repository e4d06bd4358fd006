// SPDX-License-Identifier: MIT
// Command-line parsing of `ava run` and `ava worker`, kept apart from what the
// commands do so that it can be tested without starting processes.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "transport/channel.hpp"

namespace ava::tool {

struct RunOptions {
  ChannelKind channel = ChannelKind::Unix;
  bool channel_set = false;
  std::string worker;               // --worker: an existing worker's address
  std::vector<std::string> specs;   // --spec, repeatable
  std::vector<std::string> program; // PROGRAM [ARGS...]
  std::string report;               // --report: the private worker's session report file
  bool shared = false;              // --shared: the private worker serves in one process
};

struct WorkerCommandOptions {
  std::vector<std::string> specs;
  Address listen;
  std::string plugin_dir; // empty: the install-relative default
  int ready_fd = -1;
  bool exit_when_idle = false;
  bool io_uring = false;
  std::string report; // --report FILE: a line per guest session (worker/session_report.hpp)
  // --serve-fd N: serve the one guest connected on fd N (accepted on --listen's
  // address by the supervisor, or by systemd with Accept=yes), then exit.
  int serve_fd = -1;
  bool shared = false;     // --shared: every guest in this one process (trusted guests)
  std::string host_config; // --host-config FILE (default /etc/ava/host.toml)
  // --netlink: serve ava.ko's kernel connections on this kernel (include/ava/knetlink.h)
  // instead of listening; --listen is then not allowed.
  bool netlink = false;
};

// args excludes "ava" and the subcommand. A usage error is AVA_E_PROTO with a
// message fit for "ava: run: <message>".
Status parse_run_args(std::span<const std::string> args, RunOptions *out);
Status parse_worker_args(std::span<const std::string> args, WorkerCommandOptions *out);

} // namespace ava::tool
