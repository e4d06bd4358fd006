// SPDX-License-Identifier: MIT
#include "proc.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char **environ;

namespace {

long long now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

pid_t spawn(const std::vector<std::string> &argv, const std::vector<std::string> &env, int out_fd,
            int err_fd) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0)
    return pid;
  // A test killed by its timeout must not leave workers behind.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(127);
  for (const std::string &e : env) {
    const size_t eq = e.find('=');
    if (eq == std::string::npos)
      continue;
    const std::string name = e.substr(0, eq);
    if (eq + 1 == e.size())
      unsetenv(name.c_str());
    else
      setenv(name.c_str(), e.c_str() + eq + 1, 1);
  }
  if (out_fd >= 0)
    dup2(out_fd, 1);
  if (err_fd >= 0)
    dup2(err_fd, 2);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  _exit(127);
}

int decode_status(int st) {
  if (WIFEXITED(st))
    return WEXITSTATUS(st);
  if (WIFSIGNALED(st))
    return 128 + WTERMSIG(st);
  return -1;
}

} // namespace

ProcResult run_proc(const std::vector<std::string> &argv, const std::vector<std::string> &env,
                    int timeout_ms) {
  ProcResult r;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    return r;
  const pid_t pid = spawn(argv, env, out[1], err[1]);
  close(out[1]);
  close(err[1]);
  const long long deadline = now_ms() + timeout_ms;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    const long long left = deadline - now_ms();
    if (left <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(left)) < 0)
      break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      char buf[65536];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (auto &f : fds)
    if (f.fd >= 0)
      close(f.fd);
  int st = 0;
  waitpid(pid, &st, 0);
  r.exit_code = decode_status(st);
  return r;
}

BackgroundProc::BackgroundProc(const std::vector<std::string> &argv,
                               const std::vector<std::string> &env) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0)
    return;
  pid_ = spawn(argv, env, out[1], out[1]); // stderr too: tests look for messages
  close(out[1]);
  out_fd_ = out[0];
  drainer_ = std::thread([this] { drain(); });
}

BackgroundProc::~BackgroundProc() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  // The pipe reaches EOF once the child and anything it forked are gone.
  if (drainer_.joinable())
    drainer_.join();
  if (out_fd_ >= 0)
    close(out_fd_);
}

void BackgroundProc::drain() {
  char buf[4096];
  for (;;) {
    const ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (n <= 0) {
      eof_ = true;
      cv_.notify_all();
      return;
    }
    buffered_.append(buf, static_cast<size_t>(n));
    cv_.notify_all();
  }
}

bool BackgroundProc::wait_for_line(const std::string &text, int timeout_ms, std::string *seen) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
               [&] { return eof_ || buffered_.find(text) != std::string::npos; });
  if (seen)
    *seen = buffered_;
  return buffered_.find(text) != std::string::npos;
}

void BackgroundProc::kill_now(int sig) {
  if (pid_ > 0 && !reaped_)
    kill(pid_, sig);
}

int BackgroundProc::wait_exit(int timeout_ms) {
  const long long deadline = now_ms() + timeout_ms;
  while (!reaped_) {
    int st = 0;
    const pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      return decode_status(st);
    }
    if (now_ms() >= deadline)
      return -1;
    usleep(10000);
  }
  return -1;
}

std::string make_temp_dir() {
  char tmpl[] = "/tmp/ava-e2e-XXXXXX";
  const char *d = mkdtemp(tmpl);
  return d ? d : "";
}

std::vector<pid_t> child_pids(pid_t parent) {
  std::vector<pid_t> out;
  DIR *proc = opendir("/proc");
  if (proc == nullptr)
    return out;
  while (dirent *e = readdir(proc)) {
    char *end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0')
      continue;
    FILE *f = std::fopen(("/proc/" + std::string(e->d_name) + "/stat").c_str(), "r");
    if (f == nullptr)
      continue;
    char line[512];
    const bool got = std::fgets(line, sizeof line, f) != nullptr;
    std::fclose(f);
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const char *close = got ? std::strrchr(line, ')') : nullptr;
    char state = 0;
    long ppid = 0;
    if (close != nullptr && std::sscanf(close + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent)
      out.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return out;
}
