// SPDX-License-Identifier: MIT
// Command-line parsing of `ava run` and `ava worker`.
#include <criterion/criterion.h>

#include <string>
#include <vector>

#include "tools/ava/options.hpp"

using ava::ChannelKind;
using ava::tool::RunOptions;
using ava::tool::WorkerCommandOptions;

namespace {

struct RunCase {
  std::vector<std::string> args;
  bool ok;
  ChannelKind channel;
  std::string worker;
  size_t nspecs;
  std::vector<std::string> program;
};

struct WorkerCase {
  std::vector<std::string> args;
  bool ok;
  int ready_fd;
  bool exit_when_idle;
  size_t nspecs;
  int serve_fd = -1;
  bool shared = false;
  std::string host_config = "";
};

} // namespace

Test(ava_options, run) {
  const std::vector<RunCase> cases = {
      {{"--", "prog", "a"}, true, ChannelKind::Unix, "", 0, {"prog", "a"}},
      {{"prog", "--channel", "tcp"}, true, ChannelKind::Unix, "", 0, {"prog", "--channel", "tcp"}},
      {{"--channel", "tcp", "--", "prog"}, true, ChannelKind::Tcp, "", 0, {"prog"}},
      {{"--channel=tcp", "prog"}, true, ChannelKind::Tcp, "", 0, {"prog"}},
      {{"--channel", "shm", "prog"}, true, ChannelKind::Shm, "", 0, {"prog"}},
      {{"--worker", "unix:/w", "--spec", "demo", "--spec=cl", "--", "p"},
       true,
       ChannelKind::Unix,
       "unix:/w",
       2,
       {"p"}},
      {{"--", "--weird-name"}, true, ChannelKind::Unix, "", 0, {"--weird-name"}},
      {{}, false, ChannelKind::Unix, "", 0, {}},
      {{"--"}, false, ChannelKind::Unix, "", 0, {}},
      {{"--channel"}, false, ChannelKind::Unix, "", 0, {}},
      {{"--channel", "vsock", "p"}, false, ChannelKind::Unix, "", 0, {}},
      {{"--channel=", "p"}, false, ChannelKind::Unix, "", 0, {}},
      {{"--frobnicate", "p"}, false, ChannelKind::Unix, "", 0, {}},
      {{"-x", "p"}, false, ChannelKind::Unix, "", 0, {}},
      {{"--spec", "bad/name", "p"}, false, ChannelKind::Unix, "", 0, {}},
      {{"--spec", std::string(40, 'a'), "p"}, false, ChannelKind::Unix, "", 0, {}},
      {{"--shared", "--report", "/tmp/r", "p"}, true, ChannelKind::Unix, "", 0, {"p"}},
      {{"--shared=yes", "p"}, false, ChannelKind::Unix, "", 0, {}},
      {{"--worker", "unix:/w", "--shared", "p"}, false, ChannelKind::Unix, "", 0, {}},
      {{"--worker", "unix:/w", "--report", "/tmp/r", "p"}, false, ChannelKind::Unix, "", 0, {}},
  };
  for (size_t i = 0; i < cases.size(); i++) {
    const RunCase &c = cases[i];
    RunOptions options;
    ava::Status status = ava::tool::parse_run_args(c.args, &options);
    cr_expect_eq(status.is_ok(), c.ok, "case %zu: %s", i, status.message.c_str());
    if (!status.is_ok()) {
      cr_expect(!status.message.empty(), "case %zu has a message", i);
      continue;
    }
    cr_expect(options.channel == c.channel, "case %zu channel", i);
    cr_expect_eq(options.worker, c.worker, "case %zu worker", i);
    cr_expect_eq(options.specs.size(), c.nspecs, "case %zu specs", i);
    cr_expect(options.program == c.program, "case %zu program", i);
  }
}

Test(ava_options, worker) {
  const std::vector<WorkerCase> cases = {
      {{"--listen", "unix:/tmp/w.sock"}, true, -1, false, 0},
      {{"--listen", "shm:/tmp/w.sock"}, true, -1, false, 0},
      {{"--listen=tcp:127.0.0.1:0", "--ready-fd", "5", "--exit-when-idle", "--spec", "demo"},
       true,
       5,
       true,
       1},
      {{"--listen", "/tmp/w.sock", "--plugin-dir", "/p"}, true, -1, false, 0},
      {{}, false, -1, false, 0},
      {{"--spec", "demo"}, false, -1, false, 0},
      {{"--listen"}, false, -1, false, 0},
      {{"--listen", "tcp:host:notaport"}, false, -1, false, 0},
      {{"--listen", "/w", "--ready-fd", "-1"}, false, -1, false, 0},
      {{"--listen", "/w", "--ready-fd", "3x"}, false, -1, false, 0},
      {{"--listen", "/w", "--ready-fd", "99999999999"}, false, -1, false, 0},
      {{"--listen", "/w", "--exit-when-idle=yes"}, false, -1, false, 0},
      {{"--listen", "/w", "stray"}, false, -1, false, 0},
      // Kernel connections of this machine instead of a listener.
      {{"--netlink", "--spec", "demo", "--ready-fd", "4"}, true, 4, false, 1},
      {{"--netlink", "--listen", "/w"}, false, -1, false, 0},
      {{"--netlink", "--io-uring"}, false, -1, false, 0},
      {{"--netlink", "--exit-when-idle"}, false, -1, false, 0},
      {{"--netlink=1"}, false, -1, false, 0},
      {{"--listen", "/w", "--serve-fd", "0"}, true, -1, false, 0, 0},
      {{"--listen", "shm:/w", "--serve-fd", "3", "--report", "/r"}, true, -1, false, 0, 3},
      {{"--serve-fd", "3"}, false, -1, false, 0},
      {{"--listen", "/w", "--serve-fd", "-3"}, false, -1, false, 0},
      {{"--listen", "/w", "--serve-fd", "3", "--shared"}, false, -1, false, 0},
      {{"--listen", "/w", "--serve-fd", "3", "--exit-when-idle"}, false, -1, false, 0},
      {{"--netlink", "--serve-fd", "3"}, false, -1, false, 0},
      {{"--listen", "/w", "--shared", "--host-config", "/h.toml"},
       true,
       -1,
       false,
       0,
       -1,
       true,
       "/h.toml"},
      {{"--listen", "/w", "--host-config"}, false, -1, false, 0},
  };
  for (size_t i = 0; i < cases.size(); i++) {
    const WorkerCase &c = cases[i];
    WorkerCommandOptions options;
    ava::Status status = ava::tool::parse_worker_args(c.args, &options);
    cr_expect_eq(status.is_ok(), c.ok, "case %zu: %s", i, status.message.c_str());
    if (!status.is_ok())
      continue;
    cr_expect_eq(options.ready_fd, c.ready_fd, "case %zu ready fd", i);
    cr_expect_eq(options.exit_when_idle, c.exit_when_idle, "case %zu idle", i);
    cr_expect_eq(options.specs.size(), c.nspecs, "case %zu specs", i);
    cr_expect_eq(options.serve_fd, c.serve_fd, "case %zu serve fd", i);
    cr_expect_eq(options.shared, c.shared, "case %zu shared", i);
    cr_expect_eq(options.host_config, c.host_config, "case %zu host config", i);
  }
}
