// SPDX-License-Identifier: MIT
// `ava worker`: serves guests with the worker runtime (worker/server.hpp).
#include <fcntl.h>

#include <cstdio>

#include "tools/ava/commands.hpp"
#include "tools/ava/options.hpp"
#include "tools/ava/paths.hpp"
#include "worker/server.hpp"

namespace ava::tool {

int worker_command(std::span<const std::string> args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    print_help();
    return 0;
  }
  WorkerCommandOptions parsed;
  Status status = parse_worker_args(args, &parsed);
  if (!status.is_ok()) {
    std::fprintf(stderr, "ava: worker: %s\nTry 'ava --help' for more information.\n",
                 status.message.c_str());
    return kExitUsage;
  }
  // Without this check a typo would surface only as a confusing failure of whoever waits on it.
  if (parsed.ready_fd >= 0 && fcntl(parsed.ready_fd, F_GETFD) < 0) {
    std::fprintf(stderr, "ava: worker: --ready-fd %d is not an open file descriptor\n",
                 parsed.ready_fd);
    return kExitUsage;
  }
  WorkerOptions options;
  options.specs = parsed.specs;
  options.plugin_dir = parsed.plugin_dir.empty() ? plugin_dir() : parsed.plugin_dir;
  options.listen = parsed.listen;
  options.ready_fd = parsed.ready_fd;
  options.exit_when_idle = parsed.exit_when_idle;
  options.io_uring = parsed.io_uring;
  if (options.plugin_dir.empty()) {
    std::fprintf(stderr, "ava: worker: cannot locate the plugin directory: use --plugin-dir\n");
    return kExitUsage;
  }
  return run_worker(options);
}

} // namespace ava::tool
