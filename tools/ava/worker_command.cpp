// SPDX-License-Identifier: MIT
// `ava worker`: serves guests with the worker runtime (worker/server.hpp).
#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <list>
#include <memory>
#include <thread>

#include "tools/ava/commands.hpp"
#include "tools/ava/guest_policy.hpp"
#include "tools/ava/host_config.hpp"
#include "tools/ava/options.hpp"
#include "tools/ava/paths.hpp"
#include "tools/ava/supervisor.hpp"
#include "transport/uring.hpp"
#include "worker/server.hpp"
#ifdef AVA_HAVE_NETLINK
#include "transport/netlink_channel.hpp"
#endif

namespace ava::tool {
namespace {

#ifdef AVA_HAVE_NETLINK
// How often the accept loop looks at SIGINT/SIGTERM.
constexpr int kSignalPollMs = 200;

struct NetlinkSession {
  std::thread thread;
  std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
};

// `ava worker --netlink`: one session per kernel connection of ava.ko
// (include/ava/knetlink.h), each on its own thread, until SIGINT/SIGTERM.
int run_netlink_worker(const WorkerOptions &options, int ready_fd) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  // blocked before any thread exists, so only the signalfd sees them
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  const int signal_fd = signalfd(-1, &stop_signals, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd < 0) {
    std::perror("ava: worker: signalfd");
    return 1;
  }
  std::unique_ptr<NetlinkHub> hub;
  Status status = NetlinkHub::open(&hub);
  if (!status.is_ok()) {
    std::fprintf(stderr, "ava: worker: %s\n", status.message.c_str());
    close(signal_fd);
    return 1;
  }
  if (ready_fd >= 0) {
    const std::string line = hub->describe() + "\n";
    (void)!write(ready_fd, line.data(), line.size());
    close(ready_fd);
  }
  PluginSet plugins(options.plugin_dir, options.specs);
  std::list<NetlinkSession> sessions;
  for (;;) {
    signalfd_siginfo info;
    if (read(signal_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info))
      break;
    std::unique_ptr<Channel> channel;
    status = hub->accept(&channel, kSignalPollMs);
    sessions.remove_if([](NetlinkSession &s) {
      if (!s.done->load())
        return false;
      s.thread.join();
      return true;
    });
    if (status.code == AVA_E_TIMEOUT)
      continue;
    if (!status.is_ok()) {
      std::fprintf(stderr, "ava: worker: %s\n", status.message.c_str());
      break;
    }
    const std::string name = channel->describe();
    std::fprintf(stderr, "ava: worker: %s: session started\n", name.c_str());
    try {
      NetlinkSession &s = sessions.emplace_back();
      s.thread =
          std::thread([&plugins, &options, name, done = s.done, ch = std::move(channel)]() mutable {
            Status ended = serve_guest(std::move(ch), plugins, options);
            std::fprintf(stderr, "ava: worker: %s: session ended%s%s\n", name.c_str(),
                         ended.is_ok() ? "" : ": ", ended.message.c_str());
            done->store(true);
          });
    } catch (const std::system_error &e) {
      sessions.pop_back();
      std::fprintf(stderr, "ava: worker: %s: no thread: %s\n", name.c_str(), e.what());
    }
  }
  hub->shutdown();
  for (NetlinkSession &s : sessions)
    s.thread.join();
  close(signal_fd);
  return 0;
}
#endif

// `ava worker --serve-fd N --listen ADDR`: the one guest connected on fd N,
// then exit. SIGTERM/SIGINT end the session in order (objects released,
// report written).
int serve_one_connection(WorkerOptions options, const GuestLimits &limits, int fd) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  // blocked before any thread exists, so only the signalfd sees them
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, nullptr);
  const int signal_fd = signalfd(-1, &stop_signals, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd < 0) {
    std::perror("ava: worker: signalfd");
    return 1;
  }
  // Not inherited by anything this process starts (a driver's helpers).
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  std::unique_ptr<Channel> channel;
  Status status = adopt_connection(options.listen, fd, &channel);
  if (status.is_ok() && options.io_uring) {
    Status upgraded = upgrade_channel_uring(&channel);
    if (!upgraded.is_ok())
      std::fprintf(stderr,
                   "ava: worker: io_uring is not available, serving with plain sockets: %s\n",
                   upgraded.message.c_str());
  }
  if (!status.is_ok()) {
    std::fprintf(stderr, "ava: worker: %s\n", status.message.c_str());
    close(signal_fd);
    return 1;
  }
  // The host's limits for this one guest.
  GuestPolicy policy(limits);
  options.admit_call = [&policy](const ava_msg_hdr &, uint64_t bytes, std::string *why) {
    return policy.admit(bytes, why);
  };
  options.resource_quota = [&policy](std::string_view resource) { return policy.quota(resource); };
  PluginSet plugins(options.plugin_dir, options.specs);
  status = serve_guest_until(std::move(channel), plugins, options, signal_fd);
  close(signal_fd);
  return status.is_ok() ? 0 : 1;
}

// The default: a supervisor that gives each guest a worker process of its own.
int run_isolated(const WorkerCommandOptions &parsed, const WorkerOptions &options,
                 const HostConfig &host) {
  SupervisorOptions sup;
  sup.listen = options.listen;
  sup.ready_fd = options.ready_fd;
  sup.exit_when_idle = options.exit_when_idle;
  sup.sandbox = host.sandbox;
  sup.max_connections = host.limits.connections;
  sup.max_connections_per_peer = host.limits.connections_per_peer;
  const std::string self = self_executable();
  if (self.empty()) {
    std::fprintf(stderr, "ava: worker: cannot locate the ava executable via /proc/self/exe\n");
    return 1;
  }
  sup.worker_argv = {self,           "worker",          "--serve-fd", std::to_string(kServeFd),
                     "--plugin-dir", options.plugin_dir};
  for (const std::string &spec : parsed.specs) {
    sup.worker_argv.push_back("--spec");
    sup.worker_argv.push_back(spec);
  }
  if (options.io_uring)
    sup.worker_argv.push_back("--io-uring");
  if (!options.report_file.empty()) {
    sup.worker_argv.push_back("--report");
    sup.worker_argv.push_back(options.report_file);
  }
  // Each worker reads the same host configuration, for its guest's limits.
  if (!parsed.host_config.empty()) {
    sup.worker_argv.push_back("--host-config");
    sup.worker_argv.push_back(parsed.host_config);
  }
  return run_supervisor(sup);
}

} // namespace

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
  options.report_file = parsed.report;
  if (options.plugin_dir.empty()) {
    std::fprintf(stderr, "ava: worker: cannot locate the plugin directory: use --plugin-dir\n");
    return kExitUsage;
  }
  HostConfig host;
  status = load_host_config(parsed.host_config, &host);
  if (!status.is_ok()) {
    std::fprintf(stderr, "ava: worker: %s\n", status.message.c_str());
    return kExitUsage;
  }
  options.max_guest_threads = host.limits.threads;
  options.max_guest_objects = host.limits.objects;
  options.max_guest_callbacks = host.limits.callbacks;
  options.max_guest_kept_bytes = host.limits.kept_bytes;
  options.credentials = host.credentials;
  options.send_timeout_ms = host.limits.send_timeout_ms;
  options.plugin_settings = host.plugin_settings;
  if (parsed.serve_fd >= 0) {
    if (fcntl(parsed.serve_fd, F_GETFD) < 0) {
      std::fprintf(stderr, "ava: worker: --serve-fd %d is not an open file descriptor\n",
                   parsed.serve_fd);
      return kExitUsage;
    }
    return serve_one_connection(options, host.limits, parsed.serve_fd);
  }
  if (parsed.netlink) {
#ifdef AVA_HAVE_NETLINK
    options.ready_fd = -1;
    return run_netlink_worker(options, parsed.ready_fd);
#else
    std::fprintf(stderr, "ava: worker: --netlink: built without libnl-genl-3\n");
    return kExitUsage;
#endif
  }
  // Kernel connections (above) and trusted guests share one process. Each
  // guest's device memory is still its own (a ledger per connection); rates
  // are limited per guest process only.
  if (host.limits.device_memory != 0)
    options.resource_quota = [quota = host.limits.device_memory](std::string_view resource) {
      return resource == "device_memory" ? quota : uint64_t{0};
    };
  if (parsed.shared || host.shared)
    return run_worker(options);
  return run_isolated(parsed, options, host);
}

} // namespace ava::tool
