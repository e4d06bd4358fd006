// SPDX-License-Identifier: MIT
#include "tools/ava/process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>

extern char **environ;

namespace ava::tool {
namespace {

std::string errno_text(const std::string &what, int error) {
  return what + ": " + std::strerror(error);
}

void sleep_ms(int ms) {
  struct timespec left = {ms / 1000, static_cast<long>(ms % 1000) * 1000000L};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

std::vector<char *> c_strings(const std::vector<std::string> &strings) {
  std::vector<char *> pointers;
  pointers.reserve(strings.size() + 1);
  for (const std::string &s : strings)
    pointers.push_back(const_cast<char *>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

// Runs in the forked child: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const std::string &path, char *const *argv, char *const *envp,
                             const SpawnOptions &options, int dev_null, int error_fd,
                             pid_t parent) {
  if (options.mask != nullptr)
    sigprocmask(SIG_SETMASK, options.mask, nullptr);
  if (options.new_process_group)
    setpgid(0, 0);
  if (options.die_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    // The parent may have died before prctl took effect.
    if (getppid() != parent)
      _exit(127);
  }
  auto fail = [error_fd]() {
    int error = errno;
    (void)!write(error_fd, &error, sizeof error);
    _exit(127);
  };
  if (options.detach_stdio &&
      (dup2(dev_null, STDIN_FILENO) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0))
    fail();
  const int confine_errno =
      confine_child(options.cgroup_procs_fd, options.uid, options.gid, options.no_new_privs);
  if (confine_errno != 0) {
    errno = confine_errno;
    fail();
  }
  if (options.move_fd >= 0 && options.move_fd_to >= 0) {
    // dup2 leaves the new number without FD_CLOEXEC; everything above it goes at exec.
    if (options.move_fd != options.move_fd_to && dup2(options.move_fd, options.move_fd_to) < 0)
      fail();
    if (options.move_fd == options.move_fd_to) {
      int flags = fcntl(options.move_fd, F_GETFD);
      if (flags < 0 || fcntl(options.move_fd, F_SETFD, flags & ~FD_CLOEXEC) != 0)
        fail();
    }
    if (close_range(static_cast<unsigned>(options.move_fd_to) + 1, ~0u, CLOSE_RANGE_CLOEXEC) != 0)
      fail();
  }
  if (options.keep_fd >= 0) {
    int flags = fcntl(options.keep_fd, F_GETFD);
    if (flags >= 0)
      fcntl(options.keep_fd, F_SETFD, flags & ~FD_CLOEXEC);
  }
  execve(path.c_str(), argv, envp);
  int error = errno;
  (void)!write(error_fd, &error, sizeof error);
  _exit(127);
}

} // namespace

int confine_child(int cgroup_procs_fd, const std::optional<uid_t> &uid,
                  const std::optional<gid_t> &gid, bool no_new_privs) {
  // Joins the cgroup while still allowed to, then gives up privileges.
  if (cgroup_procs_fd >= 0 && write(cgroup_procs_fd, "0\n", 2) != 2)
    return errno != 0 ? errno : EIO;
  if (gid && (setgroups(0, nullptr) != 0 || setgid(*gid) != 0))
    return errno;
  if (uid && setuid(*uid) != 0)
    return errno;
  if (no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return errno;
  return 0;
}

void Fd::reset(int fd) {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = fd;
}

TempDir::~TempDir() {
  if (path_.empty())
    return;
  if (DIR *dir = opendir(path_.c_str())) {
    // Only files the worker made (its socket); a stray directory is tried once too.
    while (struct dirent *entry = readdir(dir)) {
      if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0)
        continue;
      if (unlinkat(dirfd(dir), entry->d_name, 0) != 0 && errno == EISDIR)
        unlinkat(dirfd(dir), entry->d_name, AT_REMOVEDIR);
    }
    closedir(dir);
  }
  rmdir(path_.c_str());
}

Status TempDir::create(const char *prefix, size_t max_path_length) {
  std::vector<std::string> bases;
  const char *tmpdir = std::getenv("TMPDIR");
  if (tmpdir != nullptr && *tmpdir != '\0')
    bases.emplace_back(tmpdir);
  bases.emplace_back("/tmp");
  std::string failure = "no temporary directory is short enough";
  for (const std::string &base : bases) {
    std::string name = base + "/" + prefix + "XXXXXX";
    if (name.size() > max_path_length)
      continue;
    if (mkdtemp(name.data()) != nullptr) {
      path_ = name;
      return Status::ok();
    }
    failure = errno_text("cannot create a directory in " + base, errno);
  }
  return Status::error(AVA_E_STATE, failure);
}

SignalWatch::~SignalWatch() {
  if (!blocked_)
    return;
  fd_.reset();
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD})
    sigaddset(&set, sig);
  // Signals that arrived after we stopped listening were meant for the program, not for us.
  struct timespec zero = {0, 0};
  for (int i = 0; i < 64 && sigtimedwait(&set, nullptr, &zero) > 0; i++) {
  }
  sigprocmask(SIG_SETMASK, &original_, nullptr);
}

Status SignalWatch::open() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD})
    sigaddset(&set, sig);
  if (sigprocmask(SIG_BLOCK, &set, &original_) != 0)
    return Status::error(AVA_E_STATE, errno_text("sigprocmask", errno));
  blocked_ = true;
  fd_.reset(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (fd_.get() < 0)
    return Status::error(AVA_E_STATE, errno_text("signalfd", errno));
  return Status::ok();
}

int SignalWatch::wait(int timeout_ms, int extra_fd, signalfd_siginfo *info) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
  while (true) {
    int remaining = -1;
    if (timeout_ms >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      remaining = left.count() > 0 ? static_cast<int>(left.count()) : 0;
    }
    struct pollfd fds[2] = {{fd_.get(), POLLIN, 0}, {extra_fd, POLLIN, 0}};
    int n = poll(fds, extra_fd >= 0 ? 2 : 1, remaining);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return 0;
    if (fds[0].revents & POLLIN) {
      ssize_t got = read(fd_.get(), info, sizeof *info);
      if (got == static_cast<ssize_t>(sizeof *info))
        return 1;
    }
    if (extra_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
      return 2;
  }
}

Status spawn(const std::string &path, const std::vector<std::string> &argv,
             const SpawnOptions &options, pid_t *pid, int *exec_errno) {
  *exec_errno = 0;
  std::vector<char *> c_argv = c_strings(argv);
  std::vector<char *> c_env = c_strings(options.env);
  Fd dev_null;
  if (options.detach_stdio) {
    dev_null.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (dev_null.get() < 0)
      return Status::error(AVA_E_STATE, errno_text("/dev/null", errno));
  }
  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0)
    return Status::error(AVA_E_STATE, errno_text("pipe", errno));
  Fd error_read(error_pipe[0]);
  Fd error_write(error_pipe[1]);
  // The child's dup2 to move_fd_to must not land on the pipe that reports its exec error.
  if (options.move_fd_to >= 0 && error_write.get() <= options.move_fd_to) {
    error_write.reset(fcntl(error_write.get(), F_DUPFD_CLOEXEC, options.move_fd_to + 1));
    if (error_write.get() < 0)
      return Status::error(AVA_E_STATE, errno_text("fcntl", errno));
  }
  pid_t parent = getpid();
  pid_t child = fork();
  if (child < 0)
    return Status::error(AVA_E_STATE, errno_text("fork", errno));
  if (child == 0)
    exec_child(path, c_argv.data(), c_env.data(), options, dev_null.get(), error_write.get(),
               parent);
  error_write.reset();

  int error = 0;
  ssize_t got;
  do {
    got = read(error_read.get(), &error, sizeof error);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof error)) {
    while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
    *exec_errno = error;
    return Status::error(AVA_E_STATE, errno_text(path, error));
  }
  *pid = child;
  return Status::ok();
}

std::vector<std::string> environment_with(const std::map<std::string, std::string> &overrides) {
  std::vector<std::string> env;
  for (char **entry = environ; entry != nullptr && *entry != nullptr; entry++) {
    std::string text = *entry;
    if (!overrides.contains(text.substr(0, text.find('='))))
      env.push_back(std::move(text));
  }
  for (const auto &[key, value] : overrides)
    env.push_back(key + "=" + value);
  return env;
}

int shell_status(int wait_status) {
  if (WIFEXITED(wait_status))
    return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status))
    return 128 + WTERMSIG(wait_status);
  return 1;
}

bool wait_exit(pid_t pid, int timeout_ms, int *status) {
  // A pidfd becomes readable when the process exits: no polling loop.
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const pid_t done = waitpid(pid, status, WNOHANG);
    if (done == pid)
      return true;
    if (done < 0 && errno != EINTR)
      return false;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0)
      return false;
    if (pidfd.get() >= 0) {
      struct pollfd p = {pidfd.get(), POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR)
        return false;
    } else {
      // No pidfd_open (Linux < 5.3): look again in a moment.
      sleep_ms(static_cast<int>(std::min<long long>(left, 10)));
    }
  }
}

int stop_process(pid_t pid, int grace_ms, bool *forced) {
  int status = 0;
  *forced = false;
  kill(pid, SIGTERM);
  if (wait_exit(pid, grace_ms, &status))
    return status;
  *forced = true;
  kill(pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

} // namespace ava::tool
