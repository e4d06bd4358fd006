// SPDX-License-Identifier: MIT
// `ava run`: runs an unmodified program against ava's guest libraries, with a
// private worker started for the occasion unless one is configured already.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "shim/config.hpp"
#include "tools/ava/commands.hpp"
#include "tools/ava/options.hpp"
#include "tools/ava/paths.hpp"
#include "tools/ava/process.hpp"

namespace ava::tool {
namespace {

constexpr int kReadyTimeoutMs = 10000;
constexpr int kWorkerStopGraceMs = 5000;
constexpr int kExitReportWaitMs = 1000;
// The worker's first line is an address; anything longer is not one.
constexpr size_t kMaxReadyLine = 4096;
// sockaddr_un.sun_path holds 108 bytes including the NUL.
constexpr size_t kMaxSocketPath = 107;
constexpr const char *kSocketName = "/worker.sock";

const char *kind_name(ChannelKind kind) {
  switch (kind) {
  case ChannelKind::Tcp:
    return "tcp";
  case ChannelKind::Shm:
    return "shm";
  default:
    return "unix";
  }
}

std::string describe_wait_status(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "exited with status " + std::to_string(shell_status(wait_status));
}

// A worker is configured when the guest libraries would find one without us:
// AVA_WORKER, or a 'worker' in the guest configuration for one of the specs.
Status external_worker_configured(const std::vector<std::string> &specs, bool *configured) {
  *configured = false;
  const char *env = std::getenv("AVA_WORKER");
  if (env != nullptr && *env != '\0') {
    *configured = true;
    return Status::ok();
  }
  std::vector<std::string> names = specs.empty() ? plugin_specs(plugin_dir()) : specs;
  for (const std::string &name : names) {
    GuestConfig config;
    Status status = load_guest_config(name, &config);
    if (!status.is_ok())
      return status;
    if (!config.worker.empty()) {
      *configured = true;
      return Status::ok();
    }
  }
  return Status::ok();
}

// The worker `ava run` starts for one program and stops when it is done.
class LocalWorker {
public:
  LocalWorker() = default;
  LocalWorker(const LocalWorker &) = delete;
  LocalWorker &operator=(const LocalWorker &) = delete;
  ~LocalWorker() { stop(); }

  // Starts `ava worker` and waits until it listens. *interrupted_by is set
  // when a terminating signal arrived meanwhile (the worker is stopped then).
  Status start(ChannelKind kind, const RunOptions &options, SignalWatch &signals,
               std::string *address, int *interrupted_by);
  // Called with every reaped child; says whether it was the worker.
  bool reaped(pid_t pid, int wait_status);
  void stop();

private:
  Status wait_ready(SignalWatch &signals, int ready_fd, std::string *line, int *interrupted_by);
  Status closed_early();

  TempDir dir_;
  pid_t pid_ = -1;
};

Status LocalWorker::start(ChannelKind kind, const RunOptions &run, SignalWatch &signals,
                          std::string *address, int *interrupted_by) {
  std::string self = self_executable();
  std::string plugins = plugin_dir();
  if (self.empty() || plugins.empty())
    return Status::error(AVA_E_STATE, "cannot locate the ava executable via /proc/self/exe");
  std::string listen = "tcp:127.0.0.1:0";
  // A shm worker listens on a unix socket too, for the hand-over of the region.
  if (kind == ChannelKind::Unix || kind == ChannelKind::Shm) {
    Status status = dir_.create("ava-run.", kMaxSocketPath - std::strlen(kSocketName));
    if (!status.is_ok())
      return status;
    listen = std::string(kind == ChannelKind::Shm ? "shm:" : "unix:") + dir_.path() + kSocketName;
  }

  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0)
    return Status::error(AVA_E_STATE, std::string("pipe: ") + std::strerror(errno));
  Fd ready_read(ready[0]);
  Fd ready_write(ready[1]);
  std::vector<std::string> argv = {
      self,           "worker", "--listen",   listen,
      "--plugin-dir", plugins,  "--ready-fd", std::to_string(ready_write.get())};
  for (const std::string &spec : run.specs) {
    argv.push_back("--spec");
    argv.push_back(spec);
  }
  if (run.shared)
    argv.push_back("--shared");
  if (!run.report.empty()) {
    argv.push_back("--report");
    argv.push_back(run.report);
  }
  SpawnOptions options;
  options.mask = &signals.original_mask();
  options.env = environment_with({});
  options.keep_fd = ready_write.get();
  options.new_process_group = true;
  options.die_with_parent = true;
  options.detach_stdio = true;
  int exec_errno = 0;
  Status status = spawn(self, argv, options, &pid_, &exec_errno);
  if (!status.is_ok())
    return status;
  // Only the worker may hold the write end, so that its death reads as EOF.
  ready_write.reset();

  std::string line;
  status = wait_ready(signals, ready_read.get(), &line, interrupted_by);
  if (!status.is_ok() || *interrupted_by != 0) {
    stop();
    return status;
  }
  Address parsed;
  status = parse_address(line, kind, &parsed);
  if (!status.is_ok()) {
    stop();
    return Status::error(AVA_E_PROTO, "the local worker reported a bad address '" + line +
                                          "': " + status.message);
  }
  *address = parsed.to_string();
  return Status::ok();
}

Status LocalWorker::wait_ready(SignalWatch &signals, int ready_fd, std::string *line,
                               int *interrupted_by) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(kReadyTimeoutMs);
  *interrupted_by = 0;
  while (true) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0)
      return Status::error(AVA_E_TIMEOUT, "the local worker did not start listening within " +
                                              std::to_string(kReadyTimeoutMs / 1000) + " s");
    signalfd_siginfo info{};
    int event = signals.wait(static_cast<int>(left), ready_fd, &info);
    if (event == 1 && info.ssi_signo != SIGCHLD) {
      *interrupted_by = static_cast<int>(info.ssi_signo);
      return Status::ok();
    }
    if (event == 1) {
      int wait_status = 0;
      if (waitpid(pid_, &wait_status, WNOHANG) == pid_) {
        pid_ = -1;
        return Status::error(AVA_E_CLOSED, "the local worker " + describe_wait_status(wait_status) +
                                               " before it was ready");
      }
      continue;
    }
    if (event != 2)
      continue;
    char chunk[256];
    ssize_t got = read(ready_fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return closed_early();
    line->append(chunk, static_cast<size_t>(got));
    size_t newline = line->find('\n');
    if (newline != std::string::npos) {
      line->resize(newline);
      return Status::ok();
    }
    if (line->size() > kMaxReadyLine)
      return Status::error(AVA_E_PROTO, "the local worker's ready line is too long");
  }
}

Status LocalWorker::closed_early() {
  // The worker is usually on its way out; its exit status says more than the EOF.
  int wait_status = 0;
  if (wait_exit(pid_, kExitReportWaitMs, &wait_status)) {
    pid_ = -1;
    return Status::error(AVA_E_CLOSED, "the local worker " + describe_wait_status(wait_status) +
                                           " before it was ready");
  }
  return Status::error(AVA_E_CLOSED, "the local worker closed its ready pipe without an address");
}

bool LocalWorker::reaped(pid_t pid, int wait_status) {
  if (pid_ < 0 || pid != pid_)
    return false;
  pid_ = -1;
  // The program keeps running; its calls now fail, and this says why.
  std::fprintf(stderr, "ava: the local worker %s\n", describe_wait_status(wait_status).c_str());
  return true;
}

void LocalWorker::stop() {
  if (pid_ < 0)
    return;
  bool forced = false;
  int wait_status = stop_process(pid_, kWorkerStopGraceMs, &forced);
  pid_ = -1;
  // An orderly stop is silent; a worker that had crashed already, or would not stop, is not.
  if (forced) {
    std::fprintf(stderr, "ava: the local worker did not stop within %d s and was killed\n",
                 kWorkerStopGraceMs / 1000);
  } else if ((WIFSIGNALED(wait_status) && WTERMSIG(wait_status) != SIGTERM) ||
             (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) != 0)) {
    std::fprintf(stderr, "ava: the local worker %s\n", describe_wait_status(wait_status).c_str());
  }
}

// A terminal's Ctrl-C or hangup already reached the program if it shares our
// process group; forwarding it again would deliver it twice.
bool should_forward(const signalfd_siginfo &info, pid_t program) {
  if (info.ssi_code != SI_KERNEL)
    return true;
  return getpgid(program) != getpgrp();
}

// Forwards signals to the program until it ends; returns its wait status.
int supervise(SignalWatch &signals, pid_t program, LocalWorker *worker) {
  while (true) {
    signalfd_siginfo info{};
    if (signals.wait(-1, -1, &info) != 1)
      continue;
    if (info.ssi_signo != SIGCHLD) {
      if (should_forward(info, program))
        kill(program, static_cast<int>(info.ssi_signo));
      continue;
    }
    // SIGCHLDs coalesce: collect every child that is done.
    int wait_status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &wait_status, WNOHANG)) > 0) {
      if (pid == program)
        return wait_status;
      if (worker != nullptr)
        worker->reaped(pid, wait_status);
    }
  }
}

void print_usage_error(const std::string &message) {
  std::fprintf(stderr, "ava: run: %s\nTry 'ava --help' for more information.\n", message.c_str());
}

} // namespace

int run_command(std::span<const std::string> args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    print_help();
    return 0;
  }
  RunOptions options;
  Status status = parse_run_args(args, &options);
  if (!status.is_ok()) {
    print_usage_error(status.message);
    return kExitUsage;
  }

  const std::string &name = options.program[0];
  std::string program_path;
  switch (find_program(name, &program_path)) {
  case Lookup::NotFound:
    std::fprintf(stderr, "ava: %s: command not found\n", name.c_str());
    return kExitNotFound;
  case Lookup::NotExecutable:
    std::fprintf(stderr, "ava: %s: Permission denied\n", program_path.c_str());
    return kExitNotExecutable;
  case Lookup::Found:
    break;
  }

  ChannelKind kind = options.channel;
  bool kind_chosen = options.channel_set;
  if (!kind_chosen) {
    const char *env = std::getenv("AVA_CHANNEL");
    if (env != nullptr && *env != '\0')
      kind_chosen = parse_channel_kind(env, &kind).is_ok();
    if (!kind_chosen)
      kind = ChannelKind::Unix;
  }

  std::map<std::string, std::string> env;
  std::string guest_dir = guest_lib_dir();
  std::error_code error;
  if (guest_dir.empty() || !std::filesystem::is_directory(guest_dir, error))
    std::fprintf(stderr, "ava: warning: no guest library directory '%s' (set AVA_GUEST_LIB_DIR)\n",
                 guest_dir.c_str());
  const char *old_path = std::getenv("LD_LIBRARY_PATH");
  env["LD_LIBRARY_PATH"] =
      old_path != nullptr && *old_path != '\0' ? guest_dir + ":" + old_path : guest_dir;

  bool start_local = false;
  if (!options.worker.empty()) {
    Address address;
    status = parse_address(options.worker, kind, &address);
    if (!status.is_ok()) {
      print_usage_error("bad --worker address '" + options.worker + "': " + status.message);
      return kExitUsage;
    }
    env["AVA_WORKER"] = address.to_string();
    env["AVA_CHANNEL"] = kind_name(address.kind);
  } else {
    bool configured = false;
    status = external_worker_configured(options.specs, &configured);
    if (!status.is_ok()) {
      std::fprintf(stderr, "ava: %s\n", status.message.c_str());
      return kExitFailure;
    }
    start_local = !configured;
    // A private worker is on this machine: the fastest channel, unless the
    // user chose one (a configured worker keeps its configuration's).
    if (start_local && !kind_chosen)
      kind = ChannelKind::Shm;
    if (!start_local && !options.report.empty()) {
      print_usage_error("--report is written by the private worker, and a worker is configured");
      return kExitUsage;
    }
    if (configured && options.channel_set)
      env["AVA_CHANNEL"] = kind_name(kind);
  }

  SignalWatch signals;
  status = signals.open();
  if (!status.is_ok()) {
    std::fprintf(stderr, "ava: %s\n", status.message.c_str());
    return kExitFailure;
  }
  std::optional<LocalWorker> worker;
  if (start_local) {
    worker.emplace();
    std::string address;
    int interrupted_by = 0;
    status = worker->start(kind, options, signals, &address, &interrupted_by);
    if (!status.is_ok()) {
      std::fprintf(stderr, "ava: cannot start the local worker: %s\n", status.message.c_str());
      return kExitFailure;
    }
    if (interrupted_by != 0)
      return 128 + interrupted_by;
    env["AVA_WORKER"] = address;
    env["AVA_CHANNEL"] = kind_name(kind);
  }

  SpawnOptions spawn_options;
  spawn_options.mask = &signals.original_mask();
  spawn_options.env = environment_with(env);
  pid_t program = -1;
  int exec_errno = 0;
  status = spawn(program_path, options.program, spawn_options, &program, &exec_errno);
  if (!status.is_ok()) {
    std::fprintf(stderr, "ava: %s\n", status.message.c_str());
    return exec_errno == ENOENT ? kExitNotFound
                                : (exec_errno != 0 ? kExitNotExecutable : kExitFailure);
  }
  int wait_status = supervise(signals, program, worker ? &*worker : nullptr);
  return shell_status(wait_status);
}

} // namespace ava::tool
