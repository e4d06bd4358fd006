// SPDX-License-Identifier: MIT
// Process plumbing for `ava run`: owned fds, a private temporary directory,
// signals received through a signalfd, and fork/exec with exec errors
// reported back to the parent.
#pragma once

#include <signal.h>
#include <sys/signalfd.h>
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "transport/channel.hpp"

namespace ava::tool {

class Fd {
public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd &&other) noexcept : fd_(other.release()) {}
  Fd &operator=(Fd &&other) noexcept {
    if (this != &other)
      reset(other.release());
    return *this;
  }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1);

private:
  int fd_ = -1;
};

// A directory of mode 0700 under $TMPDIR (or /tmp), removed with the files
// in it when this object goes away.
class TempDir {
public:
  TempDir() = default;
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  ~TempDir();
  // max_path_length: longest path the directory may have (e.g. to fit a unix socket name in it).
  Status create(const char *prefix, size_t max_path_length);
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

// Blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD and receives them through a
// signalfd: a signal arriving between fork and learning the child's pid is
// then queued instead of racing a handler. Restores the mask on destruction.
class SignalWatch {
public:
  SignalWatch() = default;
  SignalWatch(const SignalWatch &) = delete;
  SignalWatch &operator=(const SignalWatch &) = delete;
  ~SignalWatch();
  Status open();
  int fd() const { return fd_.get(); }
  // The mask from before open(), for children to start with.
  const sigset_t &original_mask() const { return original_; }
  // Waits up to timeout_ms (< 0: forever) for extra_fd (if >= 0) to become
  // readable or a signal to arrive. Returns 1 with *info for a signal, 2 if
  // extra_fd is readable, 0 on timeout.
  int wait(int timeout_ms, int extra_fd, signalfd_siginfo *info);

private:
  Fd fd_;
  sigset_t original_{};
  bool blocked_ = false;
};

struct SpawnOptions {
  const sigset_t *mask = nullptr; // the child's signal mask (nullptr: inherited)
  std::vector<std::string> env;   // the child's whole environment, KEY=VALUE
  int keep_fd = -1;               // an fd that survives exec under its own number
  bool new_process_group = false; // keep terminal signals (Ctrl-C) away from the child
  bool die_with_parent = false;   // SIGTERM the child if ava itself dies
  bool detach_stdio = false;      // stdin from /dev/null, stdout to our stderr
  // A per-guest worker's confinement (tools/ava/supervisor.hpp):
  int move_fd = -1;          // dup2'ed to move_fd_to in the child
  int move_fd_to = -1;       // and every fd above it is closed at exec
  int cgroup_procs_fd = -1;  // the child joins that cgroup (writes "0" to it) first
  std::optional<uid_t> uid;  // then drops its supplementary groups and becomes uid
  std::optional<gid_t> gid;  // and gid
  bool no_new_privs = false; // PR_SET_NO_NEW_PRIVS: exec can never gain privileges
};

// A child's confinement, in this order: it joins the cgroup (writes "0" to
// cgroup_procs_fd, if >= 0), drops its supplementary groups and becomes gid
// and uid (if given), and sets no_new_privs. System calls only, so it may
// run between fork and exec. Returns 0 or the errno of the step that failed.
int confine_child(int cgroup_procs_fd, const std::optional<uid_t> &uid,
                  const std::optional<gid_t> &gid, bool no_new_privs);

// fork + execv(path, argv). If exec fails the child is reaped and the result
// carries errno in *exec_errno (0 otherwise).
Status spawn(const std::string &path, const std::vector<std::string> &argv,
             const SpawnOptions &options, pid_t *pid, int *exec_errno);

// Our environment with some variables replaced or added.
std::vector<std::string> environment_with(const std::map<std::string, std::string> &overrides);

// What a shell reports for a wait status: the exit code, or 128 + signal.
int shell_status(int wait_status);

// Waits at most timeout_ms for the child pid to exit (on its pidfd: no
// polling loop) and reaps it: true with its wait status in *status, false
// when it still runs (or is not our child).
bool wait_exit(pid_t pid, int timeout_ms, int *status);

// SIGTERM, then at most grace_ms later SIGKILL (*forced then set); always
// reaps pid. Returns the wait status.
int stop_process(pid_t pid, int grace_ms, bool *forced);

} // namespace ava::tool
